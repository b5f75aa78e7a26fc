"""What the reducer emits: durable events (the log) and live notifications.

Durable events are the only authority: ``replay`` folds them back into the
state (R10). Notifications are per-message announcements with no placement or
batch envelope; the durable splice owns those facts (R5, R6). Each class has a
``type`` class attribute equal to its JSON ``"type"`` (section Formats), each
turn-end reason a ``kind``; the ``*_TYPES`` tuples are read from the union
aliases, so a union's members are listed once.

Events validate their fields at construction like values and commands (a
turn or step counts from 1, a splice's coordinates from 0, a target, an
outcome, a reason or a cause is one of its kind), so an event that exists is
well typed. What the log may hold is ``replay``'s business: order, placement
and the two splice rules that span fields (a recorded splice changes
something; an outcome names a removal), which the conformance vectors state
as replay errors.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, ClassVar, Final, Literal, TypeAlias, get_args

import attrs

from inbox_core import limits
from inbox_core.errors import InvalidInput, shown
from inbox_core.json_values import JsonValue, freeze_json, json_size
from inbox_core.validators import (
    instance_of,
    integer,
    one_of,
    optional_integer,
    text,
    tuple_of,
)
from inbox_core.values import CAUSE_TYPES, TARGETS, Cause, Entry, Target, UserMessage

Outcome: TypeAlias = Literal["canceled", "moved"]
Status: TypeAlias = Literal["idle", "running", "maintenance"]

_count = integer(1)  # turns and steps count from 1
_index = integer(0)
_message = instance_of(UserMessage, what="a UserMessage")
_cause = instance_of(*CAUSE_TYPES, what="a cause")
_target = one_of(TARGETS)

# ------------------------------------------------------------- turn-end reasons


@attrs.frozen
class CompletedReason:
    kind: ClassVar[Literal["completed"]] = "completed"


@attrs.frozen
class BlockedReason:
    """The pre-step decision rejected the step."""

    kind: ClassVar[Literal["blocked"]] = "blocked"


@attrs.frozen
class MaxTokensReason:
    """Some step of the turn hit the token limit (sticky over later completed steps)."""

    kind: ClassVar[Literal["max-tokens"]] = "max-tokens"


@attrs.frozen
class ErrorReason:
    """A step or the pre-step decision failed."""

    kind: ClassVar[Literal["error"]] = "error"
    message: str = attrs.field(validator=text)
    code: str = attrs.field(validator=text)


@attrs.frozen
class AbortedReason:
    """The turn was cancelled; ``cause`` is the first cause (R23)."""

    kind: ClassVar[Literal["aborted"]] = "aborted"
    cause: Cause = attrs.field(validator=_cause)


@attrs.frozen
class InterruptedReason:
    """A crash left the turn open; written only by ``Resume`` (R27)."""

    kind: ClassVar[Literal["interrupted"]] = "interrupted"


TurnEndReason: TypeAlias = (
    CompletedReason
    | BlockedReason
    | MaxTokensReason
    | ErrorReason
    | AbortedReason
    | InterruptedReason
)
REASON_TYPES: tuple[type[TurnEndReason], ...] = get_args(TurnEndReason)
_reason = instance_of(*REASON_TYPES, what="a turn-end reason")

# --------------------------------------------------------------- durable events


def _entries(value: object) -> tuple[Entry, ...]:
    return _entry_tuple(value)


_entry_tuple = tuple_of(Entry, what="an Entry")


@attrs.frozen
class InboxSpliced:
    """One normalized list splice (R5). ``removed_count`` 0 is written as absent."""

    type: ClassVar[Literal["agent/inbox/spliced"]] = "agent/inbox/spliced"
    target: Target = attrs.field(validator=_target)
    start: int = attrs.field(validator=_index)
    removed_count: int = attrs.field(validator=_index)
    inserted: tuple[Entry, ...] = attrs.field(converter=_entries)
    outcome: Outcome | None = attrs.field(
        default=None, validator=one_of((None, *get_args(Outcome)))
    )


@attrs.frozen
class TurnStarted:
    type: ClassVar[Literal["turn/start"]] = "turn/start"
    turn: int = attrs.field(validator=_count)


@attrs.frozen
class StepStarted:
    type: ClassVar[Literal["step/start"]] = "step/start"
    turn: int = attrs.field(validator=_count)
    step: int = attrs.field(validator=_count)


@attrs.frozen
class MessageAdmitted:
    """A message entered the model (``user/message``); data is the message itself."""

    type: ClassVar[Literal["user/message"]] = "user/message"
    message: UserMessage = attrs.field(validator=_message)


@attrs.frozen
class StepEnded:
    type: ClassVar[Literal["step/end"]] = "step/end"
    turn: int = attrs.field(validator=_count)
    step: int = attrs.field(validator=_count)


@attrs.frozen
class TurnEnded:
    type: ClassVar[Literal["turn/end"]] = "turn/end"
    turn: int = attrs.field(validator=_count)
    reason: TurnEndReason = attrs.field(validator=_reason)


@attrs.frozen
class TurnAborted:
    """The first abort of a live turn, written by the command that marked it (R23)."""

    type: ClassVar[Literal["turn/abort"]] = "turn/abort"
    turn: int = attrs.field(validator=_count)
    cause: Cause = attrs.field(validator=_cause)


HOST_PREFIX: Final = "host/"


def _host_type(_inst: object, _attribute: attrs.Attribute[Any], value: object) -> None:
    if not isinstance(value, str) or not value.startswith(HOST_PREFIX) or value == HOST_PREFIX:
        raise InvalidInput(f"a host record type is 'host/<name>', got {shown(value)}")
    limits.identifier(value, "a host record type")


@attrs.frozen
class HostRecord:
    """A host's own fact in the log (R30): ``{"type": "host/<name>", "data": <any JSON>}``.

    The core never interprets it; replay checks only where it stands.
    """

    type: str = attrs.field(validator=_host_type)
    data: JsonValue = attrs.field(default=None, converter=freeze_json)


RECORD_RESERVE: Final = 32
"""What a record's size counts besides its type and data: ``{"type":"","data":},``."""


def records_size(records: tuple[HostRecord, ...]) -> int:
    """The size of a list of records (``limits``): their data's, types' and reserves."""
    size = 0
    for record in records:
        size += RECORD_RESERVE + len(record.type) + json_size(record.data)
    return size


DurableEvent: TypeAlias = (
    InboxSpliced
    | TurnStarted
    | StepStarted
    | MessageAdmitted
    | StepEnded
    | TurnAborted
    | TurnEnded
    | HostRecord
)
DURABLE_TYPES: tuple[type[DurableEvent], ...] = get_args(DurableEvent)


def iterate(events: object, what: str) -> Iterator[Any]:
    """``iter(events)``, or InvalidInput saying that ``what`` takes an iterable of events."""
    try:
        return iter(events)  # type: ignore[call-overload, no-any-return]
    except TypeError:
        raise InvalidInput(
            f"{what} takes an iterable of durable events, got {shown(events)}"
        ) from None


def checked_events(events: object, what: str) -> Iterator[DurableEvent]:
    """``events`` one by one, each a durable event; InvalidInput naming ``what`` otherwise (a
    non-iterable, or an item of another type, by its index)."""
    for index, event in enumerate(iterate(events, what)):
        if not isinstance(event, DURABLE_TYPES):
            raise InvalidInput(f"{what}: item {index} is not a durable event: {shown(event)}")
        yield event


# ---------------------------------------------------------- live notifications


@attrs.frozen
class InboxInserted:
    type: ClassVar[Literal["agent/inbox/inserted"]] = "agent/inbox/inserted"
    message: UserMessage = attrs.field(validator=_message)


@attrs.frozen
class InboxDiscarded:
    type: ClassVar[Literal["agent/inbox/discarded"]] = "agent/inbox/discarded"
    message: UserMessage = attrs.field(validator=_message)


@attrs.frozen
class InboxClaimed:
    type: ClassVar[Literal["agent/inbox/claimed"]] = "agent/inbox/claimed"
    message: UserMessage = attrs.field(validator=_message)
    turn: int = attrs.field(validator=_count)


@attrs.frozen
class InboxMoved:
    type: ClassVar[Literal["agent/inbox/moved"]] = "agent/inbox/moved"
    message: UserMessage = attrs.field(validator=_message)
    target: Target = attrs.field(validator=_target)


@attrs.frozen
class StatusChanged:
    type: ClassVar[Literal["agent/status"]] = "agent/status"
    status: Status = attrs.field(validator=one_of(get_args(Status)))


@attrs.frozen
class CancelRequested:
    type: ClassVar[Literal["agent/cancel-requested"]] = "agent/cancel-requested"
    cause: Cause = attrs.field(validator=_cause)


@attrs.frozen
class Disposed:
    """The agent converged after ``Dispose``: no turn open, nothing pending (R25)."""

    type: ClassVar[Literal["agent/disposed"]] = "agent/disposed"


@attrs.frozen
class AgentError:
    """A host hook failed (R33): ``step`` is None for a pre-step failure."""

    type: ClassVar[Literal["agent/error"]] = "agent/error"
    turn: int = attrs.field(validator=_count)
    step: int | None = attrs.field(validator=optional_integer(1))
    message: str = attrs.field(validator=text)
    code: str = attrs.field(validator=text)


Notification: TypeAlias = (
    InboxInserted
    | InboxDiscarded
    | InboxClaimed
    | InboxMoved
    | StatusChanged
    | CancelRequested
    | Disposed
    | AgentError
)
NOTIFICATION_TYPES: tuple[type[Notification], ...] = get_args(Notification)
