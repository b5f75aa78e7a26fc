"""Durable logs for the shell: the ``EventLog`` protocol, ``MemoryLog`` and ``SqliteLog``.

A log stores the core's durable events in commit order; it is the only
authority about the agent (R10): ``replay(log.read())`` rebuilds the state.
``LoopAgent`` calls ``append`` exactly once per command that produced durable
events, with all of them, and only then commits the new state. A log must make
each ``append`` atomic: after a crash either all events of the call are there,
or none is (I12: every prefix the log can show is a prefix of whole commands).

``SqliteLog`` keeps one row per event (``seq`` contiguous from 0, ``event`` the
``{"type","data"}`` JSON of ``event_to_json``) in a WAL-mode database and
writes the events of one ``append`` in one transaction. The JSON Lines form
(``to_json_lines`` / ``from_json_lines``) is the interchange format: one
``{"seq","type","data"}`` document per line.
"""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from types import TracebackType
from typing import Any, Final, Literal, Protocol

from inbox_core.codec import event_from_json, event_to_json
from inbox_core.errors import InboxCoreError, ReplayError
from inbox_core.events import DurableEvent

__all__ = [
    "CorruptLog",
    "EventLog",
    "MemoryLog",
    "SqliteLog",
    "from_json_lines",
    "to_json_lines",
]


class EventLog(Protocol):
    """What ``LoopAgent`` needs of a durable log."""

    def append(self, events: Sequence[DurableEvent]) -> None:
        """Append ``events`` atomically (all or none), after every event appended before."""

    def read(self) -> list[DurableEvent]:
        """Every durable event appended so far, in order (seq 0, 1, 2, ...)."""


class CorruptLog(ReplayError):
    """A stored log record cannot be read back: a gap in ``seq``, bad JSON, or a bad event.

    A ``ReplayError`` (so ``seq`` names the record), raised by a log's ``read``.
    """


class MemoryLog:
    """A log in a Python list (tests, demos, hosts that persist elsewhere)."""

    __slots__ = ("_events",)

    def __init__(self, events: Iterable[DurableEvent] = ()) -> None:
        self._events: list[DurableEvent] = list(events)

    def append(self, events: Sequence[DurableEvent]) -> None:
        self._events.extend(events)

    def read(self) -> list[DurableEvent]:
        return list(self._events)

    def __len__(self) -> int:
        return len(self._events)

    def __repr__(self) -> str:
        return f"MemoryLog(<{len(self._events)} events>)"


# ------------------------------------------------------------------ JSON forms


def _dumps(document: Any) -> str:
    return json.dumps(document, ensure_ascii=False, allow_nan=False, separators=(",", ":"))


def encode_event(event: DurableEvent) -> str:
    """The compact ``{"type","data"}`` JSON text of one durable event (section Formats)."""
    return _dumps(event_to_json(event))


def decode_record(seq: int, text: object) -> DurableEvent:
    """Decode one stored record; any failure is a ``CorruptLog`` naming ``seq``."""
    if not isinstance(text, str):
        raise CorruptLog(seq, f"stored event is not text: {type(text).__name__}")
    try:
        document = json.loads(text)
    except ValueError as error:
        raise CorruptLog(seq, f"stored event is not JSON: {error}") from None
    try:
        return event_from_json(document)
    except InboxCoreError as error:
        raise CorruptLog(seq, f"{type(error).__name__}: {error}") from None


def to_json_lines(events: Iterable[DurableEvent], *, start: int = 0) -> str:
    """The JSON Lines form: one ``{"seq","type","data"}`` per line, seq from ``start``."""
    lines = []
    for seq, event in enumerate(events, start):
        lines.append(_dumps({"seq": seq, **event_to_json(event)}) + "\n")
    return "".join(lines)


def from_json_lines(text: str) -> list[DurableEvent]:
    """Decode the JSON Lines form; ``seq`` must count 0, 1, 2, ... (``CorruptLog`` otherwise).

    Blank lines are ignored. A document without ``seq`` is accepted at its
    position (the plain ``{"type","data"}`` form).
    """
    return list(iter_json_lines(text))


def iter_json_lines(text: str) -> Iterator[DurableEvent]:
    """``from_json_lines`` one event at a time: a reader keeps the good prefix.

    The first bad line raises ``CorruptLog`` naming its seq and its line number.
    """
    seq = 0
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            document = json.loads(line)
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


# ---------------------------------------------------------------------- SQLite

SCHEMA_VERSION: Final = 1

_SCHEMA: Final = """
CREATE TABLE IF NOT EXISTS events (
    seq   INTEGER PRIMARY KEY CHECK (seq >= 0),
    event TEXT    NOT NULL
)
"""


class SqliteLog:
    """A durable log in an SQLite database (stdlib ``sqlite3``, WAL journal).

    Schema (``PRAGMA user_version = 1``)::

        CREATE TABLE events (seq INTEGER PRIMARY KEY CHECK (seq >= 0), event TEXT NOT NULL)

    ``event`` is the compact ``{"type","data"}`` JSON of ``event_to_json``;
    ``seq`` counts from 0 without gaps. ``append`` encodes every event first,
    then inserts them in one ``BEGIN IMMEDIATE`` transaction, so a crash (or
    an encoding or database error) leaves all of the call's events or none.
    ``synchronous`` is SQLite's ``PRAGMA synchronous``: ``"FULL"`` (default)
    also survives power loss; ``"NORMAL"`` survives process crashes only.

    One writer at a time: the next ``seq`` is read inside the write
    transaction, so a concurrent writer can never make a gap. Use it from one
    thread (the event loop's); it is a context manager, and ``close`` is
    idempotent.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        synchronous: Literal["FULL", "NORMAL"] = "FULL",
        timeout: float = 5.0,
    ) -> None:
        if synchronous not in ("FULL", "NORMAL"):
            raise ValueError(f"synchronous must be 'FULL' or 'NORMAL', got {synchronous!r}")
        self._path = os.fspath(path)
        conn = sqlite3.connect(self._path, timeout=timeout, isolation_level=None)
        try:
            mode = conn.execute("PRAGMA journal_mode=WAL").fetchone()
            if mode is None or str(mode[0]).lower() != "wal":
                raise sqlite3.OperationalError(f"cannot enable WAL on {self._path!r}: {mode!r}")
            conn.execute(f"PRAGMA synchronous={synchronous}")
            version = conn.execute("PRAGMA user_version").fetchone()[0]
            if version not in (0, SCHEMA_VERSION):
                raise sqlite3.DatabaseError(
                    f"{self._path!r} has log schema version {version}, expected {SCHEMA_VERSION}"
                )
            conn.execute("BEGIN IMMEDIATE")
            try:
                conn.execute(_SCHEMA)
                conn.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise
        except BaseException:
            conn.close()
            raise
        self._conn: sqlite3.Connection | None = conn

    @property
    def path(self) -> str:
        return self._path

    @property
    def connection(self) -> sqlite3.Connection:
        """The open connection (for inspection and tests); raises once closed."""
        if self._conn is None:
            raise sqlite3.ProgrammingError("SqliteLog is closed")
        return self._conn

    def append(self, events: Sequence[DurableEvent]) -> None:
        """Append every event of one command in one transaction (all or none)."""
        texts = [encode_event(event) for event in events]
        if not texts:
            return
        conn = self.connection
        conn.execute("BEGIN IMMEDIATE")
        try:
            row = conn.execute("SELECT COALESCE(MAX(seq) + 1, 0) FROM events").fetchone()
            first = int(row[0])
            conn.executemany(
                "INSERT INTO events (seq, event) VALUES (?, ?)",
                ((first + offset, text) for offset, text in enumerate(texts)),
            )
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise

    def read(self) -> list[DurableEvent]:
        """Decode every row in ``seq`` order; a gap or a bad row raises ``CorruptLog``."""
        events: list[DurableEvent] = []
        for seq, text in self.connection.execute("SELECT seq, event FROM events ORDER BY seq"):
            expected = len(events)
            if seq != expected:
                raise CorruptLog(expected, f"expected seq {expected}, found {seq!r}")
            events.append(decode_record(seq, text))
        return events

    def __len__(self) -> int:
        row = self.connection.execute("SELECT COUNT(*) FROM events").fetchone()
        return int(row[0])

    def close(self) -> None:
        if self._conn is not None:
            conn, self._conn = self._conn, None
            conn.close()

    def __enter__(self) -> SqliteLog:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self._conn is None else "open"
        return f"SqliteLog({self._path!r}, {state})"
