"""Request bodies (R39): a JSON document of bounded size, read within a bounded time.

The checks come in this order, each before anything is read that it can decide without:
415 for a media type other than ``application/json`` (a ``charset`` parameter must say
UTF-8); 413 for a ``Content-Length`` over the limit (``maxDocumentSize``, formats §1), and
again as soon as the bytes read pass it (a chunked body); 408 when the body is not in after
``BODY_SECONDS`` (60 s by default); 429 when the bodies its token has in flight would pass
its budget; 400 for bytes that are not UTF-8 JSON. A document nested deeper than
``maxDocumentDepth`` is refused unparsed (422 ``InvalidInput``, like every reader of the
formats), and one holding more than ``maxCommandValues`` JSON values as soon as its bytes
so far show it (422 ``InvalidInput``, D47): counted as they arrive, before the rest is read.

A body is never parsed on the event loop: with the command built of it and its write, it
is in one of the app's threads (``run``), a JSON one past ``JSON_BYTES``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, Final, Protocol, TypeVar

from starlette.requests import ClientDisconnect, Request

from inbox_core import limits
from inbox_core.errors import InvalidInput
from inbox_core.http.problem import Problem

T = TypeVar("T")

__all__ = [
    "BODY_SECONDS",
    "COUNTED_BYTES",
    "JSON_BYTES",
    "BodyBudget",
    "Runs",
    "parse_body",
    "read_json",
]

BODY_SECONDS: Final = 60.0
"""The longest a client may take to send a body, by default (a slow client holds nothing
longer)."""
COUNTED_BYTES: Final = 2 * limits.MAX_COMMAND_VALUES
"""From this many bytes on, a body's JSON values are counted as it arrives: a value takes a
byte and, but for the document, follows a comma or a bracket, so a shorter body holds at
most ``maxCommandValues`` of them."""
JSON_BYTES: Final = 4096
"""A body of more bytes is parsed, built and written in one of the app's JSON threads
(``door.JSON_THREADS``), so that a client's big bodies queue there and never hold the store
threads every other request needs; a smaller one (at most about 0.6 ms of parsing, 3 us for
a typical message) is parsed and written in a store thread, in the hop its write takes
anyway (D47)."""


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


class Runs(Protocol):
    """``FrontDoor.run``: a call in one of the app's threads (``heavy``: a JSON one)."""

    def __call__(self, call: Callable[[], T], *, heavy: bool = ...) -> Awaitable[T]: ...


async def read_json(
    request: Request,
    *,
    limit: int,
    budget: BodyBudget,
    key: str,
    seconds: float = BODY_SECONDS,
    run: Runs | None = None,
    then: Callable[[Any], T] = lambda document: document,
) -> T:
    """``then(document)`` of the request's JSON document, or the ``Problem`` that says why
    not. With ``run`` (the app's threads), both run in one of its threads, never on the
    event loop: a store one for a body of at most ``JSON_BYTES``, a JSON one for a bigger
    body (D47). The bytes count against ``key``'s budget until ``then`` returns."""
    _media_type(request)
    declared = _declared_length(request, limit)
    held = 0
    try:
        if declared:
            budget.reserve(key, declared)
            held = declared
        chunks: list[bytes] = []
        size = 0
        values: limits.ValueCounter | None = None  # counted from 2 * maxCommandValues bytes on
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
                    if values is not None:
                        values.feed(chunk)
                    elif size >= COUNTED_BYTES:  # it may hold too many values: count them
                        values = limits.ValueCounter()
                        for earlier in chunks:
                            values.feed(earlier)
        except TimeoutError:
            raise Problem(408, f"the body did not arrive within {seconds:g} s") from None
        except ClientDisconnect:
            raise Problem(400, "the client left before its body arrived") from None
        except InvalidInput as error:  # too many values: refused before the rest is read
            raise Problem.of(error, 422) from None
        if run is None:
            return then(parse_body(chunks))
        return await run(lambda: then(parse_body(chunks)), heavy=size > JSON_BYTES)
    finally:
        budget.release(key, held)


def parse_body(chunks: list[bytes]) -> Any:
    """The JSON document of a body whose values were counted as it arrived (``read_json``):
    400 if it is not UTF-8 JSON, 422 past a limit of the formats."""
    try:
        text = b"".join(chunks).decode("utf-8")
    except UnicodeDecodeError as error:
        raise Problem(400, f"the body is not UTF-8: {error}") from None
    try:
        return limits.parse_command(text, counted=True)
    except InvalidInput as error:
        raise Problem.of(error, 422) from None
    except ValueError as error:
        raise Problem(400, f"the body is not JSON: {error}") from None
