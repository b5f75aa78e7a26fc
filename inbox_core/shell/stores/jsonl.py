"""The JSON Lines form of a log (the interchange form): one ``{"seq","type","data"}`` per line.

``to_json_lines`` writes it, ``from_json_lines`` (or ``iter_json_lines``, one event at
a time) reads it back, checking every line as a stored log's rows are checked
(specs/shell.md section 9); ``inbox-core replay`` and the conformance vectors use it.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from inbox_core import limits
from inbox_core.codec import event_from_json, event_to_json
from inbox_core.errors import InboxCoreError, InvalidInput, shown
from inbox_core.events import DurableEvent, checked_events
from inbox_core.shell.stores.errors import CorruptLog

__all__ = ["from_json_lines", "iter_json_lines", "to_json_lines"]


def to_json_lines(events: Iterable[DurableEvent], *, start: int = 0) -> str:
    """The JSON Lines form: one ``{"seq","type","data"}`` per line, seq from ``start``.

    ``InvalidInput`` for anything but an iterable of durable events, or a ``start`` that is
    not a seq (an int from 0).
    """
    if type(start) is not int or not 0 <= start <= limits.MAX_SAFE_INTEGER:
        raise InvalidInput(f"start is a seq (an int from 0), got {shown(start)}")
    lines = []
    for seq, event in enumerate(checked_events(events, "to_json_lines"), start):
        lines.append(limits.dump_json({"seq": seq, **event_to_json(event)}) + "\n")
    return "".join(lines)


def from_json_lines(text: str | bytes) -> list[DurableEvent]:
    """Decode the JSON Lines form; ``seq`` must count 0, 1, 2, ... (``CorruptLog`` otherwise).

    Blank lines are ignored. A document without ``seq`` is accepted at its
    position (the plain ``{"type","data"}`` form). ``text`` is a str, or the bytes of a
    UTF-8 file (a line that is not UTF-8 is ``CorruptLog`` naming it); anything else is
    ``InvalidInput``.
    """
    return list(iter_json_lines(text))


def _lines(text: str | bytes) -> Iterator[str | None]:
    """The lines of ``text``, split on ``"\n"`` only (see ``limits.LINE_BREAKS``); a bytes
    line that is not UTF-8 is None."""
    if isinstance(text, str):
        yield from text.split("\n")
        return
    for raw in text.split(b"\n"):
        try:
            yield raw.decode("utf-8")
        except UnicodeDecodeError:
            yield None


def iter_json_lines(text: str | bytes) -> Iterator[DurableEvent]:
    """``from_json_lines`` one event at a time: a reader keeps the good prefix.

    The first bad line raises ``CorruptLog`` naming its seq and its line number.
    """
    if not isinstance(text, (str, bytes, bytearray)):
        raise InvalidInput(f"JSON Lines are a str (or UTF-8 bytes), got {shown(text)}")
    seq = 0
    for number, line in enumerate(_lines(text), 1):
        if line is None:
            raise CorruptLog(seq, f"line {number} is not UTF-8")
        if not line.strip():
            continue
        try:
            document = limits.parse_json(line)
        except InboxCoreError as error:  # past limits.MAX_DOCUMENT_DEPTH (an InvalidInput)
            raise CorruptLog(seq, f"line {number}: {error}") from None
        except ValueError as error:
            raise CorruptLog(seq, f"line {number} is not JSON: {error}") from None
        if isinstance(document, dict) and "seq" in document:
            found = document["seq"]
            if found != seq or isinstance(found, bool):  # True == 1, but is no seq
                raise CorruptLog(seq, f"line {number} has seq {found!r}, expected {seq}")
        try:
            yield event_from_json(document)
        except InboxCoreError as error:
            raise CorruptLog(seq, f"line {number}: {type(error).__name__}: {error}") from None
        seq += 1
