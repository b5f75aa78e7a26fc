"""The front door in process, issue 37 items 5, 6, 7 and 10 (R39, D43-D45): a waiting post
at shutdown answers what it is, a cancelled request a problem; with no token a connection
holds only its own budget; ``*`` as a CORS origin makes an app ask for a token; a token
without ``read`` learns no other post's outcome through a reused ``Idempotency-Key``.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from inbox_core import ExpectTurn, command_to_json, create_user_message, queue
from inbox_core.http.app import door_of
from tests.shell.support import run_async

from .support import (
    PROBLEM,
    AnyStore,
    Stream,
    agent_name,
    front,
    message_body,
    owner,
    post_rows,
    problem,
)


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


# ------------------------------------------------------------------ item 5: shutdown


@run_async
async def test_r39_issue37_a_waiting_post_answers_202_pending_when_the_server_stops(
    store: AnyStore,
) -> None:
    """Issue 37 item 5: a durable post waiting for its outcome (``Prefer: wait=60``, nobody
    serves the agent) is answered at once when the server starts to stop: 202 pending with
    its ``Location`` (on c46a0f0 it waited out the grace and was cut: 500 text/plain)."""
    agent = agent_name()
    async with front(store) as client:
        answer = asyncio.ensure_future(
            client.post(
                f"/v1/agents/{agent}/followup",
                json=message_body(),
                headers={"Prefer": "wait=60", "Idempotency-Key": "k1"},
            )
        )
        while not post_rows(store, agent):
            await asyncio.sleep(0.02)
        door_of(client.app).close()  # type: ignore[attr-defined]
        response = await asyncio.wait_for(answer, 10)
        later = await client.post(
            f"/v1/agents/{agent}/followup",
            json=message_body(),
            headers={"Prefer": "wait=60"},
        )
    assert response.status_code == 202
    assert response.json()["outcome"] == {"kind": "pending"}
    assert response.headers["location"] == f"/v1/agents/{agent}/posts/{response.json()['post']}"
    assert later.status_code == 202  # a post while it stops does not wait either
    assert post_rows(store, agent) == 2


@run_async
async def test_r39_issue37_a_request_cancelled_by_the_server_is_a_503_problem(
    store: AnyStore,
) -> None:
    """Issue 37 item 5: a request the server cancels (its grace ran out) before answering
    is answered a 503 problem that says to retry with the same key, then ends cancelled."""
    agent = agent_name()
    async with front(store) as client:
        app = client.app  # type: ignore[attr-defined]
        body = json.dumps(message_body()).encode()
        request = Stream(
            app,
            f"/v1/agents/{agent}/queue",
            [("content-type", "application/json"), ("content-length", str(len(body) + 10))],
            method="POST",
        )  # the head only: the body never comes
        request.task = asyncio.ensure_future(app(request.scope, request._receive, request._send))
        await asyncio.sleep(0.2)
        request.task.cancel()
        head = await asyncio.wait_for(request.sent.get(), 10)
        data = await asyncio.wait_for(request.sent.get(), 10)
        await asyncio.wait({request.task}, timeout=10)
    headers = {k.decode(): v.decode() for k, v in head["headers"]}
    assert head["status"] == 503
    assert headers["content-type"] == PROBLEM
    assert headers["retry-after"]
    assert "Idempotency-Key" in json.loads(data["body"])["detail"]
    assert request.task.cancelled()
    assert post_rows(store, agent) == 0


# ------------------------------------------------------- item 6: budgets per connection


@run_async
async def test_r39_issue37_with_no_token_bodies_in_flight_count_per_connection(
    store: AnyStore,
) -> None:
    """Issue 37 item 6: two connections that send only a head announcing the largest body
    leave the other clients their budget (on c46a0f0 every other post was 429 for 60 s)."""
    agent = agent_name()
    size = 4096
    async with front(store, max_body_size=size) as client:
        app = client.app  # type: ignore[attr-defined]
        held = []
        for port in (1, 2):
            request = Stream(
                app,
                f"/v1/agents/{agent}/queue",
                [("content-type", "application/json"), ("content-length", str(size))],
                method="POST",
                client=("127.0.0.1", port),
            )
            request.task = asyncio.ensure_future(
                app(request.scope, request._receive, request._send)
            )
            held.append(request)
        await asyncio.sleep(0.2)
        assert door_of(app).budget._used  # both hold a reservation
        other = await client.post(f"/v1/agents/{agent}/queue", json=message_body())
        for request in held:
            await request.inbox.put({"type": "http.disconnect"})
            await asyncio.wait({request.task}, timeout=10)
    assert other.status_code == 202
    assert door_of(app).budget._used == {}


# ----------------------------------------------------- item 7: CORS "*" asks a token


@run_async
async def test_r39_issue37_a_cors_origin_of_any_page_makes_the_app_ask_for_a_token(
    store: AnyStore,
) -> None:
    """Issue 37 item 7: with ``*`` (or ``null``, a sandboxed page's) among its CORS origins
    an app never serves a store with no token to anyone: every request is 401 (the command
    line refuses to start it at all)."""
    agent = agent_name()
    for origin in ("*", "null"):
        async with front(store, cors_origins=[origin]) as client:
            read = await client.get(f"/v1/agents/{agent}", headers={"Origin": "https://evil"})
            posted = await client.post(f"/v1/agents/{agent}/queue", json=message_body())
        problem(read, 401, "Unauthorized")
        problem(posted, 401, "Unauthorized")
    assert post_rows(store, agent) == 0


# ------------------------------------------- item 10: a reused key without read scope


@run_async
async def test_r39_issue37_a_post_only_token_learns_no_other_posts_outcome_by_its_key(
    fresh_store: AnyStore,
) -> None:
    """Issue 37 item 10: a token with only ``post`` that sends a key another client used
    gets which post it is (202, ``Location``, ``messageId``), never its outcome; with
    ``read`` the answer is the outcome, as R39 says; its own retry keeps its outcome."""
    agent = agent_name()
    full = bearer(fresh_store.tokens.add("full", ["read", "post"], "*"))
    poster = bearer(fresh_store.tokens.add("poster", ["post"], "*"))
    rejected = command_to_json(queue(create_user_message("x"), expect=ExpectTurn(99)))
    mine = message_body("mine", id="m-mine")
    async with front(fresh_store) as client, owner(fresh_store, agent) as served:
        first = await client.post(
            f"/v1/agents/{agent}/commands",
            json=rejected,
            headers={"Idempotency-Key": "secret-key", "Prefer": "wait=10", **full},
        )
        await served.when_idle()
        probe = await client.post(
            f"/v1/agents/{agent}/followup",
            json=message_body("guess"),
            headers={"Idempotency-Key": "secret-key", "Prefer": "wait=10", **poster},
        )
        reader = await client.post(
            f"/v1/agents/{agent}/followup",
            json=message_body("guess"),
            headers={"Idempotency-Key": "secret-key", **full},
        )
        own = await client.post(
            f"/v1/agents/{agent}/followup",
            json=mine,
            headers={"Idempotency-Key": "my-key", "Prefer": "wait=10", **poster},
        )
        own_again = await client.post(
            f"/v1/agents/{agent}/followup",
            json=mine,
            headers={"Idempotency-Key": "my-key", "Prefer": "wait=10", **poster},
        )
    assert first.status_code == 409
    post = first.json()["post"]
    assert probe.status_code == 202
    message = rejected["input"]["message"]["id"]
    assert probe.json() == {"agent": agent, "post": post, "messageId": message}
    assert probe.headers["location"] == f"/v1/agents/{agent}/posts/{post}"
    assert "preference-applied" not in probe.headers
    document: dict[str, Any] = problem(reader, 409, "TurnMismatch")
    assert document["post"] == post
    assert own.status_code == own_again.status_code == 200
    assert own_again.json() == {
        "agent": agent,
        "post": own.json()["post"],
        "outcome": {"kind": "applied"},
        "messageId": "m-mine",
    }
    assert post_rows(fresh_store, agent) == 2
