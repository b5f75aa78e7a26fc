"""``GET /openapi.json`` (R39): an OpenAPI 3.1 document of the front door.

Its component schemas *are* the generated JSON Schemas of the formats: the files of
``specs/schema/`` that ``tools/gen_schemas.py`` also writes into this package
(``schemas/``), each included whole with its ``$id`` (so their references between one
another resolve as they do on disk). The schemas of the HTTP bodies are derived from them
here: the relaxed message of an intent body from the message schema, the agent resource from
the vector's projection, the postable command from the command schema and ``POSTABLE_TYPES``;
no form of §8 is written out a second time. ``OPERATIONS`` lists every path, method and
status; specs/http.md's table is checked against it.
"""

from __future__ import annotations

import copy
import functools
import json
from importlib import metadata, resources
from typing import Any, Final

import attrs

from inbox_core import codec
from inbox_core.http.reading import AGENT_STATE_KEYS
from inbox_core.shell.stores.posts import POSTABLE_TYPES

__all__ = ["COMPONENT_FILES", "OPERATIONS", "Operation", "openapi_document", "schema_file"]

Json = Any
BASE: Final = "https://inbox-core.invalid/schema/"
COMPONENT_FILES: Final = {
    "Message": "message",
    "Entry": "entry",
    "DurableEvent": "durable-event",
    "LogRecord": "log-record",
    "Notification": "notification",
    "Command": "command",
    "Vector": "vector",
}
"""Component name -> generated schema file (``<name>.schema.json``)."""


def schema_file(name: str) -> Json:
    """One generated schema as shipped in the package."""
    text = resources.files("inbox_core.http").joinpath(f"schemas/{name}.schema.json").read_text()
    return json.loads(text)


def _ref(name: str) -> Json:
    return {"$ref": f"#/components/schemas/{name}"}


def _absolute(schema: Json, base: str) -> Json:
    """``schema`` (a part of the file at ``base``) with every relative ``$ref`` made absolute,
    so it means the same wherever it is placed."""
    if isinstance(schema, list):
        return [_absolute(item, base) for item in schema]
    if not isinstance(schema, dict):
        return schema
    out = {key: _absolute(value, base) for key, value in schema.items()}
    ref = out.get("$ref")
    if isinstance(ref, str) and "://" not in ref:
        out["$ref"] = base + ref if ref.startswith("#") else BASE + ref
    return out


def _from(name: str, pointer: str) -> Json:
    """A reference to a generated file (by its ``$id``: a component that embeds it is found
    by that id) or to a definition inside it."""
    return {"$ref": f"{BASE}{name}.schema.json" + (f"#{pointer}" if pointer else "")}


def _closed(properties: dict[str, Json], required: list[str], description: str) -> Json:
    return {
        "description": description,
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": False,
    }


def _derived() -> dict[str, Json]:
    message = schema_file("message")
    fields = _absolute(message["properties"], f"{BASE}message.schema.json")
    relaxed = dict(fields)
    relaxed["content"] = {"anyOf": [{"type": "string"}, fields["content"]]}
    intent_message = _closed(
        relaxed,
        ["content"],
        "A message of formats §8 in the relaxed form of an intent body: 'id' absent (the "
        "server mints one and answers it as messageId), 'role' absent, 'source' absent (the "
        "user), 'content' a string (one text block).",
    )
    expect = {"oneOf": [{"type": "null"}, _from("command", "/$defs/expectation")]}

    def body(contexts: Json, description: str) -> Json:
        return _closed(
            {"message": _ref("IntentMessage"), "contexts": contexts, "expect": expect},
            ["message"],
            description,
        )

    tags = [v.tag for v in codec.COMMAND.variants if v.cls in POSTABLE_TYPES]
    projection = schema_file("vector")["$defs"]["projection"]["properties"]
    state = {
        key: _absolute(projection[key], f"{BASE}vector.schema.json") for key in AGENT_STATE_KEYS
    }
    outcome = {
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
                "Rejected by the owner: the typed error's class name and text; nothing appended.",
            ),
        ]
    }
    agent_id = {"type": "string", "minLength": 1, "maxLength": 256}
    post_id = {"type": "integer", "minimum": 1}
    seq = {"type": "integer", "minimum": 0}
    answer = {"agent": agent_id, "post": post_id, "outcome": _ref("Outcome")}
    return {
        "IntentMessage": intent_message,
        "IntentBody": body(
            {"type": "array", "items": _ref("IntentMessage")},
            "The body of followup, queue and steer.",
        ),
        "InjectBody": body(
            {"type": "array", "maxItems": 0}, "The body of inject: no contexts (R11)."
        ),
        "PostableCommand": {
            "description": "One caller command any process may post (R35), in its JSON form.",
            "allOf": [_from("command", ""), {"properties": {"type": {"enum": tags}}}],
        },
        "Outcome": outcome,
        "PostAnswer": _closed(
            answer | {"messageId": {"type": "string"}},
            ["agent", "post", "outcome"],
            "A post made durable and how it stands (messageId: the message the command "
            "carries; for a retry, the first post's).",
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
            },
            "required": ["type", "title", "status"],
        },
        "Agent": _closed(
            {"agent": agent_id, "seq": seq, **state, "pendingPosts": seq},
            ["agent", "seq", *state, "pendingPosts"],
            "The agent as its log says now: status, lastTurn, awaiting, abortCause, nextTurn "
            "and nextStep of its projection (in a vector's 'final' form), the number of "
            "events so far, and the posts waiting for it.",
        ),
        "EventsPage": _closed(
            {"events": {"type": "array", "items": _from("log-record", "")}, "next": seq},
            ["events", "next"],
            "Events with seq >= since, in order; next is the seq after the last.",
        ),
        "Fates": _closed(
            {"fates": _from("vector", "/$defs/projection/properties/fates")},
            ["fates"],
            "fates(log) (R32), as the port protocol's fold answers it.",
        ),
        "Transcript": _closed(
            {"transcript": _from("vector", "/$defs/projection/properties/transcript")},
            ["transcript"],
            "transcript(log) (R30), as the port protocol's fold answers it.",
        ),
        "AgentList": _closed(
            {
                "agents": {
                    "type": "array",
                    "items": _closed(
                        {"id": agent_id, "work": {"type": "boolean"}, "pendingPosts": seq},
                        ["id", "work", "pendingPosts"],
                        "One agent: whether it has work (R37), its waiting posts.",
                    ),
                },
                "next": {"type": ["string", "null"]},
            },
            ["agents", "next"],
            "A page of agents in id order; next is the last id of a full page, else null.",
        ),
        "Health": _closed({"status": {"const": "ok"}}, ["status"], "The store answers."),
    }


# ----------------------------------------------------------------- operations


@attrs.frozen
class Operation:
    """One path and method: what it takes and every status it answers."""

    method: str
    path: str
    summary: str
    answers: dict[int, str]  # status -> component (a problem for 4xx and 5xx)
    body: str | None = None
    parameters: tuple[str, ...] = ()
    token: bool = True


PROBLEMS_OF_A_POST: Final = dict.fromkeys(
    (400, 401, 403, 404, 408, 409, 413, 415, 422, 429), "Problem"
)
READ: Final = {401: "Problem", 403: "Problem", 404: "Problem", 503: "Problem"}
_POST_PARAMETERS: Final = ("agent", "Idempotency-Key", "Prefer")


def _intent(name: str, what: str) -> Operation:
    return Operation(
        "post",
        f"/v1/agents/{{agent}}/{name}",
        f"Post a message: {what}",
        {200: "PostAnswer", 202: "PostAnswer", **PROBLEMS_OF_A_POST, 503: "Problem"},
        "InjectBody" if name == "inject" else "IntentBody",
        _POST_PARAMETERS,
    )


OPERATIONS: Final = (
    _intent("followup", "next turn, waking (a turn of its own)"),
    _intent("queue", "next turn, not waking"),
    _intent("steer", "next step, waking (joins the live turn)"),
    _intent("inject", "next step, not waking"),
    Operation(
        "post",
        "/v1/agents/{agent}/commands",
        "Post any postable command in its JSON form",
        {200: "PostAnswer", 202: "PostAnswer", **PROBLEMS_OF_A_POST, 503: "Problem"},
        "PostableCommand",
        _POST_PARAMETERS,
    ),
    Operation(
        "get",
        "/v1/agents/{agent}/posts/{post}",
        "One post's outcome",
        {200: "Post", **READ},
        parameters=("agent", "post"),
    ),
    Operation(
        "get",
        "/v1/agents/{agent}",
        "The agent as its log says now",
        {200: "Agent", **READ},
        parameters=("agent",),
    ),
    Operation(
        "get",
        "/v1/agents/{agent}/events",
        "The agent's events: a page, or live as Server-Sent Events",
        {200: "EventsPage", 400: "Problem", 429: "Problem", **READ},
        parameters=("agent", "since", "limit", "Last-Event-ID"),
    ),
    Operation(
        "get",
        "/v1/agents/{agent}/fates",
        "fates(log)",
        {200: "Fates", **READ},
        parameters=("agent",),
    ),
    Operation(
        "get",
        "/v1/agents/{agent}/transcript",
        "transcript(log)",
        {200: "Transcript", **READ},
        parameters=("agent",),
    ),
    Operation(
        "get",
        "/v1/agents",
        "A page of the store's agents (a token's pattern's only)",
        {200: "AgentList", 400: "Problem", 401: "Problem", 403: "Problem", 503: "Problem"},
        parameters=("after", "list-limit"),
    ),
    Operation("get", "/openapi.json", "This document", {200: "OpenAPI"}, token=False),
    Operation(
        "get", "/healthz", "Whether the store answers", {200: "Health", 503: "Problem"}, token=False
    ),
    Operation(
        "get", "/metrics", "Prometheus text", {200: "Metrics", 401: "Problem", 403: "Problem"}
    ),
)

PARAMETERS: Final[dict[str, Json]] = {
    "agent": {
        "name": "agent",
        "in": "path",
        "required": True,
        "description": "The agent id, percent-encoded as one segment ('/' is %2F; '.' and '..' "
        "are ids).",
        "schema": {"type": "string"},
    },
    "post": {
        "name": "post",
        "in": "path",
        "required": True,
        "schema": {"type": "integer", "minimum": 1},
    },
    "since": {
        "name": "since",
        "in": "query",
        "schema": {"type": "integer", "minimum": 0, "default": 0},
    },
    "limit": {
        "name": "limit",
        "in": "query",
        "schema": {"type": "integer", "minimum": 1, "maximum": 1000, "default": 100},
    },
    "list-limit": {
        "name": "limit",
        "in": "query",
        "schema": {"type": "integer", "minimum": 1, "maximum": 1000, "default": 100},
    },
    "after": {"name": "after", "in": "query", "schema": {"type": "string"}},
    "Idempotency-Key": {
        "name": "Idempotency-Key",
        "in": "header",
        "description": "The post's key: a retry is answered as the first post is now.",
        "schema": {"type": "string", "minLength": 1, "maxLength": 256},
    },
    "Prefer": {
        "name": "Prefer",
        "in": "header",
        "description": "wait=N (RFC 7240): answer once decided or after N s (at most 60).",
        "schema": {"type": "string"},
    },
    "Last-Event-ID": {
        "name": "Last-Event-ID",
        "in": "header",
        "description": "With Accept: text/event-stream: start after this seq.",
        "schema": {"type": "string"},
    },
}

_MEDIA: Final = {"Metrics": "text/plain; version=0.0.4", "OpenAPI": "application/json"}


def _response(status: int, component: str) -> Json:
    from inbox_core.http.problem import PHRASES  # noqa: PLC0415 - starlette only when served

    if component == "Problem":
        return {
            "description": PHRASES.get(status, "Error"),
            "content": {"application/problem+json": {"schema": _ref("Problem")}},
        }
    if component in _MEDIA:
        return {"description": "OK", "content": {_MEDIA[component]: {"schema": {"type": "string"}}}}
    content = {"application/json": {"schema": _ref(component)}}
    if component == "EventsPage":
        content["text/event-stream"] = {
            "schema": {"type": "string", "description": "id: seq, event: type, data: LogRecord"}
        }
    return {"description": {200: "OK", 202: "Accepted"}.get(status, "OK"), "content": content}


def _operation(op: Operation) -> Json:
    out: Json = {
        "operationId": f"{op.method}{op.path}",
        "summary": op.summary,
        "parameters": [PARAMETERS[name] for name in op.parameters],
        "responses": {str(s): _response(s, c) for s, c in sorted(op.answers.items())},
    }
    if op.body is not None:
        out["requestBody"] = {
            "required": True,
            "content": {"application/json": {"schema": _ref(op.body)}},
        }
    if not op.token:
        out["security"] = []
    return out


@functools.cache
def _document() -> Json:
    paths: dict[str, Json] = {}
    for op in OPERATIONS:
        paths.setdefault(op.path, {})[op.method] = _operation(op)
    schemas = {name: schema_file(file) for name, file in COMPONENT_FILES.items()}
    try:
        version = metadata.version("inbox-core")
    except metadata.PackageNotFoundError:  # pragma: no cover - run from a checkout
        version = "0"
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "inbox-core",
            "version": version,
            "description": "Every agent of a store over HTTP (R39): posts with the guarantees "
            "of store.post, events with those of store.watch. specs/http.md explains it.",
        },
        "paths": paths,
        "components": {
            "schemas": schemas | _derived(),
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
        },
        "security": [{}, {"bearer": []}],
    }


def openapi_document() -> Json:
    """The document (a fresh copy: the caller may change it)."""
    return copy.deepcopy(_document())
