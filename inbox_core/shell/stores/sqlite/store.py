"""``SqliteStore``: the agents of one SQLite file, from any process (R35-R37, R39).

It hands out the agents' logs (``store.log(agent_id)``: ``SqliteLog``), takes
posts for agents the caller does not own (one ``INSERT`` through its writer
connection, ``synchronous=FULL``), and reads through read-only connections
(``reading.SqliteReader``): outcomes, pages of events, candidates for a worker,
what a front door lists. What it answers like every store is ``StoreReads``'s.
See specs/shell.md section 12.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
import weakref
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from inbox_core import limits
from inbox_core.events import DurableEvent
from inbox_core.shell.stores.base import ClosesOnExit, Tail
from inbox_core.shell.stores.directory import AgentSummary, Directory
from inbox_core.shell.stores.errors import LogUnavailable
from inbox_core.shell.stores.posts import (
    PendingPost,
    PostOutcome,
    Receipt,
    encode_post,
    post_key,
)
from inbox_core.shell.stores.reads import StoreReads, T, checked_limit, prune_age
from inbox_core.shell.stores.rows import decode_rows
from inbox_core.shell.stores.sqlite import posts as sqlite_posts
from inbox_core.shell.stores.sqlite import reading as sqlite_reading
from inbox_core.shell.stores.sqlite.frontdoor import SQLITE_TOKENS, sqlite_directory
from inbox_core.shell.stores.sqlite.log import SqliteLog, tail_rows
from inbox_core.shell.stores.sqlite.owners import held_elsewhere
from inbox_core.shell.stores.sqlite.reading import SqliteReader
from inbox_core.shell.stores.sqlite.schema import (
    SQLITE_CHECKPOINTS,
    SQLITE_POSTS,
    check_table,
    database_path,
    regular_or_absent,
    sqlite_errors,
    timeout_seconds,
)
from inbox_core.shell.stores.sqlite.wake import SqliteWake, sqlite_bell
from inbox_core.shell.stores.tokens import TokenTable
from inbox_core.shell.stores.wakes import Wake
from inbox_core.shell.stores.watching import BATCH_EVENTS, Batch, decode_batch

if TYPE_CHECKING:
    from inbox_core.commands import Command

__all__ = ["SqliteStore"]


def _utf8(agent_id: str) -> bytes:
    return agent_id.encode("utf-8")  # SQLite orders text by its bytes: the page cursor


def _text(stored: Any) -> str:
    """A stored id as the text an owner's lock is keyed by (never raises)."""
    try:
        return sqlite_posts.agent_text(stored)
    except Exception:
        return ""


class SqliteStore(ClosesOnExit):
    """The agents of one SQLite database file (``SqliteLog``'s file): posts, outcomes, watch.

    ``log(agent_id)`` is ``SqliteLog(path, agent_id=agent_id)``. Building a store
    writes nothing (R36 v4): a path that is no regular file (a device such as
    ``/dev/null``, a directory) is ``LogUnavailable`` at once, a file that is no
    inbox-core log ``IncompatibleLog`` (read-only), and the file is created, or
    migrated, by the first write (``post``, ``prune``, or ``candidates`` for a
    worker). The writes go through the store's own
    connection (``synchronous=FULL``: a post survives power loss once ``post``
    returned); ``outcome``, ``events``, ``wait`` and ``watch`` read through
    read-only connections (``SqliteReader``) and work for a user who may only
    read the file. Bad arguments raise ``InvalidInput``; every SQLite failure
    ``LogUnavailable`` (or ``IncompatibleLog`` for a file that is no inbox-core
    log), nothing written.
    """

    leases = False  # ownership is an OS lock that dies with its process

    def __init__(self, path: str | os.PathLike[str], *, timeout: float = 5.0) -> None:
        self._path = database_path(path)
        self._timeout = timeout_seconds(timeout)
        exists = regular_or_absent(self._path)  # before anything is created beside it
        self._lock = threading.Lock()
        self._bell = sqlite_bell(self._path)
        self._conn: sqlite3.Connection | None = None  # the writer's: made by the first write
        self._closed = False
        reader = self._reader = SqliteReader.take(self._path, self._timeout)
        self._give_back = weakref.finalize(self, reader.give_back)
        self._reads = StoreReads(
            self,
            read_events=self._read_events,
            read_outcomes=self._read_outcomes,
            wake=self._wake,
            candidate_page=self._candidate_page,
            agent_text=sqlite_posts.agent_text,
            cursor=_utf8,
            connection=self._connection,
            look=self._look,
            token_dialect=SQLITE_TOKENS,
        )
        if exists:  # a file that is no inbox-core log: IncompatibleLog now, read-only
            reader.read(self._check_tables, absent=None)

    def _check_tables(self, conn: sqlite3.Connection, kind: str) -> None:
        """``IncompatibleLog`` for a posts, agents or checkpoints table inbox-core did not make
        (R35 v4: an application's own ``posts`` is refused when the store is built,
        untouched)."""
        if kind == "v2":
            for table in ("agents", SQLITE_POSTS, SQLITE_CHECKPOINTS):
                check_table(conn, self._path, table)

    @property
    def path(self) -> str:
        return self._path

    def _errors(self, what: str) -> contextlib.AbstractContextManager[None]:
        return sqlite_errors(self._path, what, self._timeout)

    @contextlib.contextmanager
    def _connection(self, what: str) -> Iterator[sqlite3.Connection]:
        """The writer's connection; the first use checks, creates or migrates the file."""
        with self._lock, self._errors(what):
            if self._closed:
                raise LogUnavailable(f"SqliteStore {self._path!r} is closed")
            if self._conn is None:
                self._conn = self._open_writer()
            yield self._conn

    def _open_writer(self) -> sqlite3.Connection:
        SqliteLog(self._path, timeout=self._timeout).close()  # checks, creates or migrates
        conn = sqlite3.connect(
            self._path, timeout=self._timeout, isolation_level=None, check_same_thread=False
        )
        try:
            conn.execute("PRAGMA synchronous=FULL")
            sqlite_posts.create_posts(conn, self._path)
        except BaseException:
            conn.close()
            raise
        return conn

    def _reading(self) -> SqliteReader:
        if self._closed:
            raise LogUnavailable(f"SqliteStore {self._path!r} is closed")
        return self._reader

    def _look(self, what: str, read: Callable[[Directory, Any], T], absent: T) -> T:
        """``read`` on the read-only reader, over the tables the file has (R36 v4)."""

        def look(conn: sqlite3.Connection, kind: str) -> T:
            directory = sqlite_directory(conn, kind)
            return absent if directory is None else read(directory, conn)

        return self._reading().read(look, absent=absent)

    def prepare(self) -> None:
        """Create the file and its tables, or migrate it, now (what the first write does):
        for producers in other languages that insert posts before anyone wrote."""
        with self._connection("prepare"):
            pass

    def log(self, agent_id: str, **options: Any) -> SqliteLog:
        """Agent ``agent_id``'s log in this file (options as ``SqliteLog``'s)."""
        return SqliteLog(self._path, agent_id=agent_id, **options)

    def post(self, agent_id: str, command: Command, *, key: str | None = None) -> Receipt:
        """Post ``command`` for agent ``agent_id`` (R35); durable when it returns. A ``key``
        posted before for that agent returns the first post's receipt and writes nothing."""
        agent = limits.agent_id(agent_id)
        text = encode_post(command)
        checked = post_key(key)
        with self._connection("post") as conn:
            post_id = sqlite_posts.insert_post(conn, agent, text, checked)
        self._bell.ring(f"post:{agent}")
        return Receipt(agent, post_id)

    def prune(self, *, older_than: float) -> int:
        """Delete the outcomes (and keys) of posts decided more than ``older_than`` seconds
        ago; pending posts stay. Returns how many were deleted."""
        seconds = prune_age(older_than)
        with self._connection("prune") as conn:
            return sqlite_posts.prune(conn, seconds)

    def _candidate_page(self, after: bytes | None, limit: int) -> tuple[list[Any], bytes | None]:
        """The stored ids of one page after ``after``, but those a live process holds."""
        with self._connection("read") as conn:
            stored = sqlite_posts.candidate_page(conn, after, limit)
        end = stored[-1] if len(stored) == limit else None
        held = held_elsewhere(self._path, [_text(value) for value in stored])
        return [value for value in stored if _text(value) not in held], end

    def has_owner(self, agent_id: str) -> bool:
        agent = limits.agent_id(agent_id)
        return bool(held_elsewhere(self._path, [agent]))

    def renew(self, logs: Sequence[Any]) -> set[str]:
        """Nothing to renew: an SQLite owner holds an OS lock, no lease (R29)."""
        return set()

    def pending(self, agent_id: str, limit: int = 100) -> list[PendingPost]:
        agent, count = limits.agent_id(agent_id), checked_limit(limit)

        def page(conn: sqlite3.Connection, kind: str) -> list[PendingPost]:
            return sqlite_reading.pending(conn, kind, self._path, agent, count)

        return self._reading().read(page, absent=[])  # read-only, like outcome (R36 v4)

    def _wake(self, key: str) -> Wake:
        return SqliteWake(self._path, key)

    def _read_events(self, agent_id: str, since: int, limit: int) -> Batch:
        def page(conn: sqlite3.Connection, kind: str) -> Batch:
            rows = sqlite_reading.event_rows(conn, kind, agent_id, since, limit)
            return decode_batch(since, rows, limit)

        return self._reading().read(page, absent=Batch(since))

    def read_tail(self, agent_id: str) -> Tail:
        """The agent's newest checkpoint and the events from the one it follows on (R41), in
        one read-only transaction."""
        agent = limits.agent_id(agent_id)

        def tail(conn: sqlite3.Connection, kind: str) -> Tail:
            stored, first, rows = tail_rows(conn, kind, agent)
            return Tail(stored, first, decode_rows(rows, first))

        return self._reading().read(tail, absent=Tail(None, 0, []))

    def _read_outcomes(self, agent_id: str, post_ids: Sequence[int]) -> dict[int, PostOutcome]:
        def found(conn: sqlite3.Connection, kind: str) -> dict[int, PostOutcome]:
            return sqlite_reading.outcomes(conn, kind, self._path, agent_id, post_ids)

        return self._reading().read(found, absent={})

    # what every store answers alike (``reads.StoreReads``; documented by ``base.Store``)

    def outcome(self, receipt: Receipt) -> PostOutcome:
        return self._reads.outcome(receipt)

    async def wait(self, receipt: Receipt, timeout: float | None = None) -> PostOutcome:
        return await self._reads.wait(receipt, timeout)

    def watch(self, agent_id: str, since: int = 0) -> AsyncIterator[tuple[int, DurableEvent]]:
        return self._reads.watch(agent_id, since)

    def events(
        self, agent_id: str, since: int = 0, limit: int = BATCH_EVENTS
    ) -> list[tuple[int, DurableEvent]]:
        return self._reads.events(agent_id, since, limit)

    def candidates(self, limit: int, *, after: str | None = None) -> list[str]:
        return self._reads.candidates(limit, after=after)

    def work_wake(self) -> Wake:
        return self._reads.work_wake()

    def agents(
        self,
        after: str | None = None,
        limit: int = 100,
        accept: Callable[[str], bool] | None = None,
    ) -> list[AgentSummary]:
        return self._reads.agents(after, limit, accept)

    def pending_count(self, agent_id: str) -> int:
        return self._reads.pending_count(agent_id)

    def posted_command(self, receipt: Receipt) -> object:
        return self._reads.posted_command(receipt)

    @property
    def tokens(self) -> TokenTable:
        return self._reads.tokens()

    def close(self) -> None:
        """Close the connections (idempotent); watches and waits then end in
        ``LogUnavailable``."""
        with self._lock:
            self._closed = True
            conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()
        self._give_back()

    def __repr__(self) -> str:
        return f"SqliteStore({self._path!r})"
