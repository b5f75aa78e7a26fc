"""``replay``: the durable log folded back into the state (R10, R27).

The log is the only authority (R10). ``replay`` checks every event against the
projection built so far and raises ``ReplayError`` naming the first event that
does not fit; nothing is returned from a log that does not replay. An event
that exists is well formed (events validate their fields at construction), so
the checks are about order and placement, the rules of the log (I4):
contiguous turns, balanced steps, ``user/message`` only right after
``step/start``, splices within bounds with unique MessageIds, claims only at
boundaries, turns opened only for waking work (I2) and at most one next-turn
claim per turn (I7).

A first abort is durable (``turn/abort``, R23): at most one per turn, inside
it, before any further step, and the turn then ends ``aborted`` with that
cause. Host records (R30) may stand anywhere but between a ``step/start`` and
its ``user/message``s; they never change the projection.

A log may end anywhere (a crash, I12). When it leaves a turn open the state
is ``Orphaned``, when it leaves waking work idle ``Stranded``: ``Resume``
must come first.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable
from typing import Any

from inbox_core.errors import ReplayError, shown
from inbox_core.events import (
    AbortedReason,
    DurableEvent,
    HostRecord,
    InboxSpliced,
    MessageAdmitted,
    StepEnded,
    StepStarted,
    TurnAborted,
    TurnEnded,
    TurnStarted,
    iterate,
)
from inbox_core.inbox import EMPTY_INBOX, Inbox
from inbox_core.state import IDLE, NO_CLAIM, STRANDED, AgentState, Claim, Orphaned, Phase
from inbox_core.values import Cause, Entry

_NO_CLAIM = NO_CLAIM


class _Invalid(Exception):
    """Internal: why one event does not fit; ``replay`` adds the seq."""


class PendingLists:
    """Both pending lists as a mutable scratch, for the fold only.

    ``replay`` owns it alone and never returns it: the persistent ``Inbox`` is
    built once, from the final lists, by ``_Fold.state``. A bad event leaves
    the scratch half-edited, but ``replay`` then raises and drops it, so
    nothing is partially applied to any returned value (R10). Deques make the
    common edits (append at the end, claim from the head) O(1); other splices
    rotate, O(min(start, length - start)) in C.
    """

    __slots__ = ("lists", "waking", "ids")

    def __init__(self) -> None:
        self.lists: dict[str, deque[Entry]] = {"next-turn": deque(), "next-step": deque()}
        self.waking: dict[str, int] = {"next-turn": 0, "next-step": 0}
        self.ids: set[str] = set()

    @property
    def has_waking(self) -> bool:
        waking = self.waking
        return bool(waking["next-turn"] or waking["next-step"])

    def splice(
        self, target: str, start: int, count: int, inserted: tuple[Entry, ...]
    ) -> tuple[Entry, ...]:
        """Apply an in-bounds splice; return the removed entries. Ids stay unique (R4)."""
        entries = self.lists[target]
        if not inserted and not start:
            removed = tuple([entries.popleft() for _ in range(count)])
        elif not count and start == len(entries):
            removed = ()
            entries.extend(inserted)
        else:
            entries.rotate(-start)
            removed = tuple([entries.popleft() for _ in range(count)])
            entries.extendleft(reversed(inserted))
            entries.rotate(start)
        ids = self.ids
        waking = self.waking[target]
        for entry in removed:
            waking -= entry.wakeup
            for message in entry.messages:
                ids.discard(message.id)
        for entry in inserted:
            waking += entry.wakeup
            for message in entry.messages:
                if message.id in ids:
                    raise _Invalid(f"message id {shown(message.id)} would be pending twice")
                ids.add(message.id)
        self.waking[target] = waking
        return removed

    def inbox(self) -> Inbox:
        lists = self.lists
        if not self.ids:
            return EMPTY_INBOX
        return Inbox.of(tuple(lists["next-turn"]), tuple(lists["next-step"]))


class _Fold:
    """The projection under construction."""

    __slots__ = (
        "pending",
        "last_turn",
        "turn_open",
        "step",
        "step_open",
        "admitting",
        "claim",
        "abort",
    )

    def __init__(self) -> None:
        self.pending = PendingLists()
        self.last_turn = 0
        self.turn_open = False
        self.step = 0
        self.step_open = False
        self.admitting = False
        self.claim = _NO_CLAIM
        self.abort: Cause | None = None

    def apply(self, event: DurableEvent) -> None:
        handler = _HANDLERS.get(type(event))
        if handler is None:
            raise _Invalid(f"not a durable event: {shown(event)}")
        admitting, self.admitting = self.admitting, False
        handler(self, event, admitting)

    def splice_event(self, event: InboxSpliced, _admitting: bool) -> None:
        self.splice(event)

    def admitted(self, event: MessageAdmitted, admitting: bool) -> None:
        if not admitting:
            raise _Invalid("user/message must follow step/start or another user/message")
        self.admitting = True

    def turn_started(self, event: TurnStarted, _admitting: bool) -> None:
        turn = event.turn
        if self.turn_open:
            raise _Invalid(f"turn/start {turn} while turn {self.last_turn} is open")
        if turn != self.last_turn + 1:
            raise _Invalid(f"turn/start {turn} after turn {self.last_turn}")
        if not self.pending.has_waking:
            raise _Invalid(f"turn/start {turn} with no waking entry pending")
        self.last_turn = turn
        self.turn_open = True
        self.step = 0
        self.claim = _NO_CLAIM
        self.abort = None

    def step_started(self, event: StepStarted, _admitting: bool) -> None:
        self.check_turn(event.turn, "step/start")
        if self.abort is not None:
            raise _Invalid(f"step/start in turn {event.turn} after its turn/abort (I10)")
        step = event.step
        if self.step_open or step != self.step + 1:
            raise _Invalid(f"step/start {step} after step {self.step} of turn {event.turn}")
        self.step = step
        self.step_open = True
        self.admitting = True
        self.claim = _NO_CLAIM

    def step_ended(self, event: StepEnded, _admitting: bool) -> None:
        self.check_turn(event.turn, "step/end")
        if not self.step_open or event.step != self.step:
            raise _Invalid(f"step/end {shown(event.step)} does not close an open step")
        self.step_open = False

    def turn_ended(self, event: TurnEnded, _admitting: bool) -> None:
        self.check_turn(event.turn, "turn/end")
        if self.step_open:
            raise _Invalid(f"turn/end {event.turn} with step {self.step} still open")
        if self.abort is not None and event.reason != AbortedReason(self.abort):
            raise _Invalid(
                f"turn {event.turn} was aborted ({self.abort!r}) but ends {shown(event.reason)}"
            )
        self.turn_open = False
        self.step = 0
        self.claim = _NO_CLAIM
        self.abort = None

    def turn_aborted(self, event: TurnAborted, _admitting: bool) -> None:
        self.check_turn(event.turn, "turn/abort")
        if self.abort is not None:
            raise _Invalid(f"a second turn/abort for turn {event.turn} (I4)")
        self.abort = event.cause

    def host_record(self, _event: HostRecord, _admitting: bool) -> None:
        """Anywhere but inside an admission run (``apply`` already ended it, R30)."""

    def check_turn(self, turn: object, what: str) -> None:
        if not self.turn_open or turn != self.last_turn:
            raise _Invalid(
                f"{what} for turn {shown(turn)}, but the open turn is "
                f"{self.last_turn if self.turn_open else 'none'}"
            )

    def splice(self, event: InboxSpliced) -> None:
        target, start, removed, inserted = (
            event.target,
            event.start,
            event.removed_count,
            event.inserted,
        )
        size = len(self.pending.lists[target])
        if start + removed > size:
            raise _Invalid(f"splice {start}+{removed} exceeds {target} of length {size}")
        if not removed and not inserted:
            raise _Invalid("a splice that changes nothing is never recorded")
        if event.outcome is not None and not removed:
            raise _Invalid(f"outcome {shown(event.outcome)} on a splice that removes nothing")
        is_claim = removed and event.outcome is None
        if is_claim:
            self.check_claim(target, start, removed, size, bool(inserted))
        gone = self.pending.splice(target, start, removed, inserted)
        if is_claim:
            if target == "next-step":
                self.claim = Claim(self.claim.next_step + gone, self.claim.next_turn)
            else:
                self.claim = Claim(self.claim.next_step, gone)

    def check_claim(self, target: str, start: int, removed: int, size: int, inserts: bool) -> None:
        """A removal without outcome is a claim: at a boundary, from the head (R9)."""
        if inserts or start != 0:
            raise _Invalid("a removal without outcome must be a pure deletion from the head")
        if not self.turn_open or self.step_open or self.abort is not None:
            raise _Invalid("a claim outside a step boundary of a live turn")
        if target == "next-step" and removed != size:
            raise _Invalid("a next-step claim takes the whole list")
        if target == "next-turn" and (removed != 1 or self.step != 0 or self.claim.next_turn):
            raise _Invalid("a turn claims one next-turn entry, at its first boundary (I7)")

    def state(self) -> AgentState:
        phase: Phase
        if self.turn_open:
            phase = Orphaned(
                turn=self.last_turn, step=self.step, step_open=self.step_open, claim=self.claim
            )
        elif self.pending.has_waking:
            phase = STRANDED
        else:
            phase = IDLE
        return AgentState(
            phase=phase,
            inbox=self.pending.inbox(),
            last_turn=self.last_turn,
            abort_cause=self.abort,
        )


_HANDLERS: dict[type, Callable[[_Fold, Any, bool], None]] = {
    InboxSpliced: _Fold.splice_event,
    MessageAdmitted: _Fold.admitted,
    TurnStarted: _Fold.turn_started,
    StepStarted: _Fold.step_started,
    StepEnded: _Fold.step_ended,
    TurnAborted: _Fold.turn_aborted,
    TurnEnded: _Fold.turn_ended,
    HostRecord: _Fold.host_record,
}


def replay(events: Iterable[DurableEvent]) -> AgentState:
    """Fold durable events from the initial state (R10, R27).

    Raises ``ReplayError`` whose ``seq`` is the index of the first bad event
    (``InvalidInput`` when ``events`` is not iterable at all).
    """
    fold = _Fold()
    for seq, event in enumerate(iterate(events, "replay")):
        try:
            fold.apply(event)
        except _Invalid as error:
            raise ReplayError(seq, str(error)) from None
    return fold.state()
