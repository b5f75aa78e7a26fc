"""Rejected commands: typed errors and nothing changed (R4, R11, R25, R26, R27, D7, D16,
D17, I11).

``Run.rejects`` asserts the error, that the state is identical (every field and
the id index), that no event was logged, and that a fresh replay of the log so
far still equals the state's projection.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from inbox_core import (
    AgentDisposed,
    AgentState,
    Cancel,
    Clear,
    Completed,
    Continue,
    Dispose,
    DisposedCause,
    DuplicateMessageId,
    Enter,
    Entry,
    Failed,
    HookCause,
    InboxCoreError,
    InjectInput,
    InvalidInput,
    InvalidSplice,
    Move,
    NextTurnInput,
    PreStepDecided,
    PreStepFailed,
    Reject,
    Remove,
    Replace,
    Resume,
    ResumeRequired,
    Send,
    Splice,
    SteerInput,
    SteerUnavailable,
    StepFinished,
    TurnStoppingDone,
    UnexpectedReport,
    UserCause,
    reduce,
    replay,
)
from tests.core.helpers import Run, followup, inject, msg, queue, snapshot, steer


def e(mid: str, *contexts: str, wakeup: bool = False) -> Entry:
    return Entry(msg(mid), tuple(msg(c) for c in contexts), wakeup)


def pending() -> Run:
    """Turn 1 awaiting its pre-step; next-turn [a(ac), b], next-step [i]."""
    run = Run()
    run(followup(msg("run")))
    run(queue(msg("a"), [msg("ac")]))
    run(queue(msg("b")))
    run(inject(msg("i")))
    return run


def idle_parked() -> Run:
    """Idle; next-turn [a(ac), b] quiet (a waking duplicate must not open a turn)."""
    run = Run()
    run(queue(msg("a"), [msg("ac")]))
    run(queue(msg("b")))
    return run


def rejects_construction(run: Run, build: Callable[[], Any], error: type[Exception]) -> None:
    """A malformed value or command raises at construction; the agent is unaffected."""
    before = snapshot(run.state)
    with pytest.raises(error):
        build()
    assert snapshot(run.state) == before
    assert replay(run.log).projection() == run.state.projection()


# --------------------------------------------------------------- R4 duplicates

DUPLICATES = [
    pytest.param(lambda: Splice("next-turn", 0, 0, (e("x"), e("x"))), id="within-one-splice"),
    pytest.param(
        lambda: Splice("next-step", 0, 0, (e("x"), e("y", "x"))), id="context-vs-sibling-in-splice"
    ),
    pytest.param(lambda: followup(msg("x"), [msg("x")]), id="within-one-entry"),
    pytest.param(lambda: followup(msg("x"), [msg("c"), msg("c")]), id="two-equal-contexts"),
    pytest.param(lambda: steer(msg("a")), id="across-lists-steer"),
    pytest.param(lambda: inject(msg("b")), id="across-lists-inject"),
    pytest.param(lambda: followup(msg("b")), id="same-list"),
    pytest.param(lambda: followup(msg("ac")), id="against-a-context"),
    pytest.param(lambda: steer(msg("x"), [msg("ac")]), id="context-against-a-context"),
    pytest.param(lambda: followup(msg("x"), [msg("a")]), id="context-against-a-message"),
    pytest.param(lambda: Replace("b", msg("ac")), id="replace-to-a-context-id"),
    pytest.param(lambda: Replace("a", msg("ac")), id="replace-to-own-context-id"),
    pytest.param(lambda: Replace("b", msg("a")), id="replace-to-another-message-id"),
    pytest.param(lambda: Splice("next-turn", 1, 1, (e("a"),)), id="splice-keeping-other-id"),
]


@pytest.mark.parametrize("build", DUPLICATES)
def test_r4_duplicate_ids_while_running_raise_and_change_nothing(build):
    """R4, R26, I1, I11: DuplicateMessageId, state and log unchanged."""
    run = pending()
    run.rejects(build(), DuplicateMessageId)


@pytest.mark.parametrize("build", DUPLICATES)
def test_r4_duplicate_ids_while_idle_raise_before_any_wake(build):
    """R4, R14, I11: a waking duplicate while idle opens no turn: nothing changes."""
    run = idle_parked()
    run.rejects(build(), DuplicateMessageId)
    assert run.state.status == "idle"


def test_r4_duplicate_error_names_the_id():
    """R4: the error carries the offending MessageId."""
    run = pending()
    error = run.rejects(followup(msg("z"), [msg("ac")]), DuplicateMessageId)
    assert error.message_id == "ac"


def test_r4_claimed_ids_are_free_again():
    """R4: a claimed (no longer pending) id may be sent again."""
    run = pending()
    t = run(followup(msg("run")))
    assert t.state.next_turn[-1] == Entry(msg("run"), (), True)


def test_d7_enter_batch_with_a_repeated_id_raises_and_changes_nothing():
    """D7, R26: an Enter batch holding one MessageId twice -> DuplicateMessageId."""
    run = pending()
    error = run.rejects(PreStepDecided(1, 1, Enter((msg("run"), msg("run")))), DuplicateMessageId)
    assert error.message_id == "run"
    error = run.rejects(
        PreStepDecided(1, 1, Enter((msg("x"), msg("run"), msg("x", "other")))), DuplicateMessageId
    )
    assert error.message_id == "x"  # the repeated id, not the first or the last


# ------------------------------------------------------------ malformed splices


@pytest.mark.parametrize(
    "build",
    [
        pytest.param(lambda: Splice("next_turn", 0, 0, ()), id="target-underscore"),
        pytest.param(lambda: Splice("NEXT-TURN", 0, 0, ()), id="target-case"),
        pytest.param(lambda: Splice(None, 0, 0, ()), id="target-none"),
        pytest.param(lambda: Splice("next-turn", "0", 0, ()), id="start-str"),
        pytest.param(lambda: Splice("next-turn", 0.0, 0, ()), id="start-float"),
        pytest.param(lambda: Splice("next-turn", True, 0, ()), id="start-bool"),
        pytest.param(lambda: Splice("next-turn", None, 0, ()), id="start-none"),
        pytest.param(lambda: Splice("next-turn", 0, False, ()), id="delete-bool"),
        pytest.param(lambda: Splice("next-turn", 0, 1.5, ()), id="delete-float"),
        pytest.param(lambda: Splice("next-turn", 0, "1", ()), id="delete-str"),
        pytest.param(lambda: Splice("next-turn", 0, 0, (msg("x"),)), id="inserted-message"),
        pytest.param(lambda: Splice("next-turn", 0, 0, ({"message": "x"},)), id="inserted-dict"),
        pytest.param(
            lambda: Splice("next-turn", 0, 0, (NextTurnInput(msg("x"), (), "next-turn", True),)),
            id="inserted-input",
        ),
        pytest.param(lambda: Splice("next-turn", 0, 0, e("x")), id="inserted-bare-entry"),
        pytest.param(lambda: Splice("next-turn", 0, 0, None), id="inserted-none"),
        pytest.param(lambda: Splice("next-turn", 0, 0, "ab"), id="inserted-str"),
    ],
)
def test_r5_malformed_splices_raise_invalid_splice(build):
    """R5, D17: bad target, non-int or bool coordinates, non-Entry inserted."""
    run = pending()
    rejects_construction(run, build, InvalidSplice)


# ------------------------------------------------------------- invalid inputs


@pytest.mark.parametrize(
    "build",
    [
        pytest.param(
            lambda: InjectInput(msg("x"), (msg("c"),), "next-step", False),
            id="inject-with-contexts",
        ),
        pytest.param(lambda: SteerInput(msg("x"), (), "next-step", False), id="steer-no-wakeup"),
        pytest.param(
            lambda: NextTurnInput(msg("x"), (), "next-step", True),
            id="next-turn-targeting-next-step",
        ),
        pytest.param(
            lambda: InjectInput(msg("x"), (), "next-turn", False), id="inject-targeting-next-turn"
        ),
        pytest.param(lambda: Send(e("x")), id="send-entry"),
        pytest.param(lambda: Send(None), id="send-none"),
        pytest.param(lambda: Cancel(DisposedCause()), id="cancel-disposed-cause"),
        pytest.param(lambda: Cancel("user"), id="cancel-str-cause"),
        pytest.param(lambda: Cancel(UserCause(), keep_inbox=1), id="keep-inbox-int"),
        pytest.param(lambda: Move("a", "next_step"), id="move-bad-target"),
        pytest.param(lambda: Move("", "next-step"), id="move-empty-id"),
        pytest.param(lambda: Remove(""), id="remove-empty-id"),
        pytest.param(lambda: Remove(3), id="remove-int-id"),
        pytest.param(lambda: Replace("a", "text"), id="replace-non-message"),
        pytest.param(lambda: Replace("", msg("x")), id="replace-empty-id"),
        pytest.param(lambda: PreStepDecided(0, 1, Reject()), id="turn-0"),
        pytest.param(lambda: PreStepDecided(1, 0, Reject()), id="step-0"),
        pytest.param(lambda: PreStepDecided(True, 1, Reject()), id="turn-bool"),
        pytest.param(lambda: PreStepDecided(1, 1, Enter), id="decision-class"),
        pytest.param(lambda: PreStepDecided(1, 1, (msg("x"),)), id="decision-tuple"),
        pytest.param(lambda: PreStepFailed(1, 1, 5, "c"), id="failed-message-int"),
        pytest.param(lambda: StepFinished(1, 1, Completed), id="outcome-class"),
        pytest.param(lambda: StepFinished(1, 1, "completed"), id="outcome-str"),
        pytest.param(lambda: StepFinished("1", 1, Completed()), id="turn-str"),
        pytest.param(lambda: TurnStoppingDone(0), id="stopping-turn-0"),
        pytest.param(lambda: Failed(1, "c"), id="failed-int"),
        pytest.param(lambda: Enter(("x",)), id="enter-str-message"),
        pytest.param(lambda: Enter(msg("x")), id="enter-bare-message"),
        pytest.param(lambda: HookCause(None), id="hook-reason-none"),
        pytest.param(lambda: followup(msg(""), []), id="empty-message-id"),
        pytest.param(
            lambda: steer(msg("x", source=None), [msg("c", source=HookCause("r"))]), id="non-source"
        ),
    ],
)
def test_r11_d17_malformed_commands_raise_invalid_input(build):
    """R11, R21, D17: run-time shape checks raise InvalidInput; nothing changes."""
    run = pending()
    rejects_construction(run, build, InvalidInput)


@pytest.mark.parametrize(
    "command",
    [
        "send",
        None,
        NextTurnInput(msg("x"), (), "next-turn", True),
        Entry(msg("x"), (), True),
        msg("x"),
        Completed(),
        UserCause(),
    ],
    ids=["str", "none", "bare-input", "entry", "message", "outcome", "cause"],
)
def test_d16_reduce_of_a_non_command_raises_invalid_input(command):
    """D16, R26: reduce refuses anything that is not a command, unchanged."""
    run = pending()
    run.rejects(command, InvalidInput)


# ---------------------------------------------------------------- reports

IDLE_REPORTS = [
    PreStepDecided(1, 1, Reject()),
    PreStepFailed(1, 1, "m", "c"),
    StepFinished(1, 1, Completed()),
    TurnStoppingDone(1),
]


@pytest.mark.parametrize("report", IDLE_REPORTS, ids=lambda r: type(r).__name__)
def test_r26_reports_while_idle_are_unexpected(report):
    """R26: nothing is awaited while idle."""
    run = idle_parked()
    run.rejects(report, UnexpectedReport)


@pytest.mark.parametrize(
    "report",
    [
        StepFinished(1, 1, Completed()),
        TurnStoppingDone(1),
        PreStepDecided(2, 1, Reject()),
        PreStepDecided(1, 2, Reject()),
        PreStepFailed(1, 2, "m", "c"),
        PreStepFailed(2, 1, "m", "c"),
    ],
    ids=[
        "step-finished",
        "stopping",
        "wrong-turn",
        "wrong-step",
        "failed-wrong-step",
        "failed-wrong-turn",
    ],
)
def test_r26_wrong_phase_or_turn_or_step_at_pre_step(report):
    """R26: while AwaitPreStep(1, 1) only PreStepDecided/Failed(1, 1) answers."""
    run = pending()
    run.rejects(report, UnexpectedReport)


@pytest.mark.parametrize(
    "report",
    [
        PreStepDecided(1, 1, Enter(())),
        PreStepFailed(1, 1, "m", "c"),
        StepFinished(1, 2, Completed()),
        StepFinished(2, 1, Completed()),
        TurnStoppingDone(1),
    ],
    ids=["stale-decision", "stale-failure", "wrong-step", "wrong-turn", "stopping"],
)
def test_r26_wrong_or_stale_reports_during_a_step(report):
    """R26: while AwaitStep(1, 1) the stale pre-step answer is refused too."""
    run = pending()
    run.enter()
    run.rejects(report, UnexpectedReport)


@pytest.mark.parametrize(
    "report",
    [StepFinished(1, 1, Completed()), TurnStoppingDone(2), PreStepDecided(1, 2, Reject())],
    ids=["stale-step", "wrong-turn", "pre-step"],
)
def test_r26_wrong_or_stale_reports_at_turn_stopping(report):
    """R26: a repeated StepFinished for a closed step is stale."""
    run = pending()
    run.step_through()
    run.rejects(report, UnexpectedReport)


def test_r26_reports_for_a_previous_turn_are_stale():
    """R26: after turn 2 opened, turn 1's reports are refused."""
    run = Run()
    run(followup(msg("a")))
    run(followup(msg("b")))
    run.step_through()
    run.stop()
    assert run.state.last_turn == 2
    for report in (
        TurnStoppingDone(1),
        StepFinished(1, 1, Completed()),
        PreStepDecided(1, 1, Reject()),
        PreStepDecided(1, 2, Reject()),
    ):
        run.rejects(report, UnexpectedReport)


def test_r8_steer_unavailable_is_a_typed_rejection():
    """R8, R26: SteerUnavailable is an InboxCoreError and changes nothing."""
    run = idle_parked()
    error = run.rejects(Move("a", "next-step"), SteerUnavailable)
    assert isinstance(error, InboxCoreError)


# ------------------------------------------------------------------- dispose

AFTER_DISPOSE = [
    followup(msg("x")),
    queue(msg("x")),
    steer(msg("x")),
    inject(msg("x")),
    Splice("next-turn", 0, 0, (e("x"),)),
    Splice("next-turn", 0, 0, ()),
    Clear(),
    Replace("x", msg("y")),
    Remove("x"),
    Move("x", "next-step"),
    Cancel(),
    Cancel(HookCause("h"), keep_inbox=True),
    Dispose(),
    Resume(),
]


@pytest.mark.parametrize("command", AFTER_DISPOSE, ids=lambda c: type(c).__name__)
def test_r25_d16_every_command_after_dispose_raises_agent_disposed(command):
    """R25, D16: from the dispose on every non-report command is refused."""
    run = pending()
    run(Dispose())
    run.rejects(command, AgentDisposed)


@pytest.mark.parametrize(
    "report",
    [
        StepFinished(1, 1, Completed()),
        TurnStoppingDone(1),
        PreStepDecided(1, 2, Reject()),
        PreStepDecided(2, 1, Reject()),
    ],
    ids=["phase", "stopping", "step", "turn"],
)
def test_r25_d16_non_matching_reports_after_dispose_raise_agent_disposed(report):
    """D16: a report that does not answer the awaited action -> AgentDisposed."""
    run = pending()
    run(Dispose())
    run.rejects(report, AgentDisposed)
    t = run(PreStepDecided(1, 1, Enter((msg("run"),))))  # the in-flight report still works
    assert t.state.status == "idle"


@pytest.mark.parametrize("report", IDLE_REPORTS, ids=lambda r: type(r).__name__)
def test_r25_every_report_after_convergence_raises_agent_disposed(report):
    """R25, D16: once disposed and idle, no report answers anything."""
    run = pending()
    run(Dispose())
    run(PreStepDecided(1, 1, Reject()))
    run.rejects(report, AgentDisposed)


# -------------------------------------------------------------- resume first


def orphaned() -> Run:
    """A replayed state whose log stops inside step 1 of turn 1 (a crash)."""
    source = Run()
    source(followup(msg("a")))
    source(queue(msg("q")))
    source.enter()
    state = replay(source.log)
    assert state.resume_required
    return Run(state, source.log)


@pytest.mark.parametrize(
    "command",
    [
        followup(msg("x")),
        inject(msg("x")),
        Splice("next-turn", 0, 0, ()),
        Clear(),
        Replace("q", msg("y")),
        Remove("q"),
        Move("q", "next-step"),
        Cancel(),
        Dispose(),
        StepFinished(1, 1, Completed()),
        StepFinished(1, 1, Continue()),
        PreStepDecided(1, 1, Reject()),
        TurnStoppingDone(1),
    ],
    ids=lambda c: type(c).__name__,
)
def test_r27_d16_commands_before_resume_raise_resume_required(command):
    """R27, D16: any command but Resume on an orphaned replayed state -> ResumeRequired."""
    run = orphaned()
    run.rejects(command, ResumeRequired)


def test_d16_not_a_command_beats_resume_required():
    """D16: InvalidInput for a non-command comes before ResumeRequired."""
    run = orphaned()
    run.rejects("resume", InvalidInput)


def test_i11_rejections_at_every_phase_change_nothing():
    """I11, R26: a batch of bad commands at each phase of a session all leave it intact."""
    from inbox_core import AwaitPreStep, AwaitStep

    bad: list[tuple[Any, type[Exception]]] = [
        (TurnStoppingDone(9), UnexpectedReport),
        (StepFinished(9, 9, Completed()), UnexpectedReport),
        (PreStepDecided(9, 1, Reject()), UnexpectedReport),
        (object(), InvalidInput),
    ]
    run = Run()
    run(followup(msg("run")))
    run(queue(msg("q")))
    run(inject(msg("i")))
    phases = []
    while run.state.status == "running":
        for command, error in bad:
            run.rejects(command, error)
        for pending_id in run.state.inbox.message_ids():
            run.rejects(inject(msg(pending_id)), DuplicateMessageId)
        awaiting = run.state.awaiting
        phases.append(type(awaiting).__name__)
        if len(phases) == 2:
            run(steer(msg("s")))
        if isinstance(awaiting, AwaitPreStep):
            run.enter()
        elif isinstance(awaiting, AwaitStep):
            run.finish()
        else:
            run.stop()
    assert phases == [
        "AwaitPreStep",
        "AwaitStep",
        "AwaitPreStep",
        "AwaitStep",
        "AwaitTurnStopping",
    ]
    assert run.state.next_turn == (Entry(msg("q"), (), False),)
    state = AgentState.initial()
    with pytest.raises(UnexpectedReport):
        reduce(state, TurnStoppingDone(1))
    assert state == AgentState()
