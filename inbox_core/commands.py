"""Commands the reducer accepts: caller commands and the host driver's reports.

Shapes are validated at construction (a bad shape raises ``InvalidInput`` or
``InvalidSplice``); whether a command fits the current state is the reducer's
business (``reduce``). Each command class declares its JSON tag once, as its
``type`` constant; decisions and step outcomes declare their ``kind``
(``inbox_core.codec`` reads them).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar, Literal, TypeAlias, get_args

import attrs

from inbox_core import limits
from inbox_core.errors import InvalidInput, InvalidSplice, shown
from inbox_core.events import HostRecord, records_size
from inbox_core.validators import (
    identifier,
    instance_of,
    integer,
    one_of,
    strict_bool,
    text,
    tuple_of,
)
from inbox_core.values import (
    INPUT_TYPES,
    TARGETS,
    Entry,
    HookCause,
    InjectInput,
    MessageId,
    NextTurnInput,
    ParentCause,
    ResolvedAgentInput,
    SteerInput,
    Target,
    UserCause,
    UserMessage,
    entries_size,
    messages_size,
)

_entry_tuple = tuple_of(Entry, what="Entry", error=InvalidSplice)
_message_tuple = tuple_of(UserMessage, what="an entering UserMessage")
_record_tuple = tuple_of(HostRecord, what="a HostRecord ('host/<name>')")


def _entries(value: object) -> tuple[Entry, ...]:
    """A splice's entries, within ``limits.MAX_VALUE_SIZE`` together (one alone is)."""
    entries = _entry_tuple(value)
    if len(entries) > 1:
        limits.value_size(entries_size(entries), "a splice's entries")
    return entries


def _enter_messages(value: object) -> tuple[UserMessage, ...]:
    """An entering batch, within ``limits.MAX_VALUE_SIZE`` together (one alone is)."""
    messages = _message_tuple(value)
    if len(messages) > 1:
        limits.value_size(messages_size(messages), "an Enter's messages")
    return messages


def _records(value: object) -> tuple[HostRecord, ...]:
    """A report's records, within ``limits.MAX_VALUE_SIZE`` together (one alone is)."""
    if value == ():
        return ()
    records = _record_tuple(value)
    if len(records) > 1:
        limits.value_size(records_size(records), "a report's records")
    return records


def _records_field() -> Any:
    """The optional last field of every report: host records appended first (R30)."""
    return attrs.field(default=(), converter=_records, kw_only=False)


# ------------------------------------------------------------------ expectations


@attrs.frozen
class ExpectIdle:
    """Holds while the agent's status is ``idle``; a guarded command raises ``AgentBusy``
    otherwise (R34): start a turn only when nothing runs."""

    kind: ClassVar[Literal["idle"]] = "idle"


@attrs.frozen
class ExpectTurn:
    """Holds while turn ``turn`` is live: opened, not ended, not aborted; a guarded command
    raises ``TurnMismatch`` otherwise (R34): act only on the turn the caller saw."""

    kind: ClassVar[Literal["turn"]] = "turn"
    turn: int = attrs.field(validator=integer(1))


Expectation: TypeAlias = ExpectIdle | ExpectTurn
EXPECTATION_TYPES: tuple[type[Expectation], ...] = get_args(Expectation)


_expect = attrs.validators.optional(
    instance_of(*EXPECTATION_TYPES, what="ExpectIdle(), ExpectTurn(n) or None")
)
"""The optional last field of a guarded command (``Send``, ``Move``, ``Cancel``; R34)."""


# ---------------------------------------------------------------- caller commands


@attrs.frozen
class Send:
    """Deliver one fully resolved input (R11, R13, R14), if ``expect`` holds (R34)."""

    type: ClassVar[Literal["send"]] = "send"
    input: ResolvedAgentInput = attrs.field(
        validator=instance_of(*INPUT_TYPES, what="a NextTurnInput, SteerInput or InjectInput")
    )
    expect: Expectation | None = attrs.field(default=None, validator=_expect)


# The four intents (R12): the one place that says which target and wakeup each means.


def _contexts(value: Sequence[UserMessage]) -> tuple[UserMessage, ...]:
    """A helper's ``contexts`` argument as a tuple; a non-sequence is ``InvalidInput``."""
    if isinstance(value, tuple):
        return value
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        raise InvalidInput(f"contexts must be a sequence of UserMessage, got {shown(value)}")
    return tuple(value)


def followup(
    message: UserMessage, contexts: Sequence[UserMessage] = (), *, expect: Expectation | None = None
) -> Send:
    """next-turn, waking: an ordinary prompt with a turn of its own."""
    return Send(NextTurnInput(message, _contexts(contexts), "next-turn", True), expect)


def queue(
    message: UserMessage, contexts: Sequence[UserMessage] = (), *, expect: Expectation | None = None
) -> Send:
    """next-turn, not waking: parked until a waking delivery runs the model (R15)."""
    return Send(NextTurnInput(message, _contexts(contexts), "next-turn", False), expect)


def steer(
    message: UserMessage, contexts: Sequence[UserMessage] = (), *, expect: Expectation | None = None
) -> Send:
    """next-step, waking: joins the running turn at its next step boundary (R17)."""
    return Send(SteerInput(message, _contexts(contexts), "next-step", True), expect)


def inject(message: UserMessage, *, expect: Expectation | None = None) -> Send:
    """next-step, not waking, no contexts: rides along with a later boundary (R15)."""
    return Send(InjectInput(message, (), "next-step", False), expect)


@attrs.frozen
class Splice:
    """List-splice edit of one pending list (R5, R7); coordinates are normalized."""

    type: ClassVar[Literal["splice"]] = "splice"
    target: Target = attrs.field(validator=one_of(TARGETS, InvalidSplice))
    start: int = attrs.field(validator=integer(error=InvalidSplice))
    delete_count: int = attrs.field(validator=integer(error=InvalidSplice))
    inserted: tuple[Entry, ...] = attrs.field(converter=_entries)


@attrs.frozen
class Clear:
    """Cancel every pending entry, next-step first, then next-turn (R7)."""

    type: ClassVar[Literal["clear"]] = "clear"


@attrs.frozen
class Replace:
    """Swap a pending entry's primary message in place, keeping contexts and wakeup (R7)."""

    type: ClassVar[Literal["replace"]] = "replace"
    message_id: MessageId = attrs.field(validator=identifier)
    message: UserMessage = attrs.field(validator=instance_of(UserMessage, what="a UserMessage"))


@attrs.frozen
class Remove:
    """Cancel one pending entry by its primary MessageId (R7)."""

    type: ClassVar[Literal["remove"]] = "remove"
    message_id: MessageId = attrs.field(validator=identifier)


@attrs.frozen
class Move:
    """Move one pending entry to the end of the other list (R8), if ``expect`` holds (R34)."""

    type: ClassVar[Literal["move"]] = "move"
    message_id: MessageId = attrs.field(validator=identifier)
    target: Target = attrs.field(validator=one_of(TARGETS))
    expect: Expectation | None = attrs.field(default=None, validator=_expect)


@attrs.frozen
class Cancel:
    """Abort the live turn; without ``keep_inbox`` also cancel every pending entry (R21, R22);
    only if ``expect`` holds (R34)."""

    type: ClassVar[Literal["cancel"]] = "cancel"
    cause: UserCause | ParentCause | HookCause = attrs.field(
        factory=UserCause,
        validator=instance_of(
            UserCause, ParentCause, HookCause, what="a user, parent or hook cause"
        ),
    )
    keep_inbox: bool = attrs.field(default=False, validator=strict_bool)
    expect: Expectation | None = attrs.field(default=None, validator=_expect)


@attrs.frozen
class Dispose:
    """Clear, abort with ``DisposedCause`` and refuse further commands (R25)."""

    type: ClassVar[Literal["dispose"]] = "dispose"


@attrs.frozen
class Resume:
    """Close a turn a crash left open and restore its unanswered claim (R27)."""

    type: ClassVar[Literal["resume"]] = "resume"


@attrs.frozen
class BeginMaintenance:
    """Start a between-turn job; accepted only while idle (R31)."""

    type: ClassVar[Literal["begin-maintenance"]] = "begin-maintenance"


# -------------------------------------------------------------------- decisions


@attrs.frozen
class Enter:
    """The final entering batch of a step; it may rewrite, add or drop messages (R16)."""

    kind: ClassVar[Literal["enter"]] = "enter"
    messages: tuple[UserMessage, ...] = attrs.field(converter=_enter_messages)


@attrs.frozen
class Reject:
    """Refuse the proposed step; the turn ends ``blocked`` (R16)."""

    kind: ClassVar[Literal["reject"]] = "reject"


Decision: TypeAlias = Enter | Reject

# --------------------------------------------------------------------- outcomes


@attrs.frozen
class Continue:
    """The step's tool results need another step."""

    kind: ClassVar[Literal["continue"]] = "continue"


@attrs.frozen
class Completed:
    """The step finished and does not ask for another."""

    kind: ClassVar[Literal["completed"]] = "completed"


@attrs.frozen
class MaxTokens:
    """The step stopped at the token limit; the turn ends ``max-tokens`` (sticky)."""

    kind: ClassVar[Literal["max-tokens"]] = "max-tokens"


@attrs.frozen
class Failed:
    """The step failed; the turn ends ``error``."""

    kind: ClassVar[Literal["failed"]] = "failed"
    message: str = attrs.field(validator=text)
    code: str = attrs.field(validator=text)


StepOutcome: TypeAlias = Continue | Completed | MaxTokens | Failed

# ----------------------------------------------------------------- host reports

_turn = integer(1)


@attrs.frozen
class PreStepDecided:
    """Answer to ``AwaitPreStep``."""

    type: ClassVar[Literal["pre-step-decided"]] = "pre-step-decided"
    turn: int = attrs.field(validator=_turn)
    step: int = attrs.field(validator=_turn)
    decision: Decision = attrs.field(
        validator=instance_of(*get_args(Decision), what="Enter or Reject")
    )
    records: tuple[HostRecord, ...] = _records_field()


@attrs.frozen
class PreStepFailed:
    """The pre-step decision itself failed: the turn ends ``error`` with no step (R18)."""

    type: ClassVar[Literal["pre-step-failed"]] = "pre-step-failed"
    turn: int = attrs.field(validator=_turn)
    step: int = attrs.field(validator=_turn)
    message: str = attrs.field(validator=text)
    code: str = attrs.field(validator=text)
    records: tuple[HostRecord, ...] = _records_field()


@attrs.frozen
class StepFinished:
    """Answer to ``AwaitStep``."""

    type: ClassVar[Literal["step-finished"]] = "step-finished"
    turn: int = attrs.field(validator=_turn)
    step: int = attrs.field(validator=_turn)
    outcome: StepOutcome = attrs.field(
        validator=instance_of(*get_args(StepOutcome), what="a step outcome")
    )
    records: tuple[HostRecord, ...] = _records_field()


@attrs.frozen
class TurnStoppingDone:
    """Answer to ``AwaitTurnStopping``: listeners ran (and may have steered)."""

    type: ClassVar[Literal["turn-stopping-done"]] = "turn-stopping-done"
    turn: int = attrs.field(validator=_turn)
    records: tuple[HostRecord, ...] = _records_field()


@attrs.frozen
class EndMaintenance:
    """The maintenance job ended; its records are appended first (R30, R31)."""

    type: ClassVar[Literal["end-maintenance"]] = "end-maintenance"
    records: tuple[HostRecord, ...] = _records_field()


Report: TypeAlias = (
    PreStepDecided | PreStepFailed | StepFinished | TurnStoppingDone | EndMaintenance
)
REPORT_TYPES: tuple[type[Report], ...] = get_args(Report)

Command: TypeAlias = (
    Send
    | Splice
    | Clear
    | Replace
    | Remove
    | Move
    | Cancel
    | Dispose
    | Resume
    | BeginMaintenance
    | EndMaintenance
    | PreStepDecided
    | PreStepFailed
    | StepFinished
    | TurnStoppingDone
)
GUARDED_TYPES: tuple[type[Command], ...] = tuple(
    cls for cls in get_args(Command) if "expect" in attrs.fields_dict(cls)
)
"""The caller commands that carry an expectation (R34): ``Send``, ``Move``, ``Cancel``."""
