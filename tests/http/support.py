"""Helpers of the front door tests (R39): an ASGI client, an event-stream reader, an owner."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Sequence
from typing import Any

import httpx

from inbox_core.http import create_app
from inbox_core.shell import EchoHost, LoopAgent
from tests.shell.posts_support import AnyStore, agent_name, post_rows  # noqa: F401

BASE = "http://front"
PROBLEM = "application/problem+json"


@contextlib.asynccontextmanager
async def client_of(app: Any) -> AsyncIterator[httpx.AsyncClient]:
    transport = httpx.ASGITransport(app)
    async with httpx.AsyncClient(transport=transport, base_url=BASE, timeout=30) as client:
        yield client


@contextlib.asynccontextmanager
async def front(store: AnyStore, **options: Any) -> AsyncIterator[httpx.AsyncClient]:
    """An ASGI client of ``create_app(store, **options)`` (its app as ``client.app``)."""
    app = create_app(store, **options)
    async with client_of(app) as client:
        client.app = app  # type: ignore[attr-defined]
        yield client


def prepared(store: AnyStore) -> AnyStore:
    """``store`` with its tables made (a store of issue 28 writes nothing until its first
    write or ``prepare``; the tests count rows before any)."""
    prepare = getattr(store, "prepare", None)
    if prepare is not None:
        prepare()
    return store


def problem(response: httpx.Response, status: int, title: str) -> dict[str, Any]:
    """The problem document of ``response``, checked: its status and title (RFC 9457)."""
    assert response.status_code == status, (response.status_code, response.text[:300])
    assert response.headers["content-type"] == PROBLEM, response.headers
    document = response.json()
    assert document["title"] == title, document
    assert document["status"] == status
    assert isinstance(document["detail"], str)
    return document


@contextlib.asynccontextmanager
async def owner(store: AnyStore, agent: str, delay: float = 0.0) -> AsyncIterator[LoopAgent]:
    """A ``LoopAgent`` with an ``EchoHost`` owning ``agent``'s log (it serves the posts);
    detached at the end (its inbox stays)."""
    served = LoopAgent(EchoHost(delay=delay), log=store.log(agent))
    try:
        yield served
    finally:
        await served.detach()


def message_body(text: str = "hello", **message: Any) -> dict[str, Any]:
    return {"message": {"content": text, **message}}


# ----------------------------------------------------------------- event streams


class Frames:
    """Server-Sent Events parsed from a byte stream: events (id, event, data) and comments."""

    def __init__(self) -> None:
        self.buffer = b""
        self.events: list[dict[str, Any]] = []
        self.comments: list[str] = []

    def feed(self, data: bytes) -> None:
        self.buffer += data
        while b"\n\n" in self.buffer:
            block, self.buffer = self.buffer.split(b"\n\n", 1)
            fields: dict[str, Any] = {}
            for line in block.decode("utf-8").split("\n"):
                if line.startswith(":"):
                    self.comments.append(line[1:].strip())
                    continue
                name, _, value = line.partition(": ")
                fields[name] = value
            if "data" in fields:
                fields["data"] = json.loads(fields["data"])
                self.events.append(fields)

    def seqs(self) -> list[int]:
        return [int(event["id"]) for event in self.events if event.get("event") != "problem"]


class Stream:
    """One request driven on the ASGI app directly (httpx's ASGI transport buffers whole
    answers): its head, then its body as it comes; ``leave()`` is the client vanishing."""

    def __init__(
        self,
        app: Any,
        path: str,
        headers: Sequence[tuple[str, str]] = (),
        *,
        method: str = "GET",
        body: bytes | None = None,
        client: tuple[str, int] = ("127.0.0.1", 50000),
        server: tuple[str, int | None] = ("front", 80),
    ) -> None:
        raw, _, query = path.partition("?")
        self.scope = {
            "type": "http",
            "asgi": {"version": "3.0", "spec_version": "2.3"},
            "http_version": "1.1",
            "method": method,
            "scheme": "http",
            "path": raw,
            "raw_path": raw.encode("latin-1"),
            "query_string": query.encode("latin-1"),
            "root_path": "",
            "headers": [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in headers],
            "client": client,
            "server": server,
        }
        self.app = app
        self.inbox: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self.sent: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self.frames = Frames()
        self.status: int | None = None
        self.headers: dict[str, str] = {}
        self.ended = False
        self.task: asyncio.Task[None] | None = None
        if body is not None:
            self.inbox.put_nowait({"type": "http.request", "body": body, "more_body": False})

    async def _receive(self) -> dict[str, Any]:
        return await self.inbox.get()

    async def _send(self, message: dict[str, Any]) -> None:
        await self.sent.put(message)

    async def start(self) -> Stream:
        self.task = asyncio.ensure_future(self.app(self.scope, self._receive, self._send))
        head = await asyncio.wait_for(self.sent.get(), 10)
        assert head["type"] == "http.response.start", head
        self.status = head["status"]
        self.headers = {k.decode(): v.decode() for k, v in head["headers"]}
        return self

    async def _next(self, timeout: float) -> bool:
        message = await asyncio.wait_for(self.sent.get(), timeout)
        self.frames.feed(message.get("body", b""))
        if not message.get("more_body", False):
            self.ended = True
        return not self.ended

    async def until(self, check: Any, timeout: float = 10.0) -> None:
        """Read until ``check(frames)`` holds (AssertionError after ``timeout`` s)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while not check(self.frames):
            left = deadline - loop.time()
            if left <= 0 or self.ended:
                raise AssertionError(f"stream: not there ({self.frames.events[-3:]})")
            with contextlib.suppress(TimeoutError):
                await self._next(left)

    async def body(self, timeout: float = 10.0) -> bytes:
        """The whole body of a request that ends (a JSON or problem answer)."""
        chunks = []
        while True:
            message = await asyncio.wait_for(self.sent.get(), timeout)
            chunks.append(message.get("body", b""))
            if not message.get("more_body", False):
                return b"".join(chunks)

    async def leave(self) -> None:
        """The client goes away: the app must end the request."""
        await self.inbox.put({"type": "http.disconnect"})
        assert self.task is not None
        await asyncio.wait_for(self.task, 10)

    async def finished(self, timeout: float = 10.0) -> None:
        """The app ended the stream on its own."""
        await self.until(lambda _frames: self.ended, timeout)
        assert self.task is not None
        await asyncio.wait_for(self.task, timeout)


async def stream(
    app: Any, path: str, *headers: tuple[str, str], client: tuple[str, int] = ("127.0.0.1", 50000)
) -> Stream:
    """An event stream of ``path`` opened by ``client`` (its address and port: a connection)."""
    return await Stream(
        app, path, [("accept", "text/event-stream"), *headers], client=client
    ).start()


async def raw_request(
    app: Any, method: str, path: str, body: bytes | None = None, *headers: tuple[str, str]
) -> tuple[int, dict[str, str], bytes]:
    """One request with exactly this raw path (no client normalizes it): status, headers,
    body."""
    sent = list(headers)
    if body is not None:
        sent += [("content-type", "application/json"), ("content-length", str(len(body)))]
    request = await Stream(app, path, sent, method=method, body=body).start()
    data = await request.body()
    assert request.status is not None
    return request.status, request.headers, data
