"""The reducer's ``TRANSITIONS`` table (R25, R26, R27, R31, D16, I5, I11).

Every (phase, command) pair not in the table is rejected with the documented typed error
and changes nothing; every accepted command leads to one of its row's ``leads_to`` phases.
The random sequences use the Hypothesis strategies of ``inbox_core.testing`` when that
module imports, mixed into a small phase-aware generator of this file (which answers what
the core awaits often enough to reach every phase, and crashes to reach ``Orphaned`` and
``Stranded``).
"""

from __future__ import annotations

import contextlib
import itertools
import random
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from inbox_core import (
    AgentBusy,
    AgentDisposed,
    AgentState,
    AwaitPreStep,
    AwaitStep,
    AwaitTurnStopping,
    BeginMaintenance,
    Cancel,
    Clear,
    Completed,
    Continue,
    Dispose,
    DuplicateMessageId,
    EndMaintenance,
    Enter,
    Entry,
    ExpectIdle,
    ExpectTurn,
    Failed,
    HookCause,
    HostRecord,
    InboxCoreError,
    InjectInput,
    InvalidInput,
    MaintenanceUnavailable,
    MaxTokens,
    Move,
    NextTurnInput,
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
    SteerInput,
    SteerUnavailable,
    StepFinished,
    TurnMismatch,
    TurnStoppingDone,
    UnexpectedReport,
    UserCause,
    reduce,
    replay,
)
from inbox_core.reducer import TRANSITIONS
from inbox_core.state import (
    Idle,
    Maintenance,
    Orphaned,
    PreStep,
    Step,
    Stranded,
    TurnStopping,
)
from tests.core.helpers import Run, followup, msg, queue, snapshot

try:  # the project's strategies, when the testing kit imports
    from inbox_core.testing import commands as library_commands
except Exception:  # pragma: no cover - depends on the state of inbox_core.testing
    try:
        from inbox_core.testing.strategies import commands as library_commands
    except Exception:
        library_commands = None

PHASES = (Idle, Maintenance, PreStep, Step, TurnStopping, Orphaned, Stranded)
LIVE = (Idle, Maintenance, PreStep, Step, TurnStopping)
CALLER = (Send, Splice, Clear, Replace, Remove, Move, Cancel, Dispose)
REPORTS = (PreStepDecided, PreStepFailed, StepFinished, TurnStoppingDone, EndMaintenance)
COMMANDS = (*CALLER, Resume, BeginMaintenance, *REPORTS)

# ---------------------------------------------------------------- the key set


def expected_pairs() -> set[tuple[type, type]]:
    """The legal pairs the brief implies: caller commands and Resume in every live phase
    (R7-R8, R21-R25, R27: Resume on a state that needs none is a no-op); only Resume
    while Orphaned/Stranded (R27); BeginMaintenance only while idle, EndMaintenance only
    during maintenance (R31); each turn report only in the phase that awaits it (R26)."""
    pairs = {(phase, command) for phase in LIVE for command in (*CALLER, Resume)}
    pairs |= {(Orphaned, Resume), (Stranded, Resume)}
    pairs |= {(Idle, BeginMaintenance), (Maintenance, EndMaintenance)}
    pairs |= {
        (PreStep, PreStepDecided),
        (PreStep, PreStepFailed),
        (Step, StepFinished),
        (TurnStopping, TurnStoppingDone),
    }
    return pairs


def test_r26_r27_r31_the_table_holds_exactly_the_legal_pairs():
    """R26, R27, R31: the table's keys are exactly the pairs the brief allows."""
    assert set(TRANSITIONS) == expected_pairs()


def test_r26_leads_to_declares_only_phase_types():
    """R26: every row declares at least one target phase, all of them phase types."""
    for (phase, command), row in TRANSITIONS.items():
        assert row.leads_to, (phase, command)
        assert set(row.leads_to) <= set(PHASES), (phase, command)


# --------------------------------------------------------- representatives


def documented_error(state: AgentState, command: Any) -> type[InboxCoreError]:
    """The error of a pair not in the table (D16, R25, R26, R27, R31)."""
    if state.resume_required:
        return ResumeRequired
    if state.disposed:
        return AgentDisposed
    if isinstance(command, BeginMaintenance):
        return MaintenanceUnavailable
    return UnexpectedReport


def sample_commands(state: AgentState) -> list[Any]:
    """One instance of every command type, reports aimed at what ``state`` awaits (so a
    rejection comes from the pair, not from a wrong turn or step)."""
    turn = max(state.last_turn, 1)
    awaiting = state.awaiting
    step = getattr(awaiting, "step", 1)
    return [
        followup(msg("new")),
        Splice("next-turn", 0, 0, (Entry(msg("sp"), (), False),)),
        Clear(),
        Replace("absent", msg("r")),
        Remove("absent"),
        Move("absent", "next-turn"),
        Cancel(UserCause(), keep_inbox=True),
        Dispose(),
        Resume(),
        BeginMaintenance(),
        EndMaintenance(),
        PreStepDecided(turn, step, Reject()),
        PreStepFailed(turn, step, "m", "c"),
        StepFinished(turn, step, Completed()),
        TurnStoppingDone(turn),
    ]


def _idle() -> Run:
    return Run()


def _maintenance() -> Run:
    run = Run()
    run(BeginMaintenance())
    return run


def _pre_step() -> Run:
    run = Run()
    run(followup(msg("a")))
    return run


def _step() -> Run:
    run = _pre_step()
    run.enter()
    return run


def _turn_stopping() -> Run:
    run = _step()
    run.finish()
    return run


def _orphaned() -> Run:
    live = _step()
    return Run(replay(live.log), live.log)


def _stranded() -> Run:
    live = _maintenance()
    live(followup(msg("w")))
    return Run(replay(live.log), live.log)


def _disposed(build: Any) -> Any:
    def make() -> Run:
        run = build()
        run(Dispose())
        return run

    make.__name__ = f"disposed{build.__name__}"
    return make


STATES = [
    _idle,
    _maintenance,
    _pre_step,
    _step,
    _turn_stopping,
    _orphaned,
    _stranded,
    *(_disposed(b) for b in (_idle, _maintenance, _pre_step, _step, _turn_stopping)),
]
PHASE_OF = {
    "_idle": Idle,
    "_maintenance": Maintenance,
    "_pre_step": PreStep,
    "_step": Step,
    "_turn_stopping": TurnStopping,
    "_orphaned": Orphaned,
    "_stranded": Stranded,
}


@pytest.mark.parametrize("build", STATES, ids=lambda b: b.__name__.strip("_"))
def test_r26_i11_pairs_not_in_the_table_are_rejected_with_the_documented_error(build):
    """R26, I11, D16, R25, R27, R31: in every phase (and disposed), each command type whose
    pair is missing raises ResumeRequired / AgentDisposed / MaintenanceUnavailable /
    UnexpectedReport and changes nothing; a disposed agent refuses every caller command
    and Resume too (R25)."""
    run = build()
    state = run.state
    expected_phase = PHASE_OF[build.__name__.removeprefix("disposed")]
    assert type(state.phase) is expected_phase
    missing = 0
    for command in sample_commands(state):
        pair = (type(state.phase), type(command))
        if pair not in TRANSITIONS:
            missing += 1
            run.rejects(command, documented_error(state, command))
        elif state.disposed and not isinstance(command, REPORTS):
            run.rejects(command, AgentDisposed)
    assert missing == len(COMMANDS) - sum(1 for p, _ in TRANSITIONS if p is expected_phase)


@pytest.mark.parametrize("build", STATES, ids=lambda b: b.__name__.strip("_"))
def test_d16_a_non_command_is_invalid_input_in_every_phase(build):
    """D16, R26: "not a command" comes first, before ResumeRequired and AgentDisposed."""
    run = build()
    for thing in (object(), "send", None, Entry(msg("e"), (), True)):
        run.rejects(thing, InvalidInput)


@pytest.mark.parametrize("build", STATES, ids=lambda b: b.__name__.strip("_"))
def test_r26_pairs_in_the_table_are_accepted_and_lead_to_a_declared_phase(build):
    """The table's promise on the representatives: an accepted pair's new phase is one of
    its row's ``leads_to`` types; an answering report is accepted even when disposed."""
    state = build().state
    for command in sample_commands(state):
        row = TRANSITIONS.get((type(state.phase), type(command)))
        if row is None or (state.disposed and not isinstance(command, REPORTS)):
            continue
        after = reduce(state, command).state
        assert type(after.phase) in row.leads_to, (state.phase, command, after.phase)


# ------------------------------------------------------- random sequences

POOL = ("m0", "m1", "m2", "m3", "m4", "m5")
CRASH = "crash"
CAUSES = (UserCause(), ParentCause(), HookCause("h"))
TARGETS = ("next-turn", "next-step")
LIBRARY = library_commands() if library_commands is not None else None


def r_message(rng: random.Random) -> Any:
    return msg(rng.choice(POOL), rng.choice(("x", "y")))


def r_contexts(rng: random.Random) -> tuple[Any, ...]:
    return (r_message(rng),) if rng.random() < 0.2 else ()


def r_records(rng: random.Random) -> tuple[HostRecord, ...]:
    if rng.random() < 0.7:
        return ()
    return (HostRecord(rng.choice(("host/a", "host/b")), rng.randint(0, 3)),)


def r_outcome(rng: random.Random) -> Any:
    return rng.choice((Continue(), Completed(), MaxTokens(), Failed("f", "F")))


def r_caller(rng: random.Random) -> Any:
    kind = rng.randrange(11)
    if kind <= 1:
        return Send(NextTurnInput(r_message(rng), r_contexts(rng), "next-turn", rng.random() < 0.6))
    if kind == 2:
        return Send(SteerInput(r_message(rng), r_contexts(rng), "next-step", True))
    if kind == 3:
        return Send(InjectInput(r_message(rng), (), "next-step", False))
    if kind == 4:
        inserted = tuple(
            Entry(r_message(rng), r_contexts(rng), rng.random() < 0.5)
            for _ in range(rng.randint(0, 2))
        )
        return Splice(rng.choice(TARGETS), rng.randint(-2, 3), rng.randint(-1, 2), inserted)
    if kind == 5:
        return Clear()
    if kind == 6:
        return Replace(rng.choice(POOL), r_message(rng))
    if kind == 7:
        return Remove(rng.choice(POOL))
    if kind in (8, 9):
        return Move(rng.choice(POOL), rng.choice(TARGETS))
    return Cancel(rng.choice(CAUSES), rng.random() < 0.5)


def r_rare(rng: random.Random) -> Any:
    return rng.choice(
        (
            Dispose(),
            Resume(),
            CRASH,
            CRASH,
            BeginMaintenance(),
            BeginMaintenance(),
            EndMaintenance(r_records(rng)),
        )
    )


def r_stray_report(rng: random.Random, state: AgentState) -> Any:
    turn = rng.randint(1, state.last_turn + 1)
    step = rng.randint(1, 3)
    kind = rng.randrange(4)
    if kind == 0:
        return PreStepDecided(turn, step, Reject(), r_records(rng))
    if kind == 1:
        return PreStepFailed(turn, step, "m", "c", r_records(rng))
    if kind == 2:
        return StepFinished(turn, step, r_outcome(rng), r_records(rng))
    return TurnStoppingDone(turn, r_records(rng))


def r_answer(rng: random.Random, state: AgentState) -> Any | None:
    """A report that answers what ``state`` awaits (or the job's end, or Resume)."""
    awaiting = state.awaiting
    if isinstance(awaiting, AwaitPreStep):
        t, s, batch = awaiting.turn, awaiting.step, awaiting.batch
        kind = rng.randrange(6)
        if kind <= 1:
            return PreStepDecided(t, s, Enter(batch), r_records(rng))
        if kind == 2:
            kept = tuple(m for m in batch if rng.random() < 0.5)
            extra = r_message(rng)
            if extra.id not in {m.id for m in kept} and rng.random() < 0.5:
                kept += (extra,)
            return PreStepDecided(t, s, Enter(kept), r_records(rng))
        if kind == 3:
            return PreStepDecided(t, s, Reject(), r_records(rng))
        if kind == 4:
            return PreStepDecided(t, s, Enter(()), r_records(rng))
        return PreStepFailed(t, s, "m", "c", r_records(rng))
    if isinstance(awaiting, AwaitStep):
        return StepFinished(awaiting.turn, awaiting.step, r_outcome(rng), r_records(rng))
    if isinstance(awaiting, AwaitTurnStopping):
        return TurnStoppingDone(awaiting.turn, r_records(rng))
    if isinstance(state.phase, Maintenance):
        if state.inbox.has_waking and rng.random() < 0.3:
            return CRASH  # a log cut during a job that holds back waking work: Stranded
        if rng.random() < 0.4:
            return EndMaintenance(r_records(rng))
    if state.resume_required and rng.random() < 0.3:
        return Resume()
    return None


def next_command(rng: random.Random, state: AgentState, data: Any = None) -> Any:
    """One phase-aware draw: mostly what is awaited or a caller command."""
    if LIBRARY is not None and data is not None and rng.random() < 0.1:
        return data.draw(LIBRARY)
    answer = r_answer(rng, state) if rng.random() < 0.5 else None
    if answer is not None:
        return answer
    roll = rng.random()
    if roll < 0.6:
        return r_caller(rng)
    if roll < 0.85:
        return r_rare(rng)
    return r_stray_report(rng, state)


class Session:
    """A driver that crashes on demand (replay of a command-boundary prefix)."""

    def __init__(self) -> None:
        self.state = AgentState.initial()
        self.log: list[Any] = []
        self.notes: list[Any] = []
        self.boundaries = [0]

    def crash(self, rng: random.Random) -> None:
        cut = rng.choice(self.boundaries[-3:])
        self.log = self.log[:cut]
        self.boundaries = [b for b in self.boundaries if b <= cut]
        self.state = replay(self.log)
        self.notes = []

    def apply(self, command: Any) -> Any:
        transition = reduce(self.state, command)
        self.state = transition.state
        self.log.extend(transition.durable)
        self.notes.extend(transition.notifications)
        self.boundaries.append(len(self.log))
        return transition


def expected_error_in_table(state: AgentState, command: Any) -> tuple[type, ...]:
    """The errors a pair in the table may still raise (R4, R8, R25, R26, D7, D16)."""
    if isinstance(command, REPORTS):
        return (AgentDisposed,) if state.disposed else (UnexpectedReport, DuplicateMessageId)
    if state.disposed:
        return (AgentDisposed,)
    unmet = unmet_expectation(state, getattr(command, "expect", None))
    if unmet is not None:
        return (unmet,)
    return (DuplicateMessageId, SteerUnavailable)


def unmet_expectation(state: AgentState, expect: Any) -> type[InboxCoreError] | None:
    """R34, said independently of guards.py: ExpectIdle holds while the status is idle,
    ExpectTurn(n) while turn n is opened and neither ended nor aborted."""
    if isinstance(expect, ExpectIdle):
        return None if state.status == "idle" else AgentBusy
    if isinstance(expect, ExpectTurn):
        live = state.status == "running" and state.abort_cause is None
        return None if live and state.last_turn == expect.turn else TurnMismatch
    return None


@settings(max_examples=80, deadline=None)
@given(st.data())
def test_r26_random_sequences_stay_inside_the_table(data):
    """R26, I5, I11, I3, I8: for random command sequences (with crashes), a pair not in
    the table raises its documented error; a rejection changes nothing; an accepted
    command leads to a phase its row declares, and its log replays to the same
    projection; idle never leaves waking work pending; status never repeats."""
    rng = random.Random(data.draw(st.integers(0, 2**32 - 1), label="seed"))
    session = Session()
    for _ in range(40):
        command = next_command(rng, session.state, data)
        if command == CRASH:
            session.crash(rng)
            continue
        state = session.state
        before = snapshot(state)
        row = TRANSITIONS.get((type(state.phase), type(command)))
        transition, error = None, None
        try:
            transition = session.apply(command)
        except InboxCoreError as caught:
            error = caught
        if transition is None:
            allowed = (
                (documented_error(state, command),)
                if row is None
                else expected_error_in_table(state, command)
            )
            assert type(error) in allowed, (state.phase, command, error)
            assert session.state is state
            assert snapshot(state) == before
            continue
        assert row is not None, (state.phase, command)
        after = transition.state
        assert type(after.phase) in row.leads_to, (state.phase, command, after.phase)
        assert replay(session.log).projection() == after.projection()  # I5
        if after.status == "idle":  # I3
            assert not any(e.wakeup for e in after.next_turn + after.next_step)
        seq = [n.status for n in session.notes if isinstance(n, StatusChanged)]
        assert all(a != b for a, b in itertools.pairwise(seq)), seq  # I8


def test_r26_random_generator_reaches_every_phase():
    """The generator above is not vacuous: a fixed walk reaches every phase type."""
    seen: set[type] = set()
    for seed in range(60):
        rng = random.Random(seed)
        session = Session()
        for _ in range(40):
            command = next_command(rng, session.state)
            if command == CRASH:
                session.crash(rng)
            else:
                with contextlib.suppress(InboxCoreError):
                    session.apply(command)
            seen.add(type(session.state.phase))
    assert seen == set(PHASES)


def test_r26_queue_during_pre_step_stays_in_pre_step():
    """A concrete row: (PreStep, Send) leads to PreStep only (no second reservation, R14)."""
    run = _pre_step()
    run(queue(msg("q")))
    run(followup(msg("f")))
    assert type(run.state.phase) is PreStep
    assert TRANSITIONS[(PreStep, Send)].leads_to == (PreStep,)
