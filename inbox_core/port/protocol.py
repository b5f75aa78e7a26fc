"""The port protocol (specs/ports.md, R38): every message declared once, here.

A port is a program that reads requests from its standard input and writes
one response per request to its standard output, each a JSON object on one
line (UTF-8, ``"\\n"``-terminated; the JSON Lines rules of formats §1, Limits).
``inbox-core conform`` drives a port with these messages and
``python -m inbox_core.port`` answers them with the reference; both build and
check them with the functions below, so the two sides cannot disagree on a key.

A request is ``{"op": OP, ...}`` with the keys ``REQUESTS[OP]``; a response is
``{"ok": true, ...}`` with the keys ``RESPONSES[OP]``, or ``{"ok": false,
"error": NAME, "message": TEXT}`` (plus ``"seq"`` for a ``ReplayError`` of
``load``), where NAME is a pinned error name of the brief (§9). What each op
means is specs/ports.md's to say.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Final

from inbox_core import limits
from inbox_core.errors import InboxCoreError, shown

PROTOCOL_VERSION: Final = 1

FOLD_PARTS: Final = ("fates", "transcript", "goalRounds")
"""The parts that are folds of a log; ``fold`` answers one key per declared fold part."""

PARTS: Final = ("inbox", "core", *FOLD_PARTS)
"""What a port may implement. ``inbox``: the two pending lists under sends that do not wake
(``queue``, ``inject``, unguarded), splices of quiet entries, ``clear``, ``replace`` and
``remove`` on an idle agent; ``core``: every command, ``load`` and the whole projection
(``inbox`` included); ``fates``, ``transcript`` and ``goalRounds``: the folds of ``fold``."""

REQUESTS: Final[dict[str, tuple[str, ...]]] = {
    "hello": ("protocol",),
    "load": ("log",),
    "apply": ("command",),
    "projection": (),
    "fold": ("log",),
    "bye": (),
}
"""op -> the keys its request carries besides ``op``."""

RESPONSES: Final[dict[str, tuple[str, ...]]] = {
    "hello": ("protocol", "name", "parts"),
    "load": ("projection",),
    "apply": ("durable", "notifications"),
    "projection": ("projection",),
    "fold": (),  # one key per fold part the port declared (FOLD_PARTS)
    "bye": (),
}
"""op -> the keys of its success response besides ``ok``."""

ERROR_KEYS: Final = ("error", "message")


class ProtocolError(InboxCoreError):
    """A message breaks the protocol: not one JSON object per line, an unknown op, a
    missing or unknown key, a wrong type. The message says which."""


def request(op: str, **fields: Any) -> dict[str, Any]:
    """A request message (its keys checked against ``REQUESTS``)."""
    document = {"op": op, **fields}
    check_request(document)
    return document


def check_request(document: object) -> dict[str, Any]:
    """``document`` if it is a well-formed request, else ``ProtocolError``."""
    if not isinstance(document, dict) or not isinstance(document.get("op"), str):
        raise ProtocolError(f'a request is an object with a string "op", got {shown(document)}')
    op = document["op"]
    if op not in REQUESTS:
        raise ProtocolError(f"unknown op {shown(op)}; the ops are {', '.join(REQUESTS)}")
    _keys(document, {"op", *REQUESTS[op]}, {"op", *REQUESTS[op]}, f"request {op!r}")
    if op == "hello" and type(document["protocol"]) is not int:  # not true, not 1.0
        raise ProtocolError(
            f'request "hello": "protocol" is an integer, got {shown(document["protocol"])}'
        )
    if op in ("load", "fold") and not isinstance(document["log"], list):
        raise ProtocolError(f'request {op!r}: "log" is a list of durable events')
    if op == "apply" and not isinstance(document["command"], dict):
        raise ProtocolError('request "apply": "command" is a command object')
    return document


def success(op: str, **fields: Any) -> dict[str, Any]:
    return {"ok": True, **fields}


def failure(error: BaseException) -> dict[str, Any]:
    """The response of a typed rejection: its class name (a pinned name), its message, and
    for a ``ReplayError`` the seq of the first event replay rejects."""
    document: dict[str, Any] = {"ok": False, "error": type(error).__name__, "message": str(error)}
    seq = getattr(error, "seq", None)
    if isinstance(seq, int):
        document["seq"] = seq
    return document


def check_response(op: str, document: object, parts: tuple[str, ...] = PARTS) -> dict[str, Any]:
    """``document`` if it is a well-formed response to ``op``, else ``ProtocolError``."""
    if not isinstance(document, dict) or not isinstance(document.get("ok"), bool):
        raise ProtocolError(f'a response is an object with a boolean "ok", got {shown(document)}')
    if not document["ok"]:
        _keys(
            document, {"ok", *ERROR_KEYS}, {"ok", *ERROR_KEYS, "seq"}, f"error response to {op!r}"
        )
        if not isinstance(document["error"], str) or not isinstance(document["message"], str):
            raise ProtocolError(f'error response to {op!r}: "error" and "message" are strings')
        return document
    keys = RESPONSES[op] if op != "fold" else tuple(p for p in FOLD_PARTS if p in parts)
    _keys(document, {"ok", *keys}, {"ok", *keys}, f"response to {op!r}")
    if op == "hello":
        if not isinstance(document["parts"], list) or not all(
            part in PARTS for part in document["parts"]
        ):
            raise ProtocolError(f'response to "hello": "parts" is a list drawn from {PARTS}')
        if not isinstance(document["name"], str) or type(document["protocol"]) is not int:
            raise ProtocolError('response to "hello": "name" is a string, "protocol" an integer')
    if op == "apply" and not (
        isinstance(document["durable"], list) and isinstance(document["notifications"], list)
    ):
        raise ProtocolError('response to "apply": "durable" and "notifications" are lists')
    return document


def _keys(document: Mapping[str, Any], required: set[str], allowed: set[str], what: str) -> None:
    missing, unknown = sorted(required - set(document)), sorted(set(document) - allowed)
    if missing or unknown:
        said = [
            f"missing {', '.join(missing)}" if missing else "",
            f"unknown {', '.join(unknown)}" if unknown else "",
        ]
        raise ProtocolError(f"{what}: {'; '.join(s for s in said if s)}")


def encode(document: Mapping[str, Any]) -> str:
    """One message as its line (``"\\n"`` included); the JSON Lines escapes of formats §1.

    Valid UTF-8 whatever ``document`` holds: a lone surrogate (echoed from a request that
    escaped one) makes the whole line ASCII, with JSON escapes."""
    text = limits.dump_json(document)
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            text = json.dumps(document, allow_nan=False, separators=(",", ":"))
    return text + "\n"


def decode(line: str) -> Any:
    """The JSON of one line; ``ProtocolError`` if it is not JSON within ``limits``
    (``NaN`` and ``Infinity``, which Python's reader takes, are not JSON either)."""
    try:
        document = limits.parse_json(line)
        if "NaN" in line or "Infinity" in line:  # rare: parse again, refusing the constants
            json.loads(line, parse_constant=_not_json)
    except (ValueError, InboxCoreError) as error:
        raise ProtocolError(f"not a JSON line ({error}): {shown(line)}") from None
    return document


def _not_json(constant: str) -> Any:
    raise ValueError(f"{constant} is not JSON")
