"""JSON forms of messages, events, notifications, commands, projections and folds.

Encoders return plain ``dict``/``list`` data ready for ``json.dumps``; decoders
accept the parsed data and rebuild the values. Round trips are lossless:
``event_from_json(event_to_json(e)) == e``.

The format is stated once, as one table per union below (built with
``inbox_core.wire``): each row names a class, whose tag is its own ``type``
or ``kind`` constant, and its fields with their camelCase keys and JSON
types. The same table encodes, decodes and (``tools/gen_schemas.py``)
generates the JSON Schemas of ``specs/schema``; a union's members are the
members of its type alias, checked at import.

A decoder raises ``DecodeError`` when the document does not have the shape of
the format: not an object, missing or unknown keys, an unknown ``type`` or
``kind`` tag, a wrong JSON type in an envelope field (event coordinates,
entry flags, arrays). The fields of a value (a message's id, content and
metadata, a source's fields, a command's arguments) are checked by the value's
own constructor and raise its error (``InvalidInput``, ``InvalidSplice``), so
a decoded command fails exactly as constructing it would.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final, get_args

import attrs

from inbox_core.commands import (
    BeginMaintenance,
    Cancel,
    Clear,
    Command,
    Completed,
    Continue,
    Decision,
    Dispose,
    EndMaintenance,
    Enter,
    Failed,
    MaxTokens,
    Move,
    PreStepDecided,
    PreStepFailed,
    Reject,
    Remove,
    Replace,
    Resume,
    Send,
    Splice,
    StepFinished,
    StepOutcome,
    TurnStoppingDone,
)
from inbox_core.errors import DecodeError
from inbox_core.events import (
    HOST_PREFIX,
    AbortedReason,
    AgentError,
    BlockedReason,
    CancelRequested,
    CompletedReason,
    Disposed,
    DurableEvent,
    ErrorReason,
    HostRecord,
    InboxClaimed,
    InboxDiscarded,
    InboxInserted,
    InboxMoved,
    InboxSpliced,
    InterruptedReason,
    MaxTokensReason,
    MessageAdmitted,
    Notification,
    Outcome,
    Status,
    StatusChanged,
    StepEnded,
    StepStarted,
    TurnAborted,
    TurnEnded,
    TurnEndReason,
    TurnStarted,
)
from inbox_core.history import (
    AdmittedFate,
    CanceledFate,
    ClaimedFate,
    ConsumedFate,
    DroppedFate,
    Fate,
    PendingFate,
    RecordsTranscript,
    StepTranscript,
    TranscriptBlock,
    TurnTranscript,
    fates,
    goal_rounds,
    transcript,
)
from inbox_core.state import AgentState, Awaiting, AwaitPreStep, AwaitStep, AwaitTurnStopping
from inbox_core.values import (
    NOTICE_SUMMARY_MAX,
    PLUGIN_FORMS,
    TARGETS,
    Cause,
    DisposedCause,
    Entry,
    ExtensionSource,
    GoalSource,
    HookCause,
    InjectInput,
    NextTurnInput,
    ParentCause,
    PluginSource,
    ResolvedAgentInput,
    SnapshotSection,
    Source,
    SteerInput,
    ToolSource,
    UserCause,
    UserMessage,
    UserSource,
    thaw_json,
)
from inbox_core.wire import (
    SELF,
    Array,
    Bool,
    Const,
    Enum,
    Field,
    Int,
    Map,
    Nest,
    Nullable,
    Opaque,
    Open,
    Record,
    Str,
    Tagged,
    Variant,
)

Json = Any

# --------------------------------------------------------------------- scalars
# ``check=False``: the value's own constructor validates it (InvalidInput/InvalidSplice).

TARGET: Final = Enum(TARGETS)
COUNT: Final = Int(minimum=1)
"""Turns and steps count from 1 (a schema fact: replay checks numbering)."""
TEXT: Final = Str()
ID: Final = Str(min_length=1, check=False)
ARG_TARGET: Final = Enum(TARGETS, check=False)
ARG_COUNT: Final = Int(minimum=1, check=False)
ARG_TEXT: Final = Str(check=False)
JSON_OBJECT: Final = Opaque(object_only=True)
ANY_JSON: Final = Opaque()


def _error() -> Nest:
    """``error: {message, code}`` from a value's ``message`` and ``code``."""
    return Nest("error", (Field("message", TEXT), Field("code", TEXT)))


# ---------------------------------------------------------- sources, messages


def _extension_to_json(source: ExtensionSource) -> dict[str, Json]:
    return {"kind": source.kind, **thaw_json(source.fields)}


def _extension_from_json(kind: str, data: Mapping[str, Any]) -> ExtensionSource:
    return ExtensionSource(kind, {k: v for k, v in data.items() if k != "kind"})


SECTION: Final = Record("section", SnapshotSection, (Field("name", TEXT), Field("text", TEXT)))
SOURCE: Final = Tagged[Source](
    "source",
    "source",
    "kind",
    (
        Variant(UserSource),
        Variant(
            PluginSource,
            (
                Field("plugin", Str(min_length=1, check=False)),
                Field("form", Enum(PLUGIN_FORMS, check=False), optional=True),
                Field("sections", Array(SECTION, check=False), optional=True),
                Field(
                    "summary",
                    Str(max_length=NOTICE_SUMMARY_MAX, one_line=True, check=False),
                    optional=True,
                ),
            ),
        ),
        Variant(
            GoalSource,
            (Field("goal_id", Str(min_length=1, check=False)), Field("round", Int(0, check=False))),
        ),
        Variant(ToolSource, (Field("call_id", Str(min_length=1, check=False)),)),
    ),
    fallback=Open(ExtensionSource, Str(min_length=1), _extension_to_json, _extension_from_json),
)
MESSAGE: Final = Record(
    "message",
    UserMessage,
    (
        Field("id", ID),
        Field("role", Const("user")),
        Field("content", Array(JSON_OBJECT)),
        Field("source", SOURCE),
        Field("metadata", Nullable(JSON_OBJECT), optional=True),
    ),
)
MESSAGES: Final = Array(MESSAGE)
ENTRY: Final = Record(
    "entry",
    Entry,
    (Field("message", MESSAGE), Field("contexts", MESSAGES), Field("wakeup", Bool())),
)

# --------------------------------------------------------- causes and reasons

CAUSE: Final = Tagged[Cause](
    "cause",
    "cause",
    "kind",
    (
        Variant(UserCause),
        Variant(ParentCause),
        Variant(HookCause, (Field("reason", TEXT),)),
        Variant(DisposedCause),
    ),
)
REASON: Final = Tagged[TurnEndReason](
    "reason",
    "turn/end reason",
    "kind",
    (
        Variant(CompletedReason),
        Variant(BlockedReason),
        Variant(MaxTokensReason),
        Variant(ErrorReason, (_error(),)),
        Variant(AbortedReason, (Field("cause", CAUSE, key="reason"),)),
        Variant(InterruptedReason),
    ),
)

# ------------------------------------------------------------- durable events

HOST_TYPE: Final = Str(prefix=HOST_PREFIX, min_length=len(HOST_PREFIX) + 1)
"""``host/`` and a non-empty name (R30); the decoder checks the prefix, HostRecord the name."""
HOST_RECORD: Final = Record(
    "hostRecord", HostRecord, (Field("type", HOST_TYPE), Field("data", ANY_JSON))
)
"""A host record on its own (a report's ``records``): exactly ``{type, data}``."""
TURN: Final = (Field("turn", COUNT),)
TURN_STEP: Final = (Field("turn", COUNT), Field("step", COUNT))
EVENT: Final = Tagged[DurableEvent](
    "event",
    "durable event",
    "type",
    (
        Variant(
            InboxSpliced,
            (
                Field("target", TARGET),
                Field("start", Int(0)),
                Field("removed_count", COUNT, optional=True, default=0, reject_default=True),
                Field("inserted", Array(ENTRY)),
                Field("outcome", Enum(get_args(Outcome)), optional=True),
            ),
        ),
        Variant(TurnStarted, TURN),
        Variant(StepStarted, TURN_STEP),
        Variant(MessageAdmitted, (Field("message", MESSAGE),), unwrap=True),
        Variant(StepEnded, TURN_STEP),
        Variant(TurnAborted, (*TURN, Field("cause", CAUSE))),
        Variant(TurnEnded, (*TURN, Field("reason", REASON))),
    ),
    envelope=True,
    extra=("seq",),  # a log record's position, accepted and ignored
    fallback=Open(HostRecord, HOST_TYPE, HOST_RECORD.encode, HostRecord),  # data verbatim (R30)
)

# -------------------------------------------------------- live notifications

NOTIFICATION: Final = Tagged[Notification](
    "notification",
    "notification",
    "type",
    (
        Variant(InboxInserted, (Field("message", MESSAGE),)),
        Variant(InboxDiscarded, (Field("message", MESSAGE),)),
        Variant(InboxClaimed, (Field("message", MESSAGE), *TURN)),
        Variant(InboxMoved, (Field("message", MESSAGE), Field("target", TARGET))),
        Variant(StatusChanged, (Field("status", Enum(get_args(Status))),)),
        Variant(CancelRequested, (Field("cause", CAUSE),)),
        Variant(Disposed),
        Variant(AgentError, (*TURN, Field("step", Nullable(COUNT)), _error())),
    ),
    envelope=True,
)

# -------------------------------------------------------------------- commands
# The JSON form of commands is used by the conformance vectors (specs/vectors).


def _input(fields: dict[str, Any]) -> ResolvedAgentInput:
    """The input class a send's target and wakeup name (R11, R12)."""
    target, wakeup = fields["target"], fields["wakeup"]
    if target == "next-turn":
        return NextTurnInput(**fields)
    if target == "next-step" and wakeup is True:
        return SteerInput(**fields)
    if target == "next-step":
        # decoded contexts are checked at run time: InvalidInput unless empty (R11)
        return InjectInput(**fields)
    raise DecodeError(f"input: unknown target {target!r}")


INPUT: Final = Record[ResolvedAgentInput](
    "input",
    NextTurnInput,
    (
        Field("message", MESSAGE),
        Field("contexts", MESSAGES),
        Field("target", ARG_TARGET),
        Field("wakeup", Bool(check=False)),
    ),
    build=_input,
    classes=(NextTurnInput, SteerInput, InjectInput),
)
DECISION: Final = Tagged[Decision](
    "decision",
    "decision",
    "kind",
    (Variant(Enter, (Field("messages", MESSAGES),)), Variant(Reject)),
)
OUTCOME: Final = Tagged[StepOutcome](
    "outcome",
    "outcome",
    "kind",
    (
        Variant(Continue),
        Variant(Completed),
        Variant(MaxTokens),
        Variant(Failed, (Field("message", ARG_TEXT), Field("code", ARG_TEXT))),
    ),
)
RECORDS: Final = Field("records", Array(HOST_RECORD), optional=True, default=())
"""A report's host records (R30): written only when there are some."""
REPORT_TURN_STEP: Final = (Field("turn", ARG_COUNT), Field("step", ARG_COUNT))
COMMAND: Final = Tagged[Command](
    "command",
    "command",
    "type",
    (
        Variant(Send, (Field("input", INPUT),)),
        Variant(
            Splice,
            (
                Field("target", ARG_TARGET),
                Field("start", Int(check=False)),
                Field("delete_count", Int(check=False)),
                Field("inserted", Array(ENTRY)),
            ),
        ),
        Variant(Clear),
        Variant(Replace, (Field("message_id", ID), Field("message", MESSAGE))),
        Variant(Remove, (Field("message_id", ID),)),
        Variant(Move, (Field("message_id", ID), Field("target", ARG_TARGET))),
        # a disposed cause decodes, and Cancel's validator rejects it with InvalidInput
        Variant(Cancel, (Field("cause", CAUSE), Field("keep_inbox", Bool(check=False)))),
        Variant(Dispose),
        Variant(Resume),
        Variant(BeginMaintenance),
        Variant(EndMaintenance, (RECORDS,)),
        Variant(PreStepDecided, (*REPORT_TURN_STEP, Field("decision", DECISION), RECORDS)),
        Variant(
            PreStepFailed,
            (*REPORT_TURN_STEP, Field("message", ARG_TEXT), Field("code", ARG_TEXT), RECORDS),
        ),
        Variant(StepFinished, (*REPORT_TURN_STEP, Field("outcome", OUTCOME), RECORDS)),
        Variant(TurnStoppingDone, (Field("turn", ARG_COUNT), RECORDS)),
    ),
)

# ------------------------------------------------ projections and log folds

AWAITING: Final = Tagged[Awaiting](
    "awaiting",
    "awaiting",
    "kind",
    (
        Variant(AwaitPreStep, (*TURN_STEP, Field("batch", MESSAGES)), tag="pre-step"),
        Variant(AwaitStep, TURN_STEP, tag="step"),
        Variant(AwaitTurnStopping, TURN, tag="turn-stopping"),
    ),
)
"""What the core awaits from the host (the awaited actions carry no tag of their own)."""


@attrs.frozen
class ProjectionView:
    """The state as seen from outside (a vector's ``final``), plus the goal rounds of a log."""

    status: Status
    disposed: bool
    last_turn: int
    open_turn: int | None
    open_step: int | None
    awaiting: Awaiting | None
    abort_cause: Cause | None
    next_turn: tuple[Entry, ...]
    next_step: tuple[Entry, ...]
    goal_rounds: dict[str, int]

    @classmethod
    def of(cls, state: AgentState, log: Iterable[DurableEvent] = ()) -> ProjectionView:
        projection = state.projection()
        return cls(
            state.status,
            state.disposed,
            projection.last_turn,
            projection.open_turn,
            projection.open_step,
            state.awaiting,
            state.abort_cause,
            projection.next_turn,
            projection.next_step,
            dict(sorted(goal_rounds(log).items())),
        )


PROJECTION: Final = Record(
    "projection",
    ProjectionView,
    (
        Field("status", Enum(get_args(Status))),
        Field("disposed", Bool()),
        Field("last_turn", Int(0)),
        Field("open_turn", Nullable(COUNT)),
        Field("open_step", Nullable(COUNT)),
        Field("awaiting", Nullable(AWAITING)),
        Field("abort_cause", Nullable(CAUSE)),
        Field("next_turn", Array(ENTRY)),
        Field("next_step", Array(ENTRY)),
        Field("goal_rounds", Map(COUNT)),
    ),
)
FATE: Final = Tagged[Fate](
    "fate",
    "fate",
    "kind",
    (
        Variant(PendingFate, (Field("target", TARGET),)),
        Variant(ClaimedFate, TURN_STEP),
        Variant(AdmittedFate, TURN_STEP),
        Variant(CanceledFate),
        Variant(DroppedFate, TURN_STEP),
        Variant(ConsumedFate, (*TURN, Field("reason", REASON))),
    ),
)
RECORD_ITEM: Final = Variant(HostRecord, (Field(SELF, HOST_RECORD, key="record"),), tag="record")
STEP_ITEM: Final = Tagged[UserMessage | HostRecord](
    "stepItem",
    "step item",
    "kind",
    (Variant(UserMessage, (Field(SELF, MESSAGE, key="message"),), tag="message"), RECORD_ITEM),
)
TURN_ITEM: Final = Tagged[StepTranscript | HostRecord](
    "turnItem",
    "turn item",
    "kind",
    (
        Variant(
            StepTranscript, (Field("step", COUNT), Field("items", Array(STEP_ITEM))), tag="step"
        ),
        RECORD_ITEM,
    ),
)
TRANSCRIPT_BLOCK: Final = Tagged[TranscriptBlock](
    "transcriptBlock",
    "transcript block",
    "kind",
    (
        Variant(
            TurnTranscript,
            (*TURN, Field("reason", Nullable(REASON)), Field("items", Array(TURN_ITEM))),
            tag="turn",
        ),
        Variant(
            RecordsTranscript, (Field("records", Array(HOST_RECORD, min_items=1)),), tag="records"
        ),
    ),
)


@attrs.frozen
class Folds:
    """The folds of a whole log a vector may pin: ``fates`` (R32) and ``transcript`` (R30)."""

    fates: dict[str, Fate]
    transcript: tuple[TranscriptBlock, ...]

    @classmethod
    def of(cls, events: Sequence[DurableEvent]) -> Folds:
        return cls(fates(events), transcript(events))


FOLDS: Final = Record(
    "folds",
    Folds,
    (Field("fates", Map(FATE)), Field("transcript", Array(TRANSCRIPT_BLOCK))),
)

UNIONS: Final[dict[Tagged[Any], Any]] = {
    SOURCE: Source,
    CAUSE: Cause,
    REASON: TurnEndReason,
    EVENT: DurableEvent,
    NOTIFICATION: Notification,
    DECISION: Decision,
    OUTCOME: StepOutcome,
    COMMAND: Command,
    AWAITING: Awaiting,
    FATE: Fate,
    TRANSCRIPT_BLOCK: TranscriptBlock,
}
"""Each table with the type alias it encodes: the members must be the same classes."""


def _check_tables() -> None:
    for table, alias in UNIONS.items():
        members = set(get_args(alias))
        covered = set(table.classes) | ({table.fallback.cls} if table.fallback else set())
        if covered != members:
            raise TypeError(f"codec table {table.name}: {covered ^ members} not in both")


_check_tables()

# ------------------------------------------------------------------ functions


def source_to_json(source: Source) -> dict[str, Json]:
    return SOURCE.encode(source)


def source_from_json(data: object) -> Source:
    return SOURCE.decode(data)


def message_to_json(message: UserMessage) -> dict[str, Json]:
    """``{"id","role":"user","content":[...],"source":{...},"metadata"?}``."""
    return MESSAGE.encode(message)


def message_from_json(data: object) -> UserMessage:
    return MESSAGE.decode(data)


def entry_to_json(entry: Entry) -> dict[str, Json]:
    return ENTRY.encode(entry)


def cause_to_json(cause: Cause) -> dict[str, Json]:
    return CAUSE.encode(cause)


def reason_to_json(reason: TurnEndReason) -> dict[str, Json]:
    return REASON.encode(reason)


def event_to_json(event: DurableEvent) -> dict[str, Json]:
    """``{"type","data"}`` as in the spec's Formats section."""
    return EVENT.encode(event)


def event_from_json(data: object) -> DurableEvent:
    """Decode ``{"type","data"}``; a log record's extra ``"seq"`` is accepted and ignored."""
    return EVENT.decode(data)


def notification_to_json(notification: Notification) -> dict[str, Json]:
    return NOTIFICATION.encode(notification)


def notification_from_json(data: object) -> Notification:
    return NOTIFICATION.decode(data)


def command_to_json(command: Command) -> dict[str, Json]:
    """The vectors' command form: ``{"type": <kebab-case name>, ...fields}``.

    A report's (and ``end-maintenance``'s) ``records`` key is written only when
    it holds records.
    """
    return COMMAND.encode(command)


def command_from_json(data: object) -> Command:
    return COMMAND.decode(data)


def awaiting_to_json(awaiting: Awaiting | None) -> Json:
    """``{"kind": "pre-step"|"step"|"turn-stopping", "turn", "step"?, "batch"?}`` or null."""
    return None if awaiting is None else AWAITING.encode(awaiting)


def projection_to_json(state: AgentState, log: Iterable[DurableEvent] = ()) -> dict[str, Json]:
    """The ``final`` object of a vector: the state as seen from outside, plus goal rounds.

    ``goalRounds`` folds ``log`` (the seed and every durable event emitted) with
    ``goal_rounds`` (R28); the rest reads the state.
    """
    return PROJECTION.encode(ProjectionView.of(state, log))


def fates_to_json(events: Iterable[DurableEvent]) -> dict[str, Json]:
    """``fates(events)`` as ``{messageId: fate}`` in first-seen order."""
    return {message_id: FATE.encode(fate) for message_id, fate in fates(events).items()}


def transcript_to_json(events: Iterable[DurableEvent]) -> list[Json]:
    """``transcript(events)`` as a list of blocks in log order (R30)."""
    return [TRANSCRIPT_BLOCK.encode(block) for block in transcript(events)]


def folds_to_json(events: Sequence[DurableEvent]) -> dict[str, Json]:
    """The optional ``final`` keys: ``fates`` and ``transcript`` of the whole log."""
    return FOLDS.encode(Folds.of(events))


PROJECTION_KEYS: Final = tuple(field.key for field in PROJECTION.fields)
FOLD_KEYS: Final = tuple(field.key for field in FOLDS.fields)
