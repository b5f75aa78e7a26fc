"""The durable abort of v2 (R23, R25, R27, I4, I10): ``turn/abort`` and claim consumption.

The first abort of a live turn is written durably (``turn/abort {turn, cause}``) by the
command that marks it, after that command's cancel splices; later cancels and a later
dispose never write a second one nor change the cause. Claimed input of a turn that ends
before a decision answers the claim is consumed by that turn. Resume closes an orphaned
turn that holds a ``turn/abort`` ``aborted {cause}`` and restores nothing; replay checks
the placement of ``turn/abort``.
"""

from __future__ import annotations

import json
import random
from typing import Any

import pytest

from inbox_core import (
    AbortedReason,
    AgentDisposed,
    AwaitPreStep,
    AwaitStep,
    AwaitTurnStopping,
    Cancel,
    CancelRequested,
    Completed,
    CompletedReason,
    Continue,
    DecodeError,
    Dispose,
    Disposed,
    DisposedCause,
    EndMaintenance,
    Enter,
    Entry,
    ErrorReason,
    HookCause,
    InboxClaimed,
    InboxCoreError,
    InboxDiscarded,
    InboxInserted,
    InterruptedReason,
    InvalidInput,
    MessageAdmitted,
    ParentCause,
    PreStepDecided,
    PreStepFailed,
    Projection,
    Reject,
    Replace,
    ReplayError,
    Resume,
    Send,
    Splice,
    StatusChanged,
    StepEnded,
    StepFinished,
    StepStarted,
    TurnAborted,
    TurnEnded,
    TurnStarted,
    TurnStoppingDone,
    UnexpectedReport,
    UserCause,
    event_from_json,
    event_to_json,
    reduce,
    replay,
)
from inbox_core.state import PreStep, Step, TurnStopping
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

# ------------------------------------------------------------------ builders


def waking(mid: str) -> Entry:
    return Entry(msg(mid), (), True)


def quiet(mid: str) -> Entry:
    return Entry(msg(mid), (), False)


def at_pre_step() -> Run:
    """Turn 1 awaits the pre-step decision on the claim of ``a`` (step 1)."""
    run = Run()
    run(followup(msg("a")))
    assert run.awaiting == AwaitPreStep(1, 1, (msg("a"),))
    return run


def at_pre_step_after_continue() -> Run:
    """Turn 1 awaits the decision of step 2 on the between-steps claim of ``s``."""
    run = Run()
    run(followup(msg("a")))
    run.enter()
    run(steer(msg("s")))
    run.finish(Continue())
    assert run.awaiting == AwaitPreStep(1, 2, (msg("s"),))
    return run


def in_step() -> Run:
    run = Run()
    run(followup(msg("a")))
    run.enter()
    assert run.awaiting == AwaitStep(1, 1)
    return run


def at_turn_stopping() -> Run:
    run = Run()
    run(followup(msg("a")))
    run.step_through()
    assert run.awaiting == AwaitTurnStopping(1)
    return run


def closing_report(run: Run) -> Any:
    """Any report answering what the aborted turn awaits (its content is ignored, D6)."""
    awaiting = run.awaiting
    if isinstance(awaiting, AwaitPreStep):
        return PreStepDecided(awaiting.turn, awaiting.step, Enter(awaiting.batch))
    if isinstance(awaiting, AwaitStep):
        return StepFinished(awaiting.turn, awaiting.step, Completed())
    assert isinstance(awaiting, AwaitTurnStopping)
    return TurnStoppingDone(awaiting.turn)


def closing_events(run: Run, cause: Any) -> list[Any]:
    """The durable events an aborted turn's closing report writes (R23)."""
    awaiting = run.awaiting
    turn = run.state.last_turn
    events: list[Any] = []
    if isinstance(awaiting, AwaitStep):
        events.append(StepEnded(turn, awaiting.step))
    events.append(TurnEnded(turn, AbortedReason(cause)))
    return events


PHASES = {
    "pre-step": at_pre_step,
    "pre-step-after-continue": at_pre_step_after_continue,
    "step": in_step,
    "turn-stopping": at_turn_stopping,
}


def aborts_in(log: list[Any]) -> list[TurnAborted]:
    return [e for e in log if isinstance(e, TurnAborted)]


def assert_no_step_after_abort(log: list[Any]) -> None:
    """I10 (v2): no ``step/start`` of a turn after its ``turn/abort``."""
    aborted: set[int] = set()
    for event in log:
        if isinstance(event, TurnAborted):
            aborted.add(event.turn)
        if isinstance(event, StepStarted):
            assert event.turn not in aborted, f"step/start after turn/abort: {event}"


# ----------------------------------------------------------- R23: turn/abort


@pytest.mark.parametrize("phase", list(PHASES))
def test_r23_v2_first_abort_writes_turn_abort_and_the_report_closes_aborted(phase):
    """R23 v2, I10: a keep_inbox cancel of a live turn writes exactly ``turn/abort {turn,
    cause}``; the closing report writes ``step/end`` if a step is open, then ``turn/end
    aborted {cause}``; no step starts in between."""
    run = PHASES[phase]()
    cause = HookCause("budget")
    t = run(Cancel(cause, keep_inbox=True))
    assert t.durable == (TurnAborted(1, cause),)
    assert t.notifications == (CancelRequested(cause),)
    assert run.state.abort_cause == cause
    assert run.state.status == "running"
    expected = closing_events(run, cause)
    t = run(closing_report(run))
    assert list(t.durable) == expected
    assert t.notifications == (StatusChanged("idle"),)
    assert run.state.abort_cause is None
    assert run.state.next_turn == ()
    assert run.state.next_step == ()
    assert len(aborts_in(run.log)) == 1
    assert_no_step_after_abort(run.log)


def test_r23_v2_turn_abort_comes_after_the_cancel_splices():
    """R23 v2, R22: the first cancel's canceled splices (next-step first) precede its
    ``turn/abort`` in the same command; the notifications are cancel-requested first."""
    run = in_step()
    run(inject(msg("i")))
    run(queue(msg("q")))
    t = run(Cancel(ParentCause()))
    assert t.durable == (
        canceled("next-step", 0, 1),
        canceled("next-turn", 0, 1),
        TurnAborted(1, ParentCause()),
    )
    assert t.notifications == (
        CancelRequested(ParentCause()),
        InboxDiscarded(msg("i")),
        InboxDiscarded(msg("q")),
    )


@pytest.mark.parametrize("phase", list(PHASES))
def test_r23_v2_later_cancels_write_no_second_turn_abort_and_keep_the_cause(phase):
    """R23 v2: a later cancel still clears new input but writes no ``turn/abort`` and
    never changes the cause; the turn ends with the first cause."""
    run = PHASES[phase]()
    run(Cancel(UserCause(), keep_inbox=True))
    run(queue(msg("late")))
    t = run(Cancel(ParentCause()))
    assert t.durable == (canceled("next-turn", 0, 1),)
    assert t.notifications == (CancelRequested(ParentCause()), InboxDiscarded(msg("late")))
    assert run.state.abort_cause == UserCause()
    t = run(Cancel(HookCause("again"), keep_inbox=True))
    assert (t.durable, t.notifications) == ((), ())
    expected = closing_events(run, UserCause())
    t = run(closing_report(run))
    assert list(t.durable) == expected
    assert aborts_in(run.log) == [TurnAborted(1, UserCause())]


@pytest.mark.parametrize("phase", list(PHASES))
def test_r23_r25_v2_dispose_after_a_user_cancel_ends_the_turn_aborted_user(phase):
    """R23 v2, R25 v2: a dispose after a user cancel writes no second ``turn/abort``, keeps
    the user cause, and the turn ends ``aborted {user}``; then idle and ``agent/disposed``."""
    run = PHASES[phase]()
    run(Cancel(UserCause(), keep_inbox=True))
    t = run(Dispose())
    assert t.durable == ()
    assert t.notifications == ()  # nothing to clear, the turn is already aborted
    assert run.state.disposed
    assert run.state.abort_cause == UserCause()
    expected = closing_events(run, UserCause())
    t = run(closing_report(run))
    assert list(t.durable) == expected
    assert t.notifications == (StatusChanged("idle"), Disposed())
    assert aborts_in(run.log) == [TurnAborted(1, UserCause())]


def test_r25_v2_dispose_that_clears_after_a_cancel_still_writes_no_turn_abort():
    """R25 v2, R23 v2: a dispose that clears new input announces cancel-requested
    {disposed} and records its splice, but no second ``turn/abort``."""
    run = in_step()
    run(Cancel(ParentCause(), keep_inbox=True))
    run(steer(msg("s")))
    t = run(Dispose())
    assert t.durable == (canceled("next-step", 0, 1),)
    assert t.notifications == (CancelRequested(DisposedCause()), InboxDiscarded(msg("s")))
    assert run.state.abort_cause == ParentCause()
    t = run.finish()
    assert t.durable == (StepEnded(1, 1), TurnEnded(1, AbortedReason(ParentCause())))


def test_r25_v2_first_abort_by_dispose_is_durable_with_cause_disposed():
    """R25, R23 v2: a dispose that is the first abort writes ``turn/abort {disposed}``."""
    run = in_step()
    t = run(Dispose())
    assert t.durable == (TurnAborted(1, DisposedCause()),)
    assert t.notifications == (CancelRequested(DisposedCause()),)
    t = run.finish()
    assert t.durable == (StepEnded(1, 1), TurnEnded(1, AbortedReason(DisposedCause())))
    assert t.notifications == (StatusChanged("idle"), Disposed())


def test_r25_v2_dispose_as_first_abort_writes_turn_abort_after_its_splices():
    """R25, R23 v2, D5: a dispose that clears and aborts records its canceled splices
    (next-step first) and then ``turn/abort {disposed}``."""
    run = at_pre_step()
    run(inject(msg("i")))
    run(queue(msg("q")))
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


def test_r23_v2_each_turn_records_its_own_first_abort():
    """R23 v2, I4: a turn/abort belongs to one turn; the next turn may be aborted again."""
    run = in_step()
    run(Cancel(UserCause(), keep_inbox=True))
    run(followup(msg("b")))
    t = run.finish()
    assert t.durable == (
        StepEnded(1, 1),
        TurnEnded(1, AbortedReason(UserCause())),
        TurnStarted(2),
        claimed("next-turn", 1),
    )
    assert run.state.abort_cause is None
    t = run(Cancel(HookCause("h"), keep_inbox=True))
    assert t.durable == (TurnAborted(2, HookCause("h")),)
    assert aborts_in(run.log) == [TurnAborted(1, UserCause()), TurnAborted(2, HookCause("h"))]


def test_r23_v2_no_turn_abort_when_nothing_is_live():
    """R23 v2, R21: a cancel while idle (or of a job, R31) writes no ``turn/abort``."""
    run = Run()
    run(queue(msg("q")))
    t = run(Cancel(UserCause()))
    assert t.durable == (canceled("next-turn", 0, 1),)
    assert aborts_in(run.log) == []


# ------------------------------------------------------------------ I10


@pytest.mark.parametrize("decision", [Enter((msg("a"),)), Enter((msg("new"),)), Reject()])
def test_i10_v2_no_step_start_after_turn_abort_at_pre_step(decision):
    """I10 v2, R23, D6: an Enter (even with new messages) of an aborted turn starts no
    step and admits nothing; the turn ends ``aborted``."""
    run = at_pre_step()
    run(Cancel(UserCause(), keep_inbox=True))
    t = run(PreStepDecided(1, 1, decision))
    assert t.durable == (TurnEnded(1, AbortedReason(UserCause())),)
    assert not any(isinstance(e, StepStarted | MessageAdmitted) for e in t.durable)
    assert_no_step_after_abort(run.log)


def test_i10_v2_no_step_after_abort_even_with_waking_steer_pending():
    """I10 v2, R23, R24: a waking steer sent after the abort does not force a step of the
    aborted turn: it opens the next turn after ``turn/end``."""
    run = in_step()
    run(Cancel(UserCause(), keep_inbox=True))
    run(steer(msg("s")))
    t = run.finish(Continue())
    assert t.durable == (
        StepEnded(1, 1),
        TurnEnded(1, AbortedReason(UserCause())),
        TurnStarted(2),
        claimed("next-step", 1),
    )
    assert run.awaiting == AwaitPreStep(2, 1, (msg("s"),))
    assert_no_step_after_abort(run.log)


# --------------------------------------------------- R23: claim consumption


def test_r23_v2_pre_step_failure_consumes_the_claim():
    """R23 v2, R18: input claimed by a turn that fails before its decision is consumed:
    ``turn/end error``, the claim stays removed, nothing is re-inserted."""
    run = Run()
    run(inject(msg("i")))
    run(followup(msg("a"), [msg("c")]))
    notes_before = len(run.notes)
    t = run(PreStepFailed(1, 1, "hook died", "HOOK"))
    assert t.durable == (TurnEnded(1, ErrorReason("hook died", "HOOK")),)
    assert run.state.next_turn == ()
    assert run.state.next_step == ()
    assert run.state.status == "idle"
    assert not any(isinstance(n, InboxInserted) for n in run.notes[notes_before:])
    # and it never comes back: later commands leave it gone
    run(followup(msg("b")))
    assert run.awaiting == AwaitPreStep(2, 1, (msg("b"),))


def test_r23_v2_pre_step_failure_at_a_between_steps_claim_consumes_it():
    """R23 v2: the between-steps claim (step 2) of a turn that fails is consumed too."""
    run = at_pre_step_after_continue()
    t = run(PreStepFailed(1, 2, "x", "X"))
    assert t.durable == (TurnEnded(1, ErrorReason("x", "X")),)
    assert run.state.next_step == ()
    assert run.state.next_turn == ()


@pytest.mark.parametrize("keep_inbox", [True, False])
@pytest.mark.parametrize("builder", [at_pre_step, at_pre_step_after_continue])
def test_r23_v2_abort_while_the_decision_is_pending_consumes_the_claim(builder, keep_inbox):
    """R23 v2: a cancel while the pre-step decision is pending neither discards nor
    restores the claimed input (it is not pending); the turn consumes it."""
    run = builder()
    batch = run.awaiting.batch
    t = run(Cancel(UserCause(), keep_inbox=keep_inbox))
    assert t.durable == (TurnAborted(1, UserCause()),)
    assert t.notifications == (CancelRequested(UserCause()),)
    notes_before = len(run.notes)
    t = run(PreStepDecided(1, run.awaiting.step, Enter(batch)))
    assert t.durable == (TurnEnded(1, AbortedReason(UserCause())),)
    assert t.notifications == (StatusChanged("idle"),)
    assert run.state.next_turn == ()
    assert run.state.next_step == ()
    assert not any(isinstance(n, InboxInserted | InboxDiscarded) for n in run.notes[notes_before:])


def test_r23_v2_consumed_claim_does_not_come_back_with_the_next_turn():
    """R23 v2, R24: the next turn after an aborted pre-step claims only new work."""
    run = at_pre_step()
    run(Cancel(UserCause(), keep_inbox=True))
    run(followup(msg("b")))
    t = run(PreStepFailed(1, 1, "ignored", "I"))
    assert t.durable == (
        TurnEnded(1, AbortedReason(UserCause())),
        TurnStarted(2),
        claimed("next-turn", 1),
    )
    assert t.notifications == (InboxClaimed(msg("b"), 2),)  # no agent/error (R33)
    assert run.awaiting == AwaitPreStep(2, 1, (msg("b"),))


# ------------------------------------------------------- R25 v2: reports


@pytest.mark.parametrize("phase", list(PHASES))
def test_r25_v2_non_answering_report_raises_agent_disposed_from_the_dispose_on(phase):
    """R25 v2, R26, D16: before the dispose a report that does not answer raises
    UnexpectedReport; from the dispose on it raises AgentDisposed (and changes nothing);
    the answering report is still accepted."""
    run = PHASES[phase]()
    awaiting = run.awaiting
    turn = awaiting.turn
    wrong = [
        PreStepDecided(turn + 1, 1, Reject()),
        StepFinished(turn, 9, Completed()),
        TurnStoppingDone(turn + 1),
        PreStepFailed(turn, 7, "m", "c"),
        EndMaintenance(),
    ]
    for report in wrong:
        run.rejects(report, UnexpectedReport)
    run(Dispose())
    for report in wrong:
        run.rejects(report, AgentDisposed)
    run(closing_report(run))
    assert run.state.status == "idle"
    for report in wrong:
        run.rejects(report, AgentDisposed)
    run.rejects(closing_report_like(awaiting), AgentDisposed)


def closing_report_like(awaiting: Any) -> Any:
    """The report that answered ``awaiting`` earlier: stale once the turn closed."""
    if isinstance(awaiting, AwaitPreStep):
        return PreStepDecided(awaiting.turn, awaiting.step, Reject())
    if isinstance(awaiting, AwaitStep):
        return StepFinished(awaiting.turn, awaiting.step, Completed())
    return TurnStoppingDone(awaiting.turn)


# ------------------------------------------------------ R27 v2: Resume


def crashed(log: list[Any]) -> Run:
    """A fresh process over ``log`` (a crash): the replayed state and the same log."""
    return Run(replay(log), log)


@pytest.mark.parametrize("phase", list(PHASES))
def test_r27_v2_resume_closes_an_aborted_orphan_aborted_and_restores_nothing(phase):
    """R27 v2: a replayed log whose open turn holds ``turn/abort`` is ``running`` until
    Resume, which writes ``step/end`` if a step is open then ``turn/end aborted {cause}``,
    restores nothing (the undecided claim was consumed) and goes idle."""
    live = PHASES[phase]()
    cause = HookCause("stop")
    live(Cancel(cause, keep_inbox=True))
    step_open = isinstance(live.awaiting, AwaitStep)
    run = crashed(list(live.log))
    assert run.state.status == "running"
    assert run.state.resume_required
    assert run.state.abort_cause == cause
    t = run(Resume())
    turn_end = TurnEnded(1, AbortedReason(cause))
    expected = (StepEnded(1, 1), turn_end) if step_open else (turn_end,)
    assert t.durable == expected
    assert t.notifications == (StatusChanged("idle"),)
    assert run.state.next_turn == ()
    assert run.state.next_step == ()
    assert run.state.status == "idle"
    assert not run.state.resume_required
    assert run.state.abort_cause is None


def test_r27_v2_resume_of_an_aborted_orphan_then_opens_pending_waking_work():
    """R27 v2, R24: after the aborted close, waking work sent after the abort opens the
    next turn in the same Resume; the consumed claim is not part of it."""
    live = at_pre_step()
    live(inject(msg("i")))
    live(Cancel(UserCause(), keep_inbox=True))
    live(followup(msg("b")))
    run = crashed(list(live.log))
    t = run(Resume())
    assert t.durable == (
        TurnEnded(1, AbortedReason(UserCause())),
        TurnStarted(2),
        claimed("next-step", 1),
        claimed("next-turn", 1),
    )
    assert t.notifications == (InboxClaimed(msg("i"), 2), InboxClaimed(msg("b"), 2))
    assert run.awaiting == AwaitPreStep(2, 1, (msg("i"), msg("b")))


def test_r27_v2_resume_without_turn_abort_closes_interrupted_and_restores_the_claim():
    """R27 v2 (contrast): without ``turn/abort`` Resume writes ``turn/end interrupted``,
    restores the undecided claim to the heads with its wakeup flags (next-step first),
    then opens the next turn for it."""
    live = Run()
    live(inject(msg("i")))
    live(followup(msg("a")))
    run = crashed(list(live.log))
    assert run.state.abort_cause is None
    t = run(Resume())
    assert t.durable == (
        TurnEnded(1, InterruptedReason()),
        inserted("next-step", 0, quiet("i")),
        inserted("next-turn", 0, waking("a")),
        TurnStarted(2),
        claimed("next-step", 1),
        claimed("next-turn", 1),
    )
    assert t.notifications == (
        InboxInserted(msg("i")),
        InboxInserted(msg("a")),
        InboxClaimed(msg("i"), 2),
        InboxClaimed(msg("a"), 2),
    )


def test_r27_v2_resume_without_turn_abort_restores_a_quiet_claim_and_goes_idle():
    """R27: an interrupted between-steps claim of quiet input goes back and the agent idles."""
    live = Run()
    live(followup(msg("a")))
    live.enter()
    live(inject(msg("i")))
    live.finish(Continue())
    assert live.awaiting == AwaitPreStep(1, 2, (msg("i"),))
    run = crashed(list(live.log))
    t = run(Resume())
    assert t.durable == (TurnEnded(1, InterruptedReason()), inserted("next-step", 0, quiet("i")))
    assert t.notifications == (InboxInserted(msg("i")), StatusChanged("idle"))
    assert run.state.next_step == (quiet("i"),)


def test_r27_v2_every_prefix_after_the_abort_resumes_aborted():
    """R27 v2, I12: every command boundary after the first ``turn/abort`` (later cancels,
    sends) still resumes ``aborted {first cause}``; every earlier one ``interrupted``."""
    live = Run()
    live(followup(msg("a")))
    cuts = [len(live.log)]
    live(Cancel(ParentCause(), keep_inbox=True))
    abort_at = len(live.log)
    cuts.append(abort_at)
    for command in (queue(msg("q")), Cancel(UserCause()), steer(msg("s")), Dispose()):
        live(command)
        cuts.append(len(live.log))
    for cut in cuts:
        run = crashed(live.log[:cut])
        t = run(Resume())
        ends = [e for e in t.durable if isinstance(e, TurnEnded)]
        expected = AbortedReason(ParentCause()) if cut >= abort_at else InterruptedReason()
        assert ends[0] == TurnEnded(1, expected), cut
        assert_no_step_after_abort(run.log)


# ------------------------------------------------------ R27 v2: replay checks


def base_log() -> list[Any]:
    """Turn 1 with one finished step, then aborted at turn-stopping and closed."""
    run = Run()
    run(followup(msg("a")))
    run.step_through()
    run(Cancel(UserCause(), keep_inbox=True))
    run.stop()
    return list(run.log)


def test_r27_replay_accepts_the_base_log_with_its_turn_abort():
    """R27 v2, I4: a ``turn/abort`` inside its turn followed by ``turn/end aborted`` replays."""
    log = base_log()
    assert log[-2:] == [TurnAborted(1, UserCause()), TurnEnded(1, AbortedReason(UserCause()))]
    assert replay(log).projection() == Projection((), (), 1, None, None)


def _index(log: list[Any], event: Any) -> int:
    return log.index(event)


def second_abort() -> tuple[list[Any], int]:
    log = base_log()
    at = _index(log, TurnAborted(1, UserCause())) + 1
    log.insert(at, TurnAborted(1, UserCause()))
    return log, at


def second_abort_other_cause() -> tuple[list[Any], int]:
    log = base_log()
    at = _index(log, TurnAborted(1, UserCause())) + 1
    log.insert(at, TurnAborted(1, ParentCause()))
    return log, at


def abort_before_any_turn() -> tuple[list[Any], int]:
    return [TurnAborted(1, UserCause())], 0


def abort_after_turn_end() -> tuple[list[Any], int]:
    log = base_log()
    log.append(TurnAborted(1, UserCause()))
    return log, len(log) - 1


def abort_for_the_wrong_turn() -> tuple[list[Any], int]:
    log = base_log()
    at = _index(log, TurnAborted(1, UserCause()))
    log[at] = TurnAborted(2, UserCause())
    return log, at


def abort_for_an_earlier_turn() -> tuple[list[Any], int]:
    run = Run()
    run(followup(msg("a")))
    run.run_turn_to_end()
    run(followup(msg("b")))
    log = list(run.log)
    log.append(TurnAborted(1, UserCause()))
    return log, len(log) - 1


def step_start_after_abort_at_pre_step() -> tuple[list[Any], int]:
    run = at_pre_step()
    run(Cancel(UserCause(), keep_inbox=True))
    log = list(run.log)
    log += [StepStarted(1, 1), MessageAdmitted(msg("a"))]
    return log, len(log) - 2


def step_start_after_abort_at_turn_stopping() -> tuple[list[Any], int]:
    log = base_log()
    at = _index(log, TurnAborted(1, UserCause())) + 1
    log[at:] = [StepStarted(1, 2), StepEnded(1, 2), TurnEnded(1, AbortedReason(UserCause()))]
    return log, at


def claim_after_abort() -> tuple[list[Any], int]:
    log = base_log()
    at = _index(log, TurnAborted(1, UserCause())) + 1
    log[at:] = [
        inserted("next-step", 0, waking("s")),
        claimed("next-step", 1),
        TurnEnded(1, AbortedReason(UserCause())),
    ]
    return log, at + 1


def turn_end_completed_after_abort() -> tuple[list[Any], int]:
    log = base_log()
    log[-1] = TurnEnded(1, CompletedReason())
    return log, len(log) - 1


def turn_end_other_cause_after_abort() -> tuple[list[Any], int]:
    log = base_log()
    log[-1] = TurnEnded(1, AbortedReason(ParentCause()))
    return log, len(log) - 1


def turn_end_other_hook_reason_after_abort() -> tuple[list[Any], int]:
    run = in_step()
    run(Cancel(HookCause("a"), keep_inbox=True))
    run.finish()
    log = list(run.log)
    assert log[-1] == TurnEnded(1, AbortedReason(HookCause("a")))
    log[-1] = TurnEnded(1, AbortedReason(HookCause("b")))
    return log, len(log) - 1


def turn_end_interrupted_after_abort() -> tuple[list[Any], int]:
    log = base_log()
    log[-1] = TurnEnded(1, InterruptedReason())
    return log, len(log) - 1


def turn_end_error_after_abort() -> tuple[list[Any], int]:
    run = at_pre_step()
    run(Cancel(UserCause(), keep_inbox=True))
    log = [*run.log, TurnEnded(1, ErrorReason("x", "X"))]
    return log, len(log) - 1


BAD_LOGS = [
    second_abort,
    second_abort_other_cause,
    abort_before_any_turn,
    abort_after_turn_end,
    abort_for_the_wrong_turn,
    abort_for_an_earlier_turn,
    step_start_after_abort_at_pre_step,
    step_start_after_abort_at_turn_stopping,
    claim_after_abort,
    turn_end_completed_after_abort,
    turn_end_other_cause_after_abort,
    turn_end_other_hook_reason_after_abort,
    turn_end_interrupted_after_abort,
    turn_end_error_after_abort,
]


@pytest.mark.parametrize("build", BAD_LOGS, ids=lambda f: f.__name__)
def test_r27_i4_v2_replay_rejects_a_misplaced_turn_abort(build):
    """R27 v2, I4 v2, R10: replay rejects a second ``turn/abort`` in a turn, one outside
    an open turn or for the wrong turn, a ``step/start`` or a claim after it, and a
    ``turn/end`` whose reason is not ``aborted`` with the same cause; ``ReplayError.seq``
    names the offending event, and the prefix before it replays."""
    log, seq = build()
    with pytest.raises(ReplayError) as info:
        replay(log)
    assert info.value.seq == seq
    replay(log[:seq])  # everything before the bad event is well formed


def test_r27_v2_replayed_abort_cause_is_the_logged_one():
    """R27 v2, I5: replay restores the open turn's first abort cause from ``turn/abort``."""
    run = in_step()
    run(Cancel(HookCause("why"), keep_inbox=True))
    run(Cancel(ParentCause(), keep_inbox=True))
    assert replay(run.log).abort_cause == HookCause("why")
    run.finish()
    assert replay(run.log).abort_cause is None


def test_r23_v2_live_reports_after_resume_of_an_aborted_orphan_are_stale():
    """R27, R26: once Resume closed the aborted orphan, its old reports are unexpected."""
    live = in_step()
    live(Cancel(UserCause(), keep_inbox=True))
    run = crashed(list(live.log))
    run(Resume())
    run.rejects(StepFinished(1, 1, Completed()), UnexpectedReport)
    t = reduce(run.state, followup(msg("n")))
    assert t.durable[:2] == (inserted("next-turn", 0, waking("n")), TurnStarted(2))


# ------------------------------------------------------------------ §8 form


@pytest.mark.parametrize(
    ("cause", "json_cause"),
    [
        (UserCause(), {"kind": "user"}),
        (ParentCause(), {"kind": "parent"}),
        (HookCause("why"), {"kind": "hook", "reason": "why"}),
        (DisposedCause(), {"kind": "disposed"}),
    ],
)
def test_formats_v2_turn_abort_json_form_and_round_trip(cause, json_cause):
    """§8 v2: ``turn/abort {turn, cause}``, the cause in the form of an aborted reason's
    ``reason``; it round-trips, also read from a log record with ``seq``."""
    event = TurnAborted(4, cause)
    doc = event_to_json(event)
    assert doc == {"type": "turn/abort", "data": {"turn": 4, "cause": json_cause}}
    end = event_to_json(TurnEnded(4, AbortedReason(cause)))
    assert end["data"]["reason"]["reason"] == doc["data"]["cause"]
    assert event_from_json(json.loads(json.dumps(doc))) == event
    assert event_from_json({**doc, "seq": 9}) == event


@pytest.mark.parametrize(
    "data",
    [
        {"turn": 1},
        {"cause": {"kind": "user"}},
        {"turn": 1, "cause": {"kind": "nope"}},
        {"turn": "1", "cause": {"kind": "user"}},
        {"turn": 1, "cause": {"kind": "user"}, "extra": 1},
    ],
)
def test_formats_v2_malformed_turn_abort_does_not_decode(data):
    with pytest.raises(DecodeError):
        event_from_json({"type": "turn/abort", "data": data})


def test_r23_turn_abort_needs_a_cause():
    with pytest.raises(InvalidInput):
        TurnAborted(1, "user")  # type: ignore[arg-type]


# ------------------------------------------------------------ random sessions


def test_r23_i10_v2_random_sessions():
    """R23 v2, I4 v2, I10 over random sessions (with crashes): a command writes
    ``turn/abort`` exactly when it first aborts a live turn, as its last durable event;
    no ``step/start`` follows a ``turn/abort`` in its turn; and claimed input never comes
    back to the inbox except through a command that inserts it, or Resume."""
    from tests.core.test_transition_table import CRASH, Session, next_command

    live = (PreStep, Step, TurnStopping)
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
            first_abort = (
                isinstance(command, Cancel | Dispose)
                and isinstance(before.phase, live)
                and before.abort_cause is None
            )
            aborts = [e for e in t.durable if isinstance(e, TurnAborted)]
            if first_abort:
                cause = DisposedCause() if isinstance(command, Dispose) else command.cause
                assert aborts == [TurnAborted(before.last_turn, cause)], (seed, command)
                assert t.durable[-1] == aborts[0]
            else:
                assert aborts == [], (seed, command)
            inserted_ids = {n.message.id for n in t.notifications if isinstance(n, InboxInserted)}
            assert isinstance(command, Resume) or inserted_ids <= inserted_by(command), seed
        assert_no_step_after_abort(session.log)


def inserted_by(command: Any) -> set[str]:
    if isinstance(command, Send):
        return {m.id for m in (*command.input.contexts, command.input.message)}
    if isinstance(command, Splice):
        return {m.id for e in command.inserted for m in e.messages}
    if isinstance(command, Replace):
        return {command.message.id}
    return set()
