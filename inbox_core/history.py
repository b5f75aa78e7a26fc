"""Folds of a durable log for hosts and auditors: goal rounds, fates, the transcript.

``replay`` rebuilds the state; these functions answer other questions about
the same log. They assume a log that replays (check it with ``replay`` first:
they do not repeat its well-formedness checks).

- ``goal_rounds(events)``: goal rounds started, per goal id (R28).
- ``fates(events)``: the one current fate of every MessageId the log ever
  accepted (R32), so "no accepted message is ever lost" is checkable.
- ``transcript(events)``: the conversation as turns, steps, admitted
  messages and host records, what a host rebuilds its next model request
  from (R30).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import ClassVar, Literal, TypeAlias

import attrs

from inbox_core.events import (
    AbortedReason,
    DurableEvent,
    ErrorReason,
    HostRecord,
    InboxSpliced,
    InterruptedReason,
    MessageAdmitted,
    StepEnded,
    StepStarted,
    TurnEnded,
    TurnEndReason,
    TurnStarted,
    checked_events,
)
from inbox_core.replay import PendingLists
from inbox_core.values import GoalSource, MessageId, Target, UserMessage

# ----------------------------------------------------------------- goal rounds


def goal_rounds(events: Iterable[DurableEvent]) -> dict[str, int]:
    """Goal rounds started: admitted goal continuations (round >= 1) per goal id (R28).

    Only ``user/message`` counts; inbox events never change goal state, and a
    round-0 goal message (goal context) is never a round.
    """
    rounds: dict[str, int] = {}
    for event in checked_events(events, "goal_rounds"):
        if isinstance(event, MessageAdmitted):
            source = event.message.source
            if isinstance(source, GoalSource) and source.round >= 1:
                rounds[source.goal_id] = rounds.get(source.goal_id, 0) + 1
    return rounds


# ----------------------------------------------------------------------- fates


@attrs.frozen
class PendingFate:
    """Waiting in ``target`` (also after a move, a Resume restore, or a same-id replace)."""

    kind: ClassVar[Literal["pending"]] = "pending"
    target: Target


@attrs.frozen
class ClaimedFate:
    """Claimed for step ``step`` of turn ``turn``; the decision is still awaited."""

    kind: ClassVar[Literal["claimed"]] = "claimed"
    turn: int
    step: int


@attrs.frozen
class AdmittedFate:
    """Entered the model as a ``user/message`` of step ``step`` of turn ``turn``."""

    kind: ClassVar[Literal["admitted"]] = "admitted"
    turn: int
    step: int


@attrs.frozen
class CanceledFate:
    """Removed from the inbox by an edit, a cancel, a clear or a replace (outcome canceled)."""

    kind: ClassVar[Literal["canceled"]] = "canceled"


@attrs.frozen
class DroppedFate:
    """Left out by the pre-step decision of step ``step`` of turn ``turn`` (``Reject``, or an
    ``Enter`` without it)."""

    kind: ClassVar[Literal["dropped"]] = "dropped"
    turn: int
    step: int


@attrs.frozen
class ConsumedFate:
    """Claimed by turn ``turn``, which ended (``reason``: a pre-step failure, an abort, or a
    crash whose Resume could not restore it) before any decision answered the claim
    (R23, R27)."""

    kind: ClassVar[Literal["consumed"]] = "consumed"
    turn: int
    reason: TurnEndReason


Fate: TypeAlias = (
    PendingFate | ClaimedFate | AdmittedFate | CanceledFate | DroppedFate | ConsumedFate
)
FATE_KINDS: tuple[str, ...] = tuple(
    fate.kind
    for fate in (PendingFate, ClaimedFate, AdmittedFate, CanceledFate, DroppedFate, ConsumedFate)
)
_CANCELED = CanceledFate()


def fates(events: Iterable[DurableEvent]) -> dict[MessageId, Fate]:
    """The current fate of every MessageId the log accepted (R32), in first-seen order.

    Accepted means sent or spliced into a list, or added to a step by a
    decision. Each id has exactly one current fate, its latest. The newest
    message carrying an id owns it (R32 v3, D9, D27): an id accepted again while
    an earlier message with it is still claimed leaves that claim, whose
    outcome (admitted, dropped, consumed) then no longer sets the id's fate;
    and an id that is pending in the replayed lists is ``PendingFate``
    whatever it was before.
    """
    result: dict[MessageId, Fate] = {}
    lists = PendingLists()
    turn = 0
    steps = 0
    claimed: dict[MessageId, None] = {}  # the open boundary's undecided claim, in order
    superseded: set[MessageId] = set()  # claimed ids accepted again before the decision
    for event in checked_events(events, "fates"):
        if isinstance(event, InboxSpliced):
            removed = lists.splice(event.target, event.start, event.removed_count, event.inserted)
            if event.outcome == "canceled":
                for entry in removed:
                    result.update((m.id, _CANCELED) for m in entry.messages)
            elif event.outcome is None and removed:  # a claim (R9)
                fate = ClaimedFate(turn, steps + 1)
                for entry in removed:
                    for message in entry.messages:
                        result[message.id] = fate
                        claimed[message.id] = None
            pending = PendingFate(event.target)
            for entry in event.inserted:
                for message in entry.messages:
                    result[message.id] = pending
                    if message.id in claimed:  # the newer message owns the id (R32 v3)
                        del claimed[message.id]
                        superseded.add(message.id)
        elif isinstance(event, TurnStarted):
            turn, steps = event.turn, 0
        elif isinstance(event, StepStarted):
            steps = event.step
            dropped = DroppedFate(turn, steps)  # until a user/message says otherwise
            result.update((message_id, dropped) for message_id in claimed)
            claimed.clear()
        elif isinstance(event, MessageAdmitted):
            if event.message.id not in superseded:  # else the older claim's outcome
                result[event.message.id] = AdmittedFate(turn, steps)
        elif isinstance(event, StepEnded):
            superseded.clear()
        elif isinstance(event, TurnEnded):
            superseded.clear()
            if claimed:
                reason = event.reason
                undecided: Fate
                if isinstance(reason, ErrorReason | AbortedReason | InterruptedReason):
                    # ended before any decision; what Resume restores is pending again at
                    # its splice (R27)
                    undecided = ConsumedFate(turn, reason)
                else:  # Reject (blocked), or an empty Enter ending the turn
                    undecided = DroppedFate(turn, steps + 1)
                result.update((message_id, undecided) for message_id in claimed)
                claimed.clear()
    for target in ("next-turn", "next-step"):
        pending = PendingFate(target)
        for entry in lists.lists[target]:
            result.update((m.id, pending) for m in entry.messages)
    return result


# ------------------------------------------------------------------ transcript


@attrs.frozen
class StepTranscript:
    """One step: its admitted messages and the host records written while it was open."""

    step: int
    items: tuple[UserMessage | HostRecord, ...]

    @property
    def messages(self) -> tuple[UserMessage, ...]:
        return tuple(item for item in self.items if isinstance(item, UserMessage))


@attrs.frozen
class TurnTranscript:
    """One turn: its steps and the records written between them, in log order.

    ``reason`` is None while the turn is still open (the log ends inside it).
    """

    turn: int
    items: tuple[StepTranscript | HostRecord, ...]
    reason: TurnEndReason | None

    @property
    def steps(self) -> tuple[StepTranscript, ...]:
        return tuple(item for item in self.items if isinstance(item, StepTranscript))


@attrs.frozen
class RecordsTranscript:
    """Host records written while no turn was open (through ``EndMaintenance``)."""

    records: tuple[HostRecord, ...]


TranscriptBlock: TypeAlias = TurnTranscript | RecordsTranscript


class _TranscriptFold:
    __slots__ = ("blocks", "loose", "turn", "turn_items", "step", "step_items")

    def __init__(self) -> None:
        self.blocks: list[TranscriptBlock] = []
        self.loose: list[HostRecord] = []
        self.turn: int | None = None
        self.turn_items: list[StepTranscript | HostRecord] = []
        self.step: int | None = None
        self.step_items: list[UserMessage | HostRecord] = []

    def close_step(self) -> None:
        if self.step is not None:
            self.turn_items.append(StepTranscript(self.step, tuple(self.step_items)))
            self.step, self.step_items = None, []

    def close_turn(self, reason: TurnEndReason | None) -> None:
        self.close_step()
        if self.turn is not None:
            self.blocks.append(TurnTranscript(self.turn, tuple(self.turn_items), reason))
            self.turn, self.turn_items = None, []

    def flush_loose(self) -> None:
        if self.loose:
            self.blocks.append(RecordsTranscript(tuple(self.loose)))
            self.loose = []

    def apply(self, event: DurableEvent) -> None:
        if isinstance(event, HostRecord):
            if self.step is not None:
                self.step_items.append(event)
            elif self.turn is not None:
                self.turn_items.append(event)
            else:
                self.loose.append(event)
        elif isinstance(event, TurnStarted):
            self.flush_loose()
            self.turn = event.turn
        elif isinstance(event, StepStarted):
            self.step = event.step
        elif isinstance(event, MessageAdmitted):
            self.step_items.append(event.message)
        elif isinstance(event, StepEnded):
            self.close_step()
        elif isinstance(event, TurnEnded):
            self.close_turn(event.reason)

    def result(self) -> tuple[TranscriptBlock, ...]:
        self.close_turn(None)
        self.flush_loose()
        return tuple(self.blocks)


def transcript(events: Iterable[DurableEvent]) -> tuple[TranscriptBlock, ...]:
    """The conversation in a log: turns (steps, admitted messages, host records) and the
    records written while no turn was open, all in log order (R30).

    Inbox events and aborts are left out: they say what waited, not what the
    model saw.
    """
    fold = _TranscriptFold()
    for event in checked_events(events, "transcript"):
        fold.apply(event)
    return fold.result()
