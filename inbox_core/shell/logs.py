"""Durable logs for the shell: the ``EventLog`` protocol, ``MemoryLog``, the JSON forms.

A log stores the core's durable events in commit order; it is the only
authority about the agent (R10): ``replay(log.read())`` rebuilds the state.
``LoopAgent`` calls ``append`` exactly once per command that produced durable
events, with all of them, and only then commits the new state. A log must make
each ``append`` atomic: after a crash either all events of the call are there,
or none is (I12: every prefix the log can show is a prefix of whole commands).

Ownership (R29): at most one live writer per agent log, enforced by the store.
Building a log object takes no ownership and ``read()`` never needs it;
``acquire()`` takes it (or raises ``LogOwned``, writing nothing); ``append``
works only through the object that owns the log and only at the seq that
object expects next (else ``LogFenced``, writing nothing), so two writers can
never interleave; ``release()`` gives it back. ``PostgresLog`` lives in
``inbox_core.shell.postgres`` (it needs the optional psycopg driver).

``SqliteLog`` lives in ``inbox_core.shell.sqlite``. The JSON Lines form
(``to_json_lines`` / ``from_json_lines``) is the interchange format: one
``{"seq","type","data"}`` document per line.
"""

from __future__ import annotations

import weakref
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, Protocol

from inbox_core import limits
from inbox_core.codec import event_from_json, event_to_json
from inbox_core.errors import (
    InboxCoreError,
    InvalidInput,
    LogFenced,
    LogOwned,
    ReplayError,
    shown,
)
from inbox_core.events import DURABLE_TYPES, DurableEvent, checked_events

__all__ = [
    "CorruptLog",
    "EventLog",
    "IncompatibleLog",
    "LogUnavailable",
    "MemoryLog",
    "from_json_lines",
    "to_json_lines",
]


class EventLog(Protocol):
    """What ``LoopAgent`` needs of a durable log (R10, R29). All four calls are synchronous."""

    def acquire(self) -> None:
        """Become the log's one writer, or raise ``LogOwned`` (writing nothing)."""

    def release(self) -> None:
        """Stop being the writer (idempotent); appends raise ``LogFenced`` until ``acquire``."""

    def append(self, events: Sequence[DurableEvent]) -> None:
        """Append ``events`` atomically (all or none) at the seq this writer expects next.

        Raises ``LogFenced`` (writing nothing) unless this object owns the log.
        """

    def read(self) -> list[DurableEvent]:
        """Every durable event appended so far, in order (seq 0, 1, 2, ...); needs no ownership."""


class CorruptLog(ReplayError):
    """A stored log record cannot be read back: a gap in ``seq``, bad JSON, or a bad event.

    A ``ReplayError`` (so ``seq`` names the record), raised by a log's ``read``.
    """


class LogUnavailable(InboxCoreError):
    """The store could not be reached or refused the statement (``__cause__`` says why).

    Raised by ``PostgresLog`` for a lost connection or a server restart. The
    store is transactional, so nothing is half-written; an ``append`` that
    raises this may or may not have landed, which is safe: the agent did not
    commit it, and the next ``append`` through the same object is conditional
    on the seq it expects, so it raises ``LogFenced`` rather than write after
    an append it never saw. Recovery: ``detach()`` the agent (or ``release()``
    the log) and build a new agent over the log; it replays and resumes (R27).
    ``SqliteLog`` raises it too: a file it cannot open, a database locked past
    its timeout, a read-only or failing disk.
    """


class IncompatibleLog(InboxCoreError):
    """The file or database holds no inbox-core log this version can use; nothing was changed.

    A text file, another application's database (tables of its own, or an
    ``events`` table of another shape) or an unknown schema version. Unlike
    ``LogUnavailable`` it is permanent (retrying cannot help) and, unlike
    ``CorruptLog``, there is no log whose record could be named. ``where``
    names the file, ``reason`` says what it holds instead.
    """

    def __init__(self, where: str, reason: str) -> None:
        super().__init__(f"{where!r} is not an inbox-core log: {reason}; nothing was changed")
        self.where = where
        self.reason = reason


def fenced(log: str, agent_id: str, why: str) -> LogFenced:
    """The ``LogFenced`` of a refused append: which log, and why this object is not its writer."""
    return LogFenced(f"{log}, agent {agent_id!r}: not the writer ({why}); nothing was written")


# ---------------------------------------------------------------------- memory


_DURABLE_CLASSES: frozenset[type] = frozenset(DURABLE_TYPES)


class _MemoryStore:
    """What the ``MemoryLog`` handles of one log share: its events and its owner's token."""

    __slots__ = ("events", "owner")

    def __init__(self, events: Iterable[DurableEvent]) -> None:
        self.events: list[DurableEvent] = list(checked_events(events, "MemoryLog"))
        self.owner: object | None = None


def _free_memory_store(store: _MemoryStore, token: object) -> None:
    if store.owner is token:
        store.owner = None


class MemoryLog:
    """A log in a Python list (tests, demos, hosts that persist elsewhere).

    A ``MemoryLog`` object is a handle on one in-process log. ``handle()``
    returns another handle on the same events, with ownership of its own: what
    a second process would open over the same file (the contract tests use it).
    Ownership is the handle's, within the process: a second ``acquire`` (through
    any handle, this one included) raises ``LogOwned`` until the owner releases
    it, or is garbage-collected.
    """

    __slots__ = ("__weakref__", "_finalizer", "_next", "_store", "_token")

    def __init__(self, events: Iterable[DurableEvent] = ()) -> None:
        self._store = _MemoryStore(events)
        self._token: object | None = None
        self._next = 0
        self._finalizer: weakref.finalize[Any, Any] | None = None

    def handle(self) -> MemoryLog:
        """Another handle on the same log: same events, no ownership (``acquire`` it)."""
        other = MemoryLog()
        other._store = self._store
        return other

    @property
    def owned(self) -> bool:
        """Whether this handle is the log's writer now."""
        return self._token is not None and self._store.owner is self._token

    def acquire(self) -> None:
        store = self._store
        if store.owner is not None:
            who = "this handle" if store.owner is self._token else "another MemoryLog handle"
            raise LogOwned(f"the MemoryLog is owned by {who}; nothing was written")
        token = self._token = store.owner = object()
        self._next = len(store.events)
        self._finalizer = weakref.finalize(self, _free_memory_store, store, token)

    def release(self) -> None:
        finalizer, self._finalizer, self._token = self._finalizer, None, None
        if finalizer is not None:
            finalizer()

    def append(self, events: Sequence[DurableEvent]) -> None:
        if not self.owned:
            why = "never acquired, or released" if self._token is None else "taken over"
            raise fenced("MemoryLog", "-", why)
        if type(events) is not tuple and type(events) is not list:
            events = list(checked_events(events, "MemoryLog.append"))  # all or none
        else:
            for event in events:
                if type(event) not in _DURABLE_CLASSES:  # the hot path: one set lookup each
                    events = list(checked_events(events, "MemoryLog.append"))
                    break
        store = self._store
        if len(store.events) != self._next:  # pragma: no cover - only a bypassing writer
            self.release()
            raise fenced("MemoryLog", "-", f"expected seq {self._next}, the log has more")
        store.events.extend(events)
        self._next += len(events)

    def read(self) -> list[DurableEvent]:
        return list(self._store.events)

    def __len__(self) -> int:
        return len(self._store.events)

    def __repr__(self) -> str:
        owned = ", owned" if self.owned else ""
        return f"MemoryLog(<{len(self._store.events)} events>{owned})"


# ------------------------------------------------------------------ JSON forms


def _dumps(document: Any) -> str:
    return limits.dump_json(document)


def encode_event(event: DurableEvent) -> str:
    """The compact ``{"type","data"}`` JSON text of one durable event (section Formats)."""
    return _dumps(event_to_json(event))


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


def decode_rows(rows: Iterable[tuple[object, object]]) -> list[DurableEvent]:
    """Decode ``(seq, event text)`` rows in seq order; a gap or a bad row is ``CorruptLog``."""
    return list(iter_rows(rows))


def iter_rows(rows: Iterable[tuple[object, object]]) -> Iterator[DurableEvent]:
    """``decode_rows`` one event at a time: a reader keeps the good prefix."""
    for expected, (seq, text) in enumerate(rows):
        if seq != expected or isinstance(seq, bool):
            raise CorruptLog(expected, f"expected seq {expected}, found {seq!r}")
        yield decode_record(expected, text)


def to_json_lines(events: Iterable[DurableEvent], *, start: int = 0) -> str:
    """The JSON Lines form: one ``{"seq","type","data"}`` per line, seq from ``start``.

    ``InvalidInput`` for anything but an iterable of durable events, or a ``start`` that is
    not a seq (an int from 0).
    """
    if type(start) is not int or not 0 <= start <= limits.MAX_SAFE_INTEGER:
        raise InvalidInput(f"start is a seq (an int from 0), got {shown(start)}")
    lines = []
    for seq, event in enumerate(checked_events(events, "to_json_lines"), start):
        lines.append(_dumps({"seq": seq, **event_to_json(event)}) + "\n")
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
