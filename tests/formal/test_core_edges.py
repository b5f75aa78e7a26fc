"""Defensive branches of the pure core that no well-typed run reaches (R10, R26, formats).

The reducer, replay and codec check what their static types already promise,
because ports and decoders hand them data from outside. Each test feeds one
such ill-typed value and asserts the typed rejection.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from inbox_core import (
    AwaitPreStep,
    DurableEvent,
    Entry,
    InboxSpliced,
    InvalidInput,
    JsonObject,
    MessageAdmitted,
    PluginSource,
    ReplayError,
    Resume,
    SnapshotSection,
    StepStarted,
    TurnStarted,
    UserMessage,
    event_to_json,
    notification_to_json,
    reduce,
    replay,
)
from inbox_core.json_values import freeze_json


def m(message_id: str) -> UserMessage:
    return UserMessage(message_id, message_id)


WOKEN: list[DurableEvent] = [
    InboxSpliced("next-turn", 0, 0, (Entry(m("a"), (), True),)),
    TurnStarted(1),
    InboxSpliced("next-turn", 0, 1, ()),
    StepStarted(1, 1),
]


def test_encoders_reject_what_is_not_an_event() -> None:
    """R26, issue 17 (G9): a typed error, not TypeError."""
    with pytest.raises(InvalidInput):
        event_to_json("turn/start")  # type: ignore[arg-type]
    with pytest.raises(InvalidInput):
        notification_to_json(TurnStarted(1))  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "build",
    [
        lambda: MessageAdmitted("not a message"),  # type: ignore[arg-type]
        lambda: InboxSpliced("next-step", 0, 0, ("entry",)),  # type: ignore[arg-type]
        lambda: InboxSpliced("next-step", 0, True, ()),
        lambda: TurnStarted("2"),  # type: ignore[arg-type]
        lambda: TurnStarted(True),
        lambda: StepStarted(1, True),
    ],
)
def test_ill_typed_events_are_refused_at_construction(build: Callable[[], object]) -> None:
    """R10, I4: an ill-typed event never exists, so no log can hold one (InvalidInput)."""
    with pytest.raises(InvalidInput):
        build()


def test_replay_keeps_a_claim_of_both_lists_whatever_the_order() -> None:
    a, s = Entry(m("a"), (), True), Entry(m("s"), (), True)
    log: list[DurableEvent] = [
        InboxSpliced("next-turn", 0, 0, (a,)),
        InboxSpliced("next-step", 0, 0, (s,)),
        TurnStarted(1),
        InboxSpliced("next-turn", 0, 1, ()),
        InboxSpliced("next-step", 0, 1, ()),
    ]
    resumed = reduce(replay(log), Resume())  # R27: both restored, next-step first (D20)
    restores = [e for e in resumed.durable if isinstance(e, InboxSpliced) and e.inserted]
    assert [(e.target, e.inserted) for e in restores[:2]] == [
        ("next-step", (s,)),
        ("next-turn", (a,)),
    ]
    assert isinstance(resumed.state.awaiting, AwaitPreStep)
    assert resumed.state.awaiting.batch == (m("s"), m("a"))


def test_replay_error_keeps_seq_and_reason() -> None:
    error = ReplayError(3, "why")
    assert (error.seq, error.reason, str(error)) == (3, "why", "event 3: why")


def test_snapshot_sections() -> None:
    section = SnapshotSection("a", "b")
    source = PluginSource("p", "snapshot", sections=[section, {"name": "c", "text": "d"}])
    assert source.sections == (section, SnapshotSection("c", "d"))
    for bad in (5, "ab", {"name": "a", "text": "b"}, [("a", "b")]):
        with pytest.raises(InvalidInput):
            PluginSource("p", "snapshot", sections=bad)


def test_replay_rejects_what_is_not_an_event() -> None:
    with pytest.raises(ReplayError) as caught:
        replay([*WOKEN, "step/end"])  # type: ignore[list-item]
    assert caught.value.seq == 4


def test_json_object_is_a_frozen_mapping() -> None:
    data = JsonObject({"a": [1, {"b": None}]})
    assert len(data) == 1
    assert list(data) == ["a"]
    assert data == {"a": (1, JsonObject({"b": None}))}
    assert data != 3
    assert data.__eq__(3) is NotImplemented
    assert hash(data) == hash(data) == hash(JsonObject({"a": [1, {"b": None}]}))
    assert freeze_json(data) is data
