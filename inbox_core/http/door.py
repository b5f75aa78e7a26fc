"""``FrontDoor``: what every endpoint of one app shares (the store, the gate, the bounds, the
metrics), and ``endpoint``, which turns a handler into a Starlette endpoint that answers every
error as a problem (R39) and counts it.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Final, TypeVar

import attrs
from starlette.requests import Request
from starlette.responses import Response

from inbox_core.commands import Command
from inbox_core.errors import InboxCoreError
from inbox_core.http.auth import Access, Gate
from inbox_core.http.bodies import BodyBudget
from inbox_core.http.metrics import Metrics
from inbox_core.http.problem import Problem, problem_response
from inbox_core.http.quotas import Quota, Quotas
from inbox_core.shell.stores.base import Store
from inbox_core.shell.stores.posts import Receipt

__all__ = ["FrontDoor", "Limits", "StreamSlots", "endpoint", "whole_number"]

T = TypeVar("T")
logger: Final = logging.getLogger("inbox_core.http")

STORE_THREADS: Final = 16
"""Worker threads one app runs store calls in at once (the rest queue)."""
JSON_THREADS: Final = 2
"""Worker threads one app runs the JSON work of big requests in (a big body parsed, its
command built and written; a big event's frame encoded): CPU work under one GIL gains
nothing from more, and a client sending many big bodies fills these, never the store
threads that every other request needs (D47)."""


@attrs.frozen
class Limits:
    """The bounds of one app (``create_app``'s arguments)."""

    max_body_size: int
    body_budget: int
    body_seconds: float
    max_streams: int
    keepalive_seconds: float
    check_seconds: float
    quota: Quota


def whole_number(text: str, low: int, high: int) -> int | None:
    """The number ``text`` spells in ASCII digits if it lies in ``[low, high]``, else None:
    judged by its value, so leading zeros change nothing and a number of any length past
    ``high`` is past it alike (never an ``int`` of thousands of digits)."""
    if not text.isascii() or not text.isdigit():
        return None
    digits = text.lstrip("0") or "0"
    if len(digits) > len(str(high)):
        return None
    value = int(digits)
    return value if low <= value <= high else None


class StreamSlots:
    """Open event streams per key (``FrontDoor.budget_key``): at most ``limit`` each."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._open: dict[str, int] = {}

    def take(self, key: str) -> None:
        count = self._open.get(key, 0)
        if count >= self.limit:
            raise Problem(
                429,
                f"{key} has {count} event streams open; at most {self.limit}",
                headers={"Retry-After": "5"},
            )
        self._open[key] = count + 1

    def give(self, key: str) -> None:
        count = self._open.get(key, 0) - 1
        if count > 0:
            self._open[key] = count
        else:
            self._open.pop(key, None)


class FrontDoor:
    """The shared parts of one app; ``closing`` ends every event stream (at shutdown)."""

    def __init__(
        self,
        store: Store,
        metrics: Metrics,
        limits: Limits,
        *,
        public: bool,
        token_ttl: float,
    ) -> None:
        self.store = store
        self.gate = Gate(store.tokens, self.run, public=public, ttl=token_ttl)
        self.metrics = metrics
        self.limits = limits
        self.budget = BodyBudget(limits.body_budget)
        self.quotas = Quotas(limits.quota)
        self.streams = StreamSlots(limits.max_streams)
        self.closing = asyncio.Event()
        # the app's own threads (a plain pool: a hand-off costs a third of anyio's)
        self._threads = concurrent.futures.ThreadPoolExecutor(
            STORE_THREADS, thread_name_prefix="inbox_core.http store"
        )
        self._json = concurrent.futures.ThreadPoolExecutor(
            JSON_THREADS, thread_name_prefix="inbox_core.http json"
        )

    async def run(self, call: Callable[[], T], *, heavy: bool = False) -> T:
        """``call()`` in one of the app's worker threads (store I/O never blocks the event
        loop; at most ``STORE_THREADS`` at once, the rest queue; ``heavy`` JSON work in one
        of ``JSON_THREADS``). A request cancelled meanwhile (its client left, the server
        stops) still waits for the call to end, as anyio's threads made it: nothing of a
        request outlives it, so a store closed after the last request is never in use by
        one of them."""
        pool = self._json if heavy else self._threads
        future = asyncio.get_running_loop().run_in_executor(pool, call)
        try:
            return await asyncio.shield(future)
        except asyncio.CancelledError:
            while not future.done():
                with contextlib.suppress(asyncio.CancelledError):
                    await asyncio.wait({future})
            if not future.cancelled():
                future.exception()  # the cancel is what the caller gets; this is not lost
            raise

    async def unless_closing(self, awaitable: Awaitable[T]) -> T | None:
        """What ``awaitable`` gives, or None (it cancelled) once the server is shutting down:
        a post waiting for its outcome is answered at once with what it is (R39: pending)."""
        task = asyncio.ensure_future(awaitable)
        closing = asyncio.ensure_future(self.closing.wait())
        try:
            await asyncio.wait({task, closing}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            closing.cancel()
            if not task.done():
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
        return task.result() if not task.cancelled() else None

    def post(self, access: Access, agent: str, command: Command, key: str | None) -> Receipt:
        """``store.post`` within the quotas of ``access`` (``Problem(429)`` past one, nothing
        written). Blocking: call it through ``run``."""
        self.quotas.check(self.store, access, agent)
        receipt = self.store.post(agent, command, key=key)
        self.quotas.posted(agent)
        return receipt

    async def admit(self, request: Request, scope: str) -> Access:
        """The request's access, checked for ``scope``: 401 or 403 if not (the agent of the
        path is checked once decoded: ``Access.require``)."""
        access = await self.gate.admit(request.headers)
        access.require(scope)
        return access

    @staticmethod
    def budget_key(access: Access, request: Request) -> str:
        """Whose bounds a request counts against (bodies in flight, open streams): its token's,
        or with no token its connection's, so that no client of an open store holds the
        budget of the others (a local client takes the rest's room only by opening
        connections, which the server bounds)."""
        if access.token is not None:
            return f"token {access.token}"
        client = request.scope.get("client")
        return f"connection {client[0]}:{client[1]}" if client else "connection"

    def close(self) -> None:
        """End every open event stream and every post's wait (the server is shutting
        down)."""
        self.closing.set()


Handler = Callable[[FrontDoor, Request], Awaitable[Response]]


def endpoint(
    door: FrontDoor, name: str, handler: Handler
) -> Callable[[Request], Awaitable[Response]]:
    """A Starlette endpoint running ``handler``: a ``Problem`` or typed error becomes its
    problem answer, anything else a 500 problem (logged, never shown); every answer is
    counted under ``name``."""

    async def run(request: Request) -> Response:
        started = time.perf_counter()
        try:
            response = await handler(door, request)
        except Problem as problem:
            response = problem_response(problem)
        except InboxCoreError as error:
            response = problem_response(Problem.of(error))
        except Exception as error:
            logger.error("%s %s failed", request.method, name, exc_info=error)
            response = problem_response(Problem(500, "the server failed; see its log"))
        door.metrics.answered(
            name, request.method, response.status_code, time.perf_counter() - started
        )
        return response

    run.__name__ = name
    return run
