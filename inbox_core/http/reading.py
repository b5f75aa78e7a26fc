"""The reading endpoints (R39): an agent, one of its posts, its events, its folds, the list.

Every answer is what the store holds when it is read: the agent resource folds the log from
its newest checkpoint (R41: the events after it; in a worker thread, like every store
call), the folds are those of ``fates`` and
``transcript`` in the JSON the port protocol's ``fold`` answers, and an agent nobody wrote
to is idle and empty, never 404.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

from starlette.requests import Request
from starlette.responses import Response

from inbox_core import limits
from inbox_core.codec import (
    PROJECTION,
    ProjectionView,
    event_to_json,
    fates_to_json,
    transcript_to_json,
)
from inbox_core.errors import InvalidInput
from inbox_core.http.auth import Access
from inbox_core.http.door import FrontDoor, whole_number
from inbox_core.http.metrics import CONTENT_TYPE
from inbox_core.http.paths import agent_id
from inbox_core.http.posting import outcome_json
from inbox_core.http.problem import Problem, json_bytes
from inbox_core.http.sse import EventStream, wants_events
from inbox_core.http.store import PAGE, read_log
from inbox_core.shell.stores.checkpoints import open_tail
from inbox_core.shell.stores.posts import Receipt, UnknownReceipt

__all__ = [
    "AGENT_STATE_KEYS",
    "get_agent",
    "get_agents",
    "get_events",
    "get_fates",
    "get_post",
    "get_transcript",
    "healthz",
    "metrics",
]

AGENT_STATE_KEYS: Final = ("status", "lastTurn", "awaiting", "abortCause", "nextTurn", "nextStep")
"""The keys of the projection (a vector's ``final``, in its JSON) the agent resource holds:
exactly the brief's list (R39), between ``agent`` and ``seq`` before and ``pendingPosts``
after. The rest of a ``final`` is not the agent's state as its log says it: ``disposed`` is
never in a log (a dispose writes nothing), ``openTurn``/``openStep`` are those of the state
machine's projection, and ``goalRounds`` is a fold of the log, like fates and transcript."""
LIST_PAGE: Final = 100
MAX_LIST_PAGE: Final = 1000
EVENTS_PAGE: Final = 100
MAX_POST_ID: Final = limits.MAX_SAFE_INTEGER
"""The largest post number a path names (a JSON safe integer, as every number answered)."""


def json_response(document: Any, status: int = 200) -> Response:
    return Response(json_bytes(document), status, media_type="application/json")


async def read_answer(door: FrontDoor, read: Callable[[], Any]) -> Response:
    """The JSON answer of ``read()``, read and encoded in one of the app's threads (in steps
    past ``limits.STEP_VALUES`` values): an answer as big as an agent's log never holds the
    event loop, nor the GIL long (D47)."""

    def answer() -> bytes:
        document = read()
        return json_bytes(document, in_steps=not limits.few_values(document, limits.STEP_VALUES))

    return Response(await door.run(answer), media_type="application/json")


def query_int(request: Request, name: str, default: int, low: int, high: int) -> int:
    """An integer query parameter in ``[low, high]`` (its declared bounds); 400 otherwise,
    a page size past its maximum too (never clamped)."""
    text = request.query_params.get(name)
    if text is None:
        return default
    value = whole_number(text, low, high)
    if value is None:
        raise Problem(400, f"{name} is an integer from {low} to {high}, got {text[:40]!r}")
    return value


async def _agent(door: FrontDoor, request: Request) -> tuple[Access, str]:
    """The path's agent, once the request may read it (401, 404, 403 in that order)."""
    access = await door.admit(request, "read")
    agent = agent_id(request.path_params["agent"])
    access.require("read", agent)
    return access, agent


async def get_agent(door: FrontDoor, request: Request) -> Response:
    _, agent = await _agent(door, request)

    def read() -> dict[str, Any]:
        store = door.store
        fold = open_tail(store.read_tail(agent), agent, lambda: read_log(store, agent)).fold
        projection = PROJECTION.encode(ProjectionView.of(fold.state()))  # no fold of the log
        state = {key: projection[key] for key in AGENT_STATE_KEYS}
        pending = store.pending_count(agent)
        return {"agent": agent, "seq": fold.seq, **state, "pendingPosts": pending}

    return await read_answer(door, read)


async def get_post(door: FrontDoor, request: Request) -> Response:
    _, agent = await _agent(door, request)
    text = request.path_params["post"]
    number = whole_number(text, 1, MAX_POST_ID)
    if number is None:  # like any post never made (no store makes one past MAX_POST_ID)
        raise Problem(404, f"no post {text[:40]!r} for this agent: a post is a number from 1")
    receipt = Receipt(agent, number)
    try:
        outcome = await door.run(lambda: door.store.outcome(receipt))
    except UnknownReceipt as error:
        raise Problem(404, str(error)) from None
    return json_response(
        {"agent": agent, "post": receipt.post_id, "outcome": outcome_json(outcome)}
    )


async def get_events(door: FrontDoor, request: Request) -> Response:
    access, agent = await _agent(door, request)
    since = query_int(request, "since", 0, 0, limits.MAX_SAFE_INTEGER)
    if wants_events(request) and request.method != "HEAD":  # HEAD: the page's head
        return EventStream.open(door, request, access, agent, since)
    most = query_int(request, "limit", EVENTS_PAGE, 1, PAGE)

    def page() -> dict[str, Any]:
        found = door.store.events(agent, since, most)
        events = [{"seq": seq, **event_to_json(event)} for seq, event in found]
        return {"events": events, "next": since + len(events)}

    return await read_answer(door, page)


async def get_fates(door: FrontDoor, request: Request) -> Response:
    _, agent = await _agent(door, request)
    return await read_answer(door, lambda: {"fates": fates_to_json(read_log(door.store, agent))})


async def get_transcript(door: FrontDoor, request: Request) -> Response:
    _, agent = await _agent(door, request)
    return await read_answer(
        door, lambda: {"transcript": transcript_to_json(read_log(door.store, agent))}
    )


async def get_agents(door: FrontDoor, request: Request) -> Response:
    access = await door.admit(request, "read")
    after = request.query_params.get("after")
    if after is not None:
        try:
            after = limits.agent_id(after)
        except InvalidInput as error:
            raise Problem(400, f"after is an agent id: {error}") from None
    most = query_int(request, "limit", LIST_PAGE, 1, MAX_LIST_PAGE)
    accept = None if access.pattern == "*" else access.reaches
    found = await door.run(lambda: door.store.agents(after, most, accept))
    agents = [{"id": a.id, "work": a.work, "pendingPosts": a.pending_posts} for a in found]
    return json_response({"agents": agents, "next": found[-1].id if len(found) == most else None})


async def healthz(door: FrontDoor, request: Request) -> Response:
    await door.run(lambda: door.store.agents(None, 1))  # the store answers (else 503)
    return json_response({"status": "ok"})


async def metrics(door: FrontDoor, request: Request) -> Response:
    await door.admit(request, "read")
    return Response(door.metrics.text(), media_type=CONTENT_TYPE)
