"""Guarded commands (R34, D33): an expectation checked before anything the command does.

``Send``, ``Move`` and ``Cancel`` take ``expect=ExpectIdle()`` or
``expect=ExpectTurn(n)``; a failed one raises ``AgentBusy`` / ``TurnMismatch``
and changes nothing (I11). Where each can hold is ``guards.EXPECTATIONS``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

from inbox_core import (
    AgentBusy,
    AgentDisposed,
    AgentState,
    BeginMaintenance,
    Cancel,
    Dispose,
    DuplicateMessageId,
    ExpectIdle,
    ExpectTurn,
    InvalidInput,
    Move,
    ResumeRequired,
    Send,
    SteerUnavailable,
    TurnMismatch,
    command_from_json,
    command_to_json,
    followup,
    guards,
    inject,
    queue,
    reduce,
    replay,
    steer,
)
from inbox_core.state import STATUS_OF, TURN_PHASES, Idle
from inbox_core.testing import caller_commands, expectations
from tests.core.helpers import Run, msg, snapshot

# ------------------------------------------------------------ the situations


def idle() -> Run:
    return Run()


def idle_after_turn_1() -> Run:
    run = Run()
    run(followup(msg("a")))
    run.run_turn_to_end()
    return run


def pre_step_of_turn_1() -> Run:
    run = Run()
    run(followup(msg("a")))
    return run


def step_of_turn_1() -> Run:
    run = pre_step_of_turn_1()
    run.enter()
    return run


def turn_stopping_of_turn_1() -> Run:
    run = step_of_turn_1()
    run.finish()
    return run


def aborted_turn_1() -> Run:
    run = step_of_turn_1()
    run(Cancel(keep_inbox=True))
    return run


def maintenance() -> Run:
    run = Run()
    run(BeginMaintenance())
    return run


SITUATIONS: dict[str, Callable[[], Run]] = {
    "idle": idle,
    "idle after turn 1": idle_after_turn_1,
    "pre-step of turn 1": pre_step_of_turn_1,
    "step of turn 1": step_of_turn_1,
    "turn-stopping of turn 1": turn_stopping_of_turn_1,
    "aborted turn 1": aborted_turn_1,
    "maintenance": maintenance,
}
LIVE_TURN = {
    "pre-step of turn 1": 1,
    "step of turn 1": 1,
    "turn-stopping of turn 1": 1,
}
"""The situations with a live turn (opened, not ended, not aborted) and its number."""


def guarded_commands(expect: Any) -> list[Any]:
    """One of every guarded command, each carrying ``expect``."""
    return [
        followup(msg("n1"), expect=expect),
        queue(msg("n2"), expect=expect),
        steer(msg("n3"), expect=expect),
        inject(msg("n4"), expect=expect),
        Move("missing", "next-turn", expect),
        Cancel(keep_inbox=True, expect=expect),
    ]


# ---------------------------------------------------------------- expect idle


@pytest.mark.parametrize("situation", SITUATIONS)
def test_r34_expect_idle_holds_exactly_while_the_status_is_idle(situation: str) -> None:
    """R34: ExpectIdle holds while the status is idle; otherwise every guarded command raises
    AgentBusy naming the status it found, and nothing changes (I11)."""
    for command in guarded_commands(ExpectIdle()):
        run = SITUATIONS[situation]()
        if run.state.status == "idle":
            run(command)  # holds: the command does what it does unguarded
        else:
            error = run.rejects(command, AgentBusy)
            assert isinstance(error, AgentBusy)
            assert error.status == run.state.status
            assert "found turn 1 running" in str(error) or "maintenance" in str(error)


# ---------------------------------------------------------------- expect turn


@pytest.mark.parametrize("situation", SITUATIONS)
@pytest.mark.parametrize("turn", [1, 2, 7])
def test_r34_expect_turn_holds_exactly_while_that_turn_is_live(situation: str, turn: int) -> None:
    """R34: ExpectTurn(n) holds while turn n is opened, not ended and not aborted: a past, a
    future or an aborted turn is a mismatch, which names what was meant and found."""
    live = LIVE_TURN.get(situation)
    for command in guarded_commands(ExpectTurn(turn)):
        run = SITUATIONS[situation]()
        if live == turn:
            run(command)
        else:
            error = run.rejects(command, TurnMismatch)
            assert isinstance(error, TurnMismatch)
            assert (error.expected, error.found) == (turn, live)
            assert f"expected turn {turn} live" in str(error)


def test_r34_the_found_part_of_the_message_says_what_runs() -> None:
    """R34: the errors say what was found: the running turn, an aborted one, the last turn."""
    with pytest.raises(TurnMismatch, match=r"found turn 1 running \(aborted\)"):
        reduce(aborted_turn_1().state, steer(msg("s"), expect=ExpectTurn(1)))
    with pytest.raises(TurnMismatch, match="found the agent idle; the last turn was 1"):
        reduce(idle_after_turn_1().state, steer(msg("s"), expect=ExpectTurn(1)))
    with pytest.raises(TurnMismatch, match=r"found the agent idle$"):
        reduce(AgentState.initial(), steer(msg("s"), expect=ExpectTurn(1)))
    with pytest.raises(AgentBusy, match="found the agent maintenance"):
        reduce(maintenance().state, followup(msg("f"), expect=ExpectIdle()))


def test_r34_the_stop_button_never_stops_the_next_turn() -> None:
    """R34: the user presses stop for turn 1; turn 1 ends and the queued followup opens turn 2
    before the cancel is applied: the guarded cancel raises and turn 2 runs on."""
    run = step_of_turn_1()
    run(followup(msg("b")))
    run.finish()
    run.stop()
    assert (run.state.last_turn, run.state.status) == (2, "running")
    run.rejects(Cancel(expect=ExpectTurn(1)), TurnMismatch)
    assert run.state.abort_cause is None
    run(Cancel(expect=ExpectTurn(2)))
    assert run.state.abort_cause is not None


def test_r34_a_late_steer_opens_no_turn() -> None:
    """R34: a steer for a turn that already ended raises instead of opening a new turn."""
    run = idle_after_turn_1()
    run.rejects(steer(msg("late"), expect=ExpectTurn(1)), TurnMismatch)
    assert (run.state.status, run.state.last_turn) == ("idle", 1)


# ------------------------------------------------------------------ precedence


def stranded_log() -> Run:
    """A followup inserted during maintenance, then the process died: replayed, the log
    leaves waking work idle (``Stranded``, R27, R31)."""
    run = maintenance()
    run(followup(msg("f")))
    return run


@pytest.mark.parametrize("left", ["an open turn", "waking work idle"])
def test_r34_d33_resume_required_comes_before_the_expectation(left: str) -> None:
    """R34, R27, D33: a replayed open turn is not driven, and replayed waking work left idle
    waits for Resume (its status reads idle): ResumeRequired, never a mismatch or busy."""
    state = replay((step_of_turn_1() if left == "an open turn" else stranded_log()).log)
    assert state.resume_required
    for expect in (ExpectIdle(), ExpectTurn(1), ExpectTurn(2)):
        for command in guarded_commands(expect):
            with pytest.raises(ResumeRequired):
                reduce(state, command)


def test_r34_d33_agent_disposed_comes_before_the_expectation() -> None:
    """R34, D33: once disposed, AgentDisposed whether the expectation holds or not."""
    for situation in ("idle", "step of turn 1"):
        run = SITUATIONS[situation]()
        run(Dispose())
        for expect in (ExpectIdle(), ExpectTurn(1), ExpectTurn(3)):
            for command in guarded_commands(expect):
                run.rejects(command, AgentDisposed)


def test_r34_d33_the_expectation_comes_before_duplicate_ids_and_steer_unavailable() -> None:
    """R34, D33: a failing expectation wins over the command's own errors; one that holds
    lets them through."""
    run = step_of_turn_1()
    run(queue(msg("q")))
    run.rejects(queue(msg("q"), expect=ExpectIdle()), AgentBusy)
    run.rejects(queue(msg("q"), expect=ExpectTurn(2)), TurnMismatch)
    run.rejects(queue(msg("q"), expect=ExpectTurn(1)), DuplicateMessageId)
    quiet = Run()
    quiet(queue(msg("q")))
    quiet.rejects(Move("q", "next-step", ExpectTurn(1)), TurnMismatch)
    quiet.rejects(Move("q", "next-step", ExpectIdle()), SteerUnavailable)


def test_r34_d33_a_failing_expectation_turns_a_noop_into_an_error() -> None:
    """R34, D33: a move of an id that is not pending and a cancel with nothing to do are
    no-ops only when their expectation holds."""
    state = AgentState.initial()
    for command in (Move("missing", "next-step"), Cancel(keep_inbox=True)):
        assert reduce(state, attrs.evolve(command, expect=ExpectIdle())).state is state
        with pytest.raises(TurnMismatch):
            reduce(state, attrs.evolve(command, expect=ExpectTurn(1)))


# ----------------------------------------------------------- nothing changes


@given(command=caller_commands(), situation=st.sampled_from(sorted(SITUATIONS)))
def test_r34_i11_a_failed_expectation_changes_nothing(command: Any, situation: str) -> None:
    """R34, I11: whatever the command, a failed expectation leaves the very same state and
    emits nothing; one that holds gives exactly the unguarded command's transition."""
    if getattr(command, "expect", None) is None:
        return
    run = SITUATIONS[situation]()
    before = snapshot(run.state)
    unguarded = attrs.evolve(command, expect=None)
    expected = _outcome(lambda: reduce(run.state, unguarded))
    got = _outcome(lambda: reduce(run.state, command))
    if isinstance(got, AgentBusy | TurnMismatch):
        assert snapshot(run.state) == before
    elif isinstance(got, Exception):
        assert type(got) is type(expected)
    else:
        assert got == expected


def _outcome(call: Callable[[], Any]) -> Any:
    """The transition, or the error raised."""
    try:
        return call()
    except Exception as error:
        return error


def test_r34_none_is_the_unguarded_command() -> None:
    """R34: ``expect=None`` (the default) is the command of v2, field for field."""
    assert followup(msg("a")) == Send(followup(msg("a")).input, None)
    assert Cancel() == Cancel(expect=None)
    assert Move("a", "next-turn") == Move("a", "next-turn", None)


# ----------------------------------------------------------------- the table


def test_r34_the_expectation_table_is_what_reduce_reads(monkeypatch: pytest.MonkeyPatch) -> None:
    """R34: the check goes through ``guards.EXPECTATIONS`` (no test in a handler): dropping
    the idle row makes ExpectIdle fail while idle; adding a maintenance row makes it hold."""
    state = AgentState.initial()
    table = dict(guards.EXPECTATIONS)
    del table[Idle, ExpectIdle]
    monkeypatch.setattr("inbox_core.reducer.EXPECTATIONS", table)
    with pytest.raises(AgentBusy):
        reduce(state, followup(msg("a"), expect=ExpectIdle()))
    in_job = maintenance().state
    table[type(in_job.phase), ExpectIdle] = lambda _state, _expect: True
    assert reduce(in_job, followup(msg("a"), expect=ExpectIdle())).state.status == "maintenance"


def test_r34_expectations_can_hold_only_in_live_phases() -> None:
    """R34: idle only while Idle, a turn only in the driven turn phases: never in the
    replayed Orphaned/Stranded phases nor in Maintenance."""
    where = {(phase, expectation) for phase, expectation in guards.EXPECTATIONS}
    assert where == {(Idle, ExpectIdle)} | {(phase, ExpectTurn) for phase in TURN_PHASES}
    assert all(phase in STATUS_OF for phase, _ in where)


# ------------------------------------------------------------------ the values


def test_r34_expect_turn_needs_a_turn_number() -> None:
    """R34, D33, D17: ExpectTurn takes an int >= 1 (no bool, no 0); expect takes only an
    expectation or None."""
    for bad in (0, -1, True, 1.0, "1", None):
        with pytest.raises(InvalidInput):
            ExpectTurn(bad)  # type: ignore[arg-type]
    for bad in ("idle", 1, {"kind": "idle"}, ExpectIdle):
        with pytest.raises(InvalidInput):
            Cancel(expect=bad)  # type: ignore[arg-type]
        with pytest.raises(InvalidInput):
            followup(msg("a"), expect=bad)  # type: ignore[arg-type]


@given(expect=expectations(), command=caller_commands())
def test_r34_guarded_commands_round_trip_through_the_json_form(expect: Any, command: Any) -> None:
    """R34, Formats: ``expect`` is written only when set, as {kind} or {kind, turn}, and read
    back to an equal command; ``null`` reads as absent (D12)."""
    if "expect" not in attrs.fields_dict(type(command)):
        return
    command = attrs.evolve(command, expect=expect)
    data = command_to_json(command)
    assert ("expect" in data) == (expect is not None)
    if isinstance(expect, ExpectTurn):
        assert data["expect"] == {"kind": "turn", "turn": expect.turn}
    elif expect is not None:
        assert data["expect"] == {"kind": "idle"}
    assert command_from_json(data) == command
    assert command_from_json({**data, "expect": None}) == attrs.evolve(command, expect=None)
