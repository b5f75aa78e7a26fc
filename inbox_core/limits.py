"""What a value may hold: the limits every writer checks and every reader can rely on.

A value that exists is well formed (D17), and since issue 17 it is also
*storable*: whatever a constructor accepts round-trips through every codec
and every store, and any reader (replay, the CLI, a port in another
language) can read it back without recursion the data controls. So the
limits are part of the format, stated once here as data: the validators
check them, ``tools/gen_schemas.py`` writes them into the JSON Schemas, and
specs/formats.md prints this table (``LIMITS``).

Strings are Unicode scalar values only: a lone surrogate (``"\\ud800"``)
cannot be encoded as UTF-8, so no store could hold it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any, Final

from inbox_core import json_text
from inbox_core.errors import InvalidInput, shown

MAX_DEPTH: Final = 64
"""Nesting of arrays and objects inside one opaque JSON value (content blocks, metadata,
host record data, extension source fields); a scalar has depth 0, ``[]`` depth 1."""

MAX_SAFE_INTEGER: Final = 2**53 - 1
"""Turns, steps, rounds, splice coordinates and seqs: exact in every JSON reader."""

MAX_JSON_INTEGER: Final = 2**63 - 1
"""Integers inside opaque JSON lie in ``[-MAX_JSON_INTEGER - 1, MAX_JSON_INTEGER]`` (int64)."""

MAX_JSON_SIZE: Final = 2**24
"""Size of one opaque JSON value, measured as the length of its compact JSON text with each
string character counted once (before escaping) and each number at its widest (20 for an
integer, 24 for a float), so an upper bound of that text's length for text that needs no
escapes. About 16 MiB of text; the same bound holds for the characters of any single string
field (a section's text, an error message)."""

MAX_VALUE_SIZE: Final = 2**25
"""Size of one message (its id, content blocks, source and metadata together, in the measure
of ``MAX_JSON_SIZE``, plus a fixed reserve for its keys and its entry's) and of each list one
command carries, summed: an entry with its contexts, a splice's entries, an ``Enter``'s
messages, a report's records. So no command of accepted values is too big for a post or a
stored event (``MAX_DOCUMENT_SIZE``)."""

JSON_BYTES_PER_UNIT: Final = 6
"""UTF-8 bytes of JSON text per unit of size, at most: the measure counts a string character
once, and its JSON form is at most six bytes (an escape such as ``\\u001f``; a character is at
most four bytes raw); everything else is counted at its full width."""

MAX_DOCUMENT_SIZE: Final = JSON_BYTES_PER_UNIT * MAX_VALUE_SIZE + 2**16
"""UTF-8 bytes (so also characters) of the compact JSON text of any caller command (a post)
and of any durable event a command writes: ``JSON_BYTES_PER_UNIT`` per unit of the
``MAX_VALUE_SIZE`` it carries, plus 64 KiB for its envelope (keys, numbers, a message id of
``MAX_ID_LENGTH``). About 192 MiB: below every store's limit for one row (SQLite's default
of 10^9 bytes, PostgreSQL's 1 GiB). A report carries at most two such lists (an ``Enter``'s
messages and its records), each one event per message or record."""

MAX_ID_LENGTH: Final = 1024
"""Characters of a MessageId, a goal id, a tool call id, a plugin name or a record type."""

MAX_AGENT_ID_LENGTH: Final = 256
"""Characters of an agent id, the same on every store (an index key in PostgreSQL)."""

MAX_HOPS: Final = 16
"""Hops of one chain of sends between agents (R45): a post past it is ``HopLimit``. A count
the stores keep with a post, not a field of any value here (so not in ``LIMITS``)."""
MAX_OUTPUT_PARTS: Final = 1024
"""Parts of one step's output (R43, ``inbox_core.output``): its ``host/output`` record and
every snapshot of it. A publisher that would go past it is cut (a marker part, never an
error)."""

MAX_OUTPUT_SIZE: Final = 2**22
"""Size of one step's output (R43): per part 64 and the characters of its strings (texts,
ids, names, arguments, contents), so its ``host/output`` record, about 4 Mi characters at
most, always fits a step's report beside the host's own records. A publisher that would go
past it is cut (the text that fits, then a marker part, never an error)."""

MAX_DOCUMENT_DEPTH: Final = MAX_DEPTH + 32
"""Nesting of a whole JSON document a reader parses (a stored event, a JSON Lines line, a
vector file, a port message): the deepest value plus the envelopes around it. A deeper text
is refused before a parser sees it, so no parser recurses further than this."""

_SURROGATE: Final = re.compile("[\ud800-\udfff]")
_STRING_OR_BRACKET: Final = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}]')


def scalar_values(value: str) -> bool:
    """Whether ``value`` holds no lone surrogate: whether it can be encoded as UTF-8."""
    return value.isascii() or _SURROGATE.search(value) is None


def scalar_text(value: str, what: str) -> str:
    """``value`` if it holds no lone surrogate (it can be encoded as UTF-8), else InvalidInput."""
    if not scalar_values(value):
        raise InvalidInput(f"{what} holds a lone surrogate, which no store can encode")
    return value


def storable_text(text: str, limit: int = MAX_JSON_SIZE) -> str:
    """``text`` made a string every store can hold, for a text nobody checked (an exception's
    ``str``): each lone surrogate written as its escape (``"\\ud83d"``, six characters),
    and a text past ``limit`` characters cut, ending with a marker that says so."""
    text = str.__str__(text)  # a str subclass's own methods never run here
    if not text.isascii() and _SURROGATE.search(text) is not None:
        text = text.encode("utf-8", "backslashreplace").decode("utf-8")  # only they fail
    if len(text) > limit:
        marker = f"… [cut: {len(text)} characters]"
        text = text[: max(limit - len(marker), 0)] + marker[:limit]
    return text


def string(value: str, what: str) -> str:
    """A string field: scalar values only, at most ``MAX_JSON_SIZE`` characters."""
    if len(value) > MAX_JSON_SIZE:
        raise InvalidInput(f"{what} has at most {MAX_JSON_SIZE} characters, got {len(value)}")
    return scalar_text(value, what)


def value_size(size: int, what: str) -> int:
    """``size`` (a message's, or a list's sum) if within ``MAX_VALUE_SIZE``, else InvalidInput."""
    if size > MAX_VALUE_SIZE:
        raise InvalidInput(f"{what} must have a size of at most {MAX_VALUE_SIZE}, got {size}")
    return size


def identifier(value: str, what: str) -> str:
    """An id or a name: scalar values only, at most ``MAX_ID_LENGTH`` characters."""
    if len(value) > MAX_ID_LENGTH:
        raise InvalidInput(f"{what} has at most {MAX_ID_LENGTH} characters, got {len(value)}")
    return scalar_text(value, what)


def safe_integer(value: int, what: str, error: type[Exception] = InvalidInput) -> int:
    """A turn, step, round, seq or splice coordinate: within +-``MAX_SAFE_INTEGER``."""
    if not -MAX_SAFE_INTEGER <= value <= MAX_SAFE_INTEGER:
        raise error(f"{what} must lie within +-{MAX_SAFE_INTEGER}, got {short_int(value)}")
    return value


def short_int(value: int) -> str:
    """An int for an error message without ``str(int)``, which refuses 4,300+ digits."""
    digits = value.bit_length() * 30103 // 100000 + 1  # log10(2) = 0.30103
    return f"an integer of about {digits} digits" if digits > 30 else str(value)


def agent_id(value: object) -> str:
    """An agent id: a non-empty str of at most ``MAX_AGENT_ID_LENGTH`` characters, with no NUL
    and no lone surrogate. Every store checks it when its log object is built."""
    if not isinstance(value, str) or not value:
        raise InvalidInput(f"agent_id must be a non-empty str, got {shown(value)}")
    if len(value) > MAX_AGENT_ID_LENGTH:
        raise InvalidInput(
            f"agent_id has at most {MAX_AGENT_ID_LENGTH} characters, got {len(value)}"
        )
    if "\x00" in value:
        raise InvalidInput("agent_id must not contain NUL")
    return scalar_text(value, "agent_id")


def parse_json(text: str) -> Any:
    """``json.loads(text)`` for a document no writer could nest deeper than
    ``MAX_DOCUMENT_DEPTH``; a deeper one is ``InvalidInput``, a malformed one ``ValueError``.

    Counting brackets is one C pass (none for a text too short to hold that many); only a
    text with more opening brackets than the limit is scanned token by token (strings
    skipped), so the common case costs two ``count`` calls.
    The parse needs no stack the data controls: deep in a caller's stack, where
    ``json.loads`` runs out of room, ``json_text.parse`` gives the same value.
    """
    if len(text) > MAX_DOCUMENT_DEPTH and text.count("[") + text.count("{") > MAX_DOCUMENT_DEPTH:
        depth = 0
        for token in _STRING_OR_BRACKET.finditer(text):
            first = text[token.start()]
            if first in "[{":
                depth += 1
                if depth > MAX_DOCUMENT_DEPTH:
                    raise InvalidInput(f"JSON text nests deeper than {MAX_DOCUMENT_DEPTH} levels")
            elif first in "]}":
                depth -= 1
    try:  # json.loads without its wrappers: the scanner at 0, the whole text consumed
        document, end = _scan(text, 0)
        if end == len(text):
            return document
    except (StopIteration, ValueError, RecursionError):
        pass  # leading whitespace, a BOM, bad JSON: json.loads reads it, or says why
    try:
        return json.loads(text)
    except RecursionError:  # a caller already deep in its own stack: the same, iteratively
        return json_text.parse(text)
    except ValueError:
        _refuse_long_integers(text)
        raise


def _refuse_long_integers(text: str) -> None:
    """``InvalidInput`` if ``text`` is JSON that only an integer past ``int``'s digit limit
    (4,300 digits) kept from being read: valid JSON, so a value out of bounds (int64), not
    malformed text."""
    longest = 0

    def integer(digits: str) -> int:
        nonlocal longest
        longest = max(longest, len(digits.lstrip("-")))
        return 0

    try:
        json.loads(text, parse_int=integer)
    except (ValueError, RecursionError):
        return  # malformed indeed
    raise InvalidInput(
        f"a JSON integer of {longest} digits: integers lie within int64 (maxJsonInteger)"
    )


_scan: Final[Callable[[str, int], tuple[Any, int]]] = json.JSONDecoder().scan_once  # type: ignore[attr-defined]
"""What ``json.loads`` calls, after a BOM check and skipping whitespace, to read a value
(with the same defaults: NaN and Infinity read as floats, as ``json.loads`` reads them)."""


LINE_BREAKS: Final = ("\u0085", "\u2028", "\u2029")
"""The characters ``str.splitlines`` breaks on that ``json.dumps`` leaves raw (it escapes
the others, all below U+0020)."""


def dump_json(document: Any) -> str:
    """The compact JSON text of ``document`` with ``LINE_BREAKS`` escaped: one line for
    every reader (stored events, JSON Lines, port messages). The writer ``parse_json``
    reads."""
    try:
        text = json.dumps(document, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    except RecursionError:  # a caller already deep in its own stack: the same, iteratively
        text = json_text.dump(document)
    if not text.isascii():
        for char in LINE_BREAKS:
            if char in text:  # only inside strings, where the escape means the same
                text = text.replace(char, f"\\u{ord(char):04x}")
    return text


LIMITS: Final = {
    "maxDepth": MAX_DEPTH,
    "maxDocumentDepth": MAX_DOCUMENT_DEPTH,
    "maxSafeInteger": MAX_SAFE_INTEGER,
    "maxJsonInteger": MAX_JSON_INTEGER,
    "maxJsonSize": MAX_JSON_SIZE,
    "maxValueSize": MAX_VALUE_SIZE,
    "maxDocumentSize": MAX_DOCUMENT_SIZE,
    "maxIdLength": MAX_ID_LENGTH,
    "maxAgentIdLength": MAX_AGENT_ID_LENGTH,
    "maxOutputParts": MAX_OUTPUT_PARTS,
    "maxOutputSize": MAX_OUTPUT_SIZE,
}
"""The table specs/formats.md prints and the schemas read (camelCase, as in the formats)."""
