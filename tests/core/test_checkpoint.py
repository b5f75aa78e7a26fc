"""Checkpoints (R41): the fold's state after event seq, its JSON form, and opening from it.

The stateful machine checks the main property on every run (``R41_checkpoints_reopen_exactly``:
a crash's prefix opened from checkpoints at four positions equals its replay). These are
the unit cases: every position of a whole session, the JSON form's refusals, and the
digest that keeps a checkpoint to the log it was taken from.
"""

from __future__ import annotations

import json
from typing import Any

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from inbox_core import (
    AgentState,
    Completed,
    DecodeError,
    Enter,
    Entry,
    InvalidInput,
    ReplayError,
    UserCause,
    create_user_message,
    reduce,
    replay,
)
from inbox_core import commands as intents
from inbox_core.checkpoint import (
    CHECKPOINT_VERSION,
    checkpoint_from_json,
    checkpoint_to_json,
    event_digest,
    matches,
    take,
)
from inbox_core.commands import Cancel, Command
from inbox_core.events import DurableEvent, HostRecord, TurnStarted
from inbox_core.replay import Checkpoint, LogFold, OpenTurn, replay_from
from inbox_core.state import NO_CLAIM, Claim


def _session() -> list[DurableEvent]:
    """A log with every kind of position: pending lists, an open step admitting, a claim
    awaiting its decision, a turn/abort, host records, a turn left open at the end."""
    state = AgentState.initial()
    events: list[DurableEvent] = []

    def run(command: Command) -> None:
        nonlocal state
        transition = reduce(state, command)
        state = transition.state
        events.extend(transition.durable)

    run(intents.inject(create_user_message("context")))
    run(intents.followup(create_user_message("one"), ()))
    run(intents.queue(create_user_message("later"), ()))
    awaiting = state.awaiting
    run(awaiting.answer(Enter(awaiting.batch), (HostRecord("host/request", {"n": 1}),)))
    run(intents.steer(create_user_message("steer"), ()))
    run(state.awaiting.answer(Completed(), (HostRecord("host/reply", "ok"),)))
    awaiting = state.awaiting
    run(awaiting.answer(Enter(awaiting.batch)))
    run(state.awaiting.answer(Completed()))
    run(state.awaiting.answer())
    run(intents.followup(create_user_message("two"), ()))
    run(Cancel(UserCause(), keep_inbox=True))  # turn/abort while the claim stands
    run(state.awaiting.answer(Enter(state.awaiting.batch)))
    run(intents.followup(create_user_message("three"), ()))  # left open: pre-step
    return events


SESSION = _session()


def test_R41_every_position_of_a_session_reopens_exactly() -> None:
    """R41: at every seq, the checkpoint (through JSON) plus the events after it gives the
    state of the whole log's replay."""
    whole = replay(SESSION)
    for at in range(1, len(SESSION) + 1):
        taken = take(LogFold().feed(SESSION[:at]))
        document = json.loads(json.dumps(checkpoint_to_json(taken, "a")))
        stored = checkpoint_from_json(document, "a")
        assert stored == taken
        assert stored.seq == at
        assert matches(stored, SESSION[at - 1])
        assert replay_from(stored, SESSION[at:]) == whole


def test_R41_the_session_passes_through_every_kind_of_position() -> None:
    """The session above is worth its name: open steps admitting, claims, aborts, idle."""
    turns = [take(LogFold().feed(SESSION[:at])).turn for at in range(1, len(SESSION) + 1)]
    assert None in turns
    assert any(t is not None and t.admitting for t in turns)
    assert any(t is not None and t.claim != NO_CLAIM for t in turns)
    assert any(t is not None and t.abort is not None and t.claim != NO_CLAIM for t in turns)
    assert any(t is not None and t.step_open and not t.admitting for t in turns)


def test_R41_replay_from_names_the_seq_in_the_whole_log() -> None:
    """A bad event after the checkpoint raises ReplayError with its seq in the whole log."""
    checkpoint = take(LogFold().feed(SESSION[:5]))
    with pytest.raises(ReplayError) as raised:
        replay_from(checkpoint, [TurnStarted(99), *SESSION[5:]])
    assert raised.value.seq == 5


def test_R41_an_admitting_checkpoint_keeps_admitting() -> None:
    """Right after step/start a user/message may follow; the checkpoint must say so (a fold
    that forgot it would refuse the next event of the log)."""
    at = next(i for i, e in enumerate(SESSION) if e.type == "step/start") + 1
    checkpoint = take(LogFold().feed(SESSION[:at]))
    assert checkpoint.turn is not None
    assert checkpoint.turn.admitting
    assert SESSION[at].type == "user/message"
    forgetful = Checkpoint(
        seq=checkpoint.seq,
        digest=checkpoint.digest,
        last_turn=checkpoint.last_turn,
        next_turn=checkpoint.next_turn,
        next_step=checkpoint.next_step,
        turn=OpenTurn(
            step=checkpoint.turn.step,
            step_open=True,
            admitting=False,
            claim=NO_CLAIM,
            abort=None,
        ),
    )
    with pytest.raises(ReplayError):
        replay_from(forgetful, SESSION[at:])


def _document(at: int = 6) -> dict[str, Any]:
    return json.loads(json.dumps(checkpoint_to_json(take(LogFold().feed(SESSION[:at])), "a")))


@pytest.mark.parametrize(
    ("change", "error"),
    [
        (lambda d: d.update(version=CHECKPOINT_VERSION + 1), DecodeError),
        (lambda d: d.update(version=True), DecodeError),
        (lambda d: d.update(version="1"), DecodeError),
        (lambda d: d.pop("version"), DecodeError),
        (lambda d: d.update(agent="b"), DecodeError),
        (lambda d: d.pop("agent"), DecodeError),
        (lambda d: d.update(seq=0), DecodeError),
        (lambda d: d.update(seq=-1), DecodeError),
        (lambda d: d.update(seq="6"), DecodeError),
        (lambda d: d.update(digest="x"), DecodeError),
        (lambda d: d.update(extra=1), DecodeError),
        (lambda d: d.pop("nextTurn"), DecodeError),
        (lambda d: d.update(nextStep=[{"wakeup": True}]), DecodeError),
        (lambda d: d.update(turn={"step": 1}), DecodeError),
        (lambda d: d.update(nextTurn=d["nextTurn"] * 2), DecodeError),  # an id pending twice
    ],
)
def test_R41_a_checkpoint_that_does_not_decode_is_refused(change: Any, error: type) -> None:
    """R41: a document of another shape, version or agent is a typed error (the store then
    ignores the checkpoint and replays the whole log)."""
    document = _document()
    assert document["nextTurn"], "the case needs a pending next-turn entry"
    change(document)
    with pytest.raises(error):
        checkpoint_from_json(document, "a")


@pytest.mark.parametrize("document", [None, [], "{}", 1, {"version": 1}])
def test_R41_not_an_object_is_refused(document: object) -> None:
    with pytest.raises(DecodeError):
        checkpoint_from_json(document, "a")


def test_R41_the_digest_names_the_event_it_follows() -> None:
    """A checkpoint does not match any other event: a log rewritten under the same id, or a
    checkpoint written for another position, is caught before it is trusted."""
    checkpoint = take(LogFold().feed(SESSION[:6]))
    assert checkpoint.digest == event_digest(SESSION[5])
    assert [matches(checkpoint, e) for e in SESSION].count(True) == 1


@pytest.mark.parametrize(
    "build",
    [
        lambda t: OpenTurn(step=0, step_open=False, admitting=True, claim=NO_CLAIM, abort=None),
        lambda t: OpenTurn(step=0, step_open=True, admitting=False, claim=NO_CLAIM, abort=None),
        lambda t: OpenTurn(step=1, step_open=True, admitting=False, claim=Claim((t,)), abort=None),
        lambda t: OpenTurn(
            step=1, step_open=False, admitting=False, claim=Claim((), (t,)), abort=None
        ),
        lambda t: OpenTurn(step=True, step_open=False, admitting=False, claim=NO_CLAIM, abort=None),
    ],
)
def test_R41_an_open_turn_no_fold_could_keep_is_refused(build: Any) -> None:
    entry = Entry(create_user_message("x"), (), True)
    with pytest.raises(InvalidInput):
        build(entry)


@settings(max_examples=50, deadline=None)
@given(st.integers(1, len(SESSION)), st.integers(0, len(SESSION)))
def test_R41_a_crash_after_a_checkpoint_reopens_exactly(at: int, cut: int) -> None:
    """A checkpoint written at ``at``, then a crash that keeps ``cut >= at`` events: opening
    from it gives the prefix's replay (the store never writes one for events not durable)."""
    cut = max(cut, at)
    checkpoint = checkpoint_from_json(
        checkpoint_to_json(take(LogFold().feed(SESSION[:at])), "a"), "a"
    )
    assert replay_from(checkpoint, SESSION[at:cut]) == replay(SESSION[:cut])


def test_R41_typed_errors_for_what_is_not_a_checkpoint() -> None:
    """R26: the functions refuse what they cannot work on with InvalidInput."""
    with pytest.raises(InvalidInput):
        take(LogFold())  # nothing folded: no event to follow
    with pytest.raises(InvalidInput):
        checkpoint_to_json("not a checkpoint", "a")  # type: ignore[arg-type]
    with pytest.raises(InvalidInput):
        replay_from(None, [])  # type: ignore[arg-type]
    taken = take(LogFold().feed(SESSION[:3]))
    with pytest.raises(InvalidInput):
        Checkpoint(
            seq=3, digest=taken.digest, last_turn=0, next_turn=(), next_step=(), turn=taken.turn
        )


@pytest.mark.parametrize(
    "rounds",
    [["g"], {"": 1}, {5: 1}, {"g": 0}, {"g": True}, {"g": 1.0}, {"x" * 10_000: 1}],
    ids=["a list", "an empty id", "an int id", "no round", "a bool", "a float", "a huge id"],
)
def test_R41_R28_goal_rounds_no_fold_could_keep_are_refused(rounds: object) -> None:
    """R26: a checkpoint's goal rounds map goal ids to rounds started (at least 1)."""
    taken = take(LogFold().feed(SESSION[:3]))
    with pytest.raises(InvalidInput):
        attrs.evolve(taken, goal_rounds=rounds)


def test_R41_R28_a_checkpoint_keeps_the_goal_rounds_of_its_prefix() -> None:
    """R41, R28: the goal rounds of the first ``seq`` events travel in the checkpoint (the
    front door's projection folds only the events after it): at every position, through
    JSON, and resumed folds count on."""
    from inbox_core import GoalSource
    from inbox_core.history import goal_rounds
    from inbox_core.state import AwaitPreStep, AwaitStep

    state = AgentState.initial()
    events: list[DurableEvent] = []
    for n in range(3):
        for source in (GoalSource("g", n + 1), GoalSource("h", 0), GoalSource("k", 1)):
            transition = reduce(
                state, intents.followup(create_user_message("x", source=source), ())
            )
            state, events = transition.state, [*events, *transition.durable]
            while (awaiting := state.awaiting) is not None:
                if isinstance(awaiting, AwaitPreStep):
                    report: Command = awaiting.answer(Enter(awaiting.batch))
                elif isinstance(awaiting, AwaitStep):
                    report = awaiting.answer(Completed())
                else:
                    report = awaiting.answer()
                transition = reduce(state, report)
                state, events = transition.state, [*events, *transition.durable]
    assert goal_rounds(events) == {"g": 3, "k": 3}
    for at in range(1, len(events) + 1):
        taken = take(LogFold().feed(events[:at]))
        assert dict(taken.goal_rounds) == goal_rounds(events[:at])
        stored = checkpoint_from_json(json.loads(json.dumps(checkpoint_to_json(taken, "a"))), "a")
        assert stored == taken
        assert LogFold.resume(stored).feed(events[at:]).rounds == goal_rounds(events)
