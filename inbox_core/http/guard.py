"""``Guard``: the outermost layer of the app (R39, R40; D43), around every answer it gives.

- Every answer carries ``X-Content-Type-Options: nosniff``, ``X-Frame-Options: DENY`` and a
  ``Content-Security-Policy`` whose ``frame-ancestors 'none'`` no page of another origin can
  get around (a ``<meta>`` policy cannot carry it): the inspector is never framed, so no
  decoy can make a click on it (clickjacking), and its scripts, styles and requests come
  from its own origin only.
- A request whose ``Host`` the app does not answer to is refused before anything else reads
  it (``inbox_core.http.hosts``: 421, or 400 for no host at all): with no token in the store,
  only loopback names; with tokens, the ``--allowed-host`` list if one was given.
- No answer is a bare 500 in ``text/plain``: an error that escaped an endpoint is a 500
  problem (logged), and a request the server cancels as it stops (its grace ran out) is
  answered a 503 problem that says so (retry with the same ``Idempotency-Key``) before it
  ends cancelled.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any, Final

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from inbox_core.errors import InboxCoreError
from inbox_core.http.door import FrontDoor
from inbox_core.http.hosts import HostRule
from inbox_core.http.problem import Problem, problem_response

__all__ = ["CONTENT_SECURITY_POLICY", "SECURITY_HEADERS", "Guard"]

logger: Final = logging.getLogger("inbox_core.http")

CONTENT_SECURITY_POLICY: Final = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; base-uri 'none'; form-action 'none'; object-src 'none'; "
    "frame-ancestors 'none'"
)
"""The inspector's policy (R40: its files and the API of its own origin, nothing inline),
sent as a header on every answer."""
SECURITY_HEADERS: Final = (
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    (b"content-security-policy", CONTENT_SECURITY_POLICY.encode("ascii")),
)


STOPPING: Final = Problem(
    503,
    "the server is shutting down; a post's fate is unknown: retry with the same Idempotency-Key",
    headers={"Retry-After": "1"},
)


class Guard:
    """ASGI middleware: the security headers, the ``Host`` rule, no bare 500."""

    def __init__(self, app: ASGIApp, door: FrontDoor, hosts: HostRule) -> None:
        self.app = app
        self.door = door
        self.hosts = hosts

    async def _refusal(self, scope: Scope) -> Problem | None:
        try:
            strict = await self.door.gate.opens()
        except InboxCoreError:  # the store cannot say: judge as if it had no token
            strict = True
        if not strict and not self.hosts.allowed:
            return None
        refused = self.hosts.refusal(scope)
        return None if refused is None else Problem(*refused)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def guarded(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
                message = {**message, "headers": [*message.get("headers", ()), *SECURITY_HEADERS]}
            await send(message)

        try:
            problem = await self._refusal(scope)
            if problem is None:
                await self.app(scope, receive, guarded)
                return
        except asyncio.CancelledError:  # the server stops and its grace ran out
            if not started:  # answered, then cancelled still (nothing of it outlives it)
                await _answer(STOPPING, scope, receive, guarded)
            raise
        except Exception as error:
            logger.error("%s %s failed", scope.get("method"), scope.get("path"), exc_info=error)
            if started:
                return  # the answer was cut; the server closes the connection
            problem = Problem(500, "the server failed; see its log")
        await _answer(problem, scope, receive, guarded)


async def _answer(problem: Problem, scope: Scope, receive: Receive, send: Send) -> None:
    response: Any = problem_response(problem)
    await response(scope, receive, send)
