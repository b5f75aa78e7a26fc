"""Amplification across tenants (issue 37, item 3; R39, R35, D47): a body whose cost lies
in its number of JSON values, not its bytes (``inbox_core.testing.bodies``).

A body past ``maxCommandValues`` is refused 422 before anything is built from it (counted
as its bytes arrive: the rest is not even read), and writes nothing; one within it is
parsed, built, written, applied and encoded for its stream off the event loop, so another
tenant is served meanwhile. The loop's freedom is asserted by order, never by time: the
costly step is held in its thread until another request has been answered, which could
never happen if that step held the loop.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from inbox_core import limits
from inbox_core.http import bodies, posting, reading, sse
from inbox_core.http.bodies import COUNTED_BYTES
from inbox_core.http.store import read_log
from inbox_core.shell import SqliteStore
from inbox_core.testing.bodies import (
    ISSUE_BODIES,
    KINDS,
    at_the_limit,
    body,
    command_values_of,
    values_of,
)
from tests.shell.support import Held, run_async

from .servers import ECHO, Child, children, port, request, wait_serving
from .support import AnyStore, Stream, front, owner, post_rows, prepared, problem

AGENT = "a/one"
PATH = "/v1/agents/a%2Fone"
MOST = limits.MAX_COMMAND_VALUES
HEADERS = {"content-type": "application/json"}


@pytest.fixture
def store(tmp_path: Path) -> Iterator[AnyStore]:
    made = prepared(SqliteStore(tmp_path / "agents.db"))
    yield made
    made.close()


def past_the_body(kind: str) -> int:
    """The fewest items of ``kind`` whose body itself holds more than ``maxCommandValues``."""
    base = values_of(kind, 0)
    return (MOST - base) // (values_of(kind, 1) - base) + 1


# ------------------------------------------------------------ refused, nothing written


@pytest.mark.parametrize("kind", KINDS)
@run_async
async def test_r39_d47_a_body_past_max_command_values_is_422_and_writes_nothing(
    store: AnyStore, kind: str
) -> None:
    """A body of one value more than the limit: 422 InvalidInput, never written (R39)."""
    data = body(kind, past_the_body(kind))
    assert values_of(kind, past_the_body(kind) - 1) <= MOST < values_of(kind, past_the_body(kind))
    async with front(store) as client:
        response = await client.post(f"{PATH}/followup", content=data, headers=HEADERS)
    assert "maxCommandValues" in problem(response, 422, "InvalidInput")["detail"]
    assert post_rows(store, AGENT) == 0


@pytest.mark.parametrize("kind", ["objects", "contexts"])
@run_async
async def test_r39_d47_a_body_whose_command_passes_the_limit_is_422_and_writes_nothing(
    store: AnyStore, kind: str
) -> None:
    """The body within the limit, the command the front door makes of it (an id, a role, a
    source and a block added to each message) one value past it: 422, nothing written."""
    count = at_the_limit(kind) + 1
    assert values_of(kind, count) <= MOST < command_values_of(kind, count)
    async with front(store) as client:
        response = await client.post(f"{PATH}/followup", content=body(kind, count), headers=HEADERS)
    assert "maxCommandValues" in problem(response, 422, "InvalidInput")["detail"]
    assert post_rows(store, AGENT) == 0


@pytest.mark.parametrize("kind", ["objects", "floats", "contexts", "blocks"])
@run_async
async def test_r39_d47_a_body_whose_command_is_at_the_limit_is_posted(
    store: AnyStore, kind: str
) -> None:
    """At the limit exactly, the post is written (202) and decodes back: the limit is the
    command's, and nothing short of it is refused."""
    count = at_the_limit(kind)
    assert command_values_of(kind, count) in (MOST, MOST - 1)  # a context adds two values
    async with front(store) as client:
        response = await client.post(f"{PATH}/followup", content=body(kind, count), headers=HEADERS)
    assert response.status_code == 202, response.text[:300]
    assert post_rows(store, AGENT) == 1


@pytest.mark.parametrize("name", list(ISSUE_BODIES))
@run_async
async def test_r39_d47_the_issues_bodies_are_refused_before_the_rest_is_read(
    store: AnyStore, name: str
) -> None:
    """Issue 37: 700,000 empty objects in 2.1 MB, 5,600,000 in 16.8 MB (the second took
    216 s of CPU and 1.2 GB before its 422). Sent in 64 KiB chunks, each is refused as soon
    as the bytes so far hold too many values: the app asks for no chunk past that point, so
    it never holds the body, let alone parses it."""
    kind, count = ISSUE_BODIES[name]
    data = body(kind, count)
    chunk = 1 << 16
    chunks = [data[at : at + chunk] for at in range(0, len(data), chunk)]
    async with front(store) as client:
        sent = [("content-type", "application/json"), ("content-length", str(len(data)))]
        stream = Stream(client.app, f"{PATH}/followup", sent, method="POST")  # type: ignore[attr-defined]
        for index, piece in enumerate(chunks):
            last = index == len(chunks) - 1
            stream.inbox.put_nowait({"type": "http.request", "body": piece, "more_body": not last})
        await stream.start()
        answer = json.loads(await stream.body())
        assert stream.status == 422, answer
        assert answer["title"] == "InvalidInput"
        read = len(chunks) - stream.inbox.qsize()
    assert read * chunk <= COUNTED_BYTES + 2 * chunk  # counted from 32 KiB, refused at once
    assert read < len(chunks)
    assert post_rows(store, AGENT) == 0


@run_async
async def test_r39_hostile_bodies_get_413_422_and_400_as_r39_says_and_write_nothing(
    store: AnyStore,
) -> None:
    """R39's answers to hostile bodies, nothing written for any: 413 from Content-Length
    before reading, and while reading; 422 past maxDocumentDepth or maxCommandValues, or
    JSON that is no command; 400 for text that is not JSON or not UTF-8."""
    nested = b'{"message":{"content":"x","metadata":{"k":' + b"[" * 200 + b"]" * 200 + b"}}}"
    cases: list[tuple[bytes, int, str]] = [
        (body("objects", past_the_body("objects")), 422, "InvalidInput"),
        (nested, 422, "InvalidInput"),
        (b'{"message": 5}', 422, "DecodeError"),
        (body("objects", 10)[:-1], 400, "Bad Request"),
        (b'{"message":{"content":"\xff"}}', 400, "Bad Request"),
        (b"x" * (4096 * 100 + 1), 413, "Content Too Large"),
    ]
    async with front(store, max_body_size=4096 * 100) as client:
        for data, status, title in cases:
            response = await client.post(f"{PATH}/followup", content=data, headers=HEADERS)
            problem(response, status, title)
        declared = {**HEADERS, "content-length": str(4096 * 100 + 1)}
        response = await client.post(f"{PATH}/queue", content=b"x" * 5, headers=declared)
        problem(response, 413, "Content Too Large")
        blanks = b" " * 300_000  # no Content-Length: refused as the bytes pass the limit
        chunked = await client.post(
            f"{PATH}/queue", content=pieces(b"[" + blanks, blanks + b"0]"), headers=HEADERS
        )
        problem(chunked, 413, "Content Too Large")
    assert post_rows(store, AGENT) == 0


async def pieces(*chunks: bytes) -> AsyncIterator[bytes]:
    for chunk in chunks:
        yield chunk


# ---------------------------------------------------- off the loop: ordered, not timed


def big(document: Any) -> bool:
    return isinstance(document, dict) and len(json.dumps(document)) > 20_000


@run_async
async def test_d47_parsing_and_building_a_post_leave_the_loop_to_other_requests(
    store: AnyStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """R39, D47: while a big body is parsed in its thread, and then while its command is
    built and checked, another request (a healthz, a small post) is answered."""
    for name, when in (("parse_body", lambda chunks: sum(map(len, chunks)) > 20_000), ("", big)):
        hold = Held()
        if name:
            monkeypatch.setattr(bodies, name, hold.wrap(bodies.parse_body, when))
        else:
            monkeypatch.setattr(
                posting, "intent_command", hold.wrap(posting.intent_command, lambda _i, d: big(d))
            )
        async with front(store) as client:
            data = body("objects", at_the_limit("objects"))
            posted = asyncio.ensure_future(
                client.post(f"{PATH}/followup", content=data, headers=HEADERS)
            )
            await hold.until_entered()
            assert (await client.get("/healthz")).status_code == 200
            small = await client.post("/v1/agents/b/queue", json={"message": {"content": "b"}})
            assert small.status_code == 202
            hold.release()
            assert (await posted).status_code == 202
        assert hold.order == ["answered meanwhile", "released"]
        monkeypatch.undo()


@run_async
async def test_d47_big_bodies_and_frames_are_json_threads_work_small_ones_store_threads(
    store: AnyStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """D47: the JSON work of a body over JSON_BYTES runs in the app's JSON threads (where a
    client's big bodies queue), a small body's in the store thread its write takes anyway;
    never on the loop."""
    threads: list[tuple[int, str]] = []

    def parse(chunks: list[bytes]) -> Any:
        threads.append((sum(map(len, chunks)), threading.current_thread().name))
        return original(chunks)

    original = bodies.parse_body
    monkeypatch.setattr(bodies, "parse_body", parse)
    async with front(store) as client:
        small = {"message": {"content": "x" * (bodies.JSON_BYTES - 100)}}
        assert (await client.post(f"{PATH}/queue", json=small)).status_code == 202
        data = body("objects", at_the_limit("objects"))
        response = await client.post(f"{PATH}/queue", content=data, headers=HEADERS)
        assert response.status_code == 202
    (small_size, small_thread), (big_size, big_thread) = threads
    assert small_size <= bodies.JSON_BYTES < big_size
    assert small_thread.startswith("inbox_core.http store")
    assert big_thread.startswith("inbox_core.http json")


@run_async
async def test_d47_a_big_event_is_encoded_for_its_stream_off_the_loop(
    store: AnyStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """R39, R36, D47: a frame of an event carrying more than INLINE_SIZE is encoded in a
    thread (another request is answered while it is held there); small ones on the loop."""
    agent = "a/stream"
    async with owner(store, agent) as served:
        served.queue(create_message(limits.MAX_JSON_SIZE // 64))
        await served.durable()
    heavy = [sse.event_size(event) > sse.INLINE_SIZE for event in read_log(store, agent)]
    assert heavy == [True]
    hold = Held()
    monkeypatch.setattr(
        sse, "event_frame", hold.wrap(sse.event_frame, lambda _s, e: sse.event_size(e) > 4096)
    )
    async with front(store) as client:
        stream = Stream(
            client.app,  # type: ignore[attr-defined]
            "/v1/agents/a%2Fstream/events",
            [("accept", "text/event-stream")],
        )
        await stream.start()
        await hold.until_entered()
        assert (await client.get("/healthz")).status_code == 200
        hold.release()
        await stream.until(lambda frames: frames.seqs() == [0])
        await stream.leave()
    assert hold.order == ["answered meanwhile", "released"]


@run_async
async def test_d47_an_answer_that_reads_the_store_is_encoded_off_the_loop(
    store: AnyStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """R39, D47: the agent resource, an events page, fates and transcript are encoded in
    the thread that reads them (another request is answered while one is held there),
    whatever their size."""
    agent = "a/read"
    async with owner(store, agent) as served:
        served.queue(create_message(200_000))
        await served.durable()
    for path in ("", "/events", "/fates", "/transcript"):
        hold = Held()
        monkeypatch.setattr(reading, "json_bytes", hold.wrap(reading.json_bytes, off_the_loop))
        async with front(store) as client:
            read = asyncio.ensure_future(client.get(f"/v1/agents/a%2Fread{path}"))
            await hold.until_entered()
            assert (await client.get("/healthz")).status_code == 200
            hold.release()
            assert (await read).status_code == 200
        assert hold.order == ["answered meanwhile", "released"], path
        monkeypatch.undo()


def off_the_loop(*_args: Any, **_kwargs: Any) -> bool:
    """Whether the calling thread is not the loop's (the test's main thread)."""
    return threading.current_thread() is not threading.main_thread()


def create_message(size: int) -> Any:
    from inbox_core import create_user_message

    return create_user_message("x" * size)


# ------------------------------------------------ a real server, two tenants


def test_r39_r35_d47_hostile_bodies_cost_another_tenant_nothing_but_their_answers(
    tmp_path: Path,
) -> None:
    """``serve --http`` (the worker and the front door on one loop), two tenants: tenant a's
    hostile bodies get their 4xx and write nothing; tenant b is served after each (its
    followup applied, /healthz answered), and a's one body at the limit is applied too."""
    db = tmp_path / "agents.db"
    secrets = {}
    made = SqliteStore(db)
    try:
        secrets = {t: made.tokens.add(t, ["read", "post"], f"{t}/*") for t in ("a", "b")}
    finally:
        made.close()
    at = port()
    hostile = [
        *((body(kind, count), 422) for kind, count in ISSUE_BODIES.values()),
        (body("contexts", at_the_limit("contexts") + 1), 422),
        (b'{"message":{"content":"x","metadata":' + b"[" * 100 + b"]" * 100 + b"}}", 422),
        (b'{"message": ', 400),
    ]
    with children() as started:
        serve = Child(
            tmp_path, "serve", "serve", f"sqlite:{db}", "--host", ECHO, "--http", f"127.0.0.1:{at}"
        )
        started.append(serve)
        wait_serving(at, serve)
        for n, (data, status) in enumerate(hostile):
            assert _post(at, secrets["a"], "a%2Fx", data) == status
            answer = request(
                at,
                "POST",
                "/v1/agents/b%2Fy/followup",
                {"message": {"content": f"b {n}"}},
                {"Authorization": f"Bearer {secrets['b']}", "Prefer": "wait=30"},
            )
            assert answer[0] == 200, answer
            assert answer[2]["outcome"] == {"kind": "applied"}
            assert request(at, "GET", "/healthz")[0] == 200
        assert _post(at, secrets["a"], "a%2Fz", body("objects", at_the_limit("objects"))) == 202
        assert serve.stop() == 0
    store = SqliteStore(db)
    try:
        assert post_rows(store, "a/x") == 0
        assert post_rows(store, "b/y") == len(hostile)
        assert post_rows(store, "a/z") == 1
    finally:
        store.close()


def _post(at: int, token: str, agent: str, data: bytes) -> int:
    import http.client

    conn = http.client.HTTPConnection("127.0.0.1", at, timeout=120)
    try:
        headers = {"Content-Type": "application/json", "Authorization": f"Bearer {token}"}
        conn.request("POST", f"/v1/agents/{agent}/followup", body=data, headers=headers)
        response = conn.getresponse()
        response.read()
        return response.status
    finally:
        conn.close()


def test_d47_a_serving_process_switches_threads_every_millisecond(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """D47: ``inbox-core http`` and ``serve`` hand the GIL to a waiting thread every 1 ms
    (Python's 5 ms made each of a request's steps on the loop wait that long beside a
    thread's JSON work); ``http`` does so before anything else."""
    import sys

    from inbox_core.cli import frontdoor, main
    from inbox_core.errors import InvalidInput
    from inbox_core.shell.stores import opening

    def refused(_spec: str) -> Any:
        raise InvalidInput("no store here")

    called: list[float] = []
    monkeypatch.setattr(sys, "setswitchinterval", called.append)
    monkeypatch.setattr(opening, "open_store", refused)
    frontdoor.responsive()
    assert called == [frontdoor.SWITCH_SECONDS] == [0.001]
    assert main(["http", "sqlite:agents.db"]) == 1  # its store refused, once it switches so
    assert called == [0.001, 0.001]
