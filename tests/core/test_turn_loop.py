"""The turn loop: pre-step decisions, step outcomes, turn-stopping, turn end (R16-R19, I8)."""

from __future__ import annotations

import itertools

from inbox_core import (
    AgentError,
    AwaitPreStep,
    AwaitStep,
    AwaitTurnStopping,
    BlockedReason,
    CompletedReason,
    Continue,
    Enter,
    Entry,
    ErrorReason,
    Failed,
    InboxClaimed,
    InboxInserted,
    MaxTokens,
    MaxTokensReason,
    MessageAdmitted,
    PreStepDecided,
    PreStepFailed,
    Reject,
    StatusChanged,
    StepEnded,
    StepFinished,
    StepStarted,
    TurnEnded,
    TurnStarted,
    TurnStoppingDone,
)
from tests.core.helpers import Run, claimed, followup, inject, inserted, msg, queue, steer


def started(first: str = "a") -> Run:
    run = Run()
    run(followup(msg(first)))
    return run


# ----------------------------------------------------------------------- R16


def test_r16_reject_closes_the_turn_blocked_with_no_step_events():
    """R16: Reject -> turn/end blocked, no step/start, no user/message; then idle."""
    run = started()
    t = run(PreStepDecided(1, 1, Reject()))
    assert t.durable == (TurnEnded(1, BlockedReason()),)
    assert t.notifications == (StatusChanged("idle"),)
    s = t.state
    assert (s.status, s.awaiting, s.last_turn, s.turn_open) == ("idle", None, 1, False)
    assert s.next_turn == ()
    assert not any(isinstance(e, StepStarted | MessageAdmitted) for e in run.log)


def test_r16_empty_batch_at_the_first_boundary_completes_the_turn_without_a_step():
    """R16: Enter(()) at the first boundary -> turn/end completed, no step events."""
    run = started()
    t = run(PreStepDecided(1, 1, Enter(())))
    assert t.durable == (TurnEnded(1, CompletedReason()),)
    assert t.notifications == (StatusChanged("idle"),)
    assert t.state.status == "idle"
    assert t.state.awaiting is None


def test_r16_enter_opens_a_step_admitting_the_final_batch_in_order():
    """R16: step/start, one user/message per entering message in order (rewritten batch)."""
    run = Run()
    c, a = msg("c"), msg("a")
    run(followup(a, [c]))
    extra, rewritten = msg("x"), msg("a", "rewritten a")
    t = run(PreStepDecided(1, 1, Enter((extra, rewritten))))
    assert t.durable == (StepStarted(1, 1), MessageAdmitted(extra), MessageAdmitted(rewritten))
    assert t.notifications == ()
    assert t.state.awaiting == AwaitStep(1, 1)
    assert t.state.open_step == 1


def test_r16_step_end_closes_the_step_then_turn_stopping_then_turn_end():
    """R16, R17: Completed -> step/end, AwaitTurnStopping; done -> turn/end completed."""
    run = started()
    run.enter()
    t = run.finish()
    assert t.durable == (StepEnded(1, 1),)
    assert t.notifications == ()
    assert t.state.awaiting == AwaitTurnStopping(1)
    assert t.state.open_step is None
    t = run.stop()
    assert t.durable == (TurnEnded(1, CompletedReason()),)
    assert t.notifications == (StatusChanged("idle"),)
    assert t.state.awaiting is None


# ----------------------------------------------------------------------- R17


def test_r17_continue_with_an_empty_batch_proceeds_to_a_step():
    """R17: after Continue an empty entering batch still opens the next step."""
    run = started()
    run.enter()
    t = run.finish(Continue())
    assert t.durable == (StepEnded(1, 1),)
    assert t.state.awaiting == AwaitPreStep(1, 2, ())
    t = run(PreStepDecided(1, 2, Enter(())))
    assert t.durable == (StepStarted(1, 2),)
    assert t.state.awaiting == AwaitStep(1, 2)


def test_r17_between_steps_the_claim_takes_next_step_only():
    """R9, R17: a waking next-turn entry is not claimed by a Continue boundary."""
    run = started()
    run.enter()
    b, i = msg("b"), msg("i")
    run(followup(b))
    run(inject(i))
    t = run.finish(Continue())
    assert t.durable == (StepEnded(1, 1), claimed("next-step", 1))
    assert t.notifications == (InboxClaimed(i, 1),)
    assert t.state.awaiting == AwaitPreStep(1, 2, (i,))
    assert t.state.next_turn == (Entry(b, (), True),)


def test_r17_ending_boundary_with_an_empty_batch_ends_the_turn():
    """R17: a steer-forced boundary answered with Enter(()) ends the turn (it was ending)."""
    run = started()
    run.enter()
    run(steer(msg("s")))
    run.finish()
    assert run.state.awaiting == AwaitPreStep(1, 2, (msg("s"),))
    t = run(PreStepDecided(1, 2, Enter(())))
    assert t.durable == (TurnEnded(1, CompletedReason()),)
    assert t.notifications == (StatusChanged("idle"),)


def test_r17_steering_after_the_last_step_forces_another_step():
    """R17: a waking steer pending when a step completes claims a boundary at once."""
    run = started()
    run.enter()
    s, sc = msg("s"), msg("sc")
    run(steer(s, [sc]))
    t = run.finish()
    assert t.durable == (StepEnded(1, 1), claimed("next-step", 1))
    assert t.notifications == (InboxClaimed(sc, 1), InboxClaimed(s, 1))
    assert t.state.awaiting == AwaitPreStep(1, 2, (sc, s))
    t = run.enter()
    assert t.durable == (StepStarted(1, 2), MessageAdmitted(sc), MessageAdmitted(s))
    run.finish()
    t = run.stop()
    assert t.durable == (TurnEnded(1, CompletedReason()),)


def test_r17_turn_stopping_steer_opens_another_pre_step():
    """R17: a steer sent while AwaitTurnStopping makes TurnStoppingDone claim again."""
    run = started()
    run.step_through()
    assert run.state.awaiting == AwaitTurnStopping(1)
    s = msg("s")
    t = run(steer(s))
    assert t.state.awaiting == AwaitTurnStopping(1)
    assert t.notifications == (InboxInserted(s),)
    assert t.durable == (inserted("next-step", 0, Entry(s, (), True)),)
    t = run.stop()
    assert t.durable == (claimed("next-step", 1),)
    assert t.notifications == (InboxClaimed(s, 1),)
    assert t.state.awaiting == AwaitPreStep(1, 2, (s,))
    run.enter()
    run.finish()
    t = run.stop()
    assert t.durable == (TurnEnded(1, CompletedReason()),)


def test_r17_turn_stopping_ignores_quiet_and_next_turn_input():
    """R15, R17: only waking next-step input keeps the turn going; others wait."""
    run = started()
    run.step_through()
    run(inject(msg("i")))
    run(queue(msg("q")))
    t = run.stop()
    assert t.durable == (TurnEnded(1, CompletedReason()),)
    assert t.state.status == "idle"
    assert t.state.next_step == (Entry(msg("i"), (), False),)
    assert t.state.next_turn == (Entry(msg("q"), (), False),)


# ----------------------------------------------------------------------- R18


def test_r18_max_tokens_is_sticky_over_a_later_completed_step():
    """R18: a MaxTokens step then a steer-forced Completed step ends max-tokens."""
    run = started()
    run.enter()
    run(steer(msg("s")))
    t = run.finish(MaxTokens())
    assert t.durable == (StepEnded(1, 1), claimed("next-step", 1))
    assert t.state.awaiting == AwaitPreStep(1, 2, (msg("s"),))
    run.enter()
    run.finish()
    t = run.stop()
    assert t.durable == (TurnEnded(1, MaxTokensReason()),)


def test_r18_max_tokens_is_sticky_through_an_empty_ending_batch_and_turn_scoped():
    """R18: the sticky reason also closes an empty ending boundary; the next turn is fresh."""
    run = started()
    run.enter()
    run.finish(MaxTokens())
    run(steer(msg("s")))
    run(followup(msg("b")))
    run.stop()
    t = run(PreStepDecided(1, 2, Enter(())))
    assert t.durable == (TurnEnded(1, MaxTokensReason()), TurnStarted(2), claimed("next-turn", 1))
    run.run_turn_to_end()
    assert run.log[-1] == TurnEnded(2, CompletedReason())


def test_r18_failed_step_ends_the_turn_error():
    """R18, R33: Failed(message, code) -> step/end, turn/end error {message, code}; the
    failure is announced live (agent/error) after the command's other notifications."""
    run = started()
    run.enter()
    t = run.finish(Failed("boom", "E42"))
    assert t.durable == (StepEnded(1, 1), TurnEnded(1, ErrorReason("boom", "E42")))
    assert t.notifications == (StatusChanged("idle"), AgentError(1, 1, "boom", "E42"))
    assert t.state.status == "idle"


def test_r18_d21_failed_step_with_pending_steer_ends_error_and_steer_opens_next_turn():
    """R18, R19, D21: Failed ends the turn even with waking next-step input pending."""
    run = started()
    run.enter()
    s = msg("s")
    run(steer(s))
    t = run.finish(Failed("boom", "E"))
    assert t.durable == (
        StepEnded(1, 1),
        TurnEnded(1, ErrorReason("boom", "E")),
        TurnStarted(2),
        claimed("next-step", 1),
    )
    assert t.notifications == (InboxClaimed(s, 2), AgentError(1, 1, "boom", "E"))  # R33: last
    assert t.state.awaiting == AwaitPreStep(2, 1, (s,))


def test_r18_pre_step_failure_closes_the_turn_error_and_the_batch_stays_removed():
    """R18, R23, R33: PreStepFailed -> turn/end error, no step; the claimed batch is
    consumed, not restored; agent/error with step null is announced last."""
    run = Run()
    run(inject(msg("i")))
    run(followup(msg("f"), [msg("c")]))
    t = run(PreStepFailed(1, 1, "hook crashed", "HOOK"))
    assert t.durable == (TurnEnded(1, ErrorReason("hook crashed", "HOOK")),)
    assert t.notifications == (StatusChanged("idle"), AgentError(1, None, "hook crashed", "HOOK"))
    s = t.state
    assert s.next_turn == ()
    assert s.next_step == ()
    assert not any(mid in s.inbox for mid in ("i", "f", "c"))
    assert not any(isinstance(e, StepStarted) for e in run.log)


def test_r18_pre_step_failure_at_a_later_boundary():
    """R18: a pre-step failure between steps ends the turn error after step 1."""
    run = started()
    run.enter()
    run.finish(Continue())
    t = run(PreStepFailed(1, 2, "bad", "X"))
    assert t.durable == (TurnEnded(1, ErrorReason("bad", "X")),)


def test_r18_reject_at_a_later_boundary_is_blocked():
    """R16, R18: Reject of a steer-forced step ends the turn blocked, even after MaxTokens."""
    run = started()
    run.enter()
    run(steer(msg("s")))
    run.finish(MaxTokens())
    t = run(PreStepDecided(1, 2, Reject()))
    assert t.durable == (TurnEnded(1, BlockedReason()),)


# ----------------------------------------------------------------------- R19


def test_r19_pending_waking_work_opens_the_next_turn_in_the_same_command():
    """R19, I8: turn/end then turn/start and claim at once; no status flicker."""
    run = started()
    run.enter()
    b = msg("b")
    run(followup(b))
    run.finish()
    t = run.stop()
    assert t.durable == (TurnEnded(1, CompletedReason()), TurnStarted(2), claimed("next-turn", 1))
    assert t.notifications == (InboxClaimed(b, 2),)
    assert t.state.status == "running"
    assert t.state.last_turn == 2
    assert t.state.awaiting == AwaitPreStep(2, 1, (b,))


def test_r19_nothing_waking_at_turn_end_goes_idle_and_quiet_input_stays():
    """R19, I3: only quiet entries pending at turn end -> agent/status idle."""
    run = started()
    run.enter()
    run(queue(msg("q")))
    run.finish()
    t = run.stop()
    assert t.durable == (TurnEnded(1, CompletedReason()),)
    assert t.notifications == (StatusChanged("idle"),)
    assert t.state.status == "idle"
    assert not t.state.inbox.has_waking
    assert t.state.next_turn == (Entry(msg("q"), (), False),)


def test_i8_status_never_repeats_over_a_busy_session():
    """I8, R19: agent/status alternates running/idle across many turns."""
    run = Run()
    for n in range(3):
        run(followup(msg(f"a{n}")))
        run(followup(msg(f"b{n}")))
        run(queue(msg(f"q{n}")))
        while run.state.status == "running":
            run.run_turn_to_end()
        run(inject(msg(f"i{n}")))
    statuses = [n.status for n in run.notes if isinstance(n, StatusChanged)]
    assert statuses == ["running", "idle"] * 3
    assert all(a != b for a, b in itertools.pairwise(statuses))


def test_r16_r17_each_turn_phase_names_its_turn_and_step():
    """R16, R17: the driven phases expose the turn and step their awaited action names."""
    from inbox_core.state import PreStep, Step, TurnStopping

    run = started()
    assert isinstance(run.state.phase, PreStep)
    assert (run.state.phase.turn, run.state.phase.step) == (1, 1)
    run.enter()
    assert isinstance(run.state.phase, Step)
    assert (run.state.phase.turn, run.state.phase.step) == (1, 1)
    run.finish()
    assert isinstance(run.state.phase, TurnStopping)
    assert (run.state.phase.turn, run.state.phase.step) == (1, 1)


def test_r26_an_awaited_action_is_answered_only_by_its_own_report() -> None:
    """R26: ``answered_by`` checks the report's kind, turn and step; ``answer`` and
    ``fail`` build reports that pass it."""
    pre, step, stop = AwaitPreStep(2, 3, ()), AwaitStep(2, 3), AwaitTurnStopping(2)
    assert pre.answered_by(pre.answer(Reject()))
    assert pre.answered_by(pre.fail("boom", "E"))
    assert step.answered_by(step.answer(Continue()))
    assert stop.answered_by(stop.answer())
    for wrong in (PreStepDecided(2, 2, Reject()), PreStepDecided(1, 3, Reject())):
        assert not pre.answered_by(wrong)
    assert not pre.answered_by(StepFinished(2, 3, Continue()))
    assert not step.answered_by(StepFinished(2, 4, Continue()))
    assert not step.answered_by(StepFinished(3, 3, Continue()))
    assert not step.answered_by(PreStepFailed(2, 3, "boom", "E"))
    assert not stop.answered_by(TurnStoppingDone(1))
    assert not stop.answered_by(StepFinished(2, 3, Continue()))
    assert not stop.answered_by(None)
