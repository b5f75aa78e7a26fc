"""JSON forms of messages, events, notifications, commands, projections and folds.

Encoders return plain ``dict``/``list`` data ready for ``json.dumps``; decoders
accept the parsed data and rebuild the values. Round trips are lossless:
``event_from_json(event_to_json(e)) == e``.

The format is stated once, as one table per union below (built with
``inbox_core.wire``). A table's members are the members of the union's type
alias, each tagged by its class's own ``type`` or ``kind`` constant; a member
with fields has a row naming them with their camelCase keys and JSON types
(a member without fields needs none, and a member with fields but no row is
an error at import). The same tables encode, decode and, through
``tools/gen_schemas.py``, give the JSON Schemas of ``specs/schema``.

Decoding follows one rule (specs/formats.md section 1, *Shapes and values*): a
document that does not have the shape of its format, which is what the JSON
Schemas of ``specs/schema`` check (a JSON type, a missing or unknown key, an
unknown ``type`` or ``kind`` tag or enum value), raises ``DecodeError``,
wherever the fault is; a document of the right shape whose values break a
value's own rule (an empty id, a notice summary past 120 characters, turn 0, an
injection with contexts, a cancel with the disposed cause) raises that value's
error (``InvalidInput``, ``InvalidSplice``), exactly as constructing the value
would.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Final, get_args

import attrs

from inbox_core import limits
from inbox_core.commands import (
    Cancel,
    Command,
    Decision,
    EndMaintenance,
    Enter,
    Expectation,
    ExpectTurn,
    Failed,
    Move,
    PreStepDecided,
    PreStepFailed,
    Remove,
    Replace,
    Send,
    Splice,
    StepFinished,
    StepOutcome,
    TurnStoppingDone,
)
from inbox_core.errors import DecodeError, InvalidInput, shown
from inbox_core.events import (
    DURABLE_TYPES,
    HOST_PREFIX,
    REASON_TYPES,
    AbortedReason,
    AgentError,
    CancelRequested,
    DurableEvent,
    ErrorReason,
    HostRecord,
    InboxClaimed,
    InboxDiscarded,
    InboxInserted,
    InboxMoved,
    InboxSpliced,
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
from inbox_core.json_values import freeze_json, thaw_json
from inbox_core.state import AgentState, Awaiting, AwaitPreStep, AwaitStep, AwaitTurnStopping
from inbox_core.validators import trusted
from inbox_core.values import (
    CAUSE_TYPES,
    NOTICE_SUMMARY_MAX,
    PLUGIN_FORMS,
    TARGETS,
    AgentSource,
    Cause,
    Entry,
    ExtensionSource,
    GoalSource,
    HookCause,
    InjectInput,
    NextTurnInput,
    PluginSource,
    ResolvedAgentInput,
    SnapshotSection,
    Source,
    SteerInput,
    ToolSource,
    UserMessage,
    UserSource,
    decoded_entry,
    decoded_message,
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
    Trusted,
    Variant,
)

Json = Any

# ----------------------------------------------------------- the direct reading
# The classes whose rules their rows state, every one (the direct reading of wire.py checks
# them): it builds these without their constructors' checks (D31, D42), and a class without
# fields as one shared value (frozen: equal, and no more to allocate and collect); a message
# and an entry with builders that check what only the whole value knows, its size. Any
# other class (a plugin source, an extension source, a notification, a command) goes
# through its constructor.


def _trusted(cls: type) -> Callable[..., Any]:
    if attrs.fields(cls):
        return trusted(cls)
    value = cls()
    return lambda: value


TRUSTED: Final[Trusted] = {
    **{
        cls: _trusted(cls)
        for cls in (
            SnapshotSection,
            UserSource,
            GoalSource,
            ToolSource,
            AgentSource,
            *CAUSE_TYPES,
        )
    },
    **{cls: _trusted(cls) for cls in (*REASON_TYPES, *DURABLE_TYPES)},
    UserMessage: decoded_message,
    Entry: decoded_entry,
}
_host_record = TRUSTED[HostRecord]


def _record_from_json(record_type: str, data: Json) -> HostRecord:
    """A host record event's direct reading, its type read already: its data frozen."""
    record: HostRecord = _host_record(record_type, freeze_json(data))
    return record


# --------------------------------------------------------------------- scalars
# ``check=False``: building leaves the JSON type to the value's own constructor, which
# refuses a wrong one too; either way the shape check makes it a DecodeError (wire.py).

TARGET: Final = Enum(TARGETS)
COUNT: Final = Int(minimum=1)
"""Turns and steps count from 1 (a schema fact: replay checks numbering)."""
TEXT: Final = Str()
ID: Final = Str(min_length=1, max_length=limits.MAX_ID_LENGTH, check=False)
AGENT_ID: Final = Str(min_length=1, max_length=limits.MAX_AGENT_ID_LENGTH, no_nul=True, check=False)
"""An agent id (``limits.agent_id``: the rule of every store and of the front door)."""
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


AGENT_SOURCE: Final = "agent source (a built-in kind since v5: {kind, agentId, turn}, D52)"
"""What an agent source's shape errors call it: a log written before v5 may hold a
host-defined source of kind ``agent``, which no longer reads (D52); the error says why."""
SECTION: Final = Record(
    "section", SnapshotSection, (Field("name", TEXT), Field("text", TEXT)), trusted=TRUSTED
)
PLUGIN: Final = (
    Field("plugin", ID),
    Field("form", Enum(PLUGIN_FORMS, check=False), optional=True),
    Field("sections", Array(SECTION, check=False), optional=True),
    Field("summary", Str(max_length=NOTICE_SUMMARY_MAX, one_line=True, check=False), optional=True),
)
SOURCE: Final = Tagged[Source](
    "source",
    "source",
    "kind",
    Source,
    {
        PluginSource: PLUGIN,
        GoalSource: (Field("goal_id", ID), Field("round", Int(0, check=False))),
        ToolSource: (Field("call_id", ID),),
        AgentSource: Variant(
            AgentSource,
            (Field("agent_id", AGENT_ID), Field("turn", Int(1, check=False))),
            what=AGENT_SOURCE,
        ),
    },
    fallback=Open(
        ExtensionSource,
        Str(min_length=1, max_length=limits.MAX_ID_LENGTH),
        _extension_to_json,
        _extension_from_json,
    ),
    trusted=TRUSTED,
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
    trusted=TRUSTED,
)
MESSAGES: Final = Array(MESSAGE)
ENTRY: Final = Record(
    "entry",
    Entry,
    (Field("message", MESSAGE), Field("contexts", MESSAGES), Field("wakeup", Bool())),
    trusted=TRUSTED,
)

# --------------------------------------------------------- causes and reasons

CAUSE: Final = Tagged[Cause](
    "cause", "cause", "kind", Cause, {HookCause: (Field("reason", TEXT),)}, trusted=TRUSTED
)
REASON: Final = Tagged[TurnEndReason](
    "reason",
    "turn/end reason",
    "kind",
    TurnEndReason,
    {ErrorReason: (_error(),), AbortedReason: (Field("cause", CAUSE, key="reason"),)},
    trusted=TRUSTED,
)

# ------------------------------------------------------------- durable events

HOST_TYPE: Final = Str(
    prefix=HOST_PREFIX, min_length=len(HOST_PREFIX) + 1, max_length=limits.MAX_ID_LENGTH
)
"""``host/`` and a non-empty name (R30); the decoder checks the prefix, HostRecord the name."""
HOST_RECORD: Final = Record(
    "hostRecord",
    HostRecord,
    (Field("type", HOST_TYPE), Field("data", ANY_JSON)),
    trusted=TRUSTED,
)
"""A host record on its own (a report's ``records``): exactly ``{type, data}``."""
TURN: Final = (Field("turn", COUNT),)
TURN_STEP: Final = (Field("turn", COUNT), Field("step", COUNT))
SPLICED: Final = (
    Field("target", TARGET),
    Field("start", Int(0)),
    Field("removed_count", COUNT, optional=True, default=0, reject_default=True),
    Field("inserted", Array(ENTRY)),
    Field("outcome", Enum(get_args(Outcome)), optional=True),
)
EVENT: Final = Tagged[DurableEvent](
    "event",
    "durable event",
    "type",
    DurableEvent,
    {
        InboxSpliced: SPLICED,
        TurnStarted: TURN,
        StepStarted: TURN_STEP,
        MessageAdmitted: Variant(MessageAdmitted, (Field("message", MESSAGE),), unwrap=True),
        StepEnded: TURN_STEP,
        TurnAborted: (*TURN, Field("cause", CAUSE)),
        TurnEnded: (*TURN, Field("reason", REASON)),
    },
    envelope=True,
    extra={"seq": Int()},  # a log record's position: an integer, ignored (load checks it)
    fallback=Open(  # data verbatim (R30)
        HostRecord, HOST_TYPE, HOST_RECORD.encode, HostRecord, direct=_record_from_json
    ),
    trusted=TRUSTED,
)

# -------------------------------------------------------- live notifications

NOTIFICATION: Final = Tagged[Notification](
    "notification",
    "notification",
    "type",
    Notification,
    {
        InboxInserted: (Field("message", MESSAGE),),
        InboxDiscarded: (Field("message", MESSAGE),),
        InboxClaimed: (Field("message", MESSAGE), *TURN),
        InboxMoved: (Field("message", MESSAGE), Field("target", TARGET)),
        StatusChanged: (Field("status", Enum(get_args(Status))),),
        CancelRequested: (Field("cause", CAUSE),),
        AgentError: (*TURN, Field("step", Nullable(COUNT)), _error()),
    },
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
    raise DecodeError(f"input: unknown target {shown(target)}")


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
    classes=get_args(ResolvedAgentInput),
)
DECISION: Final = Tagged[Decision](
    "decision", "decision", "kind", Decision, {Enter: (Field("messages", MESSAGES),)}
)
OUTCOME: Final = Tagged[StepOutcome](
    "outcome",
    "outcome",
    "kind",
    StepOutcome,
    {Failed: (Field("message", ARG_TEXT), Field("code", ARG_TEXT))},
)
EXPECTATION: Final = Tagged[Expectation](
    "expectation", "expectation", "kind", Expectation, {ExpectTurn: (Field("turn", ARG_COUNT),)}
)
EXPECT: Final = Field("expect", Nullable(EXPECTATION), optional=True)
"""A guarded command's expectation (R34): ``{"kind": "idle"}`` or ``{"kind": "turn",
"turn": n}``, absent when None (``null`` reads as absent, D12)."""
RECORDS: Final = Field("records", Array(HOST_RECORD), optional=True, default=())
"""A report's host records (R30): written only when there are some."""
REPORT: Final = (Field("turn", ARG_COUNT), Field("step", ARG_COUNT))
COMMAND: Final = Tagged[Command](
    "command",
    "command",
    "type",
    Command,
    {
        Send: (Field("input", INPUT), EXPECT),
        Splice: (
            Field("target", ARG_TARGET),
            Field("start", Int(check=False)),
            Field("delete_count", Int(check=False)),
            Field("inserted", Array(ENTRY)),
        ),
        Replace: (Field("message_id", ID), Field("message", MESSAGE)),
        Remove: (Field("message_id", ID),),
        Move: (Field("message_id", ID), Field("target", ARG_TARGET), EXPECT),
        # a disposed cause decodes, and Cancel's validator rejects it with InvalidInput
        Cancel: (Field("cause", CAUSE), Field("keep_inbox", Bool(check=False)), EXPECT),
        EndMaintenance: (RECORDS,),
        PreStepDecided: (*REPORT, Field("decision", DECISION), RECORDS),
        PreStepFailed: (*REPORT, Field("message", ARG_TEXT), Field("code", ARG_TEXT), RECORDS),
        StepFinished: (*REPORT, Field("outcome", OUTCOME), RECORDS),
        TurnStoppingDone: (Field("turn", ARG_COUNT), RECORDS),
    },
)

# ------------------------------------------------ projections and log folds

AWAITING: Final = Tagged[Awaiting](
    "awaiting",
    "awaiting",
    "kind",
    Awaiting,
    {  # the awaited actions carry no tag of their own
        AwaitPreStep: Variant(AwaitPreStep, (*TURN_STEP, Field("batch", MESSAGES)), "pre-step"),
        AwaitStep: Variant(AwaitStep, TURN_STEP, "step"),
        AwaitTurnStopping: Variant(AwaitTurnStopping, TURN, "turn-stopping"),
    },
)


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
    Fate,
    {
        PendingFate: (Field("target", TARGET),),
        ClaimedFate: TURN_STEP,
        AdmittedFate: TURN_STEP,
        DroppedFate: TURN_STEP,
        ConsumedFate: (*TURN, Field("reason", REASON)),
    },
)
RECORD_ITEM: Final = Variant(HostRecord, (Field(SELF, HOST_RECORD, key="record"),), "record")
STEP_ITEM: Final = Tagged[UserMessage | HostRecord](
    "stepItem",
    "step item",
    "kind",
    UserMessage | HostRecord,
    {
        UserMessage: Variant(UserMessage, (Field(SELF, MESSAGE, key="message"),), "message"),
        HostRecord: RECORD_ITEM,
    },
)
TURN_ITEM: Final = Tagged[StepTranscript | HostRecord](
    "turnItem",
    "turn item",
    "kind",
    StepTranscript | HostRecord,
    {
        StepTranscript: Variant(
            StepTranscript, (Field("step", COUNT), Field("items", Array(STEP_ITEM))), "step"
        ),
        HostRecord: RECORD_ITEM,
    },
)
TRANSCRIPT_BLOCK: Final = Tagged[TranscriptBlock](
    "transcriptBlock",
    "transcript block",
    "kind",
    TranscriptBlock,
    {
        TurnTranscript: Variant(
            TurnTranscript,
            (*TURN, Field("reason", Nullable(REASON)), Field("items", Array(TURN_ITEM))),
            "turn",
        ),
        RecordsTranscript: Variant(
            RecordsTranscript, (Field("records", Array(HOST_RECORD, min_items=1)),), "records"
        ),
    },
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
    "folds", Folds, (Field("fates", Map(FATE)), Field("transcript", Array(TRANSCRIPT_BLOCK)))
)

# ------------------------------------------------------------------ functions


def source_to_json(source: Source) -> dict[str, Json]:
    return SOURCE.encode(source)


def source_from_json(data: object) -> Source:
    return SOURCE.decode(data)


def message_to_json(message: UserMessage) -> dict[str, Json]:
    """``{"id","role":"user","content":[...],"source":{...},"metadata"?}``."""
    if not isinstance(message, UserMessage):
        raise InvalidInput(f"not a message: {shown(message)}")
    return MESSAGE.encode(message)


def message_from_json(data: object) -> UserMessage:
    return MESSAGE.decode(data)


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
    """A command from its JSON form (formats §7): ``InvalidInput`` first if the document
    holds more than ``maxCommandValues`` JSON values, before any field is read (D47);
    then the one rule of D40."""
    limits.command_values(data)
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
