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

import functools
import itertools
import json
import re
from collections.abc import Callable
from itertools import accumulate
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

MAX_COMMAND_VALUES: Final = 2**14
"""JSON values of one command document a decoder reads (a post, an HTTP body, a port's
``apply``): every scalar, array and object, the document itself included, and no object
key. What parsing, checking, applying and encoding a command costs grows with its values
far more than with its bytes (700,000 empty objects are 2.1 MB, and took seconds of CPU
at each step, issue 37), so a document with more is refused, ``InvalidInput``, before
anything is built from it: a reader of its text judges the text before parsing it
(``ValueCounter``, ``judge_values``: every value written counts, a repeated key's too), a
decoder the parsed document before reading a field (``command_values``)."""

LONG_TEXT: Final = 2 * MAX_COMMAND_VALUES
"""Characters from which a JSON text is read in steps (``parse_json``, ``parse_command``):
fewer hold too few values for the ``json`` scanner to hold the GIL long (D47)."""
STEP_VALUES: Final = 4096
"""A document of more JSON values is written in steps (``dump_json``, decided by
``few_values`` where no size is known): below, ``json.dumps`` holds the GIL some 30 ms at
the most, for the costliest values (D47)."""
LONG_SIZE: Final = 2**16
"""The size (``limits``' measure) past which a value is written in steps (``dump_json``):
below it, ``json.dumps`` holds the GIL 20 ms at the most, for the costliest values (floats
whose shortest digits are hard to find, such as ``1.2345678901234567e-300``) (D47)."""

_SURROGATE: Final = re.compile("[\ud800-\udfff]")
_STRING: Final = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"')
_NOT_BRACKETS: Final = str.maketrans("", "", " \t\n\r,:.+-0123456789Eaeflnrstu")
"""Whatever may lie outside strings in JSON but brackets (the rest of a malformed text,
if anything is left, counts no level)."""
_DEPTHS: Final = {"[": 1, "{": 1, "]": -1, "}": -1}
_NONE: Final = itertools.repeat(0)
_WINDOW: Final = 1 << 20


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


class ValueCounter:
    """The JSON values of a text read piece by piece, as UTF-8 bytes (an HTTP body as it
    arrives): ``feed`` raises ``InvalidInput`` as soon as they pass ``most``, judged on the
    bytes alone, before anything is parsed or built (D47).

    Every value but the document follows a comma or an opening bracket: outside strings,
    the values are exactly one, plus one per comma, plus one per container that is not
    empty (for valid JSON; malformed text gets some count, and its parse says what is
    wrong). A piece is counted in C: its blanks and escaped backslashes and quotes taken
    out, its strings are what lies between the quotes left, and of the rest (made of
    commas, brackets, colons and scalars) three ``count`` calls find the commas and the
    brackets, two more the empty containers. What a cut between two pieces hides is
    carried over: whether it fell in a string, after an escaping backslash, or between an
    opening bracket and what follows it. Blanks inside strings go too: in JSON they never
    stand next to a quote or a backslash that they would change.
    """

    __slots__ = ("_escaped", "_inside", "_opened", "count", "most")

    def __init__(self, most: int = MAX_COMMAND_VALUES) -> None:
        self.most = most
        self.count = 1  # the document
        self._inside = 0  # the last piece ended within a string
        self._escaped = False  # ...after a backslash that escapes the next character
        self._opened = b""  # ...in an opening bracket (outside strings)

    def feed(self, piece: bytes) -> None:
        piece = piece.translate(None, b" \t\n\r")
        if self._escaped and piece:
            piece, self._escaped = piece[1:], False
        if b"\\" in piece:
            piece = piece.replace(b"\\\\", b"").replace(b'\\"', b"")
            if piece.endswith(b"\\"):
                piece, self._escaped = piece[:-1], True
        parts = piece.split(b'"')
        structure = b"0".join(parts[self._inside :: 2])  # a string: one character
        self._inside ^= (len(parts) - 1) & 1
        count = self.count + structure.count(b",") + structure.count(b"[") + structure.count(b"{")
        count -= structure.count(b"[]") + structure.count(b"{}")
        if self._opened and structure and structure[0] == _CLOSES[self._opened[0]]:
            count -= 1  # an empty container, cut in two
        if self._inside:
            self._opened = b""
        elif structure:
            self._opened = structure[-1:] if structure[-1] in _CLOSES else b""
        self.count = count
        if count - (self._opened != b"") > self.most:  # that bracket may yet close at once
            raise InvalidInput(
                f"a command document holds at most {self.most} JSON values (maxCommandValues)"
            )


_CLOSES: Final = {ord("["): ord("]"), ord("{"): ord("}")}


def judge_values(text: str, most: int = MAX_COMMAND_VALUES) -> None:
    """``InvalidInput`` if the JSON ``text`` holds more than ``most`` values (``ValueCounter``
    over it, a window of ``_WINDOW`` characters at a time: a thread judging it lets others
    run between windows). A value takes a character and, but for the document, follows a
    comma or an opening bracket: a text of fewer than ``2 * most`` characters, or with
    fewer commas and brackets than ``most``, passes at once."""
    if len(text) < 2 * most or text.count(",") + text.count("[") + text.count("{") < most:
        return
    counter = ValueCounter(most)
    for start in range(0, len(text), _WINDOW):
        counter.feed(text[start : start + _WINDOW].encode("utf-8", "surrogatepass"))


def command_values(document: object, most: int = MAX_COMMAND_VALUES) -> None:
    """``judge_values`` of a parsed document: ``InvalidInput`` if it holds more than
    ``most`` values."""
    if not few_values(document, most):
        raise InvalidInput(
            f"a command document holds at most {most} JSON values (maxCommandValues)"
        )


def few_values(document: object, most: int) -> bool:
    """Whether a parsed document holds at most ``most`` JSON values (its dicts and lists
    walked, without recursion, until it is known)."""
    count = 1
    if count > most:
        return False
    stack = [document] if type(document) is dict or type(document) is list else []
    while stack:
        node = stack.pop()
        items = node.values() if type(node) is dict else node
        count += len(items)
        if count > most:
            return False
        for item in items:
            kind = type(item)
            if kind is dict or kind is list:
                stack.append(item)
    return True


def parse_json(text: str) -> Any:
    """``json.loads(text)`` for a document no writer could nest deeper than
    ``MAX_DOCUMENT_DEPTH``; a deeper one is ``InvalidInput``, a malformed one ``ValueError``.

    Counting brackets is one C pass (none for a text too short to hold that many); only a
    text with more opening brackets than the limit has its depth summed (``_judge_depth``),
    so the common case costs two ``count`` calls.
    The parse needs no stack the data controls: deep in a caller's stack, where
    ``json.loads`` runs out of room, ``json_text.parse`` gives the same value. A text of
    ``LONG_TEXT`` characters or more is read in steps: the scanner calls a function of ours
    for each number and object, where the thread reading it lets others run (D47).
    """
    if len(text) > MAX_DOCUMENT_DEPTH and text.count("[") + text.count("{") > MAX_DOCUMENT_DEPTH:
        _judge_depth(text)
    long = len(text) >= LONG_TEXT
    try:  # json.loads without its wrappers: the scanner at 0, the whole text consumed
        document, end = (_scan_in_steps if long else _scan)(text, 0)
        if end == len(text):
            return document
    except (StopIteration, ValueError, RecursionError):
        pass  # leading whitespace, a BOM, bad JSON: json.loads reads it, or says why
    return _loads(text, _STEPS if long else None)


def parse_command(text: str, *, counted: bool = False) -> Any:
    """``parse_json`` of a command document from outside (a post, an HTTP body), whose cost
    is bounded before it is parsed (D47): first its values (``judge_values``, unless the
    caller ``counted`` them already with a ``ValueCounter``), then its depth.

    A text of ``LONG_TEXT`` characters or more is read in steps, as ``parse_json`` reads it
    (the scanner alone holds the GIL for the whole text), and an integer literal of more
    than 64 digits in it (far past int64, outside every range of the formats) is read as
    an integer of as many digits that costs nothing to make, refused as the literal would
    be (``int`` takes time quadratic in the digits: 2 MB of 4,299-digit literals held the
    parser 0.1 s). A shorter text holds too few for either to matter.
    """
    if not counted:
        judge_values(text)
    if len(text) > MAX_DOCUMENT_DEPTH and text.count("[") + text.count("{") > MAX_DOCUMENT_DEPTH:
        _judge_depth(text)
    long = len(text) >= LONG_TEXT
    try:
        document, end = (_scan_command if long else _scan)(text, 0)
        if end == len(text):
            return document
    except (StopIteration, ValueError, RecursionError):
        pass
    return _loads(text, _COMMAND_STEPS if long else None)


def _loads(text: str, hooks: dict[str, Callable[[Any], Any]] | None) -> Any:
    """``json.loads``, and deep in a caller's stack, where it runs out of room, the same
    value from ``json_text.parse``."""
    try:
        return json.loads(text) if hooks is None else json.loads(text, **hooks)  # type: ignore[arg-type]
    except RecursionError:
        return json_text.parse(text, hooks["parse_int"] if hooks else int)
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


def _judge_depth(text: str) -> None:
    """``InvalidInput`` if ``text`` nests deeper than ``MAX_DOCUMENT_DEPTH``: strings taken
    out (an opening quote with no end is no string), every opening bracket a level more
    and every closing one a level less, summed in C."""
    brackets = _STRING.sub("", text).translate(_NOT_BRACKETS)  # what is left of those
    if max(accumulate(map(_DEPTHS.get, brackets, _NONE))) > MAX_DOCUMENT_DEPTH:
        raise InvalidInput(f"JSON text nests deeper than {MAX_DOCUMENT_DEPTH} levels")


def _integer(literal: str) -> int:
    """``int(literal)``, but for a literal of more than 64 digits (far past int64), its
    first 20 digits followed by zeros: as far out of every range, of as many bits (errors
    say "an integer of about N digits" alike), and made without the conversion that takes
    time quadratic in the digits. Past Python's limit on digits (4,300 by default), the
    ``ValueError`` that ``int`` raises, as ``json.loads`` raises it."""
    digits = len(literal) - (literal[0] == "-")
    if digits <= 64 or digits > _INT_DIGITS:
        return int(literal)  # cheap, or the parser's own ValueError (Python's default)
    return int(literal[: len(literal) - digits + 20]) * _power(digits - 20)


def _int(literal: str) -> int:
    return int(literal)


def _float(literal: str) -> float:
    return float(literal)


def _object(document: dict[str, Any]) -> dict[str, Any]:
    return document


_STEPS: Final[dict[str, Callable[[Any], Any]]] = {
    "parse_int": _int,
    "parse_float": _float,
    "object_hook": _object,
}
"""What the ``json`` scanner calls back for each number and object of a long text: each a
point where the thread reading it lets others run (the same values as without)."""
_COMMAND_STEPS: Final[dict[str, Callable[[Any], Any]]] = {**_STEPS, "parse_int": _integer}
"""``_STEPS`` for a command from outside: long integer literals read cheaply."""


_INT_DIGITS: Final = 4300
"""Python's default limit on the digits ``int`` converts (``sys.get_int_max_str_digits``)."""


@functools.lru_cache(maxsize=64)
def _power(exponent: int) -> int:
    return int(10**exponent)


_scan: Final[Callable[[str, int], tuple[Any, int]]] = json.JSONDecoder().scan_once  # type: ignore[attr-defined]
"""What ``json.loads`` calls, after a BOM check and skipping whitespace, to read a value
(with the same defaults: NaN and Infinity read as floats, as ``json.loads`` reads them)."""
_scan_in_steps: Final[Callable[[str, int], tuple[Any, int]]] = json.JSONDecoder(
    parse_int=_int, parse_float=_float, object_hook=_object
).scan_once  # type: ignore[attr-defined]
"""``_scan`` for a long text: ``_STEPS`` called back for each number and object."""
_scan_command: Final[Callable[[str, int], tuple[Any, int]]] = json.JSONDecoder(
    parse_int=_integer, parse_float=_float, object_hook=_object
).scan_once  # type: ignore[attr-defined]
"""``_scan`` for a long command text: ``_COMMAND_STEPS`` called back."""


LINE_BREAKS: Final = ("\u0085", "\u2028", "\u2029")
"""The characters ``str.splitlines`` breaks on that ``json.dumps`` leaves raw (it escapes
the others, all below U+0020)."""


def dump_json(document: Any, *, in_steps: bool = False) -> str:
    """The compact JSON text of ``document`` with ``LINE_BREAKS`` escaped: one line for
    every reader (stored events, JSON Lines, port messages). The writer ``parse_json``
    reads. ``in_steps`` (for a document of many values: ``LONG_SIZE``, ``few_values``):
    the same text, written a value at a time, so the thread writing it lets others run
    between values (``json.dumps`` holds the GIL for the whole document: 16,384 floats
    took it 30-120 ms, D47)."""
    if in_steps:
        text = json_text.dump(document)
    else:
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
    "maxCommandValues": MAX_COMMAND_VALUES,
    "maxIdLength": MAX_ID_LENGTH,
    "maxAgentIdLength": MAX_AGENT_ID_LENGTH,
    "maxOutputParts": MAX_OUTPUT_PARTS,
    "maxOutputSize": MAX_OUTPUT_SIZE,
}
"""The table specs/formats.md prints and the schemas read (camelCase, as in the formats)."""
