"""The driver (SH3): the one task per agent that asks the host what the core awaits.

``Driving`` is the part of ``LoopAgent`` that runs it. The driver exists
exactly while the *durable* state awaits a report (a turn is open in what the
log holds): it reads ``state.awaiting``, awaits the matching ``Host`` hook,
records the answer as the report the core awaits (``_record``, the commit path
of ``inbox_core.shell.commit``) and waits until that report is durable before
it asks again, so the host is never handed a turn, a batch or a step whose
events the log does not hold yet (R37).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any, Final, TypeVar

from inbox_core.commands import Completed, Failed, Reject, Report
from inbox_core.errors import InboxCoreError
from inbox_core.events import HostRecord
from inbox_core.reducer import reduce
from inbox_core.shell.host import (
    AbortSignal,
    Host,
    Recorded,
    closing,
    describe_failure,
    unwrap,
)
from inbox_core.shell.posts import Consumed
from inbox_core.state import AgentState, Awaiting, AwaitPreStep, AwaitStep, Transition

if TYPE_CHECKING:
    from inbox_core.shell.serving import PostServer

__all__ = ["AgentDetached", "DriverStopped", "Driving"]

logger: Final = logging.getLogger("inbox_core.shell")
T = TypeVar("T")


class DriverStopped(RuntimeError):
    """The driver could not record a report (the log failed, or a core bug); ``__cause__`` says why.

    Raised by ``when_idle``/``aclose``/``durable`` (and ``run_maintenance``) of an
    agent whose driver stopped: its open turn can no longer progress. The log
    holds everything committed; a new ``LoopAgent`` over it resumes (the turn
    closes ``interrupted``). A writer that lost its log (R29) stops the same way,
    with ``LogFenced`` as the cause; a store that became unreachable, with
    ``LogUnavailable``. With a ``ThreadWriter`` a failed write stops the agent
    altogether: every later command raises it too (R37).
    """


class AgentDetached(InboxCoreError):
    """The agent was detached (R29): it no longer owns its log and refuses every command.

    Nothing was changed or written. The log is the agent now: build a new
    ``LoopAgent`` over it (here or in another process) to go on.
    """


class _Raised:
    """A hook's exception, carried back to the driver as a value."""

    __slots__ = ("error",)

    def __init__(self, error: BaseException) -> None:
        self.error = error


def _driver_cancelled() -> bool:
    """Whether the current task itself is being cancelled (vs a hook raising CancelledError)."""
    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0


class Driving:
    """The driver half of ``LoopAgent`` (what it needs of the rest is declared here)."""

    _host: Host
    _state: AgentState  # the durable state
    _head: AgentState  # what the next command is reduced against
    _signal: AbortSignal | None
    _driver: asyncio.Task[None] | None
    _failure: BaseException | None
    _detached: bool
    _settled: int
    _server: PostServer | None

    # the commit path's and the lifecycle's (``Committing``, ``LoopAgent``)

    def _record(
        self,
        transitions: Sequence[Transition],
        consumed: Sequence[Consumed] = (),
        *,
        work: bool | None = None,
    ) -> int:
        raise NotImplementedError

    async def _until_settled(self, number: int) -> None:
        raise NotImplementedError

    def _wake_waiters(self) -> None:
        raise NotImplementedError

    def _maybe_release(self) -> None:
        raise NotImplementedError

    def _report_error(self, message: str, error: BaseException, **context: Any) -> None:
        raise NotImplementedError

    # ----------------------------------------------------------------- the task

    def _live_driver(self) -> asyncio.Task[None] | None:
        """The driver task, forgotten if its event loop was closed under it: that loop
        abandoned the in-flight hook (SH8), and a new driver asks the host again."""
        driver = self._driver
        if driver is not None and driver.get_loop().is_closed():
            self._driver = driver = None
        return driver

    def _ensure_driver(self) -> None:
        """Start the driver if the durable state has a turn open and none runs (exactly one
        driver task)."""
        if self._server is not None:
            self._server.ensure_task()  # the posts' server needs a running loop too
        if (
            self._live_driver() is not None
            or self._failure is not None
            or self._detached
            or self._state.awaiting is None
        ):
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return  # no running loop: started by the next command/await inside one
        self._driver = loop.create_task(self._drive(), name=f"inbox_core.shell driver {id(self):x}")

    async def _drive(self) -> None:
        task = asyncio.current_task()
        try:
            while not self._detached and (awaiting := self._state.awaiting) is not None:
                signal = self._signal
                if signal is None or signal.turn != awaiting.turn:  # pragma: no cover - invariant
                    raise RuntimeError(f"no abort signal for turn {awaiting.turn}")
                try:
                    number = await self._answer(awaiting, signal)
                except GeneratorExit as error:  # a future the hook awaited failed with it:
                    if closing(error, task):  # PEP 380 raises that here, not in the hook
                        raise
                    number = await self._answer(awaiting, signal, _Raised(error))
                if number is not None and self._settled < number:
                    await self._until_settled(number)  # the host sees durable facts only
        except AgentDetached:
            if not self._detached:  # pragma: no cover - raised only once detached
                raise
        except Exception as error:
            if self._failure is None:
                self._failure = error
                self._report_error("inbox_core.shell: the driver stopped", error)
        finally:
            if self._driver is task:  # else a closed loop abandoned it; a newer driver runs
                self._driver = None
                if self._detached:
                    self._maybe_release()  # the in-flight report is discarded (R29)
                elif self._state.awaiting is not None:
                    self._wake_waiters()  # they restart a driver or raise DriverStopped

    async def _invoke(self, call: Callable[[], Awaitable[T]]) -> T | _Raised:
        """Await one hook to its end (never cancelled by the shell); capture its exception,
        whatever it is: a ``SystemExit`` or ``KeyboardInterrupt`` a hook raises is its
        agent's failure, never the event loop's (R37)."""
        driver = asyncio.current_task()
        try:
            return await call()
        except asyncio.CancelledError as error:
            if _driver_cancelled():
                raise  # the driver itself is cancelled (the loop shuts down)
            return _Raised(error)
        except BaseException as error:
            if closing(error, driver):
                raise  # the coroutine is being closed: not the hook's answer
            return _Raised(error)

    async def _answer(
        self, awaiting: Awaiting, signal: AbortSignal, raised: _Raised | None = None
    ) -> int | None:
        """Ask the host what the core awaits and record the matching report; the number of
        its write (None when detach discarded it). ``raised``: what the hook already
        raised (ask nothing, record that)."""
        host = self._host
        turn = awaiting.turn
        if isinstance(awaiting, AwaitPreStep):
            step = awaiting.step
            if signal.aborted:  # D6: any report closes an aborted turn; ask nothing
                return self._submit(awaiting.answer(Reject()))
            batch = awaiting.batch
            decision = (
                await self._invoke(lambda: host.pre_step(turn, step, batch, signal))
                if raised is None
                else raised
            )
            return self._submit_result(awaiting, decision, awaiting.answer, awaiting.fail)
        if isinstance(awaiting, AwaitStep):
            step_awaited = awaiting
            if signal.aborted:
                return self._submit(awaiting.answer(Completed()))
            outcome = (
                await self._invoke(lambda: host.run_step(turn, step_awaited.step, signal))
                if raised is None
                else raised
            )
            return self._submit_result(
                awaiting,
                outcome,
                awaiting.answer,
                lambda message, code: step_awaited.answer(Failed(message, code)),
            )
        records: tuple[HostRecord, ...] = ()
        if not signal.aborted:
            result = (
                await self._invoke(lambda: host.turn_stopping(turn, signal))
                if raised is None
                else raised
            )
            if isinstance(result, _Raised):
                self._report_error(
                    f"inbox_core.shell: host turn_stopping({turn}) raised; "
                    "the turn goes on as if it returned",
                    result.error,
                    turn=turn,
                )
            elif isinstance(result, Recorded):
                records = result.records
        return self._submit(awaiting.answer(records))

    def _submit_result(
        self,
        awaiting: Awaiting,
        result: object,
        answer: Callable[[Any, tuple[HostRecord, ...]], Report],
        failure: Callable[[str, str], Report],
    ) -> int | None:
        """Record the hook's answer (and its records, R30); a hook error, an answer that is
        not a valid one (even one that cannot be rendered) or a rejected report is recorded
        as ``failure`` (R33)."""
        if self._detached:
            return None  # detach discards the in-flight report
        if isinstance(result, _Raised):
            error = result.error
        else:
            try:
                report = answer(*unwrap(result))
            except BaseException as invalid:  # even its repr, whatever that raises (R33)
                error = invalid
            else:
                try:
                    transition = reduce(self._head, report)
                except InboxCoreError as rejected:  # D7 duplicate ids
                    error = rejected
                else:
                    return self._record((transition,))
        message, code = describe_failure(error)
        logger.warning(
            "host answer to %s failed with %s; reported as the turn's error",
            type(awaiting).__name__,
            code,
            exc_info=error,
        )
        return self._submit(failure(message, code))

    def _submit(self, report: Report) -> int | None:
        if self._detached:
            return None
        transition = reduce(self._head, report)  # answers ``awaiting``: cannot be rejected
        return self._record((transition,))
