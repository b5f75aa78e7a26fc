"""Events and notifications validate their fields at construction (R10, I4, issue 11).

An event that exists is well formed, so ``replay`` and the log checker check
order, placement and the two splice rules that span fields (tests/core/
test_resume_replay.py). Each case below is one malformed construction; it
raises ``InvalidInput`` (an ``InboxCoreError``).
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from inbox_core import (
    AbortedReason,
    AgentError,
    CancelRequested,
    CompletedReason,
    ErrorReason,
    InboxClaimed,
    InboxCoreError,
    InboxDiscarded,
    InboxInserted,
    InboxMoved,
    InboxSpliced,
    InvalidInput,
    MessageAdmitted,
    StatusChanged,
    StepEnded,
    StepStarted,
    TurnAborted,
    TurnEnded,
    TurnStarted,
    UserCause,
)
from inbox_core.values import Entry
from tests.core.helpers import msg


def quiet(message_id: str) -> Entry:
    return Entry(msg(message_id), (), False)


MALFORMED: dict[str, Callable[[], object]] = {
    # durable events (I4 shapes)
    "turn/start 0": lambda: TurnStarted(0),
    "turn/start bool": lambda: TurnStarted(True),
    "turn/start str": lambda: TurnStarted("1"),  # type: ignore[arg-type]
    "step/start step 0": lambda: StepStarted(1, 0),
    "step/end turn -1": lambda: StepEnded(-1, 1),
    "user/message of a str": lambda: MessageAdmitted("hello"),  # type: ignore[arg-type]
    "turn/end bad reason": lambda: TurnEnded(1, "completed"),  # type: ignore[arg-type]
    "turn/end aborted by a str": lambda: TurnEnded(1, AbortedReason("user")),  # type: ignore[arg-type]
    "turn/end error without code": lambda: TurnEnded(1, ErrorReason("boom", None)),  # type: ignore[arg-type]
    "turn/abort without cause": lambda: TurnAborted(1, "user"),  # type: ignore[arg-type]
    "turn/abort turn 0": lambda: TurnAborted(0, UserCause()),
    "splice negative start": lambda: InboxSpliced("next-step", -1, 0, (quiet("a"),)),
    "splice bool start": lambda: InboxSpliced("next-turn", True, 0, (quiet("a"),)),
    "splice negative removal": lambda: InboxSpliced("next-turn", 0, -1, (quiet("a"),)),
    "splice unknown target": lambda: InboxSpliced("later", 0, 0, (quiet("a"),)),  # type: ignore[arg-type]
    "splice non-entry": lambda: InboxSpliced("next-turn", 0, 0, (msg("a"),)),  # type: ignore[arg-type]
    "splice unknown outcome": lambda: InboxSpliced("next-turn", 0, 1, (), "dropped"),  # type: ignore[arg-type]
    # live notifications
    "inserted of a str": lambda: InboxInserted("a"),  # type: ignore[arg-type]
    "discarded of None": lambda: InboxDiscarded(None),  # type: ignore[arg-type]
    "claimed turn 0": lambda: InboxClaimed(msg("a"), 0),
    "moved to nowhere": lambda: InboxMoved(msg("a"), "nowhere"),  # type: ignore[arg-type]
    "moved to a list": lambda: InboxMoved(msg("a"), ["next-step"]),  # type: ignore[arg-type]
    "status unknown": lambda: StatusChanged("busy"),  # type: ignore[arg-type]
    "cancel-requested without cause": lambda: CancelRequested(None),  # type: ignore[arg-type]
    "agent/error step 0": lambda: AgentError(1, 0, "boom", "E"),
    "agent/error code not str": lambda: AgentError(1, None, "boom", 3),  # type: ignore[arg-type]
}


@pytest.mark.parametrize("name", sorted(MALFORMED))
def test_r10_i4_malformed_events_cannot_be_built(name: str) -> None:
    """R10, I4: an event's shape is checked once, at construction (InvalidInput)."""
    with pytest.raises(InvalidInput) as caught:
        MALFORMED[name]()
    assert isinstance(caught.value, InboxCoreError)


def test_r10_well_formed_events_build_and_list_input_becomes_a_tuple() -> None:
    """R5, R10: the checks accept what the reducer writes; inserted is kept as a tuple."""
    spliced = InboxSpliced("next-turn", 0, 0, [quiet("a")])  # type: ignore[arg-type]
    assert spliced.inserted == (quiet("a"),)
    assert InboxSpliced("next-turn", 0, 1, (), "moved").outcome == "moved"
    assert AgentError(1, None, "boom", "E").step is None
    assert TurnEnded(1, CompletedReason()).reason == CompletedReason()
