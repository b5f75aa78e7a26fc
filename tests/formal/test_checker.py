"""The invariant checker of inbox_core.testing can fail: one broken input per invariant.

Each test feeds ``check_*`` a state, log, notification log or record that
breaks exactly one invariant and asserts the ``InvariantViolation`` names it.
The last tests run the checker over real runs, where it must stay silent.
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs
import pytest
from hypothesis import HealthCheck, Phase, settings

from inbox_core import (
    AbortedReason,
    AgentState,
    AwaitPreStep,
    AwaitStep,
    AwaitTurnStopping,
    BlockedReason,
    Cancel,
    CancelRequested,
    Command,
    Completed,
    CompletedReason,
    Dispose,
    DurableEvent,
    Enter,
    Entry,
    InboxClaimed,
    InboxDiscarded,
    InboxInserted,
    InboxMoved,
    InboxSpliced,
    InterruptedReason,
    MessageAdmitted,
    PreStepDecided,
    Remove,
    ReplayError,
    Resume,
    StatusChanged,
    StepEnded,
    StepFinished,
    StepStarted,
    Transition,
    TurnAborted,
    TurnEnded,
    TurnStarted,
    TurnStoppingDone,
    UnexpectedReport,
    UserCause,
    queue,
    reduce,
    replay,
    steer,
)
from inbox_core.inbox import Inbox
from inbox_core.testing import (
    InboxMachine,
    InvariantViolation,
    Record,
    check_durable_log,
    check_invariants,
    check_notifications,
    check_records,
    check_replay,
    check_resume,
    check_state,
    run_machine,
)
from tests.formal.checker_kit import GOOD, STEER, claim, entry, insert, m, run, violated


@attrs.frozen
class FakeState:
    """Just what check_state reads; lets a test build a state no inbox would allow."""

    next_turn: tuple[Entry, ...]
    next_step: tuple[Entry, ...]
    status: str = "running"


@attrs.frozen
class Fake:
    """A state with just the public surface the checkers read (brief §9), so a test can
    build any state without knowing how ``AgentState`` stores it."""

    status: str = "idle"
    awaiting: object = None
    inbox: Inbox = attrs.field(factory=Inbox.of)
    last_turn: int = 0
    disposed: bool = False
    abort_cause: object = None

    @property
    def next_turn(self) -> tuple[Entry, ...]:
        return self.inbox.next_turn

    @property
    def next_step(self) -> tuple[Entry, ...]:
        return self.inbox.next_step

    def projection(self) -> object:
        return (self.next_turn, self.next_step, self.last_turn, self.status)


IDLE: AgentState = Fake()  # type: ignore[assignment]


def test_good_log_passes() -> None:
    fold = check_durable_log(GOOD)
    assert not fold.turn_open
    assert fold.lists == {"next-turn": [], "next-step": []}


# --------------------------------------------------------------------------- I1, I3


def test_i1_duplicate_ids_across_lists() -> None:
    state = FakeState((entry("a"),), (entry("b", contexts=["a"]),))
    error = violated("I1", lambda: check_state(state))  # type: ignore[arg-type]
    assert "'a'" in str(error)


def test_i1_duplicate_id_inside_one_entry() -> None:
    state = FakeState((entry("a", contexts=["a"]),), ())
    violated("I1", lambda: check_state(state))  # type: ignore[arg-type]


def test_i3_idle_with_waking_work() -> None:
    state = Fake(status="idle", inbox=Inbox.of(next_step=[entry("s")]))
    violated("I3", lambda: check_state(state))  # type: ignore[arg-type]


def test_i3_maintenance_with_waking_work_is_fine() -> None:
    """R31: waking input waits through a job; maintenance is not idle."""
    check_state(Fake(status="maintenance", inbox=Inbox.of(next_step=[entry("s")])))  # type: ignore[arg-type]


def test_i3_idle_with_quiet_work_is_fine() -> None:
    check_state(Fake(inbox=Inbox.of([entry("q", wakeup=False)], [entry("i", wakeup=False)])))  # type: ignore[arg-type]


# ------------------------------------------------------------------------------- I2


def test_i2_turn_start_without_waking_work() -> None:
    log = [insert("next-turn", 0, entry("q", wakeup=False)), TurnStarted(1)]
    violated("I2", lambda: check_durable_log(log))


def test_i2_turn_start_on_an_empty_inbox() -> None:
    violated("I2", lambda: check_durable_log([TurnStarted(1)]))


def running(*, awaiting: object, next_step: Sequence[Entry] = ()) -> AgentState:
    state = Fake(
        status="running", last_turn=1, awaiting=awaiting, inbox=Inbox.of(next_step=next_step)
    )
    return state  # type: ignore[return-value]


def test_i2_step_forced_without_waking_next_step() -> None:
    before = running(awaiting=AwaitStep(1, 1), next_step=[entry("i", wakeup=False)])
    after = running(awaiting=AwaitPreStep(1, 2, (m("i"),)))
    record = Record(StepFinished(1, 1, Completed()), before, after, (StepEnded(1, 1),))
    violated("I2", lambda: check_records([record]))


def test_i2_turn_stopping_forces_a_step_without_steer() -> None:
    before = running(awaiting=AwaitTurnStopping(1))
    after = running(awaiting=AwaitPreStep(1, 2, ()))
    record = Record(TurnStoppingDone(1), before, after, (), (StatusChanged("running"),))
    violated("I2", lambda: check_records([record]))


def test_i2_caller_command_changes_the_awaited_action() -> None:
    before = running(awaiting=AwaitTurnStopping(1))
    after = running(awaiting=AwaitPreStep(1, 2, ()))
    record = Record(Remove("x"), before, after, (), (InboxDiscarded(m("x")),))
    violated("I2", lambda: check_records([record]))


def test_i2_steered_step_is_allowed() -> None:
    before = running(awaiting=AwaitTurnStopping(1), next_step=[entry("s")])
    after = running(awaiting=AwaitPreStep(1, 2, (m("s"),)))
    record = Record(TurnStoppingDone(1), before, after, (claim("next-step", 1),))
    check_records([record])


# ------------------------------------------------------------------------------- I4

BROKEN_LOGS: dict[str, list[object]] = {
    "turn 2 first": [insert("next-turn", 0, entry("a")), TurnStarted(2)],
    "turn opened twice": [*GOOD[:3], insert("next-turn", 0, entry("b")), TurnStarted(2)],
    "step without turn": [StepStarted(1, 1)],
    "step of another turn": [*GOOD[:3], StepStarted(2, 1)],
    "step 2 first": [*GOOD[:3], StepStarted(1, 2)],
    "step inside step": [*GOOD[:5], StepStarted(1, 2)],
    "message after turn/start": [*GOOD[:3], MessageAdmitted(m("a"))],
    "message after step/end": [*GOOD[:6], MessageAdmitted(m("a"))],
    "step/end of no step": [*GOOD[:3], StepEnded(1, 1)],
    "step/end of another step": [*GOOD[:5], StepEnded(1, 2)],
    "turn/end of no turn": [TurnEnded(1, CompletedReason())],
    "turn/end with step open": [*GOOD[:5], TurnEnded(1, CompletedReason())],
    "splice beyond the end": [insert("next-turn", 2, entry("a"))],
    "empty splice": [InboxSpliced("next-turn", 0, 0, ())],
    "outcome without removal": [InboxSpliced("next-turn", 0, 0, (entry("a"),), "canceled")],
    "removal beyond the end": [InboxSpliced("next-step", 0, 1, (), "canceled")],
    "duplicate id": [
        insert("next-turn", 0, entry("a")),
        insert("next-step", 0, entry("b", contexts=["a"])),
    ],
    "claim while idle": [insert("next-turn", 0, entry("a", wakeup=False)), claim("next-turn", 1)],
    "claim inside a step": [*GOOD[:4], insert("next-step", 0, entry("s")), claim("next-step", 1)],
    "partial next-step claim": [
        insert("next-step", 0, entry("s"), entry("t")),
        TurnStarted(1),
        claim("next-step", 1),
    ],
    "move without insertion": [
        *GOOD[:4],
        insert("next-turn", 0, entry("q", wakeup=False)),
        InboxSpliced("next-turn", 0, 1, (), "moved"),
        StepEnded(1, 1),
    ],
    "move inserting elsewhere": [
        *GOOD[:4],
        insert("next-turn", 0, entry("q", wakeup=False)),
        InboxSpliced("next-turn", 0, 1, (), "moved"),
        insert("next-turn", 0, entry("q", wakeup=True)),
    ],
    "move that is not waking": [
        *GOOD[:4],
        insert("next-turn", 0, entry("q", wakeup=False)),
        InboxSpliced("next-turn", 0, 1, (), "moved"),
        insert("next-step", 0, entry("q", wakeup=False)),
    ],
    "move of two entries": [
        insert("next-turn", 0, entry("q", wakeup=False), entry("r", wakeup=False)),
        InboxSpliced("next-turn", 0, 2, (), "moved"),
    ],
    "not an event": ["turn/start"],
}


@pytest.mark.parametrize("name", sorted(BROKEN_LOGS))
def test_i4_broken_log(name: str) -> None:
    violated("I4", lambda: check_durable_log(BROKEN_LOGS[name]))  # type: ignore[arg-type]


def test_i4_a_complete_move_is_fine() -> None:
    check_durable_log(
        [
            *GOOD[:4],
            insert("next-turn", 0, entry("q", wakeup=False)),
            InboxSpliced("next-turn", 0, 1, (), "moved"),
            insert("next-step", 0, entry("q", wakeup=True)),
        ]
    )


def test_i4_error_names_the_event() -> None:
    error = violated("I4", lambda: check_durable_log([*GOOD[:3], StepStarted(1, 2)]))
    assert "event 3" in str(error)


# ------------------------------------------------------------------------------- I5


def test_i5_projection_differs_from_replay() -> None:
    live = replay([insert("next-turn", 0, entry("q", wakeup=False))])
    violated("I5", lambda: check_replay(live, []))


def test_i5_log_does_not_replay() -> None:
    violated("I5", lambda: check_replay(AgentState.initial(), [StepStarted(1, 1)]))


def test_i5_matching_projection() -> None:
    log = [insert("next-turn", 0, entry("q", wakeup=False))]
    check_replay(replay(log), log, strict=True)


# ------------------------------------------------------------------------------- I6


def notes_violation(notes: Sequence[object], invariant: str = "I6", **kwargs: object) -> None:
    violated(invariant, lambda: check_notifications(notes, **kwargs))  # type: ignore[arg-type]


def test_i6_inserted_twice() -> None:
    notes_violation([InboxInserted(m("a")), InboxInserted(m("a"))])


def test_i6_claimed_before_inserted() -> None:
    notes_violation([InboxClaimed(m("a"), 1)])


def test_i6_discarded_twice() -> None:
    notes_violation([InboxInserted(m("a")), InboxDiscarded(m("a")), InboxDiscarded(m("a"))])


def test_i6_moved_after_claim() -> None:
    notes_violation(
        [InboxInserted(m("a")), InboxClaimed(m("a"), 1), InboxMoved(m("a"), "next-step")]
    )


def test_i6_not_a_notification() -> None:
    notes_violation([TurnStarted(1)])


def test_i6_rounds_may_repeat_and_start_pending() -> None:
    seen = check_notifications(
        [
            InboxInserted(m("a")),
            InboxMoved(m("a"), "next-step"),
            InboxClaimed(m("a"), 1),
            InboxInserted(m("a")),
            InboxDiscarded(m("a")),
            InboxInserted(m("a")),
            InboxClaimed(m("b"), 2),
        ],
        pending=["b"],
    )
    assert seen.pending == {"a"}


def test_i6_announced_pending_differs_from_state() -> None:
    log = [insert("next-turn", 0, entry("q", wakeup=False))]
    state = replay(log)
    violated("I6", lambda: check_invariants(state, log, [], cuts=()))


# ------------------------------------------------------------------------------- I7


def test_i7_two_next_turn_claims_in_one_turn() -> None:
    log = [
        insert("next-turn", 0, entry("a"), entry("b")),
        TurnStarted(1),
        claim("next-turn", 1),
        claim("next-turn", 1),
    ]
    violated("I7", lambda: check_durable_log(log))


def test_i7_claim_of_two_next_turn_entries() -> None:
    log = [insert("next-turn", 0, entry("a"), entry("b")), TurnStarted(1), claim("next-turn", 2)]
    violated("I7", lambda: check_durable_log(log))


def test_i7_claim_out_of_list_order() -> None:
    log = [
        insert("next-turn", 0, entry("a"), entry("b")),
        TurnStarted(1),
        InboxSpliced("next-turn", 1, 1, ()),
    ]
    violated("I7", lambda: check_durable_log(log))


def test_i7_next_turn_claim_between_steps() -> None:
    log = [*GOOD[:6], insert("next-turn", 0, entry("b")), claim("next-turn", 1)]
    violated("I7", lambda: check_durable_log(log))


# ------------------------------------------------------------------------------- I8


def test_i8_running_twice() -> None:
    notes_violation([StatusChanged("running"), StatusChanged("running")], "I8")


def test_i8_idle_first() -> None:
    notes_violation([StatusChanged("idle")], "I8")


def test_i8_from_a_running_restart() -> None:
    notes_violation([StatusChanged("running")], "I8", status="running")
    check_notifications([StatusChanged("idle")], status="running")


# ------------------------------------------------------------------------------- I9


def test_i9_keep_inbox_cancel_discards() -> None:
    before = Fake(inbox=Inbox.of([entry("q", wakeup=False)]))
    after = Fake()
    record = Record(
        Cancel(UserCause(), keep_inbox=True),
        before,
        after,
        (InboxSpliced("next-turn", 0, 1, (), "canceled"),),
        (CancelRequested(UserCause()), InboxDiscarded(m("q"))),
    )
    violated("I9", lambda: check_records([record]))


def test_i9_keep_inbox_cancel_changes_the_lists_silently() -> None:
    before = running(awaiting=AwaitStep(1, 1), next_step=[entry("s")])
    after = attrs.evolve(before, inbox=Inbox.of(), abort_cause=UserCause())
    record = Record(Cancel(keep_inbox=True), before, after, (), (CancelRequested(UserCause()),))
    violated("I9", lambda: check_records([record]))


# ------------------------------------------------------------------------------ I10


def cancel_record(state: AgentState) -> Record:
    aborted = attrs.evolve(state, abort_cause=UserCause())
    return Record(
        Cancel(keep_inbox=True),
        state,
        aborted,
        (TurnAborted(1, UserCause()),),  # R23 v2
        (CancelRequested(UserCause()),),
    )


def test_i10_step_after_abort() -> None:
    at_pre_step = running(awaiting=AwaitPreStep(1, 1, ()))
    aborted = attrs.evolve(at_pre_step, abort_cause=UserCause())
    stepping = attrs.evolve(aborted, awaiting=AwaitStep(1, 1))
    records = [
        cancel_record(at_pre_step),
        Record(PreStepDecided(1, 1, Enter(())), aborted, stepping, (StepStarted(1, 1),)),
    ]
    violated("I10", lambda: check_records(records, open_turn=1))


def test_i10_report_does_not_close_the_aborted_turn() -> None:
    at_step = running(awaiting=AwaitStep(1, 1))
    aborted = attrs.evolve(at_step, abort_cause=UserCause())
    stopping = attrs.evolve(aborted, awaiting=AwaitTurnStopping(1))
    records = [
        cancel_record(at_step),
        Record(StepFinished(1, 1, Completed()), aborted, stopping, (StepEnded(1, 1),)),
    ]
    violated("I10", lambda: check_records(records, open_turn=1))


def test_i10_aborted_turn_ends_completed() -> None:
    at_stop = running(awaiting=AwaitTurnStopping(1))
    aborted = attrs.evolve(at_stop, abort_cause=UserCause())
    records = [
        cancel_record(at_stop),
        Record(TurnStoppingDone(1), aborted, IDLE, (TurnEnded(1, CompletedReason()),)),
    ]
    violated("I10", lambda: check_records(records, open_turn=1))


def test_i10_aborted_turn_ends_aborted() -> None:
    at_stop = running(awaiting=AwaitTurnStopping(1))
    aborted = attrs.evolve(at_stop, abort_cause=UserCause())
    records = [
        cancel_record(at_stop),
        Record(TurnStoppingDone(1), aborted, IDLE, (TurnEnded(1, AbortedReason(UserCause())),)),
    ]
    check_records(records, open_turn=1)


# ------------------------------------------------------------------------------ I11


def test_i11_rejected_command_emits_events() -> None:
    state = AgentState.initial()
    record = Record(
        TurnStoppingDone(1),
        state,
        state,
        (TurnEnded(1, BlockedReason()),),
        error=UnexpectedReport(),
    )
    violated("I11", lambda: check_records([record]))


def test_i11_rejected_command_changes_the_state() -> None:
    before = AgentState.initial()
    after = replay([insert("next-turn", 0, entry("q", wakeup=False))])
    record = Record(Remove("q"), before, after, error=UnexpectedReport())
    violated("I11", lambda: check_records([record]))


def test_i11_untyped_rejection() -> None:
    state = AgentState.initial()
    record = Record(Remove("q"), state, state, error=KeyError("q"))
    violated("I11", lambda: check_records([record]))


def test_i11_silent_command_changes_the_state() -> None:
    before, after = Fake(), Fake(last_turn=3)
    violated("I11", lambda: check_records([Record(Remove("q"), before, after)]))  # type: ignore[arg-type]


# ------------------------------------------------------------------------------ I12


def test_i12_prefix_does_not_replay() -> None:
    def broken_replay(events: Sequence[DurableEvent]) -> AgentState:
        raise ReplayError(0, "broken")

    violated("I12", lambda: check_resume([], replay_fn=broken_replay))


def test_i12_resume_raises() -> None:
    _, log, _, _ = run(STEER)

    def refuse(state: AgentState, command: Command) -> Transition:
        raise UnexpectedReport("no")

    violated("I12", lambda: check_resume(log, replay_fn=replay, reduce_fn=refuse))


def ignore_resume(state: AgentState, command: Command) -> Transition:
    if isinstance(command, Resume):
        return Transition(state, (), ())
    return reduce(state, command)


def test_i12_resume_forgets_the_claim() -> None:
    _, log, _, _ = run(STEER)  # turn 1 open, the steer claimed, no decision yet

    def drop_claim(state: AgentState, command: Command) -> Transition:
        if state.projection().open_turn is None:  # nothing to resume
            return Transition(state, (), ())
        end = TurnEnded(1, InterruptedReason())  # ... but nothing restored
        return Transition(replay([*log, end]), (end,), (StatusChanged("idle"),))

    error = violated("I12", lambda: check_resume(log, reduce_fn=drop_claim))
    assert "restore" in str(error)


def test_i12_resume_leaves_waking_work_idle() -> None:
    log = [insert("next-turn", 0, entry("a"))]  # cut between the send and its turn/start
    violated("I12", lambda: check_resume(log, reduce_fn=ignore_resume))


def test_i12_resume_needed_twice() -> None:
    _, log, _, _ = run(STEER)
    calls: list[int] = []

    def twice(state: AgentState, command: Command) -> Transition:
        calls.append(1)
        if len(calls) == 1:
            return reduce(state, command)
        return Transition(state, (TurnStarted(9),), ())

    violated("I12", lambda: check_resume(log, reduce_fn=twice))


def test_i12_resume_restores_the_claim() -> None:
    _, log, _, _ = run(STEER, steer(m("t")))
    resumed = check_resume(log)
    # turn 1 interrupted, its claim restored, and claimed again by turn 2
    assert isinstance(resumed.state.awaiting, AwaitPreStep)
    assert resumed.state.awaiting.batch == (m("c"), m("s"), m("t"))


def test_i12_d20_resume_restores_next_step_before_next_turn() -> None:
    queued = queue(m("q"))
    _, log, _, _ = run(queued, STEER)  # turn 1 claimed s (next-step) and q (next-turn)
    resumed = check_resume(log)
    restores = [e.target for e in resumed.durable if isinstance(e, InboxSpliced) and e.inserted]
    assert restores[:2] == ["next-step", "next-turn"]

    def next_turn_first(state: AgentState, command: Command) -> Transition:
        transition = reduce(state, command)
        if not isinstance(command, Resume):
            return transition
        events = list(transition.durable)
        spots = [i for i, e in enumerate(events) if isinstance(e, InboxSpliced) and e.inserted]
        if len(spots) < 2:  # the second Resume check_resume runs: nothing to restore
            return transition
        first, second = spots[:2]
        events[first], events[second] = events[second], events[first]
        return Transition(transition.state, tuple(events), transition.notifications)

    violated("I12", lambda: check_resume(log, reduce_fn=next_turn_first))


class ChangesStateThenRejects(InboxMachine):
    """An implementation that edits its state in place before it raises (I11)."""

    check_every_prefix = False

    def make_oracle(self) -> None:
        return None

    def apply(self, command: Command) -> Transition:
        try:
            return reduce(self.state, command)
        except UnexpectedReport:
            if self.state.status == "running":  # a state this run made, not a shared one
                object.__setattr__(self.state, "last_turn", self.state.last_turn + 7)
            raise


def test_i11_the_machine_sees_a_state_changed_in_place_before_a_rejection() -> None:
    found = settings(
        max_examples=50,
        stateful_step_count=20,
        phases=(Phase.generate,),  # found is enough: shrinking takes seconds
        derandomize=True,
        database=None,
        deadline=None,
        suppress_health_check=list(HealthCheck),
    )
    with pytest.raises(InvariantViolation) as caught:
        run_machine(ChangesStateThenRejects, config=found)
    assert caught.value.invariant == "I11"
    assert "a rejected command changed the state" in str(caught.value)


# ------------------------------------------------------------------ whole runs pass


def test_check_invariants_on_a_real_run() -> None:
    state, durable, notes, records = run(
        steer(m("s"), (m("c"),)),
        PreStepDecided(1, 1, Enter((m("c"), m("s")))),
        Cancel(UserCause(), keep_inbox=True),
        StepFinished(1, 1, Completed()),
        Remove("nothing"),
    )
    check_invariants(state, durable, notes, records=records)
    assert durable[-1] == TurnEnded(1, AbortedReason(UserCause()))


def test_check_invariants_catches_a_broken_record_in_a_real_run() -> None:
    state, durable, notes, records = run(STEER)
    bad = Record(Remove("x"), state, AgentState.initial(), error=UnexpectedReport())
    violated("I11", lambda: check_invariants(state, durable, notes, records=[*records, bad]))


def test_i4_a_move_cut_by_a_crash_is_fine_at_the_crash_point() -> None:
    half_move = [
        *GOOD[:4],
        insert("next-turn", 0, entry("q", wakeup=False)),
        InboxSpliced("next-turn", 0, 1, (), "moved"),
    ]
    resumed = [StepEnded(1, 1), TurnEnded(1, InterruptedReason())]
    violated("I4", lambda: check_durable_log(half_move + resumed))
    check_durable_log(half_move + resumed, crashes=[len(half_move)])
    check_resume(half_move)  # the crash point itself


def test_i11_a_silent_dispose_may_mark_the_agent_disposed() -> None:
    before = running(awaiting=AwaitStep(1, 1))
    before = attrs.evolve(before, abort_cause=UserCause())
    check_records([Record(Dispose(), before, attrs.evolve(before, disposed=True))])
    changed = attrs.evolve(before, disposed=True, last_turn=2)
    violated("I11", lambda: check_records([Record(Dispose(), before, changed)]))
