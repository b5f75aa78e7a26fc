"""An agent's events as Server-Sent Events (R39, R36): ``GET .../events`` with ``Accept:
text/event-stream``.

Each durable event is one SSE event: ``id:`` its seq, ``event:`` its type, ``data:`` the
``{"seq", "type", "data"}`` object on one line. The stream starts at ``Last-Event-ID`` + 1
when the client sends that header (a reconnecting ``EventSource`` does), else at
``?since=``, so a reconnecting client loses and repeats nothing. It follows the log through
``store.watch`` (woken by commits, across owners; the store shares one read per wake among
the watchers of an agent in a process), writes a comment line every ``keepalive_seconds``
(10 s, whether events came or not: R39 asks for one at least every 15 s, and a proxy or a
browser keeps the connection), and ends when the
client leaves, when its token stops being valid (checked every ``check_seconds``), when the
server shuts down, or after a ``problem`` event when the log cannot be read (a corrupt row,
a store that failed; the client reconnects from where it was). A slow client stalls only its
own stream: the next event is read once the last one was sent. An event that carries
more than ``INLINE_SIZE`` (a message, a splice's entries, a record's data, a long text) is
encoded in one of the app's threads, so no stream's frame holds the event loop (D47).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
from typing import Any, Final

from starlette.requests import Request
from starlette.responses import Response
from starlette.types import Receive, Scope, Send

from inbox_core import limits
from inbox_core.codec import event_to_json
from inbox_core.errors import InboxCoreError
from inbox_core.events import DurableEvent
from inbox_core.http.auth import Access
from inbox_core.http.door import FrontDoor, whole_number
from inbox_core.http.problem import Problem, json_bytes
from inbox_core.shell.stores.rows import payload_size

__all__ = ["INLINE_SIZE", "EventStream", "event_frame", "event_size", "wants_events"]

logger: Final = logging.getLogger("inbox_core.http")
MEDIA_TYPE: Final = "text/event-stream"
INLINE_SIZE: Final = 4096
"""The largest ``event_size`` whose frame is encoded on the event loop (at most about
0.5 ms for the costliest JSON per unit of size); a larger one costs a hop to a thread
(about 0.1 ms), which is nothing beside its encoding (D47)."""


def wants_events(request: Request) -> bool:
    """Whether ``Accept`` names ``text/event-stream`` (with a q above 0)."""
    for accept in request.headers.getlist("accept"):
        for item in accept.split(","):
            kind, *params = (part.strip() for part in item.split(";"))
            if kind.lower() != MEDIA_TYPE:
                continue
            weights = [p.partition("=")[2] for p in params if p.lower().startswith("q=")]
            if not weights or weights[0].strip() not in ("0", "0.0", "0.00", "0.000"):
                return True
    return False


def event_frame(seq: int, event: DurableEvent) -> bytes:
    """One SSE event (written in steps past ``limits.LONG_SIZE``, D47). A host record's type
    may hold a line break (R30 allows any name): then the ``event:`` field is left out (its
    type is still in ``data``)."""
    document = {"seq": seq, **event_to_json(event)}
    kind = str(document["type"])
    head = f"id: {seq}\n" + ("" if "\n" in kind or "\r" in kind else f"event: {kind}\n")
    data = json_bytes(document, in_steps=event_size(event) > limits.LONG_SIZE)
    return head.encode("utf-8") + b"data: " + data + b"\n\n"


def event_size(event: DurableEvent) -> int:
    """About the length of ``event``'s JSON text beyond its envelope (``rows.payload_size``:
    what it carries, from the sizes its values know: no walk of their JSON)."""
    return payload_size(event)


def start_seq(request: Request, since: int) -> int:
    """``Last-Event-ID`` + 1 if sent (400 unless it is a seq), else ``since``."""
    last = request.headers.get("last-event-id")
    if last is None or not last.strip():  # empty: no event seen (an SSE client sends none)
        return since
    seq = whole_number(last.strip(), 0, limits.MAX_SAFE_INTEGER)
    if seq is None:
        raise Problem(400, f"Last-Event-ID is the seq of an event, got {last.strip()[:40]!r}")
    return min(seq + 1, limits.MAX_SAFE_INTEGER)


class EventStream(Response):
    """The streaming answer; ``open`` takes one of the token's stream slots (429 if none)."""

    def __init__(
        self, door: FrontDoor, request: Request, access: Access, agent: str, since: int
    ) -> None:
        self.status_code = 200
        self.media_type = None  # Starlette would add "; charset=utf-8" (SSE is UTF-8 always)
        self.background = None
        self.init_headers(  # no length
            {"Content-Type": MEDIA_TYPE, "Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
        )
        self.door = door
        self.request = request
        self.access = access
        self.agent = agent
        self.since = since

    @classmethod
    def open(
        cls, door: FrontDoor, request: Request, access: Access, agent: str, since: int
    ) -> EventStream:
        start = start_seq(request, since)
        door.streams.take(door.budget_key(access, request))
        return cls(door, request, access, agent, start)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        metrics = self.door.metrics
        metrics.streams.inc()
        try:
            await send({"type": "http.response.start", "status": 200, "headers": self.raw_headers})
            pump = asyncio.ensure_future(self._pump(send))
            left = asyncio.ensure_future(_disconnected(receive))
            try:
                await asyncio.wait({pump, left}, return_when=asyncio.FIRST_COMPLETED)
            finally:
                for task in (pump, left):
                    task.cancel()
                for task in (pump, left):
                    with contextlib.suppress(asyncio.CancelledError, Exception):
                        await task
            if left.cancelled():  # the stream ended, not the client: say so
                with contextlib.suppress(Exception):
                    await send({"type": "http.response.body", "body": b"", "more_body": False})
        finally:
            metrics.streams.dec()
            self.door.streams.give(self.door.budget_key(self.access, self.request))

    async def _pump(self, send: Send) -> None:
        """Events as they come (one task following the watch, no task per event); the rest
        of the time, every ``check_seconds``: the shutdown, the token, the keep-alive."""
        door, bounds = self.door, self.door.limits
        loop = asyncio.get_running_loop()
        watch = door.store.watch(self.agent, self.since)
        lock = asyncio.Lock()  # the follower and the keep-alive never write at once

        async def write(data: bytes) -> None:
            async with lock:
                await send({"type": "http.response.body", "body": data, "more_body": True})

        async def follow() -> None:
            async for seq, event in watch:
                if event_size(event) <= INLINE_SIZE:
                    await write(event_frame(seq, event))
                else:
                    frame = functools.partial(event_frame, seq, event)
                    await write(await door.run(frame, heavy=True))

        await write(f": events of this agent from seq {self.since}\n\n".encode())
        commented = loop.time()  # a comment every keepalive_seconds, events or not (R39)
        follower = asyncio.ensure_future(follow())
        closing: asyncio.Future[Any] = asyncio.ensure_future(door.closing.wait())
        try:
            while True:
                due = bounds.keepalive_seconds - (loop.time() - commented)
                timeout = max(0.0, min(bounds.check_seconds, due))
                done, _ = await asyncio.wait(
                    {follower, closing}, timeout=timeout, return_when=asyncio.FIRST_COMPLETED
                )
                if done:
                    break
                if not await door.gate.still_admits(self.request.headers, self.access):
                    break  # revoked (or the store took tokens): the stream ends
                if loop.time() - commented >= bounds.keepalive_seconds:
                    await write(b": keep-alive\n\n")
                    commented = loop.time()
            error = follower.exception() if follower.done() else None
            if isinstance(error, InboxCoreError):  # a corrupt row, a store that failed
                problem = json_bytes(Problem.of(error).document())
                await write(b"event: problem\ndata: " + problem + b"\n\n")
            elif error is not None:
                raise error
        finally:
            closing.cancel()
            follower.cancel()
            with contextlib.suppress(BaseException):
                await follower
            with contextlib.suppress(Exception):
                await watch.aclose()  # type: ignore[attr-defined]


async def _disconnected(receive: Receive) -> None:
    while True:
        message: Any = await receive()
        if message.get("type") == "http.disconnect":
            return
