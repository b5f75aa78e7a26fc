"""Errors as ``application/problem+json`` (RFC 9457), the only form any error takes (R39).

A typed error (an ``InboxCoreError``, or the error a post was rejected with) keeps its class
name as ``title`` and gets a ``type`` URI of its own; an error of HTTP itself has ``type``
``about:blank`` and its status phrase as ``title``, exactly as RFC 9110 words it
(``Content Too Large``, not an older wording). ``detail`` says what happened in words;
``status`` repeats the status code; extensions (``agent``, ``post``, ``outcome``,
``messageId``) say which post a 409 is about.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Final

from starlette.responses import Response

from inbox_core import limits
from inbox_core.errors import InboxCoreError

__all__ = [
    "PHRASES",
    "PROBLEM_TYPE",
    "Problem",
    "error_status",
    "json_bytes",
    "problem_response",
]

PROBLEM_TYPE: Final = "application/problem+json"
ERROR_TYPE_BASE: Final = "https://inbox-core.invalid/errors/"
"""``type`` of a typed error's problem: this base and the error's class name."""

PHRASES: Final = {
    400: "Bad Request",
    401: "Unauthorized",
    403: "Forbidden",
    404: "Not Found",
    405: "Method Not Allowed",
    406: "Not Acceptable",
    408: "Request Timeout",
    409: "Conflict",
    413: "Content Too Large",
    415: "Unsupported Media Type",
    421: "Misdirected Request",
    422: "Unprocessable Content",
    429: "Too Many Requests",
    431: "Request Header Fields Too Large",
    500: "Internal Server Error",
    503: "Service Unavailable",
}
"""The status phrases of RFC 9110 (section 15) for every status this front door sends."""

_UNPROCESSABLE: Final = frozenset({"InvalidInput", "InvalidSplice", "DecodeError", "NotPostable"})
_UNAVAILABLE: Final = frozenset({"LogUnavailable"})


def error_status(error: InboxCoreError) -> int:
    """The status of a typed error raised while serving a request: 422 for a request whose
    JSON is no command or message (it is never written), 503 for a store that failed (the
    request may be retried), 500 for anything else (a corrupt log, say)."""
    names = {cls.__name__ for cls in type(error).__mro__}
    if names & _UNPROCESSABLE:
        return 422
    if names & _UNAVAILABLE:
        return 503
    return 500


class Problem(Exception):
    """An error answer: raised by an endpoint, rendered by ``problem_response``."""

    def __init__(
        self,
        status: int,
        detail: str,
        *,
        title: str | None = None,
        headers: Mapping[str, str] | None = None,
        **extensions: Any,
    ) -> None:
        super().__init__(detail)
        self.status = status
        self.title = title or PHRASES.get(status, "Error")
        self.typed = title is not None
        self.detail = detail
        self.headers = dict(headers or {})
        self.extensions = extensions

    @classmethod
    def of(cls, error: InboxCoreError, status: int | None = None, **extensions: Any) -> Problem:
        """The problem of a typed error: its class name as ``title``."""
        code = error_status(error) if status is None else status
        return cls(code, _text(error), title=type(error).__name__, **extensions)

    def document(self) -> dict[str, Any]:
        kind = f"{ERROR_TYPE_BASE}{self.title}" if self.typed else "about:blank"
        head = {"type": kind, "title": self.title, "status": self.status, "detail": self.detail}
        return head | self.extensions


def _text(error: BaseException) -> str:
    try:
        return limits.storable_text(str(error), 4096)
    except Exception:  # an error whose str raises still gets an answer
        return type(error).__name__


def json_bytes(document: Any, *, in_steps: bool = False) -> bytes:
    """The compact UTF-8 JSON of ``document`` (``in_steps``: ``limits.dump_json``'s); all-ASCII
    escapes if a string holds what UTF-8 cannot encode (a lone surrogate echoed back), so an
    answer is always valid UTF-8."""
    text = limits.dump_json(document, in_steps=in_steps)
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(document, allow_nan=False, separators=(",", ":")).encode("ascii")


def problem_response(problem: Problem) -> Response:
    return Response(
        json_bytes(problem.document()),
        status_code=problem.status,
        headers=problem.headers,
        media_type=PROBLEM_TYPE,
    )
