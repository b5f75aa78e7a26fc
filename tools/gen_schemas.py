"""Write the JSON Schemas of ``specs/schema/`` from the codec's tables.

Usage (from the repository root)::

    python tools/gen_schemas.py            # (re)write specs/schema/*.schema.json
    python tools/gen_schemas.py --check    # exit 1 if a stored schema is stale
    python tools/gen_schemas.py --out DIR  # write somewhere else

The tables of ``inbox_core.codec`` (one per union, built with
``inbox_core.wire``) encode and decode every document; this tool renders the
same tables as JSON Schema, so the schemas cannot disagree with the codec:
each union becomes an object discriminated by its tag with ``if``/``then``,
each variant a closed object of its fields, each wire a JSON type.

A schema states the *shape* of a document and nothing else (specs/formats.md
section 1, *Shapes and values*): JSON types, required and unknown keys, tags
and enums, ``null`` in an optional key. That is exactly what the decoder
refuses with ``DecodeError``; the value rules (lengths, bounds, one-line
summaries, the rules tying fields together) are the constructors' business
and raise their own errors, so they appear only as ``$comment`` and
descriptions. ``tests/ports/test_schemas.py`` runs ``--check`` and checks that
a document validates exactly when it decodes without a ``DecodeError``. What a
table does not say is declared here, and only that: where each definition
lives, descriptions, and the vector file's own format (its keys come from
``inbox_core.vectors``).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Final

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run as a script: make ``inbox_core`` importable from the checkout
    sys.path.insert(0, str(ROOT))

from inbox_core import (  # noqa: E402
    checkpoint,
    codec,
    errors,
    limits,
    output,
)
from inbox_core.events import HostRecord  # noqa: E402
from inbox_core.values import AgentSource, GoalSource  # noqa: E402
from inbox_core.vectors import (  # noqa: E402
    FINAL_KEYS,
    REQUIRED_FINAL_KEYS,
    STEP_KEYS,
    VECTOR_KEYS,
    compact_json,
)
from inbox_core.wire import (  # noqa: E402
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
    Record,
    Slot,
    Str,
    Tagged,
    Wire,
    camel,
)
from tools.generated import replace_between, sync_directory  # noqa: E402

Json = Any
OPAQUE_LIMITS = (
    f"limits: nested at most {limits.MAX_DEPTH} levels deep; integers within int64; "
    f"size (its compact text's length, string characters unescaped, numbers at their widest)"
    f" at most {limits.MAX_JSON_SIZE}; "
    "strings of Unicode scalar values only"
)
SCHEMA_DIR = ROOT / "specs" / "schema"
PACKAGE_SCHEMA_DIR = ROOT / "inbox_core" / "http" / "schemas"
"""The same files as package data: the front door's OpenAPI document is built from them."""
FORMATS = ROOT / "specs" / "formats.md"
DRAFT = "https://json-schema.org/draft/2020-12/schema"
BASE = "https://inbox-core.invalid/schema/"
NOT_COMMAND_ERRORS = frozenset(
    {"InboxCoreError", "ReplayError", "LogOwned", "LogFenced", "HopLimit"}
)
"""Typed errors no command step raises (replay, the shell's logs and its stores raise these:
``HopLimit`` is a store's answer to a post, R45)."""

HOME: dict[Wire, str] = {
    codec.MESSAGE: "message",
    codec.ENTRY: "entry",
    codec.EVENT: "durable-event",
    codec.CAUSE: "durable-event",
    codec.REASON: "durable-event",
    codec.HOST_RECORD: "durable-event",
    codec.NOTIFICATION: "notification",
    codec.COMMAND: "command",
    output.PART: "output",
    output.USAGE: "output",
}
"""The file defining each shared definition; any other lives in the file that uses it."""
ROOTS = {
    "message": codec.MESSAGE,
    "entry": codec.ENTRY,
    "command": codec.COMMAND,
    "output": output.OUTPUT,
    "output-message": output.MESSAGE,
    "output-snapshot": output.SNAPSHOT,
}
"""Files whose root schema is one table (the envelope files wrap theirs: see below)."""

DESCRIPTIONS = {
    "message": "One identified user-role message (R1) with its tagged source (R2). Content "
    "blocks are opaque JSON objects. 'metadata' is absent when there is none; a reader also "
    f"accepts null (D12). Limits: the whole message's size at most {limits.MAX_VALUE_SIZE} "
    "(maxValueSize, specs/formats.md).",
    "source": "Who produced the message, tagged by 'kind' (R2); a kind that is not built in is "
    "a host-defined extension whose fields are kept verbatim.",
    "userSource": "A human typed it: the only source for which is_human_prompt holds.",
    "pluginSource": "A plugin produced it. Value rules (InvalidInput): 'sections' comes "
    "exactly with form snapshot, 'summary' (one line, at most 120 characters) exactly with "
    "form notice.",
    "goalSource": "A goal driver's message: a continuation for round >= 1 (counted by "
    "goal_rounds, R28), goal context for round 0 (v2, R2); a negative round is InvalidInput.",
    "agentSource": "Another agent sent it, during its turn 'turn' (v5, R2, R45). 'agent' is "
    "a built-in kind since v5, read strictly: a source of that kind with other keys (a host's "
    "own 'agent' kind before v5) is a shape error, DecodeError (D52). Value rules "
    "(InvalidInput): 'agentId' is an agent id (1 to 256 characters, no NUL), 'turn' >= 1.",
    "entry": "One pending unit (R3): the primary message, the contexts admitted just before it "
    "(possibly none), and whether it wakes the model. Limits: the sizes of its messages sum to "
    f"at most {limits.MAX_VALUE_SIZE} (maxValueSize).",
    "event": "One event of the durable log, {type, data}: an inbox or turn event, or a host "
    "record 'host/<name>' with any JSON data (R30). A stored log record adds 'seq' (see "
    "log-record.schema.json). The shape only: removedCount is absent when 0 (D12) is a value "
    "rule, and the rest (an outcome needs a removal, a splice changes something, D22; turn "
    "numbering) is replay's business (R10).",
    "userMessageEvent": "A message entered the model; data is the message itself.",
    "turnAbortEvent": "The first abort of a live turn, recorded by the command that marked it "
    "(R23): at most one per turn.",
    "hostRecord": "A host's own fact (R30): type 'host/<name>' (a non-empty name), data any "
    "JSON, kept verbatim; the core never interprets it.",
    "reason": "Why a turn ended (R18).",
    "cause": "Why a cancel happened (R21); 'disposed' comes only from dispose.",
    "notification": "One live announcement, {type, data}. Inbox notices are per message and "
    "carry no placement, outcome or batch (R6).",
    "agentStatusNotification": "idle, running (a turn is open) or maintenance (a job runs, R31).",
    "agentErrorNotification": "A host hook failed (R33); step is null for a pre-step failure "
    "(D30).",
    "command": "The JSON form of one reducer command, {type, ...fields}: the caller commands, "
    "maintenance, and the host's reports (which take optional host records). A document this "
    "schema refuses is a DecodeError, wherever the fault; one it accepts decodes, or raises the "
    "error of the value whose rule it breaks (InvalidInput, InvalidSplice). Before either, a "
    f"document of more than {limits.MAX_COMMAND_VALUES} JSON values (maxCommandValues: every "
    "scalar, array and object, the document included, no key) is InvalidInput (D47).",
    "sendCommand": "Deliver one fully resolved input (R11): every field of the input "
    "mandatory; 'expect' (R34) is optional.",
    "expectation": "A guarded command's expectation (R34), checked before anything changes: "
    "idle holds while the status is idle (else AgentBusy); turn n holds while turn n is live, "
    "opened, not ended, not aborted (else TurnMismatch). Absent (or null) when there is none.",
    "spliceCommand": "List-splice coordinates, normalized by the core (R5): any integers.",
    "cancelCommand": "The disposed cause is reserved to dispose (D17): a value rule, InvalidInput.",
    "input": "A fully resolved input (R11, R12): followup (next-turn, wakeup true), queue "
    "(next-turn, false), steer (next-step, true), inject (next-step, false). An injection with "
    "contexts is InvalidInput (a value rule).",
    "projection": "The state as seen from outside after the last command; goalRounds, fates "
    "and transcript fold the seed and every durable event emitted (R28, R32, R30).",
    "fate": "fates(log) (R32): the one current fate of an accepted MessageId.",
    "transcriptBlock": "transcript(log) (R30): a turn with its steps, admitted messages and "
    "host records, or the records written while no turn was open.",
    "checkpoint": "What replay keeps after the first 'seq' events of one agent's log (R41, "
    "specs/formats.md 'Checkpoints'): a cache beside the log, never part of it. A reader uses "
    "it only if it decodes under this version, names the agent whose log it reads, 'seq' is at "
    "most the log's length and 'digest' is the SHA-256 of the compact JSON text of the event at "
    "seq - 1; otherwise it folds the whole log. Ids pending in nextTurn and nextStep are unique. "
    "A checkpoint is no input: one that breaks a value rule is a DecodeError too, ignored alike.",
    "openTurn": "Where the turn the log leaves open (number lastTurn) stands: the last step "
    "started (0 before the first), whether it is open, whether a user/message may follow "
    "(admitting), the claim no decision answered yet, and its turn/abort's cause.",
    "output": "The data of a 'host/output' record (R43): one step's reply as parts in order, "
    "optionally the model, its token usage and the step's start and end (RFC 3339 date-times: "
    "a value rule, InvalidInput). Limits: at most "
    f"{limits.MAX_OUTPUT_PARTS} parts (maxOutputParts) of a size of at most "
    f"{limits.MAX_OUTPUT_SIZE} (maxOutputSize: per part {output.PART_RESERVE} and the "
    "characters of its strings); a publisher past them is cut with a marker part.",
    "outputPart": "One part of a step's output: text the user reads, reasoning, a tool call "
    "(its arguments' JSON text, never parsed) or a tool call's result as text.",
    "usage": "Tokens a model call took.",
    "output-message": "One live output message (R43), published while a step runs and never "
    "logged: 'part' is the index of the part in the step's host/output it builds. A delta "
    "opens part 'part' when it is the next index, else continues it; a tool call starts and a "
    "tool result comes as the next part. Whether it fits the parts so far is the fold's rule "
    "(InvalidInput), not the shape's.",
    "output-snapshot": "The output of a running step so far (R43): the fold of its live "
    "messages, what a watcher joining mid-step starts from.",
    "claim": "What the open turn's last boundary claimed, awaiting the pre-step decision (what "
    "a Resume would restore, R27).",
}


class SchemaError(Exception):
    """A fact declared for the schemas disagrees with the code: generation stops."""


def _check_facts() -> None:
    """The value rules the codec's tables state (as comments) but the constructors enforce."""
    goal = next(v for v in codec.SOURCE.variants if v.cls is GoalSource)
    minimum = next(f.wire.minimum for f in goal.fields if isinstance(f, Field) and f.key == "round")
    for value, valid in ((minimum, True), ((minimum or 0) - 1, False)):
        if _accepts(GoalSource, "g", value) != valid:
            raise SchemaError(f"GoalSource round {value}: the table says the minimum is {minimum}")
    for bad in ("host/", "user/message"):
        if _accepts(HostRecord, bad):
            raise SchemaError(f"HostRecord accepts type {bad!r}")
    agent = next(v for v in codec.SOURCE.variants if v.cls is AgentSource)
    agent_id, turn = (f.wire for f in agent.fields if isinstance(f, Field))
    if not (isinstance(agent_id, Str) and isinstance(turn, Int)):
        raise SchemaError(f"AgentSource's row: {agent.fields}")
    longest, first = "a" * (agent_id.max_length or 0), turn.minimum or 0
    cases = [((longest, first), True), ((longest + "a", first), False), (("a", first - 1), False)]
    cases += [(("", first), agent_id.min_length == 0), (("a\x00", first), not agent_id.no_nul)]
    for args, valid in cases:
        if _accepts(AgentSource, *args) != valid:
            raise SchemaError(f"AgentSource{args!r}: the table says {'in' * (not valid)}valid")


def _accepts(build: Any, *args: object) -> bool:
    try:
        build(*args)
    except errors.InvalidInput:
        return False
    return True


def value_rule(wire: Int | Str | Array) -> str | None:
    """The value rules of a wire, for its ``$comment`` (None: it has none to state)."""
    if isinstance(wire, Int):
        low = -limits.MAX_SAFE_INTEGER if wire.minimum is None else wire.minimum
        facts = [f"{low} to {limits.MAX_SAFE_INTEGER}"]
    elif isinstance(wire, Str):
        high = wire.max_length or limits.MAX_JSON_SIZE
        facts = [
            f"{wire.min_length} to {high} characters"
            if wire.min_length
            else f"at most {high} characters"
        ]
        facts += ["one line"] if wire.one_line else []
        facts += ["no NUL"] if wire.no_nul else []
    else:
        facts = [f"at least {wire.min_items} items"] if wire.min_items else []
    return "value rule (not shape): " + ", ".join(facts) if facts else None


# --------------------------------------------------------------------- helpers


def closed(
    properties: Mapping[str, Json], optional: Iterable[str] = (), **extra: Json
) -> dict[str, Json]:
    """An object with exactly ``properties`` (all required but ``optional``)."""
    skip = set(optional)
    out: dict[str, Json] = {"type": "object", "properties": dict(properties)}
    out["required"] = [key for key in properties if key not in skip]
    out["additionalProperties"] = False
    return out | extra


def nullable(schema: Json) -> Json:
    """``schema`` or ``null``."""
    if {"type": "null"} in schema.get("oneOf", ()) or "null" in schema.get("type", ()):
        return schema
    if isinstance(schema.get("type"), str):
        return schema | {"type": [schema["type"], "null"]}
    return {"oneOf": [{"type": "null"}, schema]}


def enum(values: Iterable[Json]) -> dict[str, Json]:
    values = list(values)
    return {"const": values[0]} if len(values) == 1 else {"enum": values}


def tagged(tag: str, variants: Mapping[Json, str]) -> list[dict[str, Json]]:
    """``allOf`` branches: when ``tag`` equals a value, the document is that variant."""
    return [
        {"if": {"properties": {tag: {"const": value}}, "required": [tag]}, "then": {"$ref": ref}}
        for value, ref in variants.items()
    ]


# ---------------------------------------------------------------- one schema file


class SchemaFile:
    """The definitions of one file; ``ref`` places (once) and points at every named wire."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.defs: dict[str, Json] = {}

    def ref(self, wire: Wire) -> dict[str, Json]:
        name = str(wire.name)
        home = HOME.get(wire, self.name)
        if home != self.name:
            suffix = "" if name in ROOTS else f"#/$defs/{name}"
            return {"$ref": f"{home}.schema.json{suffix}"}
        if name not in self.defs:
            self.defs[name] = {}  # placed first: a union may refer to itself
            self.define(name, self.definition(wire))
        return {"$ref": f"#/$defs/{name}"}

    def define(self, name: str, schema: Json) -> str:
        described = (
            {"description": DESCRIPTIONS[name], **schema} if name in DESCRIPTIONS else schema
        )
        self.defs[name] = described
        return f"#/$defs/{name}"

    def schema(self, wire: Wire) -> Json:
        """The schema of one wire's shape (a reference for records and unions); its value
        rules go into a ``$comment``."""
        if isinstance(wire, Record | Tagged):
            return self.ref(wire)
        if isinstance(wire, Int | Str | Array):
            rule = value_rule(wire)
            comment = {} if rule is None else {"$comment": rule}
            if isinstance(wire, Int):
                return {"type": "integer", **comment}
            if isinstance(wire, Str):
                prefix = {"pattern": f"^{wire.prefix}"} if wire.prefix else {}
                return {"type": "string", **prefix, **comment}
            return {"type": "array", "items": self.schema(wire.item), **comment}
        if isinstance(wire, Bool):
            return {"type": "boolean"}
        if isinstance(wire, Enum):
            return enum(wire.values)
        if isinstance(wire, Const):
            return {"const": wire.value}
        if isinstance(wire, Opaque):  # JSON Schema cannot say depth or size: a comment does
            facts = {"$comment": OPAQUE_LIMITS} | ({"type": "object"} if wire.object_only else {})
            return facts
        if isinstance(wire, Nullable):
            return nullable(self.schema(wire.inner))
        if isinstance(wire, Map):
            return {"type": "object", "additionalProperties": self.schema(wire.value)}
        raise SchemaError(f"no schema for {wire!r}")

    def field(self, slot: Slot) -> Json:
        """A field's schema; an optional key also takes ``null`` (read as absent, D12)."""
        if isinstance(slot, Nest):
            return closed({f.key: self.field(f) for f in slot.fields})
        schema = self.schema(slot.wire)
        return nullable(schema) if slot.optional else schema

    def fields(self, slots: Iterable[Slot]) -> tuple[dict[str, Json], list[str]]:
        slots = list(slots)
        properties = {slot.key: self.field(slot) for slot in slots}
        return properties, [slot.key for slot in slots if slot.optional]

    def definition(self, wire: Wire) -> Json:
        if isinstance(wire, Tagged):
            return self.union(wire)
        assert isinstance(wire, Record)
        properties, optional = self.fields(wire.fields)
        return closed(properties, optional)

    def union(self, union: Tagged[Any]) -> Json:
        """``{key: tag}`` discriminated with ``if``/``then``; a fallback's tags by their shape."""
        key, suffix = union.key, str(union.name)
        refs: dict[str, str] = {}
        for variant in union.variants:
            name = camel(variant.tag) + suffix[:1].upper() + suffix[1:]
            if variant.unwrap:
                (slot,) = variant.fields
                body = self.field(slot)
            else:
                properties, optional = self.fields(variant.fields)
                if not union.envelope:
                    properties = {key: {"const": variant.tag}, **properties}
                body = closed(properties, optional)
            if union.envelope:
                body = {"properties": {"type": {"const": variant.tag}, "data": body}}
                body["required"] = ["type", "data"]
            refs[variant.tag] = self.define(name, body)
        tag: Json = enum(union.tags)
        if union.fallback is not None:
            tag = {"anyOf": [tag, self.schema(union.fallback.tag)]}
        properties = {key: tag, "data": True} if union.envelope else {key: tag}
        return {
            "type": "object",
            "properties": properties,
            "required": list(properties),
            "allOf": tagged(key, refs),
        }

    def document(self, title: str, body: Mapping[str, Json]) -> dict[str, Json]:
        for wire, home in HOME.items():  # what other files refer to, defined here
            if home == self.name and wire.name not in ROOTS:
                self.ref(wire)
        head = {"$schema": DRAFT, "$id": f"{BASE}{self.name}.schema.json", "title": title}
        return head | dict(body) | ({"$defs": self.defs} if self.defs else {})


# ----------------------------------------------------------------------- files


def root_file(name: str, title: str) -> dict[str, Json]:
    """A file whose root is one table (message, entry, command)."""
    file = SchemaFile(name)
    root = ROOTS[name]
    body = file.definition(root)
    return file.document(title, {"description": DESCRIPTIONS[name], **body})


def envelope_file(
    name: str, title: str, description: str, union: Tagged[Any], extra: Mapping[str, Json]
) -> dict[str, Json]:
    """The ``{type, data}`` union closed to those keys and ``extra`` (a log record's seq)."""
    file = SchemaFile(name)
    body = {
        "description": description,
        "type": "object",
        **file.ref(union),
        "properties": {**extra, "type": True, "data": True},
        "additionalProperties": False,
    }
    return file.document(title, body | ({"required": list(extra)} if extra else {}))


def vector_file() -> dict[str, Json]:
    """The vector file format (``inbox_core.vectors``) around the codec's projection."""
    file = SchemaFile("vector")
    projection, _ = file.fields(codec.PROJECTION.fields)
    folds, _ = file.fields(codec.FOLDS.fields)
    if [*projection, *folds] != list(FINAL_KEYS):
        raise SchemaError(f"final keys changed: {FINAL_KEYS}")
    file.define(
        "projection",
        closed({**projection, **folds}) | {"required": list(REQUIRED_FINAL_KEYS)},
    )
    error_names = [
        name
        for name, value in vars(errors).items()
        if isinstance(value, type)
        and issubclass(value, errors.InboxCoreError)
        and name not in NOT_COMMAND_ERRORS
    ]
    step = {
        "command": {
            "type": "object",
            "properties": {"type": {"type": "string"}},
            "required": ["type"],
        },
        "note": {"type": "string"},
        "durable": {"type": "array", "items": {"$ref": "durable-event.schema.json"}},
        "notifications": {"type": "array", "items": {"$ref": "notification.schema.json"}},
        "error": {"$ref": "#/$defs/errorName"},
    }
    properties = {
        "name": {"type": "string", "minLength": 1},
        "description": {"type": "string"},
        "rules": {"type": "array", "items": {"type": "string", "pattern": "^[A-Z]+[0-9]+$"}},
        "seed": {"type": "array", "items": {"type": "object"}},
        "replayError": closed({"seq": {"type": "integer", "minimum": 0}}),
        "commands": {"type": "array", "items": {"$ref": "#/$defs/step"}},
        "final": {"$ref": "#/$defs/projection"},
    }
    if list(step) != list(STEP_KEYS) or sorted(properties) != sorted(VECTOR_KEYS):
        raise SchemaError(f"vector keys changed: {VECTOR_KEYS}, {STEP_KEYS}")
    file.define(
        "errorName",
        {
            "description": "The class name of the typed error a rejected step raises (R26).",
            "enum": error_names,
        },
    )
    only_error = {"anyOf": [{"required": ["durable"]}, {"required": ["notifications"]}]}
    file.define(
        "step",
        {
            "type": "object",
            "properties": step,
            "required": ["command"],
            "additionalProperties": False,
            "oneOf": [
                {"required": ["durable", "notifications"], "not": {"required": ["error"]}},
                {"required": ["error"], "not": only_error},
            ],
            # a step rejected with DecodeError holds a command of the wrong shape (or "1.0"
            # for an integer, which JSON Schema counts as one); every other step a valid one
            "if": {"required": ["error"], "properties": {"error": {"const": "DecodeError"}}},
            "else": {"properties": {"command": {"$ref": "command.schema.json"}}},
        },
    )
    return file.document(
        "Conformance vector",
        {
            "description": "One scripted session (specs/formats.md, 'Conformance vectors'): an "
            "optional seed log to replay, commands with the output each must produce, and the "
            "final projection, with optionally the folds of the whole log (fates, transcript). "
            "With 'replayError' the seed itself must be rejected by replay at that seq, and "
            "there are no commands and no final projection.",
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
                "properties": {"seed": {"items": {"$ref": "durable-event.schema.json"}}},
            },
        },
    )


def checkpoint_file() -> dict[str, Json]:
    """The checkpoint document (``inbox_core.checkpoint``): its version and agent around the
    fields of ``CHECKPOINT``; shapes only, like every schema (value rules as comments)."""
    file = SchemaFile("checkpoint")
    properties, optional = file.fields(checkpoint.CHECKPOINT.fields)
    envelope = {
        "version": {"const": checkpoint.CHECKPOINT_VERSION},
        "agent": file.schema(Str(min_length=1, max_length=limits.MAX_AGENT_ID_LENGTH)),
    }
    if list(envelope) != list(checkpoint.ENVELOPE):
        raise SchemaError(f"checkpoint envelope changed: {checkpoint.ENVELOPE}")
    digest = properties["digest"] | {"$comment": "value rule (not shape): 64 lowercase hex digits"}
    body = closed({**envelope, **properties, "digest": digest}, optional)
    return file.document("Checkpoint", {"description": DESCRIPTIONS["checkpoint"], **body})


SCHEMAS = {
    "message": lambda: root_file("message", "UserMessage"),
    "entry": lambda: root_file("entry", "Entry"),
    "durable-event": lambda: envelope_file(
        "durable-event", "Durable event", DESCRIPTIONS["event"], codec.EVENT, {}
    ),
    "log-record": lambda: envelope_file(
        "log-record",
        "Log record",
        "A stored durable event: {seq, type, data}. 'seq' counts from 0 and is contiguous "
        "along the log (a JSON Lines log holds one record per line).",
        codec.EVENT,
        {"seq": {"type": "integer", "$comment": "value rule (not shape): its position in the log"}},
    ),
    "notification": lambda: envelope_file(
        "notification", "Live notification", DESCRIPTIONS["notification"], codec.NOTIFICATION, {}
    ),
    "command": lambda: root_file("command", "Command"),
    "output": lambda: root_file("output", "Output (host/output data)"),
    "output-message": lambda: root_file("output-message", "Output message"),
    "output-snapshot": lambda: root_file("output-snapshot", "Output snapshot"),
    "vector": vector_file,
    "checkpoint": checkpoint_file,
}


# ---------------------------------------------------------------------- output


def generate() -> dict[str, str]:
    """File name -> stored text of every schema."""
    _check_facts()
    return {
        f"{name}.schema.json": compact_json(build(), width=100) + "\n"
        for name, build in SCHEMAS.items()
    }


LIMIT_DOCS: Final = {
    "maxDepth": "nesting of one opaque value (content block, metadata, record data, extension"
    " fields); a scalar is 0 deep, `[]` 1",
    "maxDocumentDepth": "nesting of a whole document a reader parses (a stored event, a JSON"
    " Lines line, a vector, a port message); deeper text is refused unparsed",
    "maxSafeInteger": "turns, steps, rounds, splice coordinates, seqs lie within"
    " ±maxSafeInteger (2^53 - 1)",
    "maxJsonInteger": "integers inside opaque values lie within int64: [-maxJsonInteger - 1,"
    " maxJsonInteger]",
    "maxJsonSize": "size of one opaque value: the length of its compact JSON text counting"
    " each string character once (unescaped), each number at its widest (20 for an integer,"
    " 24 for a float) and a comma after every item; also the characters of any other string"
    " field",
    "maxValueSize": "size of one message (its blocks, metadata, id and source fields, plus"
    " fixed reserves for the keys of the message, its source and its entry) and, summed, of"
    " each list one command carries: an entry's messages, a splice's entries, an `Enter`'s"
    " messages, a report's records (a record: its data, its type and a reserve)",
    "maxDocumentSize": "UTF-8 bytes of the JSON text of a caller command (a post) and of any"
    " durable event a command writes: 6 bytes per unit of size (an escape like `\\u001f` is"
    " 6 for 1) times maxValueSize, plus 65536 for the envelope; below every store's row limit",
    "maxCommandValues": "JSON values of one command document a reader takes (a post, an HTTP"
    " body, a port's `apply`): every scalar, array and object, the document itself"
    " included, no object key; more are refused (`InvalidInput`) before a field is read,"
    " from the text before it is parsed where there is text (D47)",
    "maxIdLength": "characters of a message id, goal id, tool call id, plugin name, extension"
    " kind or host record type",
    "maxAgentIdLength": "characters of an agent id (every store, the front door, an agent "
    "source; no NUL)",
    "maxOutputParts": "parts of one step's output (R43): its `host/output` record and every"
    " snapshot of it; a publisher going past it is cut with a marker part",
    "maxOutputSize": "size of one step's output (R43): per part 64 plus the characters of its"
    " strings (text, id, name, arguments, content); a publisher going past it keeps what fits"
    " and ends with a marker part",
}


def limits_table() -> str:
    """The table of ``limits.LIMITS`` that specs/formats.md prints between its markers."""
    if set(LIMIT_DOCS) != set(limits.LIMITS):
        raise SchemaError(
            f"LIMIT_DOCS and limits.LIMITS differ: {sorted(set(LIMIT_DOCS) ^ set(limits.LIMITS))}"
        )
    rows = [f"| `{name}` | {value} | {LIMIT_DOCS[name]} |" for name, value in limits.LIMITS.items()]
    return "\n".join(["| limit | value | what it bounds |", "|---|---|---|", *rows])


def sync_formats(check: bool) -> int:
    """Write (or, with ``check``, compare) the limits table in specs/formats.md."""
    stored = FORMATS.read_text(encoding="utf-8")
    fresh = replace_between(stored, "limits", limits_table())
    if stored == fresh:
        return 0
    if check:
        print(f"stale limits table in {FORMATS}\nrun: python tools/gen_schemas.py")
        return 1
    FORMATS.write_text(fresh, encoding="utf-8")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="fail if stored schemas are stale")
    parser.add_argument("--out", type=Path, default=SCHEMA_DIR, help="output directory")
    args = parser.parse_args(argv)
    files = generate()
    places = [args.out] if args.out != SCHEMA_DIR else [SCHEMA_DIR, PACKAGE_SCHEMA_DIR]
    for place in places:
        if sync_directory(
            place,
            files,
            pattern="*.schema.json",
            what="schemas",
            tool="tools/gen_schemas.py",
            check=args.check,
        ):
            return 1
    return sync_formats(args.check)


if __name__ == "__main__":
    sys.exit(main())
