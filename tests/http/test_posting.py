"""The posting endpoints (R39 over R35, R34) on SQLite and PostgreSQL: the four intents and
``/commands``, ``Idempotency-Key``, ``Prefer: wait``, every status they answer, and what a
status promises: a post is durable when 2xx or 409 is sent, never written on another 4xx."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from inbox_core import Cancel, ExpectIdle, ExpectTurn, Move, Send
from inbox_core.codec import command_to_json
from inbox_core.commands import followup
from inbox_core.http.posting import MAX_WAIT_SECONDS, wait_seconds
from inbox_core.shell import PostApplied, PostRejected, Receipt
from inbox_core.shell.stores.posts import UnknownReceipt, decode_post
from tests.shell.support import msg, run_async

from .support import (
    AnyStore,
    agent_name,
    front,
    message_body,
    owner,
    post_rows,
    problem,
)

INTENT_INPUTS = {
    "followup": ("next-turn", True),
    "queue": ("next-turn", False),
    "steer": ("next-step", True),
    "inject": ("next-step", False),
}


def stored(store: AnyStore, agent: str, post: int) -> Any:
    return decode_post(store.posted_command(Receipt(agent, post)))


# ------------------------------------------------------------------ intents


@pytest.mark.parametrize("intent", list(INTENT_INPUTS))
@run_async
async def test_r39_intent_posts_a_send_with_a_minted_id_and_answers_202(
    store: AnyStore, intent: str
) -> None:
    agent = agent_name()
    async with front(store) as client:
        response = await client.post(f"/v1/agents/{agent}/{intent}", json=message_body("hi"))
    assert response.status_code == 202, response.text
    body = response.json()
    assert body["agent"] == agent
    assert body["outcome"] == {"kind": "pending"}
    assert response.headers["location"] == f"/v1/agents/{agent}/posts/{body['post']}"
    command = stored(store, agent, body["post"])
    assert isinstance(command, Send)
    target, wakeup = INTENT_INPUTS[intent]
    assert (command.input.target, command.input.wakeup) == (target, wakeup)
    message = command.input.message
    assert message.id == body["messageId"]
    assert message.id
    assert message.content == ({"type": "text", "text": "hi"},)  # a string: one text block
    assert message.source.kind == "user"  # the default source
    assert command.expect is None


@run_async
async def test_r39_intent_keeps_a_given_id_source_metadata_contexts_and_expectation(
    store: AnyStore,
) -> None:
    agent = agent_name()
    body = {
        "message": {
            "id": "m-1",
            "role": "user",
            "content": [{"type": "text", "text": "x"}, {"type": "image", "url": "u"}],
            "source": {"kind": "plugin", "plugin": "p"},
            "metadata": {"k": [1, 2]},
        },
        "contexts": [{"content": "ctx"}, {"id": "c-2", "content": "ctx2"}],
        "expect": {"kind": "turn", "turn": 3},
    }
    async with front(store) as client:
        response = await client.post(f"/v1/agents/{agent}/followup", json=body)
    assert response.status_code == 202
    assert response.json()["messageId"] == "m-1"
    command = stored(store, agent, response.json()["post"])
    assert command.expect == ExpectTurn(3)
    assert command.input.message.source.kind == "plugin"
    assert dict(command.input.message.metadata) == {"k": (1, 2)}
    assert len(command.input.message.content) == 2
    contexts = command.input.contexts
    assert [c.id for c in contexts][1] == "c-2"
    assert contexts[0].id not in ("", "c-2")


@pytest.mark.parametrize(
    ("intent", "body", "title"),
    [
        ("followup", {}, "DecodeError"),  # no message
        ("followup", {"message": {"content": "x"}, "extra": 1}, "DecodeError"),
        ("followup", {"message": "hi"}, "DecodeError"),
        ("followup", {"message": {}}, "DecodeError"),  # no content
        ("followup", {"message": {"content": "x", "role": "assistant"}}, "DecodeError"),
        ("followup", {"message": {"content": "x", "id": ""}}, "InvalidInput"),
        (
            "followup",
            {"message": {"content": "x"}, "expect": {"kind": "turn", "turn": 0}},
            "InvalidInput",
        ),
        ("followup", {"message": {"content": "x"}, "contexts": {}}, "DecodeError"),
        ("inject", {"message": {"content": "x"}, "contexts": [{"content": "c"}]}, "InvalidInput"),
        ("followup", [1, 2], "DecodeError"),
        ("followup", {"message": {"content": "\ud800"}}, "InvalidInput"),  # a lone surrogate
    ],
)
@run_async
async def test_r39_json_that_is_no_message_is_422_with_the_typed_error_and_nothing_written(
    store: AnyStore, intent: str, body: Any, title: str
) -> None:
    agent = agent_name()
    text = json.dumps(body)  # ensure_ascii: a lone surrogate travels as its escape
    async with front(store) as client:
        response = await client.post(
            f"/v1/agents/{agent}/{intent}",
            content=text,
            headers={"content-type": "application/json"},
        )
    problem(response, 422, title)
    assert post_rows(store, agent) == 0


# ----------------------------------------------------------------- commands


@pytest.mark.parametrize(
    "command",
    [
        followup(msg("c"), expect=ExpectIdle()),
        Move("m", "next-step", ExpectTurn(2)),
        Cancel(keep_inbox=True, expect=ExpectTurn(1)),
        {"type": "clear"},
        {"type": "remove", "messageId": "m"},
        {"type": "splice", "target": "next-turn", "start": 0, "deleteCount": 1, "inserted": []},
    ],
    ids=lambda c: c["type"] if isinstance(c, dict) else type(c).__name__,
)
@run_async
async def test_r39_commands_posts_any_postable_command_as_a_producer_would(
    store: AnyStore, command: Any
) -> None:
    agent = agent_name()
    document = command if isinstance(command, dict) else command_to_json(command)
    async with front(store) as client:
        response = await client.post(f"/v1/agents/{agent}/commands", json=document)
    assert response.status_code == 202, response.text
    body = response.json()
    assert command_to_json(stored(store, agent, body["post"])) == document
    if isinstance(command, Send):
        assert body["messageId"] == command.input.message.id
    else:
        assert "messageId" not in body


@pytest.mark.parametrize(
    "document",
    [
        {"type": "dispose"},
        {"type": "resume"},
        {"type": "begin-maintenance"},
        {"type": "end-maintenance"},
        {"type": "step-finished", "turn": 1, "step": 1, "outcome": {"kind": "completed"}},
        {"type": "turn-stopping-done", "turn": 1},
    ],
    ids=lambda d: d["type"],
)
@run_async
async def test_r39_r35_a_command_that_is_not_postable_is_422_not_postable(
    store: AnyStore, document: Any
) -> None:
    agent = agent_name()
    async with front(store) as client:
        response = await client.post(f"/v1/agents/{agent}/commands", json=document)
    problem(response, 422, "NotPostable")
    assert post_rows(store, agent) == 0


@pytest.mark.parametrize(
    "document",
    [{"type": "send"}, {"type": "nope"}, {"no": "type"}, "clear", None, {"type": "remove"}],
    ids=repr,
)
@run_async
async def test_r39_commands_json_that_is_no_command_is_422_decode_error(
    store: AnyStore, document: Any
) -> None:
    agent = agent_name()
    async with front(store) as client:
        response = await client.post(
            f"/v1/agents/{agent}/commands",
            content=json.dumps(document),
            headers={"content-type": "application/json"},
        )
    problem(response, 422, "DecodeError")
    assert post_rows(store, agent) == 0


# ------------------------------------------------------------ what a body is


@pytest.mark.parametrize(
    ("content", "headers", "status"),
    [
        (b"{", {"content-type": "application/json"}, 400),
        (b"", {"content-type": "application/json"}, 400),
        (b"\xff\xfe{}", {"content-type": "application/json"}, 400),
        (b'{"message": {"content": "x"}}', {"content-type": "text/plain"}, 415),
        (b'{"message": {"content": "x"}}', {}, 415),
        (
            b'{"message": {"content": "x"}}',
            {"content-type": "application/json; charset=latin-1"},
            415,
        ),
        (b'{"message": {"content": "x"}}', {"content-type": "application/xml"}, 415),
    ],
)
@run_async
async def test_r39_a_body_that_is_not_json_is_400_another_media_type_415(
    store: AnyStore, content: bytes, headers: dict[str, str], status: int
) -> None:
    agent = agent_name()
    async with front(store) as client:
        response = await client.post(
            f"/v1/agents/{agent}/followup", content=content, headers=headers
        )
    titles = {400: "Bad Request", 415: "Unsupported Media Type"}
    problem(response, status, titles[status])
    assert post_rows(store, agent) == 0


@run_async
async def test_r39_json_nested_past_max_document_depth_is_422_invalid_input(
    store: AnyStore,
) -> None:
    agent = agent_name()
    deep = '{"message": {"content": "x", "metadata": {"a": ' + "[" * 200 + "]" * 200 + "}}}"
    async with front(store) as client:
        response = await client.post(
            f"/v1/agents/{agent}/followup",
            content=deep,
            headers={"content-type": "application/json"},
        )
    problem(response, 422, "InvalidInput")
    assert post_rows(store, agent) == 0


@run_async
async def test_r39_a_body_over_max_document_size_is_413_from_content_length_or_while_read(
    store: AnyStore,
) -> None:
    agent = agent_name()
    body = json.dumps(message_body("x" * 200)).encode()
    async with front(store, max_body_size=100) as client:
        declared = await client.post(
            f"/v1/agents/{agent}/followup",
            content=body,
            headers={"content-type": "application/json"},
        )

        async def chunks() -> Any:  # no Content-Length: decided while reading
            for start in range(0, len(body), 16):
                yield body[start : start + 16]

        streamed = await client.post(
            f"/v1/agents/{agent}/followup",
            content=chunks(),
            headers={"content-type": "application/json"},
        )
        small = await client.post(f"/v1/agents/{agent}/followup", json=message_body("y"))
    problem(declared, 413, "Content Too Large")
    problem(streamed, 413, "Content Too Large")
    assert small.status_code == 202
    assert post_rows(store, agent) == 1


# -------------------------------------------------------------- idempotency


@run_async
async def test_r39_a_retry_with_the_idempotency_key_is_answered_as_the_first_post(
    store: AnyStore,
) -> None:
    agent = agent_name()
    headers = {"Idempotency-Key": "ui-4711"}
    async with front(store) as client:
        first = await client.post(
            f"/v1/agents/{agent}/followup", json=message_body("a"), headers=headers
        )
        retry = await client.post(
            f"/v1/agents/{agent}/followup", json=message_body("a"), headers=headers
        )
        other = await client.post(
            f"/v1/agents/{agent}/commands",
            json=command_to_json(followup(msg("b"))),
            headers=headers,
        )
        assert first.status_code == retry.status_code == other.status_code == 202
        assert first.json() == retry.json() == other.json()  # the first post's messageId
        assert post_rows(store, agent) == 1
        async with owner(store, agent) as served:
            await served.when_idle()
            applied = await client.post(
                f"/v1/agents/{agent}/followup", json=message_body("a"), headers=headers
            )
    assert applied.status_code == 200  # as the first post would be answered now
    assert applied.json() == first.json() | {"outcome": {"kind": "applied"}}
    assert post_rows(store, agent) == 1


@run_async
async def test_r39_a_retry_of_a_rejected_post_is_409_again(store: AnyStore) -> None:
    agent = agent_name()
    headers = {"Idempotency-Key": "k"}
    body = {
        "type": "move",
        "messageId": "m",
        "target": "next-step",
        "expect": {"kind": "turn", "turn": 4},
    }
    async with front(store) as client:
        first = await client.post(f"/v1/agents/{agent}/commands", json=body, headers=headers)
        assert first.status_code == 202
        async with owner(store, agent) as served:
            await served.when_idle()
            retry = await client.post(f"/v1/agents/{agent}/commands", json=body, headers=headers)
    document = problem(retry, 409, "TurnMismatch")
    assert document["post"] == first.json()["post"]
    assert document["agent"] == agent
    assert document["outcome"]["kind"] == "rejected"
    assert document["outcome"]["error"] == "TurnMismatch"


@pytest.mark.parametrize(
    "key", [b"", b"x" * 257, b"\xff\xfe", b"a\x00b"], ids=["empty", "long", "not-utf8", "nul"]
)
@run_async
async def test_r39_a_bad_idempotency_key_is_400_and_nothing_written(
    store: AnyStore, key: bytes
) -> None:
    from .support import raw_request

    agent = agent_name()
    async with front(store) as client:
        status, _headers, data = await raw_request(
            client.app,  # type: ignore[attr-defined]
            "POST",
            f"/v1/agents/{agent}/followup",
            json.dumps(message_body()).encode(),
            ("idempotency-key", key.decode("latin-1")),
        )
    assert status == 400
    assert json.loads(data)["title"] == "Bad Request"
    assert post_rows(store, agent) == 0


# --------------------------------------------------------------- Prefer: wait


@run_async
async def test_r39_prefer_wait_answers_200_once_applied(store: AnyStore) -> None:
    agent = agent_name()
    async with front(store) as client, owner(store, agent):
        response = await client.post(
            f"/v1/agents/{agent}/followup", json=message_body(), headers={"Prefer": "wait=10"}
        )
    assert response.status_code == 200, response.text
    assert response.json()["outcome"] == {"kind": "applied"}
    assert response.headers["preference-applied"] == "wait=10"
    assert store.outcome(Receipt(agent, response.json()["post"])) == PostApplied()


@run_async
async def test_r39_r34_prefer_wait_answers_409_agent_busy_for_expect_idle_on_a_busy_agent(
    store: AnyStore,
) -> None:
    agent = agent_name()
    async with front(store) as client, owner(store, agent, delay=30) as served:
        started = await client.post(
            f"/v1/agents/{agent}/followup", json=message_body("long"), headers={"Prefer": "wait=10"}
        )
        assert started.status_code == 200
        assert served.status == "running"
        busy = await client.post(
            f"/v1/agents/{agent}/followup",
            json=message_body("only if idle") | {"expect": {"kind": "idle"}},
            headers={"Prefer": "wait=10"},
        )
        mismatch = await client.post(
            f"/v1/agents/{agent}/steer",
            json=message_body("into turn 7") | {"expect": {"kind": "turn", "turn": 7}},
            headers={"Prefer": "wait=10"},
        )
        served.cancel()
    for response, title in ((busy, "AgentBusy"), (mismatch, "TurnMismatch")):
        document = problem(response, 409, title)
        assert document["agent"] == agent
        assert isinstance(document["post"], int)
        assert (
            document["messageId"]
            == decode_post(store.posted_command(Receipt(agent, document["post"]))).input.message.id
        )
        assert response.headers["location"].endswith(f"/posts/{document['post']}")
        outcome = store.outcome(Receipt(agent, document["post"]))
        assert isinstance(outcome, PostRejected)
        assert outcome.error == title


@run_async
async def test_r39_prefer_wait_answers_202_pending_when_nobody_decides_in_time(
    store: AnyStore,
) -> None:
    agent = agent_name()
    async with front(store) as client:
        response = await client.post(
            f"/v1/agents/{agent}/followup", json=message_body(), headers={"Prefer": "wait=1"}
        )
    assert response.status_code == 202
    assert response.json()["outcome"] == {"kind": "pending"}
    assert post_rows(store, agent) == 1  # durable: 2xx


@pytest.mark.parametrize(
    ("values", "seconds"),
    [
        ([], 0),
        (["wait=5"], 5),
        (["respond-async, wait=7"], 7),
        (['wait="3"'], 3),
        (["handling=lenient", "Wait = 2"], 2),
        (["wait=61"], MAX_WAIT_SECONDS),
        (["wait=99999999999999999999999"], MAX_WAIT_SECONDS),
        (["wait=0005"], 5),
        (["wait=000"], 0),
        (["wait=" + "0" * 5000 + "7"], 7),
        (["wait=-1"], 0),
        (["wait=soon"], 0),
        (["wait"], 0),
    ],
)
def test_r39_prefer_wait_is_read_as_rfc_7240_says_and_above_60_counts_as_60(
    values: list[str], seconds: int
) -> None:
    class Request:
        class headers:
            @staticmethod
            def getlist(name: str) -> list[str]:
                assert name == "prefer"
                return values

    assert wait_seconds(Request()) == seconds  # type: ignore[arg-type]


# ------------------------------------------------------------------ the bounds


@run_async
async def test_r39_a_body_not_sent_in_time_is_408_and_bodies_past_the_tokens_budget_429(
    store: AnyStore,
) -> None:
    agent = agent_name()
    body = json.dumps(message_body()).encode()

    async def slow() -> Any:
        yield body[:5]
        await asyncio.sleep(2)
        yield body[5:]

    async with front(store, body_seconds=0.2, body_budget=len(body) - 1) as client:
        late = await client.post(
            f"/v1/agents/{agent}/followup",
            content=slow(),
            headers={"content-type": "application/json"},
        )
        over = await client.post(
            f"/v1/agents/{agent}/followup",
            content=body,
            headers={"content-type": "application/json"},
        )
    problem(late, 408, "Request Timeout")
    document = problem(over, 429, "Too Many Requests")
    assert "in flight" in document["detail"]
    assert over.headers["retry-after"]
    assert post_rows(store, agent) == 0


@run_async
async def test_r39_a_store_that_fails_is_503_log_unavailable_and_a_corrupt_log_500(
    store: AnyStore, tmp_path: Any
) -> None:
    from inbox_core.shell import SqliteStore
    from tests.shell.posts_support import execute

    agent = agent_name()
    table = "events" if isinstance(store, SqliteStore) else "inbox_core_events"
    execute(store, f"INSERT INTO {table} (agent_id, seq, event) VALUES (%s, 0, 'not json')", agent)
    async with front(store) as client:
        corrupt = await client.get(f"/v1/agents/{agent}")
        page = await client.get(f"/v1/agents/{agent}/events")
    problem(corrupt, 500, "CorruptLog")
    problem(page, 500, "CorruptLog")
    closed = SqliteStore(tmp_path / "closed.db")
    closed.close()
    async with front(closed) as client:
        health = await client.get("/healthz")
        posted = await client.post(f"/v1/agents/{agent}/followup", json=message_body())
    problem(health, 503, "LogUnavailable")
    problem(posted, 503, "LogUnavailable")


class _LosesPostedCommands:
    """A store whose read of a post's command fails (pruned meanwhile, or the database gone
    after the post was written); everything else is ``store``'s."""

    def __init__(self, store: AnyStore) -> None:
        self._store = store

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    def posted_command(self, receipt: Receipt) -> object:
        raise UnknownReceipt(f"no post {receipt.post_id}")


@run_async
async def test_r39_a_keyed_post_that_was_written_is_answered_even_if_its_command_is_gone(
    store: AnyStore,
) -> None:
    """A post is durable when a 2xx is sent: a keyed post whose command cannot be read back
    afterwards (a race with prune) is still 202, without a messageId it cannot know."""
    agent = agent_name()
    async with front(_LosesPostedCommands(store)) as client:  # type: ignore[arg-type]
        response = await client.post(
            f"/v1/agents/{agent}/followup", json=message_body(), headers={"Idempotency-Key": "k"}
        )
    assert response.status_code == 202, response.text
    assert "messageId" not in response.json()
    assert post_rows(store, agent) == 1
