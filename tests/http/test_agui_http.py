"""``POST /v1/agents/{agent}/ag-ui`` (R44) on SQLite and PostgreSQL, in process: a run
answered as AG-UI events (each validated by AG-UI's models, in AG-UI's order), a retry
that posts nothing twice and streams the run again from its turn's start, the 422s that
name AG-UI's field and write nothing, a rejected post as ``RUN_ERROR``, a client that
leaves mid-run costing nothing (its posts stand, its stream slot is given back), and
tokens, scopes and patterns as on every path (R39)."""

from __future__ import annotations

import json
from typing import Any

from inbox_core.http.app import door_of
from inbox_core.shell import LoopAgent
from inbox_core.shell.echo import EchoHost
from tests.http.agui_support import check_sequence, texts, validate
from tests.shell.support import run_async

from .support import AnyStore, Stream, agent_name, front, owner, problem

JSON = ("content-type", "application/json")
ACCEPT = ("accept", "text/event-stream")


def run_input(agent: str, *messages: tuple[str, str], intent: str | None = None) -> dict[str, Any]:
    return {
        "threadId": agent,
        "runId": "client-run",
        "messages": [{"id": i, "role": "user", "content": text} for i, text in messages],
        "forwardedProps": {} if intent is None else {"intent": intent},
    }


async def start(app: Any, agent: str, body: Any, *headers: tuple[str, str]) -> Stream:
    data = json.dumps(body).encode()
    path = f"/v1/agents/{agent}/ag-ui"
    return await Stream(app, path, [JSON, ACCEPT, *headers], method="POST", body=data).start()


async def whole_run(app: Any, agent: str, body: Any, *headers: tuple[str, str]) -> list[Any]:
    """The run's events, read until the stream ends."""
    answer = await start(app, agent, body, *headers)
    assert answer.status == 200
    assert answer.headers["content-type"] == "text/event-stream"
    await answer.finished(timeout=30)
    events = [frame["data"] for frame in answer.frames.events]
    validate(events)
    check_sequence(events)
    return events


def accepted(store: AnyStore, agent: str) -> list[str]:
    """The ids of the messages the log accepted, in order, once per acceptance."""
    from inbox_core.codec import event_to_json

    events = [event_to_json(event) for event in store.log(agent).read()]
    return [
        entry["message"]["id"]
        for event in events
        if event["type"] == "agent/inbox/spliced"
        for entry in event["data"]["inserted"]
    ]


@run_async
async def test_r44_a_followup_runs_and_streams_its_turn_as_agui_events(store: AnyStore) -> None:
    agent = agent_name()
    async with front(store) as client, owner(store, agent):
        events = await whole_run(client.app, agent, run_input(agent, ("u1", "hello there")))  # type: ignore[attr-defined]
    assert events[0] == {"type": "RUN_STARTED", "threadId": agent, "runId": "1"}
    assert texts(events) == {"turn-1-step-1-part-0": "echo: hello there"}
    assert events[-1]["type"] == "RUN_FINISHED"
    assert events[-1]["result"] == {"turn": 1, "reason": {"kind": "completed"}}
    admitted = [e for e in store.log(agent).read() if type(e).__name__ == "MessageAdmitted"]
    assert [(m.message.id, m.message.source.kind) for m in admitted] == [("u1", "user")]


@run_async
async def test_r44_a_retry_posts_nothing_twice_and_streams_the_run_again(store: AnyStore) -> None:
    agent = agent_name()
    body = run_input(agent, ("u1", "once"))
    async with front(store) as client, owner(store, agent):
        app = client.app  # type: ignore[attr-defined]
        first = await whole_run(app, agent, body)
        log = store.log(agent).read()
        second = await whole_run(app, agent, body)  # the same messages: a retry
        assert store.log(agent).read() == log  # nothing posted, nothing appended
        # the conversation goes on: the first message again, the assistant's, a new one
        body["messages"].insert(1, {"id": "turn-1-step-1-part-0", "role": "assistant"})
        body["messages"].append({"id": "u2", "role": "user", "content": "twice"})
        third = await whole_run(app, agent, body)
    assert second == first
    assert third[0]["runId"] == "2"
    assert texts(third) == {"turn-2-step-1-part-0": "echo: twice"}
    assert accepted(store, agent) == ["u1", "u2"]


@run_async
async def test_r44_a_retry_while_its_post_waits_is_the_same_post(store: AnyStore) -> None:
    """No owner runs yet: the first request's post waits; the client leaves and asks
    again; the message id is the key, so the store answers the same post (R35)."""
    agent = agent_name()
    body = run_input(agent, ("u1", "patient"))
    async with front(store) as client:
        app = client.app  # type: ignore[attr-defined]
        first = await start(app, agent, body)
        assert first.status == 200
        await first.leave()
        again = await start(app, agent, body)
        async with owner(store, agent):
            await again.finished(timeout=30)
    events = [frame["data"] for frame in again.frames.events]
    validate(events)
    check_sequence(events)
    assert texts(events) == {"turn-1-step-1-part-0": "echo: patient"}
    assert accepted(store, agent) == ["u1"]  # once: no DuplicateMessageId either


@run_async
async def test_r44_input_that_does_not_validate_is_422_naming_the_field_and_writes_nothing(
    store: AnyStore,
) -> None:
    agent = agent_name()
    cases = [
        (run_input("someone-else", ("u1", "x")), "InvalidInput", "threadId"),
        ({"threadId": agent, "messages": []}, "DecodeError", "runId"),
        (run_input(agent, ("u1", "x"), intent="shout"), "InvalidInput", "forwardedProps.intent"),
        (run_input(agent), "InvalidInput", "messages"),  # no user message: nothing to run
        (
            {"threadId": agent, "runId": "r", "messages": [{"id": "a", "role": "assistant"}]},
            "InvalidInput",
            "messages",
        ),
        (run_input(agent, ("u1", "x"), ("", "y")), "InvalidInput", "messages[1]"),
    ]
    async with front(store) as client:
        for body, title, field in cases:
            answer = await client.post(f"/v1/agents/{agent}/ag-ui", json=body)
            document = problem(answer, 422, title)
            assert document["field"] == field, document
            assert document["detail"].startswith(f"RunAgentInput.{field}: ")
        path = f"/v1/agents/{agent}/ag-ui"
        problem(await client.post(path, content=b"[1,", headers=dict([JSON])), 400, "Bad Request")
        problem(await client.post(path, content=b"{}"), 415, "Unsupported Media Type")
    assert store.log(agent).read() == []
    assert store.pending(agent) == []


@run_async
async def test_r44_a_rejected_post_is_run_error_with_the_typed_error(store: AnyStore) -> None:
    agent = agent_name()
    async with front(store) as client:
        # a message "dup" is posted elsewhere first, not applied yet (no owner runs)
        first = await client.post(
            f"/v1/agents/{agent}/queue", json={"message": {"id": "dup", "content": "mine"}}
        )
        assert first.status_code == 202
        answer = await start(client.app, agent, run_input(agent, ("dup", "yours")))  # type: ignore[attr-defined]
        assert answer.status == 200
        async with owner(store, agent):  # the owner applies the first, rejects the second
            await answer.finished(timeout=30)
    events = [frame["data"] for frame in answer.frames.events]
    validate(events)
    assert events == [
        {
            "type": "RUN_ERROR",
            "message": events[0]["message"],
            "code": "DuplicateMessageId",
        }
    ]


@run_async
async def test_r44_a_client_that_leaves_mid_run_costs_nothing(store: AnyStore) -> None:
    agent = agent_name()
    async with front(store) as client, owner(store, agent, delay=30) as served:
        app = client.app  # type: ignore[attr-defined]
        door = door_of(app)
        answer = await start(app, agent, run_input(agent, ("u1", "long")))
        await answer.until(lambda f: any(e["data"]["type"] == "STEP_STARTED" for e in f.events))
        await answer.leave()  # mid-step
        assert door.streams._open == {}  # its slot given back
        assert served.status == "running"  # the post stands, the turn goes on
        served.cancel(keep_inbox=True)
        await served.when_idle()
        # a new request for the same message (a reconnecting client) gets the whole run
        again = await whole_run(app, agent, run_input(agent, ("u1", "long")))
    assert again[0]["runId"] == "1"
    assert again[-1]["result"]["reason"]["kind"] == "aborted"
    assert accepted(store, agent) == ["u1"]


@run_async
async def test_r44_r39_tokens_scopes_and_patterns_as_on_every_path(fresh_store: AnyStore) -> None:
    agent = "team-a/" + agent_name()
    tokens = fresh_store.tokens
    reader = tokens.add("reader", ["read"], "team-a/*")
    writer = tokens.add("writer", ["read", "post"], "team-a/*")
    other = tokens.add("other", ["read", "post"], "team-b/*")
    path = f"/v1/agents/{agent.replace('/', '%2F')}/ag-ui"
    body = run_input(agent, ("u1", "hi"))
    async with front(fresh_store) as client:
        no_token = await client.post(path, json=body)
        problem(no_token, 401, "Unauthorized")
        assert no_token.headers["www-authenticate"] == "Bearer"
        problem(await client.post(path, json=body, headers=bearer(other)), 403, "Forbidden")
        problem(await client.post(path, json=body, headers=bearer(reader)), 403, "Forbidden")
        assert fresh_store.log(agent).read() == []
        served = LoopAgent(EchoHost(), log=fresh_store.log(agent))
        try:
            app = client.app  # type: ignore[attr-defined]
            events = await whole_run(app, path.split("/")[3], body, _auth(writer))
            # a reader may follow a run whose messages are posted already (nothing to post)
            again = await whole_run(app, path.split("/")[3], body, _auth(reader))
        finally:
            await served.detach()
    assert events == again
    assert texts(events) == {"turn-1-step-1-part-0": "echo: hi"}


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def _auth(token: str) -> tuple[str, str]:
    return ("authorization", f"Bearer {token}")


HOSTILE = [
    b"[" * 100_000 + b"]" * 100_000,  # nested past maxDocumentDepth
    b'{"threadId": "\\ud800", "runId": "r", "messages": []}',  # a lone surrogate
    b'{"threadId": "AGENT", "runId": "r", "messages": [{"id": "\\ud800", "role": "user",'
    b' "content": "x"}]}',
    b'{"threadId": "AGENT", "runId": "r", "messages": [{"id": "m", "role": "user",'
    b' "content": [{"type": "text", "text": "\\udfff"}]}]}',
    b'{"threadId": "AGENT", "runId": "r", "messages": [{"id": "m", "role": "user",'
    b' "content": "x", "metadata": ' + b"[" * 5000 + b"]" * 5000 + b"}]}",
    b'{"threadId": "AGENT", "runId": "r", "messages": ' + b"1" * 5000 + b"}",
    b"\xff\xfe not utf-8",
]


@run_async
async def test_r44_hostile_bodies_get_a_4xx_problem_and_write_nothing(store: AnyStore) -> None:
    agent = agent_name()
    async with front(store) as client:
        for body in HOSTILE:
            answer = await client.post(
                f"/v1/agents/{agent}/ag-ui",
                content=body.replace(b"AGENT", agent.encode()),
                headers=dict([JSON]),
            )
            assert answer.status_code in (400, 413, 422), (answer.status_code, answer.text[:200])
            assert answer.headers["content-type"] == "application/problem+json"
    assert store.log(agent).read() == []
    assert store.pending(agent) == []
