"""Replay of the durable log and Resume after a crash (R10, R27, D8, D9, D11, D20, D22,
I4, I5, I12)."""

from __future__ import annotations

from typing import Any

import pytest

from inbox_core import (
    AgentState,
    AwaitPreStep,
    BlockedReason,
    CompletedReason,
    Continue,
    Entry,
    ErrorReason,
    InboxClaimed,
    InboxCoreError,
    InboxInserted,
    InboxSpliced,
    InterruptedReason,
    MessageAdmitted,
    PreStepDecided,
    PreStepFailed,
    Reject,
    ReplayError,
    Resume,
    StatusChanged,
    StepEnded,
    StepStarted,
    TurnEnded,
    TurnStarted,
    reduce,
    replay,
)
from tests.core.helpers import (
    Run,
    busy_session,
    canceled,
    claimed,
    followup,
    inject,
    inserted,
    msg,
    queue,
    snapshot,
    steer,
)


def quiet(mid: str, *contexts: str) -> Entry:
    return Entry(msg(mid), tuple(msg(c) for c in contexts), False)


def waking(mid: str, *contexts: str) -> Entry:
    return Entry(msg(mid), tuple(msg(c) for c in contexts), True)


def resumed(log: list[Any]) -> Run:
    """A driver over the state replayed from ``log`` (as after a crash)."""
    return Run(replay(log), log)


# ----------------------------------------------------------------------- R10


def test_r10_replay_of_a_busy_session_equals_the_live_projection():
    """R10, I4, I5: every event kind and reason; the fold reproduces the projection."""
    run = busy_session()
    reasons = [type(e.reason).__name__ for e in run.log if isinstance(e, TurnEnded)]
    assert reasons == [
        "MaxTokensReason",
        "BlockedReason",
        "ErrorReason",
        "AbortedReason",
        "ErrorReason",
    ]
    outcomes = {e.outcome for e in run.log if isinstance(e, InboxSpliced)}
    assert outcomes == {None, "canceled", "moved"}
    state = replay(run.log)
    assert state.projection() == run.state.projection()
    assert state.last_turn == 5
    assert state.status == "idle"
    assert not state.resume_required


def test_r10_replay_restores_both_lists_with_wakeup_flags_and_open_turn_and_step():
    """R10: lists with flags, last turn, open turn and step all come from the log."""
    run = Run()
    run(followup(msg("a")))
    run.enter()
    run(followup(msg("b"), [msg("bc")]))
    run(queue(msg("q")))
    run(steer(msg("s")))
    run(inject(msg("i")))
    state = replay(run.log)
    assert state.next_turn == (waking("b", "bc"), quiet("q"))
    assert state.next_step == (waking("s"), quiet("i"))
    assert state.last_turn == 1
    projection = state.projection()
    assert (projection.open_turn, projection.open_step) == (1, 1)
    assert state.status == "running"
    assert state.resume_required
    assert "bc" in state.inbox


def test_r10_replay_of_nothing_is_the_initial_state():
    """R10: the empty log folds to the initial projection, no resume needed."""
    state = replay([])
    assert state.projection() == AgentState.initial().projection()
    assert state.status == "idle"
    assert not state.resume_required


def test_i12_every_prefix_replays_and_resume_restores_quiescence():
    """I12, R27, I3, I4: a crash at any event boundary replays; Resume then leaves no
    open turn while idle and no waking work idle; its events keep replaying."""
    log = busy_session().log
    for cut in range(len(log) + 1):
        state = replay(log[:cut])
        t = reduce(state, Resume())
        after = t.state
        assert not after.resume_required
        assert after.turn_open == (after.status == "running")
        if after.status == "idle":
            assert not after.inbox.has_waking
        else:
            assert isinstance(after.awaiting, AwaitPreStep)
        assert replay([*log[:cut], *t.durable]).projection() == after.projection()


# ----------------------------------------------------------------------- R27


def test_r27_resume_closes_an_orphaned_turn_with_an_open_step():
    """R27, D11: step/end, turn/end interrupted, then idle (announced)."""
    source = Run()
    source(followup(msg("a")))
    source.enter()
    run = resumed(source.log)
    assert run.state.status == "running"
    t = run(Resume())
    assert t.durable == (StepEnded(1, 1), TurnEnded(1, InterruptedReason()))
    assert t.notifications == (StatusChanged("idle"),)
    s = t.state
    assert (s.status, s.turn_open, s.awaiting, s.resume_required) == ("idle", False, None, False)
    assert s.next_turn == s.next_step == ()


def test_r27_reports_of_the_interrupted_turn_are_stale_after_resume():
    """R27, R26: the crashed host's late report for turn 1 no longer answers anything."""
    from inbox_core import StepFinished, UnexpectedReport

    source = Run()
    source(followup(msg("a")))
    source.enter()
    run = resumed(source.log)
    run(Resume())
    run.rejects(StepFinished(1, 1, Continue()), UnexpectedReport)


def test_r27_resume_at_turn_stopping_writes_only_turn_end_interrupted():
    """R27: no step open and no claim pending -> only turn/end interrupted."""
    source = Run()
    source(followup(msg("a")))
    source.step_through()
    t = resumed(source.log)(Resume())
    assert t.durable == (TurnEnded(1, InterruptedReason()),)
    assert t.notifications == (StatusChanged("idle"),)


def test_r27_d20_resume_restores_an_undecided_claim_to_the_heads_then_opens_next_turn():
    """R27, D20: the unanswered first-boundary claim goes back to the head of each list it
    came from (next-step first), then pending waking work opens the next turn."""
    source = Run()
    source(queue(msg("q")))
    source(inject(msg("i")))
    source(followup(msg("f"), [msg("fc")]))  # claims i (next-step) and q (next-turn)
    source(inject(msg("j")))
    source(queue(msg("k")))
    run = resumed(source.log)
    assert run.state.next_turn == (waking("f", "fc"), quiet("k"))
    t = run(Resume())
    assert t.durable == (
        TurnEnded(1, InterruptedReason()),
        inserted("next-step", 0, quiet("i")),
        inserted("next-turn", 0, quiet("q")),
        TurnStarted(2),
        claimed("next-step", 2),
        claimed("next-turn", 1),
    )
    assert t.notifications == (
        InboxInserted(msg("i")),
        InboxInserted(msg("q")),
        InboxClaimed(msg("i"), 2),
        InboxClaimed(msg("j"), 2),
        InboxClaimed(msg("q"), 2),
    )
    assert t.state.awaiting == AwaitPreStep(2, 1, (msg("i"), msg("j"), msg("q")))
    assert t.state.next_turn == (waking("f", "fc"), quiet("k"))


def test_r27_resume_restores_a_between_steps_claim_with_its_wakeup_flags():
    """R27: a steer-forced boundary claim (quiet i, waking s with context) is restored
    with its flags, and the waking entry then opens turn 2."""
    source = Run()
    source(followup(msg("a")))
    source.enter()
    source(inject(msg("i")))
    source(steer(msg("s"), [msg("sc")]))
    source.finish()  # claims i and s for step 2; crash before the decision
    run = resumed(source.log)
    t = run(Resume())
    assert t.durable == (
        TurnEnded(1, InterruptedReason()),
        inserted("next-step", 0, quiet("i"), waking("s", "sc")),
        TurnStarted(2),
        claimed("next-step", 2),
    )
    assert t.notifications == (
        InboxInserted(msg("i")),
        InboxInserted(msg("sc")),
        InboxInserted(msg("s")),
        InboxClaimed(msg("i"), 2),
        InboxClaimed(msg("sc"), 2),
        InboxClaimed(msg("s"), 2),
    )


def test_r27_restored_quiet_claim_goes_to_the_head_and_the_agent_goes_idle():
    """R27, I3: a restored claim with no waking entry stays parked, before newer input."""
    source = Run()
    source(followup(msg("a")))
    source.enter()
    source(inject(msg("i")))
    source.finish(Continue())  # claims i at the boundary of step 2
    source(inject(msg("j")))
    t = resumed(source.log)(Resume())
    assert t.durable == (TurnEnded(1, InterruptedReason()), inserted("next-step", 0, quiet("i")))
    assert t.notifications == (InboxInserted(msg("i")), StatusChanged("idle"))
    assert t.state.next_step == (quiet("i"), quiet("j"))
    assert t.state.status == "idle"


def test_r27_a_decided_claim_is_not_restored():
    """R27: once step/start answered the claim, its messages were admitted: nothing returns."""
    source = Run()
    source(inject(msg("i")))
    source(followup(msg("a")))
    source.enter()
    t = resumed(source.log)(Resume())
    assert t.durable == (StepEnded(1, 1), TurnEnded(1, InterruptedReason()))
    assert t.state.next_step == ()


def test_r27_d9_restore_leaves_out_messages_whose_ids_are_pending_again():
    """D9, R4: a claimed message re-sent after the claim stays out of the restore (here i,
    an entry of its own, and fc, a context: f comes back without it); the others are
    restored, and f, waking, opens turn 2 at once (R27, R19)."""
    source = Run()
    source(inject(msg("i")))
    source(inject(msg("j")))
    source(followup(msg("f"), [msg("fc")]))  # claims i, j and f(fc)
    source(queue(msg("i")))  # id i pending again
    source(queue(msg("x"), [msg("fc")]))  # fc pending again, as a context
    t = resumed(source.log)(Resume())
    assert t.durable == (
        TurnEnded(1, InterruptedReason()),
        inserted("next-step", 0, quiet("j")),
        inserted("next-turn", 0, waking("f")),
        TurnStarted(2),
        claimed("next-step", 1),
        claimed("next-turn", 1),
    )
    assert t.notifications == (
        InboxInserted(msg("j")),
        InboxInserted(msg("f")),
        InboxClaimed(msg("j"), 2),
        InboxClaimed(msg("f"), 2),
    )
    assert t.state.next_step == ()
    assert t.state.next_turn == (quiet("i"), quiet("x", "fc"))


def test_r27_crash_between_turn_start_and_its_claim():
    """R27, I12: a log cut right after turn/start -> interrupted, then the next turn."""
    source = Run()
    source(followup(msg("f")))
    log = source.log[:2]
    assert log == [inserted("next-turn", 0, waking("f")), TurnStarted(1)]
    t = resumed(log)(Resume())
    assert t.durable == (TurnEnded(1, InterruptedReason()), TurnStarted(2), claimed("next-turn", 1))
    assert t.notifications == (InboxClaimed(msg("f"), 2),)
    assert t.state.awaiting == AwaitPreStep(2, 1, (msg("f"),))


def test_r27_d8_resume_of_idle_waking_work_opens_the_turn():
    """D8: a log cut between a waking insertion and its turn/start needs Resume."""
    source = Run()
    source(followup(msg("f")))
    log = source.log[:1]
    run = resumed(log)
    assert run.state.status == "idle"
    assert run.state.resume_required
    t = run(Resume())
    assert t.durable == (TurnStarted(1), claimed("next-turn", 1))
    assert t.notifications == (StatusChanged("running"), InboxClaimed(msg("f"), 1))


def test_r27_d8_resume_when_none_is_needed_is_a_noop():
    """D8: initial, cleanly closed and live states ignore Resume."""
    closed = Run()
    closed(followup(msg("a")))
    closed.run_turn_to_end()
    live = Run()
    live(followup(msg("a")))
    for state in (AgentState.initial(), replay(closed.log), closed.state, live.state):
        before = snapshot(state)
        t = reduce(state, Resume())
        assert (t.durable, t.notifications) == ((), ())
        assert t.state is state
        assert snapshot(state) == before


def test_r27_agent_works_normally_after_resume():
    """R27: after Resume the next turn runs to completion and replays."""
    source = Run()
    source(followup(msg("a")))
    source(followup(msg("b")))
    run = resumed(source.log)
    run(Resume())
    while run.state.status == "running":
        run.run_turn_to_end()
    ends = [e for e in run.log if isinstance(e, TurnEnded)]
    assert ends == [
        TurnEnded(1, InterruptedReason()),
        TurnEnded(2, CompletedReason()),
        TurnEnded(3, CompletedReason()),
    ]


# ------------------------------------------------------------------- ReplayError


def base_log() -> list[Any]:
    """[0 insert a(ac), 1 turn/start 1, 2 claim, 3 step/start, 4 um ac, 5 um a,
    6 step/end, 7 turn/end completed]"""
    run = Run()
    run(followup(msg("a"), [msg("ac")]))
    run.step_through()
    run.stop()
    assert [e.type for e in run.log] == [
        "agent/inbox/spliced",
        "turn/start",
        "agent/inbox/spliced",
        "step/start",
        "user/message",
        "user/message",
        "step/end",
        "turn/end",
    ]
    return run.log


def bad(prefix: int, *events: Any) -> list[Any]:
    return [*base_log()[:prefix], *events]


BAD_LOGS = [
    pytest.param(lambda: bad(2, TurnStarted(1)), 2, id="duplicate-turn-start"),
    pytest.param(lambda: bad(3, TurnStarted(2)), 3, id="turn-start-while-open"),
    pytest.param(
        lambda: bad(8, inserted("next-turn", 0, waking("b")), TurnStarted(3)),
        9,
        id="turn-number-skipped",
    ),
    pytest.param(
        lambda: bad(8, inserted("next-turn", 0, waking("b")), TurnStarted(1)),
        9,
        id="turn-number-reused",
    ),
    pytest.param(lambda: [TurnStarted(1)], 0, id="turn-start-nothing-pending"),
    pytest.param(
        lambda: [inserted("next-turn", 0, quiet("q")), TurnStarted(1)],
        1,
        id="turn-start-only-quiet-pending",
    ),
    pytest.param(lambda: bad(3, StepEnded(1, 1)), 3, id="step-end-without-step-start"),
    pytest.param(lambda: bad(6, StepEnded(1, 2)), 6, id="step-end-wrong-step"),
    pytest.param(lambda: bad(6, StepEnded(2, 1)), 6, id="step-end-wrong-turn"),
    pytest.param(lambda: bad(7, StepEnded(1, 1)), 7, id="step-end-twice"),
    pytest.param(lambda: bad(3, StepStarted(1, 2)), 3, id="step-start-skips"),
    pytest.param(lambda: bad(3, StepStarted(2, 1)), 3, id="step-start-wrong-turn"),
    pytest.param(lambda: bad(6, StepStarted(1, 2)), 6, id="step-start-while-step-open"),
    pytest.param(lambda: bad(8, StepStarted(1, 2)), 8, id="step-start-after-turn-end"),
    pytest.param(lambda: [MessageAdmitted(msg("x"))], 0, id="user-message-first"),
    pytest.param(lambda: bad(3, MessageAdmitted(msg("x"))), 3, id="user-message-at-boundary"),
    pytest.param(lambda: bad(7, MessageAdmitted(msg("x"))), 7, id="user-message-after-step-end"),
    pytest.param(
        lambda: bad(6, inserted("next-step", 0, quiet("i")), MessageAdmitted(msg("x"))),
        7,
        id="user-message-after-a-splice",
    ),
    pytest.param(
        lambda: bad(7, TurnEnded(1, CompletedReason()), TurnEnded(1, CompletedReason())),
        8,
        id="turn-end-twice",
    ),
    pytest.param(lambda: bad(6, TurnEnded(1, CompletedReason())), 6, id="turn-end-step-open"),
    pytest.param(lambda: bad(3, TurnEnded(2, CompletedReason())), 3, id="turn-end-wrong-turn"),
    pytest.param(lambda: [TurnEnded(1, CompletedReason())], 0, id="turn-end-nothing-open"),
    pytest.param(
        lambda: bad(1, inserted("next-turn", 5, quiet("x"))), 1, id="splice-start-out-of-range"
    ),
    pytest.param(lambda: bad(1, canceled("next-turn", 0, 2)), 1, id="splice-removes-too-many"),
    pytest.param(lambda: bad(1, canceled("next-turn", 1, 1)), 1, id="splice-removes-past-end"),
    pytest.param(lambda: bad(1, canceled("next-step", 0, 1)), 1, id="splice-empty-list"),
    pytest.param(lambda: bad(1, inserted("next-step", 0, quiet("a"))), 1, id="duplicate-id"),
    pytest.param(lambda: [InboxSpliced("next-turn", 0, 0, (), None)], 0, id="empty-splice"),
    pytest.param(
        lambda: [InboxSpliced("next-turn", 0, 0, (quiet("x"),), "canceled")],
        0,
        id="outcome-on-insertion",
    ),
    pytest.param(
        lambda: bad(1, inserted("next-step", 0, quiet("ac"))), 1, id="duplicate-context-id"
    ),
    pytest.param(
        lambda: bad(1, inserted("next-step", 0, quiet("x", "a"))), 1, id="duplicate-as-context"
    ),
    pytest.param(
        lambda: bad(0, inserted("next-step", 0, quiet("x"), quiet("x"))),
        0,
        id="duplicate-in-one-splice",
    ),
    pytest.param(
        lambda: [inserted("next-turn", 0, quiet("q")), claimed("next-turn", 1)],
        1,
        id="claim-while-idle",
    ),
    pytest.param(
        lambda: bad(6, inserted("next-step", 0, quiet("i")), claimed("next-step", 1)),
        7,
        id="claim-inside-a-step",
    ),
    pytest.param(
        lambda: [
            inserted("next-turn", 0, waking("a"), waking("b")),
            TurnStarted(1),
            InboxSpliced("next-turn", 1, 1, (), None),
        ],
        2,
        id="claim-not-at-head",
    ),
    pytest.param(
        lambda: [
            inserted("next-turn", 0, waking("a"), waking("b")),
            TurnStarted(1),
            claimed("next-turn", 2),
        ],
        2,
        id="claim-two-next-turn-entries",
    ),
    pytest.param(
        lambda: [
            inserted("next-turn", 0, waking("a"), waking("b")),
            TurnStarted(1),
            claimed("next-turn", 1),
            claimed("next-turn", 1),
        ],
        3,
        id="second-next-turn-claim-in-a-turn",
    ),
    pytest.param(
        lambda: [
            inserted("next-step", 0, waking("a"), quiet("b")),
            TurnStarted(1),
            claimed("next-step", 1),
        ],
        2,
        id="partial-next-step-claim",
    ),
    pytest.param(
        lambda: [
            inserted("next-turn", 0, waking("a")),
            TurnStarted(1),
            InboxSpliced("next-turn", 0, 1, (quiet("b"),), None),
        ],
        2,
        id="claim-with-insertion",
    ),
    pytest.param(lambda: bad(3, object()), 3, id="unknown-event-object"),
    pytest.param(lambda: bad(1, InboxInserted(msg("x"))), 1, id="notification-in-log"),
    pytest.param(lambda: bad(0, None), 0, id="none-event"),
]


@pytest.mark.parametrize(("build", "seq"), BAD_LOGS)
def test_r10_inconsistent_logs_raise_replay_error_naming_the_event(build, seq):
    """R10, D22, I4: ReplayError.seq is the index of the first bad event; the prefix
    before it replays fine."""
    log = build()
    with pytest.raises(ReplayError) as info:
        replay(log)
    assert info.value.seq == seq
    assert f"event {seq}" in str(info.value)
    assert isinstance(info.value, InboxCoreError)
    replay(log[:seq])  # everything before the bad event is consistent


def test_r10_replay_error_leaves_the_input_log_untouched():
    """R10: replay only reads; a failed fold changes nothing (nothing partially applied)."""
    log = bad(2, TurnStarted(1))
    copy = list(log)
    with pytest.raises(ReplayError):
        replay(log)
    assert log == copy
    assert replay(log[:2]).projection() == replay(copy[:2]).projection()


def test_r10_replay_accepts_any_iterable():
    """R10: the fold consumes an iterator as well as a list."""
    log = busy_session().log
    assert replay(iter(log)).projection() == replay(log).projection()


def test_r10_replay_of_a_log_with_a_dropped_decision_event_fails_at_the_right_seq():
    """R10, I4: removing step/start from a real log makes its user/message the bad event."""
    log = base_log()
    broken = log[:3] + log[4:]
    with pytest.raises(ReplayError) as info:
        replay(broken)
    assert info.value.seq == 3


def test_r27_resume_replays_blocked_and_error_turns_without_resume():
    """R27, D8: a log whose turns all closed needs no Resume."""
    run = Run()
    run(followup(msg("a")))
    run(PreStepDecided(1, 1, Reject()))
    run(followup(msg("b")))
    run(PreStepFailed(2, 1, "x", "y"))
    state = replay(run.log)
    assert not state.resume_required
    assert [e.reason for e in run.log if isinstance(e, TurnEnded)] == [
        BlockedReason(),
        ErrorReason("x", "y"),
    ]
