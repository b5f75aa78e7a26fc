"""``POST /v1/agents/{agent}/ag-ui`` (R44): AG-UI's ``RunAgentInput`` in, the run's AG-UI
events out as Server-Sent Events (``data:`` one event's JSON, as AG-UI's own encoder
writes them).

Before anything is streamed the request is checked like every post (R39: the token may
read and, when there is something to post, post to the agent; the body's bounds; 422 for
a ``RunAgentInput`` that does not validate, naming AG-UI's field in the problem's
``field``), the log is read once, and the user messages it does not hold yet are posted
in order with their ids as ``Idempotency-Key`` (a retried request posts nothing twice).
Then the stream (one of the token's stream slots): once every post is decided (a rejected
one is ``RUN_ERROR``), ``RunFeed`` folds the log from seq 0 and follows it live through
``store.watch`` (with the live output where the store carries it, R43), until the run's
turn ended. It writes a comment line every ``keepalive_seconds``, ends when the client
leaves (its posts stand: nothing else is undone or kept), when its token stops being
valid, and when the server shuts down.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
from collections.abc import AsyncIterator, Iterable
from functools import partial
from typing import Any, Final

from starlette.requests import Request
from starlette.responses import Response
from starlette.types import Send as AsgiSend

from inbox_core.codec import event_to_json
from inbox_core.commands import Send
from inbox_core.errors import InboxCoreError
from inbox_core.http.agui import AgUiInput, FieldError, RunFeed, held_ids, run_input
from inbox_core.http.auth import Access
from inbox_core.http.bodies import read_json
from inbox_core.http.door import FrontDoor
from inbox_core.http.paths import agent_id
from inbox_core.http.problem import Problem, json_bytes
from inbox_core.http.sse import EventStream
from inbox_core.http.store import read_log
from inbox_core.output import (
    OutputSnapshot,
    output_message_to_json,
    snapshot_to_json,
)
from inbox_core.shell.stores.posts import PostRejected, PostTimeout, Receipt

__all__ = ["post_agui"]

WAIT_SLICE: Final = 5.0
"""Seconds one wait for a post's outcome lasts before the stream looks again (the client
may have left meanwhile)."""


async def post_agui(door: FrontDoor, request: Request) -> Response:
    access = await door.admit(request, "read")
    agent = agent_id(request.path_params["agent"])
    access.require("read", agent)
    bounds = door.limits
    document: Any = await read_json(  # parsed off the event loop, its values counted (D47)
        request,
        limit=bounds.max_body_size,
        budget=door.budget,
        key=door.budget_key(access, request),
        seconds=bounds.body_seconds,
        run=door.run,
    )
    _read(document, agent, ())  # a RunAgentInput that does not validate reads no log
    log = [event_to_json(event) for event in await door.run(lambda: read_log(door.store, agent))]
    run = _read(document, agent, held_ids(log))
    if run.sends:
        access.require("post", agent)
    receipts = [await door.run(partial(_post, door, agent, send)) for send in run.sends]
    door.metrics.posts.labels("ag-ui").inc(len(receipts))
    return AgUiStream.open(door, request, access, agent, run, log, receipts)


def _post(door: FrontDoor, agent: str, send: Send) -> Receipt:
    """Post ``send``, keyed by its message's id (R35: a retry posts nothing twice)."""
    return door.store.post(agent, send, key=str(send.input.message.id))


def _read(document: object, agent: str, held: Iterable[str]) -> AgUiInput:
    """The input, or a 422 problem naming AG-UI's field (``field``)."""
    try:
        run = run_input(document, agent, held)
        if run.follow is None:
            raise FieldError("messages", "no user message: nothing to run", "InvalidInput")
    except FieldError as error:
        raise Problem(422, str(error), title=error.error, field=error.field) from None
    return run


class AgUiStream(EventStream):
    """The run's events; ``__call__`` (the client leaving, the stream slot, the metrics) is
    the event stream's, the pump is the run's."""

    def __init__(
        self,
        door: FrontDoor,
        request: Request,
        access: Access,
        agent: str,
        run: AgUiInput,
        log: list[Any],
        receipts: list[Receipt],
    ) -> None:
        super().__init__(door, request, access, agent, len(log))
        assert run.follow is not None
        self.feed = RunFeed(agent, run.follow)
        self.log = log
        self.receipts = receipts

    @classmethod
    def open(  # type: ignore[override]
        cls,
        door: FrontDoor,
        request: Request,
        access: Access,
        agent: str,
        run: AgUiInput,
        log: list[Any],
        receipts: list[Receipt],
    ) -> AgUiStream:
        door.streams.take(door.budget_key(access, request))
        return cls(door, request, access, agent, run, log, receipts)

    async def _pump(self, send: AsgiSend) -> None:
        door, bounds = self.door, self.door.limits
        loop = asyncio.get_running_loop()
        lock = asyncio.Lock()  # the run and the keep-alive never write at once

        async def write(data: bytes) -> None:
            async with lock:
                await send({"type": "http.response.body", "body": data, "more_body": True})

        async def follow() -> None:
            async for events in self._events():
                if events:
                    await write(b"".join(b"data: " + json_bytes(e) + b"\n\n" for e in events))
                if self.feed.done:
                    return

        await write(b": the AG-UI events of this run\n\n")
        commented = loop.time()
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
                    break
                if loop.time() - commented >= bounds.keepalive_seconds:
                    await write(b": keep-alive\n\n")
                    commented = loop.time()
            error = follower.exception() if follower.done() else None
            if isinstance(error, InboxCoreError):  # a store that failed, a corrupt row
                failed = {"type": "RUN_ERROR", "message": str(error), "code": type(error).__name__}
                await write(b"data: " + json_bytes(failed) + b"\n\n")
            elif error is not None:
                raise error
        finally:
            closing.cancel()
            follower.cancel()
            with contextlib.suppress(BaseException):
                await follower

    async def _events(self) -> AsyncIterator[list[Any]]:
        """The run's events, a batch per step of the feed."""
        feed = self.feed
        for receipt in self.receipts:
            outcome = await self._outcome(receipt)
            if isinstance(outcome, PostRejected):
                yield feed.rejected(outcome.error, outcome.message)
                return
        for event in self.log:
            yield feed.durable(event)
            if feed.done:
                return
        watch = _watch(self.door, self.agent, len(self.log))
        try:
            async for item in watch:
                yield _fed(feed, item)
                if feed.done:
                    return
        finally:
            with contextlib.suppress(Exception):
                await watch.aclose()  # type: ignore[attr-defined]

    async def _outcome(self, receipt: Receipt) -> Any:
        while True:
            try:
                return await self.door.store.wait(receipt, timeout=WAIT_SLICE)
            except PostTimeout:
                continue


def _watch(door: FrontDoor, agent: str, since: int) -> AsyncIterator[Any]:
    """``store.watch`` from ``since``, with the live output where the store carries it (the
    voice's stage 2: ``watch(agent, since, output=True)``); durable events alone before."""
    if "output" in inspect.signature(door.store.watch).parameters:
        return door.store.watch(agent, since, output=True)  # type: ignore[call-arg]
    return door.store.watch(agent, since)


def _fed(feed: RunFeed, item: Any) -> list[Any]:
    """One item of the watch: ``(seq, event)``, a live output message or a snapshot."""
    if isinstance(item, tuple):
        _, event = item
        return feed.durable(event_to_json(event))
    if isinstance(item, OutputSnapshot):
        return feed.snapshot(snapshot_to_json(item))
    return feed.output(output_message_to_json(item))
