"""Reading an SQLite store without writing to it (R36 v4): ``SqliteReader``.

What ``SqliteStore``'s ``outcome``, ``events``, ``wait`` and ``watch`` read
through. A read never migrates, changes the journal mode, creates a table or
creates the database file; it works for a user who may only read the file. A
path that is not there yet reads as empty; one that is no regular file (a
device, a directory) is ``LogUnavailable`` before SQLite opens anything.

How a read is made depends on what is beside the file:

- a ``-wal`` file exists (a writer has the file open, or had): a ``mode=ro``
  connection, kept per thread while the store lives (SQLite's read-only
  protocol over the writer's ``-wal`` and ``-shm``; SQLite creates a missing
  ``-shm`` where the directory allows, nothing else). A reader who cannot write
  the directory reads through the writer's ``-shm``;
- no ``-wal`` file (a cleanly closed WAL file, a v1 rollback-journal file): the
  read-only reader of ``inbox-core replay`` (``sqlite.read_only``), which reads the
  file as immutable, creating nothing at all, and reads again if it changed.

Every read is one transaction (one snapshot) and classifies the file first
(``classify``: a v1 file holds agent ``"default"`` only, an empty one nothing,
anything else is ``IncompatibleLog``). A cell that is not UTF-8 reads as bytes,
so a bad row is reported as itself (``CorruptLog`` at its seq).
"""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, Final, TypeVar

from inbox_core.shell.stores.connections import PerThread
from inbox_core.shell.stores.posts import PendingPost, PostOutcome
from inbox_core.shell.stores.sqlite import posts as sqlite_posts
from inbox_core.shell.stores.sqlite.log import read_only
from inbox_core.shell.stores.sqlite.schema import (
    classify,
    regular_or_absent,
    sqlite_errors,
    stored_text,
)

__all__ = ["SqliteReader", "event_rows", "outcomes", "pending"]

T = TypeVar("T")

_EVENTS_V2: Final = (
    "SELECT seq, event FROM events WHERE agent_id = ? AND seq >= ? ORDER BY seq LIMIT ?"
)
_EVENTS_V1: Final = "SELECT seq, event FROM events WHERE seq >= ? ORDER BY seq LIMIT ?"


class SqliteReader(PerThread[sqlite3.Connection]):
    """This process's read-only connections to one SQLite file, one per thread, shared by
    every store of the file (``connections.PerThread``); see the module's docstring."""

    __slots__ = ("path", "timeout")

    def __init__(self, path: str, timeout: float) -> None:
        super().__init__((os.path.realpath(path), timeout))
        self.path = path
        self.timeout = timeout

    @classmethod
    def take(cls, path: str, timeout: float) -> SqliteReader:
        """A share of the read-only connections to ``path`` (nothing is opened yet)."""
        return cls._share((os.path.realpath(path), timeout), lambda: cls(path, timeout))

    def open(self) -> sqlite3.Connection:
        uri = f"{Path(os.path.realpath(self.path)).as_uri()}?mode=ro"
        conn = sqlite3.connect(
            uri, uri=True, timeout=self.timeout, isolation_level=None, check_same_thread=False
        )
        conn.text_factory = stored_text
        try:
            conn.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()  # opens -wal, -shm
        except BaseException:
            conn.close()
            raise
        return conn

    def read(self, read: Callable[[sqlite3.Connection, str], T], *, absent: T) -> T:
        """``read(conn, kind)`` in one read transaction, ``kind`` what ``classify`` says the
        file holds (``"v1"``, ``"v2"``, ``"empty"``); ``absent`` when there is no file."""
        if not regular_or_absent(self.path):
            return absent
        conn = self._conns.get(threading.get_ident())
        if conn is None and os.path.exists(f"{os.path.realpath(self.path)}-wal"):
            conn = self._live()
        if conn is None:  # nothing beside the file to share: read it as immutable
            return read_only(self.path, lambda c: read(c, classify(c, self.path)))
        with sqlite_errors(self.path, "read", self.timeout):
            try:
                conn.execute("BEGIN")
                try:
                    return read(conn, classify(conn, self.path))
                finally:
                    if conn.in_transaction:
                        conn.execute("ROLLBACK")  # a read: nothing to keep
            except sqlite3.Error:
                self._forget(conn)  # the next read chooses afresh (the file may be gone)
                raise

    def _forget(self, conn: sqlite3.Connection) -> None:
        with self._lock:
            if self._conns.get(threading.get_ident()) is conn:
                del self._conns[threading.get_ident()]
        conn.close()

    def _live(self) -> sqlite3.Connection | None:
        """The calling thread's connection through the writer's -wal and -shm; None when
        SQLite cannot open them here (``read_only`` then says why, or reads immutably)."""
        try:
            return self.connection()
        except sqlite3.Error:
            return None


def event_rows(
    conn: sqlite3.Connection, kind: str, agent_id: str, since: int, limit: int
) -> Iterator[Any]:
    """The agent's ``(seq, event)`` rows from seq ``since`` on, at most ``limit``."""
    if kind == "v2":
        return conn.execute(_EVENTS_V2, (agent_id, since, limit))
    if kind == "v1" and agent_id == "default":  # a v1 file holds agent "default" only
        return conn.execute(_EVENTS_V1, (since, limit))
    return iter(())


def pending(
    conn: sqlite3.Connection, kind: str, path: str, agent_id: str, limit: int
) -> list[PendingPost]:
    """The agent's oldest ``limit`` unconsumed posts (none in a v1 or empty file, or one no
    poster wrote to yet)."""
    if kind != "v2" or not sqlite_posts.has_posts(conn, path):
        return []
    return sqlite_posts.pending(conn, agent_id, limit)


def outcomes(
    conn: sqlite3.Connection, kind: str, path: str, agent_id: str, post_ids: Sequence[int]
) -> dict[int, PostOutcome]:
    """The stored outcomes of those of the agent's posts ``post_ids`` that exist (none in
    a v1 or empty file, or one no poster wrote to yet; ``IncompatibleLog`` for a posts
    table that is not ours)."""
    if kind != "v2" or not sqlite_posts.has_posts(conn, path):
        return {}
    return sqlite_posts.outcomes(conn, agent_id, post_ids)
