"""Write the JSON Schemas of ``specs/schema/`` from the reference's own vocabulary.

Usage (from the repository root)::

    python tools/gen_schemas.py            # (re)write specs/schema/*.schema.json
    python tools/gen_schemas.py --check    # exit 1 if a stored schema is stale
    python tools/gen_schemas.py --out DIR  # write somewhere else

Every closed set in the schemas is read from the code, never typed twice:
event and notification types (``DURABLE_TYPES``, ``NOTIFICATION_TYPES``), the
host-record prefix, statuses, targets, splice outcomes, turn-end reasons and
causes (their ``kind`` tags and attrs fields), plugin forms and the notice
limit, the command tags and the keys each command writes (encoded by
``command_to_json`` from one sample per command class), decision and outcome
kinds, the reports that take ``records``, fate kinds and fields, the typed
error names, and the vector format's keys (``inbox_core.vectors``).

What the code cannot state as data (the JSON type of each field) is declared
here once, and checked against the codec before anything is written: each
sample's encoded keys must be exactly the properties declared for its tag, and
the declared goal-round minimum must be the one ``GoalSource`` enforces. A
change to the codec that the schemas do not follow stops generation;
``tests/ports/test_schemas.py`` runs ``--check`` and validates real documents
against the result.
"""

from __future__ import annotations

import argparse
import sys
import typing
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import attrs

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run as a script: make ``inbox_core`` importable from the checkout
    sys.path.insert(0, str(ROOT))

from inbox_core import errors  # noqa: E402
from inbox_core.codec import (  # noqa: E402
    cause_to_json,
    command_to_json,
    decision_to_json,
    event_to_json,
    notification_to_json,
    outcome_to_json,
    reason_to_json,
)
from inbox_core.commands import (  # noqa: E402
    REPORT_TYPES,
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
from inbox_core.events import (  # noqa: E402
    DURABLE_TYPES,
    HOST_PREFIX,
    NOTIFICATION_TYPES,
    REASON_TYPES,
    AbortedReason,
    AgentError,
    CancelRequested,
    CompletedReason,
    Disposed,
    ErrorReason,
    HostRecord,
    InboxClaimed,
    InboxDiscarded,
    InboxInserted,
    InboxMoved,
    InboxSpliced,
    MessageAdmitted,
    Outcome,
    Status,
    StatusChanged,
    StepEnded,
    StepStarted,
    TurnAborted,
    TurnEnded,
    TurnStarted,
)
from inbox_core.history import (  # noqa: E402
    AdmittedFate,
    CanceledFate,
    ClaimedFate,
    ConsumedFate,
    DroppedFate,
    PendingFate,
)
from inbox_core.values import (  # noqa: E402
    CAUSE_TYPES,
    NOTICE_SUMMARY_MAX,
    PLUGIN_FORMS,
    TARGETS,
    DisposedCause,
    Entry,
    GoalSource,
    HookCause,
    NextTurnInput,
    PluginSource,
    ToolSource,
    UserCause,
    UserMessage,
    UserSource,
)
from inbox_core.vectors import (  # noqa: E402
    FINAL_KEYS,
    FOLD_KEYS,
    REQUIRED_FINAL_KEYS,
    STEP_KEYS,
    VECTOR_KEYS,
    compact_json,
    fate_to_json,
)

Json = Any
SCHEMA_DIR = ROOT / "specs" / "schema"
DRAFT = "https://json-schema.org/draft/2020-12/schema"
BASE = "https://inbox-core.invalid/schema/"
GOAL_ROUND_MINIMUM = 0  # checked against GoalSource below (R2, v2: round 0 is goal context)
HOST_TYPE_PATTERN = f"^{HOST_PREFIX}[\\s\\S]"  # "host/" and a non-empty name (R30)
NOT_COMMAND_ERRORS = frozenset({"InboxCoreError", "ReplayError", "LogOwned", "LogFenced"})
"""Typed errors no command step raises (replay and the shell's logs raise these)."""


class SchemaError(Exception):
    """The declared shapes and the codec disagree: generation stops."""


# ------------------------------------------------------------------ vocabulary


def _kind(cls: type) -> str:
    return str(cls.kind)  # type: ignore[attr-defined]


def _fieldless(cls: type) -> bool:
    return not attrs.fields(cls)


EVENT_TYPES = [c.type for c in DURABLE_TYPES if c is not HostRecord]
NOTIFICATION_TAGS = [c.type for c in NOTIFICATION_TYPES]
STATUSES = list(typing.get_args(Status))
OUTCOMES = list(typing.get_args(Outcome))
PLAIN_REASONS = [_kind(c) for c in REASON_TYPES if _fieldless(c)]
PLAIN_CAUSES = [_kind(c) for c in CAUSE_TYPES if _fieldless(c)]
CANCEL_CAUSES = [
    _kind(c) for c in typing.get_args(typing.get_type_hints(Cancel)["cause"]) if _fieldless(c)
]
SOURCE_KINDS = [_kind(c) for c in (UserSource, PluginSource, GoalSource, ToolSource)]
ERROR_NAMES = [
    name
    for name, value in vars(errors).items()
    if isinstance(value, type)
    and issubclass(value, errors.InboxCoreError)
    and name not in NOT_COMMAND_ERRORS
]


def _check_vocabulary() -> None:
    """The few facts declared here rather than read: checked against the code."""
    GoalSource("g", GOAL_ROUND_MINIMUM)
    try:
        GoalSource("g", GOAL_ROUND_MINIMUM - 1)
    except errors.InvalidInput:
        pass
    else:
        raise SchemaError(f"GoalSource accepts round {GOAL_ROUND_MINIMUM - 1}")
    for bad in (HOST_PREFIX, "user/message"):
        try:
            HostRecord(bad)
        except errors.InvalidInput:
            continue
        raise SchemaError(f"HostRecord accepts type {bad!r}")
    hook = [_kind(c) for c in CAUSE_TYPES if not _fieldless(c)]
    if hook != ["hook"] or [f.name for f in attrs.fields(HookCause)] != ["reason"]:
        raise SchemaError(f"causes with fields changed: {hook}")
    reasons = {_kind(c) for c in REASON_TYPES if not _fieldless(c)}
    if reasons != {"error", "aborted"}:
        raise SchemaError(f"turn-end reasons with fields changed: {sorted(reasons)}")


# --------------------------------------------------------------------- helpers


def ref(target: str) -> dict[str, str]:
    return {"$ref": target}


def closed(
    properties: Mapping[str, Json], optional: Iterable[str] = (), **extra: Json
) -> dict[str, Json]:
    """An object with exactly ``properties`` (all required but ``optional``)."""
    skip = set(optional)
    out: dict[str, Json] = {"type": "object", "properties": dict(properties)}
    out["required"] = [key for key in properties if key not in skip]
    out["additionalProperties"] = False
    out.update(extra)
    return out


def enum(values: Iterable[str]) -> dict[str, Json]:
    values = list(values)
    return {"const": values[0]} if len(values) == 1 else {"enum": values}


def tagged(tag: str, variants: Mapping[str, str]) -> list[dict[str, Json]]:
    """``allOf`` branches: when ``tag`` equals a value, the document is that variant."""
    return [
        {"if": {"properties": {tag: {"const": value}}, "required": [tag]}, "then": ref(target)}
        for value, target in variants.items()
    ]


def envelope(tag: str, data: Json) -> dict[str, Json]:
    """``{"type": tag, "data": data}`` (other keys checked by the top-level schema)."""
    return {"properties": {"type": {"const": tag}, "data": data}, "required": ["type", "data"]}


def document(name: str, title: str, description: str, body: Mapping[str, Json]) -> dict[str, Json]:
    return {
        "$schema": DRAFT,
        "$id": f"{BASE}{name}.schema.json",
        "title": title,
        "description": description,
        **body,
    }


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


COUNT = {"type": "integer", "minimum": 1}
TURN = ref("durable-event.schema.json#/$defs/turn")
CAUSE = ref("durable-event.schema.json#/$defs/cause")
REASON = ref("durable-event.schema.json#/$defs/reason")
HOST_RECORD = ref("durable-event.schema.json#/$defs/hostRecord")
TARGET = ref("durable-event.schema.json#/$defs/target")
MESSAGE = ref("message.schema.json")
ENTRY = ref("entry.schema.json")

# -------------------------------------------------------------------- messages


def message_schema() -> dict[str, Json]:
    sources = {
        "user": "#/$defs/userSource",
        "plugin": "#/$defs/pluginSource",
        "goal": "#/$defs/goalSource",
        "tool": "#/$defs/toolSource",
    }
    if list(sources) != SOURCE_KINDS:
        raise SchemaError(f"source kinds changed: {SOURCE_KINDS}")
    non_empty = {"type": "string", "minLength": 1}
    plugin = closed(
        {
            "kind": {"const": "plugin"},
            "plugin": non_empty,
            "form": enum(PLUGIN_FORMS),
            "sections": {"type": "array", "items": ref("#/$defs/section")},
            "summary": {
                "type": "string",
                "maxLength": NOTICE_SUMMARY_MAX,
                "not": {"pattern": "[\\r\\n]"},
            },
        },
        optional=("form", "sections", "summary"),
        allOf=[
            {
                "if": {"properties": {"form": {"const": "snapshot"}}, "required": ["form"]},
                "then": {"required": ["sections"]},
                "else": {"not": {"required": ["sections"]}},
            },
            {
                "if": {"properties": {"form": {"const": "notice"}}, "required": ["form"]},
                "then": {"required": ["summary"]},
                "else": {"not": {"required": ["summary"]}},
            },
        ],
    )
    plugin = {
        "description": "A plugin produced it. 'sections' comes exactly with form snapshot, "
        f"'summary' (one line, at most {NOTICE_SUMMARY_MAX} characters) exactly with form "
        "notice.",
        **plugin,
    }
    return document(
        "message",
        "UserMessage",
        "One identified user-role message (R1) with its tagged source (R2). Content blocks are "
        "opaque JSON objects. 'metadata' is absent when there is none; a reader also accepts "
        "null (D12).",
        {
            "type": "object",
            "properties": {
                "id": ref("#/$defs/messageId"),
                "role": {"const": "user"},
                "content": {"type": "array", "items": ref("#/$defs/block")},
                "source": ref("#/$defs/source"),
                "metadata": {"type": ["object", "null"]},
            },
            "required": ["id", "role", "content", "source"],
            "additionalProperties": False,
            "$defs": {
                "messageId": {
                    "description": "Opaque, non-empty identity of one message occurrence.",
                    **non_empty,
                },
                "block": {
                    "description": 'A content block: any JSON object; {"type": "text", '
                    '"text": ...} is the common one.',
                    "type": "object",
                },
                "source": {
                    "description": "Who produced the message, tagged by 'kind' (R2).",
                    "type": "object",
                    "required": ["kind"],
                    "properties": {"kind": non_empty},
                    "allOf": [
                        *tagged("kind", sources),
                        {
                            "if": {
                                "properties": {"kind": {"enum": SOURCE_KINDS}},
                                "required": ["kind"],
                            },
                            "else": ref("#/$defs/extensionSource"),
                        },
                    ],
                },
                "userSource": {
                    "description": "A human typed it: the only source for which "
                    "is_human_prompt holds.",
                    **closed({"kind": {"const": "user"}}),
                },
                "pluginSource": plugin,
                "section": closed({"name": {"type": "string"}, "text": {"type": "string"}}),
                "goalSource": {
                    "description": "A goal driver's message: a continuation for round >= 1 "
                    "(counted by goal_rounds, R28), goal context for round 0 (v2, R2).",
                    **closed(
                        {
                            "kind": {"const": "goal"},
                            "goalId": non_empty,
                            "round": {"type": "integer", "minimum": GOAL_ROUND_MINIMUM},
                        }
                    ),
                },
                "toolSource": closed({"kind": {"const": "tool"}, "callId": non_empty}),
                "extensionSource": {
                    "description": "A host-defined kind; every other field is kept verbatim.",
                    "type": "object",
                    "properties": {"kind": {**non_empty, "not": {"enum": SOURCE_KINDS}}},
                    "required": ["kind"],
                },
            },
        },
    )


def entry_schema() -> dict[str, Json]:
    return document(
        "entry",
        "Entry",
        "One pending unit (R3): the primary message, the contexts admitted just before it "
        "(possibly none), and whether it wakes the model.",
        closed(
            {
                "message": MESSAGE,
                "contexts": {"type": "array", "items": MESSAGE},
                "wakeup": {"type": "boolean"},
            }
        ),
    )


# -------------------------------------------------------------- durable events

EVENT_DEFS: dict[str, str] = {
    "agent/inbox/spliced": "spliced",
    "turn/start": "turnStart",
    "step/start": "stepStart",
    "user/message": "userMessage",
    "step/end": "stepEnd",
    "turn/abort": "turnAbort",
    "turn/end": "turnEnd",
}


def durable_event_schema() -> dict[str, Json]:
    if sorted(EVENT_DEFS) != sorted(EVENT_TYPES):
        raise SchemaError(f"event types changed: {EVENT_TYPES}")
    turn_step = ref("#/$defs/turnStep")
    defs: dict[str, Json] = {
        "event": {
            "type": "object",
            "properties": {
                "type": {
                    "anyOf": [
                        {"enum": EVENT_TYPES},
                        {"type": "string", "pattern": HOST_TYPE_PATTERN},
                    ]
                },
                "data": True,
            },
            "required": ["type", "data"],
            "allOf": [
                *tagged("type", {t: f"#/$defs/{EVENT_DEFS[t]}" for t in EVENT_TYPES}),
                {
                    "if": {
                        "properties": {"type": {"type": "string", "pattern": HOST_TYPE_PATTERN}},
                        "required": ["type"],
                    },
                    "then": {"required": ["type", "data"]},
                },
            ],
        },
        "target": enum(TARGETS),
        "turn": COUNT,
        "spliced": envelope(
            "agent/inbox/spliced",
            closed(
                {
                    "target": ref("#/$defs/target"),
                    "start": {"type": "integer", "minimum": 0},
                    "removedCount": {"type": "integer", "minimum": 1},
                    "inserted": {"type": "array", "items": ENTRY},
                    "outcome": enum(OUTCOMES),
                },
                optional=("removedCount", "outcome"),
                dependentRequired={"outcome": ["removedCount"]},
                anyOf=[
                    {"required": ["removedCount"]},
                    {"properties": {"inserted": {"minItems": 1}}},
                ],
            ),
        ),
        "turnStart": envelope("turn/start", closed({"turn": ref("#/$defs/turn")})),
        "turnStep": closed({"turn": ref("#/$defs/turn"), "step": COUNT}),
        "stepStart": envelope("step/start", turn_step),
        "stepEnd": envelope("step/end", turn_step),
        "userMessage": {
            "description": "A message entered the model; data is the message itself.",
            **envelope("user/message", MESSAGE),
        },
        "turnAbort": {
            "description": "The first abort of a live turn, recorded by the command that "
            "marked it (R23): at most one per turn.",
            **envelope(
                "turn/abort", closed({"turn": ref("#/$defs/turn"), "cause": ref("#/$defs/cause")})
            ),
        },
        "turnEnd": envelope(
            "turn/end", closed({"turn": ref("#/$defs/turn"), "reason": ref("#/$defs/reason")})
        ),
        "hostRecord": {
            "description": "A host's own fact (R30): type 'host/<name>' (a non-empty name), "
            "data any JSON, kept verbatim; the core never interprets it.",
            **closed({"type": {"type": "string", "pattern": HOST_TYPE_PATTERN}, "data": True}),
        },
        "reason": {
            "description": "Why a turn ended (R18).",
            "oneOf": [
                closed({"kind": enum(PLAIN_REASONS)}),
                closed(
                    {
                        "kind": {"const": ErrorReason.kind},
                        "error": closed(
                            {"message": {"type": "string"}, "code": {"type": "string"}}
                        ),
                    }
                ),
                closed({"kind": {"const": AbortedReason.kind}, "reason": ref("#/$defs/cause")}),
            ],
        },
        "cause": {
            "description": "Why a cancel happened (R21); 'disposed' comes only from dispose.",
            "oneOf": [closed({"kind": enum(PLAIN_CAUSES)}), ref("#/$defs/hookCause")],
        },
        "hookCause": closed({"kind": {"const": HookCause.kind}, "reason": {"type": "string"}}),
    }
    return document(
        "durable-event",
        "Durable event",
        "One event of the durable log, {type, data}: an inbox or turn event, or a host record "
        "'host/<name>' with any JSON data (R30). A stored log record adds 'seq' (see "
        "log-record.schema.json). Context-free log rules are checked here too: removedCount is "
        "absent when 0 (D12), an outcome needs a removal, a splice changes something (D22); the "
        "rest is replay's business (R10).",
        {
            "type": "object",
            "$ref": "#/$defs/event",
            "properties": {"type": True, "data": True},
            "additionalProperties": False,
            "$defs": defs,
        },
    )


def log_record_schema() -> dict[str, Json]:
    return document(
        "log-record",
        "Log record",
        "A stored durable event: {seq, type, data}. 'seq' counts from 0 and is contiguous along "
        "the log (a JSON Lines log holds one record per line).",
        {
            "type": "object",
            "$ref": "durable-event.schema.json#/$defs/event",
            "properties": {"seq": {"type": "integer", "minimum": 0}, "type": True, "data": True},
            "required": ["seq"],
            "additionalProperties": False,
        },
    )


# ---------------------------------------------------------------- notifications

NOTIFICATION_DEFS: dict[str, tuple[str, dict[str, Json]]] = {
    "agent/inbox/inserted": ("inserted", {"message": MESSAGE}),
    "agent/inbox/discarded": ("discarded", {"message": MESSAGE}),
    "agent/inbox/claimed": ("claimed", {"message": MESSAGE, "turn": TURN}),
    "agent/inbox/moved": ("moved", {"message": MESSAGE, "target": TARGET}),
    "agent/status": ("status", {"status": enum(STATUSES)}),
    "agent/cancel-requested": ("cancelRequested", {"cause": CAUSE}),
    "agent/disposed": ("disposed", {}),
    "agent/error": (
        "agentError",
        {
            "turn": TURN,
            "step": {"oneOf": [{"type": "null"}, COUNT]},
            "error": closed({"message": {"type": "string"}, "code": {"type": "string"}}),
        },
    ),
}
NOTIFICATION_DESCRIPTIONS = {
    "agent/error": "A host hook failed (R33); step is null for a pre-step failure (D30).",
    "agent/status": "idle, running (a turn is open) or maintenance (a job runs, R31).",
}


def notification_schema() -> dict[str, Json]:
    if list(NOTIFICATION_DEFS) != NOTIFICATION_TAGS:
        raise SchemaError(f"notification types changed: {NOTIFICATION_TAGS}")
    defs: dict[str, Json] = {}
    for tag, (name, data) in NOTIFICATION_DEFS.items():
        variant: dict[str, Json] = {}
        if tag in NOTIFICATION_DESCRIPTIONS:
            variant["description"] = NOTIFICATION_DESCRIPTIONS[tag]
        variant |= closed({"type": {"const": tag}, "data": closed(data)})
        defs[name] = variant
    return document(
        "notification",
        "Live notification",
        "One live announcement, {type, data}. Inbox notices are per message and carry no "
        "placement, outcome or batch (R6).",
        {
            "type": "object",
            "properties": {"type": {"enum": NOTIFICATION_TAGS}, "data": {"type": "object"}},
            "required": ["type", "data"],
            "allOf": tagged(
                "type", {tag: f"#/$defs/{name}" for tag, (name, _) in NOTIFICATION_DEFS.items()}
            ),
            "$defs": defs,
        },
    )


# ---------------------------------------------------------------------- commands

_A = UserMessage("a", "a")
COMMAND_SAMPLES: tuple[Command, ...] = (
    Send(NextTurnInput(_A, (), "next-turn", True)),
    Splice("next-turn", 0, 0, (Entry(_A, (), False),)),
    Clear(),
    Replace("a", _A),
    Remove("a"),
    Move("a", "next-step"),
    Cancel(UserCause(), False),
    Dispose(),
    Resume(),
    BeginMaintenance(),
    EndMaintenance(),
    PreStepDecided(1, 1, Enter((_A,))),
    PreStepFailed(1, 1, "m", "c"),
    StepFinished(1, 1, Completed()),
    TurnStoppingDone(1),
)
"""One value of every command class; their encodings give the tags and the key sets."""

DECISION = {
    "oneOf": [
        closed({"kind": {"const": decision_to_json(Reject())["kind"]}}),
        closed(
            {
                "kind": {"const": decision_to_json(Enter(()))["kind"]},
                "messages": ref("#/$defs/messages"),
            }
        ),
    ]
}
STEP_OUTCOME = {
    "oneOf": [
        closed(
            {"kind": enum([outcome_to_json(o())["kind"] for o in (Continue, Completed, MaxTokens)])}
        ),
        closed(
            {
                "kind": {"const": outcome_to_json(Failed("m", "c"))["kind"]},
                "message": {"type": "string"},
                "code": {"type": "string"},
            }
        ),
    ]
}
COMMAND_FIELDS: dict[type, tuple[str, dict[str, Json], str]] = {
    # class: (definition name, fields besides "type" and "records", description)
    Send: (
        "send",
        {"input": ref("#/$defs/input")},
        "Deliver one fully resolved input (R11): every field mandatory.",
    ),
    Splice: (
        "splice",
        {
            "target": ref("#/$defs/target"),
            "start": {"type": "integer"},
            "deleteCount": {"type": "integer"},
            "inserted": {"type": "array", "items": ENTRY},
        },
        "List-splice coordinates, normalized by the core (R5): any integers.",
    ),
    Clear: ("clear", {}, "Cancel every pending entry, next-step first (R7, D10)."),
    Replace: (
        "replace",
        {"messageId": ref("#/$defs/messageId"), "message": ref("#/$defs/message")},
        "Swap a pending entry's message in place (R7).",
    ),
    Remove: ("remove", {"messageId": ref("#/$defs/messageId")}, "Cancel one entry (R7)."),
    Move: (
        "move",
        {"messageId": ref("#/$defs/messageId"), "target": ref("#/$defs/target")},
        "Move an entry to the end of the other list (R8).",
    ),
    Cancel: (
        "cancel",
        {
            "cause": {
                "oneOf": [
                    closed({"kind": enum(CANCEL_CAUSES)}),
                    ref("durable-event.schema.json#/$defs/hookCause"),
                ]
            },
            "keepInbox": {"type": "boolean"},
        },
        "The disposed cause is reserved to dispose (D17).",
    ),
    Dispose: ("dispose", {}, "Clear, abort with cause disposed, refuse what follows (R25)."),
    Resume: ("resume", {}, "Close a crash-orphaned turn or start stranded work (R27)."),
    BeginMaintenance: ("beginMaintenance", {}, "Start a between-turn job, only while idle (R31)."),
    EndMaintenance: (
        "endMaintenance",
        {},
        "The job ended: its records first, then the work it held back (R30, R31).",
    ),
    PreStepDecided: (
        "preStepDecided",
        {"turn": COUNT, "step": COUNT, "decision": DECISION},
        "Host report: the pre-step decision (R16).",
    ),
    PreStepFailed: (
        "preStepFailed",
        {"turn": COUNT, "step": COUNT, "message": {"type": "string"}, "code": {"type": "string"}},
        "Host report: the pre-step decision failed (R18, R33).",
    ),
    StepFinished: (
        "stepFinished",
        {"turn": COUNT, "step": COUNT, "outcome": STEP_OUTCOME},
        "Host report: the step's outcome (R16).",
    ),
    TurnStoppingDone: (
        "turnStoppingDone",
        {"turn": COUNT},
        "Host report: turn-stopping listeners ran (R17).",
    ),
}


def _command_rows() -> list[tuple[str, str, dict[str, Json]]]:
    """(tag, definition name, definition) per command class, checked against the codec."""
    classes = list(typing.get_args(Command))
    if sorted(c.__name__ for c in classes) != sorted(c.__name__ for c in COMMAND_FIELDS):
        raise SchemaError(f"command classes changed: {[c.__name__ for c in classes]}")
    rows = []
    for sample in COMMAND_SAMPLES:
        name, fields, description = COMMAND_FIELDS[type(sample)]
        encoded = command_to_json(sample)
        tag = encoded["type"]
        if set(encoded) != {"type", *fields}:
            raise SchemaError(f"{tag}: the codec writes {sorted(encoded)}, declared {fields}")
        properties: dict[str, Json] = {"type": {"const": tag}, **fields}
        optional: tuple[str, ...] = ()
        if isinstance(sample, REPORT_TYPES):
            records = command_to_json(attrs.evolve(sample, records=(HostRecord("host/x"),)))
            if "records" not in records:
                raise SchemaError(f"{tag}: the codec does not write records")
            properties["records"] = ref("#/$defs/records")
            optional = ("records",)
        rows.append((tag, name, {"description": description, **closed(properties, optional)}))
    if len({tag for tag, _, _ in rows}) != len(classes):
        raise SchemaError("a command class has no sample")
    return rows


def command_schema() -> dict[str, Json]:
    rows = _command_rows()
    input_defs: dict[str, Json] = {
        "input": {
            "type": "object",
            "properties": {"target": enum(TARGETS), "wakeup": {"type": "boolean"}},
            "required": ["message", "contexts", "target", "wakeup"],
            "allOf": [
                {
                    "if": {
                        "properties": {"target": {"const": "next-turn"}},
                        "required": ["target"],
                    },
                    "then": ref("#/$defs/nextTurnInput"),
                },
                {
                    "if": {
                        "properties": {"target": {"const": "next-step"}, "wakeup": {"const": True}},
                        "required": ["target", "wakeup"],
                    },
                    "then": ref("#/$defs/steerInput"),
                },
                {
                    "if": {
                        "properties": {
                            "target": {"const": "next-step"},
                            "wakeup": {"const": False},
                        },
                        "required": ["target", "wakeup"],
                    },
                    "then": ref("#/$defs/injectInput"),
                },
            ],
        },
        "nextTurnInput": {
            "description": "followup (wakeup true) or queue (wakeup false).",
            **closed(
                {
                    "message": ref("#/$defs/message"),
                    "contexts": ref("#/$defs/messages"),
                    "target": {"const": "next-turn"},
                    "wakeup": {"type": "boolean"},
                }
            ),
        },
        "steerInput": closed(
            {
                "message": ref("#/$defs/message"),
                "contexts": ref("#/$defs/messages"),
                "target": {"const": "next-step"},
                "wakeup": {"const": True},
            }
        ),
        "injectInput": {
            "description": "An injection carries no contexts.",
            **closed(
                {
                    "message": ref("#/$defs/message"),
                    "contexts": {"type": "array", "maxItems": 0},
                    "target": {"const": "next-step"},
                    "wakeup": {"const": False},
                }
            ),
        },
    }
    defs: dict[str, Json] = {
        "messageId": ref("message.schema.json#/$defs/messageId"),
        "message": MESSAGE,
        "messages": {"type": "array", "items": MESSAGE},
        "target": TARGET,
        "records": {
            "description": "Host records appended first, before what the report causes (R30); "
            "an empty array is the same as none.",
            "type": "array",
            "items": HOST_RECORD,
        },
        **input_defs,
        **{name: definition for _, name, definition in rows},
    }
    return document(
        "command",
        "Command",
        "The JSON form of one reducer command, {type, ...fields}: the caller commands, "
        "maintenance, and the host's reports (which take optional host records). A document "
        "valid here decodes into a command value; an invalid one is rejected by the decoder "
        "(InvalidInput, InvalidSplice, or a shape error).",
        {
            "type": "object",
            "required": ["type"],
            "properties": {"type": {"enum": [tag for tag, _, _ in rows]}},
            "allOf": tagged("type", {tag: f"#/$defs/{name}" for tag, name, _ in rows}),
            "$defs": defs,
        },
    )


# ----------------------------------------------------------------------- vectors

FATE_CLASSES = (PendingFate, ClaimedFate, AdmittedFate, CanceledFate, DroppedFate, ConsumedFate)
FATE_FIELD_SCHEMAS = {"target": TARGET, "turn": TURN, "step": COUNT, "reason": REASON}
FATE_SAMPLES = (
    PendingFate("next-turn"),
    ClaimedFate(1, 1),
    AdmittedFate(1, 1),
    CanceledFate(),
    DroppedFate(1, 1),
    ConsumedFate(1, CompletedReason()),
)


def _fate_defs() -> dict[str, Json]:
    defs: dict[str, Json] = {}
    for cls, sample in zip(FATE_CLASSES, FATE_SAMPLES, strict=True):
        fields = {_camel(f.name): FATE_FIELD_SCHEMAS[f.name] for f in attrs.fields(cls)}
        if set(fate_to_json(sample)) != {"kind", *fields}:
            raise SchemaError(f"fate {cls.kind}: encoded {sorted(fate_to_json(sample))}")
        defs[f"{cls.kind}Fate"] = closed({"kind": {"const": cls.kind}, **fields})
    return defs


def vector_schema() -> dict[str, Json]:
    if set(FOLD_KEYS) - set(FINAL_KEYS):
        raise SchemaError("fold keys must be final keys")
    fate_defs = _fate_defs()
    record_item = closed({"kind": {"const": "record"}, "record": HOST_RECORD})
    projection_properties: dict[str, Json] = {
        "status": enum(STATUSES),
        "disposed": {"type": "boolean"},
        "lastTurn": {"type": "integer", "minimum": 0},
        "openTurn": {"type": ["integer", "null"], "minimum": 1},
        "openStep": {"type": ["integer", "null"], "minimum": 1},
        "awaiting": {
            "oneOf": [
                {"type": "null"},
                closed(
                    {
                        "kind": {"const": "pre-step"},
                        "turn": COUNT,
                        "step": COUNT,
                        "batch": {"type": "array", "items": MESSAGE},
                    }
                ),
                closed({"kind": {"const": "step"}, "turn": COUNT, "step": COUNT}),
                closed({"kind": {"const": "turn-stopping"}, "turn": COUNT}),
            ]
        },
        "abortCause": {"oneOf": [{"type": "null"}, CAUSE]},
        "nextTurn": {"type": "array", "items": ENTRY},
        "nextStep": {"type": "array", "items": ENTRY},
        "goalRounds": {"type": "object", "additionalProperties": COUNT},
        "fates": {
            "description": "fates(log) (R32): every MessageId the log accepted, with its one "
            "current fate.",
            "type": "object",
            "additionalProperties": ref("#/$defs/fate"),
        },
        "transcript": {
            "description": "transcript(log) (R30): turns with their steps, admitted messages and "
            "host records, and the records written while no turn was open, in log order.",
            "type": "array",
            "items": ref("#/$defs/transcriptBlock"),
        },
    }
    if list(projection_properties) != list(FINAL_KEYS):
        raise SchemaError(f"final keys changed: {FINAL_KEYS}")
    step_properties: dict[str, Json] = {
        "command": {
            "type": "object",
            "properties": {"type": {"type": "string"}},
            "required": ["type"],
        },
        "note": {"type": "string"},
        "durable": {"type": "array", "items": ref("durable-event.schema.json")},
        "notifications": {"type": "array", "items": ref("notification.schema.json")},
        "error": ref("#/$defs/errorName"),
    }
    if list(step_properties) != list(STEP_KEYS):
        raise SchemaError(f"step keys changed: {STEP_KEYS}")
    properties: dict[str, Json] = {
        "name": {"type": "string", "minLength": 1},
        "description": {"type": "string"},
        "rules": {"type": "array", "items": {"type": "string", "pattern": "^[A-Z]+[0-9]+$"}},
        "seed": {"type": "array", "items": {"type": "object"}},
        "replayError": closed({"seq": {"type": "integer", "minimum": 0}}),
        "commands": {"type": "array", "items": ref("#/$defs/step")},
        "final": ref("#/$defs/projection"),
    }
    if sorted(properties) != sorted(VECTOR_KEYS):
        raise SchemaError(f"vector keys changed: {VECTOR_KEYS}")
    decode_errors = [
        n for n in ("InvalidInput", "InvalidSplice", "DecodeError") if n in ERROR_NAMES
    ]
    return document(
        "vector",
        "Conformance vector",
        "One scripted session (specs/formats.md, 'Conformance vectors'): an optional seed log to "
        "replay, commands with the output each must produce, and the final projection, with "
        "optionally the folds of the whole log (fates, transcript). With 'replayError' the seed "
        "itself must be rejected by replay at that seq, and there are no commands and no final "
        "projection.",
        {
            "type": "object",
            "properties": properties,
            "required": ["name", "rules", "commands"],
            "additionalProperties": False,
            "if": {"required": ["replayError"]},
            "then": {
                "required": ["seed"],
                "properties": {"commands": {"maxItems": 0}},
                "not": {"required": ["final"]},
            },
            "else": {
                "required": ["final"],
                "properties": {"seed": {"items": ref("durable-event.schema.json")}},
            },
            "$defs": {
                "errorName": {
                    "description": "The class name of the typed error a rejected step raises "
                    "(R26).",
                    "enum": ERROR_NAMES,
                },
                "step": {
                    "type": "object",
                    "properties": step_properties,
                    "required": ["command"],
                    "additionalProperties": False,
                    "oneOf": [
                        {"required": ["durable", "notifications"], "not": {"required": ["error"]}},
                        {
                            "required": ["error"],
                            "not": {
                                "anyOf": [
                                    {"required": ["durable"]},
                                    {"required": ["notifications"]},
                                ]
                            },
                        },
                    ],
                    "if": {
                        "required": ["error"],
                        "properties": {"error": {"enum": decode_errors}},
                    },
                    "else": {"properties": {"command": ref("command.schema.json")}},
                },
                "projection": {
                    "description": "The state as seen from outside after the last command; "
                    "goalRounds, fates and transcript fold the seed and every durable event "
                    "emitted (R28, R32, R30).",
                    "type": "object",
                    "properties": projection_properties,
                    "required": list(REQUIRED_FINAL_KEYS),
                    "additionalProperties": False,
                },
                "fate": {
                    "type": "object",
                    "required": ["kind"],
                    "properties": {"kind": {"enum": [c.kind for c in FATE_CLASSES]}},
                    "allOf": tagged(
                        "kind", {c.kind: f"#/$defs/{c.kind}Fate" for c in FATE_CLASSES}
                    ),
                },
                **fate_defs,
                "transcriptBlock": {
                    "oneOf": [
                        closed(
                            {
                                "kind": {"const": "turn"},
                                "turn": COUNT,
                                "reason": {"oneOf": [{"type": "null"}, REASON]},
                                "items": {
                                    "type": "array",
                                    "items": {
                                        "oneOf": [ref("#/$defs/transcriptStep"), record_item]
                                    },
                                },
                            }
                        ),
                        closed(
                            {
                                "kind": {"const": "records"},
                                "records": {"type": "array", "items": HOST_RECORD, "minItems": 1},
                            }
                        ),
                    ]
                },
                "transcriptStep": closed(
                    {
                        "kind": {"const": "step"},
                        "step": COUNT,
                        "items": {
                            "type": "array",
                            "items": {
                                "oneOf": [
                                    closed({"kind": {"const": "message"}, "message": MESSAGE}),
                                    record_item,
                                ]
                            },
                        },
                    }
                ),
            },
        },
    )


# ------------------------------------------------------------------ the codec check


def _check_codec() -> None:
    """Every durable event and notification class encodes to the keys declared for its tag."""
    turn_step = {"turn", "step"}
    event_samples = {
        InboxSpliced("next-turn", 0, 1, (Entry(_A, (), True),), "canceled"): {
            "target", "start", "removedCount", "inserted", "outcome"
        },
        TurnStarted(1): {"turn"},
        StepStarted(1, 1): turn_step,
        MessageAdmitted(_A): {"id", "role", "content", "source"},
        StepEnded(1, 1): turn_step,
        TurnAborted(1, UserCause()): {"turn", "cause"},
        TurnEnded(1, CompletedReason()): {"turn", "reason"},
    }  # fmt: skip
    if sorted(type(e).type for e in event_samples) != sorted(EVENT_TYPES):
        raise SchemaError("an event class has no sample")
    for event, keys in event_samples.items():
        encoded = event_to_json(event)
        if set(encoded) != {"type", "data"} or set(encoded["data"]) != keys:
            raise SchemaError(f"{event.type}: the codec writes {encoded}")
    record = event_to_json(HostRecord("host/x", {"a": [1]}))
    if record != {"type": "host/x", "data": {"a": [1]}}:
        raise SchemaError(f"host records encode as {record}")
    note_samples = (
        InboxInserted(_A),
        InboxDiscarded(_A),
        InboxClaimed(_A, 1),
        InboxMoved(_A, "next-step"),
        StatusChanged("idle"),
        CancelRequested(UserCause()),
        Disposed(),
        AgentError(1, None, "m", "c"),
    )
    for note in note_samples:
        encoded = notification_to_json(note)
        _, data = NOTIFICATION_DEFS[encoded["type"]]
        if set(encoded) != {"type", "data"} or set(encoded["data"]) != set(data):
            raise SchemaError(f"{encoded['type']}: the codec writes {encoded}")
    if {type(n) for n in note_samples} != set(NOTIFICATION_TYPES):
        raise SchemaError("a notification class has no sample")
    for cause in (UserCause(), DisposedCause(), HookCause("r")):
        if cause_to_json(cause)["kind"] != cause.kind:
            raise SchemaError(f"cause {cause!r} encodes as {cause_to_json(cause)}")
    if set(reason_to_json(ErrorReason("m", "c"))) != {"kind", "error"}:
        raise SchemaError("error reasons changed")
    if typing.get_args(Decision) != (Enter, Reject) or set(typing.get_args(StepOutcome)) != {
        Continue,
        Completed,
        MaxTokens,
        Failed,
    }:
        raise SchemaError("decisions or step outcomes changed")


# ---------------------------------------------------------------------- output

SCHEMAS = {
    "message": message_schema,
    "entry": entry_schema,
    "durable-event": durable_event_schema,
    "log-record": log_record_schema,
    "notification": notification_schema,
    "command": command_schema,
    "vector": vector_schema,
}


def generate() -> dict[str, str]:
    """File name -> stored text of every schema."""
    _check_vocabulary()
    _check_codec()
    return {
        f"{name}.schema.json": compact_json(build(), width=100) + "\n"
        for name, build in SCHEMAS.items()
    }


def stale(directory: Path, files: dict[str, str]) -> list[str]:
    stored = {p.name for p in directory.glob("*.schema.json")} if directory.is_dir() else set()
    changed = [
        name
        for name, text in files.items()
        if name not in stored or (directory / name).read_text(encoding="utf-8") != text
    ]
    return sorted(changed + sorted(stored - set(files)))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="fail if stored schemas are stale")
    parser.add_argument("--out", type=Path, default=SCHEMA_DIR, help="output directory")
    args = parser.parse_args(argv)
    files = generate()
    if args.check:
        names = stale(args.out, files)
        if names:
            print(f"stale schemas in {args.out}: {', '.join(names)}")
            print("run: python tools/gen_schemas.py")
            return 1
        print(f"{len(files)} schemas up to date")
        return 0
    args.out.mkdir(parents=True, exist_ok=True)
    for path in args.out.glob("*.schema.json"):
        if path.name not in files:
            path.unlink()
    for name, text in files.items():
        path = args.out / name
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")
    print(f"wrote {len(files)} schemas to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
