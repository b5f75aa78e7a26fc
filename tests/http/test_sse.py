"""Events as Server-Sent Events (R39 over R36) on SQLite and PostgreSQL: the frames,
resumption with ``Last-Event-ID`` after a disconnect in the middle of a turn (nothing lost,
nothing repeated), keep-alive comments, the bound on open streams, and what ends a stream."""

from __future__ import annotations

import asyncio
from typing import Any

from inbox_core import TurnStarted
from inbox_core.codec import event_to_json
from inbox_core.http.app import door_of
from tests.shell.support import run_async

from .support import AnyStore, Frames, agent_name, front, message_body, owner, problem, stream


def records(store: AnyStore, agent: str) -> list[dict[str, object]]:
    return [{"seq": s, **event_to_json(e)} for s, e in enumerate(store.log(agent).read())]


async def one_turn(client: Any, store: AnyStore, served: Any, agent: str) -> list[Any]:
    """A followup applied and its turn run to the end: the agent's records then."""
    await client.post(
        f"/v1/agents/{agent}/followup", json=message_body(), headers={"Prefer": "wait=10"}
    )
    await served.when_idle()
    return records(store, agent)


@run_async
async def test_r39_r36_a_stream_carries_each_event_with_its_seq_type_and_record(
    store: AnyStore,
) -> None:
    agent = agent_name()
    async with front(store) as client, owner(store, agent) as served:
        events = await stream(client.app, f"/v1/agents/{agent}/events")  # type: ignore[attr-defined]
        assert events.status == 200
        assert events.headers["content-type"] == "text/event-stream"
        assert events.headers["cache-control"] == "no-cache"
        log = await one_turn(client, store, served, agent)
        await events.until(lambda f: len(f.events) >= len(log))
        await events.leave()
    assert [e["data"] for e in events.frames.events] == log
    assert [e["event"] for e in events.frames.events] == [r["type"] for r in log]
    assert events.frames.seqs() == list(range(len(log)))
    assert log[-1]["type"] == "agent/status" or log[-1]["type"] == "turn/end"


@run_async
async def test_r39_a_reconnect_with_last_event_id_mid_turn_loses_and_repeats_nothing(
    store: AnyStore,
) -> None:
    agent = agent_name()
    async with front(store) as client, owner(store, agent, delay=30) as served:
        first = await stream(client.app, f"/v1/agents/{agent}/events")  # type: ignore[attr-defined]
        await client.post(
            f"/v1/agents/{agent}/followup", json=message_body("long"), headers={"Prefer": "wait=10"}
        )
        await first.until(lambda f: any(e["event"] == "step/start" for e in f.events))
        await first.leave()  # the client vanishes in the middle of turn 1
        seen = first.frames.events
        assert served.status == "running"
        served.cancel(keep_inbox=True)  # the turn ends while nobody watches
        await served.when_idle()
        last = seen[-1]["id"]
        again = await stream(
            client.app,  # type: ignore[attr-defined]
            f"/v1/agents/{agent}/events?since=0",  # Last-Event-ID wins over since
            ("last-event-id", last),
        )
        log = records(store, agent)
        await again.until(lambda f: len(seen) + len(f.events) >= len(log))
        await again.leave()
    joined = [e["data"] for e in seen] + [e["data"] for e in again.frames.events]
    assert joined == log  # every event once, in order
    assert any(r["type"] == "turn/end" for r in log[len(seen) :])


@run_async
async def test_r39_a_stream_starts_at_since_and_a_bad_last_event_id_is_400(store: AnyStore) -> None:
    agent = agent_name()
    async with front(store) as client, owner(store, agent) as served:
        log = await one_turn(client, store, served, agent)
        later = await stream(client.app, f"/v1/agents/{agent}/events?since=3")  # type: ignore[attr-defined]
        await later.until(lambda f: len(f.events) >= len(log) - 3)
        await later.leave()
        bad = await client.get(
            f"/v1/agents/{agent}/events",
            headers={"accept": "text/event-stream", "last-event-id": "x"},
        )
        json_page = await client.get(
            f"/v1/agents/{agent}/events", headers={"accept": "text/event-stream;q=0, */*"}
        )
    assert [e["data"] for e in later.frames.events] == log[3:]
    problem(bad, 400, "Bad Request")
    assert json_page.json()["next"] == len(log)  # q=0: not an event stream


@run_async
async def test_r39_a_quiet_stream_writes_a_comment_line_within_its_keepalive(
    store: AnyStore,
) -> None:
    agent = agent_name()
    async with front(store, keepalive_seconds=0.2, check_seconds=0.05) as client:
        events = await stream(client.app, f"/v1/agents/{agent}/events")  # type: ignore[attr-defined]
        await events.until(lambda f: f.comments.count("keep-alive") >= 2, timeout=5)
        await events.leave()
    assert events.frames.events == []


@run_async
async def test_r39_a_busy_stream_writes_a_comment_line_at_least_every_keepalive_too(
    store: AnyStore,
) -> None:
    """R39: "a comment line at least every 15 s", also while events keep coming (a stream
    whose events come more often than the keep-alive still gets its comments)."""
    agent = agent_name()
    log = store.log(agent)
    log.acquire()
    appended = 0

    async def append_often() -> None:
        nonlocal appended
        while True:
            appended += 1
            await asyncio.to_thread(log.append, [TurnStarted(appended)])
            await asyncio.sleep(0.02)

    try:
        async with front(store, keepalive_seconds=0.3, check_seconds=0.05) as client:
            events = await stream(client.app, f"/v1/agents/{agent}/events")  # type: ignore[attr-defined]
            appender = asyncio.ensure_future(append_often())
            try:
                await events.until(lambda f: f.comments.count("keep-alive") >= 2, timeout=20)
            finally:
                appender.cancel()
            await events.leave()
    finally:
        log.release()
    assert len(events.frames.events) >= 2  # events came meanwhile
    assert events.frames.seqs() == list(range(len(events.frames.events)))


@run_async
async def test_r39_an_empty_last_event_id_is_no_event_seen(store: AnyStore) -> None:
    agent = agent_name()
    async with front(store) as client, owner(store, agent) as served:
        log = await one_turn(client, store, served, agent)
        events = await stream(client.app, f"/v1/agents/{agent}/events", ("last-event-id", ""))  # type: ignore[attr-defined]
        assert events.status == 200
        await events.until(lambda f: len(f.events) >= len(log))
        await events.leave()
    assert [e["data"] for e in events.frames.events] == log


@run_async
async def test_r39_streams_per_token_are_bounded_and_a_vanished_client_frees_its_slot(
    fresh_store: AnyStore,
) -> None:
    agent = agent_name()
    token = {"authorization": f"Bearer {fresh_store.tokens.add('web', ['read'], '*')}"}
    async with front(fresh_store, max_streams=2) as client:
        app = client.app  # type: ignore[attr-defined]
        path = f"/v1/agents/{agent}/events"
        first = await stream(app, path, *token.items(), client=("127.0.0.1", 1))
        second = await stream(app, path, *token.items(), client=("127.0.0.1", 2))
        refused = await client.get(path, headers={"accept": "text/event-stream", **token})
        gauge = door_of(app).metrics.streams._value.get()
        await first.leave()
        third = await stream(app, path, *token.items(), client=("127.0.0.1", 3))
        assert third.status == 200
        await second.leave()
        await third.leave()
        after = door_of(app).metrics.streams._value.get()
    document = problem(refused, 429, "Too Many Requests")
    assert "event streams" in document["detail"]
    assert refused.headers["retry-after"]
    assert gauge == 2
    assert after == 0


@run_async
async def test_r39_issue37_without_a_token_streams_are_bounded_per_connection(
    store: AnyStore,
) -> None:
    """Issue 37 item 6: a store with no token bounds open streams per connection, not for
    everyone at once: one local client holding its streams leaves the others (the
    inspector) theirs."""
    agent = agent_name()
    path = f"/v1/agents/{agent}/events"
    async with front(store, max_streams=1) as client:
        app = client.app  # type: ignore[attr-defined]
        held = [await stream(app, path, client=("127.0.0.1", port)) for port in (1, 2, 3)]
        same = await stream(app, path, client=("127.0.0.1", 1))  # the first one's connection
        for opened in held:
            assert opened.status == 200
            await opened.leave()
    assert same.status == 429


@run_async
async def test_r39_closing_the_app_ends_every_stream(store: AnyStore) -> None:
    agent = agent_name()
    async with front(store) as client:
        app = client.app  # type: ignore[attr-defined]
        streams = [await stream(app, f"/v1/agents/{agent}/events") for _ in range(3)]
        door_of(app).close()
        await asyncio.gather(*(s.finished() for s in streams))
    assert all(s.ended for s in streams)


def test_r39_a_host_record_type_with_a_line_break_cannot_break_the_frame() -> None:
    from inbox_core import HostRecord
    from inbox_core.http.sse import event_frame

    frames = Frames()
    frames.feed(event_frame(4, HostRecord("host/a\nevent: fake", {"x": "\n\n"})))
    (event,) = frames.events
    assert event["id"] == "4"
    assert "event" not in event
    assert event["data"] == {"seq": 4, "type": "host/a\nevent: fake", "data": {"x": "\n\n"}}


@run_async
async def test_r39_head_of_the_events_is_answered_without_opening_a_stream(store: AnyStore) -> None:
    async with front(store, max_streams=1) as client:
        head = await client.head(
            f"/v1/agents/{agent_name()}/events", headers={"accept": "text/event-stream"}
        )
        gauge = door_of(client.app).metrics.streams._value.get()  # type: ignore[attr-defined]
    assert head.status_code == 200
    assert gauge == 0


@run_async
async def test_r39_a_row_that_does_not_decode_ends_the_stream_with_a_problem_event(
    store: AnyStore,
) -> None:
    from inbox_core.shell import SqliteStore
    from tests.shell.posts_support import execute

    agent = agent_name()
    table = "events" if isinstance(store, SqliteStore) else "inbox_core_events"
    execute(store, f"INSERT INTO {table} (agent_id, seq, event) VALUES (%s, 0, '[1')", agent)
    async with front(store) as client:
        events = await stream(client.app, f"/v1/agents/{agent}/events")  # type: ignore[attr-defined]
        await events.finished()
    (problem_event,) = events.frames.events
    assert problem_event["event"] == "problem"
    assert problem_event["data"]["title"] == "CorruptLog"
    assert problem_event["data"]["status"] == 500
