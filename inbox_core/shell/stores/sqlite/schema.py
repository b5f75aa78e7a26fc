"""The SQLite database file behind ``SqliteLog``: what it must hold, how it is opened, and
the connections this process keeps to it.

Schema (``PRAGMA user_version = 2``, WAL journal)::

    CREATE TABLE events (
        agent_id TEXT NOT NULL, seq INTEGER NOT NULL CHECK (seq >= 0), event TEXT NOT NULL,
        PRIMARY KEY (agent_id, seq)) WITHOUT ROWID
    CREATE TABLE agents (              -- R37: which agents need an owner
        agent_id TEXT PRIMARY KEY, work INTEGER NOT NULL CHECK (work IN (0, 1))) WITHOUT ROWID

plus the posts table of ``inbox_core.shell.stores.posts`` (R35) and the checkpoints table
(``CHECKPOINTS_DDL``, R41; made by the first checkpoint written). A file is used only
when it really is an inbox-core log: a v2 file, a v1 file (``events(seq
INTEGER PRIMARY KEY, event TEXT)``, one agent; migrated in place to agent
``"default"``) or an empty database. Anything else (a text file, another
application's database, a newer schema, an ``agents`` or ``posts`` table of
another shape than the one inbox-core makes) raises ``IncompatibleLog`` and is
left exactly as it was: the check reads only, before the journal mode changes.
Every SQLite failure is typed: ``LogUnavailable`` (cannot open, locked past
the timeout, read-only, I/O), ``CorruptLog`` (a bad stored row, naming its
seq), ``InvalidInput`` (bad arguments, refused when the object is built).

Connections (``SqliteConnections``): one per database file, options and
thread, shared by every ``SqliteLog`` of that file in this process, so a
thousand agents on one file do not each carry a connection and a page cache.
"""

from __future__ import annotations

import contextlib
import functools
import math
import os
import sqlite3
import stat
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Final, Literal

from inbox_core import limits
from inbox_core.errors import InboxCoreError, InvalidInput
from inbox_core.shell.stores.connections import PerThread
from inbox_core.shell.stores.errors import CorruptLog, IncompatibleLog, LogUnavailable
from inbox_core.shell.stores.posts import create_table

__all__ = [
    "CHECKPOINTS_DDL",
    "SQLITE_CHECKPOINTS",
    "SQLITE_DDL",
    "SQLITE_INSERT",
    "SQLITE_OBJECTS",
    "SQLITE_POSTS",
    "AGENTS_DDL",
    "FILE_KINDS",
    "MAX_TIMEOUT",
    "SCHEMA_VERSION",
    "SQLITE_HEADER",
    "SqliteConnections",
    "Synchronous",
    "check_header",
    "check_table",
    "classify",
    "database_path",
    "regular_or_absent",
    "sqlite_errors",
    "stored_text",
    "timeout_seconds",
    "typed_error",
]

# ------------------------------------------------------------------ the posts table (R35)

SQLITE_POSTS: Final = "posts"
_SQLITE_ID_TRIGGERS: Final = {
    f"{SQLITE_POSTS}_post_id_insert": "INSERT",
    f"{SQLITE_POSTS}_post_id_update": "UPDATE OF post_id",
}
SQLITE_DDL: Final = (
    create_table(SQLITE_POSTS, "sqlite", "IF NOT EXISTS "),
    f"CREATE INDEX IF NOT EXISTS posts_pending ON {SQLITE_POSTS} (agent_id, post_id) "
    "WHERE outcome IS NULL",
    *(
        f"CREATE TRIGGER IF NOT EXISTS {name} AFTER {event} ON {SQLITE_POSTS} "
        f"WHEN NEW.post_id NOT BETWEEN 1 AND {limits.MAX_SAFE_INTEGER} "
        f"BEGIN SELECT RAISE(ABORT, 'post_id must lie in [1, {limits.MAX_SAFE_INTEGER}]'); END"
        for name, event in _SQLITE_ID_TRIGGERS.items()
    ),
)
"""The table, its index of pending posts, and triggers that refuse a ``post_id`` no
``Receipt`` can hold (a producer's explicit id past ``MAX_SAFE_INTEGER`` would push every
later id, of every agent, past it). Each statement creates only what is missing: an older
file gets the triggers when a ``SqliteStore`` opens it."""
SQLITE_OBJECTS: Final = (SQLITE_POSTS, "posts_pending", *_SQLITE_ID_TRIGGERS)
"""The names of what ``SQLITE_DDL`` creates."""


SQLITE_INSERT: Final = (
    f"INSERT INTO {SQLITE_POSTS} (agent_id, command, key) VALUES (?, ?, ?) "
    "ON CONFLICT (agent_id, key) DO NOTHING RETURNING post_id"
)

# ------------------------------------------------------------ the checkpoints table (R41)

SQLITE_CHECKPOINTS: Final = "inbox_core_checkpoints"
CHECKPOINTS_DDL: Final = f"""CREATE TABLE IF NOT EXISTS {SQLITE_CHECKPOINTS} (
    agent_id   TEXT    NOT NULL,
    seq        INTEGER NOT NULL CHECK (seq >= 1),
    checkpoint TEXT    NOT NULL,
    PRIMARY KEY (agent_id, seq)
) WITHOUT ROWID"""
"""R41: the owner's newest checkpoint of each agent (``inbox_core.checkpoint``'s JSON text,
the state after the first ``seq`` events); a cache beside the log, never part of it. The
name says whose it is (an application's own ``checkpoints`` table is common)."""
CHECKPOINT_NEWEST: Final = (
    f"SELECT seq, CAST(checkpoint AS BLOB) FROM {SQLITE_CHECKPOINTS} "
    "WHERE agent_id = ? ORDER BY seq DESC LIMIT 1"
)
CHECKPOINT_ALL: Final = (
    f"SELECT seq, CAST(checkpoint AS BLOB) FROM {SQLITE_CHECKPOINTS} "
    "WHERE agent_id = ? ORDER BY seq"
)
CHECKPOINT_DROP: Final = f"DELETE FROM {SQLITE_CHECKPOINTS} WHERE agent_id = ?"
CHECKPOINT_INSERT: Final = (
    f"INSERT INTO {SQLITE_CHECKPOINTS} (agent_id, seq, checkpoint) VALUES (?, ?, ?)"
)
"""Read as bytes (a cell a foreign writer left need not be UTF-8: the checkpoint is then
ignored, never the read failed); written by the owner as ``DROP`` then ``INSERT`` in one
transaction: one checkpoint per agent."""

SCHEMA_VERSION: Final = 2
SQLITE_HEADER: Final = b"SQLite format 3\x00"
"""The first 16 bytes of every SQLite database file."""

MAX_TIMEOUT: Final = 2_147_483.0
"""The longest ``timeout`` (seconds): SQLite's busy timeout is an int of milliseconds."""

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

AGENTS_DDL: Final = (
    """CREATE TABLE IF NOT EXISTS agents (
    agent_id TEXT    PRIMARY KEY,
    work     INTEGER NOT NULL CHECK (work IN (0, 1))
) WITHOUT ROWID""",
    "CREATE INDEX IF NOT EXISTS agents_work ON agents (agent_id) WHERE work = 1",
)
"""R37: ``work`` is 1 while the agent needs an owner (a turn open, maintenance running, or
not known yet), written by the owner in the transaction of each append that changes it."""
_AGENTS_UNKNOWN: Final = (
    "INSERT OR IGNORE INTO agents (agent_id, work) SELECT DISTINCT agent_id, 1 FROM events"
)

# (name, declared type, NOT NULL, position in the primary key) of each column, in order
_V2_COLUMNS: Final = (("agent_id", "TEXT", 1, 1), ("seq", "INTEGER", 1, 2), ("event", "TEXT", 1, 0))
_V1_COLUMNS: Final = (("seq", "INTEGER", 1), ("event", "TEXT", 0))  # NOT NULL not compared

Kind = Literal["empty", "v1", "v2"]
Shape = tuple[tuple[tuple[str, str, int, int], ...], frozenset[tuple[str, ...]]]
"""A table's columns (name, declared type, NOT NULL, position in the primary key) and the
column lists of its unique indexes."""
Synchronous = Literal["FULL", "NORMAL"]


# ------------------------------------------------------------------ arguments


def database_path(path: object) -> str:
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


def timeout_seconds(value: object) -> float:
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


FILE_KINDS: Final = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
)
"""What a path that is no regular file is, by its ``st_mode``."""


def regular_or_absent(path: str) -> bool:
    """Whether ``path`` (after symlinks) is a regular file (False: nothing there yet);
    ``LogUnavailable`` naming what it is otherwise (a device such as ``/dev/null``, a
    directory, a FIFO, a socket), found by ``stat`` alone, before SQLite opens it and
    creates a journal or -wal file beside it (R36 v4). A missing directory on the way is
    left to SQLite's open, which says so."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False
    for test, kind in FILE_KINDS:
        if test(mode):
            raise LogUnavailable(f"{path!r} is {kind}, not an SQLite log file")
    return True


def stored_text(data: bytes) -> str | bytes:
    """An ``sqlite3`` ``text_factory``: the text of a TEXT cell, or its bytes when they are
    not UTF-8 (any producer can store such a cell): the reader then says which row is bad
    instead of the driver failing the whole read."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return data


def check_header(path: str) -> None:
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


def typed_error(error: sqlite3.Error, path: str, what: str, timeout: float) -> InboxCoreError:
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
def sqlite_errors(path: str, what: str, timeout: float) -> Iterator[None]:
    try:
        yield
    except sqlite3.Error as error:
        raise typed_error(error, path, what, timeout) from error


# --------------------------------------------------------------------- schema


def classify(conn: sqlite3.Connection, path: str) -> Kind:
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


def table_shape(conn: sqlite3.Connection, name: str) -> Shape | None:
    """The shape of table ``name`` (None when there is none), reading only."""
    columns = tuple(
        (str(column), str(declared).upper(), int(not_null), int(key))
        for column, declared, not_null, key in conn.execute(
            "SELECT name, type, \"notnull\", pk FROM pragma_table_info(?, 'main')", (name,)
        )
    )
    if not columns:
        return None
    uniques = frozenset(
        tuple(
            str(column)
            for (column,) in conn.execute(
                "SELECT name FROM pragma_index_info(?, 'main') ORDER BY seqno", (index,)
            )
        )
        for (index,) in conn.execute(
            "SELECT name FROM pragma_index_list(?, 'main') WHERE \"unique\"", (name,)
        )
    )
    return columns, uniques


@functools.cache
def _made_shapes() -> dict[str, Shape]:
    """The shapes of the tables beside ``events`` as inbox-core makes them (derived from
    their DDL, never restated)."""
    conn = sqlite3.connect(":memory:")
    try:
        for statement in (*AGENTS_DDL, *SQLITE_DDL, CHECKPOINTS_DDL):
            conn.execute(statement)
        names = ("agents", SQLITE_POSTS, SQLITE_CHECKPOINTS)
        shapes = {name: table_shape(conn, name) for name in names}
    finally:
        conn.close()
    return {name: shape for name, shape in shapes.items() if shape is not None}


def check_table(conn: sqlite3.Connection, path: str, name: str) -> bool:
    """Whether table ``name`` (``agents``, the posts or the checkpoints table) exists;
    ``IncompatibleLog`` when it has another shape than inbox-core makes (an application's
    own table of that name, say), which no statement of ours could use. Reads only."""
    found = table_shape(conn, name)
    made = _made_shapes()[name]
    if found is None:
        return False
    if found != made:
        raise IncompatibleLog(
            path,
            f"its {name} table ({_columns(found)}) is not the one inbox-core makes "
            f"({_columns(made)}, unique {', '.join(map(str, sorted(made[1])))})",
        )
    return True


def _columns(shape: Shape) -> str:
    return ", ".join(f"{name} {declared}".strip() for name, declared, _, _ in shape[0])


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
    reading, before the switch to WAL. The ``agents`` table (R37) is created where
    missing, every agent of the file marked as maybe needing an owner. A v1 file becomes
    agent ``"default"`` with every event in one ``BEGIN IMMEDIATE`` transaction,
    so a crash leaves v1 or v2, never half of either. The file is classified
    again inside the write transaction: two processes opening a new or v1 file
    at once create or migrate it once.
    """
    conn.execute("BEGIN")  # one snapshot: the version and the tables of the same commit
    try:
        kind = classify(conn, path)
        if kind == "v1":
            _check_v1_rows(conn)
        has_agents = check_table(conn, path, "agents")
        check_table(conn, path, SQLITE_POSTS)
        check_table(conn, path, SQLITE_CHECKPOINTS)
    finally:
        conn.execute("COMMIT")
    _enable_wal(conn, path, timeout)
    if kind == "v2" and has_agents:  # the common case takes no write lock
        return
    conn.execute("BEGIN IMMEDIATE")
    try:
        kind = classify(conn, path)
        if kind == "v1":
            _check_v1_rows(conn)
            for statement in _MIGRATE_V1:
                conn.execute(statement)
        elif kind == "empty":
            conn.execute(_CREATE_EVENTS)
        if kind != "v2":
            conn.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
        if not _has_table(conn, "agents"):  # a v2 file of before R37: every agent unknown
            for statement in AGENTS_DDL:
                conn.execute(statement)
            conn.execute(_AGENTS_UNKNOWN)
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise


def _has_table(conn: sqlite3.Connection, name: str) -> bool:
    row = conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (name,)
    ).fetchone()
    return row is not None


# ---------------------------------------------------------------- connections


class SqliteConnections(PerThread[sqlite3.Connection]):
    """This process's connections to one database file with one set of options, one per
    thread, shared by every ``SqliteLog`` of the file (``connections.PerThread``). The first
    share of a file opens the calling thread's connection and prepares the file
    (``IncompatibleLog``, ``CorruptLog`` and ``LogUnavailable`` raise there, nothing kept)."""

    __slots__ = ("path", "synchronous", "timeout")

    def __init__(self, path: str, synchronous: Synchronous, timeout: float) -> None:
        super().__init__((os.path.realpath(path), synchronous, timeout))
        self.path = path
        self.synchronous = synchronous
        self.timeout = timeout

    @classmethod
    def take(cls, path: str, synchronous: Synchronous, timeout: float) -> SqliteConnections:
        """A share of the connections to ``path`` (checked and prepared on the first)."""

        def make() -> SqliteConnections:
            pool = cls(path, synchronous, timeout)
            regular_or_absent(path)  # never a journal beside /dev/null (R36 v4)
            check_header(path)
            pool._conns[threading.get_ident()] = pool._connect(prepare=True)
            return pool

        return cls._share((os.path.realpath(path), synchronous, timeout), make)

    def open(self) -> sqlite3.Connection:
        return self._connect(prepare=False)

    def _connect(self, *, prepare: bool) -> sqlite3.Connection:
        with sqlite_errors(self.path, "open", self.timeout):
            conn = sqlite3.connect(
                self.path, timeout=self.timeout, isolation_level=None, check_same_thread=False
            )
        conn.text_factory = stored_text  # a row that is not UTF-8: CorruptLog at its seq
        try:
            with sqlite_errors(self.path, "open", self.timeout):
                if prepare:
                    _prepare_schema(conn, self.path, self.timeout)
                conn.execute(f"PRAGMA synchronous={self.synchronous}")
        except BaseException:
            conn.close()
            raise
        return conn
