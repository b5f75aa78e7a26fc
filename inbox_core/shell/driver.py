"""The driver (SH3): the one task per agent that asks the host what the core awaits.

``Driver`` runs it. The driver exists exactly while the *durable* state
awaits a report (a turn is open in what the log holds): it reads
``state.awaiting``, awaits the matching ``Host`` hook, records the answer as
the report the core awaits (through the commit path) and waits until that
report is durable before it asks again, so the host is never handed a turn, a
batch or a step whose events the log does not hold yet (R37). What it may
touch of the commit path is ``DriverPath``, below; nothing else.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Final, Protocol, TypeVar

from inbox_core.commands import Completed, Failed, Reject, Report
from inbox_core.errors import InboxCoreError
from inbox_core.events import HostRecord
from inbox_core.reducer import reduce
from inbox_core.shell.errors import AgentDetached
from inbox_core.shell.host import (
    AbortSignal,
    Host,
    Recorded,
    closing,
    describe_failure,
    unwrap,
)
from inbox_core.shell.output import CLOSED, OutputFanout, StepOutput, with_output
from inbox_core.state import AgentState, Awaiting, AwaitPreStep, AwaitStep, Transition

__all__ = ["Driver", "DriverPath"]

logger: Final = logging.getLogger("inbox_core.shell")
T = TypeVar("T")


class DriverPath(Protocol):
    """What the driver needs of the commit path (``commit.CommitPath``)."""

    @property
    def state(self) -> AgentState: ...  # the durable state: what the host may be asked about

    @property
    def head(self) -> AgentState: ...  # what a report is reduced against

    @property
    def signal(self) -> AbortSignal | None: ...  # the open turn's

    @property
    def settled(self) -> int: ...

    @property
    def closed(self) -> bool: ...  # detached

    @property
    def failure(self) -> BaseException | None: ...

    def record(self, transitions: Sequence[Transition]) -> int: ...

    async def until_settled(self, number: int) -> None: ...

    def stop(self, error: BaseException, message: str) -> None: ...

    def wake_waiters(self) -> None: ...

    def report_error(self, message: str, error: BaseException, **context: Any) -> None: ...


class _Raised:
    """A hook's exception, carried back to the driver as a value."""

    __slots__ = ("error",)

    def __init__(self, error: BaseException) -> None:
        self.error = error


def _driver_cancelled() -> bool:
    """Whether the current task itself is being cancelled (vs a hook raising CancelledError)."""
    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0


class Driver:
    """The task that asks ``host`` what the core awaits; ``release_if_done`` is called when a
    detached agent's last hook returned (the agent may then give its log back); ``voice``
    opens each step's ``StepOutput`` (R43)."""

    __slots__ = ("_host", "_output", "_path", "_release_if_done", "_task", "_voice")

    def __init__(
        self,
        host: Host,
        path: DriverPath,
        release_if_done: Callable[[], None],
        voice: OutputFanout,
    ) -> None:
        self._host = host
        self._path = path
        self._release_if_done = release_if_done
        self._voice = voice
        self._output: StepOutput | None = None  # the last step's (a hook's raise is its)
        self._task: asyncio.Task[None] | None = None

    def live(self) -> asyncio.Task[None] | None:
        """The driver task, forgotten if its event loop was closed under it: that loop
        abandoned the in-flight hook (SH8), and a new driver asks the host again."""
        task = self._task
        if task is not None and task.get_loop().is_closed():
            self._task = task = None
        return task

    def is_current(self) -> bool:
        """Whether the caller runs inside the driver task (inside a host hook)."""
        return self._task is not None and asyncio.current_task() is self._task

    def ensure(self) -> None:
        """Start the driver if the durable state has a turn open and none runs (exactly one
        driver task)."""
        path = self._path
        if (
            self.live() is not None
            or path.failure is not None
            or path.closed
            or path.state.awaiting is None
        ):
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return  # no running loop: started by the next command/await inside one
        self._task = loop.create_task(self._drive(), name=f"inbox_core.shell driver {id(self):x}")

    async def _drive(self) -> None:
        task = asyncio.current_task()
        path = self._path
        try:
            while not path.closed and (awaiting := path.state.awaiting) is not None:
                signal = path.signal
                if signal is None or signal.turn != awaiting.turn:  # pragma: no cover - invariant
                    raise RuntimeError(f"no abort signal for turn {awaiting.turn}")
                try:
                    number = await self._answer(awaiting, signal)
                except GeneratorExit as error:  # a future the hook awaited failed with it:
                    if closing(error, task):  # PEP 380 raises that here, not in the hook
                        raise
                    number = await self._answer(awaiting, signal, _Raised(error))
                if number is not None and path.settled < number:
                    await path.until_settled(number)  # the host sees durable facts only
        except AgentDetached:
            if not path.closed:  # pragma: no cover - raised only once detached
                raise
        except Exception as error:
            path.stop(error, "inbox_core.shell: the driver stopped")
        finally:
            if self._task is task:  # else a closed loop abandoned it; a newer driver runs
                self._task = None
                if path.closed:
                    self._release_if_done()  # the in-flight report is discarded (R29)
                elif path.state.awaiting is not None:
                    path.wake_waiters()  # they restart a driver or raise DriverStopped

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
            if raised is None:
                output = self._output = self._voice.open(turn, awaiting.step)
                signal.hand(output)  # R43: the host publishes there while the step runs
                try:
                    outcome = await self._invoke(
                        lambda: host.run_step(turn, step_awaited.step, signal)
                    )
                finally:
                    signal.hand(None)
                    output.close()
            else:  # what the hook said before it raised is the step's
                last = self._output
                same = last is not None and (last.turn, last.step) == (turn, awaiting.step)
                output = last if last is not None and same else CLOSED
                outcome = raised
            return self._submit_result(
                awaiting,
                outcome,
                lambda value, records: step_awaited.answer(value, with_output(records, output)),
                lambda message, code: step_awaited.answer(
                    Failed(message, code), with_output((), output)
                ),
            )
        records: tuple[HostRecord, ...] = ()
        if not signal.aborted:
            result = (
                await self._invoke(lambda: host.turn_stopping(turn, signal))
                if raised is None
                else raised
            )
            if isinstance(result, _Raised):
                self._path.report_error(
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
        if self._path.closed:
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
                    transition = reduce(self._path.head, report)
                except InboxCoreError as rejected:  # D7 duplicate ids
                    error = rejected
                else:
                    return self._path.record((transition,))
        message, code = describe_failure(error)
        logger.warning(
            "host answer to %s failed with %s; reported as the turn's error",
            type(awaiting).__name__,
            code,
            exc_info=error,
        )
        return self._submit(failure(message, code))

    def _submit(self, report: Report) -> int | None:
        if self._path.closed:
            return None
        transition = reduce(self._path.head, report)  # answers ``awaiting``: cannot be rejected
        return self._path.record((transition,))
