"""Request bodies (R39): a JSON document of bounded size, read within a bounded time.

The checks come in this order, each before anything is read that it can decide without:
415 for a media type other than ``application/json`` (a ``charset`` parameter must say
UTF-8); 413 for a ``Content-Length`` over the limit (``maxDocumentSize``, formats §1), and
again as soon as the bytes read pass it (a chunked body); 408 when the body is not in after
``BODY_SECONDS`` (60 s by default); 429 when the bodies its token has in flight would pass
its budget; 400 for bytes that are not UTF-8 JSON. A document nested deeper than
``maxDocumentDepth`` is refused unparsed (422 ``InvalidInput``, like every reader of the
formats).
"""

from __future__ import annotations

import asyncio
from typing import Any, Final

from starlette.requests import ClientDisconnect, Request

from inbox_core import limits
from inbox_core.errors import InvalidInput
from inbox_core.http.problem import Problem

__all__ = ["BODY_SECONDS", "BodyBudget", "read_json"]

BODY_SECONDS: Final = 60.0
"""The longest a client may take to send a body, by default (a slow client holds nothing
longer)."""


class BodyBudget:
    """Bytes of request bodies in flight per key (a token, or a connection when the store has
    none: ``FrontDoor.budget_key``): at most ``limit`` each."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._used: dict[str, int] = {}

    def reserve(self, key: str, size: int) -> None:
        used = self._used.get(key, 0) + size
        if used > self.limit:
            raise Problem(
                429,
                f"{key} has {used - size} bytes of bodies in flight; at most {self.limit}",
                headers={"Retry-After": "1"},
            )
        self._used[key] = used

    def release(self, key: str, size: int) -> None:
        left = self._used.get(key, 0) - size
        if left > 0:
            self._used[key] = left
        else:
            self._used.pop(key, None)


def _media_type(request: Request) -> None:
    header = request.headers.get("content-type")
    if header is None:
        raise Problem(415, "a body is application/json; this request has no Content-Type")
    kind, *params = (part.strip() for part in header.split(";"))
    if kind.lower() != "application/json":
        raise Problem(415, f"a body is application/json, not {kind[:80]!r}")
    for param in params:
        name, _, value = param.partition("=")
        if name.strip().lower() == "charset" and value.strip().strip('"').lower() not in (
            "utf-8",
            "utf8",
        ):
            raise Problem(415, "a JSON body is UTF-8")


def _declared_length(request: Request, limit: int) -> int | None:
    header = request.headers.get("content-length")
    if header is None:
        return None
    if not header.isascii() or not header.strip().isdigit():
        raise Problem(400, "Content-Length is not a number")
    if len(header.strip()) > len(str(limit)) or int(header) > limit:
        raise Problem(413, f"the body is over {limit} bytes (maxDocumentSize)")
    return int(header)


async def read_json(
    request: Request, *, limit: int, budget: BodyBudget, key: str, seconds: float = BODY_SECONDS
) -> Any:
    """The request's JSON document, or the ``Problem`` that says why not. The bytes count
    against ``key``'s budget until the document is parsed."""
    _media_type(request)
    declared = _declared_length(request, limit)
    held = 0
    try:
        if declared:
            budget.reserve(key, declared)
            held = declared
        chunks: list[bytes] = []
        size = 0
        try:
            async with asyncio.timeout(seconds):
                async for chunk in request.stream():
                    size += len(chunk)
                    if size > limit:
                        raise Problem(413, f"the body is over {limit} bytes (maxDocumentSize)")
                    if size > held:
                        budget.reserve(key, size - held)
                        held = size
                    chunks.append(chunk)
        except TimeoutError:
            raise Problem(408, f"the body did not arrive within {seconds:g} s") from None
        except ClientDisconnect:
            raise Problem(400, "the client left before its body arrived") from None
        return _parse(b"".join(chunks))
    finally:
        budget.release(key, held)


def _parse(data: bytes) -> Any:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise Problem(400, f"the body is not UTF-8: {error}") from None
    try:
        return limits.parse_json(text)
    except InvalidInput as error:
        raise Problem.of(error, 422) from None
    except ValueError as error:
        raise Problem(400, f"the body is not JSON: {error}") from None
