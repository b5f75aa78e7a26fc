"""``LoopAgent``: the asyncio shell around the pure reducer (brief section 9, specs/shell.md).

``LoopAgent`` is the facade: the public commands, ``subscribe``,
``when_idle``, ``detach``, ``aclose`` and maintenance. It holds three parts,
each in its own module, and wires them together here (the only module that
knows all three):

- a ``CommitPath`` (``inbox_core.shell.commit``): head and durable states,
  the writer, adoption in order, announcing;
- a ``Driver`` (``inbox_core.shell.driver``): the task that asks the host,
  using the path only through ``DriverPath``;
- a ``PostServer`` (``inbox_core.shell.serving``) when the log holds posts,
  using the path only through ``PostSink``.

Every command goes through the one path::

    transition = reduce(head, command)      # typed error -> raised, nothing changed
    head = transition.state                 # what the next command is reduced against
    writer.write(Part(log, transition.durable, ...))     # one atomic write per command
    ... once durable, in order: state = transition.state   # adopt; trip the AbortSignal
    queue transition.notifications          # then deliver, in commit order, never nested

With the default ``InlineWriter`` the write happens before the command
returns (a failed write raises to the caller, nothing changed); with a
``ThreadWriter`` (a ``Worker``'s group commit) it happens off the event loop
and the agent adopts it when it is durable (``await agent.durable()``).
Delivery and edit methods are synchronous either way. The driver is one
asyncio task, alive exactly while a turn is open in the durable state: it
reads ``state.awaiting``, awaits the matching ``Host`` hook and feeds the
answer back through the commit path as the report the core awaits, then waits
until that report is durable before it asks the host again. It is started by
the adoption of the command that opens a turn (a waking send while idle, from
anywhere, subscribers included) and keeps going across consecutive turns,
since the core opens the next turn inside the report that ends the previous
one (R19).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, Final, TypeVar, overload

from inbox_core import commands as intents
from inbox_core.commands import (
    BeginMaintenance,
    Cancel,
    Clear,
    Dispose,
    EndMaintenance,
    Expectation,
    Move,
    Remove,
    Replace,
    Resume,
    Send,
    Splice,
)
from inbox_core.errors import InboxCoreError, InvalidInput
from inbox_core.events import HostRecord, Status
from inbox_core.inbox import Inbox
from inbox_core.shell import durations
from inbox_core.shell.commit import CommitPath, Subscriber, needs_owner
from inbox_core.shell.driver import Driver
from inbox_core.shell.errors import AgentDetached, DriverStopped
from inbox_core.shell.host import AbortSignal, Host, Recorded, run_job
from inbox_core.shell.output import OutputFanout, OutputSubscriber
from inbox_core.shell.serving import PostServer
from inbox_core.shell.stores.base import EventLog
from inbox_core.shell.stores.checkpoints import Keeper, LogHistory, Opened, open_log
from inbox_core.shell.stores.memory import MemoryLog
from inbox_core.shell.stores.writers import INLINE, Writer, background
from inbox_core.state import AgentState
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

__all__ = ["AgentDetached", "DriverStopped", "LoopAgent", "MaintenanceJob", "Subscriber"]

logger: Final = logging.getLogger("inbox_core.shell")

MaintenanceJob = Callable[[AbortSignal], Awaitable[Iterable[HostRecord] | Recorded[Any] | None]]
"""``run_maintenance``'s job: a coroutine function of the job's ``AbortSignal``."""
T = TypeVar("T")
_LOG_METHODS: Final = ("acquire", "release", "append", "read")
_HOST_HOOKS: Final = ("pre_step", "run_step", "turn_stopping")


def _open(host: Host, log: EventLog) -> Opened:
    """Read and fold ``log`` (blocking: its reads), from its newest checkpoint where it
    keeps them (R41), and restore a host that restores from a tail (SH11). A host with only
    ``restore(events)`` needs every event: the log is then read whole."""
    restore_tail = getattr(host, "restore_tail", None)
    whole = restore_tail is None and getattr(host, "restore", None) is not None
    opened = open_log(log, whole=whole)
    if restore_tail is not None:
        restore_tail(LogHistory(log, opened.start, opened.events))
    return opened


def _keeper(log: EventLog, writer: Writer, opened: Opened) -> Keeper | None:
    """The owner's checkpoints of ``log`` (R41), or None: a log that keeps none (a host's
    own) or whose owner writes none (``checkpoint_every=None``)."""
    if not callable(getattr(log, "write_checkpoints", None)):
        return None
    every = getattr(log, "checkpoint_every", None)
    if every is None:
        return None
    submit = getattr(writer, "checkpoint", None) or background().submit
    return Keeper(log, opened, submit, every=every, lazy=bool(getattr(log, "in_memory", False)))


def _check_has(value: object, what: str, methods: tuple[str, ...]) -> None:
    """``InvalidInput`` unless ``value`` has every one of ``methods``, callable (R26)."""
    if not all(callable(getattr(value, method, None)) for method in methods):
        raise InvalidInput(f"{what} must have {', '.join(methods)}; got {type(value).__name__}")


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

    ``writer`` decides when a command's events are written (specs/shell.md
    section 1): the default writes them before the command returns; a
    ``ThreadWriter`` (what a ``Worker`` uses) writes them off the event loop,
    batched with other agents', and the agent adopts a command once it is
    durable (``await agent.durable()``). ``await LoopAgent.open(...)`` builds
    an agent without blocking the event loop on the log's I/O.
    """

    def __init__(
        self, host: Host, *, log: EventLog | None = None, writer: Writer | None = None
    ) -> None:
        log, writer = self._checked(host, log, writer)
        log.acquire()  # R29: before reading; LogOwned leaves everything untouched
        try:
            self._start(host, log, writer, _open(host, log), serve_now=True)
        except BaseException:
            log.release()  # a log we cannot resume is not held
            raise

    @classmethod
    async def open(cls, host: Host, *, log: EventLog, writer: Writer | None = None) -> LoopAgent:
        """``LoopAgent(host, log=log, writer=writer)`` with the log's acquire, read and fold in
        a worker thread, so the event loop is not blocked by them (R37); a host's
        ``restore_tail`` runs there too. Posts that waited are applied by the serving task,
        before any later post."""
        agent = cls.__new__(cls)
        log, writer = agent._checked(host, log, writer)
        await asyncio.to_thread(log.acquire)
        try:
            opened = await asyncio.to_thread(_open, host, log)
            agent._start(host, log, writer, opened, serve_now=False)
        except BaseException:
            await asyncio.to_thread(log.release)
            raise
        return agent

    @staticmethod
    def _checked(
        host: Host, log: EventLog | None, writer: Writer | None
    ) -> tuple[EventLog, Writer]:
        _check_has(host, "host (a Host)", _HOST_HOOKS)
        if log is not None:
            _check_has(log, "log (an EventLog)", _LOG_METHODS)
        if writer is not None:
            _check_has(writer, "writer (a Writer)", ("write",))
        return (MemoryLog() if log is None else log), (INLINE if writer is None else writer)

    def _start(
        self,
        host: Host,
        log: EventLog,
        writer: Writer,
        opened: Opened,
        *,
        serve_now: bool,
    ) -> None:
        self._host = host
        self._log = log
        self._server: PostServer | None = None
        self._released = False  # the release has begun (after the last checkpoint)
        self._log_released = False  # and the log is given back
        self._abandoned: asyncio.Task[None] | None = None  # a hook detach gave up on
        self._end_owed = False  # a maintenance end the log refused: retried (R31)
        path = self._path = CommitPath(
            log, writer, opened.fold.state(), subject=self, after_settle=self._after_settle
        )
        keeper = self._keeper = path.keeper = _keeper(log, writer, opened)
        self._voice = OutputFanout(path.report_error)  # R43: live output, beside the path
        self._driver = Driver(host, path, self._maybe_release, self._voice)
        restore = getattr(host, "restore", None)
        if restore is not None and getattr(host, "restore_tail", None) is None:
            restore(opened.events)  # a RestoringHost rebuilds its memory (SH11): all of it
        self._resumed = bool(path.apply(Resume()).durable)  # D8: a no-op unless needed
        path.record((), work=needs_owner(path.head))  # R37: what the log says of its owner
        if keeper is not None:
            keeper.opened()  # R41: an opening that folded a long tail saves the next one
        self._server = PostServer.attach(path, log)  # R35: a log that holds posts is served
        if self._server is not None:
            if serve_now:
                self._server.drain_quietly()  # what waited for an owner, after its Resume
            self._server.ensure_task()

    def _after_settle(self) -> None:
        """The commit path adopted writes (or lost one): start what is now due (the post
        server, the driver) and, once detached, give the log back when nothing is left."""
        if self._path.lost:
            self._stop_serving()  # posts wait for the next owner (R35)
        self._kick()
        if self._path.closed:
            self._maybe_release()

    def _kick(self) -> None:
        """Start the post server's task and the driver if they are due and a loop runs."""
        if self._server is not None:
            self._server.ensure_task()  # the posts' server needs a running loop too
        self._driver.ensure()

    # ------------------------------------------------------------------ views

    @property
    def state(self) -> AgentState:
        """The current core state: every command so far applied (immutable; replaced by every
        command). With a ``ThreadWriter`` its newest part may not be durable yet."""
        return self._path.head

    @property
    def status(self) -> Status:
        return self._path.head.status

    @property
    def inbox(self) -> Inbox:
        """Both pending lists: ``.next_turn`` and ``.next_step`` tuples of entries."""
        return self._path.head.inbox

    @property
    def log(self) -> EventLog:
        return self._log

    @property
    def writer(self) -> Writer:
        return self._path.writer

    @property
    def host(self) -> Host:
        return self._host

    @property
    def detached(self) -> bool:
        """Whether ``detach()`` was called: the agent refuses commands and writes nothing."""
        return self._path.closed

    @property
    def stopped(self) -> BaseException | None:
        """Why the driver stopped (the log's error, or a core bug), None while it can drive."""
        return self._path.failure

    @property
    def resumed(self) -> bool:
        """Whether opening this agent had to resume its log (R27): a turn left open or
        waking work left pending by an owner that died or detached."""
        return self._resumed

    @property
    def posts_decided(self) -> int:
        """How many posts this agent consumed (applied or rejected, R35), durably: a post
        whose write failed was decided by nobody and is not counted."""
        return self._path.posts_decided

    @property
    def signal(self) -> AbortSignal | None:
        """The open (or last) turn's abort signal; None before the first turn."""
        return self._path.signal

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
        self._path.apply(intents.followup(message, contexts, expect=expect))

    def queue(
        self,
        message: UserMessage,
        *,
        contexts: tuple[UserMessage, ...] = (),
        expect: Expectation | None = None,
    ) -> None:
        """next-turn, not waking: parked until a waking delivery runs the model (R12, R15)."""
        self._path.apply(intents.queue(message, contexts, expect=expect))

    def steer(
        self,
        message: UserMessage,
        *,
        contexts: tuple[UserMessage, ...] = (),
        expect: Expectation | None = None,
    ) -> None:
        """next-step, waking: joins the running turn at its next step boundary (R12, R17)."""
        self._path.apply(intents.steer(message, contexts, expect=expect))

    def inject(self, message: UserMessage, *, expect: Expectation | None = None) -> None:
        """next-step, not waking, no contexts: rides along with a later boundary (R12, R15)."""
        self._path.apply(intents.inject(message, expect=expect))

    def send(self, input: ResolvedAgentInput, *, expect: Expectation | None = None) -> None:
        """Deliver a resolved input (R11, R13, R14)."""
        self._path.apply(Send(input, expect))

    # ------------------------------------------------------------------ edits

    def replace(self, message_id: MessageId, message: UserMessage) -> bool:
        """Swap a pending entry's primary message (R7); False (no-op) when not pending."""
        return bool(self._path.apply(Replace(message_id, message)).durable)

    def remove(self, message_id: MessageId) -> bool:
        """Cancel one pending entry (R7); False (no-op) when not pending as a primary message."""
        return bool(self._path.apply(Remove(message_id)).durable)

    def move(
        self, message_id: MessageId, target: Target, *, expect: Expectation | None = None
    ) -> None:
        """Move a pending entry to the end of ``target`` (R8, D1, D2)."""
        self._path.apply(Move(message_id, target, expect))

    def splice(
        self, target: Target, start: int, delete_count: int, entries: Sequence[Entry] = ()
    ) -> None:
        """List-splice edit of one pending list (R5, R7, D14); ``entries`` any sequence."""
        if isinstance(entries, Sequence) and not isinstance(entries, (str, bytes)):
            entries = tuple(entries)  # else the command refuses it (InvalidSplice)
        self._path.apply(Splice(target, start, delete_count, entries))

    def clear(self) -> None:
        """Cancel every pending entry, next-step first (R7, D10); the turn goes on."""
        self._path.apply(Clear())

    # -------------------------------------------------------------- lifecycle

    def cancel(
        self,
        cause: UserCause | ParentCause | HookCause = UserCause(),
        *,
        keep_inbox: bool = False,
        expect: Expectation | None = None,
    ) -> None:
        """Abort the live turn; without ``keep_inbox`` also cancel everything pending (R21-R23)."""
        self._path.apply(Cancel(cause, keep_inbox, expect))

    def dispose(self) -> None:
        """Synchronous ``Dispose`` (R25): ``aclose`` without the wait. Raises once disposed."""
        self._path.apply(Dispose())

    async def when_idle(self) -> None:
        """Return once the agent is idle (R19) and everything it did is durable.

        It returns only when, at that moment, ``status == "idle"``: work that
        arrives while waiting (also work that re-wakes the agent right after
        an idle) is waited for too. Raises ``DriverStopped`` if the driver
        failed, the store's error while the end of a maintenance job it owes
        still cannot be written (R31; the next call tries again), and
        ``RuntimeError`` when awaited from the driver itself (a host hook
        waiting for its own turn to end would never return).
        """
        await self._wait_until(self._is_idle, "when_idle")

    async def durable(self) -> None:
        """Return once every command issued so far is durable in the log (R37).

        With the default writer that is at once: a command is durable when it
        returns. With a ``ThreadWriter`` it waits for the group commit that
        holds the last of them; ``DriverStopped`` (the write's error as
        ``__cause__``) if a write failed, so they may not all be in the log.
        """
        await self._path.durable()

    async def aclose(self) -> None:
        """Dispose (unless already disposed) and wait until the agent converged (R25, D5).

        Idempotent: a second (or concurrent) ``aclose`` does not raise; it
        waits for the same convergence. The log is not closed (its owner does).
        """
        self._check_not_driver("aclose")
        if not self._path.head.disposed:
            self._path.apply(Dispose())
        await self._wait_until(self._is_idle, "aclose")
        self._stop_serving()
        await self._final_checkpoint()
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
        (or the agent is idle), and ``answer`` (else None) is returned once
        the end is durable.

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
        signal = self._path.job_signal = AbortSignal(None)
        try:
            self._path.apply(BeginMaintenance())
        except BaseException:
            self._path.job_signal = None
            raise
        await self.durable()  # the job starts once what came before is in the log
        try:
            answer, records = await run_job(job, signal)
        except BaseException:
            self._end_job(())
            raise
        failure = self._end_job(records)
        if failure is not None:
            raise failure
        await self.durable()
        return answer

    def _end_job(self, records: tuple[HostRecord, ...]) -> Exception | None:
        """Leave maintenance: ``EndMaintenance(records)``, else the record-less end, else owe it.

        Returns the error that kept the records (or the end) from the log, None
        once they are logged. An owed end wakes the waiters: they apply it
        (``_settle_end``) or raise the store's error; nothing waits for an end
        that would never come.
        """
        self._path.job_signal = None
        if self._path.closed:  # a detached agent writes nothing (R29)
            return None
        failure: Exception | None = None
        if records:
            try:
                self._path.apply(EndMaintenance(records))
                return None
            except Exception as error:
                failure = error
                self._restore_host()  # the host may hold records the log refused (SH11)
        try:
            self._path.apply(EndMaintenance())
        except Exception as error:
            self._end_owed = True
            self._path.wake_waiters()
            return failure or error
        return failure

    def _settle_end(self) -> None:
        """Apply the record-less end of maintenance the log refused before (R31), if owed; the
        store's error propagates while it still fails (the end stays owed)."""
        if self._end_owed and not self._path.closed:
            self._path.apply(EndMaintenance())
            self._end_owed = False

    def _restore_host(self) -> None:
        """Rebuild a ``RestoringHost``'s memory from the log after the log refused records
        it had folded in (SH11); a failure here is reported, never raised."""
        restore_tail = getattr(self._host, "restore_tail", None)
        restore = getattr(self._host, "restore", None)
        if restore_tail is None and restore is None:
            return
        try:
            events = self._log.read()
            if restore_tail is not None:
                restore_tail(LogHistory(self._log, 0, events))
            elif restore is not None:
                restore(events)
        except Exception as error:
            self._path.report_error(
                "inbox_core.shell: restoring the host from the log failed", error
            )

    async def detach(self, *, grace: float | None = None) -> None:
        """Hand the agent over (R29): stop driving, write nothing new, release the log.

        The graceful shutdown that keeps the inbox (``aclose()`` disposes it).
        From the call on the agent refuses every command (``AgentDetached``),
        reports included, and announces nothing. The live turn's
        ``AbortSignal`` trips with ``ParentCause()`` (nothing durable records
        it) so the host winds down; ``detach`` waits for the in-flight hook to
        return (cancellation stays cooperative), discards its report, waits
        for the writes of commands already accepted (a ``ThreadWriter``'s) and
        releases the log. The next owner's ``Resume`` then treats the log
        exactly as after a crash (R27): the open turn closes ``interrupted``
        and an undecided claim goes back to the inbox. Idempotent. Awaited
        from a hook of this agent it returns at once; the log is released
        when that hook returns.

        ``grace`` (seconds, None: no limit) bounds the wait for the hook: one
        that has not returned by then ignores its signal and is abandoned (its
        task is cancelled and not awaited) and the log is released without
        it, which is safe since a detached agent writes nothing (R37). A call
        with ``grace=0`` while another waits abandons the hook at once.
        """
        limit = None if grace is None else durations.seconds(grace, "grace", zero=True)
        path = self._path
        if not path.closed:
            path.close()  # the host winds down (a job too, R31); nothing more is announced
            self._stop_serving()
        driver = self._driver.live()
        if driver is not None and driver is not self._abandoned:
            if driver is asyncio.current_task():
                return  # released by the driver when this hook returns
            done, _ = await asyncio.wait({driver}, timeout=limit)
            if not done and driver is self._driver.live():
                self._abandon(driver, limit)
        if path.unsettled:
            with contextlib.suppress(DriverStopped):  # a failed write: the log has the rest
                await path.durable()
        self._maybe_release()
        while self._released and not self._log_released:  # its last checkpoint is on its way
            await path.wait()

    def _abandon(self, driver: asyncio.Task[None], grace: float | None) -> None:
        """Give up on a hook that outlived its grace: cancel its task, release without it."""
        self._abandoned = driver
        driver.cancel()
        logger.warning(
            "detach: a host hook ignored its abort signal for %g s; abandoned (agent %r)",
            grace,
            getattr(self._log, "agent_id", None),
        )

    def _stop_serving(self) -> None:
        if self._server is not None:
            self._server.stop()  # posts wait for the next owner (R35)

    def _maybe_release(self) -> None:
        """Release the log once detached, no hook runs and no write is on its way (R29),
        after its last checkpoint is written (R41: the owner writes it, off the loop)."""
        if (
            not self._path.closed
            or self._released
            or self._driver.live() not in (None, self._abandoned)
            or self._path.unsettled
        ):
            return
        self._released = True
        self._stop_serving()
        keeper = self._keeper
        if keeper is None or not keeper.final(lambda _error: self._release_log()):
            self._release_log()

    def _release_log(self) -> None:
        self._log_released = True
        try:
            self._log.release()
        except InboxCoreError as error:  # e.g. LogUnavailable: the lease lapses on its own
            logger.warning("detach: releasing the log failed: %s", error, exc_info=error)
        self._path.wake_waiters()  # a detach waiting for it

    async def _final_checkpoint(self) -> None:
        """Write the checkpoint of everything durable, if one is due (R41), and wait for it
        (its failure is logged by the writer: a checkpoint is a cache)."""
        keeper = self._keeper
        if keeper is None:
            return
        written: asyncio.Future[None] = asyncio.get_running_loop().create_future()

        def done(_error: BaseException | None) -> None:
            if not written.done():
                written.set_result(None)

        if keeper.final(done):
            await written

    def subscribe(self, callback: Subscriber) -> Callable[[], None]:
        """Receive notifications of every command committed from now on, in commit order.

        Returns the (idempotent) unsubscribe function: nothing is delivered to
        the callback after it returns, even notifications already queued. A
        callback that is not callable raises ``InvalidInput`` here.
        """
        if not callable(callback):
            raise InvalidInput(f"a subscriber must be callable, got {type(callback).__name__}")
        return self._path.subscribe(callback)

    def subscribe_output(self, callback: OutputSubscriber) -> Callable[[], None]:
        """Receive each live output message of this agent's steps as it is published (R43),
        in publish order; never logged, not replayed. Returns the (idempotent) unsubscribe;
        ``InvalidInput`` for a callback that is not callable. What it raises is reported to
        the loop's exception handler; the host goes on."""
        return self._voice.subscribe(callback)

    def __repr__(self) -> str:
        state = self._path.head
        return (
            f"LoopAgent(status={state.status!r}, last_turn={state.last_turn}, "
            f"awaiting={state.awaiting!r}, disposed={state.disposed})"
        )

    # ---------------------------------------------------------------- waiting

    def _is_idle(self) -> bool:
        return self._path.head.status == "idle" and not self._path.unsettled

    def _check_driving(self) -> None:
        if self._path.failure is not None:
            raise DriverStopped("the driver stopped; the open turn cannot end") from (
                self._path.failure
            )

    def _check_not_driver(self, what: str) -> None:
        if self._driver.is_current():
            raise RuntimeError(
                f"{what}() awaited from a host hook would wait for its own turn; "
                "use cancel() or dispose() there"
            )

    async def _wait_until(self, ready: Callable[[], bool], what: str) -> None:
        self._check_not_driver(what)
        while True:
            self._path.check_usable()
            self._settle_end()
            if ready():
                return
            self._check_driving()
            self._kick()
            await self._path.wait()


if TYPE_CHECKING:

    def _is_agent(agent: LoopAgent) -> Agent:
        return agent  # mypy: LoopAgent satisfies the structural Agent protocol
