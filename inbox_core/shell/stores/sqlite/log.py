"""``SqliteLog``: many agents' durable logs in one SQLite database file (stdlib ``sqlite3``).

The file's schema, its checks and this process's connections to it live in
``inbox_core.shell.stores.sqlite.schema``. Ownership (R29) is an open file
description lock on one byte of ``<database>-owners`` per agent (see
``OwnerFile``). The read-only readers at the end (``iter_sqlite_log``,
``sqlite_agent_ids``) change nothing and create no file: what ``inbox-core
replay`` uses.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import weakref
from collections.abc import Callable, Hashable, Iterator, Sequence
from pathlib import Path
from typing import Any, Final, TypeVar

from inbox_core import limits
from inbox_core.errors import InvalidInput, LogFenced, LogOwned
from inbox_core.events import DurableEvent
from inbox_core.shell.stores.base import ClosesOnExit, Tail
from inbox_core.shell.stores.checkpoints import DEFAULT_EVERY
from inbox_core.shell.stores.checkpoints import checkpoint_every as checked_every
from inbox_core.shell.stores.errors import LogUnavailable, fenced
from inbox_core.shell.stores.posts import Consumed, PendingPost
from inbox_core.shell.stores.rows import decode_rows, encode_event, iter_rows, seq_range
from inbox_core.shell.stores.sqlite import posts as sqlite_posts
from inbox_core.shell.stores.sqlite.owners import OwnerFile, drop_lock, take_lock
from inbox_core.shell.stores.sqlite.schema import (
    CHECKPOINT_ALL,
    CHECKPOINT_DROP,
    CHECKPOINT_INSERT,
    CHECKPOINT_NEWEST,
    CHECKPOINTS_DDL,
    SCHEMA_VERSION,
    SQLITE_CHECKPOINTS,
    SQLITE_HEADER,
    SqliteConnections,
    Synchronous,
    check_header,
    classify,
    database_path,
    sqlite_errors,
    stored_text,
    timeout_seconds,
    typed_error,
)
from inbox_core.shell.stores.sqlite.wake import SqliteWake, sqlite_bell
from inbox_core.shell.stores.writers import Part, plain_part, work_after, write_failed

__all__ = [
    "SCHEMA_VERSION",
    "SQLITE_HEADER",
    "SqliteLog",
    "iter_sqlite_log",
    "read_only",
    "sqlite_agent_ids",
    "sqlite_checkpoints",
    "stored_checkpoints",
    "tail_rows",
]

T = TypeVar("T")

_READ_TIMEOUT: Final = 5.0  # the read-only readers wait this long for a live writer's lock
_NEXT_AND_WORK: Final = (
    "SELECT (SELECT COALESCE(MAX(seq) + 1, 0) FROM events WHERE agent_id = ?1), "
    "(SELECT work FROM agents WHERE agent_id = ?1)"
)
_NEXT: Final = "SELECT COALESCE(MAX(seq) + 1, 0) FROM events WHERE agent_id = ?"
_READ: Final = (
    "SELECT seq, event FROM events WHERE agent_id = ? AND seq >= ? AND seq < ? ORDER BY seq"
)
_READ_V1: Final = "SELECT seq, event FROM events WHERE seq >= ? AND seq < ? ORDER BY seq"
_HAS_CHECKPOINTS: Final = (
    f"SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = '{SQLITE_CHECKPOINTS}'"
)
_INSERT: Final = "INSERT INTO events (agent_id, seq, event) VALUES (?, ?, ?)"
_SET_WORK: Final = (
    "INSERT INTO agents (agent_id, work) VALUES (?, ?) "
    "ON CONFLICT (agent_id) DO UPDATE SET work = excluded.work"
)


class SqliteLog(ClosesOnExit):
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
    ``checkpoint_every`` (R41): about how many events apart its owner writes a
    checkpoint beside the log (None: never; ``read_tail`` still reads them).

    Connections are shared: every ``SqliteLog`` of one file (and options) in
    this process uses one connection per thread (``SqliteConnections``), so
    the object may be used from any thread, and logs of one file can share a
    transaction (``write_group``: a worker's group commit, R37). It is a
    context manager; ``close`` (idempotent) releases ownership and gives its
    share of the connections back.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        agent_id: str = "default",
        synchronous: Synchronous = "FULL",
        timeout: float = 5.0,
        checkpoint_every: int | None = DEFAULT_EVERY,
    ) -> None:
        self._agent_id = limits.agent_id(agent_id)
        self._every = checked_every(checkpoint_every)
        if not isinstance(synchronous, str) or synchronous not in ("FULL", "NORMAL"):
            raise InvalidInput(f"synchronous must be 'FULL' or 'NORMAL', got {synchronous!r:.80}")
        self._timeout = timeout_seconds(timeout)
        self._path = database_path(path)
        self._pool: SqliteConnections | None = None
        self._owner_file: OwnerFile | None = None
        self._token: object | None = None
        self._next = 0
        self._work: bool | None = None  # what the agents table holds for this agent
        self._finalizer: weakref.finalize[Any, Any] | None = None
        self._has_posts = False
        self._bell = sqlite_bell(self._path)  # resolved once: appends are the hot path
        pool = SqliteConnections.take(self._path, synchronous, self._timeout)
        self._pool = pool
        self._give_back = weakref.finalize(self, pool.give_back)

    @property
    def path(self) -> str:
        return self._path

    @property
    def agent_id(self) -> str:
        return self._agent_id

    @property
    def checkpoint_every(self) -> int | None:
        return self._every

    @property
    def connection(self) -> sqlite3.Connection:
        """The calling thread's connection to the file (for inspection and tests), shared
        with every log of the file in this thread: leave no transaction open on it.
        ``LogUnavailable`` once closed."""
        if self._pool is None:
            raise LogUnavailable(f"SqliteLog {self._path!r} is closed")
        return self._pool.connection()

    @property
    def owned(self) -> bool:
        """Whether this object holds the agent's lock now."""
        owner_file = self._owner_file
        return owner_file is not None and owner_file.owners.get(self._agent_id) is self._token

    @property
    def group_key(self) -> Hashable:
        """Logs of one file and options share a group commit (``write_group``)."""
        return self._pool

    def _errors(self, what: str) -> contextlib.AbstractContextManager[None]:
        return sqlite_errors(self._path, what, self._timeout)

    def acquire(self) -> None:
        """Take the agent's lock (``LogOwned`` if anyone holds it, this object included)."""
        conn = self.connection
        if self._token is not None and self.owned:
            raise LogOwned(f"this SqliteLog already owns agent {self._agent_id!r}")
        token = object()
        owner_file = take_lock(self._path, self._agent_id, token)
        try:
            with self._errors("acquire"):
                row = conn.execute(_NEXT_AND_WORK, (self._agent_id,)).fetchone()
        except BaseException:
            drop_lock(owner_file, self._agent_id, token)
            raise
        self._owner_file, self._token, self._next = owner_file, token, int(row[0])
        self._work = None if row[1] is None else bool(row[1])
        self._finalizer = weakref.finalize(self, drop_lock, owner_file, self._agent_id, token)

    def release(self) -> None:
        """Give the lock back (idempotent); appends raise ``LogFenced`` until ``acquire``."""
        finalizer, self._finalizer = self._finalizer, None
        self._owner_file = self._token = None
        if finalizer is not None:
            finalizer()

    def _check_writable(self) -> None:
        """``LogFenced`` unless this object holds the agent's lock on the live lock file."""
        if not self.owned:
            why = "it never acquired or released it" if self._token is None else "it lost it"
            raise fenced(f"SqliteLog {self._path!r}", self._agent_id, why)
        owner_file = self._owner_file
        assert owner_file is not None
        if not owner_file.intact():  # another process may have locked a new lock file
            self.release()
            why = f"its lock file {owner_file.path!r} was deleted or replaced"
            raise fenced(f"SqliteLog {self._path!r}", self._agent_id, why)

    def append(self, events: Sequence[DurableEvent], *, consumed: Sequence[Consumed] = ()) -> None:
        """Append every event of one command in one transaction (all or none), if this owns it.

        ``consumed`` (R35): posts decided by the commands that caused ``events``,
        marked in the same transaction (so a post is applied exactly once). The
        agent's row in ``agents`` (R37) follows the events (``work_after``).
        """
        self._check_writable()
        if not events and not consumed:
            return
        (error,) = self.write_group([Part(self, events, consumed)])
        if error is not None:
            raise error

    def write_work(self, work: bool) -> None:
        """Record whether the agent needs an owner (R37), if the file says otherwise."""
        self._check_writable()
        if work == self._work:
            return
        conn = self.connection
        with self._errors("append"):
            conn.execute("BEGIN IMMEDIATE")
            try:
                conn.execute(_SET_WORK, (self._agent_id, int(work)))
                conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise
        self._work = work

    def write_group(self, parts: Sequence[Part]) -> list[BaseException | None]:
        """Write the parts of logs of this file in one ``BEGIN IMMEDIATE`` transaction (a
        group commit): per part, check the agent's next seq, insert its events, mark its
        posts (in a savepoint) and its work flag. A fenced part writes nothing and gets its
        ``LogFenced``; when the transaction fails, whatever the error, each part is tried
        alone, so one bad part fails alone (R35 v4, R37), and a part that fails alone is
        tried once more with its rejections' text in ASCII (``plain_part``). Returns each
        part's error (typed), None once it is durable."""
        results: list[BaseException | None] = [None] * len(parts)
        ready: list[tuple[int, SqliteLog, list[str], Part]] = []
        for index, part in enumerate(parts):
            log = part.log
            try:
                if not isinstance(log, SqliteLog) or log._pool is not self._pool:
                    raise InvalidInput(f"{log!r} is not a log of {self._path!r}")
                log._check_writable()
                texts = [encode_event(event) for event in part.events]
            except Exception as error:
                results[index] = error
                continue
            ready.append((index, log, texts, part))
        if not ready:
            return results
        try:
            written = self._transaction(ready, results)
        except Exception as error:  # any error: a part's text, a value, the database
            if len(ready) > 1:
                for index, log, _, part in ready:
                    (results[index],) = log.write_group([part])
                return results
            index, log, _, part = ready[0]
            plain = plain_part(part)
            if plain is not None:
                (results[index],) = log.write_group([plain])
            elif isinstance(error, sqlite3.Error):
                typed = typed_error(error, self._path, "append", self._timeout)
                typed.__cause__ = error
                results[index] = typed
            else:
                results[index] = write_failed(f"SqliteLog {self._path!r}", error)
            return results
        for log, count, work in written:
            log._next += count
            log._work = work
            bell = log._bell  # within the process: at once (R36)
            if count:
                bell.ring(f"events:{log._agent_id}")
            bell.ring(f"outcome:{log._agent_id}")
        return results

    def _transaction(
        self,
        ready: list[tuple[int, SqliteLog, list[str], Part]],
        results: list[BaseException | None],
    ) -> list[tuple[SqliteLog, int, bool | None]]:
        conn = self.connection
        written: list[tuple[SqliteLog, int, bool | None]] = []
        conn.execute("BEGIN IMMEDIATE")
        try:
            for index, log, texts, part in ready:
                agent = log._agent_id
                first = int(conn.execute(_NEXT, (agent,)).fetchone()[0])
                if first != log._next:  # a writer that bypassed the lock: refuse, write nothing
                    results[index] = log._seq_taken(first)
                    continue
                if part.consumed:
                    conn.execute("SAVEPOINT part")
                try:
                    conn.executemany(
                        _INSERT,
                        ((agent, first + offset, text) for offset, text in enumerate(texts)),
                    )
                    sqlite_posts.consume(conn, agent, part.consumed)
                except LogFenced as error:  # a post consumed by another writer (R35)
                    conn.execute("ROLLBACK TO part")
                    conn.execute("RELEASE part")
                    results[index] = error
                    continue
                if part.consumed:
                    conn.execute("RELEASE part")
                work = part.work if part.work is not None else work_after(part.events, log._work)
                if work is not None and work != log._work:
                    conn.execute(_SET_WORK, (agent, int(work)))
                written.append((log, len(texts), work))
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
        return written

    def _seq_taken(self, first: int) -> LogFenced:
        expected = self._next
        self.release()
        return fenced(
            f"SqliteLog {self._path!r}",
            self._agent_id,
            f"expected to write seq {expected}, the log's next seq is {first}",
        )

    def pending_posts(self, limit: int) -> list[PendingPost]:
        """The agent's oldest unconsumed posts (R35), by ``post_id``; needs no ownership."""
        with self._errors("read posts"):
            conn = self.connection
            if not self._has_posts:
                self._has_posts = sqlite_posts.has_posts(conn, self._path)
                if not self._has_posts:
                    return []
            return sqlite_posts.pending(conn, self._agent_id, limit)

    def post_wake(self) -> SqliteWake:
        """What the owner awaits between posts: a post rung in this process, or any commit
        of another connection (R36). Call inside the event loop."""
        return SqliteWake(self._path, f"post:{self._agent_id}")

    def read(self, since: int = 0, until: int | None = None) -> list[DurableEvent]:
        """Decode the agent's rows in ``seq`` order from ``since`` on (before ``until``); a
        gap or a bad row raises ``CorruptLog``.

        Needs no ownership and never blocks a writer (WAL: one consistent snapshot).
        """
        first, end = seq_range(since, until)
        with self._errors("read"):
            rows = self.connection.execute(_READ, (self._agent_id, first, end)).fetchall()
        return decode_rows(rows, first)

    def read_tail(self) -> Tail:
        """The newest checkpoint and the events from the one it follows on (R41), in one
        read transaction; needs no ownership."""
        with self._errors("read"):
            conn = self.connection
            conn.execute("BEGIN")
            try:
                stored, first, rows = tail_rows(conn, "v2", self._agent_id)
            finally:
                conn.execute("COMMIT")
        return Tail(stored, first, decode_rows(rows, first))

    def checkpoints(self) -> list[tuple[object, object]]:
        """Every stored ``(seq, checkpoint)`` of the agent (R41), as stored."""
        with self._errors("read"):
            return stored_checkpoints(self.connection, "v2", self._agent_id)

    def write_checkpoints(
        self, items: Sequence[tuple[Any, int, str]]
    ) -> list[BaseException | None]:
        """As the owner, store each ``(log, seq, text)`` (logs of this file) as its agent's
        one checkpoint, in one ``BEGIN IMMEDIATE`` transaction that makes the table first if
        it is missing. A log that does not own its agent writes nothing (``LogFenced``)."""
        results: list[BaseException | None] = [None] * len(items)
        rows = []
        for index, (log, seq, text) in enumerate(items):
            try:
                if not isinstance(log, SqliteLog) or log._pool is not self._pool:
                    raise InvalidInput(f"{log!r} is not a log of {self._path!r}")
                log._check_writable()
            except Exception as error:
                results[index] = error
                continue
            rows.append((log._agent_id, seq, text))
        pool = self._pool
        if not rows:
            return results
        try:
            if pool is None:
                raise LogUnavailable(f"SqliteLog {self._path!r} is closed")
            with self._errors("write a checkpoint"), pool.held() as conn:  # from its thread
                conn.execute("BEGIN IMMEDIATE")
                try:
                    conn.execute(CHECKPOINTS_DDL)
                    conn.executemany(CHECKPOINT_DROP, [(agent,) for agent, _, _ in rows])
                    conn.executemany(CHECKPOINT_INSERT, rows)
                    conn.execute("COMMIT")
                except BaseException:
                    if conn.in_transaction:
                        conn.execute("ROLLBACK")
                    raise
        except Exception as error:
            return [error if result is None else result for result in results]
        return results

    def agent_ids(self) -> list[str]:
        """Every agent with at least one event in this database, sorted (an id a foreign
        writer stored as a BLOB or as bytes that are not UTF-8 names no agent)."""
        with self._errors("read"):
            rows = self.connection.execute(
                "SELECT DISTINCT agent_id FROM events ORDER BY agent_id"
            ).fetchall()
        return [agent_id for (agent_id,) in rows if isinstance(agent_id, str)]

    def __len__(self) -> int:
        with self._errors("count"):
            row = self.connection.execute(
                "SELECT COUNT(*) FROM events WHERE agent_id = ?", (self._agent_id,)
            ).fetchone()
        return int(row[0])

    def close(self) -> None:
        """Release ownership and give the connections back (idempotent)."""
        self.release()
        if self._pool is not None:
            self._pool = None
            self._give_back()

    def __repr__(self) -> str:
        state = "closed" if self._pool is None else "owned" if self.owned else "open"
        return f"SqliteLog({self._path!r}, agent_id={self._agent_id!r}, {state})"


def tail_rows(
    conn: sqlite3.Connection, kind: str, agent_id: str
) -> tuple[str | bytes | None, int, list[Any]]:
    """In a read transaction on a file of ``kind``: the agent's newest checkpoint as stored
    (None: none, or no table, R36 v4), the seq its tail starts at (the event it follows,
    whose digest it holds; 0 without one, or for a stored seq no log has) and the rows."""
    stored: str | bytes | None = None
    first = 0
    if kind == "v2" and conn.execute(_HAS_CHECKPOINTS).fetchone() is not None:
        row = conn.execute(CHECKPOINT_NEWEST, (agent_id,)).fetchone()
        if row is not None:
            seq, blob = row
            stored = stored_text(blob) if isinstance(blob, bytes) else blob
            if type(seq) is int and 1 <= seq <= limits.MAX_SAFE_INTEGER:
                first = seq - 1
    return stored, first, _rows(conn, kind, agent_id, first)


def _rows(conn: sqlite3.Connection, kind: str, agent_id: str, first: int) -> list[Any]:
    end = limits.MAX_SAFE_INTEGER
    if kind == "v2":
        return conn.execute(_READ, (agent_id, first, end)).fetchall()
    if kind == "v1" and agent_id == "default":  # a v1 file holds agent "default" only
        return conn.execute(_READ_V1, (first, end)).fetchall()
    return []


def stored_checkpoints(
    conn: sqlite3.Connection, kind: str, agent_id: str
) -> list[tuple[object, object]]:
    """Every stored ``(seq, checkpoint)`` of the agent (none without the table)."""
    if kind != "v2" or conn.execute(_HAS_CHECKPOINTS).fetchone() is None:
        return []
    return [
        (seq, stored_text(blob) if isinstance(blob, bytes) else blob)
        for seq, blob in conn.execute(CHECKPOINT_ALL, (agent_id,))
    ]


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


def read_only(path: str | os.PathLike[str], read: Callable[[sqlite3.Connection], T]) -> T:
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
    where = database_path(path)
    resolved = os.path.realpath(where)
    for _ in range(3):
        if not os.path.isfile(resolved):
            why = "not a regular file" if os.path.exists(resolved) else "no such file"
            raise LogUnavailable(f"{where!r}: {why}")
        check_header(resolved)
        before = _fingerprint(resolved)
        live = any(_size(resolved + suffix) for suffix in ("-wal", "-journal"))
        uri = f"{Path(resolved).as_uri()}?mode=ro{'' if live else '&immutable=1'}"
        try:
            conn = sqlite3.connect(uri, uri=True, timeout=_READ_TIMEOUT)
            conn.text_factory = stored_text  # a cell that is not UTF-8: CorruptLog at its seq
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
            raise typed_error(error, where, "read", _READ_TIMEOUT) from error
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
        kind = classify(conn, str(where))
        if kind == "v1":
            if agent_id != "default":
                return []  # a v1 file holds agent "default" only
            return conn.execute("SELECT seq, event FROM events ORDER BY seq").fetchall()
        if kind == "empty":
            return []
        return conn.execute(
            "SELECT seq, event FROM events WHERE agent_id = ? ORDER BY seq", (agent_id,)
        ).fetchall()

    yield from iter_rows(read_only(path, rows))


def sqlite_checkpoints(
    path: str | os.PathLike[str], agent_id: str = "default"
) -> list[tuple[object, object]]:
    """Agent ``agent_id``'s stored checkpoints in an SQLite file, read-only (R41)."""
    agent = limits.agent_id(agent_id)
    where = str(os.fspath(path))
    return read_only(path, lambda conn: stored_checkpoints(conn, classify(conn, where), agent))


def sqlite_agent_ids(path: str | os.PathLike[str]) -> list[str]:
    """The agents with events in an SQLite log file, sorted (read-only: ``iter_sqlite_log``)."""
    where = str(os.fspath(path))

    def agents(conn: sqlite3.Connection) -> list[str]:
        kind = classify(conn, where)
        if kind == "v1":
            return ["default"] if conn.execute("SELECT 1 FROM events").fetchone() else []
        if kind == "empty":
            return []
        rows = conn.execute("SELECT DISTINCT agent_id FROM events ORDER BY agent_id")
        return [agent for (agent,) in rows if isinstance(agent, str)]  # bytes: no agent id

    return read_only(path, agents)
