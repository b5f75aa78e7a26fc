"""What the reducer emits: durable events (the log) and live notifications.

Durable events are the only authority: ``replay`` folds them back into the
state (R10). Notifications are per-message announcements with no placement or
batch envelope; the durable splice owns those facts (R5, R6). Each class has a
``type`` class attribute equal to its JSON ``"type"`` (section Formats), each
turn-end reason a ``kind``; the ``*_TYPES`` tuples are read from the union
aliases, so a union's members are listed once.
"""

from __future__ import annotations

from typing import Any, ClassVar, Final, Literal, TypeAlias, get_args

import attrs

from inbox_core.errors import InvalidInput
from inbox_core.values import CAUSE_TYPES, Cause, Entry, JsonValue, Target, UserMessage, freeze_json

Outcome: TypeAlias = Literal["canceled", "moved"]
Status: TypeAlias = Literal["idle", "running", "maintenance"]

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
    message: str
    code: str


@attrs.frozen
class AbortedReason:
    """The turn was cancelled; ``cause`` is the first cause (R23)."""

    kind: ClassVar[Literal["aborted"]] = "aborted"
    cause: Cause


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

# --------------------------------------------------------------- durable events


@attrs.frozen
class InboxSpliced:
    """One normalized list splice (R5). ``removed_count`` 0 is written as absent."""

    type: ClassVar[Literal["agent/inbox/spliced"]] = "agent/inbox/spliced"
    target: Target
    start: int
    removed_count: int
    inserted: tuple[Entry, ...]
    outcome: Outcome | None = None


@attrs.frozen
class TurnStarted:
    type: ClassVar[Literal["turn/start"]] = "turn/start"
    turn: int


@attrs.frozen
class StepStarted:
    type: ClassVar[Literal["step/start"]] = "step/start"
    turn: int
    step: int


@attrs.frozen
class MessageAdmitted:
    """A message entered the model (``user/message``); data is the message itself."""

    type: ClassVar[Literal["user/message"]] = "user/message"
    message: UserMessage


@attrs.frozen
class StepEnded:
    type: ClassVar[Literal["step/end"]] = "step/end"
    turn: int
    step: int


@attrs.frozen
class TurnEnded:
    type: ClassVar[Literal["turn/end"]] = "turn/end"
    turn: int
    reason: TurnEndReason


@attrs.frozen
class TurnAborted:
    """The first abort of a live turn, written by the command that marked it (R23)."""

    type: ClassVar[Literal["turn/abort"]] = "turn/abort"
    turn: int
    cause: Cause = attrs.field(validator=lambda _i, _a, v: _cause(v))


def _cause(value: object) -> None:
    if not isinstance(value, CAUSE_TYPES):
        raise InvalidInput(f"turn/abort needs a cause, got {value!r}")


HOST_PREFIX: Final = "host/"


def _host_type(_inst: object, _attribute: attrs.Attribute[Any], value: object) -> None:
    if not isinstance(value, str) or not value.startswith(HOST_PREFIX) or value == HOST_PREFIX:
        raise InvalidInput(f"a host record type is 'host/<name>', got {value!r}")


@attrs.frozen
class HostRecord:
    """A host's own fact in the log (R30): ``{"type": "host/<name>", "data": <any JSON>}``.

    The core never interprets it; replay checks only where it stands.
    """

    type: str = attrs.field(validator=_host_type)
    data: JsonValue = attrs.field(default=None, converter=freeze_json)


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

# ---------------------------------------------------------- live notifications


@attrs.frozen
class InboxInserted:
    type: ClassVar[Literal["agent/inbox/inserted"]] = "agent/inbox/inserted"
    message: UserMessage


@attrs.frozen
class InboxDiscarded:
    type: ClassVar[Literal["agent/inbox/discarded"]] = "agent/inbox/discarded"
    message: UserMessage


@attrs.frozen
class InboxClaimed:
    type: ClassVar[Literal["agent/inbox/claimed"]] = "agent/inbox/claimed"
    message: UserMessage
    turn: int


@attrs.frozen
class InboxMoved:
    type: ClassVar[Literal["agent/inbox/moved"]] = "agent/inbox/moved"
    message: UserMessage
    target: Target


@attrs.frozen
class StatusChanged:
    type: ClassVar[Literal["agent/status"]] = "agent/status"
    status: Status


@attrs.frozen
class CancelRequested:
    type: ClassVar[Literal["agent/cancel-requested"]] = "agent/cancel-requested"
    cause: Cause


@attrs.frozen
class Disposed:
    """The agent converged after ``Dispose``: no turn open, nothing pending (R25)."""

    type: ClassVar[Literal["agent/disposed"]] = "agent/disposed"


@attrs.frozen
class AgentError:
    """A host hook failed (R33): ``step`` is None for a pre-step failure."""

    type: ClassVar[Literal["agent/error"]] = "agent/error"
    turn: int
    step: int | None
    message: str
    code: str


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
