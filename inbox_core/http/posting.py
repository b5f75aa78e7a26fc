"""The posting endpoints (R39 over R35): the four intents and ``/commands``.

``POST /v1/agents/{agent}/followup`` (``queue``, ``steer``, ``inject``) takes ``{"message":
M, "contexts": [M...]?, "expect": E?}`` where ``M`` is a message of formats §8 whose ``id``
(minted here when absent), ``role`` and ``source`` (the user) may be left out and whose
``content`` may be a string (one text block); ``POST .../commands`` takes one postable
command in its JSON form. Both post through ``store.post`` (``Idempotency-Key`` is its
key) and answer from the post's outcome: 202 pending, 200 applied (within ``Prefer:
wait=N``), 409 rejected. The post is durable before any of these is sent; every other 4xx is
decided before anything is written.
"""

from __future__ import annotations

import logging
import time
import uuid
from typing import Any, Final

from starlette.requests import Request
from starlette.responses import Response

from inbox_core.codec import command_from_json
from inbox_core.commands import Command, Replace, Send
from inbox_core.errors import DecodeError, InboxCoreError, InvalidInput, shown
from inbox_core.http.bodies import read_json
from inbox_core.http.door import FrontDoor
from inbox_core.http.paths import agent_id, post_location
from inbox_core.http.problem import Problem, json_bytes
from inbox_core.shell.stores.posts import (
    POSTABLE_TYPES,
    PostApplied,
    PostOutcome,
    PostPending,
    PostRejected,
    PostTimeout,
    Receipt,
    decode_post,
    encode_post,
    post_key,
)

__all__ = [
    "INTENTS",
    "MAX_WAIT_SECONDS",
    "command_body",
    "intent_command",
    "outcome_json",
    "post_command",
    "post_intent",
]

INTENTS: Final = {
    "followup": ("next-turn", True),
    "queue": ("next-turn", False),
    "steer": ("next-step", True),
    "inject": ("next-step", False),
}
"""The intent paths and the (target, wakeup) each sends (R12)."""

logger: Final = logging.getLogger("inbox_core.http")

MAX_WAIT_SECONDS: Final = 60
BODY_KEYS: Final = frozenset({"message", "contexts", "expect"})


# ----------------------------------------------------------------- the bodies


def _message(value: object, what: str) -> dict[str, Any]:
    """A §8 message from the relaxed form of an intent body."""
    if not isinstance(value, dict):
        raise DecodeError(f"{what} is a message object, got {shown(value)}")
    message = dict(value)
    if "id" not in message:
        message["id"] = str(uuid.uuid4())  # as create_user_message mints one
    message.setdefault("role", "user")
    if isinstance(message.get("content"), str):
        message["content"] = [{"type": "text", "text": message["content"]}]
    message.setdefault("source", {"kind": "user"})
    return message


def intent_command(intent: str, document: object) -> Send:
    """The ``Send`` an intent body asks for (``DecodeError`` or ``InvalidInput`` if none)."""
    if not isinstance(document, dict):
        raise DecodeError(f"an intent body is an object with a message, got {shown(document)}")
    unknown = sorted(set(document) - BODY_KEYS)
    if unknown:
        raise DecodeError(f"an intent body has no key {shown(unknown[0])}")
    if "message" not in document:
        raise DecodeError("an intent body needs a message")
    contexts = document.get("contexts", [])
    if not isinstance(contexts, list):
        raise DecodeError(f"contexts is a list of messages, got {shown(contexts)}")
    if intent == "inject" and contexts:
        raise InvalidInput("an injection carries no contexts (R11)")
    target, wakeup = INTENTS[intent]
    send = {
        "message": _message(document["message"], "message"),
        "contexts": [_message(context, "a context") for context in contexts],
        "target": target,
        "wakeup": wakeup,
    }
    command = command_from_json(
        {"type": "send", "input": send}
        | ({"expect": document["expect"]} if "expect" in document else {})
    )
    assert isinstance(command, Send)
    return command


def command_body(document: object) -> Command:
    """A postable command from its JSON form (``NotPostable`` for any other command)."""
    command = command_from_json(document)
    if not isinstance(command, POSTABLE_TYPES):
        encode_post(command)  # raises NotPostable, saying why
    return command


def message_id(command: object) -> str | None:
    """The id of the message a command carries: a send's primary message, a replacement."""
    if isinstance(command, Send):
        return str(command.input.message.id)
    if isinstance(command, Replace):
        return str(command.message.id)
    return None


# ---------------------------------------------------------------- the headers


def idempotency_key(request: Request) -> str | None:
    values = request.headers.getlist("idempotency-key")
    if not values:
        return None
    if len(values) > 1:
        raise Problem(400, "one Idempotency-Key per request")
    try:
        return post_key(values[0].encode("latin-1").decode("utf-8"))
    except (UnicodeError, InvalidInput) as error:
        raise Problem(400, f"Idempotency-Key: {error}") from None


def wait_seconds(request: Request) -> int:
    """``Prefer: wait=N`` (RFC 7240): N seconds, at most 60; 0 without one. A preference
    that does not parse is ignored, as RFC 7240 asks."""
    for header in request.headers.getlist("prefer"):
        for preference in header.split(","):
            name, _, value = preference.split(";", 1)[0].partition("=")
            value = value.strip().strip('"')
            if name.strip().lower() == "wait" and value.isascii() and value.isdigit():
                digits = value.lstrip("0")  # int() of thousands of digits would raise
                return (
                    MAX_WAIT_SECONDS if len(digits) > 3 else min(int(digits or 0), MAX_WAIT_SECONDS)
                )
    return 0


# ----------------------------------------------------------------- the answers


def outcome_json(outcome: PostOutcome) -> dict[str, str]:
    if isinstance(outcome, PostRejected):
        return {"kind": "rejected", "error": outcome.error, "message": outcome.message}
    return {"kind": "applied" if isinstance(outcome, PostApplied) else "pending"}


async def _outcome(door: FrontDoor, receipt: Receipt, wait: int, look: bool) -> PostOutcome:
    """The post's outcome after waiting up to ``wait`` s (a look only if ``look``). The post
    is durable already: a store that fails to say more leaves it pending in the answer."""
    try:
        if wait > 0:  # no longer than until the server begins to stop
            outcome = await door.unless_closing(door.store.wait(receipt, timeout=wait))
            return PostPending() if outcome is None else outcome
        if look:
            return await door.run(lambda: door.store.outcome(receipt))
    except PostTimeout:
        pass
    except InboxCoreError as error:
        logger.warning(
            "post %s of %r: no outcome read (%s)", receipt.post_id, receipt.agent_id, error
        )
    return PostPending()


async def _answer(
    door: FrontDoor,
    path: str,
    receipt: Receipt,
    message: str | None,
    *,
    wait: int,
    look: bool,
    started: float,
) -> Response:
    outcome = await _outcome(door, receipt, wait, look)
    body: dict[str, Any] = {"agent": receipt.agent_id, "post": receipt.post_id}
    body["outcome"] = outcome_json(outcome)
    if message is not None:
        body["messageId"] = message
    headers = {"Location": post_location(receipt.agent_id, receipt.post_id)}
    if wait:
        headers["Preference-Applied"] = f"wait={wait}"
    door.metrics.posts.labels(path).inc()
    door.metrics.outcomes.labels(body["outcome"]["kind"]).inc()
    if isinstance(outcome, PostRejected):
        raise Problem(409, outcome.message, title=outcome.error, headers=headers, **body)
    if isinstance(outcome, PostApplied):
        if wait:
            door.metrics.applied.observe(time.perf_counter() - started)
        return Response(json_bytes(body), 200, headers, "application/json")
    return Response(json_bytes(body), 202, headers, "application/json")


async def _post(door: FrontDoor, request: Request, path: str, parse: Any) -> Response:
    started = time.perf_counter()
    access = await door.admit(request, "post")
    agent = agent_id(request.path_params["agent"])
    access.require("post", agent)
    key = idempotency_key(request)
    wait = wait_seconds(request)
    bounds = door.limits

    def write(document: Any) -> tuple[Receipt, str | None, bool]:
        """Build, check and write the command, in one of the app's threads: what that
        costs is the command's own CPU, never the event loop's (D47). Also whether the
        post is this request's own (a retry with its key may meet another's, D45)."""
        command = parse(document)
        receipt = door.post(access, agent, command, key)
        message, ours = message_id(command), True
        if key is not None:  # maybe a retry: the first post's message, never this one's
            try:
                stored = door.store.posted_command(receipt)
                ours = stored == encode_post(command)
                message = message_id(decode_post(stored))
            except InboxCoreError:  # a row a foreign producer wrote under this key, a row
                message, ours = None, False  # pruned since, a store failing: durable anyway
        return receipt, message, ours

    receipt, message, ours = await read_json(
        request,
        limit=bounds.max_body_size,
        budget=door.budget,
        key=door.budget_key(access, request),
        seconds=bounds.body_seconds,
        run=door.run,
        then=write,
    )
    if not ours and "read" not in access.scopes:  # another post's outcome is a read (D45)
        return _unread(door, path, receipt, message)
    return await _answer(
        door, path, receipt, message, wait=wait, look=key is not None, started=started
    )


def _unread(door: FrontDoor, path: str, receipt: Receipt, message: str | None) -> Response:
    """The answer to a key another post holds, for a token without ``read``: which post it
    is (202, ``Location``, ``messageId``), never its outcome."""
    body: dict[str, Any] = {"agent": receipt.agent_id, "post": receipt.post_id}
    if message is not None:
        body["messageId"] = message
    door.metrics.posts.labels(path).inc()
    headers = {"Location": post_location(receipt.agent_id, receipt.post_id)}
    return Response(json_bytes(body), 202, headers, "application/json")


def post_intent(intent: str) -> Any:
    async def handle(door: FrontDoor, request: Request) -> Response:
        return await _post(door, request, intent, lambda document: intent_command(intent, document))

    return handle


async def post_command(door: FrontDoor, request: Request) -> Response:
    return await _post(door, request, "commands", command_body)
