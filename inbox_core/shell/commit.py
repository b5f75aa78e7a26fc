"""The commit path (SH1, R37): reduce, write, adopt, announce; the one place that decides
what a command's return promises.

``LoopAgent`` reduces every command synchronously against its *head* state
(what the next command is reduced against, and what ``status`` and ``inbox``
show), so a typed error reaches the caller with nothing changed and R13/R14
hold when the command returns. The command's durable events then go to the
agent's ``Writer`` as one ``Part`` (one atomic write, ``inbox_core.shell.writers``).
Only once the part is durable is its transition *adopted*: the durable state
advances, the turn's ``AbortSignal`` trips, notifications are announced and the
driver may hand the next hook to the host (nothing reaches a subscriber or the
host before the events that led to it are durable). Writes are adopted in the
order they were made.

With the ``InlineWriter`` the write happens inside the command: it returns
durable, or raises with nothing changed. With a ``ThreadWriter`` the command
returns accepted and ordered; ``await agent.durable()`` waits for the write,
and a failed write stops the agent (``_lose``): everything built on it is
dropped, the head falls back to the durable state, the log stays the authority.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Final

from inbox_core.commands import Command
from inbox_core.events import Notification
from inbox_core.reducer import reduce
from inbox_core.shell.driver import AgentDetached, DriverStopped, Driving
from inbox_core.shell.host import AbortSignal, wait_in, wake
from inbox_core.shell.logs import EventLog
from inbox_core.shell.posts import Consumed
from inbox_core.shell.writers import INLINE, Part, Writer, write_alone
from inbox_core.state import AgentState, Transition
from inbox_core.values import ParentCause

if TYPE_CHECKING:
    from inbox_core.shell.agent import _Subscription

__all__ = ["Committing", "needs_owner"]

logger: Final = logging.getLogger("inbox_core.shell")


def needs_owner(state: AgentState) -> bool:
    """Whether a log that ends in ``state`` needs an owner (R37): a turn is open, or waking
    input waits behind a maintenance job (replay would find it pending, R27)."""
    status = state.status
    if status != "maintenance":
        return status == "running"
    inbox = state.inbox
    return any(entry.wakeup for entry in (*inbox.next_step, *inbox.next_turn))


class _Unsettled:
    """One write on its way: the transitions it adopts, in order, once it is durable."""

    __slots__ = ("done", "error", "number", "posts", "transitions")

    def __init__(self, transitions: Sequence[Transition], number: int, posts: int) -> None:
        self.transitions = transitions
        self.number = number
        self.posts = posts  # posts it consumes: counted once durable (posts_decided)
        self.done = False
        self.error: BaseException | None = None


class Committing(Driving):
    """The commit half of ``LoopAgent`` (what it needs of the rest is declared here)."""

    _log: EventLog
    _writer: Writer
    _unsettled: deque[_Unsettled]
    _issued: int
    _settled: int
    _lost: bool
    _job_signal: AbortSignal | None
    _subscriptions: tuple[_Subscription, ...]
    _queue: deque[tuple[Notification, tuple[_Subscription, ...]]]
    _delivering: bool
    _waiters: list[asyncio.Future[None]]
    _posts_decided: int

    def _stop_serving(self) -> None:
        raise NotImplementedError

    def _maybe_release(self) -> None:
        raise NotImplementedError

    def _apply(self, command: Command) -> Transition:
        if self._detached or self._lost:
            self._check_usable()
        transition = reduce(self._head, command)  # a typed error: nothing changed
        self._record((transition,))
        return transition

    def _record(
        self,
        transitions: Sequence[Transition],
        consumed: Sequence[Consumed] = (),
        *,
        work: bool | None = None,
    ) -> int:
        """Hand one write to the writer: the events of ``transitions`` (one command, or a
        batch of posts) and the posts they ``consumed`` (or, with no transition, only
        ``work``: whether the agent needs an owner, R37); adopt what is durable, in order.
        Returns the write's number (``_until_settled``). A write the writer refuses at once
        (the inline writer's failure) raises with nothing changed."""
        if self._detached or self._lost:
            self._check_usable()
        if len(transitions) == 1:
            transition = transitions[0]
            head, events = transition.state, transition.durable
        elif transitions:
            head = transitions[-1].state
            events = tuple(event for t in transitions for event in t.durable)
        else:
            head, events = self._head, ()
        number = self._issued + 1
        if self._writer is INLINE and not self._unsettled:
            # the inline writer's path: the same steps, with none of the bookkeeping a
            # write on its way needs (B5 would pay it for every command)
            if consumed:
                self._log.append(events, consumed=consumed)  # type: ignore[call-arg]
            elif events:
                self._log.append(events)
            elif work is not None:
                write_alone(Part(self._log, events, consumed, work))
            self._head = head
            self._issued = self._settled = number
            self._posts_decided += len(consumed)
            for transition in transitions:
                self._commit(transition)
            if self._waiters and head.status == "idle":
                self._wake_waiters()  # what an inline waiter can wait for: an idle
            self._ensure_driver()
            self._deliver()
            return number
        previous = self._head
        entry = _Unsettled(transitions, number, len(consumed))
        self._head = head
        self._unsettled.append(entry)
        self._issued = number
        try:
            durable = self._writer.write(
                Part(self._log, events, consumed, work), lambda error: self._written(entry, error)
            )
        except BaseException:
            self._unsettled.pop()  # nothing was built on it: the writer refused at once
            self._issued = number - 1
            self._head = previous
            raise
        if durable:
            entry.done = True
            self._settle()
        return number

    def _record_posts(self, transitions: Sequence[Transition], consumed: Sequence[Consumed]) -> int:
        """Posts (R35): one write holds every applied command's events and every post's
        outcome, then each command is adopted in order, as ``_record`` would (and the posts
        counted in ``posts_decided`` once durable: a failed write decided none)."""
        return self._record(transitions, consumed)

    def _written(self, entry: _Unsettled, error: BaseException | None) -> None:
        """A deferred write's outcome, in the event loop (``Writer.write``'s ``done``)."""
        if entry.done or not self._unsettled or entry.number < self._unsettled[0].number:
            return  # dropped by an earlier failure
        entry.done, entry.error = True, error
        self._settle()

    def _settle(self) -> None:
        """Adopt the durable prefix of the unsettled writes, in order; then start the driver
        and deliver what they announce. A failed write stops the agent (``_lose``)."""
        unsettled = self._unsettled
        adopted = False
        while unsettled and unsettled[0].done:
            entry = unsettled.popleft()
            if entry.error is not None:
                self._lose(entry.error)
                return
            for transition in entry.transitions:
                self._commit(transition)
            self._settled = entry.number
            self._posts_decided += entry.posts
            adopted = True
        if adopted:
            if self._waiters:
                self._wake_waiters()  # idle, durable, released: each waiter checks its own
            if self._detached:
                self._maybe_release()
        self._ensure_driver()
        self._deliver()

    def _lose(self, error: BaseException) -> None:
        """A deferred write failed (R37): drop it and every write built on it (the log stays
        the authority: the head falls back to the durable state), stop driving, stop
        serving, and make every later command raise ``DriverStopped``."""
        self._lost = True
        if self._failure is None:
            self._failure = error
        self._unsettled = deque()
        self._settled = self._issued  # every write is settled now: adopted or dropped
        self._head = self._state
        if self._signal is not None and self._state.status == "running":
            self._signal.trip(ParentCause())  # the host winds down: its turn cannot go on
        if self._job_signal is not None:
            self._job_signal.trip(ParentCause())
        self._stop_serving()
        self._wake_waiters()
        self._report_error("inbox_core.shell: a write failed; the agent stopped", error)
        self._maybe_release()
        self._deliver()

    def _commit(self, transition: Transition) -> None:
        self._state = transition.state
        self._sync_signal()
        if transition.notifications and self._subscriptions and not self._detached:
            snapshot = self._subscriptions
            self._queue.extend((note, snapshot) for note in transition.notifications)

    def _check_attached(self) -> None:
        if self._detached:
            raise AgentDetached("the agent was detached: it refuses commands and writes nothing")

    def _check_usable(self) -> None:
        self._check_attached()
        if self._lost:
            raise DriverStopped(
                "a write of this agent failed: it stopped (the log holds what is durable; "
                "a new LoopAgent over it resumes)"
            ) from self._failure

    def _sync_signal(self) -> None:
        """One AbortSignal per turn (and per job); trip it when the durable state marks the
        turn (or job) aborted (R23, R31)."""
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

    def _wake_waiters(self) -> None:
        waiters, self._waiters = self._waiters, []
        for waiter in waiters:
            wake(waiter)

    async def _wait(self) -> None:
        """Until the next wake (a settle, a failure, a detach, an idle)."""
        await wait_in(self._waiters)

    async def _until_settled(self, number: int) -> None:
        """Until write ``number`` (and every one before it) is durable and adopted; at once
        when it is. ``DriverStopped`` if a write failed (R37)."""
        while self._settled < number and not self._lost:
            await self._wait()
        if self._lost:
            self._check_usable()
