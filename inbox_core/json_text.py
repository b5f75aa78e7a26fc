"""JSON text without recursion: what ``limits`` falls back to deep in a caller's stack.

``json.loads`` and ``json.dumps`` recurse once per nesting level, in C, and CPython
counts those levels against the recursion limit of the calling thread. A value within
``limits.MAX_DEPTH`` is cheap for them, unless the caller itself already stands close to
that limit (a host deep in its own framework): then a valid log would read as damaged
and a valid value would not encode. ``parse`` and ``dump`` here do the same work with an
explicit stack, using the ``json`` module's own non-recursive pieces for strings and
numbers, so they give the same result as ``json.loads(text)`` and
``json.dumps(document, ensure_ascii=False, allow_nan=False, separators=(",", ":"))`` for
every document those accept (and a ``ValueError`` or ``TypeError`` for the others), with
a few frames of room whatever the depth. They are slower; ``limits`` calls them only
when the fast path ran out of stack.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from json import decoder, encoder
from typing import Any, Final, cast

_scanstring: Final = cast(
    Callable[[str, int, bool], tuple[str, int]],
    decoder.scanstring,  # type: ignore[attr-defined]
)
_encode_string: Final[Callable[[str], str]] = encoder.encode_basestring

_WHITESPACE: Final = re.compile(r"[ \t\n\r]*")
_NUMBER: Final = re.compile(r"(-?(?:0|[1-9]\d*))(\.\d+)?([eE][-+]?\d+)?")
_CONSTANTS: Final = (
    ("null", None),
    ("true", True),
    ("false", False),
    ("NaN", float("nan")),
    ("Infinity", float("inf")),
    ("-Infinity", float("-inf")),
)


def _fail(what: str, index: int) -> ValueError:
    return ValueError(f"{what}: char {index}")


def _scalar(text: str, index: int, parse_int: Callable[[str], Any]) -> tuple[Any, int]:
    """The string, number or constant at ``index`` (``json.loads``' grammar), and its end."""
    if text.startswith('"', index):
        return _scanstring(text, index + 1, True)
    for word, value in _CONSTANTS:
        if text.startswith(word, index):
            return value, index + len(word)
    number = _NUMBER.match(text, index)
    if number is None:
        raise _fail("Expecting value", index)
    integer, fraction, exponent = number.groups()
    if fraction or exponent:
        return float(integer + (fraction or "") + (exponent or "")), number.end()
    return parse_int(integer), number.end()


def _key(text: str, index: int) -> tuple[str, int]:
    """An object's key and the index after its colon and the whitespace that follows."""
    if not text.startswith('"', index):
        raise _fail("Expecting property name enclosed in double quotes", index)
    key, index = _scanstring(text, index + 1, True)
    index = _WHITESPACE.match(text, index).end()  # type: ignore[union-attr]
    if not text.startswith(":", index):
        raise _fail("Expecting ':' delimiter", index)
    return key, _WHITESPACE.match(text, index + 1).end()  # type: ignore[union-attr]


def parse(text: str, parse_int: Callable[[str], Any] = int) -> Any:
    """``json.loads(text, parse_int=parse_int)`` with an explicit stack (``ValueError`` for
    what it refuses)."""
    if text.startswith("\ufeff"):
        raise _fail("Unexpected UTF-8 BOM (decode using utf-8-sig)", 0)
    skip = _WHITESPACE.match
    stack: list[tuple[Any, str | None]] = []  # open containers, with an object's key
    index = skip(text, 0).end()  # type: ignore[union-attr]
    while True:
        opening = text[index : index + 1]
        value: Any
        if opening == "{":
            index = skip(text, index + 1).end()  # type: ignore[union-attr]
            if not text.startswith("}", index):
                first_key, index = _key(text, index)
                stack.append(({}, first_key))
                continue
            value, index = {}, index + 1
        elif opening == "[":
            index = skip(text, index + 1).end()  # type: ignore[union-attr]
            if not text.startswith("]", index):
                stack.append(([], None))
                continue
            value, index = [], index + 1
        else:
            value, index = _scalar(text, index, parse_int)
        while True:  # hand the finished value to its container, closing what ends here
            index = skip(text, index).end()  # type: ignore[union-attr]
            if not stack:
                if index != len(text):
                    raise _fail("Extra data", index)
                return value
            container, key = stack[-1]
            if key is None:
                container.append(value)
            else:
                container[key] = value
            separator = text[index : index + 1]
            if separator == ",":
                index = skip(text, index + 1).end()  # type: ignore[union-attr]
                if key is not None:
                    next_key, index = _key(text, index)
                    stack[-1] = (container, next_key)
                break
            if separator != ("]" if key is None else "}"):
                raise _fail("Expecting ',' delimiter", index)
            stack.pop()
            value, index = container, index + 1


def _scalar_text(value: Any) -> str:
    """A scalar's JSON text as ``json.dumps`` writes it (``allow_nan=False``)."""
    if isinstance(value, str):
        return _encode_string(value)
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        return int.__repr__(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"Out of range float values are not JSON compliant: {value!r}")
        return float.__repr__(value)
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def _key_text(key: Any) -> str:
    """An object key as ``json.dumps`` writes it (str, or an int, float, bool or None)."""
    if isinstance(key, str):
        return _encode_string(key)
    if isinstance(key, (int, float)) or key is None:
        return _encode_string(_scalar_text(key))
    raise TypeError(f"keys must be str, int, float, bool or None, not {type(key).__name__}")


def dump(document: Any) -> str:
    """``json.dumps(document, ensure_ascii=False, allow_nan=False, separators=(",", ":"))``
    with an explicit stack (the same ``ValueError``/``TypeError`` kinds for what it refuses,
    a circular reference included)."""
    parts: list[str] = []
    stack: list[list[Any]] = [[None, iter((document,)), True]]  # container, items, first
    path: set[int] = set()  # the containers being written: a cycle is an error
    while stack:
        frame = stack[-1]
        container, items, first = frame
        item = next(items, _END)
        if item is _END:
            stack.pop()
            if container is not None:
                path.discard(id(container))
                parts.append("}" if isinstance(container, dict) else "]")
            continue
        frame[2] = False
        if not first:
            parts.append(",")
        if isinstance(container, dict):
            key, item = cast(tuple[Any, Any], item)
            parts.append(_key_text(key) + ":")
        if isinstance(item, dict):
            children: Any = item.items()
            parts.append("{")
        elif isinstance(item, (list, tuple)):
            children = item
            parts.append("[")
        else:
            parts.append(_scalar_text(item))
            continue
        if id(item) in path:
            raise ValueError("Circular reference detected")
        path.add(id(item))
        stack.append([item, iter(children), True])
    return "".join(parts)


_END: Final = object()
