"""Cancellation, abort convergence and dispose (R21-R25, D5, D6, D15, I9, I10)."""

from __future__ import annotations

import pytest

from inbox_core import (
    AbortedReason,
    AgentDisposed,
    AwaitPreStep,
    AwaitStep,
    AwaitTurnStopping,
    Cancel,
    CancelRequested,
    Clear,
    CompletedReason,
    Continue,
    Dispose,
    Disposed,
    DisposedCause,
    Enter,
    Entry,
    HookCause,
    InboxClaimed,
    InboxDiscarded,
    InboxInserted,
    ParentCause,
    PreStepDecided,
    PreStepFailed,
    Reject,
    StatusChanged,
    StepEnded,
    StepFinished,
    StepStarted,
    TurnAborted,
    TurnEnded,
    TurnStarted,
    TurnStoppingDone,
    UserCause,
)
from tests.core.helpers import (
    Run,
    canceled,
    claimed,
    followup,
    inject,
    inserted,
    msg,
    queue,
    steer,
)


def in_step() -> Run:
    """Turn 1 open, step 1 running (AwaitStep(1, 1))."""
    run = Run()
    run(followup(msg("run")))
    run.enter()
    return run


# ----------------------------------------------------------------------- R21


@pytest.mark.parametrize("keep_inbox", [False, True])
def test_r21_cancel_with_nothing_to_clear_or_abort_announces_nothing(keep_inbox):
    """R21: idle and empty -> no event, no notification, same state."""
    run = Run()
    state = run.state
    t = run(Cancel(UserCause(), keep_inbox=keep_inbox))
    assert (t.durable, t.notifications) == ((), ())
    assert t.state is state


def test_r21_r22_cancel_while_idle_with_parked_entries_clears_them():
    """R21, R22: an effective cancel announces cancel-requested first, then clears."""
    run = Run()
    run(queue(msg("q")))
    run(inject(msg("i")))
    t = run(Cancel(ParentCause()))
    assert t.durable == (canceled("next-step", 0, 1), canceled("next-turn", 0, 1))
    assert t.notifications == (
        CancelRequested(ParentCause()),
        InboxDiscarded(msg("i")),
        InboxDiscarded(msg("q")),
    )
    assert t.state.status == "idle"
    assert t.state.abort_cause is None
    assert t.state.next_turn == t.state.next_step == ()


def test_r22_keep_inbox_cancel_while_idle_is_a_noop():
    """R22, I9: keep_inbox with no live turn has nothing to do and announces nothing."""
    run = Run()
    run(queue(msg("q")))
    state = run.state
    t = run(Cancel(UserCause(), keep_inbox=True))
    assert (t.durable, t.notifications) == ((), ())
    assert t.state is state


def test_r21_r22_cancel_during_a_step_clears_next_step_first_and_aborts():
    """R21, R22, R23: cancel-requested, canceled splices next-step then next-turn, the
    turn is marked aborted and still awaits the in-flight step."""
    run = in_step()
    run(followup(msg("f"), [msg("fc")]))
    run(steer(msg("s")))
    t = run(Cancel(HookCause("budget")))
    assert t.durable == (
        canceled("next-step", 0, 1),
        canceled("next-turn", 0, 1),
        TurnAborted(1, HookCause("budget")),  # v2: after the cancel's splices (R23)
    )
    assert t.notifications == (
        CancelRequested(HookCause("budget")),
        InboxDiscarded(msg("s")),
        InboxDiscarded(msg("fc")),
        InboxDiscarded(msg("f")),
    )
    s = t.state
    assert s.abort_cause == HookCause("budget")
    assert s.awaiting == AwaitStep(1, 1)
    assert s.status == "running"
    assert s.next_turn == s.next_step == ()


def test_r22_i9_keep_inbox_cancel_aborts_without_touching_pending_entries():
    """R22, I9: keep_inbox aborts the live turn; no splice, no discard."""
    run = in_step()
    run(followup(msg("f")))
    run(inject(msg("i")))
    t = run(Cancel(UserCause(), keep_inbox=True))
    assert t.durable == (TurnAborted(1, UserCause()),)  # R23 v2: the abort is durable
    assert t.notifications == (CancelRequested(UserCause()),)
    assert t.state.abort_cause == UserCause()
    assert t.state.next_turn == (Entry(msg("f"), (), True),)
    assert t.state.next_step == (Entry(msg("i"), (), False),)


# ----------------------------------------------------------------------- R23


def test_r23_abort_during_a_step_closes_with_step_end_then_turn_end_aborted():
    """R23, I10: the step report (content ignored) closes the step and the turn."""
    run = in_step()
    run(Cancel())
    t = run(StepFinished(1, 1, Continue()))
    assert t.durable == (StepEnded(1, 1), TurnEnded(1, AbortedReason(UserCause())))
    assert t.notifications == (StatusChanged("idle"),)
    s = t.state
    assert (s.status, s.awaiting, s.abort_cause, s.turn_open) == ("idle", None, None, False)


@pytest.mark.parametrize(
    "decision", [Enter((msg("run"),)), Enter(()), Reject()], ids=["enter", "empty", "reject"]
)
def test_r23_d6_abort_at_pre_step_closes_without_a_step(decision):
    """R23, D6, I10: whatever the decision, no step starts in an aborted turn."""
    run = Run()
    run(followup(msg("run")))
    run(Cancel(ParentCause()))
    t = run(PreStepDecided(1, 1, decision))
    assert t.durable == (TurnEnded(1, AbortedReason(ParentCause())),)
    assert not any(isinstance(e, StepStarted) for e in run.log)


def test_d6_d7_an_aborted_turn_ignores_even_a_malformed_batch():
    """D6: the aborted turn's decision content is ignored, even a repeated id (D7)."""
    run = Run()
    run(followup(msg("run")))
    run(Cancel())
    t = run(PreStepDecided(1, 1, Enter((msg("x"), msg("x")))))
    assert t.durable == (TurnEnded(1, AbortedReason(UserCause())),)


def test_r23_d15_pre_step_failure_of_an_aborted_turn_closes_it_aborted():
    """D15: PreStepFailed on an aborted turn -> aborted, not error."""
    run = Run()
    run(followup(msg("run")))
    run(Cancel())
    t = run(PreStepFailed(1, 1, "x", "y"))
    assert t.durable == (TurnEnded(1, AbortedReason(UserCause())),)


def test_r23_abort_while_turn_stopping_never_steps_again():
    """R23, I10: a steer kept across an abort at turn-stopping does not force a step;
    it opens the next turn after the aborted turn/end (R24)."""
    run = in_step()
    run.finish()
    assert run.awaiting == AwaitTurnStopping(1)
    run(Cancel(UserCause(), keep_inbox=True))
    s = msg("s")
    run(steer(s))
    t = run(TurnStoppingDone(1))
    assert t.durable == (
        TurnEnded(1, AbortedReason(UserCause())),
        TurnStarted(2),
        claimed("next-step", 1),
    )
    assert t.notifications == (InboxClaimed(s, 2),)
    assert t.state.awaiting == AwaitPreStep(2, 1, (s,))
    assert t.state.abort_cause is None


def test_r23_repeated_cancels_first_cause_wins_later_ones_still_clear_new_input():
    """R21, R23: a second cancel with nothing new is a no-op; one with new input clears
    it (announcing its own cause) but the turn ends with the first cause."""
    run = in_step()
    run(Cancel(HookCause("first")))
    state = run.state
    t = run(Cancel(ParentCause()))
    assert (t.durable, t.notifications) == ((), ())
    assert t.state is state
    run(queue(msg("q")))
    t = run(Cancel(ParentCause()))
    assert t.durable == (canceled("next-turn", 0, 1),)
    assert t.notifications == (CancelRequested(ParentCause()), InboxDiscarded(msg("q")))
    assert t.state.abort_cause == HookCause("first")
    t = run.finish()
    assert t.durable == (StepEnded(1, 1), TurnEnded(1, AbortedReason(HookCause("first"))))


def test_r23_keep_inbox_cancel_after_a_cancel_is_a_noop():
    """R21, R23: the turn is already aborted and keep_inbox clears nothing."""
    run = in_step()
    run(Cancel())
    run(followup(msg("f")))
    state = run.state
    t = run(Cancel(ParentCause(), keep_inbox=True))
    assert (t.durable, t.notifications) == ((), ())
    assert t.state is state


def test_r23_d6_report_for_an_aborted_turn_must_still_answer_what_is_awaited():
    """D6, R26: an aborted turn still rejects a report for the wrong step."""
    from inbox_core import UnexpectedReport

    run = in_step()
    run(Cancel())
    run.rejects(StepFinished(1, 2, Continue()), UnexpectedReport)
    run.rejects(TurnStoppingDone(1), UnexpectedReport)
    run.rejects(PreStepDecided(1, 1, Reject()), UnexpectedReport)


# ----------------------------------------------------------------------- R24


def test_r24_keep_inbox_cancel_then_kept_waking_work_opens_the_next_turn_after_turn_end():
    """R24, R19: kept waking work opens turn 2 right after the aborted turn/end, in the
    same command and never before it."""
    run = in_step()
    f, i = msg("f"), msg("i")
    run(followup(f))
    run(inject(i))
    t = run(Cancel(UserCause(), keep_inbox=True))
    assert not any(isinstance(e, TurnStarted) for e in t.durable)
    t = run.finish()
    assert t.durable == (
        StepEnded(1, 1),
        TurnEnded(1, AbortedReason(UserCause())),
        TurnStarted(2),
        claimed("next-step", 1),
        claimed("next-turn", 1),
    )
    assert t.notifications == (InboxClaimed(i, 2), InboxClaimed(f, 2))
    s = t.state
    assert s.status == "running"
    assert s.last_turn == 2
    assert s.awaiting == AwaitPreStep(2, 1, (i, f))
    assert s.abort_cause is None


def test_r24_sends_after_an_abort_wait_for_the_aborted_turn_end():
    """R24, R14: a followup after the abort is only appended; turn 2 opens after turn/end."""
    run = in_step()
    run(Cancel())
    b = msg("b")
    t = run(followup(b))
    assert t.durable == (inserted("next-turn", 0, Entry(b, (), True)),)
    assert t.notifications == (InboxInserted(b),)
    assert t.state.awaiting == AwaitStep(1, 1)
    t = run.finish()
    assert t.durable == (
        StepEnded(1, 1),
        TurnEnded(1, AbortedReason(UserCause())),
        TurnStarted(2),
        claimed("next-turn", 1),
    )
    assert t.notifications == (InboxClaimed(b, 2),)
    run.run_turn_to_end()
    assert run.log[-1] == TurnEnded(2, CompletedReason())


# ----------------------------------------------------------------------- R25


def test_r25_d5_dispose_during_a_step():
    """R25, D5: cancel-requested {disposed} + discards; the step report then writes
    step/end, turn/end aborted {disposed}; status idle, then agent/disposed."""
    run = in_step()
    run(queue(msg("q")))
    run(inject(msg("i")))
    t = run(Dispose())
    assert t.durable == (
        canceled("next-step", 0, 1),
        canceled("next-turn", 0, 1),
        TurnAborted(1, DisposedCause()),
    )
    assert t.notifications == (
        CancelRequested(DisposedCause()),
        InboxDiscarded(msg("i")),
        InboxDiscarded(msg("q")),
    )
    assert t.state.disposed is True
    assert t.state.abort_cause == DisposedCause()
    assert t.state.awaiting == AwaitStep(1, 1)
    assert t.state.status == "running"
    t = run(StepFinished(1, 1, Continue()))
    assert t.durable == (StepEnded(1, 1), TurnEnded(1, AbortedReason(DisposedCause())))
    assert t.notifications == (StatusChanged("idle"), Disposed())
    assert t.state.status == "idle"
    assert t.state.disposed is True
    assert t.state.awaiting is None


def test_r25_d5_dispose_while_idle_announces_disposed_at_once():
    """R25, D5: nothing open -> agent/disposed in the same command."""
    run = Run()
    t = run(Dispose())
    assert t.durable == ()
    assert t.notifications == (Disposed(),)
    assert t.state.disposed is True
    assert t.state.status == "idle"


def test_r25_d5_dispose_while_idle_with_parked_entries_clears_then_announces():
    """R25, D5: cancel-requested {disposed}, discards, then agent/disposed."""
    run = Run()
    run(queue(msg("q"), [msg("qc")]))
    t = run(Dispose())
    assert t.durable == (canceled("next-turn", 0, 1),)
    assert t.notifications == (
        CancelRequested(DisposedCause()),
        InboxDiscarded(msg("qc")),
        InboxDiscarded(msg("q")),
        Disposed(),
    )


def test_r25_dispose_of_an_already_aborted_turn_keeps_the_first_cause():
    """R23, R25: dispose after a keep_inbox cancel clears the kept work; first cause wins,
    and no turn opens for the cleared work."""
    run = in_step()
    run(followup(msg("f")))
    run(Cancel(HookCause("h"), keep_inbox=True))
    t = run(Dispose())
    assert t.notifications == (CancelRequested(DisposedCause()), InboxDiscarded(msg("f")))
    assert t.state.abort_cause == HookCause("h")
    t = run.finish()
    assert t.durable == (StepEnded(1, 1), TurnEnded(1, AbortedReason(HookCause("h"))))
    assert t.notifications == (StatusChanged("idle"), Disposed())


@pytest.mark.parametrize(
    "command",
    [
        followup(msg("x")),
        steer(msg("x")),
        inject(msg("x")),
        Clear(),
        Cancel(),
        Dispose(),
    ],
    ids=["followup", "steer", "inject", "clear", "cancel", "dispose"],
)
def test_r25_after_dispose_commands_raise_agent_disposed_and_change_nothing(command):
    """R25, R26: every command except the in-flight turn's matching report is refused."""
    run = in_step()
    run(Dispose())
    run.rejects(command, AgentDisposed)
    t = run.finish()
    assert t.notifications[-1] == Disposed()
    run.rejects(command, AgentDisposed)
