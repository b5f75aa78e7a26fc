"""What the command line writes: exit statuses and lines on standard output and error.

Standard library only (``inbox-core --help`` imports it): ``out`` and ``err`` write one line
each, never a traceback for what it holds (``printable``, ``clip``, ``lines``); the plain-text
forms of events and notifications are ``inbox_core.cli.render``'s.
"""

from __future__ import annotations

import codecs
import json
import re
import sys
from typing import Final, TextIO

__all__ = ["EXIT_FAILURE", "EXIT_OK", "EXIT_USAGE", "clip", "err", "lines", "out", "printable"]

EXIT_OK: Final = 0
EXIT_FAILURE: Final = 1
EXIT_USAGE: Final = 2


# What a line written to a terminal or a pipe never holds raw: lone surrogates (no encoding
# has them), control characters but newline and tab (C0, DEL, C1: they move the cursor or
# start an escape sequence), the line and paragraph separators, and the bidirectional
# controls (they reorder what a terminal shows).
_UNSAFE: Final = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069\ud800-\udfff]"
)
_UNSAFE_IN_TEXT: Final = re.compile(f"[\n\t{_UNSAFE.pattern[1:-1]}]")


def _escape(found: re.Match[str]) -> str:
    return f"\\u{ord(found.group()):04x}"


def printable(text: str) -> str:
    """``text`` for one field of a plain-text line: every character ``out`` would escape,
    and newline and tab too, as a ``\\uXXXX`` escape (a hostile id cannot forge a line)."""
    return _UNSAFE_IN_TEXT.sub(_escape, text)


def _json_escapes(error: UnicodeError) -> tuple[str, int]:
    """The codec error handler of ``_write``: what a stream's encoding cannot hold, as JSON
    escapes (valid inside a JSON string, readable in plain text)."""
    assert isinstance(error, UnicodeEncodeError)
    chunk = error.object[error.start : error.end]
    escaped = json.dumps(chunk)[1:-1]  # ASCII; astral characters as surrogate pairs
    return escaped, error.end


codecs.register_error("inbox_core.json_escapes", _json_escapes)


def _write(stream: TextIO | None, text: str) -> None:
    """One line on ``stream``, never a traceback for what it holds: the characters of
    ``_UNSAFE`` escaped, and what the stream's encoding cannot hold (an ASCII locale)
    written as JSON escapes. Both escapes mean the same inside a JSON string, so JSON
    output stays JSON."""
    if stream is None:  # pragma: no cover - no console (pythonw)
        return
    line = _UNSAFE.sub(_escape, text) + "\n"
    try:
        stream.write(line)
    except UnicodeEncodeError:
        encoding = getattr(stream, "encoding", None) or "utf-8"
        stream.write(line.encode(encoding, "inbox_core.json_escapes").decode(encoding))
    stream.flush()


LINE_LIMIT: Final = 2000
"""Characters of one line of a diff or a report a human reads; the rest is cut."""


def clip(line: str, limit: int = LINE_LIMIT) -> str:
    """``line`` cut to ``limit`` characters, saying how many more it had (a port or a vector
    may hold a 40 MB string: its diff must not print it 163 times)."""
    if len(line) <= limit:
        return line
    return f"{line[:limit]}… ({len(line) - limit} more characters)"


def lines(text: str) -> list[str]:
    """The lines of a multi-line report, split on newline only (``str.splitlines`` would also
    split at U+2028 and its kind inside a quoted string), each ``clip``-ped."""
    return [clip(line) for line in text.split("\n")]


def out(text: str = "") -> None:
    _write(sys.stdout, text)


def err(text: str) -> None:
    _write(sys.stderr, text)
