"""The commit path (SH1, R37): reduce, write, adopt, announce; the one place that decides
what a command's return promises.

``CommitPath`` reduces every command synchronously against its *head* state
(what the next command is reduced against, and what ``status`` and ``inbox``
show), so a typed error reaches the caller with nothing changed and R13/R14
hold when the command returns. The command's durable events then go to the
agent's ``Writer`` as one ``Part`` (one atomic write, ``inbox_core.shell.stores.writers``).
Only once the part is durable is its transition *adopted*: the durable
``state`` advances, the turn's ``AbortSignal`` trips, notifications are
announced, and the agent around the path is told (``after_settle``), so that
its driver may hand the next hook to the host: nothing reaches a subscriber or
the host before the events that led to it are durable. Writes are adopted in
the order they were made.

With the ``InlineWriter`` the write happens inside the command: it returns
durable, or raises with nothing changed. With a ``ThreadWriter`` the command
returns accepted and ordered; ``await path.durable()`` waits for the write,
and a failed write stops the path (``_lose``): everything built on it is
dropped, the head falls back to the durable state, the log stays the authority.

The path knows nothing of the agent that holds it but one callback,
``after_settle``, run after every adoption or loss (the agent starts its
driver and post server, or releases its log once detached); the driver and the
post server use the path through the narrow protocols they declare
(``driver.DriverPath``, ``serving.PostSink``).
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Final

from inbox_core.commands import Command
from inbox_core.events import Notification
from inbox_core.reducer import reduce
from inbox_core.shell.errors import AgentDetached, DriverStopped
from inbox_core.shell.host import AbortSignal, wait_in, wake
from inbox_core.shell.stores.base import EventLog
from inbox_core.shell.stores.posts import Consumed
from inbox_core.shell.stores.writers import INLINE, Part, Writer, write_alone
from inbox_core.state import AgentState, Transition
from inbox_core.values import ParentCause

if TYPE_CHECKING:
    from inbox_core.shell.stores.checkpoints import Keeper

__all__ = ["CommitPath", "Subscriber", "needs_owner"]

logger: Final = logging.getLogger("inbox_core.shell")

Subscriber = Callable[[Notification], None]


def needs_owner(state: AgentState) -> bool:
    """Whether a log that ends in ``state`` needs an owner (R37): a turn is open, or waking
    input waits behind a maintenance job (replay would find it pending, R27)."""
    status = state.status
    if status != "maintenance":
        return status == "running"
    inbox = state.inbox
    return any(entry.wakeup for entry in (*inbox.next_step, *inbox.next_turn))


class _Subscription:
    __slots__ = ("active", "callback")

    def __init__(self, callback: Subscriber) -> None:
        self.callback = callback
        self.active = True


class _Unsettled:
    """One write on its way: the transitions it adopts, in order, once it is durable."""

    __slots__ = ("done", "error", "number", "posts", "transitions")

    def __init__(self, transitions: Sequence[Transition], number: int, posts: int) -> None:
        self.transitions = transitions
        self.number = number
        self.posts = posts  # posts it consumes: counted once durable (posts_decided)
        self.done = False
        self.error: BaseException | None = None


class CommitPath:
    """One agent's head and durable states, its writer, adoption in order, and announcing.

    ``subject`` is what error reports name as the ``agent`` (the object users hold);
    ``after_settle`` runs after every adoption and after a loss.
    """

    __slots__ = (
        "_after_settle",
        "_delivering",
        "_queue",
        "_subject",
        "_subscriptions",
        "_unsettled",
        "_waiters",
        "closed",
        "failure",
        "head",
        "issued",
        "job_signal",
        "keeper",
        "log",
        "lost",
        "posts_decided",
        "settled",
        "signal",
        "state",
        "writer",
    )

    def __init__(
        self,
        log: EventLog,
        writer: Writer,
        state: AgentState,
        *,
        subject: object,
        after_settle: Callable[[], None],
    ) -> None:
        self.log = log
        self.writer = writer
        self.state = state  # the durable state: what the log holds
        self.head = state  # what the next command is reduced against
        self._subject = subject
        self._after_settle = after_settle
        self.signal: AbortSignal | None = None  # the open (or last) turn's
        self.job_signal: AbortSignal | None = None  # the running maintenance job's
        self.failure: BaseException | None = None  # why the agent stopped (the first cause)
        self.lost = False  # a deferred write failed: the agent stopped (R37)
        self.closed = False  # detached: writes nothing more, announces nothing (R29)
        self.posts_decided = 0
        self.keeper: Keeper | None = None  # R41: folds what is durable, writes checkpoints
        self.issued = 0  # writes handed to the writer so far
        self.settled = 0  # of them, adopted (or dropped by a failure)
        self._unsettled: deque[_Unsettled] = deque()
        self._subscriptions: tuple[_Subscription, ...] = ()
        self._queue: deque[tuple[Notification, tuple[_Subscription, ...]]] = deque()
        self._delivering = False
        self._waiters: list[asyncio.Future[None]] = []
        self._sync_signal()

    @property
    def unsettled(self) -> bool:
        """Whether a write is on its way (handed to the writer, not adopted yet)."""
        return bool(self._unsettled)

    # ----------------------------------------------------------------- writing

    def apply(self, command: Command) -> Transition:
        """Reduce ``command`` against the head and record it; a typed error: nothing changed."""
        if self.closed or self.lost:
            self.check_usable()
        transition = reduce(self.head, command)
        self.record((transition,))
        return transition

    def record(
        self,
        transitions: Sequence[Transition],
        consumed: Sequence[Consumed] = (),
        *,
        work: bool | None = None,
    ) -> int:
        """Hand one write to the writer: the events of ``transitions`` (one command, or a
        batch of posts) and the posts they ``consumed`` (or, with no transition, only
        ``work``: whether the agent needs an owner, R37); adopt what is durable, in order.
        Returns the write's number (``until_settled``). A write the writer refuses at once
        (the inline writer's failure) raises with nothing changed."""
        if self.closed or self.lost:
            self.check_usable()
        if len(transitions) == 1:
            transition = transitions[0]
            head, events = transition.state, transition.durable
        elif transitions:
            head = transitions[-1].state
            events = tuple(event for t in transitions for event in t.durable)
        else:
            head, events = self.head, ()
        number = self.issued + 1
        if self.writer is INLINE and not self._unsettled:
            # the inline writer's path: the same steps, with none of the bookkeeping a
            # write on its way needs (B5 would pay it for every command)
            if consumed:
                self.log.append(events, consumed=consumed)  # type: ignore[call-arg]
            elif events:
                self.log.append(events)
            elif work is not None:
                write_alone(Part(self.log, events, consumed, work))
            self.head = head
            self.issued = self.settled = number
            self.posts_decided += len(consumed)
            if events and self.keeper is not None:
                self.keeper.adopt(events)
            for transition in transitions:
                self._commit(transition)
            if self._waiters and head.status == "idle":
                self.wake_waiters()  # what an inline waiter can wait for: an idle
            self._after_settle()
            self._deliver()
            return number
        previous = self.head
        entry = _Unsettled(transitions, number, len(consumed))
        self.head = head
        self._unsettled.append(entry)
        self.issued = number
        try:
            durable = self.writer.write(
                Part(self.log, events, consumed, work), lambda error: self._written(entry, error)
            )
        except BaseException:
            self._unsettled.pop()  # nothing was built on it: the writer refused at once
            self.issued = number - 1
            self.head = previous
            raise
        if durable:
            entry.done = True
            self._settle()
        return number

    def record_posts(self, transitions: Sequence[Transition], consumed: Sequence[Consumed]) -> int:
        """Posts (R35): one write holds every applied command's events and every post's
        outcome, then each command is adopted in order, as ``record`` would (and the posts
        counted in ``posts_decided`` once durable: a failed write decided none)."""
        return self.record(transitions, consumed)

    def _written(self, entry: _Unsettled, error: BaseException | None) -> None:
        """A deferred write's outcome, in the event loop (``Writer.write``'s ``done``)."""
        if entry.done or not self._unsettled or entry.number < self._unsettled[0].number:
            return  # dropped by an earlier failure
        entry.done, entry.error = True, error
        self._settle()

    def _settle(self) -> None:
        """Adopt the durable prefix of the unsettled writes, in order; then tell the agent
        and deliver what they announce. A failed write stops the path (``_lose``)."""
        unsettled = self._unsettled
        adopted = False
        while unsettled and unsettled[0].done:
            entry = unsettled.popleft()
            if entry.error is not None:
                self._lose(entry.error)
                return
            keeper = self.keeper
            for transition in entry.transitions:
                if keeper is not None and transition.durable:
                    keeper.adopt(transition.durable)
                self._commit(transition)
            self.settled = entry.number
            self.posts_decided += entry.posts
            adopted = True
        if adopted and self._waiters:
            self.wake_waiters()  # idle, durable, released: each waiter checks its own
        self._after_settle()
        self._deliver()

    def _lose(self, error: BaseException) -> None:
        """A deferred write failed (R37): drop it and every write built on it (the log stays
        the authority: the head falls back to the durable state), stop driving, and make
        every later command raise ``DriverStopped``."""
        self.lost = True
        if self.failure is None:
            self.failure = error
        self._unsettled = deque()
        self.settled = self.issued  # every write is settled now: adopted or dropped
        self.head = self.state
        if self.signal is not None and self.state.status == "running":
            self.signal.trip(ParentCause())  # the host winds down: its turn cannot go on
        if self.job_signal is not None:
            self.job_signal.trip(ParentCause())
        self.wake_waiters()
        self.report_error("inbox_core.shell: a write failed; the agent stopped", error)
        self._after_settle()
        self._deliver()

    def _commit(self, transition: Transition) -> None:
        self.state = transition.state
        self._sync_signal()
        if transition.notifications and self._subscriptions and not self.closed:
            snapshot = self._subscriptions
            self._queue.extend((note, snapshot) for note in transition.notifications)

    def _sync_signal(self) -> None:
        """One AbortSignal per turn (and per job); trip it when the durable state marks the
        turn (or job) aborted (R23, R31)."""
        state = self.state
        if state.status == "maintenance":
            job = self.job_signal
            if job is not None and state.abort_cause is not None:
                job.trip(state.abort_cause)
            return
        if state.status != "running":  # running exactly while a turn is open (D11)
            return
        signal = self.signal
        if signal is None or signal.turn != state.last_turn:
            signal = self.signal = AbortSignal(state.last_turn)
        if state.abort_cause is not None:
            signal.trip(state.abort_cause)

    # ------------------------------------------------------------ lifecycle

    def check_usable(self) -> None:
        """``AgentDetached`` once closed, ``DriverStopped`` once a write failed."""
        if self.closed:
            raise AgentDetached("the agent was detached: it refuses commands and writes nothing")
        if self.lost:
            raise DriverStopped(
                "a write of this agent failed: it stopped (the log holds what is durable; "
                "a new LoopAgent over it resumes)"
            ) from self.failure

    def stop(self, error: BaseException, message: str) -> None:
        """The driver failed (SH8): remember the first cause and report it."""
        if self.failure is None:
            self.failure = error
            self.report_error(message, error)

    def close(self) -> None:
        """Detach (R29): from now on nothing is written or announced; the open turn's signal
        (and a maintenance job's) trips with ``ParentCause`` so the host winds down."""
        self.closed = True
        if self.head.status == "running" and self.signal is not None:
            self.signal.trip(ParentCause())
        if self.job_signal is not None:
            self.job_signal.trip(ParentCause())
        self._queue.clear()
        self.wake_waiters()  # they raise AgentDetached

    # ------------------------------------------------------------ announcing

    def subscribe(self, callback: Subscriber) -> Callable[[], None]:
        """Deliver the notifications of every command adopted from now on; the returned
        function (idempotent) ends it, even for notifications already queued."""
        subscription = _Subscription(callback)
        self._subscriptions = (*self._subscriptions, subscription)

        def unsubscribe() -> None:
            if subscription.active:
                subscription.active = False
                self._subscriptions = tuple(s for s in self._subscriptions if s.active)

        return unsubscribe

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
                        self.report_error(
                            f"inbox_core.shell: subscriber {subscription.callback!r} raised "
                            f"on {note.type}",
                            error,
                            notification=note,
                        )
        finally:
            self._delivering = False

    def report_error(self, message: str, error: BaseException, **context: Any) -> None:
        """Report an error nobody awaits: the running loop's exception handler, else logging."""
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            logger.error("%s", message, exc_info=error)
            return
        loop.call_exception_handler(
            {"message": message, "exception": error, "agent": self._subject, **context}
        )

    # ---------------------------------------------------------------- waiting

    def wake_waiters(self) -> None:
        waiters, self._waiters = self._waiters, []
        for waiter in waiters:
            wake(waiter)

    async def wait(self) -> None:
        """Until the next wake (a settle, a failure, a detach, an idle)."""
        await wait_in(self._waiters)

    async def until_settled(self, number: int) -> None:
        """Until write ``number`` (and every one before it) is durable and adopted; at once
        when it is. ``DriverStopped`` if a write failed (R37)."""
        while self.settled < number and not self.lost:
            await self.wait()
        if self.lost:
            self.check_usable()

    async def durable(self) -> None:
        """Until every write issued so far is durable (``until_settled`` of the last)."""
        await self.until_settled(self.issued)
