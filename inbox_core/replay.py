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

``LogFold`` is the fold itself, one event at a time. What it keeps after
event ``seq`` is a ``Checkpoint`` (R41): ``LogFold.resume(checkpoint)`` goes
on from there exactly as the fold of the whole log would, so opening an agent
reads a checkpoint and only the events after it (``replay_from``).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Final, get_args

import attrs
import immutables

from inbox_core import limits
from inbox_core.errors import InvalidInput, ReplayError, shown
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
from inbox_core.validators import instance_of, integer, strict_bool, tuple_of
from inbox_core.values import Cause, Entry, GoalSource

_NO_CLAIM = NO_CLAIM


_COUNT = integer(0)
_BOOL = strict_bool
_entry_tuple = tuple_of(Entry, what="entries")


def _entries(value: object) -> tuple[Entry, ...]:
    return _entry_tuple(value)  # a named converter (what mypy's attrs plugin reads)


_CAUSE = attrs.validators.optional(instance_of(*get_args(Cause), what="a cause"))
_HEX: Final = frozenset("0123456789abcdef")


def _rounds(value: object) -> immutables.Map[str, int]:
    """Goal rounds as kept: goal id -> rounds started (at least 1), an immutable map."""
    if not isinstance(value, Mapping):
        raise InvalidInput(f"goal rounds must be a mapping, got {shown(value)}")
    for goal, count in value.items():
        if not isinstance(goal, str) or not goal:
            raise InvalidInput(f"a goal id must be a non-empty str, got {shown(goal)}")
        limits.identifier(goal, "goal id")
        if type(count) is not int or count < 1:
            raise InvalidInput(f"goal {shown(goal)} has rounds {shown(count)}; at least 1")
    return value if isinstance(value, immutables.Map) else immutables.Map(value)


def _digest(_inst: object, attribute: attrs.Attribute[str], value: object) -> None:
    if not isinstance(value, str) or len(value) != 64 or not _HEX.issuperset(value):
        raise InvalidInput(f"{attribute.name} must be 64 lowercase hex digits, got {shown(value)}")


@attrs.frozen(kw_only=True)
class OpenTurn:
    """Where the turn a log leaves open stands (turn ``Checkpoint.last_turn``)."""

    step: int = attrs.field(validator=_COUNT)
    """The last step started in it (0 before the first)."""
    step_open: bool = attrs.field(validator=_BOOL)
    admitting: bool = attrs.field(validator=_BOOL)
    """Right after ``step/start`` or a ``user/message``: another ``user/message`` may follow."""
    claim: Claim = attrs.field(validator=instance_of(Claim, what="a claim"))
    """What its last boundary claimed and no decision answered yet (R23, R27)."""
    abort: Cause | None = attrs.field(validator=_CAUSE)
    """Its ``turn/abort``'s cause."""

    def __attrs_post_init__(self) -> None:
        if self.admitting and not self.step_open:
            raise InvalidInput("an open turn admits messages only inside an open step")
        if self.step_open and not self.step:
            raise InvalidInput("an open step is numbered from 1")
        if self.claim != NO_CLAIM and self.step_open:
            raise InvalidInput("a claim stands only at a step boundary")
        if len(self.claim.next_turn) > 1 or (self.claim.next_turn and self.step):
            raise InvalidInput("a turn claims one next-turn entry, at its first boundary")


@attrs.frozen(kw_only=True)
class Checkpoint:
    """All that replay keeps after the first ``seq`` events of a log (R41).

    ``digest`` names the last of those events (``inbox_core.checkpoint.event_digest``), so
    a checkpoint is only ever used on the log it was taken from. Built from a fold
    (``LogFold.checkpoint``) or decoded (``inbox_core.checkpoint``); the constructor checks
    what a fold could have kept: ids pending once, a turn numbered like the log.
    """

    seq: int = attrs.field(validator=_COUNT)
    digest: str = attrs.field(validator=_digest)
    last_turn: int = attrs.field(validator=_COUNT)
    next_turn: tuple[Entry, ...] = attrs.field(converter=_entries)
    next_step: tuple[Entry, ...] = attrs.field(converter=_entries)
    turn: OpenTurn | None = attrs.field(
        validator=attrs.validators.optional(instance_of(OpenTurn, what="an open turn"))
    )
    goal_rounds: immutables.Map[str, int] = attrs.field(converter=_rounds, factory=immutables.Map)
    """Goal rounds started so far (R28: ``history.goal_rounds`` of the first ``seq``
    events), so that a reader's projection needs only the events after the checkpoint."""

    def __attrs_post_init__(self) -> None:
        if not self.seq:
            raise InvalidInput("a checkpoint follows at least one event")
        if self.turn is not None and not self.last_turn:
            raise InvalidInput("an open turn is numbered from 1")
        claim = self.turn.claim if self.turn is not None else NO_CLAIM
        # ids are pending once (R4); a claimed id may be pending again, and the claim's own
        # entries were pending together when it was made
        _unique((*self.next_turn, *self.next_step), "pending")
        _unique((*claim.next_step, *claim.next_turn), "claimed")


def _unique(entries: tuple[Entry, ...], what: str) -> None:
    seen: set[str] = set()
    for entry in entries:
        for message in entry.messages:
            if message.id in seen:
                raise InvalidInput(f"message id {shown(message.id)} {what} twice")
            seen.add(message.id)


class _Invalid(Exception):
    """Internal: why one event does not fit; ``replay`` adds the seq."""


class PendingLists:
    """Both pending lists as a mutable scratch, for the fold only.

    ``replay`` owns it alone and never returns it: the persistent ``Inbox`` is
    built once, from the final lists, by ``LogFold.state``. A bad event leaves
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


class LogFold:
    """``replay`` one event at a time: ``feed(events)``, then ``state()`` or ``checkpoint``.

    A fold that raised ``ReplayError`` is half-edited: drop it (``replay`` does).
    """

    __slots__ = (
        "seq",
        "last_event",
        "pending",
        "last_turn",
        "turn_open",
        "step",
        "step_open",
        "admitting",
        "claim",
        "abort",
        "rounds",
    )

    def __init__(self) -> None:
        self.seq = 0  # events folded so far: the next one's seq
        self.last_event: DurableEvent | None = None
        self.pending = PendingLists()
        self.last_turn = 0
        self.turn_open = False
        self.step = 0
        self.step_open = False
        self.admitting = False
        self.claim = _NO_CLAIM
        self.abort: Cause | None = None
        self.rounds: dict[str, int] = {}  # goal rounds started (R28), kept for checkpoints

    def feed(self, events: Iterable[DurableEvent]) -> LogFold:
        """Fold ``events``, the ones that follow what was folded; ``ReplayError`` names the
        seq of the first that does not fit."""
        seq = self.seq
        event = None
        handlers = _HANDLERS
        try:
            for event in events:  # one loop, no call per event (opening's hot path)
                handler = handlers.get(type(event))
                if handler is None:
                    raise _Invalid(f"not a durable event: {shown(event)}")
                admitting, self.admitting = self.admitting, False
                handler(self, event, admitting)
                seq += 1
        except _Invalid as error:
            raise ReplayError(seq, str(error)) from None
        if seq != self.seq:
            self.seq, self.last_event = seq, event
        return self

    def splice_event(self, event: InboxSpliced, _admitting: bool) -> None:
        self.splice(event)

    def admitted(self, event: MessageAdmitted, admitting: bool) -> None:
        if not admitting:
            raise _Invalid("user/message must follow step/start or another user/message")
        self.admitting = True
        source = event.message.source
        if isinstance(source, GoalSource) and source.round >= 1:  # as history.goal_rounds counts
            self.rounds[source.goal_id] = self.rounds.get(source.goal_id, 0) + 1

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

    def checkpoint(self, digest: str) -> Checkpoint:
        """What this fold keeps, as a checkpoint after its ``seq`` events; ``digest`` names
        the last of them (``inbox_core.checkpoint.take`` computes it)."""
        lists = self.pending.lists
        turn = None
        if self.turn_open:
            turn = OpenTurn(
                step=self.step,
                step_open=self.step_open,
                admitting=self.admitting,
                claim=self.claim,
                abort=self.abort,
            )
        return Checkpoint(
            seq=self.seq,
            digest=digest,
            last_turn=self.last_turn,
            next_turn=tuple(lists["next-turn"]),
            next_step=tuple(lists["next-step"]),
            turn=turn,
            goal_rounds=immutables.Map(self.rounds),
        )

    @classmethod
    def resume(cls, checkpoint: Checkpoint) -> LogFold:
        """A fold that goes on after ``checkpoint`` as the fold of its whole log would."""
        fold = cls()
        fold.seq = checkpoint.seq
        fold.last_turn = checkpoint.last_turn
        fold.rounds = dict(checkpoint.goal_rounds)
        for target, entries in (
            ("next-turn", checkpoint.next_turn),
            ("next-step", checkpoint.next_step),
        ):
            if entries:
                fold.pending.splice(target, 0, 0, entries)
        turn = checkpoint.turn
        if turn is not None:
            fold.turn_open = True
            fold.step = turn.step
            fold.step_open = turn.step_open
            fold.admitting = turn.admitting
            fold.claim = turn.claim
            fold.abort = turn.abort
        return fold

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


_HANDLERS: dict[type, Callable[[LogFold, Any, bool], None]] = {
    InboxSpliced: LogFold.splice_event,
    MessageAdmitted: LogFold.admitted,
    TurnStarted: LogFold.turn_started,
    StepStarted: LogFold.step_started,
    StepEnded: LogFold.step_ended,
    TurnAborted: LogFold.turn_aborted,
    TurnEnded: LogFold.turn_ended,
    HostRecord: LogFold.host_record,
}


def replay(events: Iterable[DurableEvent]) -> AgentState:
    """Fold durable events from the initial state (R10, R27).

    Raises ``ReplayError`` whose ``seq`` is the index of the first bad event
    (``InvalidInput`` when ``events`` is not iterable at all).
    """
    return LogFold().feed(iterate(events, "replay")).state()


def replay_from(checkpoint: Checkpoint, events: Iterable[DurableEvent]) -> AgentState:
    """``replay`` of a whole log from its ``checkpoint`` and the events after it (R41).

    ``ReplayError`` names the seq in the whole log; the caller has checked that the
    checkpoint belongs to the log (``inbox_core.checkpoint.matches``).
    """
    if not isinstance(checkpoint, Checkpoint):
        raise InvalidInput(f"not a checkpoint: {shown(checkpoint)}")
    return LogFold.resume(checkpoint).feed(iterate(events, "replay")).state()
