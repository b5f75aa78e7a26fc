"""``LoopAgent``: the asyncio shell around the pure reducer (brief section 9, specs/shell.md).

Every command goes through one path, ``_apply``::

    transition = reduce(state, command)     # typed error -> raised, nothing changed
    log.append(transition.durable)          # one call (one transaction) per command
    state = transition.state                # commit; trip the turn's AbortSignal
    queue transition.notifications          # then deliver, in commit order, never nested

Delivery and edit methods are synchronous. The driver is one asyncio task,
alive exactly while a turn is open: it reads ``state.awaiting``, awaits the
matching ``Host`` hook and feeds the answer back through ``_apply`` as the
report the core awaits. It is started by the command that opens a turn (a
waking send while idle, from anywhere, subscribers included) and keeps going
across consecutive turns, since the core opens the next turn inside the
report that ends the previous one (R19).
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, Final, TypeVar, overload

from inbox_core import commands as intents
from inbox_core.commands import (
    BeginMaintenance,
    Cancel,
    Clear,
    Command,
    Completed,
    Dispose,
    EndMaintenance,
    Expectation,
    Failed,
    Move,
    Reject,
    Remove,
    Replace,
    Report,
    Resume,
    Send,
    Splice,
)
from inbox_core.errors import InboxCoreError, InvalidInput
from inbox_core.events import HostRecord, Notification, Status
from inbox_core.inbox import Inbox
from inbox_core.reducer import reduce
from inbox_core.replay import replay
from inbox_core.shell.host import (
    AbortSignal,
    Host,
    Recorded,
    describe_failure,
    run_job,
    unwrap,
    wake,
)
from inbox_core.shell.logs import EventLog, MemoryLog
from inbox_core.shell.posts import Consumed
from inbox_core.shell.serving import PostServer
from inbox_core.state import (
    AgentState,
    Awaiting,
    AwaitPreStep,
    AwaitStep,
    Transition,
)
from inbox_core.values import (
    Entry,
    HookCause,
    MessageId,
    ParentCause,
    ResolvedAgentInput,
    Target,
    UserCause,
    UserMessage,
)

if TYPE_CHECKING:
    from inbox_core.protocol import Agent

__all__ = ["AgentDetached", "DriverStopped", "LoopAgent", "Subscriber"]

logger: Final = logging.getLogger("inbox_core.shell")

Subscriber = Callable[[Notification], None]
MaintenanceJob = Callable[[AbortSignal], Awaitable[Iterable[HostRecord] | Recorded[Any] | None]]
"""``run_maintenance``'s job: a coroutine function of the job's ``AbortSignal``."""
T = TypeVar("T")
_LOG_METHODS: Final = ("acquire", "release", "append", "read")
_HOST_HOOKS: Final = ("pre_step", "run_step", "turn_stopping")


def _check_has(value: object, what: str, methods: tuple[str, ...]) -> None:
    """``InvalidInput`` unless ``value`` has every one of ``methods``, callable (R26)."""
    if not all(callable(getattr(value, method, None)) for method in methods):
        raise InvalidInput(f"{what} must have {', '.join(methods)}; got {type(value).__name__}")


class DriverStopped(RuntimeError):
    """The driver could not record a report (the log failed, or a core bug); ``__cause__`` says why.

    Raised by ``when_idle``/``aclose`` (and ``run_maintenance``) of an agent
    whose driver stopped: its open turn can no longer progress. The log holds
    everything committed; a new ``LoopAgent`` over it resumes (the turn closes
    ``interrupted``). A writer that lost its log (R29) stops the same way,
    with ``LogFenced`` as the cause; a store that became unreachable, with
    ``LogUnavailable``.
    """


class AgentDetached(InboxCoreError):
    """The agent was detached (R29): it no longer owns its log and refuses every command.

    Nothing was changed or written. The log is the agent now: build a new
    ``LoopAgent`` over it (here or in another process) to go on.
    """


class _Subscription:
    __slots__ = ("active", "callback")

    def __init__(self, callback: Subscriber) -> None:
        self.callback = callback
        self.active = True


class _Raised:
    """A hook's exception, carried back to the driver as a value."""

    __slots__ = ("error",)

    def __init__(self, error: BaseException) -> None:
        self.error = error


def _driver_cancelled() -> bool:
    """Whether the current task itself is being cancelled (vs a hook raising CancelledError)."""
    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0


class LoopAgent:
    """An ``Agent`` that drives ``host``'s model loop with asyncio (R11-R27).

    ``log`` (default: a fresh ``MemoryLog``) is read at construction: a
    non-empty log is replayed and ``Resume`` is applied (its events appended),
    closing a turn a crash left open (``interrupted``) and reopening pending
    waking work (R27). Notifications of construction are not announced: no
    one can have subscribed yet. The driver needs a running event loop: built
    inside one, pending work starts at once; built outside, the driver starts
    on the first command issued, or ``when_idle``/``aclose`` awaited, inside a
    running loop.

    The constructor first acquires the log (R29): over a log another live
    writer owns it raises ``LogOwned``, having read and written nothing. It
    holds the log until ``detach()`` (graceful shutdown that keeps the inbox)
    or ``aclose()`` (dispose) completes.
    """

    def __init__(self, host: Host, *, log: EventLog | None = None) -> None:
        _check_has(host, "host (a Host)", _HOST_HOOKS)
        if log is not None:
            _check_has(log, "log (an EventLog)", _LOG_METHODS)
        self._host = host
        self._log: EventLog = MemoryLog() if log is None else log
        self._log.acquire()  # R29: before reading; LogOwned leaves everything untouched
        try:
            self._start()
        except BaseException:
            self._log.release()  # a log we cannot resume is not held
            raise

    def _start(self) -> None:
        self._server: PostServer | None = None
        self._subscriptions: tuple[_Subscription, ...] = ()
        self._queue: deque[tuple[Notification, tuple[_Subscription, ...]]] = deque()
        self._delivering = False
        self._driver: asyncio.Task[None] | None = None
        self._failure: BaseException | None = None
        self._signal: AbortSignal | None = None
        self._waiters: list[asyncio.Future[None]] = []
        self._detached = False
        self._job_signal: AbortSignal | None = None
        self._end_owed = False  # a maintenance end the log refused: retried (R31)
        events = self._log.read()
        self._state = replay(events)
        if (restore := getattr(self._host, "restore", None)) is not None:
            restore(events)  # a RestoringHost rebuilds its memory from the log (SH11)
        self._sync_signal()
        self._apply(Resume())  # D8: a no-op unless the log needs it
        self._server = PostServer.attach(self)  # R35: a log that holds posts is served
        if self._server is not None:
            self._server.drain_quietly()  # what waited for an owner, after its Resume
            self._server.ensure_task()

    # ------------------------------------------------------------------ views

    @property
    def state(self) -> AgentState:
        """The current core state (immutable; replaced by every command)."""
        return self._state

    @property
    def status(self) -> Status:
        return self._state.status

    @property
    def inbox(self) -> Inbox:
        """Both pending lists: ``.next_turn`` and ``.next_step`` tuples of entries."""
        return self._state.inbox

    @property
    def log(self) -> EventLog:
        return self._log

    @property
    def host(self) -> Host:
        return self._host

    @property
    def detached(self) -> bool:
        """Whether ``detach()`` was called: the agent refuses commands and writes nothing."""
        return self._detached

    @property
    def signal(self) -> AbortSignal | None:
        """The open (or last) turn's abort signal; None before the first turn."""
        return self._signal

    # --------------------------------------------------------------- delivery

    # ``expect=`` guards a delivery, a move or a cancel (R34): ``ExpectIdle()`` (else
    # ``AgentBusy``) or ``ExpectTurn(n)`` (else ``TurnMismatch``); a failed one changes nothing.

    def followup(
        self,
        message: UserMessage,
        *,
        contexts: tuple[UserMessage, ...] = (),
        expect: Expectation | None = None,
    ) -> None:
        """next-turn, waking: an ordinary prompt with a turn of its own (R12)."""
        self._apply(intents.followup(message, contexts, expect=expect))

    def queue(
        self,
        message: UserMessage,
        *,
        contexts: tuple[UserMessage, ...] = (),
        expect: Expectation | None = None,
    ) -> None:
        """next-turn, not waking: parked until a waking delivery runs the model (R12, R15)."""
        self._apply(intents.queue(message, contexts, expect=expect))

    def steer(
        self,
        message: UserMessage,
        *,
        contexts: tuple[UserMessage, ...] = (),
        expect: Expectation | None = None,
    ) -> None:
        """next-step, waking: joins the running turn at its next step boundary (R12, R17)."""
        self._apply(intents.steer(message, contexts, expect=expect))

    def inject(self, message: UserMessage, *, expect: Expectation | None = None) -> None:
        """next-step, not waking, no contexts: rides along with a later boundary (R12, R15)."""
        self._apply(intents.inject(message, expect=expect))

    def send(self, input: ResolvedAgentInput, *, expect: Expectation | None = None) -> None:
        """Deliver a resolved input (R11, R13, R14)."""
        self._apply(Send(input, expect))

    # ------------------------------------------------------------------ edits

    def replace(self, message_id: MessageId, message: UserMessage) -> bool:
        """Swap a pending entry's primary message (R7); False (no-op) when not pending."""
        return bool(self._apply(Replace(message_id, message)).durable)

    def remove(self, message_id: MessageId) -> bool:
        """Cancel one pending entry (R7); False (no-op) when not pending as a primary message."""
        return bool(self._apply(Remove(message_id)).durable)

    def move(
        self, message_id: MessageId, target: Target, *, expect: Expectation | None = None
    ) -> None:
        """Move a pending entry to the end of ``target`` (R8, D1, D2)."""
        self._apply(Move(message_id, target, expect))

    def splice(
        self, target: Target, start: int, delete_count: int, entries: Sequence[Entry] = ()
    ) -> None:
        """List-splice edit of one pending list (R5, R7, D14); ``entries`` any sequence."""
        if isinstance(entries, Sequence) and not isinstance(entries, (str, bytes)):
            entries = tuple(entries)  # else the command refuses it (InvalidSplice)
        self._apply(Splice(target, start, delete_count, entries))

    def clear(self) -> None:
        """Cancel every pending entry, next-step first (R7, D10); the turn goes on."""
        self._apply(Clear())

    # -------------------------------------------------------------- lifecycle

    def cancel(
        self,
        cause: UserCause | ParentCause | HookCause = UserCause(),
        *,
        keep_inbox: bool = False,
        expect: Expectation | None = None,
    ) -> None:
        """Abort the live turn; without ``keep_inbox`` also cancel everything pending (R21-R23)."""
        self._apply(Cancel(cause, keep_inbox, expect))

    def dispose(self) -> None:
        """Synchronous ``Dispose`` (R25): ``aclose`` without the wait. Raises once disposed."""
        self._apply(Dispose())

    async def when_idle(self) -> None:
        """Return once the agent is idle (R19).

        It returns only when, at that moment, ``status == "idle"``: work that
        arrives while waiting (also work that re-wakes the agent right after
        an idle) is waited for too. Raises ``DriverStopped`` if the driver
        failed, the store's error while the end of a maintenance job it owes
        still cannot be written (R31; the next call tries again), and
        ``RuntimeError`` when awaited from the driver itself (a host hook
        waiting for its own turn to end would never return).
        """
        await self._wait_until(self._is_idle, "when_idle")

    async def aclose(self) -> None:
        """Dispose (unless already disposed) and wait until the agent converged (R25, D5).

        Idempotent: a second (or concurrent) ``aclose`` does not raise; it
        waits for the same convergence. The log is not closed (its owner does).
        """
        self._check_not_driver("aclose")
        if not self._state.disposed:
            self._apply(Dispose())
        await self._wait_until(self._is_idle, "aclose")
        self._stop_serving()
        self._log.release()  # converged: nothing more to write (R29)

    @overload
    async def run_maintenance(self, job: Callable[[AbortSignal], Awaitable[Recorded[T]]]) -> T: ...

    @overload
    async def run_maintenance(
        self, job: Callable[[AbortSignal], Awaitable[Iterable[HostRecord] | None]]
    ) -> None: ...

    @overload
    async def run_maintenance(
        self, job: Callable[[AbortSignal], Awaitable[Recorded[T] | None]]
    ) -> T | None: ...

    async def run_maintenance(self, job: MaintenanceJob) -> Any:
        """Run ``job(signal)`` between turns (R31), log its records (R30), return its answer.

        Raises at once, running nothing, when the agent is not idle
        (``MaintenanceUnavailable``; ``AgentDisposed`` once disposed;
        ``DriverStopped`` once stopped). While the job runs the status is
        ``maintenance``: input is accepted, waking input opens no turn until
        the job ends; ``cancel()``/``dispose()`` trip ``signal``. The job
        returns None, host records or ``Recorded(answer, records)``: the
        records are appended with ``EndMaintenance``, the waiting work starts
        (or the agent is idle), and ``answer`` (else None) is returned.

        Maintenance always ends. If the job raises, returns anything else
        (``InvalidInput``) or its records cannot be written, it ends without
        records and that error propagates. If even that end cannot be written
        (it opens the turn of input sent meanwhile: the store failed again),
        it is owed: ``when_idle``, ``aclose`` and the next ``run_maintenance``
        apply it first, raising the store's error while it still fails.
        """
        self._check_not_driver("run_maintenance")
        self._check_driving()
        if not callable(job):
            raise InvalidInput(
                f"a maintenance job is a coroutine function, not a {type(job).__name__}"
            )
        self._settle_end()
        self._apply(BeginMaintenance())
        signal = self._job_signal = AbortSignal(None)
        self._sync_signal()
        try:
            answer, records = await run_job(job, signal)
        except BaseException:
            self._end_job(())
            raise
        failure = self._end_job(records)
        if failure is not None:
            raise failure
        return answer

    def _end_job(self, records: tuple[HostRecord, ...]) -> Exception | None:
        """Leave maintenance: ``EndMaintenance(records)``, else the record-less end, else owe it.

        Returns the error that kept the records (or the end) from the log, None
        once they are logged. An owed end wakes the waiters: they apply it
        (``_settle_end``) or raise the store's error; nothing waits for an end
        that would never come.
        """
        self._job_signal = None
        if self._detached:  # a detached agent writes nothing (R29)
            return None
        failure: Exception | None = None
        if records:
            try:
                self._apply(EndMaintenance(records))
                return None
            except Exception as error:
                failure = error
        try:
            self._apply(EndMaintenance())
        except Exception as error:
            self._end_owed = True
            self._wake_waiters()
            return failure or error
        return failure

    def _settle_end(self) -> None:
        """Apply the record-less end of maintenance the log refused before (R31), if owed; the
        store's error propagates while it still fails (the end stays owed)."""
        if self._end_owed and not self._detached:
            self._apply(EndMaintenance())
            self._end_owed = False

    async def detach(self) -> None:
        """Hand the agent over (R29): stop driving, write nothing, release the log.

        The graceful shutdown that keeps the inbox (``aclose()`` disposes it).
        From the call on the agent writes nothing and refuses every command
        (``AgentDetached``), reports included. The live turn's ``AbortSignal``
        trips with ``ParentCause()`` (nothing durable records it) so the host
        winds down; ``detach`` waits for the in-flight hook to return
        (cancellation stays cooperative), discards its report and releases
        the log. The next owner's ``Resume`` then treats the log exactly as
        after a crash (R27): the open turn closes ``interrupted`` and an
        undecided claim goes back to the inbox. Idempotent. Awaited from a
        hook of this agent it returns at once; the log is released when that
        hook returns.
        """
        if not self._detached:
            self._detached = True
            if self._state.status == "running" and self._signal is not None:
                self._signal.trip(ParentCause())
            if self._job_signal is not None:  # a maintenance job winds down too (R31)
                self._job_signal.trip(ParentCause())
            self._queue.clear()  # nothing more is announced
            self._wake_waiters()  # they raise AgentDetached
        driver = self._live_driver()
        if driver is not None:
            if driver is asyncio.current_task():
                return  # released by the driver when this hook returns
            await asyncio.wait({driver})
        self._release_detached()

    def _stop_serving(self) -> None:
        if self._server is not None:
            self._server.stop()  # posts wait for the next owner (R35)

    def _release_detached(self) -> None:
        self._stop_serving()
        try:
            self._log.release()
        except InboxCoreError as error:  # e.g. LogUnavailable: the lease lapses on its own
            logger.warning("detach: releasing the log failed: %s", error, exc_info=error)

    def subscribe(self, callback: Subscriber) -> Callable[[], None]:
        """Receive notifications of every command committed from now on, in commit order.

        Returns the (idempotent) unsubscribe function: nothing is delivered to
        the callback after it returns, even notifications already queued. A
        callback that is not callable raises ``InvalidInput`` here.
        """
        if not callable(callback):
            raise InvalidInput(f"a subscriber must be callable, got {type(callback).__name__}")
        subscription = _Subscription(callback)
        self._subscriptions = (*self._subscriptions, subscription)

        def unsubscribe() -> None:
            if subscription.active:
                subscription.active = False
                self._subscriptions = tuple(s for s in self._subscriptions if s.active)

        return unsubscribe

    def __repr__(self) -> str:
        state = self._state
        return (
            f"LoopAgent(status={state.status!r}, last_turn={state.last_turn}, "
            f"awaiting={state.awaiting!r}, disposed={state.disposed})"
        )

    # ------------------------------------------------------------ the commit

    def _apply(self, command: Command) -> Transition:
        self._check_attached()
        transition = reduce(self._state, command)  # a typed error: nothing changed
        self._record(transition)
        return transition

    def _record(self, transition: Transition) -> None:
        """Append (one call per command), commit, then deliver notifications (never nested)."""
        self._check_attached()
        if transition.durable:
            self._log.append(transition.durable)  # a log failure: nothing changed
        self._commit(transition)
        self._ensure_driver()
        self._deliver()

    def _record_posts(
        self, transitions: Sequence[Transition], consumed: Sequence[Consumed]
    ) -> None:
        """Posts (R35): one append holds every applied command's events and every post's
        outcome, then each command commits in order, as ``_record`` would."""
        self._check_attached()
        events = [event for transition in transitions for event in transition.durable]
        self._log.append(events, consumed=consumed)  # type: ignore[call-arg]
        for transition in transitions:
            self._commit(transition)
        self._ensure_driver()
        self._deliver()

    def _commit(self, transition: Transition) -> None:
        self._state = transition.state
        self._sync_signal()
        if self._state.status == "idle":
            self._wake_waiters()
        if transition.notifications and self._subscriptions:
            snapshot = self._subscriptions
            self._queue.extend((note, snapshot) for note in transition.notifications)

    def _check_attached(self) -> None:
        if self._detached:
            raise AgentDetached("the agent was detached: it refuses commands and writes nothing")

    def _sync_signal(self) -> None:
        """One AbortSignal per turn (and per job); trip it when the core marks the turn
        (or job) aborted (R23, R31)."""
        state = self._state
        if state.status == "maintenance":
            job = self._job_signal
            if job is not None and state.abort_cause is not None:
                job.trip(state.abort_cause)
            return
        if state.status != "running":  # running exactly while a turn is open (D11)
            return
        signal = self._signal
        if signal is None or signal.turn != state.last_turn:
            signal = self._signal = AbortSignal(state.last_turn)
        if state.abort_cause is not None:
            signal.trip(state.abort_cause)

    def _deliver(self) -> None:
        """Deliver queued notifications; a reentrant call returns (the outer loop delivers)."""
        if self._delivering:
            return
        self._delivering = True
        try:
            while self._queue:
                note, subscriptions = self._queue.popleft()
                for subscription in subscriptions:
                    if not subscription.active:
                        continue
                    try:
                        subscription.callback(note)
                    except Exception as error:
                        self._report_error(
                            f"inbox_core.shell: subscriber {subscription.callback!r} raised "
                            f"on {note.type}",
                            error,
                            notification=note,
                        )
        finally:
            self._delivering = False

    def _report_error(self, message: str, error: BaseException, **context: Any) -> None:
        """Report an error nobody awaits: the running loop's exception handler, else logging."""
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            logger.error("%s", message, exc_info=error)
            return
        loop.call_exception_handler(
            {"message": message, "exception": error, "agent": self, **context}
        )

    # ---------------------------------------------------------------- waiting

    def _is_idle(self) -> bool:
        return self._state.status == "idle"

    def _wake_waiters(self) -> None:
        waiters, self._waiters = self._waiters, []
        for waiter in waiters:
            wake(waiter)

    def _check_driving(self) -> None:
        if self._failure is not None:
            raise DriverStopped("the driver stopped; the open turn cannot end") from (self._failure)

    def _check_not_driver(self, what: str) -> None:
        if self._driver is not None and asyncio.current_task() is self._driver:
            raise RuntimeError(
                f"{what}() awaited from a host hook would wait for its own turn; "
                "use cancel() or dispose() there"
            )

    async def _wait_until(self, ready: Callable[[], bool], what: str) -> None:
        self._check_not_driver(what)
        loop = asyncio.get_running_loop()
        while True:
            self._check_attached()
            self._settle_end()
            if ready():
                return
            self._check_driving()
            self._ensure_driver()
            waiter: asyncio.Future[None] = loop.create_future()
            self._waiters.append(waiter)
            try:
                await waiter
            finally:
                if waiter in self._waiters:
                    self._waiters.remove(waiter)

    # ----------------------------------------------------------------- driver

    def _live_driver(self) -> asyncio.Task[None] | None:
        """The driver task, forgotten if its event loop was closed under it: that loop
        abandoned the in-flight hook (SH8), and a new driver asks the host again."""
        driver = self._driver
        if driver is not None and driver.get_loop().is_closed():
            self._driver = driver = None
        return driver

    def _ensure_driver(self) -> None:
        """Start the driver if a turn is open and none runs (exactly one driver task)."""
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
                await self._answer(awaiting, signal)
        except AgentDetached:
            if not self._detached:  # pragma: no cover - raised only once detached
                raise
        except Exception as error:
            self._failure = error
            self._report_error("inbox_core.shell: the driver stopped", error)
        finally:
            if self._driver is task:  # else a closed loop abandoned it; a newer driver runs
                self._driver = None
                if self._detached:
                    self._release_detached()  # the in-flight report is discarded (R29)
                elif self._state.awaiting is not None:
                    self._wake_waiters()  # they restart a driver or raise DriverStopped

    async def _invoke(self, call: Callable[[], Awaitable[T]]) -> T | _Raised:
        """Await one hook to its end (never cancelled by the shell); capture its exception."""
        try:
            return await call()
        except asyncio.CancelledError as error:
            if _driver_cancelled():
                raise  # the driver itself is cancelled (the loop shuts down)
            return _Raised(error)
        except Exception as error:
            return _Raised(error)

    async def _answer(self, awaiting: Awaiting, signal: AbortSignal) -> None:
        """Ask the host what the core awaits and record the matching report."""
        host = self._host
        turn = awaiting.turn
        if isinstance(awaiting, AwaitPreStep):
            step = awaiting.step
            if signal.aborted:  # D6: any report closes an aborted turn; ask nothing
                self._submit(awaiting.answer(Reject()))
                return
            batch = awaiting.batch
            decision = await self._invoke(lambda: host.pre_step(turn, step, batch, signal))
            self._submit_result(awaiting, decision, awaiting.answer, awaiting.fail)
        elif isinstance(awaiting, AwaitStep):
            step_awaited = awaiting
            if signal.aborted:
                self._submit(awaiting.answer(Completed()))
                return
            outcome = await self._invoke(lambda: host.run_step(turn, step_awaited.step, signal))
            self._submit_result(
                awaiting,
                outcome,
                awaiting.answer,
                lambda message, code: step_awaited.answer(Failed(message, code)),
            )
        else:
            records: tuple[HostRecord, ...] = ()
            if not signal.aborted:
                result = await self._invoke(lambda: host.turn_stopping(turn, signal))
                if isinstance(result, _Raised):
                    self._report_error(
                        f"inbox_core.shell: host turn_stopping({turn}) raised; "
                        "the turn goes on as if it returned",
                        result.error,
                        turn=turn,
                    )
                elif isinstance(result, Recorded):
                    records = result.records
            self._submit(awaiting.answer(records))

    def _submit_result(
        self,
        awaiting: Awaiting,
        result: object,
        answer: Callable[[Any, tuple[HostRecord, ...]], Report],
        failure: Callable[[str, str], Report],
    ) -> None:
        """Record the hook's answer (and its records, R30); a hook error, an answer that is
        not a valid one (even one that cannot be rendered) or a rejected report is recorded
        as ``failure`` (R33)."""
        if self._detached:
            return  # detach discards the in-flight report
        if isinstance(result, _Raised):
            error = result.error
        else:
            try:
                report = answer(*unwrap(result))
            except Exception as invalid:  # a bad value; its repr may raise too (R33)
                error = invalid
            else:
                try:
                    transition = reduce(self._state, report)
                except InboxCoreError as rejected:  # D7 duplicate ids
                    error = rejected
                else:
                    self._record(transition)
                    return
        message, code = describe_failure(error)
        logger.warning(
            "host answer to %s failed with %s; reported as the turn's error",
            type(awaiting).__name__,
            code,
            exc_info=error,
        )
        self._submit(failure(message, code))

    def _submit(self, report: Report) -> None:
        if self._detached:
            return
        transition = reduce(self._state, report)  # answers ``awaiting``: cannot be rejected
        self._record(transition)


if TYPE_CHECKING:

    def _is_agent(agent: LoopAgent) -> Agent:
        return agent  # mypy: LoopAgent satisfies the structural Agent protocol
