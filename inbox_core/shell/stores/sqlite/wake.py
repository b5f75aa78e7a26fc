"""Waking an SQLite file's waiters (R36): within the process at once (the file's ``Bell``),
across processes by one ``SqlitePoller`` per file and event loop that checks ``PRAGMA
data_version`` (or, while nobody writes, the files' ``stat``) and rings what changed.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sqlite3
import threading
import weakref
from pathlib import Path
from typing import Final

from inbox_core.shell.stores.wakes import Bell, slow_poll

__all__ = ["SQLITE_POLL_SECONDS", "SqlitePoller", "SqliteWake", "data_version", "sqlite_bell"]

logger: Final = logging.getLogger("inbox_core.shell")

SQLITE_POLL_SECONDS: Final = 0.005
"""How often a file's poller checks for another process's commit (``PRAGMA data_version``)."""
SQLITE_FALLBACK_SECONDS: Final = 10.0
"""How often an SQLite waiter looks again with no wake (its poller failing, say)."""


_SQLITE_BELLS: dict[str, Bell] = {}
_SQLITE_BELLS_LOCK: Final = threading.Lock()


def sqlite_bell(path: str) -> Bell:
    """The process's bell of one SQLite database file (by ``realpath``)."""
    where = os.path.realpath(path)
    with _SQLITE_BELLS_LOCK:
        bell = _SQLITE_BELLS.get(where)
        if bell is None:
            bell = _SQLITE_BELLS[where] = Bell()
        return bell


class SqlitePoller:
    """Notices other connections' commits to one SQLite file for the waiters of one event
    loop: one task and one connection, running while anyone waits (``acquire``/``release``)."""

    __slots__ = ("_bell", "_path", "_task", "_users")

    def __init__(self, path: str, bell: Bell) -> None:
        self._path = path
        self._bell = bell
        self._users = 0
        self._task: asyncio.Task[None] | None = None

    def acquire(self) -> None:
        self._users += 1
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(
                self._poll(), name="inbox_core.shell SQLite poller"
            )

    def release(self) -> None:
        self._users -= 1
        if self._users <= 0 and self._task is not None:
            self._task.cancel()
            self._task = None

    async def _poll(self) -> None:
        while True:
            try:
                conn = _read_only_connection(self._path)
                if conn is None:
                    await self._watch_files()
                    continue
                try:
                    await self._watch(conn)
                finally:
                    conn.close()
            except sqlite3.Error as error:  # the waiters' own reads say what is wrong
                logger.debug("inbox_core SQLite poller of %r: %s", self._path, error)
                self._bell.ring_all()
            await asyncio.sleep(SQLITE_FALLBACK_SECONDS)

    async def _watch_files(self) -> None:
        """No -wal file (nobody writes, or the file is not there yet): watch the file and its
        -wal with ``stat`` until either changes (a writer came), then ring every waiter."""
        before = _fingerprints(self._path)
        self._bell.ring_all()  # as in _watch: a change before this baseline is looked at
        while _fingerprints(self._path) == before:
            await asyncio.sleep(SQLITE_POLL_SECONDS)
        self._bell.ring_all()

    async def _watch(self, conn: sqlite3.Connection) -> None:
        version = data_version(conn)
        last_post = _last_post(conn)
        # a waiter that looked before this baseline would miss a commit made in between:
        # everyone looks once more
        self._bell.ring_all()
        while True:
            await asyncio.sleep(SQLITE_POLL_SECONDS)
            now = data_version(conn)
            if now == version:
                continue
            version = now
            for agent_id, post_id in _new_posts(conn, last_post):
                last_post = max(last_post, post_id)
                self._bell.ring(f"post:{agent_id}")
            self._bell.ring_prefix("events:")
            self._bell.ring_prefix("outcome:")


def _read_only_connection(path: str) -> sqlite3.Connection | None:
    """A connection that reads ``path`` through its writer's -wal and -shm (``mode=ro``:
    it writes nothing and never creates the file, R36 v4); None when there is no -wal file
    (a connection would create one beside a cleanly closed file) or SQLite cannot open it
    here (a directory this user cannot write)."""
    if not os.path.exists(f"{path}-wal"):
        return None
    conn = sqlite3.connect(
        f"{Path(path).as_uri()}?mode=ro", uri=True, isolation_level=None, check_same_thread=False
    )
    try:
        data_version(conn)
        conn.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()  # opens the -wal
    except sqlite3.Error:
        conn.close()
        return None
    return conn


def _fingerprints(path: str) -> tuple[tuple[int, int, int] | None, ...]:
    found: list[tuple[int, int, int] | None] = []
    for name in (path, f"{path}-wal"):
        try:
            stat = os.stat(name)
        except OSError:
            found.append(None)
        else:
            found.append((stat.st_ino, stat.st_size, stat.st_mtime_ns))
    return tuple(found)


def data_version(conn: sqlite3.Connection) -> int:
    """SQLite's count of commits by other connections, as this connection last saw it."""
    return int(conn.execute("PRAGMA data_version").fetchone()[0])


def _last_post(conn: sqlite3.Connection) -> int:
    try:
        row = conn.execute("SELECT COALESCE(MAX(post_id), 0) FROM posts").fetchone()
    except sqlite3.OperationalError:  # no posts table (yet): every post is new
        return 0
    return int(row[0])


def _new_posts(conn: sqlite3.Connection, after: int) -> list[tuple[str, int]]:
    """Each agent with a post past ``after``, and its last post. The ids are read as bytes
    (a producer may store a BLOB or bytes that are not UTF-8: such a row must not stop the
    poller, R35 v4); one that is no text rings a key nobody waits on."""
    try:
        rows = conn.execute(
            "SELECT CAST(agent_id AS BLOB), MAX(post_id) FROM posts WHERE post_id > ? "
            "GROUP BY agent_id",
            (after,),
        ).fetchall()
    except sqlite3.OperationalError:
        return []
    return [
        (agent.decode("utf-8", "replace") if isinstance(agent, bytes) else "", int(post_id))
        for agent, post_id in rows
    ]


_POLLERS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[str, SqlitePoller]] = (
    weakref.WeakKeyDictionary()
)


class SqliteWake:
    """A waiter on one SQLite file: rung within the process at once, and by the file's
    poller when another process commits (R36)."""

    __slots__ = ("_chime", "_poller")

    def __init__(self, path: str, key: str) -> None:
        where = os.path.realpath(path)
        self._chime = sqlite_bell(where).chime(key)
        by_path = _POLLERS.setdefault(asyncio.get_running_loop(), {})
        poller = by_path.get(where)
        if poller is None:
            poller = by_path[where] = SqlitePoller(where, sqlite_bell(where))
        poller.acquire()
        self._poller = poller

    async def wait(self) -> None:
        """Return once rung, or after ``SQLITE_FALLBACK_SECONDS`` (to twice that)."""
        await self._chime.wait(slow_poll(SQLITE_FALLBACK_SECONDS))

    def close(self) -> None:
        self._chime.close()
        self._poller.release()
