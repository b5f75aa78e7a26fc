"""What both checker test files build their cases from: messages, entries, splices,
a well-formed log, ``violated`` and ``run`` (commands through ``reduce``, recorded)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import pytest

from inbox_core import (
    AgentState,
    Command,
    CompletedReason,
    DurableEvent,
    Entry,
    InboxSpliced,
    MessageAdmitted,
    Notification,
    StepEnded,
    StepStarted,
    TurnEnded,
    TurnStarted,
    UserMessage,
    reduce,
    steer,
)
from inbox_core.testing import InvariantViolation, Record


def m(message_id: str) -> UserMessage:
    return UserMessage(message_id, message_id)


def entry(message_id: str, *, wakeup: bool = True, contexts: Sequence[str] = ()) -> Entry:
    return Entry(m(message_id), tuple(m(c) for c in contexts), wakeup)


def insert(target: str, start: int, *entries: Entry) -> InboxSpliced:
    return InboxSpliced(target, start, 0, entries)  # type: ignore[arg-type]


def claim(target: str, count: int) -> InboxSpliced:
    return InboxSpliced(target, 0, count, ())  # type: ignore[arg-type]


def violated(invariant: str, check: Callable[[], object]) -> InvariantViolation:
    """``check`` raises the violation of ``invariant``, named at the start of its text."""
    with pytest.raises(InvariantViolation) as caught:
        check()
    assert caught.value.invariant == invariant, str(caught.value)
    assert str(caught.value).startswith(f"{invariant}: ")
    return caught.value


def run(
    *commands: Command,
) -> tuple[AgentState, list[DurableEvent], list[Notification], list[Record]]:
    """Run ``commands`` through ``reduce`` from the initial state; every one must be accepted."""
    state = AgentState.initial()
    durable: list[DurableEvent] = []
    notes: list[Notification] = []
    records: list[Record] = []
    for command in commands:
        transition = reduce(state, command)
        records.append(
            Record(command, state, transition.state, transition.durable, transition.notifications)
        )
        state = transition.state
        durable.extend(transition.durable)
        notes.extend(transition.notifications)
    return state, durable, notes, records


# A well-formed log: a followup opens turn 1, one step admits it, the turn completes.
GOOD: list[DurableEvent] = [
    insert("next-turn", 0, entry("a")),
    TurnStarted(1),
    claim("next-turn", 1),
    StepStarted(1, 1),
    MessageAdmitted(m("a")),
    StepEnded(1, 1),
    TurnEnded(1, CompletedReason()),
]
STEER = steer(m("s"), (m("c"),))
