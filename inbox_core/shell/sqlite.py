"""``SqliteLog``: many agents' durable logs in one SQLite database file (stdlib ``sqlite3``).

Schema (``PRAGMA user_version = 2``, WAL journal)::

    CREATE TABLE events (
        agent_id TEXT NOT NULL, seq INTEGER NOT NULL CHECK (seq >= 0), event TEXT NOT NULL,
        PRIMARY KEY (agent_id, seq)) WITHOUT ROWID

A file is used only when it really is an inbox-core log: a v2 file, a v1 file
(``events(seq INTEGER PRIMARY KEY, event TEXT)``, one agent; migrated in place
to agent ``"default"``) or an empty database. Anything else (a text file,
another application's database, a newer schema) raises ``IncompatibleLog``
and is left exactly as it was: the check reads only, before the journal mode
changes. Every SQLite failure is typed: ``LogUnavailable`` (cannot open,
locked past the timeout, read-only, I/O), ``CorruptLog`` (a bad stored row,
naming its seq), ``InvalidInput`` (bad arguments, refused when the object is
built).

Ownership (R29) is an open file description lock on one byte of
``<database>-owners`` per agent (see ``OwnerFile``). The read-only readers at
the end (``iter_sqlite_log``, ``sqlite_agent_ids``) change nothing and create
no file: what ``inbox-core replay`` uses.
"""

from __future__ import annotations

import contextlib
import math
import os
import sqlite3
import time
import weakref
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any, Final, Literal, TypeVar

from inbox_core import limits
from inbox_core.errors import InboxCoreError, InvalidInput, LogOwned
from inbox_core.events import DurableEvent
from inbox_core.shell import sqlite_posts
from inbox_core.shell.logs import (
    CorruptLog,
    IncompatibleLog,
    LogUnavailable,
    decode_rows,
    encode_event,
    fenced,
    iter_rows,
)
from inbox_core.shell.owners import OwnerFile, drop_lock, take_lock
from inbox_core.shell.posts import Consumed, PendingPost
from inbox_core.shell.wakes import SqliteWake, sqlite_bell

__all__ = ["SCHEMA_VERSION", "SQLITE_HEADER", "SqliteLog", "iter_sqlite_log", "sqlite_agent_ids"]

T = TypeVar("T")

SCHEMA_VERSION: Final = 2
SQLITE_HEADER: Final = b"SQLite format 3\x00"
"""The first 16 bytes of every SQLite database file."""

MAX_TIMEOUT: Final = 2_147_483.0
"""The longest ``timeout`` (seconds): SQLite's busy timeout is an int of milliseconds."""
_READ_TIMEOUT: Final = 5.0  # the read-only readers wait this long for a live writer's lock

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

# (name, declared type, NOT NULL, position in the primary key) of each column, in order
_V2_COLUMNS: Final = (("agent_id", "TEXT", 1, 1), ("seq", "INTEGER", 1, 2), ("event", "TEXT", 1, 0))
_V1_COLUMNS: Final = (("seq", "INTEGER", 1), ("event", "TEXT", 0))  # NOT NULL not compared

Kind = Literal["empty", "v1", "v2"]


# ------------------------------------------------------------------ arguments


def _database_path(path: object) -> str:
    try:
        text = os.fspath(path)  # type: ignore[call-overload]
    except TypeError:
        raise InvalidInput(f"path must be a str or os.PathLike, got {path!r:.80}") from None
    if not isinstance(text, str):
        raise InvalidInput(f"path must be a str path, got {text!r:.80}")
    if text in ("", ":memory:"):
        raise InvalidInput(
            f"path {text!r} is an in-memory database, which cannot use WAL: give a file path"
        )
    if "\x00" in text:
        raise InvalidInput("path must not contain NUL")
    return text


def _timeout(value: object) -> float:
    if (
        not isinstance(value, (int, float))
        or isinstance(value, bool)
        or not math.isfinite(value)
        or not 0 <= value <= MAX_TIMEOUT
    ):
        raise InvalidInput(
            f"timeout must be a number of seconds in [0, {MAX_TIMEOUT:g}], got {value!r:.80}"
        )
    return float(value)


def _check_header(path: str) -> None:
    """``IncompatibleLog`` for a non-empty file too short to be an SQLite database.

    SQLite itself would take such a file for an empty database and overwrite
    it; a longer file that is no database is refused by SQLite when it is
    read. The file is only ``stat``-ed, never opened: closing any descriptor
    of a database file drops every POSIX lock the process holds on it, and
    SQLite's locks are how a closing connection in another process knows it
    is not the last one (else it checkpoints and deletes the -wal file while
    this process still writes to it).
    """
    try:
        size = os.stat(path).st_size
    except OSError:
        return  # a new file, or one SQLite fails to open, saying why
    if 0 < size < _SMALLEST_DATABASE:
        raise IncompatibleLog(path, "not an SQLite database")


_SMALLEST_DATABASE: Final = 512
"""Bytes: one page of the smallest page size; no SQLite database file is shorter."""


# --------------------------------------------------------------------- errors


def _cannot_open(path: str) -> str:
    """Why SQLite could not open ``path``: the reason a user can act on."""
    target = Path(path)
    parent = target.parent
    if target.is_dir():
        return "it is a directory"
    try:
        os.stat(target)
    except (FileNotFoundError, NotADirectoryError):
        if parent.exists() and not parent.is_dir():
            return f"{str(parent)!r} is not a directory"
        if not parent.is_dir():
            return f"the directory {str(parent)!r} does not exist"
        if not os.access(parent, os.W_OK):
            return f"the directory {str(parent)!r} is not writable"
    except OSError as error:
        return str(error.strerror).lower()
    else:
        if not os.access(target, os.R_OK | os.W_OK):
            return "permission denied"
    return "unable to open the database file"


def _typed(error: sqlite3.Error, path: str, what: str, timeout: float) -> InboxCoreError:
    """The typed error of an SQLite failure (the original stays the ``__cause__``)."""
    name = getattr(error, "sqlite_errorname", "")
    if name == "SQLITE_NOTADB":
        return IncompatibleLog(path, "not an SQLite database")
    where = f"SqliteLog {path!r}: {what} failed"
    if name.startswith(("SQLITE_BUSY", "SQLITE_LOCKED")):
        return LogUnavailable(
            f"{where}: the database is locked by another connection (waited {timeout:g} s)"
        )
    if name.startswith("SQLITE_CANTOPEN"):
        return LogUnavailable(f"{where}: cannot open the file: {_cannot_open(path)}")
    if name == "SQLITE_READONLY_DIRECTORY":
        return LogUnavailable(
            f"{where}: its directory is not writable (a writer needs its -wal and -shm files)"
        )
    if name.startswith("SQLITE_READONLY"):
        return LogUnavailable(f"{where}: the database is read-only here ({error})")
    if name.startswith("SQLITE_CORRUPT"):
        return LogUnavailable(f"{where}: the database file is damaged ({error})")
    return LogUnavailable(f"{where}: {type(error).__name__}: {error}")


@contextlib.contextmanager
def _sqlite_errors(path: str, what: str, timeout: float) -> Iterator[None]:
    try:
        yield
    except sqlite3.Error as error:
        raise _typed(error, path, what, timeout) from error


# --------------------------------------------------------------------- schema


def _classify(conn: sqlite3.Connection, path: str) -> Kind:
    """What the database holds, reading only: an inbox-core log (v1, v2) or nothing at all.

    Anything else raises ``IncompatibleLog``: an inbox-core v2 log has
    ``user_version`` 2 and the v2 ``events`` table; a v1 log has ``user_version``
    1 (or 0) and nothing but the v1 ``events`` table; an empty database has no
    schema at all.
    """
    version = conn.execute("PRAGMA user_version").fetchone()[0]
    tables = sorted(
        str(name)
        for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
        if not str(name).startswith("sqlite_")
    )
    columns = tuple(
        (str(name), str(declared).upper(), int(not_null), int(key))
        for _cid, name, declared, not_null, _default, key in conn.execute(
            "PRAGMA main.table_info(events)"
        )
    )
    if version == SCHEMA_VERSION and columns == _V2_COLUMNS:
        return "v2"
    v1_columns = tuple((name, declared, key) for name, declared, _, key in columns)
    if version in (0, 1) and tables == ["events"] and v1_columns == _V1_COLUMNS:
        return "v1"
    if version == 0 and conn.execute("SELECT 1 FROM sqlite_master").fetchone() is None:
        return "empty"
    shown = ", ".join(f"{name} {declared}" for name, declared, _, _ in columns)
    if version not in (0, 1, SCHEMA_VERSION):
        why = f"schema version {version} (PRAGMA user_version); inbox-core logs have version 2"
    elif not columns:
        why = f"no events table (its tables: {', '.join(tables) or 'none'})"
    elif columns == _V2_COLUMNS:
        why = f"a version 2 events table, but user_version {version}"
    elif version != SCHEMA_VERSION and v1_columns == _V1_COLUMNS:
        why = f"a version 1 events table beside other tables ({', '.join(tables)})"
    else:
        why = f"its events table ({shown}) has neither the version 1 nor the version 2 shape"
    raise IncompatibleLog(path, why)


def _check_v1_rows(conn: sqlite3.Connection) -> None:
    """``CorruptLog`` for the first v1 row a v2 log cannot hold: a NULL event, or a seq that
    does not count 0, 1, 2, ... (negative, or after a gap)."""
    problem: CorruptLog | None = None
    cursor = conn.execute("SELECT seq, event IS NULL FROM events ORDER BY seq")
    for expected, (seq, null) in enumerate(cursor):
        if seq != expected:
            problem = CorruptLog(expected, f"v1 log: expected seq {expected}, found {seq!r}")
        elif null:
            problem = CorruptLog(expected, "v1 log: the stored event is NULL")
        if problem is not None:
            break
    cursor.close()
    if problem is not None:
        raise problem


def _enable_wal(conn: sqlite3.Connection, path: str, timeout: float) -> None:
    """Switch to WAL unless already in it, waiting up to ``timeout`` for other connections.

    SQLite does not call its busy handler for this switch when another
    connection holds a write lock (it would risk a deadlock: the switch holds
    a read lock while it waits) and fails at once with "database is locked";
    so the wait is a loop here.
    """
    deadline = time.monotonic() + timeout
    delay = 0.001
    while True:
        try:
            if str(conn.execute("PRAGMA journal_mode").fetchone()[0]).lower() == "wal":
                return
            mode = str(conn.execute("PRAGMA journal_mode=WAL").fetchone()[0]).lower()
            if mode == "wal":
                return
            error: sqlite3.Error = sqlite3.OperationalError(f"journal mode stays {mode!r}")
        except sqlite3.OperationalError as busy:
            if not getattr(busy, "sqlite_errorname", "").startswith("SQLITE_BUSY"):
                raise
            error = busy
        if time.monotonic() >= deadline:
            raise error
        time.sleep(delay)
        delay = min(delay * 2, 0.05)


def _prepare_schema(conn: sqlite3.Connection, path: str, timeout: float) -> None:
    """Check what the file holds (reading only), then switch to WAL and create or migrate.

    Nothing is written to a file that is not an inbox-core log (``IncompatibleLog``)
    or a v1 log whose rows v2 cannot hold (``CorruptLog``): both are found by
    reading, before the switch to WAL. A v1 file becomes
    agent ``"default"`` with every event in one ``BEGIN IMMEDIATE`` transaction,
    so a crash leaves v1 or v2, never half of either. The file is classified
    again inside the write transaction: two processes opening a new or v1 file
    at once create or migrate it once.
    """
    conn.execute("BEGIN")  # one snapshot: the version and the tables of the same commit
    try:
        kind = _classify(conn, path)
        if kind == "v1":
            _check_v1_rows(conn)
    finally:
        conn.execute("COMMIT")
    _enable_wal(conn, path, timeout)
    if kind == "v2":  # the common case takes no write lock
        return
    conn.execute("BEGIN IMMEDIATE")
    try:
        kind = _classify(conn, path)
        if kind == "v1":
            _check_v1_rows(conn)
            for statement in _MIGRATE_V1:
                conn.execute(statement)
        elif kind == "empty":
            conn.execute(_CREATE_EVENTS)
        if kind != "v2":
            conn.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise


# ---------------------------------------------------------------------- the log


class SqliteLog:
    """Many agents' durable logs in one SQLite database (stdlib ``sqlite3``, WAL journal).

    This object is agent ``agent_id``'s log. ``event`` is the compact
    ``{"type","data"}`` JSON of ``event_to_json``; ``seq`` counts from 0
    without gaps per agent. A v1 file (one agent; ``events(seq, event)``) is
    migrated in place when opened: its events become agent ``"default"``'s.
    A file that is not an inbox-core log raises ``IncompatibleLog``, untouched.
    Bad arguments (an agent id past ``limits.MAX_AGENT_ID_LENGTH`` or with a
    NUL, an in-memory path, a bad ``timeout``) raise ``InvalidInput`` here,
    before anything is opened.

    Ownership (R29) is an OS lock that dies with the process (see
    ``OwnerFile``): after a crash the next process acquires at once, and an
    object that is closed or garbage-collected releases what it held. A lease
    row would need a clock and a liveness guess; a held SQLite transaction
    would block readers' checkpoints and other agents' writers. ``append``
    encodes every event first, then, in one ``BEGIN IMMEDIATE`` transaction,
    checks that the agent's next seq is the one this owner expects and
    inserts them, so a crash (or an encoding or database error) leaves all
    of the call's events or none, and a writer that bypassed the lock can
    never be interleaved with. ``synchronous`` is SQLite's ``PRAGMA
    synchronous``: ``"FULL"`` (default) also survives power loss; ``"NORMAL"``
    survives process crashes only. ``timeout`` is how long a statement waits
    for another connection's write lock before ``LogUnavailable``.

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
        self._agent_id = limits.agent_id(agent_id)
        if not isinstance(synchronous, str) or synchronous not in ("FULL", "NORMAL"):
            raise InvalidInput(f"synchronous must be 'FULL' or 'NORMAL', got {synchronous!r:.80}")
        self._timeout = _timeout(timeout)
        self._path = _database_path(path)
        self._conn: sqlite3.Connection | None = None
        self._owner_file: OwnerFile | None = None
        self._token: object | None = None
        self._next = 0
        self._finalizer: weakref.finalize[Any, Any] | None = None
        self._has_posts = False
        self._bell = sqlite_bell(self._path)  # resolved once: appends are the hot path
        _check_header(self._path)
        with self._errors("open"):
            conn = sqlite3.connect(self._path, timeout=self._timeout, isolation_level=None)
        try:
            with self._errors("open"):
                _prepare_schema(conn, self._path, self._timeout)
                conn.execute(f"PRAGMA synchronous={synchronous}")
        except BaseException:
            conn.close()
            raise
        self._conn = conn

    @property
    def path(self) -> str:
        return self._path

    @property
    def agent_id(self) -> str:
        return self._agent_id

    @property
    def connection(self) -> sqlite3.Connection:
        """The open connection (for inspection and tests); ``LogUnavailable`` once closed."""
        if self._conn is None:
            raise LogUnavailable(f"SqliteLog {self._path!r} is closed")
        return self._conn

    @property
    def owned(self) -> bool:
        """Whether this object holds the agent's lock now."""
        owner_file = self._owner_file
        return owner_file is not None and owner_file.owners.get(self._agent_id) is self._token

    def _errors(self, what: str) -> contextlib.AbstractContextManager[None]:
        return _sqlite_errors(self._path, what, self._timeout)

    def acquire(self) -> None:
        """Take the agent's lock (``LogOwned`` if anyone holds it, this object included)."""
        conn = self.connection
        if self._token is not None and self.owned:
            raise LogOwned(f"this SqliteLog already owns agent {self._agent_id!r}")
        token = object()
        owner_file = take_lock(self._path, self._agent_id, token)
        try:
            with self._errors("acquire"):
                row = conn.execute(
                    "SELECT COALESCE(MAX(seq) + 1, 0) FROM events WHERE agent_id = ?",
                    (self._agent_id,),
                ).fetchone()
        except BaseException:
            drop_lock(owner_file, self._agent_id, token)
            raise
        self._owner_file, self._token, self._next = owner_file, token, int(row[0])
        self._finalizer = weakref.finalize(self, drop_lock, owner_file, self._agent_id, token)

    def release(self) -> None:
        """Give the lock back (idempotent); appends raise ``LogFenced`` until ``acquire``."""
        finalizer, self._finalizer = self._finalizer, None
        self._owner_file = self._token = None
        if finalizer is not None:
            finalizer()

    def append(self, events: Sequence[DurableEvent], *, consumed: Sequence[Consumed] = ()) -> None:
        """Append every event of one command in one transaction (all or none), if this owns it.

        ``consumed`` (R35): posts decided by the commands that caused ``events``,
        marked in the same transaction (so a post is applied exactly once).
        """
        if not self.owned:
            why = "it never acquired or released it" if self._token is None else "it lost it"
            raise fenced(f"SqliteLog {self._path!r}", self._agent_id, why)
        owner_file = self._owner_file
        assert owner_file is not None
        if not owner_file.intact():  # another process may have locked a new lock file
            self.release()
            why = f"its lock file {owner_file.path!r} was deleted or replaced"
            raise fenced(f"SqliteLog {self._path!r}", self._agent_id, why)
        texts = [encode_event(event) for event in events]
        if not texts and not consumed:
            return
        conn = self.connection
        try:  # the hot path: no context manager
            conn.execute("BEGIN IMMEDIATE")
            try:
                first = self._check_next(conn)
                conn.executemany(
                    "INSERT INTO events (agent_id, seq, event) VALUES (?, ?, ?)",
                    ((self._agent_id, first + offset, text) for offset, text in enumerate(texts)),
                )
                sqlite_posts.consume(conn, self._agent_id, consumed)
                conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise
        except sqlite3.Error as error:
            raise _typed(error, self._path, "append", self._timeout) from error
        self._next = first + len(texts)
        bell = self._bell  # within the process: at once (R36)
        if texts:
            bell.ring(f"events:{self._agent_id}")
        if consumed:
            bell.ring(f"outcome:{self._agent_id}")

    def pending_posts(self, limit: int) -> list[PendingPost]:
        """The agent's oldest unconsumed posts (R35), by ``post_id``; needs no ownership."""
        with self._errors("read posts"):
            conn = self.connection
            if not self._has_posts:
                self._has_posts = sqlite_posts.has_posts(conn)
                if not self._has_posts:
                    return []
            return sqlite_posts.pending(conn, self._agent_id, limit)

    def post_wake(self) -> SqliteWake:
        """What the owner awaits between posts: a post rung in this process, or any commit
        of another connection (R36). Call inside the event loop."""
        return SqliteWake(self._path, f"post:{self._agent_id}")

    def _check_next(self, conn: sqlite3.Connection) -> int:
        """The agent's next seq, if it is the one this owner expects (else ``LogFenced``)."""
        row = conn.execute(
            "SELECT COALESCE(MAX(seq) + 1, 0) FROM events WHERE agent_id = ?", (self._agent_id,)
        ).fetchone()
        first = int(row[0])
        if first != self._next:  # a writer that bypassed the lock: refuse, write nothing
            expected = self._next
            self.release()
            raise fenced(
                f"SqliteLog {self._path!r}",
                self._agent_id,
                f"expected to write seq {expected}, the log's next seq is {first}",
            )
        return first

    def read(self) -> list[DurableEvent]:
        """Decode the agent's rows in ``seq`` order; a gap or a bad row raises ``CorruptLog``.

        Needs no ownership and never blocks a writer (WAL: one consistent snapshot).
        """
        with self._errors("read"):
            rows = self.connection.execute(
                "SELECT seq, event FROM events WHERE agent_id = ? ORDER BY seq", (self._agent_id,)
            ).fetchall()
        return decode_rows(rows)

    def agent_ids(self) -> list[str]:
        """Every agent with at least one event in this database, sorted."""
        with self._errors("read"):
            rows = self.connection.execute(
                "SELECT DISTINCT agent_id FROM events ORDER BY agent_id"
            ).fetchall()
        return [str(agent_id) for (agent_id,) in rows]

    def __len__(self) -> int:
        with self._errors("count"):
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


# ------------------------------------------------------------ read-only readers


def _fingerprint(path: str) -> tuple[int, int, int] | None:
    try:
        stat = os.stat(path)
    except OSError:
        return None
    return stat.st_ino, stat.st_size, stat.st_mtime_ns


def _size(path: str) -> int:
    """The size of ``path`` in bytes, 0 when it does not exist."""
    try:
        return os.stat(path).st_size
    except OSError:
        return 0


def _read_only(path: str | os.PathLike[str], read: Callable[[sqlite3.Connection], T]) -> T:
    """``read(conn)`` on a connection that writes nothing and creates no file.

    A cleanly closed WAL database has no ``-wal`` file (or an empty one):
    everything is in the database file, which is read as ``immutable`` (no
    locks and no ``-shm``, so a directory the reader cannot write is fine);
    if the file changed meanwhile (a writer opened it and checkpointed), it
    is read again. With a non-empty ``-wal`` (or rollback ``-journal``) file
    a writer is live, or crashed: the read goes through SQLite's ``mode=ro``
    locking protocol, which needs the ``-shm`` file. Every read is one
    transaction: one snapshot.
    """
    where = _database_path(path)
    resolved = os.path.realpath(where)
    for _ in range(3):
        if not os.path.isfile(resolved):
            why = "not a regular file" if os.path.exists(resolved) else "no such file"
            raise LogUnavailable(f"{where!r}: {why}")
        _check_header(resolved)
        before = _fingerprint(resolved)
        live = any(_size(resolved + suffix) for suffix in ("-wal", "-journal"))
        uri = f"{Path(resolved).as_uri()}?mode=ro{'' if live else '&immutable=1'}"
        try:
            conn = sqlite3.connect(uri, uri=True, timeout=_READ_TIMEOUT)
            try:
                conn.execute("BEGIN")
                result = read(conn)
            finally:
                conn.close()
        except sqlite3.Error as error:
            name = getattr(error, "sqlite_errorname", "")
            if live and name.startswith(("SQLITE_READONLY", "SQLITE_CANTOPEN")):
                raise LogUnavailable(
                    f"{where!r} has a -wal file (a writer has it open, or it was not closed "
                    "cleanly), and reading that needs its -shm file, which this user cannot "
                    f"create or open ({error}); read it as a user who can write "
                    f"{os.path.dirname(resolved)!r}, or once its writer closed it"
                ) from error
            raise _typed(error, where, "read", _READ_TIMEOUT) from error
        if live or _fingerprint(resolved) == before:
            return result
    raise LogUnavailable(f"{where!r} changed during each of 3 reads (a busy writer); try again")


def iter_sqlite_log(
    path: str | os.PathLike[str], agent_id: str = "default"
) -> Iterator[DurableEvent]:
    """Read agent ``agent_id``'s log from an SQLite file without changing it (read-only).

    Unlike ``SqliteLog`` it never creates, migrates or locks anything and
    creates no file, so it is safe on a live database, on a v1 file (whose
    events are agent ``"default"``'s) and in a directory the reader cannot
    write. A file that is not an inbox-core log raises ``IncompatibleLog``,
    one that cannot be read ``LogUnavailable``; a gap or a bad row raises
    ``CorruptLog`` after the good prefix was yielded.
    """
    agent_id = limits.agent_id(agent_id)
    where = os.fspath(path)

    def rows(conn: sqlite3.Connection) -> list[Any]:
        kind = _classify(conn, str(where))
        if kind == "v1":
            if agent_id != "default":
                return []  # a v1 file holds agent "default" only
            return conn.execute("SELECT seq, event FROM events ORDER BY seq").fetchall()
        if kind == "empty":
            return []
        return conn.execute(
            "SELECT seq, event FROM events WHERE agent_id = ? ORDER BY seq", (agent_id,)
        ).fetchall()

    yield from iter_rows(_read_only(path, rows))


def sqlite_agent_ids(path: str | os.PathLike[str]) -> list[str]:
    """The agents with events in an SQLite log file, sorted (read-only: ``iter_sqlite_log``)."""
    where = str(os.fspath(path))

    def agents(conn: sqlite3.Connection) -> list[str]:
        kind = _classify(conn, where)
        if kind == "v1":
            return ["default"] if conn.execute("SELECT 1 FROM events").fetchone() else []
        if kind == "empty":
            return []
        rows = conn.execute("SELECT DISTINCT agent_id FROM events ORDER BY agent_id")
        return [str(agent) for (agent,) in rows]

    return _read_only(path, agents)
