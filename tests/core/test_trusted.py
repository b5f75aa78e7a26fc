"""``validators.trusted`` and the D31 check that keeps it honest.

The reducer builds its states, phases, events and notifications without
running their checks (D31); ``check_well_formed`` rebuilds every output
through the checking constructors, and the machine runs it after every step.
"""

from __future__ import annotations

from typing import Any

import attrs
import pytest
from hypothesis import HealthCheck, Phase, settings

from inbox_core import (
    AgentState,
    AwaitPreStep,
    AwaitStep,
    AwaitTurnStopping,
    Cancel,
    Command,
    Completed,
    Enter,
    Entry,
    Failed,
    HostRecord,
    InboxInserted,
    InboxSpliced,
    InvalidInput,
    PluginSource,
    PreStepDecided,
    Reject,
    StepFinished,
    Transition,
    TurnEnded,
    TurnStarted,
    TurnStoppingDone,
    UserMessage,
    followup,
    reduce,
)
from inbox_core.events import CompletedReason
from inbox_core.state import PreStep
from inbox_core.testing import (
    InboxMachine,
    InvariantViolation,
    check_well_formed,
    rebuilt,
    run_machine,
)
from inbox_core.validators import field_check, trusted
from tests.core.helpers import msg

COMPLETED = Completed()
FIND_ONLY = settings(
    max_examples=50,
    stateful_step_count=20,
    phases=(Phase.generate,),
    derandomize=True,
    database=None,
    deadline=None,
    suppress_health_check=list(HealthCheck),
    print_blob=False,
)


def followups(prefix: str, count: int) -> list[Command]:
    return [followup(msg(f"{prefix}{i}")) for i in range(count)]


M = msg("a")
ENTRY = Entry(M, (msg("c"),), True)

SAMPLES: list[tuple[type, dict[str, Any]]] = [
    (
        InboxSpliced,
        {
            "target": "next-turn",
            "start": 2,
            "removed_count": 1,
            "inserted": (ENTRY,),
            "outcome": "canceled",
        },
    ),
    (InboxInserted, {"message": M}),
    (TurnStarted, {"turn": 7}),
    (TurnEnded, {"turn": 7, "reason": CompletedReason()}),
    (Entry, {"message": M, "contexts": (), "wakeup": False}),
    (AwaitPreStep, {"turn": 1, "step": 2, "batch": (M,)}),
    (PreStep, {"awaiting": AwaitPreStep(1, 1, ()), "after_continue": True}),
    (AgentState, {"last_turn": 3, "max_tokens": True}),
    (StepFinished, {"turn": 1, "step": 1, "outcome": COMPLETED}),
]


@pytest.mark.parametrize(("cls", "fields"), SAMPLES, ids=[c.__name__ for c, _ in SAMPLES])
def test_trusted_builds_the_same_frozen_value_as_the_class(
    cls: type, fields: dict[str, Any]
) -> None:
    """D31: same value, same hash, still frozen; only the checks are skipped."""
    built = trusted(cls)(**fields)
    checked = cls(**fields)
    assert type(built) is cls
    assert built == checked
    assert hash(built) == hash(checked)
    assert repr(built) == repr(checked)
    name = attrs.fields(cls)[0].name
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        setattr(built, name, getattr(built, name))


def test_trusted_keeps_the_signature_positional_keyword_only_and_defaults() -> None:
    """D31: the builder takes what the constructor takes."""
    assert trusted(AgentState)() == AgentState()  # every field defaulted, keyword-only
    with pytest.raises(TypeError):
        trusted(AgentState)(AgentState().phase)  # type: ignore[misc]  # keyword-only
    assert trusted(TurnStoppingDone)(4) == TurnStoppingDone(4)  # records defaults to ()
    assert trusted(StepFinished)(1, 2, COMPLETED) == StepFinished(1, 2, COMPLETED)
    with pytest.raises(TypeError):
        trusted(TurnStarted)()  # type: ignore[call-arg]  # a field without default
    assert trusted(InboxInserted).__name__ == "trusted_InboxInserted"


def test_trusted_skips_the_checks_it_is_named_for() -> None:
    """D31: nothing is checked; that is why check_well_formed exists."""
    assert trusted(TurnStarted)(0).turn == 0
    with pytest.raises(Exception, match="turn"):
        TurnStarted(0)


@attrs.frozen(slots=False)
class _Unslotted:
    x: int


@attrs.frozen
class _InitFalse:
    x: int
    y: int = attrs.field(init=False, default=0)


@attrs.frozen
class _Factory:
    x: list[int] = attrs.field(factory=list)


class _Plain:
    __slots__ = ("x",)


@pytest.mark.parametrize(
    "cls",
    [_Plain, _Unslotted, _InitFalse, _Factory, UserMessage, PluginSource, Cancel],
    ids=[
        "not attrs",
        "no slots",
        "init=False",
        "factory",
        "cache_hash",
        "post_init",
        "factory default",
    ],
)
def test_trusted_refuses_classes_whose_construction_does_more(cls: type) -> None:
    """D31: a cached hash, a post-init check or a factory would be skipped silently."""
    with pytest.raises(TypeError, match="trusted"):
        trusted(cls)


# ------------------------------------------------------------------ the check


def _turn_one() -> Transition:
    return reduce(AgentState.initial(), followups("w", 1)[0])


def test_rebuilt_goes_all_the_way_down() -> None:
    transition = _turn_one()
    again = rebuilt(transition)
    assert again == transition
    assert again is not transition
    assert again.state.phase is not transition.state.phase
    assert rebuilt(("x", 3, None)) == ("x", 3, None)


def test_check_well_formed_passes_what_reduce_builds() -> None:
    state = AgentState.initial()
    for send in followups("p", 3):
        transition = reduce(state, send)
        check_well_formed(transition)
        state = transition.state


def test_check_well_formed_names_an_unchecked_bad_field() -> None:
    """D31: a turn number the checks refuse (0), and a bool posing as 1."""
    good = _turn_one()
    for bad_turn in (0, True):
        bad = attrs.evolve(good, durable=(trusted(TurnStarted)(bad_turn), *good.durable[1:]))
        with pytest.raises(InvariantViolation, match="D31"):
            check_well_formed(bad)


def test_check_well_formed_names_a_field_the_converter_would_change() -> None:
    """D31: a list where the constructor makes a tuple compares unequal after rebuild."""
    good = _turn_one()
    spliced = trusted(InboxSpliced)("next-turn", 0, 0, [ENTRY], None)  # type: ignore[arg-type]
    bad = attrs.evolve(good, durable=(spliced,))
    with pytest.raises(InvariantViolation, match="D31"):
        check_well_formed(bad)


class _BoolTurns(InboxMachine):
    """A port that numbers its first turn ``True``: equal to 1 everywhere but in a check."""

    check_every_prefix = False

    def apply(self, command: Command) -> Transition:
        t = reduce(self.state, command)
        durable = tuple(
            trusted(TurnStarted)(True) if isinstance(e, TurnStarted) and e.turn == 1 else e
            for e in t.durable
        )
        return Transition(t.state, durable, t.notifications)


def test_the_machine_checks_d29_after_every_step() -> None:
    with pytest.raises(InvariantViolation, match="D31"):
        run_machine(_BoolTurns, config=FIND_ONLY)


# ------------------------------------------------------- answers and field_check

RECORD = HostRecord("host/note", {"n": 1})
GOOD_ANSWERS: list[tuple[Any, Any]] = [
    (
        AwaitPreStep(2, 3, (M,)).answer(Enter((M,)), (RECORD,)),
        PreStepDecided(2, 3, Enter((M,)), (RECORD,)),
    ),
    (AwaitPreStep(2, 3, ()).answer(Reject(), [RECORD]), PreStepDecided(2, 3, Reject(), (RECORD,))),
    (AwaitStep(1, 1).answer(COMPLETED), StepFinished(1, 1, COMPLETED)),
    (
        AwaitStep(1, 4).answer(Failed("x", "E"), (RECORD,)),
        StepFinished(1, 4, Failed("x", "E"), (RECORD,)),
    ),
    (AwaitTurnStopping(5).answer(), TurnStoppingDone(5)),
    (AwaitTurnStopping(5).answer((RECORD,)), TurnStoppingDone(5, (RECORD,))),
]


@pytest.mark.parametrize(("answered", "built"), GOOD_ANSWERS)
def test_answer_builds_what_the_report_constructor_builds(answered: Any, built: Any) -> None:
    """D31, R26: ``answer`` checks only the host's part but builds the same report."""
    assert type(answered) is type(built)
    assert answered == built
    assert rebuilt(answered) == answered


BAD_ANSWERS: list[tuple[Any, Any]] = [
    (lambda: AwaitPreStep(1, 1, ()).answer(None), lambda: PreStepDecided(1, 1, None)),
    (
        lambda: AwaitPreStep(1, 1, ()).answer(Reject(), (M,)),
        lambda: PreStepDecided(1, 1, Reject(), (M,)),
    ),
    (
        lambda: AwaitPreStep(1, 1, ()).answer(Reject(), "host/x"),
        lambda: PreStepDecided(1, 1, Reject(), "host/x"),
    ),
    (lambda: AwaitStep(1, 1).answer(Reject()), lambda: StepFinished(1, 1, Reject())),
    (lambda: AwaitTurnStopping(1).answer(None), lambda: TurnStoppingDone(1, None)),
]


@pytest.mark.parametrize(("answer", "construct"), BAD_ANSWERS)
def test_answer_refuses_what_the_report_constructor_refuses(answer: Any, construct: Any) -> None:
    """D31, D17: the host's part goes through the report's own checks, same error, same text."""
    with pytest.raises(InvalidInput) as by_constructor:
        construct()
    with pytest.raises(InvalidInput) as by_answer:
        answer()
    assert str(by_answer.value) == str(by_constructor.value)


@pytest.mark.parametrize(
    "build",
    [
        lambda: AwaitPreStep(0, 1, ()),
        lambda: AwaitPreStep(1, True, ()),
        lambda: AwaitPreStep(1, 1, (ENTRY,)),
        lambda: AwaitStep(1, 0),
        lambda: AwaitTurnStopping("1"),
    ],
)
def test_awaited_actions_check_their_fields(build: Any) -> None:
    """D17, D31: ``answer`` trusts the action's turn and step, so the action checks them."""
    with pytest.raises(InvalidInput):
        build()


def test_field_check_is_the_fields_converter_then_validator() -> None:
    """D31: one field's checks as a function, exactly as declared."""
    records = field_check(PreStepDecided, "records")
    assert records([RECORD]) == (RECORD,)
    assert records(()) == ()
    with pytest.raises(InvalidInput, match="HostRecord"):
        records([M])
    turn = field_check(TurnStarted, "turn")
    assert turn(3) == 3
    with pytest.raises(InvalidInput, match="turn"):
        turn(0)
    assert field_check(_Unslotted, "x")("anything") == "anything"  # nothing declared

    @attrs.frozen
    class _WithConverterObject:
        x: int = attrs.field(converter=attrs.Converter(int))

    with pytest.raises(TypeError, match="plain converters"):
        field_check(_WithConverterObject, "x")
