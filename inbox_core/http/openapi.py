"""``GET /openapi.json`` (R39, v5; D46): an OpenAPI 3.1 document of the front door that the
tools people point at it read as it is: every schema a component referenced locally
(``inbox_core.http.components``: the generated JSON Schemas of the formats and the bodies
derived from them), every operation named and tagged, every status an operation answers
and every header sent with it declared.

What an operation answers is table-driven. ``OPERATIONS`` gives each path and method its
name, its parameters, its body, its result and its *traits* (what it does: checks a token,
reads the store, names an agent, takes a body, ...); ``ANSWERS`` says, one row per
(status, trait), which statuses the operations with that trait answer and which headers
come with them (``HEADERS``: each header's meaning and schema); ``EVERY_ANSWER`` names the
headers sent with every answer. A new status or header is one row; specs/http.md's table is
checked against the result.
"""

from __future__ import annotations

import copy
import functools
from http import HTTPStatus
from importlib import metadata
from typing import Any, Final

import attrs

from inbox_core import limits
from inbox_core.http import reading
from inbox_core.http.components import AGENT_ID, POST_ID, derived, file_components, ref
from inbox_core.http.guard import CONTENT_SECURITY_POLICY
from inbox_core.http.store import PAGE

__all__ = [
    "ANSWERS",
    "ANYWHERE",
    "EVERY_ANSWER",
    "HEADERS",
    "OPERATIONS",
    "Answer",
    "Operation",
    "openapi_document",
    "responses",
]

Json = Any

# ------------------------------------------------------------------- the table

HEADERS: Final[dict[str, tuple[str, Json]]] = {
    "Location": (
        "The post's own path (GET it for its outcome).",
        {"type": "string", "pattern": "^/v1/agents/[^/]+/posts/[1-9][0-9]*$"},
    ),
    "Preference-Applied": (
        "wait=N: the Prefer: wait=N of the request was honoured (RFC 7240).",
        {"type": "string", "pattern": "^wait=[0-9]+$"},
    ),
    "Retry-After": (
        "Seconds to wait before trying again.",
        {"type": "string", "pattern": "^[0-9]+$"},
    ),
    "WWW-Authenticate": ("Bearer: this store asks for a token.", {"type": "string"}),
    "Allow": ("The methods the path takes.", {"type": "string"}),
    "Cache-Control": ("no-cache, on an event stream.", {"type": "string"}),
    "X-Accel-Buffering": (
        "no, on an event stream (a proxy passes it on unbuffered).",
        {"type": "string"},
    ),
    "X-Content-Type-Options": ("nosniff (D43).", {"type": "string", "const": "nosniff"}),
    "X-Frame-Options": (
        "DENY: no page frames an answer (D43).",
        {"type": "string", "const": "DENY"},
    ),
    "Content-Security-Policy": (
        "The inspector's policy, frame-ancestors 'none' included (D43).",
        {"type": "string", "const": CONTENT_SECURITY_POLICY},
    ),
}
"""Every response header the front door sends: its meaning and its schema."""

EVERY_ANSWER: Final[tuple[str, ...]] = (
    "X-Content-Type-Options",
    "X-Frame-Options",
    "Content-Security-Policy",
)
"""Headers (of ``HEADERS``) sent with every answer of every operation."""


@attrs.frozen
class Answer:
    """The operations with ``trait`` may answer ``status`` (a problem from 400 on, else the
    operation's result) with ``headers``: names of ``HEADERS``, space-separated, each sent
    always or, marked ``?``, sometimes."""

    status: int
    trait: str
    headers: str
    why: str

    @property
    def sent(self) -> dict[str, bool]:
        """Header -> whether it is always sent."""
        return {name.rstrip("?"): not name.endswith("?") for name in self.headers.split()}


POSTED: Final = "Location Preference-Applied?"
STREAMED: Final = "Cache-Control? X-Accel-Buffering?"
ANSWERS: Final = (
    Answer(200, "any", "", "OK"),
    Answer(200, "posting", POSTED, "the owner applied the post within the wait"),
    Answer(202, "posting", POSTED, "the post is durable, not decided yet"),
    Answer(200, "stream", STREAMED, "or the events live, as SSE"),
    Answer(200, "run", STREAMED, "the run's AG-UI events, as SSE (a rejected post: RUN_ERROR)"),
    Answer(400, "body", "", "the body is not UTF-8 JSON; a bad Idempotency-Key, Content-Length"),
    Answer(400, "query", "", "a query parameter out of its bounds"),
    Answer(400, "stream", "", "a Last-Event-ID that is no seq"),
    Answer(400, "any", "", "two Host headers, or one that is no host (D43)"),
    Answer(401, "token", "WWW-Authenticate", "no token the store knows"),
    Answer(403, "token", "", "the token lacks the scope or does not reach the agent"),
    Answer(404, "agent", "", "the path names no agent"),
    Answer(404, "post", "", "no such post for this agent"),
    Answer(405, "any", "Allow", "the path does not take this method"),
    Answer(408, "body", "", "the body did not arrive in time"),
    Answer(409, "posting", POSTED, "the owner rejected the post (written and consumed)"),
    Answer(413, "body", "", "the body is over maxDocumentSize"),
    Answer(415, "body", "", "a media type other than application/json"),
    Answer(421, "any", "", "a Host this server does not answer to (D43)"),
    Answer(422, "body", "", "JSON that is no postable command or message"),
    Answer(422, "run", "", "a RunAgentInput that does not validate (field: AG-UI's name)"),
    Answer(429, "body", "Retry-After", "the token's bodies in flight are over its budget"),
    Answer(429, "body", "Retry-After", "a quota: new agents per minute, posts waiting (D45)"),
    Answer(429, "stream", "Retry-After", "the token has its most event streams open"),
    Answer(429, "run", "Retry-After", "the token has its most event streams open"),
    Answer(431, "any", "", "more than 100 headers or 32 KiB of them"),
    Answer(500, "any", "", "the server failed (logged, never shown)"),
    Answer(503, "store", "", "the store failed: retry (a post with its Idempotency-Key)"),
    Answer(503, "any", "Retry-After?", "the server cut the request as it stopped (D44)"),
)
"""What the operations answer, by trait (``any``: every operation), one row per status and
trait; rows of one status add up."""

ANYWHERE: Final = frozenset(
    a.status for a in ANSWERS if a.trait == "any" and a.status >= 400
) - frozenset(a.status for a in ANSWERS if a.trait != "any")
"""The error statuses any request may get and nothing else gives (specs/http.md says so
once, not per path); one that also has a meaning of its own on some paths (400, 503) is
listed on every path."""


@attrs.frozen
class Operation:
    """One path and method: its name, what it takes, what it answers by its traits:
    ``token`` (it asks for a token), ``store`` (it reads the store), ``agent`` (its path
    names an agent), ``post`` (and a post), ``body`` (it takes a JSON body), ``posting``
    (it posts it and answers the post), ``query`` (it takes query values), ``stream`` (it
    may answer an event stream), ``run`` (it answers an AG-UI run, R44); every operation
    has ``any``."""

    name: str
    method: str
    path: str
    tag: str
    summary: str
    result: str  # the component of its 2xx answers
    traits: frozenset[str]
    body: str | None = None
    parameters: tuple[str, ...] = ()

    @property
    def token(self) -> bool:
        return "token" in self.traits

    @property
    def answers(self) -> dict[int, list[Answer]]:
        """Status -> the rows that declare it for this operation."""
        out: dict[int, list[Answer]] = {}
        for answer in ANSWERS:
            if answer.trait == "any" or answer.trait in self.traits:
                out.setdefault(answer.status, []).append(answer)
        return dict(sorted(out.items()))


def _traits(*names: str) -> frozenset[str]:
    return frozenset(names)


AGENT: Final = _traits("token", "store", "agent")
POSTING: Final = AGENT | {"body", "posting"}
_POST_PARAMETERS: Final = ("agent", "Idempotency-Key", "Prefer")


def _intent(name: str, what: str) -> Operation:
    return Operation(
        f"post{name.title()}",
        "post",
        f"/v1/agents/{{agent}}/{name}",
        "posting",
        f"Post a message: {what}",
        "PostAnswer",
        POSTING,
        "InjectBody" if name == "inject" else "IntentBody",
        _POST_PARAMETERS,
    )


OPERATIONS: Final = (
    _intent("followup", "next turn, waking (a turn of its own)"),
    _intent("queue", "next turn, not waking"),
    _intent("steer", "next step, waking (joins the live turn)"),
    _intent("inject", "next step, not waking"),
    Operation(
        "postCommands",
        "post",
        "/v1/agents/{agent}/commands",
        "posting",
        "Post any postable command in its JSON form",
        "PostAnswer",
        POSTING,
        "PostableCommand",
        _POST_PARAMETERS,
    ),
    Operation(
        "postAgUi",
        "post",
        "/v1/agents/{agent}/ag-ui",
        "posting",
        "Run the agent as an AG-UI agent: RunAgentInput in, its events out (R44)",
        "AgUiEvents",
        AGENT | {"body", "run"},
        "RunAgentInput",
        ("agent",),
    ),
    Operation(
        "getPost",
        "get",
        "/v1/agents/{agent}/posts/{post}",
        "posting",
        "One post's outcome",
        "Post",
        AGENT | {"post"},
        parameters=("agent", "post"),
    ),
    Operation(
        "getAgent",
        "get",
        "/v1/agents/{agent}",
        "reading",
        "The agent as its log says now",
        "Agent",
        AGENT,
        parameters=("agent",),
    ),
    Operation(
        "getEvents",
        "get",
        "/v1/agents/{agent}/events",
        "reading",
        "The agent's events: a page, or live as Server-Sent Events",
        "EventsPage",
        AGENT | {"query", "stream"},
        parameters=("agent", "since", "limit", "Last-Event-ID"),
    ),
    Operation(
        "getFates",
        "get",
        "/v1/agents/{agent}/fates",
        "reading",
        "fates(log)",
        "Fates",
        AGENT,
        parameters=("agent",),
    ),
    Operation(
        "getTranscript",
        "get",
        "/v1/agents/{agent}/transcript",
        "reading",
        "transcript(log)",
        "Transcript",
        AGENT,
        parameters=("agent",),
    ),
    Operation(
        "getAgents",
        "get",
        "/v1/agents",
        "reading",
        "A page of the store's agents (a token's pattern's only)",
        "AgentList",
        _traits("token", "store", "query"),
        parameters=("after", "list-limit"),
    ),
    Operation(
        "getOpenapi",
        "get",
        "/openapi.json",
        "service",
        "This document",
        "OpenApiDocument",
        _traits(),
    ),
    Operation(
        "getHealth",
        "get",
        "/healthz",
        "service",
        "Whether the store answers",
        "Health",
        _traits("store"),
    ),
    Operation(
        "getMetrics",
        "get",
        "/metrics",
        "service",
        "Prometheus text",
        "Metrics",
        _traits("token", "store"),
    ),
)


def _page(default: int, most: int) -> Json:
    return {"type": "integer", "minimum": 1, "maximum": most, "default": default}


PARAMETERS: Final[dict[str, Json]] = {
    "agent": {
        "name": "agent",
        "in": "path",
        "required": True,
        "description": "The agent id, percent-encoded as one segment ('/' is %2F; '.' and '..' "
        "are ids).",
        "schema": AGENT_ID,
    },
    "post": {
        "name": "post",
        "in": "path",
        "required": True,
        "description": "The post's number; any other is 404, like a post never made.",
        "schema": POST_ID,
    },
    "since": {
        "name": "since",
        "in": "query",
        "description": "The first seq of the page (400 beyond its bounds).",
        "schema": {
            "type": "integer",
            "minimum": 0,
            "maximum": limits.MAX_SAFE_INTEGER,
            "default": 0,
        },
    },
    "limit": {
        "name": "limit",
        "in": "query",
        "description": "The most events in the page (400 beyond its bounds).",
        "schema": _page(reading.EVENTS_PAGE, PAGE),
    },
    "list-limit": {
        "name": "limit",
        "in": "query",
        "description": "The most agents in the page (400 beyond its bounds).",
        "schema": _page(reading.LIST_PAGE, reading.MAX_LIST_PAGE),
    },
    "after": {
        "name": "after",
        "in": "query",
        "description": "List the agents whose id comes after this one.",
        "schema": AGENT_ID,
    },
    "Idempotency-Key": {
        "name": "Idempotency-Key",
        "in": "header",
        "description": "The post's key (the limits of an agent id): a retry is answered as "
        "the first post is now.",
        "schema": {k: v for k, v in AGENT_ID.items() if k != "description"},
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

_TEXT: Final = {"Metrics": "text/plain; version=0.0.4", "AgUiEvents": "text/event-stream"}
"""Results that are no JSON: their media type (the body a string)."""


# -------------------------------------------------------------------- the document


def _headers(rows: list[Answer]) -> Json:
    sent = dict.fromkeys(EVERY_ANSWER, True)
    for row in rows:
        sent |= {name: always or sent.get(name, False) for name, always in row.sent.items()}
    return {
        name: {"description": HEADERS[name][0], "required": required, "schema": HEADERS[name][1]}
        for name, required in sent.items()
    }


def _response(op: Operation, status: int, rows: list[Answer]) -> Json:
    from inbox_core.http.problem import PHRASES  # noqa: PLC0415 - starlette only when served

    why = "; ".join(row.why for row in rows if row.why != "OK")
    phrase = PHRASES.get(status) or HTTPStatus(status).phrase
    out: Json = {"description": phrase + (f": {why}" if why else "")}
    if status >= 400:
        out["content"] = {"application/problem+json": {"schema": ref("Problem")}}
    elif op.result in _TEXT:
        out["content"] = {_TEXT[op.result]: {"schema": {"type": "string"}}}
    else:
        out["content"] = {"application/json": {"schema": ref(op.result)}}
        if "stream" in op.traits:
            out["content"]["text/event-stream"] = {
                "schema": {"type": "string", "description": "id: seq, event: type, data: LogRecord"}
            }
    headers = _headers(rows)
    if headers:
        out["headers"] = headers
    return out


def responses(op: Operation) -> Json:
    """The ``responses`` of one operation, from its traits and ``ANSWERS``."""
    return {str(status): _response(op, status, rows) for status, rows in op.answers.items()}


def _operation(op: Operation) -> Json:
    out: Json = {
        "operationId": op.name,
        "tags": [op.tag],
        "summary": op.summary,
        "parameters": [PARAMETERS[name] for name in op.parameters],
        "responses": responses(op),
    }
    if op.body is not None:
        out["requestBody"] = {
            "required": True,
            "content": {"application/json": {"schema": ref(op.body)}},
        }
    if not op.token:
        out["security"] = []
    return out


TAGS: Final = (
    {"name": "posting", "description": "Post commands to an agent (R35) and read their outcome."},
    {"name": "reading", "description": "Read an agent, its log and its folds, and the agents."},
    {"name": "service", "description": "This document, health and metrics."},
)


@functools.cache
def _document() -> Json:
    paths: dict[str, Json] = {}
    for op in OPERATIONS:
        paths.setdefault(op.path, {})[op.method] = _operation(op)
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
        "tags": list(TAGS),
        "paths": paths,
        "components": {
            "schemas": file_components() | derived(),
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
        },
        "security": [{}, {"bearer": []}],
    }


def openapi_document() -> Json:
    """The document (a fresh copy: the caller may change it)."""
    return copy.deepcopy(_document())
