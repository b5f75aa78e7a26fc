"""The component schemas of the OpenAPI document (R39 v5, D46): the generated JSON Schemas
of the formats, each file and each of its definitions a component, and the HTTP bodies
derived from them.

The files of ``specs/schema/`` (shipped in this package by ``tools/gen_schemas.py``) refer
to one another by file name and to their own definitions by ``#/$defs/NAME``. A tool that
reads an OpenAPI document resolves local ``#/components/schemas/NAME`` references only
(none of them fetches or resolves a ``$id``), so ``file_components`` takes every file apart:
a file's root becomes the component ``COMPONENT_FILES`` names, each definition the
component named after it (``sendCommand`` -> ``SendCommand``; ``DEFINITION_NAMES`` where
that would clash), and every reference points at a component. Two spellings change, to
the forms generators read, and nothing else: a ``$ref`` beside other keywords becomes an
``allOf`` of the reference and those keywords, a ``true`` property schema ``{}``. The
components validate exactly what the files validate (tests/http/test_spec.py).

``derived`` builds the HTTP bodies from the same components: the relaxed message of an
intent body from the message's properties, the agent resource from the vector's
projection, the postable command from the command and ``POSTABLE_TYPES``; no form of
formats §8 is written out a second time.
"""

from __future__ import annotations

import functools
import json
from importlib import resources
from typing import Any, Final

from inbox_core import codec, limits
from inbox_core.http.reading import AGENT_STATE_KEYS, MAX_POST_ID
from inbox_core.shell.stores.posts import POSTABLE_TYPES

__all__ = [
    "COMPONENT_FILES",
    "DEFINITION_NAMES",
    "component_name",
    "derived",
    "file_components",
    "ref",
    "schema_file",
]

Json = Any
COMPONENT_FILES: Final = {
    "Message": "message",
    "Entry": "entry",
    "DurableEvent": "durable-event",
    "LogRecord": "log-record",
    "Notification": "notification",
    "Command": "command",
    "Vector": "vector",
}
"""Component name -> generated schema file (``<name>.schema.json``) whose root it is."""
DEFINITION_NAMES: Final = {"notification": "AnyNotification"}
"""Definitions whose capitalized name is taken (the notification file's root closes its
``notification`` union to ``{type, data}``)."""
FILE_SUFFIX: Final = ".schema.json"
ANNOTATIONS: Final = ("title", "description", "$comment")


def schema_file(name: str) -> Json:
    """One generated schema as shipped in the package."""
    text = resources.files("inbox_core.http").joinpath(f"schemas/{name}{FILE_SUFFIX}").read_text()
    return json.loads(text)


def ref(component: str) -> Json:
    return {"$ref": f"#/components/schemas/{component}"}


def component_name(definition: str) -> str:
    """The component of a definition of a generated file."""
    return DEFINITION_NAMES.get(definition, definition[:1].upper() + definition[1:])


@functools.cache
def _files() -> dict[str, Json]:
    return {file: schema_file(file) for file in COMPONENT_FILES.values()}


@functools.cache
def _names() -> dict[str, str]:
    """``FILE`` and ``FILE#/$defs/NAME`` -> the component each is; a name given twice raises
    (a new definition whose name clashes belongs in ``DEFINITION_NAMES``)."""
    names = {file: component for component, file in COMPONENT_FILES.items()}
    for file, schema in _files().items():
        for definition in schema.get("$defs", {}):
            names[f"{file}#/$defs/{definition}"] = component_name(definition)
    taken = list(names.values()) + list(_DERIVED)
    clashes = sorted({name for name in taken if taken.count(name) > 1})
    if clashes:
        raise ValueError(f"component names given twice: {clashes}; see DEFINITION_NAMES")
    return names


def _local(schema: Json, file: str) -> Json:
    """``schema`` (a part of ``file``) with every reference made a component reference."""
    if isinstance(schema, list):
        return [_local(item, file) for item in schema]
    if not isinstance(schema, dict):
        return schema
    out = {key: _local(value, file) for key, value in schema.items()}
    if isinstance(out.get("properties"), dict):  # generators take no boolean schema there
        out["properties"] = {k: {} if v is True else v for k, v in out["properties"].items()}
    target = out.pop("$ref", None)
    if isinstance(target, str):
        name, _, pointer = target.partition("#")
        where = name.removesuffix(FILE_SUFFIX) if name else file
        local = ref(_names()[f"{where}#{pointer}" if pointer else where])
        if not out:
            return local
        # the keywords beside a reference apply with it, as two allOf members (2020-12):
        # generators drop what stands beside a $ref, and merge allOf members into one model
        notes = {key: out.pop(key) for key in ANNOTATIONS if key in out}
        return notes | {"allOf": [local, out]}
    return out


def part(file: str, *path: str) -> Json:
    """A part of a generated file (its keys ``path`` down), its references made local."""
    schema = _files()[file]
    for key in path:
        schema = schema[key]
    return _local(schema, file)


@functools.cache
def file_components() -> dict[str, Json]:
    """Every generated file's root and definitions as components (``$schema``, ``$id`` and
    ``$defs`` left out: the document's dialect is 2020-12, and nothing is resolved by id)."""
    out: dict[str, Json] = {}
    names = _names()
    for file, schema in _files().items():
        root = {k: v for k, v in schema.items() if k not in ("$schema", "$id", "$defs")}
        out[names[file]] = _local(root, file)
        for definition, body in schema.get("$defs", {}).items():
            out[names[f"{file}#/$defs/{definition}"]] = _local(body, file)
    return out


# ------------------------------------------------------------------ HTTP bodies


def _closed(properties: dict[str, Json], required: list[str], description: str) -> Json:
    return {
        "description": description,
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": False,
    }


AGENT_ID: Final = {
    "type": "string",
    "minLength": 1,
    "maxLength": limits.MAX_AGENT_ID_LENGTH,
    "pattern": "^[^\\x00]*$",
    "description": "An agent id: 1 to 256 characters, no NUL.",
}
POST_ID: Final = {"type": "integer", "minimum": 1, "maximum": MAX_POST_ID}
SEQ: Final = {"type": "integer", "minimum": 0, "maximum": limits.MAX_SAFE_INTEGER}
COUNT: Final = {"type": "integer", "minimum": 0}

_OPTIONAL_TEXT: Final = {"oneOf": [{"type": "null"}, {"type": "string"}]}
_OPTIONAL_LIST: Final = {"oneOf": [{"type": "null"}, {"type": "array", "items": {}}]}
RUN_AGENT_INPUT: Final = {
    "description": "AG-UI's RunAgentInput (R44; what the server reads of it, open to the rest "
    "of AG-UI's fields): threadId is the agent id; the user messages whose ids the log does "
    "not hold are posted in order with the intent forwardedProps.intent names (followup, "
    "queue, steer, inject; followup by default); messages of other roles are passed over.",
    "type": "object",
    "properties": {
        "threadId": {"type": "string"},
        "runId": {"type": "string"},
        "parentRunId": _OPTIONAL_TEXT,
        "protocolVersion": _OPTIONAL_TEXT,
        "state": {},
        "messages": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "id": {"type": "string"},
                    "role": {
                        "enum": [
                            "developer",
                            "system",
                            "assistant",
                            "user",
                            "tool",
                            "activity",
                            "reasoning",
                        ]
                    },
                    "content": {},
                },
                "required": ["id", "role"],
                "if": {"properties": {"role": {"const": "user"}}},
                "then": {
                    "properties": {
                        "content": {
                            "anyOf": [
                                {"type": "string"},
                                {
                                    "type": "array",
                                    "items": {
                                        "type": "object",
                                        "properties": {"type": {"type": "string"}},
                                        "required": ["type"],
                                    },
                                },
                            ]
                        }
                    },
                    "required": ["content"],
                },
            },
        },
        "tools": _OPTIONAL_LIST,
        "context": _OPTIONAL_LIST,
        "resume": _OPTIONAL_LIST,
        "forwardedProps": {},
    },
    "required": ["threadId", "runId", "messages"],
}
"""The body of ``POST .../ag-ui``: the shape ``inbox_core.http.agui.run_input`` checks
(a value it refuses beyond it is ``InvalidInput``)."""

_DERIVED: Final = (
    "IntentMessage",
    "IntentBody",
    "InjectBody",
    "PostableCommand",
    "PostOutcome",
    "PostAnswer",
    "Post",
    "Problem",
    "Agent",
    "EventsPage",
    "Fates",
    "Transcript",
    "AgentListItem",
    "AgentList",
    "Health",
    "OpenApiDocument",
    "RunAgentInput",
)


@functools.cache
def derived() -> dict[str, Json]:
    """The HTTP bodies, named as ``_DERIVED`` lists them."""
    fields = part("message", "properties")
    relaxed = dict(fields)
    relaxed["content"] = {"anyOf": [{"type": "string"}, fields["content"]]}
    intent_message = _closed(
        relaxed,
        ["content"],
        "A message of formats §8 in the relaxed form of an intent body: 'id' absent (the "
        "server mints one and answers it as messageId), 'role' absent, 'source' absent (the "
        "user), 'content' a string (one text block).",
    )
    expect = {"oneOf": [{"type": "null"}, ref(component_name("expectation"))]}

    def body(contexts: Json, description: str) -> Json:
        return _closed(
            {"message": ref("IntentMessage"), "contexts": contexts, "expect": expect},
            ["message"],
            description,
        )

    tags = [v.tag for v in codec.COMMAND.variants if v.cls in POSTABLE_TYPES]
    state = {
        key: part("vector", "$defs", "projection", "properties", key) for key in AGENT_STATE_KEYS
    }
    answer = {"agent": AGENT_ID, "post": POST_ID, "outcome": ref("PostOutcome")}
    out = {
        "IntentMessage": intent_message,
        "IntentBody": body(
            {"type": "array", "items": ref("IntentMessage")},
            "The body of followup, queue and steer.",
        ),
        "InjectBody": body(
            {"type": "array", "items": ref("IntentMessage"), "maxItems": 0},
            "The body of inject: no contexts (R11).",
        ),
        "PostableCommand": {
            "description": "One caller command any process may post (R35), in its JSON form.",
            "allOf": [ref("Command"), {"properties": {"type": {"enum": tags}}}],
        },
        "PostOutcome": {
            "oneOf": [
                _closed({"kind": {"const": "pending"}}, ["kind"], "Not decided yet."),
                _closed(
                    {"kind": {"const": "applied"}}, ["kind"], "Applied: its events are in the log."
                ),
                _closed(
                    {
                        "kind": {"const": "rejected"},
                        "error": {"type": "string"},
                        "message": {"type": "string"},
                    },
                    ["kind", "error", "message"],
                    "Rejected by the owner: the typed error's class name and text; nothing "
                    "appended.",
                ),
            ]
        },
        "PostAnswer": _closed(
            answer | {"messageId": {"type": "string"}},
            ["agent", "post"],
            "A post made durable and how it stands (messageId: the message the command "
            "carries; for a retry, the first post's). No outcome when a token without the "
            "read scope sent a key that holds another command (D45).",
        ),
        "Post": _closed(answer, ["agent", "post", "outcome"], "One post and its outcome."),
        "Problem": {
            "description": "RFC 9457: title is the typed error's class name, or the HTTP "
            "status phrase; a 409 adds the post it is about.",
            "type": "object",
            "properties": {
                "type": {"type": "string"},
                "title": {"type": "string"},
                "status": {"type": "integer"},
                "detail": {"type": "string"},
                **answer,
                "messageId": {"type": "string"},
                "field": {"type": "string"},
            },
            "required": ["type", "title", "status"],
        },
        "Agent": _closed(
            {"agent": AGENT_ID, "seq": SEQ, **state, "pendingPosts": COUNT},
            ["agent", "seq", *state, "pendingPosts"],
            "The agent as its log says now: status, lastTurn, awaiting, abortCause, nextTurn "
            "and nextStep of its projection (in a vector's 'final' form), the number of "
            "events so far, and the posts waiting for it.",
        ),
        "EventsPage": _closed(
            {"events": {"type": "array", "items": ref("LogRecord")}, "next": SEQ},
            ["events", "next"],
            "Events with seq >= since, in order; next is the seq after the last.",
        ),
        "Fates": _closed(
            {"fates": part("vector", "$defs", "projection", "properties", "fates")},
            ["fates"],
            "fates(log) (R32), as the port protocol's fold answers it.",
        ),
        "Transcript": _closed(
            {"transcript": part("vector", "$defs", "projection", "properties", "transcript")},
            ["transcript"],
            "transcript(log) (R30), as the port protocol's fold answers it.",
        ),
        "AgentListItem": _closed(
            {"id": AGENT_ID, "work": {"type": "boolean"}, "pendingPosts": COUNT},
            ["id", "work", "pendingPosts"],
            "One agent: whether it has work (R37), its waiting posts.",
        ),
        "AgentList": _closed(
            {
                "agents": {"type": "array", "items": ref("AgentListItem")},
                "next": {"oneOf": [{"type": "null"}, AGENT_ID]},
            },
            ["agents", "next"],
            "A page of agents in id order; next is the last id of a full page, else null.",
        ),
        "Health": _closed({"status": {"const": "ok"}}, ["status"], "The store answers."),
        "OpenApiDocument": {
            "description": "This document: OpenAPI 3.1.",
            "type": "object",
            "required": ["openapi", "info", "paths", "components"],
        },
        "RunAgentInput": RUN_AGENT_INPUT,
    }
    assert tuple(out) == _DERIVED
    return out
