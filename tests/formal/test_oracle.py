"""The naive oracle agrees with the reducer, and with the brief, on hand-written scenarios.

``play`` runs each command through ``reduce`` and ``NaiveInbox`` side by side
and asserts, after every command, that both accept or both reject it with the
same error class, and that the oracle predicted exactly the reducer's lists
(with wakeup flags), status, awaited action, abort cause, durable events and
notifications. Each scenario then asserts what the brief says about it, so the
oracle itself is checked against the rules, not only against the reducer.
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs
import pytest

from inbox_core import (
    AbortedReason,
    AgentDisposed,
    AgentError,
    AgentState,
    AwaitPreStep,
    AwaitStep,
    AwaitTurnStopping,
    BeginMaintenance,
    Cancel,
    CancelRequested,
    Clear,
    Command,
    Completed,
    CompletedReason,
    ConsumedFate,
    Continue,
    Dispose,
    Disposed,
    DisposedCause,
    DuplicateMessageId,
    DurableEvent,
    EndMaintenance,
    Enter,
    Entry,
    ErrorReason,
    Failed,
    GoalSource,
    HookCause,
    HostRecord,
    InboxClaimed,
    InboxCoreError,
    InboxDiscarded,
    InboxInserted,
    InboxMoved,
    InboxSpliced,
    InterruptedReason,
    InvalidInput,
    MaintenanceUnavailable,
    MaxTokens,
    MaxTokensReason,
    Move,
    Notification,
    ParentCause,
    PreStepDecided,
    PreStepFailed,
    Reject,
    Remove,
    Replace,
    Resume,
    ResumeRequired,
    Send,
    Splice,
    StatusChanged,
    SteerUnavailable,
    StepEnded,
    StepFinished,
    StepStarted,
    TurnAborted,
    TurnEnded,
    TurnStarted,
    TurnStoppingDone,
    UnexpectedReport,
    UserCause,
    UserMessage,
    fates,
    goal_rounds,
    reduce,
    replay,
)
from inbox_core import commands as intents
from inbox_core.testing import NaiveInbox, check_fates, items_of

REC = HostRecord("host/reply", {"text": "hi"})
REC2 = HostRecord("host/compaction", ["summary"])


def m(message_id: str) -> UserMessage:
    return UserMessage(message_id, message_id)


def followup(message_id: str, *contexts: str) -> Send:
    return intents.followup(m(message_id), tuple(map(m, contexts)))


def queue(message_id: str, *contexts: str) -> Send:
    return intents.queue(m(message_id), tuple(map(m, contexts)))


def steer(message_id: str, *contexts: str) -> Send:
    return intents.steer(m(message_id), tuple(map(m, contexts)))


def inject(message_id: str) -> Send:
    return intents.inject(m(message_id))


def enter(turn: int, step: int, *ids: str) -> PreStepDecided:
    return PreStepDecided(turn, step, Enter(tuple(map(m, ids))))


@attrs.frozen
class Raises:
    """A command both implementations must reject with ``error``."""

    command: object
    error: type[InboxCoreError]


@attrs.define
class Played:
    state: AgentState
    oracle: NaiveInbox
    durable: list[DurableEvent] = attrs.Factory(list)
    notes: list[Notification] = attrs.Factory(list)

    def pending(self) -> tuple[list[str], list[str]]:
        """Primary ids of next-turn and next-step, with a ``*`` on waking entries."""

        def show(entries: Sequence[Entry]) -> list[str]:
            return [e.message.id + ("*" if e.wakeup else "") for e in entries]

        return show(self.state.next_turn), show(self.state.next_step)


def play(*commands: object, start: Played | None = None) -> Played:
    played = start or Played(AgentState.initial(), NaiveInbox())
    for step in commands:
        command, expected = (step.command, step.error) if isinstance(step, Raises) else (step, None)
        oracle_error = reducer_error = None
        try:
            played.oracle.apply(command)
        except InboxCoreError as error:
            oracle_error = error
        try:
            transition = reduce(played.state, command)  # type: ignore[arg-type]
        except InboxCoreError as error:
            reducer_error = error
        assert type(reducer_error) is type(oracle_error), (command, reducer_error, oracle_error)
        if expected is not None:
            assert isinstance(reducer_error, expected), (command, reducer_error)
            continue
        assert reducer_error is None, (command, reducer_error)
        played.state = transition.state
        played.durable += transition.durable
        played.notes += transition.notifications
        diffs = played.oracle.differences(
            played.state, transition.durable, transition.notifications
        )
        assert not diffs, (command, diffs)
        check_fates(played.durable)  # R32 after every command
    return played


# ---------------------------------------------------------------------- delivery


def test_followup_while_idle_opens_a_turn_and_claims_it() -> None:
    played = play(followup("a", "ctx"))
    assert played.state.awaiting == AwaitPreStep(1, 1, (m("ctx"), m("a")))
    assert played.pending() == ([], [])
    assert played.notes[:3] == [
        InboxInserted(m("ctx")),
        InboxInserted(m("a")),
        StatusChanged("running"),
    ]


def test_parked_quiet_entries_ride_along_the_next_waking_send() -> None:
    played = play(queue("q"), inject("i"), followup("f"))
    # D23: the parked next-turn entry is claimed first; f gets the next turn
    assert played.state.awaiting == AwaitPreStep(1, 1, (m("i"), m("q")))
    assert played.pending() == (["f*"], [])
    played = play(enter(1, 1, "i", "q"), StepFinished(1, 1, Completed()), start=played)
    played = play(TurnStoppingDone(1), start=played)
    assert played.state.awaiting == AwaitPreStep(2, 1, (m("f"),))


def test_idle_steer_claims_a_parked_queued_prompt_in_the_same_batch() -> None:
    played = play(queue("q"), steer("s", "c"))
    assert played.state.awaiting == AwaitPreStep(1, 1, (m("c"), m("s"), m("q")))


def test_injection_while_running_waits_for_a_boundary_the_turn_reaches_anyway() -> None:
    played = play(followup("a"), enter(1, 1, "a"), inject("i"))
    assert played.state.awaiting == AwaitStep(1, 1)
    played = play(StepFinished(1, 1, Completed()), start=played)
    assert played.state.awaiting == AwaitTurnStopping(1)  # the injection forces no step (I2)
    played = play(TurnStoppingDone(1), start=played)
    assert played.state.status == "idle"
    assert played.pending() == ([], ["i"])  # parked for a later waking delivery


def test_injection_rides_a_continuation() -> None:
    played = play(followup("a"), enter(1, 1, "a"), inject("i"), StepFinished(1, 1, Continue()))
    assert played.state.awaiting == AwaitPreStep(1, 2, (m("i"),))
    played = play(enter(1, 2), start=played)  # empty batch proceeds after Continue (R17)
    assert played.state.awaiting == AwaitStep(1, 2)


def test_steering_after_the_last_step_forces_another_step() -> None:
    played = play(followup("a"), enter(1, 1, "a"), steer("s"), StepFinished(1, 1, MaxTokens()))
    assert played.state.awaiting == AwaitPreStep(1, 2, (m("s"),))
    played = play(
        enter(1, 2, "s"), StepFinished(1, 2, Completed()), TurnStoppingDone(1), start=played
    )
    assert played.durable[-1] == TurnEnded(1, MaxTokensReason())  # sticky (R18)


def test_turn_stopping_steering() -> None:
    played = play(followup("a"), enter(1, 1, "a"), StepFinished(1, 1, Completed()), steer("s"))
    assert played.state.awaiting == AwaitTurnStopping(1)
    played = play(TurnStoppingDone(1), start=played)
    assert played.state.awaiting == AwaitPreStep(1, 2, (m("s"),))
    played = play(enter(1, 2), start=played)  # an empty batch ends an ending turn
    assert played.state.status == "idle"


def test_one_send_one_turn() -> None:
    played = play(followup("a"), followup("b"), enter(1, 1, "a"), StepFinished(1, 1, Completed()))
    played = play(TurnStoppingDone(1), start=played)
    assert played.state.awaiting == AwaitPreStep(2, 1, (m("b"),))  # R19, R20


# ------------------------------------------------------------ pre-step and steps


def test_reject_ends_the_turn_blocked_with_no_step() -> None:
    played = play(followup("a"), PreStepDecided(1, 1, Reject()))
    assert played.state.status == "idle"
    assert not any(e.type == "step/start" for e in played.durable)


def test_pre_step_failure_closes_the_turn_error_and_keeps_the_batch_removed() -> None:
    played = play(followup("a"), PreStepFailed(1, 1, "boom", "E1"))
    assert played.durable[-1] == TurnEnded(1, ErrorReason("boom", "E1"))
    assert played.pending() == ([], [])


def test_failed_step_ends_the_turn_even_with_steering_pending() -> None:
    played = play(followup("a"), enter(1, 1, "a"), steer("s"), StepFinished(1, 1, Failed("x", "E")))
    # D21: the steer then opens turn 2
    assert played.state.awaiting == AwaitPreStep(2, 1, (m("s"),))


def test_rewritten_extra_and_duplicate_batches() -> None:
    played = play(followup("a"), PreStepDecided(1, 1, Enter((m("b"), m("extra")))))
    assert played.state.awaiting == AwaitStep(1, 1)
    played = play(
        StepFinished(1, 1, Continue()),
        Raises(PreStepDecided(1, 2, Enter((m("x"), m("x")))), DuplicateMessageId),
        start=played,
    )
    assert played.state.awaiting == AwaitPreStep(1, 2, ())


def test_stale_and_wrong_phase_reports_change_nothing() -> None:
    played = play(
        followup("a"),
        Raises(StepFinished(1, 1, Completed()), UnexpectedReport),
        Raises(enter(1, 2), UnexpectedReport),
        Raises(enter(2, 1), UnexpectedReport),
        Raises(TurnStoppingDone(1), UnexpectedReport),
        Raises("not a command", InvalidInput),
    )
    assert played.state.awaiting == AwaitPreStep(1, 1, (m("a"),))


# ------------------------------------------------------------------------- edits


def test_splice_normalization_and_noop() -> None:
    q = [Entry(m(i), (), False) for i in "abc"]
    played = play(Splice("next-turn", 0, 0, tuple(q)), Splice("next-turn", -2, 1, ()))
    assert played.pending() == (["a", "c"], [])
    played = play(Splice("next-turn", 9, -3, ()), Splice("next-step", -9, 9, ()), start=played)
    assert played.pending() == (["a", "c"], [])
    assert played.durable[-1] == InboxSpliced("next-turn", 1, 1, (), "canceled")
    played = play(
        Raises(Splice("next-step", 0, 0, (Entry(m("a"), (), False),)), DuplicateMessageId),
        start=played,
    )
    played = play(Splice("next-turn", 0, 1, (Entry(m("a"), (), True),)), start=played)
    assert played.state.status == "running"  # a waking splice while idle wakes (R13)


def test_replace_keeps_contexts_and_wakeup_and_may_change_identity() -> None:
    played = play(queue("q", "c"), Replace("q", m("r")))
    assert played.state.next_turn == (Entry(m("r"), (m("c"),), False),)
    assert played.notes[-2:] == [InboxDiscarded(m("q")), InboxInserted(m("r"))]  # D4
    played = play(
        Replace("c", m("z")),
        Remove("c"),
        Raises(Replace("r", m("c")), DuplicateMessageId),
        start=played,
    )
    assert played.state.next_turn == (
        Entry(m("r"), (m("c"),), False),
    )  # D3: contexts are not entries


def test_remove_and_clear() -> None:
    played = play(queue("q", "c"), inject("i"), Remove("q"), Remove("q"), inject("j"), Clear())
    assert played.pending() == ([], [])
    assert [type(n) for n in played.notes[-2:]] == [InboxDiscarded, InboxDiscarded]


def test_move_promotion_needs_a_live_turn() -> None:
    played = play(
        queue("q"), Raises(Move("q", "next-step"), SteerUnavailable), Move("q", "next-turn")
    )
    played = play(followup("a"), start=played)  # D23: q is claimed first
    played = play(queue("r", "c"), Move("r", "next-step"), start=played)
    assert played.pending() == (["a*"], ["r*"])
    assert played.notes[-2:] == [InboxMoved(m("c"), "next-step"), InboxMoved(m("r"), "next-step")]
    played = play(Move("r", "next-turn"), Cancel(keep_inbox=True), start=played)
    assert played.pending() == (["a*", "r*"], [])
    played = play(Raises(Move("r", "next-step"), SteerUnavailable), start=played)  # aborted


# ------------------------------------------------------------- cancel, dispose


def test_keep_inbox_cancel_then_kept_work_opens_the_next_turn() -> None:
    played = play(followup("a"), followup("b"), Cancel(ParentCause(), keep_inbox=True))
    assert played.pending() == (["b*"], [])
    played = play(enter(1, 1, "a"), start=played)  # content ignored (D6)
    assert TurnEnded(1, AbortedReason(ParentCause())) in played.durable
    assert played.state.awaiting == AwaitPreStep(2, 1, (m("b"),))


def test_sends_after_an_abort_wait_for_the_aborted_turn_end() -> None:
    played = play(followup("a"), Cancel(), followup("b"))
    assert played.state.awaiting == AwaitPreStep(1, 1, (m("a"),))
    played = play(PreStepFailed(1, 1, "x", "y"), start=played)  # D15: aborted, not error
    assert TurnEnded(1, AbortedReason(UserCause())) in played.durable
    assert played.state.awaiting == AwaitPreStep(2, 1, (m("b"),))


def test_repeated_cancels_keep_the_first_cause() -> None:
    played = play(followup("a"), Cancel(ParentCause()), queue("q"), Cancel(HookCause("h")))
    assert played.state.abort_cause == ParentCause()
    assert played.pending() == ([], [])
    assert played.notes[-2:] == [CancelRequested(HookCause("h")), InboxDiscarded(m("q"))]
    played = play(Cancel(), start=played)  # nothing to clear or abort: announces nothing
    assert played.notes[-1] == InboxDiscarded(m("q"))


def test_dispose_during_a_step() -> None:
    played = play(followup("a"), enter(1, 1, "a"), queue("q"), Dispose())
    assert played.notes[-2:] == [CancelRequested(DisposedCause()), InboxDiscarded(m("q"))]
    played = play(
        Raises(followup("b"), AgentDisposed), Raises(Cancel(), AgentDisposed), start=played
    )
    played = play(StepFinished(1, 1, Completed()), start=played)
    assert played.notes[-2:] == [StatusChanged("idle"), Disposed()]  # D5
    played = play(Raises(TurnStoppingDone(1), AgentDisposed), start=played)  # D16


def test_dispose_while_idle_announces_at_once() -> None:
    played = play(Dispose())
    assert played.notes == [Disposed()]
    play(Raises(Resume(), AgentDisposed), start=played)


# ------------------------------------------------------------------------ resume


def restart(played: Played, cut: int) -> Played:
    prefix = played.durable[:cut]
    return Played(replay(prefix), NaiveInbox.from_log(prefix), list(prefix))


def test_resume_restores_an_undecided_claim() -> None:
    played = play(queue("q"), steer("s", "c"), followup("f"))
    restarted = restart(played, len(played.durable))
    assert restarted.state.status == "running"
    restarted = play(Raises(followup("x"), ResumeRequired), Resume(), start=restarted)
    assert TurnEnded(1, InterruptedReason()) in restarted.durable
    # restored at the heads, next-step first (D20), then claimed again by turn 2
    assert restarted.state.awaiting == AwaitPreStep(2, 1, (m("c"), m("s"), m("q")))
    assert restarted.pending() == (["f*"], [])


def test_resume_after_a_decided_claim_restores_nothing() -> None:
    played = play(followup("a"), enter(1, 1, "a"), inject("i"))
    restarted = play(Resume(), start=restart(played, len(played.durable)))
    assert restarted.state.status == "idle"
    assert restarted.pending() == ([], ["i"])
    assert restarted.notes == [StatusChanged("idle")]  # D11


def test_resume_does_not_restore_an_id_sent_again() -> None:
    played = play(followup("a"), queue("a2"))  # turn 1 claimed a, no decision yet
    log = [*played.durable, InboxSpliced("next-turn", 1, 0, (Entry(m("a"), (), False),))]
    restarted = Played(replay(log), NaiveInbox.from_log(log), list(log))
    restarted = play(Resume(), start=restarted)  # D9: the newer pending "a" wins
    assert TurnEnded(1, InterruptedReason()) in restarted.durable
    assert restarted.pending() == (["a2", "a"], [])


def test_resume_of_waking_work_cut_before_its_turn() -> None:
    played = play(followup("a"))
    restarted = play(Resume(), start=restart(played, 1))  # after the splice, before turn/start
    assert restarted.state.awaiting == AwaitPreStep(1, 1, (m("a"),))
    assert items_of(restarted.state.next_turn) == restarted.oracle.next_turn == []


def test_resume_on_a_live_state_is_a_noop() -> None:
    played = play(followup("a"), Resume())
    assert played.durable[-1].type == "agent/inbox/spliced"


@pytest.mark.parametrize("cut", range(12))
def test_every_cut_of_a_turn_resumes_the_same_in_both(cut: int) -> None:
    commands: list[Command] = [
        queue("q"),
        steer("s", "c"),
        enter(1, 1, "c", "s", "q"),
        inject("i"),
        StepFinished(1, 1, Continue()),
        enter(1, 2, "i"),
        StepFinished(1, 2, Completed()),
        TurnStoppingDone(1),
    ]
    played = play(*commands)
    assert cut <= len(played.durable)
    play(Resume(), start=restart(played, cut))


# ----------------------------------------------------------------- v2: turn/abort


def test_r23_the_first_cancel_writes_turn_abort_after_its_splices() -> None:
    played = play(followup("a"), queue("q"), Cancel(ParentCause()))
    assert played.durable[-2:] == [
        InboxSpliced("next-turn", 0, 1, (), "canceled"),
        TurnAborted(1, ParentCause()),
    ]
    played = play(queue("r"), Cancel(), Dispose(), start=played)  # no second turn/abort
    assert [e for e in played.durable if isinstance(e, TurnAborted)] == [
        TurnAborted(1, ParentCause())
    ]
    assert played.state.abort_cause == ParentCause()  # R25 v2: dispose keeps the cause
    played = play(enter(1, 1, "a"), start=played)
    assert played.durable[-1] == TurnEnded(1, AbortedReason(ParentCause()))
    assert played.notes[-2:] == [StatusChanged("idle"), Disposed()]


def test_r23_dispose_aborts_a_live_turn_durably() -> None:
    played = play(followup("a"), enter(1, 1, "a"), Dispose())
    assert played.durable[-1] == TurnAborted(1, DisposedCause())
    assert played.notes[-1] == CancelRequested(DisposedCause())
    played = play(StepFinished(1, 1, Continue()), start=played)  # content ignored (D6)
    assert played.durable[-2:] == [StepEnded(1, 1), TurnEnded(1, AbortedReason(DisposedCause()))]


def test_r23_r32_an_aborted_turn_consumes_its_undecided_claim() -> None:
    played = play(queue("q"), steer("s", "c"), Cancel(keep_inbox=True), enter(1, 1, "s"))
    assert played.durable[-1] == TurnEnded(1, AbortedReason(UserCause()))
    assert played.pending() == ([], [])  # never back in the inbox in a running process
    reason = AbortedReason(UserCause())
    assert {i: fates(played.durable)[i] for i in "qsc"} == dict.fromkeys(
        "qsc", ConsumedFate(1, reason)
    )


def test_r23_a_pre_step_failure_consumes_its_claim() -> None:
    played = play(followup("a", "ctx"), PreStepFailed(1, 1, "boom", "E1"))
    assert fates(played.durable) == dict.fromkeys(
        ("ctx", "a"), ConsumedFate(1, ErrorReason("boom", "E1"))
    )


# -------------------------------------------------------------------- v2: resume


def test_r27_resume_closes_an_aborted_orphan_aborted_and_restores_nothing() -> None:
    played = play(queue("q"), steer("s"), followup("f"), Cancel(HookCause("h"), keep_inbox=True))
    restarted = restart(played, len(played.durable))
    assert restarted.state.status == "running"
    restarted = play(Resume(), start=restarted)
    reason = AbortedReason(HookCause("h"))
    assert restarted.durable[len(played.durable)] == TurnEnded(1, reason)
    assert not any(
        isinstance(e, InboxSpliced) and e.inserted for e in restarted.durable[len(played.durable) :]
    )
    # the kept followup opens turn 2; s and q stay consumed by turn 1
    assert restarted.state.awaiting == AwaitPreStep(2, 1, (m("f"),))
    assert fates(restarted.durable)["q"] == ConsumedFate(1, reason)


def test_r27_resume_closes_an_aborted_open_step() -> None:
    played = play(followup("a"), enter(1, 1, "a"), Cancel(ParentCause()))
    restarted = play(Resume(), start=restart(played, len(played.durable)))
    assert restarted.durable[-2:] == [
        StepEnded(1, 1),
        TurnEnded(1, AbortedReason(ParentCause())),
    ]
    assert restarted.notes == [StatusChanged("idle")]


def test_r27_a_cut_before_turn_abort_resumes_interrupted() -> None:
    played = play(queue("q"), steer("s"), Cancel(keep_inbox=True))
    restarted = play(Resume(), start=restart(played, len(played.durable) - 1))
    assert TurnEnded(1, InterruptedReason()) in restarted.durable
    assert restarted.state.awaiting == AwaitPreStep(2, 1, (m("s"), m("q")))  # restored


# ----------------------------------------------------------------- v2: records


def test_r30_records_come_first_in_every_report() -> None:
    played = play(
        steer("s"),
        PreStepDecided(1, 1, Enter((m("s"),)), (REC,)),
        StepFinished(1, 1, Completed(), (REC2,)),
        TurnStoppingDone(1, (REC, REC2)),
    )
    assert played.durable[3:5] == [REC, StepStarted(1, 1)]
    assert played.durable[6:8] == [REC2, StepEnded(1, 1)]
    assert played.durable[-3:] == [REC, REC2, TurnEnded(1, CompletedReason())]
    played = play(followup("f"), PreStepFailed(2, 1, "x", "E", (REC,)), start=played)
    assert played.durable[-2:] == [REC, TurnEnded(2, ErrorReason("x", "E"))]


def test_r30_an_aborted_turn_s_closing_report_keeps_its_records() -> None:
    played = play(followup("a"), Cancel(), PreStepDecided(1, 1, Reject(), (REC,)))
    assert played.durable[-2:] == [REC, TurnEnded(1, AbortedReason(UserCause()))]


def test_r30_a_rejected_report_writes_no_records() -> None:
    play(
        followup("a"),
        Raises(StepFinished(1, 1, Completed(), (REC,)), UnexpectedReport),
        Raises(PreStepDecided(1, 1, Enter((m("x"), m("x"))), (REC,)), DuplicateMessageId),
    )


# ------------------------------------------------------------- v2: maintenance


def test_r31_maintenance_only_while_idle() -> None:
    played = play(
        Raises(EndMaintenance(), UnexpectedReport),
        followup("a"),
        Raises(BeginMaintenance(), MaintenanceUnavailable),
        enter(1, 1, "a"),
        StepFinished(1, 1, Completed()),
        TurnStoppingDone(1),
        BeginMaintenance(),
    )
    assert played.state.status == "maintenance"
    assert played.state.awaiting is None
    assert played.notes[-1] == StatusChanged("maintenance")
    play(Raises(BeginMaintenance(), MaintenanceUnavailable), start=played)


def test_r31_waking_input_waits_for_the_job_end() -> None:
    played = play(BeginMaintenance(), followup("a", "c"), steer("s"), queue("q"))
    assert played.state.status == "maintenance"
    assert played.pending() == (["a*", "q"], ["s*"])
    assert not any(isinstance(e, TurnStarted) for e in played.durable)  # nothing of its own
    played = play(Raises(Move("q", "next-step"), SteerUnavailable), start=played)  # R8
    played = play(EndMaintenance((REC,)), start=played)
    assert played.durable[3:5] == [REC, TurnStarted(1)]  # records first (R30)
    assert played.state.awaiting == AwaitPreStep(1, 1, (m("s"), m("c"), m("a")))
    assert played.notes[-1] == InboxClaimed(m("a"), 1)
    assert StatusChanged("running") in played.notes


def test_r31_a_job_with_nothing_waiting_ends_idle() -> None:
    played = play(BeginMaintenance(), queue("q"), EndMaintenance((REC2,)))
    assert played.durable[-1] == REC2  # written while no turn is open
    assert played.notes[-1] == StatusChanged("idle")
    assert played.pending() == (["q"], [])


def test_r31_cancel_aborts_the_job() -> None:
    played = play(BeginMaintenance(), followup("a"), Cancel(keep_inbox=True))
    assert played.state.abort_cause == UserCause()
    assert played.notes[-1] == CancelRequested(UserCause())
    assert not any(isinstance(e, TurnAborted) for e in played.durable)  # no turn to abort
    played = play(Cancel(ParentCause()), start=played)  # clears a; the cause stays first
    assert played.state.abort_cause == UserCause()
    assert played.pending() == ([], [])
    played = play(Cancel(), start=played)  # nothing left to clear or abort
    assert played.notes[-1] == InboxDiscarded(m("a"))
    played = play(EndMaintenance(), start=played)
    assert played.state.status == "idle"
    assert played.state.abort_cause is None


def test_r31_a_kept_input_runs_after_a_cancelled_job() -> None:
    played = play(BeginMaintenance(), followup("a"), Cancel(keep_inbox=True), EndMaintenance())
    assert played.state.awaiting == AwaitPreStep(1, 1, (m("a"),))  # R24 for a job
    assert played.state.abort_cause is None


def test_r31_dispose_during_maintenance_converges_at_the_job_end() -> None:
    played = play(BeginMaintenance(), followup("a"), Dispose())
    assert played.notes[-2:] == [CancelRequested(DisposedCause()), InboxDiscarded(m("a"))]
    assert played.state.disposed
    played = play(
        Raises(followup("b"), AgentDisposed),
        Raises(BeginMaintenance(), AgentDisposed),
        Raises(TurnStoppingDone(1), AgentDisposed),
        EndMaintenance((REC,)),
        start=played,
    )
    assert played.durable[-1] == REC
    assert played.notes[-2:] == [StatusChanged("idle"), Disposed()]
    play(Raises(EndMaintenance(), AgentDisposed), start=played)


def test_r31_a_dispose_after_a_cancelled_job_keeps_the_cause() -> None:
    played = play(BeginMaintenance(), Cancel(HookCause("h")), Dispose())
    assert played.state.abort_cause == HookCause("h")
    assert played.notes == [
        StatusChanged("maintenance"),
        CancelRequested(HookCause("h")),
    ]  # the dispose had nothing left to clear or abort
    played = play(EndMaintenance(), start=played)
    assert played.notes[-2:] == [StatusChanged("idle"), Disposed()]


def test_r31_resume_comes_first_and_starts_what_a_job_left_waiting() -> None:
    played = play(BeginMaintenance(), followup("a"), EndMaintenance((REC,)))
    restarted = restart(played, 2)  # a crash after the job's records, before turn/start
    assert restarted.state.status == "idle"
    restarted = play(
        Raises(BeginMaintenance(), ResumeRequired),
        Raises(EndMaintenance(), ResumeRequired),
        Resume(),
        start=restarted,
    )
    assert restarted.state.awaiting == AwaitPreStep(1, 1, (m("a"),))


# --------------------------------------------------------- v2: agent/error, goals


def test_r33_failures_are_announced_last() -> None:
    played = play(followup("a"), followup("b"), PreStepFailed(1, 1, "boom", "E1"))
    assert played.notes[-1] == AgentError(1, None, "boom", "E1")  # after turn 2 opened
    assert played.state.awaiting == AwaitPreStep(2, 1, (m("b"),))
    played = play(enter(2, 1, "b"), StepFinished(2, 1, Failed("rate", "429")), start=played)
    assert played.notes[-2:] == [StatusChanged("idle"), AgentError(2, 1, "rate", "429")]


def test_r33_an_aborted_turn_s_failure_is_not_announced() -> None:
    played = play(followup("a"), enter(1, 1, "a"), Cancel(), StepFinished(1, 1, Failed("x", "E")))
    assert not any(isinstance(n, AgentError) for n in played.notes)
    assert played.durable[-1] == TurnEnded(1, AbortedReason(UserCause()))


def test_r2_r28_goal_round_zero_is_valid_and_never_counted() -> None:
    context = UserMessage("g0", "goal", source=GoalSource("g", 0))
    first = UserMessage("g1", "go on", source=GoalSource("g", 1))
    played = play(
        intents.queue(context),
        intents.followup(first),
    )
    played = play(PreStepDecided(1, 1, Enter((context,))), start=played)
    assert goal_rounds(played.durable) == {}  # round 0 is context, not a round
    played = play(StepFinished(1, 1, Completed()), TurnStoppingDone(1), start=played)
    played = play(PreStepDecided(2, 1, Enter((first,))), start=played)
    assert goal_rounds(played.durable) == {"g": 1}


def test_d9_resume_restores_an_entry_without_its_clashing_context() -> None:
    """D9 (v2): the newer pending id wins, but a primary message is never lost (R32)."""
    played = play(steer("s", "c", "d"), queue("c"))  # turn 1 claimed [c, d, s]; c sent again
    restarted = play(Resume(), start=restart(played, len(played.durable)))
    restored = [e for e in restarted.durable if isinstance(e, InboxSpliced) and e.inserted][-1]
    assert restored.inserted == (Entry(m("s"), (m("d"),), True),)
    assert restarted.state.awaiting == AwaitPreStep(2, 1, (m("d"), m("s"), m("c")))


def test_d9_resume_keeps_out_an_entry_whose_primary_is_pending_again() -> None:
    played = play(steer("s", "c"), queue("s"))
    restarted = play(Resume(), start=restart(played, len(played.durable)))
    assert TurnEnded(1, InterruptedReason()) in restarted.durable
    assert restarted.pending() == (["s"], [])
    assert fates(restarted.durable)["c"] == ConsumedFate(1, InterruptedReason())
