"""``agent/error`` on the core side (R33, §8): announced for PreStepFailed and
StepFinished(Failed), last among the command's notifications, never for an aborted turn."""

from __future__ import annotations

import json

import pytest

from inbox_core import (
    AbortedReason,
    AgentError,
    BeginMaintenance,
    Cancel,
    Completed,
    Continue,
    Dispose,
    Disposed,
    ErrorReason,
    Failed,
    HookCause,
    InboxClaimed,
    MaxTokens,
    PreStepDecided,
    PreStepFailed,
    Reject,
    StatusChanged,
    StepEnded,
    StepFinished,
    TurnEnded,
    TurnStarted,
    TurnStoppingDone,
    UserCause,
    notification_to_json,
)
from tests.core.helpers import Run, claimed, followup, inject, msg, queue, steer


def errors(notes: list) -> list[AgentError]:
    return [n for n in notes if isinstance(n, AgentError)]


# ------------------------------------------------------------- PreStepFailed


def test_r33_pre_step_failure_announces_agent_error_with_step_none_last():
    """R33, §8: PreStepFailed -> durable ``turn/end error``; notifications: status idle,
    then ``agent/error {turn, step: None, message, code}`` last."""
    run = Run()
    run(followup(msg("a")))
    t = run(PreStepFailed(1, 1, "hook crashed", "HOOK"))
    assert t.durable == (TurnEnded(1, ErrorReason("hook crashed", "HOOK")),)
    assert t.notifications == (StatusChanged("idle"), AgentError(1, None, "hook crashed", "HOOK"))


def test_r33_pre_step_failure_at_a_later_boundary_still_has_step_none():
    """R33, §8: ``step`` is null for any pre-step failure (the step never started)."""
    run = Run()
    run(followup(msg("a")))
    run.enter()
    run(steer(msg("s")))
    run.finish(Continue())
    t = run(PreStepFailed(1, 2, "late", "L"))
    assert t.notifications == (StatusChanged("idle"), AgentError(1, None, "late", "L"))


def test_r33_pre_step_failure_that_opens_the_next_turn_announces_the_error_last():
    """R33, R19: the turn end opens turn 2 in the same command; its claimed notifications
    come first, ``agent/error`` of turn 1 last."""
    run = Run()
    run(followup(msg("a")))
    run(inject(msg("i")))
    run(followup(msg("b")))
    t = run(PreStepFailed(1, 1, "boom", "B"))
    assert t.durable == (
        TurnEnded(1, ErrorReason("boom", "B")),
        TurnStarted(2),
        claimed("next-step", 1),
        claimed("next-turn", 1),
    )
    assert t.notifications == (
        InboxClaimed(msg("i"), 2),
        InboxClaimed(msg("b"), 2),
        AgentError(1, None, "boom", "B"),
    )


# ----------------------------------------------------------- StepFinished(Failed)


def test_r33_failed_step_announces_agent_error_with_its_step_last():
    """R33, R18: StepFinished(Failed) -> step/end, turn/end error; status idle then
    ``agent/error {turn, step, message, code}``."""
    run = Run()
    run(followup(msg("a")))
    run.enter()
    t = run(StepFinished(1, 1, Failed("model down", "E503")))
    assert t.durable == (StepEnded(1, 1), TurnEnded(1, ErrorReason("model down", "E503")))
    assert t.notifications == (StatusChanged("idle"), AgentError(1, 1, "model down", "E503"))


def test_r33_failed_later_step_names_that_step():
    run = Run()
    run(followup(msg("a")))
    run.step_through(Continue())
    run.enter()
    run.finish(MaxTokens())
    run(steer(msg("s")))
    run.stop()
    run.enter()
    t = run(StepFinished(1, 3, Failed("m", "c")))
    assert t.notifications == (StatusChanged("idle"), AgentError(1, 3, "m", "c"))


def test_r33_d21_failed_step_with_pending_steer_opens_the_next_turn_then_the_error():
    """R33, D21, R19: the pending steer opens turn 2 (claimed notification) before the
    ``agent/error`` of turn 1."""
    run = Run()
    run(followup(msg("a")))
    run.enter()
    run(steer(msg("s")))
    t = run(StepFinished(1, 1, Failed("f", "F")))
    assert t.durable == (
        StepEnded(1, 1),
        TurnEnded(1, ErrorReason("f", "F")),
        TurnStarted(2),
        claimed("next-step", 1),
    )
    assert t.notifications == (InboxClaimed(msg("s"), 2), AgentError(1, 1, "f", "F"))


def test_r33_r25_failure_report_of_a_disposed_turn_is_not_announced():
    """R33, R25: a disposed turn is aborted, so its failure report is not announced; the
    command announces idle then ``agent/disposed``."""
    run = Run()
    run(followup(msg("a")))
    run.enter()
    run(Dispose())
    t = run(StepFinished(1, 1, Failed("f", "F")))
    assert errors(list(t.notifications)) == []
    assert t.notifications == (StatusChanged("idle"), Disposed())


# --------------------------------------------------------------- aborted turns


@pytest.mark.parametrize("keep_inbox", [True, False])
def test_r33_aborted_turns_pre_step_failure_is_not_announced(keep_inbox):
    """R33, D15: the failure report of an aborted turn is not announced; the turn ends
    ``aborted``."""
    run = Run()
    run(followup(msg("a")))
    run(Cancel(HookCause("stop"), keep_inbox=keep_inbox))
    t = run(PreStepFailed(1, 1, "ignored", "X"))
    assert t.durable == (TurnEnded(1, AbortedReason(HookCause("stop"))),)
    assert t.notifications == (StatusChanged("idle"),)


def test_r33_aborted_turns_failed_step_is_not_announced():
    run = Run()
    run(followup(msg("a")))
    run.enter()
    run(Cancel(UserCause(), keep_inbox=True))
    run(queue(msg("q")))
    t = run(StepFinished(1, 1, Failed("ignored", "X")))
    assert t.durable == (StepEnded(1, 1), TurnEnded(1, AbortedReason(UserCause())))
    assert t.notifications == (StatusChanged("idle"),)
    assert errors(run.notes) == []


# --------------------------------------------------------- never for the rest


@pytest.mark.parametrize(
    "finish",
    [
        lambda run: run(PreStepDecided(1, 1, Reject())),
        lambda run: run.step_through(Completed()) or run.stop(),
        lambda run: run.step_through(MaxTokens()) or run(TurnStoppingDone(1)),
    ],
    ids=["reject", "completed", "max-tokens"],
)
def test_r33_no_agent_error_for_other_turn_ends(finish):
    """R33: ``agent/error`` only for a hook failure report."""
    run = Run()
    run(followup(msg("a")))
    finish(run)
    assert run.state.status == "idle"
    assert errors(run.notes) == []


def test_r33_no_agent_error_during_maintenance():
    run = Run()
    run(BeginMaintenance())
    run(Cancel(UserCause()))
    assert errors(run.notes) == []


# ---------------------------------------------------------------------- JSON


@pytest.mark.parametrize(
    ("note", "expected"),
    [
        (
            AgentError(3, None, "hook crashed", "HOOK"),
            {
                "type": "agent/error",
                "data": {
                    "turn": 3,
                    "step": None,
                    "error": {"message": "hook crashed", "code": "HOOK"},
                },
            },
        ),
        (
            AgentError(1, 2, "model down", "E503"),
            {
                "type": "agent/error",
                "data": {"turn": 1, "step": 2, "error": {"message": "model down", "code": "E503"}},
            },
        ),
    ],
)
def test_r33_agent_error_json_form(note, expected):
    """§8: ``{"type":"agent/error","data":{"turn","step","error":{"message","code"}}}``;
    ``step`` is JSON null for a pre-step failure."""
    doc = notification_to_json(note)
    assert doc == expected
    assert list(doc["data"]) == ["turn", "step", "error"]
    text = json.dumps(doc)
    assert '"step": null' in text or note.step is not None
    assert json.loads(text) == expected


def test_r33_announced_error_matches_the_durable_reason():
    """R33: the live error and the durable ``turn/end error`` carry the same message and
    code."""
    run = Run()
    run(followup(msg("a")))
    run.enter()
    t = run(StepFinished(1, 1, Failed("same", "SAME")))
    end = next(e for e in t.durable if isinstance(e, TurnEnded))
    error = errors(list(t.notifications))[0]
    assert (end.reason.message, end.reason.code) == (error.message, error.code)


def test_r33_random_sessions_announce_agent_error_exactly_for_live_failures():
    """R33 over random sessions: ``agent/error`` is announced exactly for a PreStepFailed
    or StepFinished(Failed) of a turn that is not aborted, once, as the command's last
    notification, with the failure's turn, step (None before a step) and error."""
    import random

    from inbox_core import InboxCoreError
    from tests.core.test_transition_table import CRASH, Session, next_command

    for seed in range(150):
        rng = random.Random(seed)
        session = Session()
        for _ in range(40):
            command = next_command(rng, session.state)
            if command == CRASH:
                session.crash(rng)
                continue
            before = session.state
            try:
                t = session.apply(command)
            except InboxCoreError:
                continue
            expected = None
            if before.abort_cause is None:
                if isinstance(command, PreStepFailed):
                    expected = AgentError(command.turn, None, command.message, command.code)
                elif isinstance(command, StepFinished) and isinstance(command.outcome, Failed):
                    outcome = command.outcome
                    expected = AgentError(command.turn, command.step, outcome.message, outcome.code)
            found = errors(list(t.notifications))
            if expected is None:
                assert found == [], (seed, command)
            else:
                assert found == [expected], (seed, command)
                assert t.notifications[-1] == expected
