"""A stored event: the compact ``{"type","data"}`` JSON text every store keeps per row, and
its reading back, where any failure is a ``CorruptLog`` naming the row's seq."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Final

import attrs

from inbox_core import limits
from inbox_core.codec import event_from_json, event_to_json
from inbox_core.errors import InboxCoreError, InvalidInput, shown
from inbox_core.events import (
    DurableEvent,
    InboxSpliced,
    MessageAdmitted,
    StepEnded,
    StepStarted,
    TurnStarted,
)
from inbox_core.json_values import JsonObject, json_size
from inbox_core.shell.stores.errors import CorruptLog
from inbox_core.values import UserMessage, entries_size

__all__ = [
    "decode_record",
    "decode_rows",
    "encode_event",
    "iter_rows",
    "payload_size",
    "seq_range",
]


def encode_event(event: DurableEvent) -> str:
    """The compact ``{"type","data"}`` JSON text of one durable event (section Formats),
    written in steps past ``limits.LONG_SIZE`` (D47)."""
    return limits.dump_json(event_to_json(event), in_steps=payload_size(event) > limits.LONG_SIZE)


def payload_size(value: object) -> int:
    """About the length of the JSON text of an event's or a command's payload, beyond its
    envelope: ``limits``' size of its messages, entries and JSON values and the characters
    of its strings, from the sizes its values know (no walk of their JSON; only of the attrs
    values around them)."""
    kind = type(value)
    if kind in _BARE or kind is int or kind is bool or value is None:
        return 0
    if kind is str:
        return len(value)  # type: ignore[arg-type]
    if kind is MessageAdmitted:
        return value.message.size  # type: ignore[attr-defined, no-any-return]
    if kind is InboxSpliced:
        return entries_size(value.inserted)  # type: ignore[attr-defined]
    if kind is UserMessage:
        return value.size  # type: ignore[attr-defined, no-any-return]
    if kind is JsonObject or kind is float:
        return json_size(value)  # type: ignore[arg-type]
    if kind is tuple:  # of attrs values (entries, records), or a JSON array
        items: tuple[object, ...] = value  # type: ignore[assignment]
        if not items or not _fields(type(items[0])):
            return json_size(items)  # type: ignore[arg-type]
        return _total(items)
    return _total(getattr(value, name) for name in _fields(kind))


_BARE: Final = frozenset({TurnStarted, StepStarted, StepEnded})
"""Events that carry nothing but numbers: the commonest, answered first."""


def _total(values: Iterable[object]) -> int:
    total = 0
    for item in values:
        total += payload_size(item)
    return total


_FIELDS: dict[type, tuple[str, ...]] = {}


def _fields(kind: type) -> tuple[str, ...]:
    """The names of an attrs class's fields (none for any other class), found once."""
    names = _FIELDS.get(kind)
    if names is None:
        names = _FIELDS[kind] = (
            tuple(field.name for field in attrs.fields(kind)) if attrs.has(kind) else ()
        )
    return names


def decode_record(seq: int, text: object) -> DurableEvent:
    """Decode one stored record; any failure is a ``CorruptLog`` naming ``seq``."""
    if not isinstance(text, str):
        raise CorruptLog(seq, f"stored event is not text: {type(text).__name__}")
    try:
        document = limits.parse_json(text)
    except InboxCoreError as error:  # past limits.MAX_DOCUMENT_DEPTH (an InvalidInput)
        raise CorruptLog(seq, f"stored event: {error}") from None
    except ValueError as error:
        raise CorruptLog(seq, f"stored event is not JSON: {error}") from None
    try:
        return event_from_json(document)
    except InboxCoreError as error:
        raise CorruptLog(seq, f"{type(error).__name__}: {error}") from None


def decode_rows(rows: Iterable[tuple[object, object]], first: int = 0) -> list[DurableEvent]:
    """Decode ``(seq, event text)`` rows in seq order from seq ``first`` on; a gap or a bad
    row is ``CorruptLog``."""
    return list(iter_rows(rows, first))


def iter_rows(rows: Iterable[tuple[object, object]], first: int = 0) -> Iterator[DurableEvent]:
    """``decode_rows`` one event at a time: a reader keeps the good prefix."""
    for expected, (seq, text) in enumerate(rows, first):
        if seq != expected or isinstance(seq, bool):
            raise CorruptLog(expected, f"expected seq {expected}, found {seq!r}")
        yield decode_record(expected, text)


def seq_range(since: object, until: object) -> tuple[int, int]:
    """``read(since, until)``'s bounds: seqs in ``[0, MAX_SAFE_INTEGER]`` (``InvalidInput``
    otherwise), ``until`` None for the log's end."""
    return _seq("since", since), _seq("until", limits.MAX_SAFE_INTEGER if until is None else until)


def _seq(name: str, value: object) -> int:
    if type(value) is not int or not 0 <= value <= limits.MAX_SAFE_INTEGER:
        most = limits.MAX_SAFE_INTEGER
        raise InvalidInput(f"{name} must be an int in [0, {most}] (a seq), got {shown(value)}")
    return value
