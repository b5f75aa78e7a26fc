"""The agent as a value: a phase plus the few facts that outlive a phase.

``AgentState`` is what ``reduce`` takes and returns and what ``replay``
rebuilds; both import it from here. Its one moving part is ``phase``, a
small union whose variant says what the agent is doing and carries exactly
the facts that matter while it does it:

======================  ==========  =========================================
phase                   status      the core awaits
======================  ==========  =========================================
``Idle``                idle        nothing (a waking insertion opens a turn)
``Maintenance``         maintenance ``EndMaintenance`` (R31)
``PreStep``             running     the pre-step decision on ``batch`` (R16)
``Step``                running     the step's outcome
``TurnStopping``        running     turn-stopping listeners (R17)
``Orphaned``            running     ``Resume``: a crash left this turn open
``Stranded``            idle        ``Resume``: waking work left unstarted
======================  ==========  =========================================

The facts that outlive a phase are the inbox, the last turn number, whether
the agent is disposed, the abort cause of the open turn or job (first cause
wins, R23) and the sticky max-tokens flag of the open turn (R18).
Everything the brief pins (``status``, ``awaiting``, ``next_turn``, ...) is
a property computed from these, so no fact is stored twice.
"""

from __future__ import annotations

from typing import Final, TypeAlias

import attrs

from inbox_core.commands import (
    Decision,
    PreStepDecided,
    PreStepFailed,
    StepFinished,
    StepOutcome,
    TurnStoppingDone,
)
from inbox_core.events import DurableEvent, HostRecord, Notification, Status
from inbox_core.inbox import EMPTY_INBOX, Inbox
from inbox_core.validators import field_check, integer, trusted, tuple_of
from inbox_core.values import Cause, Entry, UserMessage

_count = integer(1)
_messages = tuple_of(UserMessage, what="a UserMessage")

# ------------------------------------------------------------- awaited actions


def _batch(value: object) -> tuple[UserMessage, ...]:
    return _messages(value)


@attrs.frozen
class AwaitPreStep:
    """The host decides the entering batch of step ``step`` (answer: PreStepDecided/Failed)."""

    turn: int = attrs.field(validator=_count)
    step: int = attrs.field(validator=_count)
    batch: tuple[UserMessage, ...] = attrs.field(converter=_batch)

    def answer(self, decision: Decision, records: tuple[HostRecord, ...] = ()) -> PreStepDecided:
        return _pre_step_decided(self.turn, self.step, _decision(decision), _records(records))

    def fail(self, message: str, code: str, records: tuple[HostRecord, ...] = ()) -> PreStepFailed:
        return PreStepFailed(self.turn, self.step, message, code, records)

    def answered_by(self, report: object) -> bool:
        """Whether ``report`` answers exactly this action: its kind, turn and step (R26)."""
        return (
            isinstance(report, (PreStepDecided, PreStepFailed))
            and report.turn == self.turn
            and report.step == self.step
        )


@attrs.frozen
class AwaitStep:
    """The host runs step ``step`` (answer: StepFinished)."""

    turn: int = attrs.field(validator=_count)
    step: int = attrs.field(validator=_count)

    def answer(self, outcome: StepOutcome, records: tuple[HostRecord, ...] = ()) -> StepFinished:
        return _step_finished(self.turn, self.step, _outcome(outcome), _records(records))

    def answered_by(self, report: object) -> bool:
        """Whether ``report`` answers exactly this action: its kind, turn and step (R26)."""
        return (
            isinstance(report, StepFinished)
            and report.turn == self.turn
            and report.step == self.step
        )


@attrs.frozen
class AwaitTurnStopping:
    """Turn-stopping listeners run and may steer (answer: TurnStoppingDone)."""

    turn: int = attrs.field(validator=_count)

    def answer(self, records: tuple[HostRecord, ...] = ()) -> TurnStoppingDone:
        return _turn_stopping_done(self.turn, _records(records))

    def answered_by(self, report: object) -> bool:
        """Whether ``report`` answers exactly this action: its kind and turn (R26)."""
        return isinstance(report, TurnStoppingDone) and report.turn == self.turn


# ``answer`` builds its report from this action's checked turn and step; only
# the host's part (decision, outcome, records) goes through the report's checks
# (D31). It is the one report every step of every turn builds.
_pre_step_decided = trusted(PreStepDecided)
_step_finished = trusted(StepFinished)
_turn_stopping_done = trusted(TurnStoppingDone)
_decision = field_check(PreStepDecided, "decision")
_outcome = field_check(StepFinished, "outcome")
_records = field_check(PreStepDecided, "records")  # the same field in every report

Awaiting: TypeAlias = AwaitPreStep | AwaitStep | AwaitTurnStopping


@attrs.frozen
class Claim:
    """What a boundary claimed and no pre-step decision answered yet (R23, R27)."""

    next_step: tuple[Entry, ...] = ()
    next_turn: tuple[Entry, ...] = ()


NO_CLAIM: Final = Claim()

# ---------------------------------------------------------------------- phases


@attrs.frozen
class Idle:
    """No turn is open and no job runs."""


@attrs.frozen
class Maintenance:
    """A between-turn job runs; waking input waits for its end (R31)."""


@attrs.frozen(kw_only=True)
class PreStep:
    """Awaiting the decision on the batch claimed for a step (``awaiting`` says which).

    ``after_continue``: the previous step asked for another, so an empty
    batch still starts the step (R17). The entries the batch came from are not
    kept: a live claim is answered by a decision or consumed by the turn (R23);
    only a replayed ``Orphaned`` turn's claim can go back to the inbox (R27).
    """

    awaiting: AwaitPreStep
    after_continue: bool

    @property
    def turn(self) -> int:
        return self.awaiting.turn

    @property
    def step(self) -> int:
        return self.awaiting.step


@attrs.frozen(kw_only=True)
class Step:
    """A step is open (``step/start`` written, no ``step/end``); its outcome is awaited."""

    awaiting: AwaitStep

    @property
    def turn(self) -> int:
        return self.awaiting.turn

    @property
    def step(self) -> int:
        return self.awaiting.step


@attrs.frozen(kw_only=True)
class TurnStopping:
    """The turn ran ``step`` steps and awaits its turn-stopping listeners."""

    awaiting: AwaitTurnStopping
    step: int

    @property
    def turn(self) -> int:
        return self.awaiting.turn


@attrs.frozen(kw_only=True)
class Orphaned:
    """A replayed log left turn ``turn`` open; only ``Resume`` is accepted (R27)."""

    turn: int
    step: int
    step_open: bool
    claim: Claim


@attrs.frozen
class Stranded:
    """A replayed log left waking work idle; only ``Resume`` is accepted (R27)."""


Phase: TypeAlias = Idle | Maintenance | PreStep | Step | TurnStopping | Orphaned | Stranded
TURN_PHASES: Final = (PreStep, Step, TurnStopping)
"""The phases of a live, driven turn (``Orphaned`` is open but not driven)."""

IDLE: Final = Idle()
MAINTENANCE: Final = Maintenance()
STRANDED: Final = Stranded()

STATUS_OF: Final[dict[type, Status]] = {
    Idle: "idle",
    Maintenance: "maintenance",
    PreStep: "running",
    Step: "running",
    TurnStopping: "running",
    Orphaned: "running",
    Stranded: "idle",
}


@attrs.frozen
class Projection:
    """What the durable log determines (R10, I5): compare live and replayed states by this."""

    next_turn: tuple[Entry, ...]
    next_step: tuple[Entry, ...]
    last_turn: int
    open_turn: int | None
    open_step: int | None


@attrs.frozen(kw_only=True)
class AgentState:
    """The whole agent as a value. Build the first one with ``AgentState.initial()``."""

    phase: Phase = IDLE
    inbox: Inbox = EMPTY_INBOX
    last_turn: int = 0
    disposed: bool = False
    abort_cause: Cause | None = None
    max_tokens: bool = False

    @classmethod
    def initial(cls) -> AgentState:
        return _INITIAL

    @property
    def status(self) -> Status:
        return STATUS_OF[type(self.phase)]

    @property
    def awaiting(self) -> Awaiting | None:
        """The one host report the core waits for; None when no turn is driven."""
        return getattr(self.phase, "awaiting", None)

    @property
    def next_turn(self) -> tuple[Entry, ...]:
        return self.inbox.next_turn

    @property
    def next_step(self) -> tuple[Entry, ...]:
        return self.inbox.next_step

    @property
    def turn_open(self) -> bool:
        """A turn is open: driven, or orphaned by a crash."""
        return isinstance(self.phase, (*TURN_PHASES, Orphaned))

    @property
    def open_step(self) -> int | None:
        """The step with a ``step/start`` and no ``step/end`` yet."""
        phase = self.phase
        if isinstance(phase, Step) or (isinstance(phase, Orphaned) and phase.step_open):
            return phase.step
        return None

    @property
    def resume_required(self) -> bool:
        """A replayed state on which only ``Resume`` is accepted (R27)."""
        return isinstance(self.phase, (Orphaned, Stranded))

    def projection(self) -> Projection:
        return Projection(
            self.inbox.next_turn,
            self.inbox.next_step,
            self.last_turn,
            self.last_turn if self.turn_open else None,
            self.open_step,
        )


_INITIAL: Final = AgentState()


@attrs.frozen
class Transition:
    """The result of one command: new state, durable events, live notifications."""

    state: AgentState
    durable: tuple[DurableEvent, ...]
    notifications: tuple[Notification, ...]
