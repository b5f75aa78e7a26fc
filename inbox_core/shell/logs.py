"""Durable logs for the shell: the ``EventLog`` protocol, ``MemoryLog`` and ``SqliteLog``.

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

``SqliteLog`` keeps one row per event (``(agent_id, seq)`` with ``seq``
contiguous from 0 per agent, ``event`` the ``{"type","data"}`` JSON of
``event_to_json``) in a WAL-mode database and writes the events of one
``append`` in one transaction. The JSON Lines form (``to_json_lines`` /
``from_json_lines``) is the interchange format: one ``{"seq","type","data"}``
document per line.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import json
import os
import sqlite3
import threading
import weakref
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any, Final, Literal, Protocol

from inbox_core.codec import event_from_json, event_to_json
from inbox_core.errors import InboxCoreError, LogFenced, LogOwned, ReplayError
from inbox_core.events import DurableEvent

__all__ = [
    "CorruptLog",
    "EventLog",
    "LogUnavailable",
    "MemoryLog",
    "SqliteLog",
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
    """


def fenced(log: str, agent_id: str, why: str) -> LogFenced:
    """The ``LogFenced`` of a refused append: which log, and why this object is not its writer."""
    return LogFenced(f"{log}, agent {agent_id!r}: not the writer ({why}); nothing was written")


# ---------------------------------------------------------------------- memory


class _MemoryStore:
    """What the ``MemoryLog`` handles of one log share: its events and its owner's token."""

    __slots__ = ("events", "owner")

    def __init__(self, events: Iterable[DurableEvent]) -> None:
        self.events: list[DurableEvent] = list(events)
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


def decode_rows(rows: Iterable[tuple[object, object]]) -> list[DurableEvent]:
    """Decode ``(seq, event text)`` rows in seq order; a gap or a bad row is ``CorruptLog``."""
    return list(iter_rows(rows))


def iter_rows(rows: Iterable[tuple[object, object]]) -> Iterator[DurableEvent]:
    """``decode_rows`` one event at a time: a reader keeps the good prefix."""
    for expected, (seq, text) in enumerate(rows):
        if seq != expected or isinstance(seq, bool):
            raise CorruptLog(expected, f"expected seq {expected}, found {seq!r}")
        yield decode_record(expected, text)


def iter_sqlite_log(
    path: str | os.PathLike[str], agent_id: str = "default"
) -> Iterator[DurableEvent]:
    """Read agent ``agent_id``'s log from an SQLite file without changing it (read-only).

    Unlike ``SqliteLog`` it never creates, migrates or locks anything, so it
    is safe on a live database and on a v1 file (whose events are agent
    ``"default"``'s). A file that is not an inbox-core log raises
    ``sqlite3.DatabaseError``; a gap or a bad row raises ``CorruptLog`` after
    the good prefix was yielded.
    """
    uri = f"{Path(path).resolve().as_uri()}?mode=ro"
    conn = sqlite3.connect(uri, uri=True)
    args: tuple[str, ...]
    try:
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        if version == 1:
            query, args = "SELECT seq, event FROM events ORDER BY seq", ()
            if agent_id != "default":
                return  # a v1 file holds agent "default" only
        elif version == SCHEMA_VERSION:
            query = "SELECT seq, event FROM events WHERE agent_id = ? ORDER BY seq"
            args = (agent_id,)
        else:
            raise sqlite3.DatabaseError(f"not an inbox-core log (schema version {version})")
        rows = conn.execute(query, args).fetchall()
    finally:
        conn.close()
    yield from iter_rows(rows)


def sqlite_agent_ids(path: str | os.PathLike[str]) -> list[str]:
    """The agents with events in an SQLite log file, sorted (read-only)."""
    conn = sqlite3.connect(f"{Path(path).resolve().as_uri()}?mode=ro", uri=True)
    try:
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        if version == 1:
            return ["default"]
        if version != SCHEMA_VERSION:
            raise sqlite3.DatabaseError(f"not an inbox-core log (schema version {version})")
        rows = conn.execute("SELECT DISTINCT agent_id FROM events ORDER BY agent_id").fetchall()
    finally:
        conn.close()
    return [str(agent) for (agent,) in rows]


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

SCHEMA_VERSION: Final = 2

_CREATE_EVENTS: Final = """
CREATE TABLE events (
    agent_id TEXT    NOT NULL,
    seq      INTEGER NOT NULL CHECK (seq >= 0),
    event    TEXT    NOT NULL,
    PRIMARY KEY (agent_id, seq)
) WITHOUT ROWID
"""

_MIGRATE_V1: Final = (
    "ALTER TABLE events RENAME TO events_v1",
    _CREATE_EVENTS,
    "INSERT INTO events (agent_id, seq, event) SELECT 'default', seq, event FROM events_v1",
    "DROP TABLE events_v1",
)


def _prepare_schema(conn: sqlite3.Connection, path: str) -> None:
    """Create the v2 schema, or migrate a v1 file in place, in one transaction.

    A v1 file (one agent, ``events(seq, event)``, ``user_version`` 1) becomes
    agent ``"default"`` with every event: the rows are copied in the same
    transaction that drops the old table, so a crash leaves v1 or v2, never
    half of either. The version is read again inside the write transaction:
    two processes opening a v1 file at once migrate it once.
    """
    if conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION:
        return  # the common case takes no write lock
    conn.execute("BEGIN IMMEDIATE")
    try:
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        if version not in (0, 1, SCHEMA_VERSION):
            raise sqlite3.DatabaseError(
                f"{path!r} has log schema version {version}, expected {SCHEMA_VERSION} "
                "(or 1, which is migrated)"
            )
        if version != SCHEMA_VERSION:
            has_events = conn.execute(
                "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'events'"
            ).fetchone()
            for statement in _MIGRATE_V1 if has_events else (_CREATE_EVENTS,):
                conn.execute(statement)
            conn.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise


class _OwnerFile:
    """This process's descriptor on one database's lock file, and the agents it holds there.

    Ownership of agent ``a`` in database ``db`` is a POSIX write lock
    (``fcntl``) on one byte of ``db + "-owners"``, at an offset hashed from
    ``a`` (62 bits of SHA-256: a collision, which would only make an acquire
    refuse, is never expected). POSIX record locks are held by the process,
    so the kernel drops them when the process dies, however it dies; they are
    not inherited by ``fork``. Within the process, ``owners`` names the one
    ``SqliteLog`` object holding each agent (POSIX locks do not exclude their
    own process). The descriptor is never closed: closing any descriptor of a
    file drops every POSIX lock the process holds on it.
    """

    __slots__ = ("fd", "owners", "path")

    def __init__(self, path: str) -> None:
        self.path = path
        self.fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        self.owners: dict[str, object] = {}


_OWNER_FILES: dict[str, _OwnerFile] = {}
_OWNER_LOCK: Final = threading.RLock()  # reentrant: a finalizer may run inside a held section


def _forget_owners_in_child() -> None:  # pragma: no cover - runs in a forked child
    """A forked child holds none of its parent's POSIX locks: it owns nothing."""
    for owner_file in _OWNER_FILES.values():
        owner_file.owners.clear()


os.register_at_fork(after_in_child=_forget_owners_in_child)


def _lock_offset(agent_id: str) -> int:
    return int.from_bytes(hashlib.sha256(agent_id.encode("utf-8")).digest()[:8], "big") >> 2


def _take_lock(db_path: str, agent_id: str, token: object) -> _OwnerFile:
    lock_path = os.path.realpath(db_path) + "-owners"
    with _OWNER_LOCK:
        owner_file = _OWNER_FILES.get(lock_path)
        if owner_file is None:
            owner_file = _OWNER_FILES[lock_path] = _OwnerFile(lock_path)
        if agent_id in owner_file.owners:
            raise LogOwned(
                f"agent {agent_id!r} of {db_path!r} is owned by another SqliteLog in this "
                "process; nothing was written"
            )
        try:
            fcntl.lockf(
                owner_file.fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, _lock_offset(agent_id), os.SEEK_SET
            )
        except OSError as error:
            if error.errno in (errno.EACCES, errno.EAGAIN):
                raise LogOwned(
                    f"agent {agent_id!r} of {db_path!r} is owned by another live process "
                    f"(lock on {lock_path!r}); nothing was written"
                ) from None
            raise
        owner_file.owners[agent_id] = token
        return owner_file


def _drop_lock(owner_file: _OwnerFile, agent_id: str, token: object) -> None:
    """Release the lock if ``token`` still holds it (a finalizer: never raises)."""
    with _OWNER_LOCK:
        if owner_file.owners.get(agent_id) is not token:
            return
        del owner_file.owners[agent_id]
        with contextlib.suppress(OSError):  # unlocking a held lock does not fail
            fcntl.lockf(owner_file.fd, fcntl.LOCK_UN, 1, _lock_offset(agent_id), os.SEEK_SET)


class SqliteLog:
    """Many agents' durable logs in one SQLite database (stdlib ``sqlite3``, WAL journal).

    Schema (``PRAGMA user_version = 2``)::

        CREATE TABLE events (
            agent_id TEXT NOT NULL, seq INTEGER NOT NULL CHECK (seq >= 0), event TEXT NOT NULL,
            PRIMARY KEY (agent_id, seq)) WITHOUT ROWID

    This object is agent ``agent_id``'s log. ``event`` is the compact
    ``{"type","data"}`` JSON of ``event_to_json``; ``seq`` counts from 0
    without gaps per agent. A v1 file (one agent; ``events(seq, event)``) is
    migrated in place when opened: its events become agent ``"default"``'s.

    Ownership (R29) is an OS lock that dies with the process (see
    ``_OwnerFile``): after a crash the next process acquires at once, and an
    object that is closed or garbage-collected releases what it held. A lease
    row would need a clock and a liveness guess; a held SQLite transaction
    would block readers' checkpoints and other agents' writers. ``append``
    encodes every event first, then, in one ``BEGIN IMMEDIATE`` transaction,
    checks that the agent's next seq is the one this owner expects and
    inserts them, so a crash (or an encoding or database error) leaves all
    of the call's events or none, and a writer that bypassed the lock can
    never be interleaved with. ``synchronous`` is SQLite's ``PRAGMA
    synchronous``: ``"FULL"`` (default) also survives power loss; ``"NORMAL"``
    survives process crashes only.

    Use it from one thread (the event loop's); it is a context manager, and
    ``close`` (idempotent) releases ownership and closes the connection.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        agent_id: str = "default",
        synchronous: Literal["FULL", "NORMAL"] = "FULL",
        timeout: float = 5.0,
    ) -> None:
        if synchronous not in ("FULL", "NORMAL"):
            raise ValueError(f"synchronous must be 'FULL' or 'NORMAL', got {synchronous!r}")
        if not isinstance(agent_id, str) or not agent_id:
            raise ValueError(f"agent_id must be a non-empty str, got {agent_id!r}")
        self._path = os.fspath(path)
        self._agent_id = agent_id
        conn = sqlite3.connect(self._path, timeout=timeout, isolation_level=None)
        try:
            mode = conn.execute("PRAGMA journal_mode=WAL").fetchone()
            if mode is None or str(mode[0]).lower() != "wal":
                raise sqlite3.OperationalError(f"cannot enable WAL on {self._path!r}: {mode!r}")
            conn.execute(f"PRAGMA synchronous={synchronous}")
            _prepare_schema(conn, self._path)
        except BaseException:
            conn.close()
            raise
        self._conn: sqlite3.Connection | None = conn
        self._owner_file: _OwnerFile | None = None
        self._token: object | None = None
        self._next = 0
        self._finalizer: weakref.finalize[Any, Any] | None = None

    @property
    def path(self) -> str:
        return self._path

    @property
    def agent_id(self) -> str:
        return self._agent_id

    @property
    def connection(self) -> sqlite3.Connection:
        """The open connection (for inspection and tests); raises once closed."""
        if self._conn is None:
            raise sqlite3.ProgrammingError("SqliteLog is closed")
        return self._conn

    @property
    def owned(self) -> bool:
        """Whether this object holds the agent's lock now."""
        owner_file = self._owner_file
        return owner_file is not None and owner_file.owners.get(self._agent_id) is self._token

    def acquire(self) -> None:
        """Take the agent's lock (``LogOwned`` if anyone holds it, this object included)."""
        conn = self.connection
        if self._token is not None and self.owned:
            raise LogOwned(f"this SqliteLog already owns agent {self._agent_id!r}")
        token = object()
        owner_file = _take_lock(self._path, self._agent_id, token)
        try:
            row = conn.execute(
                "SELECT COALESCE(MAX(seq) + 1, 0) FROM events WHERE agent_id = ?",
                (self._agent_id,),
            ).fetchone()
        except BaseException:
            _drop_lock(owner_file, self._agent_id, token)
            raise
        self._owner_file, self._token, self._next = owner_file, token, int(row[0])
        self._finalizer = weakref.finalize(self, _drop_lock, owner_file, self._agent_id, token)

    def release(self) -> None:
        """Give the lock back (idempotent); appends raise ``LogFenced`` until ``acquire``."""
        finalizer, self._finalizer = self._finalizer, None
        self._owner_file = self._token = None
        if finalizer is not None:
            finalizer()

    def append(self, events: Sequence[DurableEvent]) -> None:
        """Append every event of one command in one transaction (all or none), if this owns it."""
        if not self.owned:
            why = "it never acquired or released it" if self._token is None else "it lost it"
            raise fenced(f"SqliteLog {self._path!r}", self._agent_id, why)
        texts = [encode_event(event) for event in events]
        if not texts:
            return
        conn = self.connection
        conn.execute("BEGIN IMMEDIATE")
        try:
            row = conn.execute(
                "SELECT COALESCE(MAX(seq) + 1, 0) FROM events WHERE agent_id = ?",
                (self._agent_id,),
            ).fetchone()
            first = int(row[0])
            if first != self._next:  # a writer that bypassed the lock: refuse, write nothing
                conn.execute("ROLLBACK")
                expected = self._next
                self.release()
                raise fenced(
                    f"SqliteLog {self._path!r}",
                    self._agent_id,
                    f"expected to write seq {expected}, the log's next seq is {first}",
                )
            conn.executemany(
                "INSERT INTO events (agent_id, seq, event) VALUES (?, ?, ?)",
                ((self._agent_id, first + offset, text) for offset, text in enumerate(texts)),
            )
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
        self._next = first + len(texts)

    def read(self) -> list[DurableEvent]:
        """Decode the agent's rows in ``seq`` order; a gap or a bad row raises ``CorruptLog``.

        Needs no ownership and never blocks a writer (WAL: one consistent snapshot).
        """
        return decode_rows(
            self.connection.execute(
                "SELECT seq, event FROM events WHERE agent_id = ? ORDER BY seq", (self._agent_id,)
            )
        )

    def agent_ids(self) -> list[str]:
        """Every agent with at least one event in this database, sorted."""
        rows = self.connection.execute("SELECT DISTINCT agent_id FROM events ORDER BY agent_id")
        return [str(agent_id) for (agent_id,) in rows]

    def __len__(self) -> int:
        row = self.connection.execute(
            "SELECT COUNT(*) FROM events WHERE agent_id = ?", (self._agent_id,)
        ).fetchone()
        return int(row[0])

    def close(self) -> None:
        """Release ownership and close the connection (idempotent)."""
        self.release()
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
        state = "closed" if self._conn is None else "owned" if self.owned else "open"
        return f"SqliteLog({self._path!r}, agent_id={self._agent_id!r}, {state})"
