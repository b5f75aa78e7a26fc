"""Agent ids in paths (R39): one percent-encoded segment, read from the raw request target.

A server decodes ``%2F`` into ``/`` in ``scope["path"]``, after which ``a%2Fb`` and ``a/b``
look alike; so ``RawPath`` routes on ``scope["raw_path"]`` instead, still encoded: Starlette's
``{agent}`` (one segment, ``[^/]+``) then holds exactly the segment the client sent, and
``agent_id`` decodes it once. ``.`` and ``..`` are ids like any other (nothing here
resolves dot segments). A segment that is no agent id (not UTF-8, an overlong or surrogate
encoding, NUL, empty, too long) names no agent: 404, so no spelling reaches another agent
than the one its bytes spell. ``segment`` encodes an id back (``Location``): ASCII only,
``/`` and every other reserved byte escaped, ``.`` and ``..`` escaped too so that no client
resolves them away.

``RawPath`` also bounds the request head: at most ``MAX_HEADERS`` headers of at most
``MAX_HEADER_BYTES`` together, else 431 before anything else runs.
"""

from __future__ import annotations

from typing import Final
from urllib.parse import quote, unquote_to_bytes

from starlette.types import ASGIApp, Receive, Scope, Send

from inbox_core import limits
from inbox_core.errors import InvalidInput
from inbox_core.http.hosts import absolute_target
from inbox_core.http.problem import Problem, problem_response

__all__ = ["MAX_HEADERS", "MAX_HEADER_BYTES", "RawPath", "agent_id", "post_location", "segment"]

MAX_HEADERS: Final = 100
MAX_HEADER_BYTES: Final = 32 * 1024


def agent_id(raw: str) -> str:
    """The agent id a raw path segment spells; ``Problem(404)`` when it spells none."""
    try:
        data = unquote_to_bytes(raw.encode("latin-1"))
        return limits.agent_id(data.decode("utf-8"))  # strict: no overlong form, no surrogate
    except (UnicodeError, InvalidInput) as error:
        raise Problem(404, f"the path names no agent: {error}") from None


def segment(agent: str) -> str:
    """The path segment of agent id ``agent`` (the inverse of ``agent_id``)."""
    if agent in (".", ".."):
        return "%2E" * len(agent)
    return quote(agent, safe="", encoding="utf-8")


def post_location(agent: str, post: int) -> str:
    return f"/v1/agents/{segment(agent)}/posts/{post}"


class RawPath:
    """ASGI middleware: route on the raw path; refuse an oversized request head (431)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = scope.get("headers") or []
        size = sum(len(name) + len(value) for name, value in headers)
        if len(headers) > MAX_HEADERS or size > MAX_HEADER_BYTES:
            problem = Problem(
                431,
                f"at most {MAX_HEADERS} headers of {MAX_HEADER_BYTES} bytes together, "
                f"got {len(headers)} of {size}",
            )
            await problem_response(problem)(scope, receive, send)
            return
        raw = scope.get("raw_path")
        if isinstance(raw, bytes):
            raw = absolute_target(raw) or raw  # GET http://host/path: the path (RFC 9112)
            path = raw.split(b"?", 1)[0].decode("latin-1")
        else:  # a server without raw_path: a decoded "/" in an id is lost, the rest kept
            path = quote(scope["path"], safe="/")
        scope = {**scope, "path": path}
        await self.app(scope, receive, send)
