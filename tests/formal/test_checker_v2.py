"""The v2 checks of inbox_core.testing can fail: one broken input per check.

Brief v2 adds ``turn/abort`` (R23, I4, I10), Resume's two endings (R27,
I12), host records (R30), maintenance (R31), fates (R32) and ``agent/error``
(R33). Each test feeds a checker a log, notification log, record or fates
map that breaks exactly one of these rules (mostly a real run of ``reduce``
with one thing tampered) and asserts the violation names it; the real runs
themselves must pass.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import attrs
import pytest
from hypothesis import HealthCheck, Phase, settings

from inbox_core import (
    AbortedReason,
    AdmittedFate,
    AgentError,
    AgentState,
    AwaitPreStep,
    AwaitStep,
    BeginMaintenance,
    Cancel,
    CanceledFate,
    CancelRequested,
    ClaimedFate,
    Command,
    Completed,
    CompletedReason,
    ConsumedFate,
    Dispose,
    DisposedCause,
    DurableEvent,
    EndMaintenance,
    Enter,
    Entry,
    Failed,
    Fate,
    HostRecord,
    InboxSpliced,
    InterruptedReason,
    InvalidInput,
    MessageAdmitted,
    MessageId,
    ParentCause,
    PendingFate,
    PreStepDecided,
    PreStepFailed,
    StatusChanged,
    StepEnded,
    StepFinished,
    StepStarted,
    Transition,
    TurnAborted,
    TurnEnded,
    TurnStarted,
    TurnStoppingDone,
    UserCause,
    fates,
    followup,
    queue,
    reduce,
    replay,
    steer,
)
from inbox_core.testing import (
    InboxMachine,
    InvariantViolation,
    Record,
    check_durable_log,
    check_fates,
    check_invariants,
    check_notifications,
    check_records,
    check_replay,
    check_resume,
    run_machine,
)
from tests.formal.checker_kit import GOOD, STEER, claim, entry, insert, m, run, violated

REC = HostRecord("host/reply", {"text": "hi", "n": [1, 2]})
REC2 = HostRecord("host/summary", "compacted")
QUEUE = queue(m("q"))
FOLLOWUP = followup(m("a"))


def tampered(records: Sequence[Record], index: int, **changes: object) -> list[Record]:
    """``records`` with one record changed (its durable events, notifications, states)."""
    changed = list(records)
    changed[index] = attrs.evolve(records[index], **changes)  # type: ignore[arg-type]
    return changed


# Turn 1 aborted by a user cancel before its decision: it ends aborted (R23).
ABORTED: list[DurableEvent] = [
    *GOOD[:3],
    TurnAborted(1, UserCause()),
    TurnEnded(1, AbortedReason(UserCause())),
]


# ------------------------------------------------------------------- I4, I10: the log


def test_i4_r23_r30_a_v2_log_passes() -> None:
    """turn/abort inside its turn, host records inside a turn and between turns (R30)."""
    log = [
        REC2,  # written by EndMaintenance while no turn is open
        *GOOD[:3],
        REC,  # a pre-step report's records come before its step/start
        StepStarted(1, 1),
        MessageAdmitted(m("a")),
        REC,  # a step's records
        TurnAborted(1, ParentCause()),
        REC2,  # the closing report's records
        StepEnded(1, 1),
        TurnEnded(1, AbortedReason(ParentCause())),
        REC,
    ]
    fold = check_durable_log(log)
    assert not fold.turn_open
    assert fold.aborted is None


BROKEN_V2_LOGS: dict[str, tuple[str, list[DurableEvent]]] = {
    "turn/abort before any turn": ("I4", [TurnAborted(1, UserCause())]),
    "turn/abort after its turn/end": ("I4", [*GOOD, TurnAborted(1, UserCause())]),
    "turn/abort of another turn": ("I4", [*GOOD[:3], TurnAborted(2, UserCause())]),
    "two turn/aborts": ("I4", [*ABORTED[:4], TurnAborted(1, DisposedCause())]),
    "aborted turn ends completed": ("I4", [*ABORTED[:4], TurnEnded(1, CompletedReason())]),
    "aborted turn ends with another cause": (
        "I4",
        [*ABORTED[:4], TurnEnded(1, AbortedReason(DisposedCause()))],
    ),
    "aborted end without turn/abort": ("I4", [*GOOD[:3], TurnEnded(1, AbortedReason(UserCause()))]),
    "host record between step/start and user/message": (
        "I4",
        [*GOOD[:4], REC, MessageAdmitted(m("a"))],
    ),
    "step/start after turn/abort": ("I10", [*ABORTED[:4], StepStarted(1, 1)]),
    "claim after turn/abort": (
        "I10",
        [
            insert("next-turn", 0, entry("a")),
            TurnStarted(1),
            TurnAborted(1, UserCause()),
            claim("next-turn", 1),
        ],
    ),
}


@pytest.mark.parametrize("name", sorted(BROKEN_V2_LOGS))
def test_i4_i10_broken_v2_log(name: str) -> None:
    """I4 v2 (turn/abort once, inside its turn, same cause at the end; records where R30
    allows) and I10 v2 (nothing steps or claims after a turn/abort)."""
    invariant, log = BROKEN_V2_LOGS[name]
    violated(invariant, lambda: check_durable_log(log))


# ------------------------------------------------------------ I8, R33: notifications


def test_i8_three_statuses() -> None:
    """I8 with maintenance (R31): idle, maintenance, running, idle is fine; no repeats."""
    check_notifications(
        [StatusChanged("maintenance"), StatusChanged("running"), StatusChanged("idle")]
    )
    violated("I8", lambda: check_notifications([StatusChanged("maintenance")] * 2))
    with pytest.raises(InvalidInput):  # no such status: it cannot even be built
        StatusChanged("paused")  # type: ignore[arg-type]


def test_r33_agent_error_needs_message_and_code() -> None:
    """R33: agent/error carries a message and a code; without them it cannot be built."""
    check_notifications([AgentError(1, None, "boom", "E1")])
    with pytest.raises(InvalidInput):
        AgentError(1, 1, None, "E1")  # type: ignore[arg-type]


# ------------------------------------------------------------------ R23: turn/abort


def test_r23_real_cancels_pass() -> None:
    *_, records = run(STEER, QUEUE, Cancel(), Cancel(ParentCause()), Dispose())
    assert records[2].durable[-1] == TurnAborted(1, UserCause())
    assert not any(isinstance(e, TurnAborted) for r in records[3:] for e in r.durable)
    check_records(records)


def test_r23_a_cancel_of_a_live_turn_writes_turn_abort() -> None:
    *_, records = run(STEER, Cancel(keep_inbox=True))
    violated("R23", lambda: check_records(tampered(records, 1, durable=())))


def test_r23_turn_abort_has_the_cancel_cause() -> None:
    *_, records = run(STEER, Cancel(keep_inbox=True))
    wrong = (TurnAborted(1, ParentCause()),)
    violated("R23", lambda: check_records(tampered(records, 1, durable=wrong)))


def test_r23_turn_abort_comes_after_the_cancel_splices() -> None:
    *_, records = run(STEER, QUEUE, Cancel())
    splices, abort = records[2].durable[:-1], records[2].durable[-1]
    assert splices
    assert isinstance(abort, TurnAborted)
    early = (abort, *splices)
    violated("R23", lambda: check_records(tampered(records, 2, durable=early)))


def test_r23_a_dispose_after_a_cancel_writes_no_second_turn_abort() -> None:
    *_, records = run(STEER, Cancel(), Dispose())
    second = (TurnAborted(1, DisposedCause()),)
    violated("R23", lambda: check_records(tampered(records, 2, durable=second)))


def test_r23_only_a_cancel_writes_turn_abort() -> None:
    *_, records = run(STEER, QUEUE)
    forged = (*records[1].durable, TurnAborted(1, UserCause()))
    violated("R23", lambda: check_records(tampered(records, 1, durable=forged)))


def test_r23_cancel_requested_names_the_cause() -> None:
    *_, records = run(STEER, Cancel(keep_inbox=True))
    wrong = (CancelRequested(ParentCause()),)
    violated("R23", lambda: check_records(tampered(records, 1, notifications=wrong)))


# ------------------------------------------------------------------- R30: records


def test_r30_records_come_first() -> None:
    decided = PreStepDecided(1, 1, Enter((m("c"), m("s"))), (REC, REC2))
    *_, records = run(STEER, decided, StepFinished(1, 1, Completed(), (REC,)))
    assert records[1].durable[:3] == (REC, REC2, StepStarted(1, 1))
    check_records(records)
    durable = records[1].durable
    late = (*durable[2:], *durable[:2])
    violated("R30", lambda: check_records(tampered(records, 1, durable=late)))
    violated("R30", lambda: check_records(tampered(records, 1, durable=durable[1:])))


def test_r30_a_command_without_records_writes_none() -> None:
    *_, records = run(STEER, QUEUE)
    forged = (*records[1].durable, REC)
    violated("R30", lambda: check_records(tampered(records, 1, durable=forged)))


def test_r30_an_aborted_turn_s_closing_report_keeps_its_records() -> None:
    *_, records = run(STEER, Cancel(), PreStepFailed(1, 1, "late", "E", (REC,)))
    assert records[2].durable[0] == REC
    check_records(records)
    violated("R30", lambda: check_records(tampered(records, 2, durable=records[2].durable[1:])))


# ---------------------------------------------------------------- R31: maintenance

MAINTENANCE = (BeginMaintenance(), FOLLOWUP, Cancel(keep_inbox=True), EndMaintenance((REC,)))


def test_r31_a_real_job_passes() -> None:
    state, durable, notes, records = run(*MAINTENANCE)
    assert records[0].notifications == (StatusChanged("maintenance"),)
    assert not any(isinstance(e, TurnStarted) for e in records[1].durable)
    assert records[3].durable[:2] == (REC, TurnStarted(1))  # the kept followup's turn
    check_invariants(state, durable, notes, records=records)


def test_r31_maintenance_begins_only_while_idle() -> None:
    *_, records = run(STEER)
    busy = records[0].after
    job = Record(BeginMaintenance(), busy, busy, (), (StatusChanged("maintenance"),))
    violated("R31", lambda: check_records([job]))


def test_r31_begin_maintenance_only_announces_its_status() -> None:
    *_, records = run(*MAINTENANCE)
    splice = (insert("next-turn", 0, entry("z")),)
    violated("R31", lambda: check_records(tampered(records, 0, durable=splice)))
    more = (StatusChanged("maintenance"), StatusChanged("running"))
    violated("R31", lambda: check_records(tampered(records, 0, notifications=more)))


def test_r31_waking_input_opens_no_turn_during_maintenance() -> None:
    *_, records = run(*MAINTENANCE)
    _, _, _, woken = run(FOLLOWUP)  # what the same send does while idle
    wrong = tampered(records, 1, durable=woken[0].durable, after=woken[0].after)
    violated("R31", lambda: check_records(wrong))


def test_r31_the_job_s_end_announces_the_next_status() -> None:
    *_, records = run(*MAINTENANCE)
    silent = tuple(n for n in records[3].notifications if not isinstance(n, StatusChanged))
    violated("R31", lambda: check_records(tampered(records, 3, notifications=silent)))


def test_r31_end_maintenance_needs_a_job() -> None:
    idle = AgentState.initial()
    violated("R31", lambda: check_records([Record(EndMaintenance(), idle, idle, (), ())]))


# ---------------------------------------------------------------- R33: agent/error


def test_r33_a_pre_step_failure_is_announced_last() -> None:
    *_, records = run(QUEUE, STEER, PreStepFailed(1, 1, "boom", "E1"))
    notes = records[2].notifications
    assert notes[-1] == AgentError(1, None, "boom", "E1")
    check_records(records)
    violated("R33", lambda: check_records(tampered(records, 2, notifications=notes[:-1])))
    first = (notes[-1], *notes[:-1])
    violated("R33", lambda: check_records(tampered(records, 2, notifications=first)))
    wrong = (*notes[:-1], AgentError(1, 1, "boom", "E1"))
    violated("R33", lambda: check_records(tampered(records, 2, notifications=wrong)))


def test_r33_a_failed_step_is_announced_with_its_step() -> None:
    decided = PreStepDecided(1, 1, Enter((m("c"), m("s"))))
    *_, records = run(STEER, decided, StepFinished(1, 1, Failed("rate", "429")))
    notes = records[2].notifications
    assert notes[-1] == AgentError(1, 1, "rate", "429")
    check_records(records)
    violated("R33", lambda: check_records(tampered(records, 2, notifications=notes[:-1])))


def test_r33_an_aborted_turn_s_failure_is_not_announced() -> None:
    *_, records = run(STEER, Cancel(), PreStepFailed(1, 1, "late", "E"))
    assert not any(isinstance(n, AgentError) for n in records[2].notifications)
    check_records(records)
    forged = (*records[2].notifications, AgentError(1, None, "late", "E"))
    violated("R33", lambda: check_records(tampered(records, 2, notifications=forged)))


def test_r33_only_failures_are_announced() -> None:
    *_, records = run(STEER, QUEUE)
    forged = (*records[1].notifications, AgentError(1, None, "?", "?"))
    violated("R33", lambda: check_records(tampered(records, 1, notifications=forged)))


# ------------------------------------------------------------------------ I5 strict


@attrs.frozen
class Overridden:
    """A real state whose awaited action or abort cause a test replaces (I5 strict)."""

    base: AgentState
    awaiting: object
    abort_cause: object

    @property
    def status(self) -> str:
        return self.base.status

    def projection(self) -> object:
        return self.base.projection()


def test_i5_strict_compares_the_pre_step_batch_with_the_log_s_claim() -> None:
    state, durable, _, _ = run(QUEUE, STEER)
    check_replay(state, durable, strict=True)
    wrong = Overridden(state, AwaitPreStep(1, 1, (m("s"), m("c"), m("q"))), None)
    violated("I5", lambda: check_replay(wrong, durable, strict=True))  # type: ignore[arg-type]
    stepping = Overridden(state, AwaitStep(1, 1), None)
    violated("I5", lambda: check_replay(stepping, durable, strict=True))  # type: ignore[arg-type]


def test_i5_strict_compares_the_abort_cause_with_turn_abort() -> None:
    """R23 v2: the abort is durable, so the live cause must be the logged one."""
    state, durable, _, _ = run(STEER, Cancel(ParentCause()))
    check_replay(state, durable, strict=True)
    wrong = Overridden(state, state.awaiting, UserCause())
    violated("I5", lambda: check_replay(wrong, durable, strict=True))  # type: ignore[arg-type]


# ----------------------------------------------------------------- I12, R27 v2


def test_i12_r27_an_aborted_orphan_resumes_aborted() -> None:
    _, log, _, _ = run(QUEUE, STEER, Cancel(ParentCause(), keep_inbox=True))
    resumed = check_resume(log)
    assert resumed.durable[0] == TurnEnded(1, AbortedReason(ParentCause()))
    assert not any(isinstance(e, InboxSpliced) for e in resumed.durable)  # consumed (R23)


def test_i12_r27_resume_must_not_close_an_aborted_orphan_interrupted() -> None:
    """The v1 ending (D24): interrupted, claim restored. v2 logs the abort, so no."""
    _, log, _, _ = run(QUEUE, STEER, Cancel(ParentCause(), keep_inbox=True))

    def v1_resume(state: AgentState, command: Command) -> Transition:
        if state.projection().open_turn is None:
            return reduce(state, command)
        events = (
            TurnEnded(1, InterruptedReason()),
            insert("next-turn", 0, entry("q", wakeup=False)),
        )
        return Transition(reduce(state, command).state, events, ())  # replay refuses them

    error = violated("I12", lambda: check_resume(log, reduce_fn=v1_resume))
    assert "I4" in str(error)


def test_i12_r27_an_aborted_orphan_restores_nothing() -> None:
    _, log, _, _ = run(QUEUE, STEER, Cancel(ParentCause(), keep_inbox=True))

    def restoring(state: AgentState, command: Command) -> Transition:
        if state.projection().open_turn is None:
            return reduce(state, command)
        events = (
            TurnEnded(1, AbortedReason(ParentCause())),
            insert("next-turn", 0, entry("q", wakeup=False)),
        )
        return Transition(replay([*log, *events]), events, ())

    error = violated("I12", lambda: check_resume(log, reduce_fn=restoring))
    assert "restore" in str(error)


def test_i12_r27_an_orphan_without_turn_abort_resumes_interrupted() -> None:
    _, log, _, _ = run(QUEUE, STEER)

    def aborting(state: AgentState, command: Command) -> Transition:
        if state.projection().open_turn is None:
            return reduce(state, command)
        events = (TurnEnded(1, AbortedReason(UserCause())),)
        return Transition(replay([*log, *events]), events, ())

    violated("I12", lambda: check_resume(log, reduce_fn=aborting))


def test_i12_d9_an_entry_comes_back_without_its_clashing_context() -> None:
    """D9 (v2): a context sent again stays with the newer message; the primary is restored."""
    _, log, _, _ = run(STEER, queue(m("c")))
    resumed = check_resume(log)
    assert resumed.durable[1] == insert("next-step", 0, Entry(m("s"), (), True))

    def v1_d9(state: AgentState, command: Command) -> Transition:
        if state.projection().open_turn is None:
            return reduce(state, command)
        events = (TurnEnded(1, InterruptedReason()),)  # the whole entry kept out: s is lost
        return Transition(replay([*log, *events]), events, ())

    error = violated("I12", lambda: check_resume(log, reduce_fn=v1_d9))
    assert "restore" in str(error)


# --------------------------------------------------------------------- R32: fates


def fates_with(
    change: Callable[[dict[MessageId, Fate]], None],
) -> Callable[..., Mapping[MessageId, Fate]]:
    def broken(events: Sequence[DurableEvent]) -> Mapping[MessageId, Fate]:
        result = dict(fates(events))
        change(result)
        return result

    return broken


def every_fate_log() -> list[DurableEvent]:
    """One log with a message of every fate (R32)."""
    _, log, _, _ = run(
        queue(m("x"), (m("xc"),)),  # canceled below
        followup(m("a")),  # turn 1 claims x; a waits
        PreStepDecided(1, 1, Enter((m("xc"), m("new")))),  # xc admitted, x dropped, new added
        StepFinished(1, 1, Completed()),
        TurnStoppingDone(1),  # turn 2 claims a
        PreStepFailed(2, 1, "boom", "E1"),  # a consumed
        queue(m("p")),  # p pending
        queue(m("k")),
        Cancel(),  # p and k canceled
        queue(m("p")),  # p pending again
        steer(m("w")),  # turn 3 claims w and p
    )
    return log


def test_r32_every_fate_of_a_real_log() -> None:
    log = every_fate_log()
    got = check_fates(log)
    assert got["xc"] == AdmittedFate(1, 1)
    assert got["new"] == AdmittedFate(1, 1)
    assert got["x"].kind == "dropped"
    assert got["a"] == ConsumedFate(2, got["a"].reason)  # type: ignore[union-attr]
    assert got["k"] == CanceledFate()
    assert got["w"] == got["p"] == ClaimedFate(3, 1)


BROKEN_FATES: dict[str, Callable[[dict[MessageId, Fate]], None]] = {
    "an accepted id without a fate": lambda f: f.pop("k"),
    "a fate of an id never accepted": lambda f: f.update(ghost=CanceledFate()),
    "a claimed id said pending": lambda f: f.update(w=PendingFate("next-step")),
    "a canceled id said pending": lambda f: f.update(k=PendingFate("next-turn")),
    "a claimed id said admitted": lambda f: f.update(p=AdmittedFate(3, 1)),
    "a claim of the wrong step": lambda f: f.update(w=ClaimedFate(3, 2)),
    "a finished claim still claimed": lambda f: f.update(a=ClaimedFate(2, 1)),
    "not a fate": lambda f: f.update(k="canceled"),  # type: ignore[dict-item]
}


@pytest.mark.parametrize("name", sorted(BROKEN_FATES))
def test_r32_broken_fates(name: str) -> None:
    log = every_fate_log()
    violated("R32", lambda: check_fates(log, fates_fn=fates_with(BROKEN_FATES[name])))


def test_r32_a_pending_id_has_its_list() -> None:
    _, log, _, _ = run(QUEUE)
    assert check_fates(log) == {"q": PendingFate("next-turn")}
    moved = fates_with(lambda f: f.update(q=PendingFate("next-step")))
    violated("R32", lambda: check_fates(log, fates_fn=moved))


def test_r32_a_move_cut_by_a_crash_is_only_checked_when_asked() -> None:
    """The crash rule cuts a log anywhere, also between a move's two splices; the moved
    entry is then in no list (atomic appends never do this, R30)."""
    half_move = [
        *GOOD[:4],
        insert("next-turn", 0, entry("q", wakeup=False)),
        InboxSpliced("next-turn", 0, 1, (), "moved"),
    ]
    crashes = [len(half_move)]
    check_fates(half_move, crashes=crashes)
    violated("R32", lambda: check_fates(half_move, crashes=crashes, strict_half_moves=True))


# ------------------------------------------- the machine catches broken v2 cores


class Port(InboxMachine):
    """A port that gets one v2 rule wrong; no oracle, so the invariants alone must see it."""

    check_every_prefix = False

    def make_oracle(self) -> None:
        return None

    def change(self, transition: Transition) -> Transition:
        return transition

    def apply(self, command: Command) -> Transition:
        return self.change(reduce(self.state, command))


class ForgetsTurnAbort(Port):
    """v1 behaviour: the abort stays in memory (R23 v2 makes it durable)."""

    def change(self, t: Transition) -> Transition:
        kept = tuple(e for e in t.durable if not isinstance(e, TurnAborted))
        return Transition(t.state, kept, t.notifications)


class WritesRecordsLast(Port):
    """Appends a report's records after what the report caused (R30: first)."""

    def change(self, t: Transition) -> Transition:
        records = [e for e in t.durable if isinstance(e, HostRecord)]
        rest = [e for e in t.durable if not isinstance(e, HostRecord)]
        return Transition(t.state, (*rest, *records), t.notifications)


class SwallowsFailures(Port):
    """Never announces agent/error (R33)."""

    def change(self, t: Transition) -> Transition:
        kept = tuple(n for n in t.notifications if not isinstance(n, AgentError))
        return Transition(t.state, t.durable, kept)


class LosesConsumedInput(Port):
    """A fates fold that forgets what an aborted or failed turn consumed (R32)."""

    def fates_of(self, events: Sequence[DurableEvent]) -> Mapping[MessageId, Fate]:
        return {i: f for i, f in fates(events).items() if not isinstance(f, ConsumedFate)}


NO_SHRINK = settings(
    max_examples=300,
    stateful_step_count=30,
    phases=(Phase.generate,),  # found is enough: shrinking takes minutes
    derandomize=True,
    database=None,
    deadline=None,
    suppress_health_check=list(HealthCheck),
    print_blob=False,
)


@pytest.mark.parametrize(
    ("port", "ids"),
    [
        (ForgetsTurnAbort, ("R23", "I4", "I5")),
        (WritesRecordsLast, ("R30",)),
        (SwallowsFailures, ("R33",)),
        (LosesConsumedInput, ("R32",)),
    ],
)
def test_the_machine_catches_a_broken_v2_port(port: type[Port], ids: tuple[str, ...]) -> None:
    with pytest.raises(InvariantViolation) as caught:
        run_machine(port, config=NO_SHRINK)
    assert caught.value.invariant in ids, str(caught.value)
