"""Maintenance, the between-turn job of v2 (R31, with R21-R25, R27, I3, I8).

Every sentence of brief section 12 that the core decides has a test here; the shell's
``run_maintenance`` and ``when_idle`` are tested with the shell.
"""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from inbox_core import (
    AgentDisposed,
    AwaitPreStep,
    BeginMaintenance,
    Cancel,
    CancelRequested,
    Clear,
    Completed,
    Dispose,
    Disposed,
    DisposedCause,
    EndMaintenance,
    Entry,
    HookCause,
    HostRecord,
    InboxClaimed,
    InboxDiscarded,
    InboxInserted,
    InboxMoved,
    MaintenanceUnavailable,
    Move,
    ParentCause,
    PreStepDecided,
    Reject,
    Remove,
    Replace,
    Resume,
    ResumeRequired,
    Splice,
    StatusChanged,
    SteerUnavailable,
    StepFinished,
    TurnAborted,
    TurnStarted,
    TurnStoppingDone,
    UnexpectedReport,
    UserCause,
    command_from_json,
    command_to_json,
    notification_to_json,
    replay,
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


def waking(mid: str) -> Entry:
    return Entry(msg(mid), (), True)


def quiet(mid: str) -> Entry:
    return Entry(msg(mid), (), False)


def statuses(notes: list[Any]) -> list[str]:
    return [n.status for n in notes if isinstance(n, StatusChanged)]


def assert_i8(notes: list[Any]) -> None:
    """I8: ``agent/status`` never repeats a value twice in a row (starting from idle)."""
    seq = ["idle", *statuses(notes)]
    assert all(a != b for a, b in itertools.pairwise(seq)), seq


def assert_i3(run: Run) -> None:
    """I3: idle implies no pending waking entry."""
    if run.state.status == "idle":
        assert not any(e.wakeup for e in run.state.next_turn + run.state.next_step)


def in_maintenance(*setup: Any) -> Run:
    run = Run()
    run.many(*setup)
    run(BeginMaintenance())
    assert run.state.status == "maintenance"
    return run


def running_at(where: str) -> Run:
    run = Run()
    run(followup(msg("a")))
    if where in ("step", "turn-stopping"):
        run.enter()
    if where == "turn-stopping":
        run.finish()
    return run


# ------------------------------------------------------------------- begin


def test_r31_begin_while_idle_announces_maintenance_writes_nothing():
    """R31: BeginMaintenance while idle -> status ``maintenance`` announced, no durable
    event, ``awaiting`` None, no abort cause."""
    run = Run()
    t = run(BeginMaintenance())
    assert t.durable == ()
    assert t.notifications == (StatusChanged("maintenance"),)
    assert run.state.status == "maintenance"
    assert run.state.awaiting is None
    assert run.state.abort_cause is None
    assert not run.state.turn_open


def test_r31_begin_while_idle_with_parked_quiet_input_keeps_it():
    """R31, R15: quiet parked input is no obstacle (idle) and stays where it is."""
    run = in_maintenance(queue(msg("q")), inject(msg("i")))
    assert run.state.next_turn == (quiet("q"),)
    assert run.state.next_step == (quiet("i"),)
    assert run.log == [inserted("next-turn", 0, quiet("q")), inserted("next-step", 0, quiet("i"))]


@pytest.mark.parametrize("where", ["pre-step", "step", "turn-stopping"])
def test_r31_begin_while_running_raises_maintenance_unavailable(where):
    """R31, R26: BeginMaintenance while a turn runs -> MaintenanceUnavailable, no change."""
    run = running_at(where)
    run.rejects(BeginMaintenance(), MaintenanceUnavailable)


def test_r31_begin_during_maintenance_raises_maintenance_unavailable():
    """R31: a second BeginMaintenance while the job runs -> MaintenanceUnavailable."""
    run = in_maintenance()
    run.rejects(BeginMaintenance(), MaintenanceUnavailable)


def test_r31_begin_while_an_aborted_turn_converges_is_unavailable():
    """R31: an aborted turn is still running until its report; maintenance must wait."""
    run = running_at("step")
    run(Cancel(UserCause(), keep_inbox=True))
    run.rejects(BeginMaintenance(), MaintenanceUnavailable)


@pytest.mark.parametrize("where", ["idle", "pre-step", "step", "turn-stopping", "maintenance"])
def test_r31_r25_begin_once_disposed_raises_agent_disposed(where):
    """R31, R25: once disposed, BeginMaintenance raises AgentDisposed (idle, running, or
    during a job)."""
    run = (
        Run()
        if where == "idle"
        else (in_maintenance() if where == "maintenance" else running_at(where))
    )
    run(Dispose())
    run.rejects(BeginMaintenance(), AgentDisposed)


def test_r31_r27_begin_on_a_replayed_state_that_needs_resume_raises_resume_required():
    """R31, R27, D16: Orphaned (open turn) and Stranded (waking work idle) replayed
    states need Resume first."""
    live = running_at("step")
    orphan = Run(replay(live.log), live.log)
    orphan.rejects(BeginMaintenance(), ResumeRequired)
    orphan.rejects(EndMaintenance(), ResumeRequired)
    stranded_log = [inserted("next-turn", 0, waking("w"))]
    stranded = Run(replay(stranded_log), stranded_log)
    assert stranded.state.status == "idle"
    assert stranded.state.resume_required
    stranded.rejects(BeginMaintenance(), ResumeRequired)
    stranded.rejects(EndMaintenance(), ResumeRequired)


# ------------------------------------------------------------ waking input


@pytest.mark.parametrize(
    ("command", "target", "entry"),
    [
        (followup(msg("f")), "next-turn", waking("f")),
        (steer(msg("s")), "next-step", waking("s")),
        (Splice("next-turn", 0, 0, (waking("p"),)), "next-turn", waking("p")),
    ],
)
def test_r31_waking_input_during_maintenance_is_inserted_but_opens_no_turn(command, target, entry):
    """R31, R13: during maintenance waking input is inserted (splice + inserted) but no
    ``turn/start``, no status change."""
    run = in_maintenance()
    t = run(command)
    assert t.durable == (inserted(target, 0, entry),)
    assert t.notifications == (InboxInserted(entry.message),)
    assert run.state.status == "maintenance"
    assert run.state.last_turn == 0
    assert run.state.awaiting is None


def test_r31_replace_making_a_waking_entry_during_maintenance_opens_no_turn():
    """R31, R7: a replace keeps the wakeup; a waking entry still waits for the job's end."""
    run = in_maintenance()
    run(followup(msg("f")))
    t = run(Replace("f", msg("g")))
    assert t.durable == (canceled("next-turn", 0, 1, waking("g")),)
    assert t.notifications == (InboxDiscarded(msg("f")), InboxInserted(msg("g")))
    assert run.state.status == "maintenance"
    assert run.state.last_turn == 0


def test_r31_r8_move_to_next_step_during_maintenance_raises_steer_unavailable():
    """R31, R8: no live turn can reach a step boundary during maintenance."""
    run = in_maintenance(queue(msg("q")))
    run.rejects(Move("q", "next-step"), SteerUnavailable)


def test_r31_move_to_next_turn_during_maintenance_opens_no_turn():
    """R31, R8: a steer moved to next-turn keeps its wakeup and still waits."""
    run = in_maintenance()
    run(steer(msg("s")))
    t = run(Move("s", "next-turn"))
    assert t.notifications == (InboxMoved(msg("s"), "next-turn"),)
    assert run.state.next_turn == (waking("s"),)
    assert run.state.status == "maintenance"
    assert run.state.last_turn == 0


def test_r31_edits_during_maintenance_work():
    """R31: remove and clear are ordinary edits during maintenance."""
    run = in_maintenance(queue(msg("q")))
    run(followup(msg("f")))
    t = run(Remove("q"))
    assert t.durable == (canceled("next-turn", 0, 1),)
    run(Clear())
    assert run.state.next_turn == ()
    assert run.state.status == "maintenance"


# ------------------------------------------------------------------ cancel


@pytest.mark.parametrize("cause", [UserCause(), ParentCause(), HookCause("h")])
def test_r31_cancel_keep_inbox_aborts_the_job_without_touching_the_inbox(cause):
    """R31, R21, R22, I9: cancel(keep_inbox) aborts the job: cancel-requested {cause}, the
    cause exposed as ``abort_cause``, no durable event at all (no ``turn/abort``: no
    turn), no splice, no discard."""
    run = in_maintenance(queue(msg("q")))
    run(followup(msg("f")))
    t = run(Cancel(cause, keep_inbox=True))
    assert t.durable == ()
    assert t.notifications == (CancelRequested(cause),)
    assert run.state.abort_cause == cause
    assert run.state.status == "maintenance"
    assert run.state.next_turn == (quiet("q"), waking("f"))


def test_r31_cancel_without_keep_inbox_aborts_the_job_and_cancels_pending_input():
    """R31, R22: without keep_inbox the cancel also cancels every pending entry, next-step
    first; still no ``turn/abort``."""
    run = in_maintenance(queue(msg("q")))
    run(steer(msg("s")))
    t = run(Cancel(UserCause()))
    assert t.durable == (canceled("next-step", 0, 1), canceled("next-turn", 0, 1))
    assert t.notifications == (
        CancelRequested(UserCause()),
        InboxDiscarded(msg("s")),
        InboxDiscarded(msg("q")),
    )
    assert run.state.abort_cause == UserCause()
    assert not any(isinstance(e, TurnAborted) for e in run.log)


def test_r31_second_cancel_keeps_the_first_cause():
    """R31, R23: first cause wins for a job; a later cancel with nothing to clear announces
    nothing, one that clears announces its own request but keeps the cause."""
    run = in_maintenance()
    run(Cancel(ParentCause(), keep_inbox=True))
    t = run(Cancel(UserCause(), keep_inbox=True))
    assert (t.durable, t.notifications) == ((), ())
    run(queue(msg("q")))
    t = run(Cancel(HookCause("x")))
    assert t.durable == (canceled("next-turn", 0, 1),)
    assert t.notifications == (CancelRequested(HookCause("x")), InboxDiscarded(msg("q")))
    assert run.state.abort_cause == ParentCause()


def test_r31_end_after_cancel_clears_the_cause_and_the_next_job_starts_fresh():
    """R31: the job's abort cause does not outlive the job."""
    run = in_maintenance()
    run(Cancel(UserCause(), keep_inbox=True))
    t = run(EndMaintenance())
    assert t.notifications == (StatusChanged("idle"),)
    assert run.state.abort_cause is None
    run(BeginMaintenance())
    assert run.state.abort_cause is None


def test_r31_r24_end_after_keep_inbox_cancel_opens_the_kept_waking_work_unaborted():
    """R31, R24: waking work kept by a keep_inbox cancel opens the next turn at the job's
    end, and that turn is not aborted."""
    run = in_maintenance()
    run(followup(msg("f")))
    run(Cancel(UserCause(), keep_inbox=True))
    t = run(EndMaintenance())
    assert t.durable == (TurnStarted(1), claimed("next-turn", 1))
    assert t.notifications == (StatusChanged("running"), InboxClaimed(msg("f"), 1))
    assert run.state.abort_cause is None
    run.enter()  # a step does start: the job's abort did not leak into the turn


# ----------------------------------------------------------------- dispose


def test_r31_r25_dispose_aborts_the_job_and_converges_at_its_end():
    """R31, R25, D5: dispose during maintenance clears, aborts the job with cause
    ``disposed`` and writes no ``turn/abort``; ``agent/disposed`` waits for EndMaintenance,
    which announces idle then disposed."""
    run = in_maintenance(queue(msg("q")))
    t = run(Dispose())
    assert t.durable == (canceled("next-turn", 0, 1),)
    assert t.notifications == (CancelRequested(DisposedCause()), InboxDiscarded(msg("q")))
    assert run.state.disposed
    assert run.state.abort_cause == DisposedCause()
    assert run.state.status == "maintenance"
    t = run(EndMaintenance())
    assert t.durable == ()
    assert t.notifications == (StatusChanged("idle"), Disposed())
    assert run.state.status == "idle"
    run.rejects(EndMaintenance(), AgentDisposed)  # the job ended: nothing answers now
    run.rejects(BeginMaintenance(), AgentDisposed)


def test_r31_r25_dispose_with_nothing_to_clear_still_aborts_the_job():
    """R31, R25: aborting the job is effective: cancel-requested {disposed} is announced."""
    run = in_maintenance()
    t = run(Dispose())
    assert t.durable == ()
    assert t.notifications == (CancelRequested(DisposedCause()),)


def test_r31_r25_dispose_after_a_cancel_keeps_the_job_cause():
    """R31, R25 v2: a dispose keeps an earlier abort cause of the job."""
    run = in_maintenance()
    run(Cancel(HookCause("first"), keep_inbox=True))
    t = run(Dispose())
    assert (t.durable, t.notifications) == ((), ())
    assert run.state.abort_cause == HookCause("first")
    assert run.state.disposed


def test_r31_r25_after_dispose_the_jobs_end_with_records_is_accepted():
    """R31, R30: EndMaintenance after a dispose is accepted like a turn's in-flight report;
    its records are written."""
    run = in_maintenance()
    run(Dispose())
    record = HostRecord("host/summary", {"text": "compacted"})
    t = run(EndMaintenance((record,)))
    assert t.durable == (record,)
    assert t.notifications == (StatusChanged("idle"), Disposed())


@pytest.mark.parametrize(
    "command",
    [
        followup(msg("x")),
        queue(msg("x")),
        Cancel(UserCause()),
        Dispose(),
        Resume(),
        BeginMaintenance(),
        Clear(),
    ],
)
def test_r31_r25_other_commands_during_a_disposed_job_raise_agent_disposed(command):
    """R25, R31: from the dispose on only the job's end is accepted."""
    run = in_maintenance()
    run(Dispose())
    run.rejects(command, AgentDisposed)


# --------------------------------------------------------------------- end


@pytest.mark.parametrize("where", ["idle", "pre-step", "step", "turn-stopping"])
def test_r31_end_when_no_job_runs_raises_unexpected_report(where):
    """R31, R26: EndMaintenance when no job runs -> UnexpectedReport, no change."""
    run = Run() if where == "idle" else running_at(where)
    run.rejects(EndMaintenance(), UnexpectedReport)
    run.rejects(EndMaintenance((HostRecord("host/x", 1),)), UnexpectedReport)


@pytest.mark.parametrize("where", ["idle", "pre-step", "step"])
def test_r31_end_when_no_job_runs_once_disposed_raises_agent_disposed(where):
    """R31, R25: the same EndMaintenance raises AgentDisposed once disposed."""
    run = Run() if where == "idle" else running_at(where)
    run(Dispose())
    run.rejects(EndMaintenance(), AgentDisposed)


def test_r31_a_second_end_is_unexpected():
    """R31: the job ended; another EndMaintenance answers nothing."""
    run = in_maintenance()
    run(EndMaintenance())
    run.rejects(EndMaintenance(), UnexpectedReport)


def test_r31_end_without_waking_work_goes_idle_and_keeps_quiet_input():
    """R31, R15: quiet input stays parked; status idle."""
    run = in_maintenance(queue(msg("q")))
    run(inject(msg("i")))
    t = run(EndMaintenance())
    assert t.durable == ()
    assert t.notifications == (StatusChanged("idle"),)
    assert run.state.next_turn == (quiet("q"),)
    assert run.state.next_step == (quiet("i"),)


def test_r31_end_with_pending_waking_work_opens_the_next_turn():
    """R31, R14, R19, D23: pending waking work opens turn 1 at the job's end: status
    maintenance -> running, ``turn/start``, the turn-boundary claim (next-step first, then
    the first next-turn entry, the parked one)."""
    run = in_maintenance(queue(msg("q")))
    run(inject(msg("i")))
    run(followup(msg("f")))
    run(steer(msg("s")))
    t = run(EndMaintenance())
    assert t.durable == (TurnStarted(1), claimed("next-step", 2), claimed("next-turn", 1))
    assert t.notifications == (
        StatusChanged("running"),
        InboxClaimed(msg("i"), 1),
        InboxClaimed(msg("s"), 1),
        InboxClaimed(msg("q"), 1),
    )
    assert run.awaiting == AwaitPreStep(1, 1, (msg("i"), msg("s"), msg("q")))
    assert run.state.next_turn == (waking("f"),)
    assert statuses(run.notes) == ["maintenance", "running"]


def test_r31_end_records_then_turn_start():
    """R30, R31: the job's records come first, then the turn it releases."""
    run = in_maintenance()
    run(followup(msg("f")))
    record = HostRecord("host/compaction", {"summary": "..."})
    t = run(EndMaintenance((record,)))
    assert t.durable == (record, TurnStarted(1), claimed("next-turn", 1))


# ----------------------------------------------------- nothing durable, crash


def test_r31_maintenance_writes_nothing_durable_of_its_own():
    """R31: the durable log of a job equals the log of the same inbox commands without it
    (until the turn the job held back starts)."""
    with_job = in_maintenance(queue(msg("q")))
    with_job.many(inject(msg("i")), followup(msg("f")), Remove("q"))
    with_job(Cancel(UserCause(), keep_inbox=True))
    without = Run()
    without.many(queue(msg("q")), inject(msg("i")))
    without_log = list(without.log)
    assert with_job.log[: len(without_log)] == without_log
    assert with_job.log[len(without_log) :] == [
        inserted("next-turn", 1, waking("f")),
        canceled("next-turn", 0, 1),
    ]


def test_r31_r27_log_cut_during_maintenance_without_waking_work_replays_idle():
    """R31, R27, D8: a log cut during a job without waking work replays as plain idle;
    Resume changes nothing."""
    live = in_maintenance(queue(msg("q")))
    run = Run(replay(live.log), live.log)
    assert run.state.status == "idle"
    assert not run.state.resume_required
    assert run.state.next_turn == (quiet("q"),)
    t = run(Resume())
    assert (t.durable, t.notifications) == ((), ())


def test_r31_r27_log_cut_during_maintenance_replays_stranded_and_resume_starts_the_work():
    """R31, R27: a job that held back waking work leaves a Stranded log (idle, needs
    Resume; any other command -> ResumeRequired); Resume opens the turn for it."""
    live = in_maintenance(queue(msg("q")))
    live(followup(msg("f")))
    live(Cancel(UserCause(), keep_inbox=True))
    run = Run(replay(live.log), list(live.log))
    assert run.state.status == "idle"
    assert run.state.resume_required
    assert run.state.abort_cause is None  # the job's abort was never durable
    run.rejects(followup(msg("x")), ResumeRequired)
    run.rejects(Cancel(UserCause()), ResumeRequired)
    t = run(Resume())
    assert t.durable == (TurnStarted(1), claimed("next-turn", 1))
    assert t.notifications == (StatusChanged("running"), InboxClaimed(msg("q"), 1))
    assert run.state.next_turn == (waking("f"),)


def test_r31_r27_log_cut_after_the_jobs_records_replays_stranded():
    """R27, R30, R31: a cut between a maintenance end's records and its ``turn/start``
    (same command, torn append) leaves the records and the waking work: Resume opens it."""
    live = in_maintenance()
    live(followup(msg("f")))
    record = HostRecord("host/compaction", "s")
    live(EndMaintenance((record,)))
    cut = live.log[: live.log.index(record) + 1]
    run = Run(replay(cut), list(cut))
    assert run.state.resume_required
    assert run.state.status == "idle"
    t = run(Resume())
    assert t.durable == (TurnStarted(1), claimed("next-turn", 1))


# --------------------------------------------------------------- I3, I8


def test_r31_i3_i8_hold_through_jobs_turns_cancels_and_dispose():
    """I3, I8 over a session mixing jobs, turns, cancels and the final dispose."""
    run = Run()
    script: list[Any] = [
        BeginMaintenance(),
        followup(msg("a")),
        EndMaintenance(),  # -> running
        "enter",
        "finish",
        "stop",  # -> idle
        BeginMaintenance(),
        EndMaintenance(),  # -> idle
        BeginMaintenance(),
        steer(msg("b")),
        Cancel(UserCause(), keep_inbox=True),
        EndMaintenance(),  # -> running
        PreStepDecided(2, 1, Reject()),  # -> idle
        queue(msg("c")),
        BeginMaintenance(),
        Dispose(),
        EndMaintenance(),  # -> idle, disposed
    ]
    for item in script:
        if item == "enter":
            run.enter()
        elif item == "finish":
            run.finish()
        elif item == "stop":
            run.stop()
        else:
            run(item)
        assert_i3(run)
        assert_i8(run.notes)
    assert statuses(run.notes) == [
        "maintenance",
        "running",
        "idle",
        "maintenance",
        "idle",
        "maintenance",
        "running",
        "idle",
        "maintenance",
        "idle",
    ]
    assert run.notes[-1] == Disposed()


def test_r31_reports_of_a_turn_during_maintenance_are_unexpected():
    """R26, R31: turn reports during a job answer nothing."""
    run = in_maintenance()
    run.rejects(PreStepDecided(1, 1, Reject()), UnexpectedReport)
    run.rejects(StepFinished(1, 1, Completed()), UnexpectedReport)
    run.rejects(TurnStoppingDone(1), UnexpectedReport)


def test_formats_v2_status_maintenance_json():
    """§8 v2: ``agent/status`` also takes ``"maintenance"``."""
    run = Run()
    t = run(BeginMaintenance())
    assert [notification_to_json(n) for n in t.notifications] == [
        {"type": "agent/status", "data": {"status": "maintenance"}}
    ]


def test_r31_begin_and_end_maintenance_codec_round_trip():
    """§9 v2: ``BeginMaintenance()``, ``EndMaintenance(records=())`` as commands."""
    for command in (BeginMaintenance(), EndMaintenance(), EndMaintenance(records=(REC,))):
        assert command_from_json(command_to_json(command)) == command
    assert command_to_json(BeginMaintenance()) == {"type": "begin-maintenance"}
    assert command_to_json(EndMaintenance()) == {"type": "end-maintenance"}


REC = HostRecord("host/summary", {"n": 1})
