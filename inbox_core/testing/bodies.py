"""Hostile request bodies that cost by their number of JSON values, not their bytes (issue 37).

A followup body is small JSON around one repeated item: ``body(kind, count)`` is the UTF-8
text of ``POST .../followup`` whose message carries ``count`` items of ``kind`` (in its
metadata, its content blocks or its contexts). Each item is a few bytes, and each costs a
parser, a checker and an encoder a Python object or more: 700,000 empty objects are 2.1 MB
of text that took seconds of CPU to parse, check, apply and encode for a stream, on the
event loop (issue 37's figures). The front door must refuse what passes
``limits.MAX_COMMAND_VALUES`` before building anything, and handle what stays within it
off the event loop. Shared by the tests (tests/http/test_amplification.py) and the
benchmark (benchmarks/amplify.py).
"""

from __future__ import annotations

import json
from typing import Any, Final

from inbox_core import limits
from inbox_core.codec import command_to_json
from inbox_core.http.posting import intent_command

__all__ = [
    "ISSUE_BODIES",
    "KINDS",
    "at_the_limit",
    "body",
    "command_values_of",
    "values_in",
    "values_of",
]

_ITEMS: Final = {
    "objects": b"{}",
    "arrays": b"[]",
    "zeros": b"0",
    "strings": b'""',
    "floats": b"1.2345678901234567e-300",  # the slowest float to read and to write back
}
"""Items of a metadata array: the cheapest text per JSON value of each kind."""

KINDS: Final = (*_ITEMS, "blocks", "contexts")
"""Every kind ``body`` makes: the metadata items, plus empty content blocks (``{}`` each,
which no block check takes) and contexts (``{"content": []}`` each, one message apiece)."""

ISSUE_BODIES: Final = {"2.1 MB": ("objects", 700_000), "16.8 MB": ("objects", 5_600_000)}
"""Issue 37's two bodies: 700,000 empty objects (2.1 MB, valid) and 5,600,000 (16.8 MB,
whose metadata is past ``maxJsonSize``)."""


def body(kind: str, count: int) -> bytes:
    """The followup body whose message carries ``count`` items of ``kind``."""
    if kind == "blocks":
        return b'{"message":{"content":[' + b",".join([b"{}"] * count) + b"]}}"
    if kind == "contexts":
        items = b",".join([b'{"content":[]}'] * count)
        return b'{"message":{"content":"x"},"contexts":[' + items + b"]}"
    items = b",".join([_ITEMS[kind]] * count)
    return b'{"message":{"content":"x","metadata":{"k":[' + items + b"]}}}"


def values_of(kind: str, count: int) -> int:
    """The number of JSON values of ``body(kind, count)`` (``limits``' count: every scalar,
    array and object, the document included; keys are not values)."""
    if kind == "blocks":
        return 3 + count  # the body, the message, the content array
    if kind == "contexts":
        return 4 + 2 * count  # the body, the message, its text, the contexts array
    return 5 + count  # the body, the message, its text, the metadata, the array


def command_values_of(kind: str, count: int) -> int:
    """The JSON values of the command the front door posts for ``body(kind, count)``: the
    body's, and what it adds (an id, a role and a source per message, its text's block; the
    send's target, wakeup and contexts)."""
    base = _posted_values(kind, 0)
    return base + (_posted_values(kind, 1) - base) * count


def at_the_limit(kind: str, most: int = limits.MAX_COMMAND_VALUES) -> int:
    """The most items of ``kind`` a followup body may carry: its command then holds at most
    ``most`` JSON values, one more item and it holds more."""
    base = _posted_values(kind, 0)
    return (most - base) // (_posted_values(kind, 1) - base)


def _posted_values(kind: str, count: int) -> int:
    return values_in(command_to_json(intent_command("followup", json.loads(body(kind, count)))))


def values_in(document: Any) -> int:
    """The JSON values of a parsed document, counted the plain recursive way (what
    ``limits``' counters are held to): every scalar, array and object, the document itself
    included, no object key."""
    if isinstance(document, dict):
        return 1 + sum(values_in(item) for item in document.values())
    if isinstance(document, list):
        return 1 + sum(values_in(item) for item in document)
    return 1
