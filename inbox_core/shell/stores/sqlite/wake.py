"""Waking an SQLite file's waiters (R36): within the process at once (the file's ``Bell``),
across processes by one ``SqlitePoller`` per file and event loop that checks ``PRAGMA
data_version`` (or, while nobody writes, the files' ``stat``) and rings what changed: each
agent with a new post, and, after one read of where every waited agent stands
(``agent_heads``, in a worker thread), the watchers and outcome waiters of just the agents
that moved (a thousand streams over a hundred agents cost one read per commit, not a
hundred). A poller lingers ``SQLITE_LINGER_SECONDS`` after its last waiter left (a front
door's requests come and go; each would connect and take a baseline again).
"""

from __future__ import annotations

import asyncio
import functools
import json
import logging
import os
import sqlite3
import threading
import weakref
from pathlib import Path
from typing import Final

from inbox_core.shell.stores.sqlite.schema import SQLITE_POSTS
from inbox_core.shell.stores.wakes import Bell, Lingering, slow_poll

__all__ = [
    "SQLITE_LINGER_SECONDS",
    "SQLITE_POLL_SECONDS",
    "SqlitePoller",
    "SqliteWake",
    "agent_heads",
    "data_version",
    "sqlite_bell",
]

logger: Final = logging.getLogger("inbox_core.shell")

SQLITE_POLL_SECONDS: Final = 0.005
"""How often a file's poller checks for another process's commit (``PRAGMA data_version``)."""
SQLITE_LINGER_SECONDS: Final = 2.0
"""How long a file's poller keeps its connection after its last waiter left."""
SQLITE_FALLBACK_SECONDS: Final = 10.0
"""How often an SQLite waiter looks again with no wake (its poller failing, say)."""


_SQLITE_BELLS: dict[str, Bell] = {}
_SQLITE_BELLS_LOCK: Final = threading.Lock()


@functools.lru_cache(maxsize=256)
def _resolved(path: str) -> str:
    """``os.path.realpath(path)``, once per path: it ``lstat``s every component, and a
    waiter is made for every ``wait`` and ``watch`` (a front door makes one per request)."""
    return os.path.realpath(path)


def sqlite_bell(path: str) -> Bell:
    """The process's bell of one SQLite database file (by ``realpath``)."""
    where = _resolved(path)
    with _SQLITE_BELLS_LOCK:
        bell = _SQLITE_BELLS.get(where)
        if bell is None:
            bell = _SQLITE_BELLS[where] = Bell()
        return bell


class SqlitePoller:
    """Notices other connections' commits to one SQLite file for the waiters of one event
    loop: one task and one connection, running while anyone waits (``acquire``/``release``)
    and ``SQLITE_LINGER_SECONDS`` after the last one left."""

    __slots__ = ("_bell", "_path", "_running")

    def __init__(self, path: str, bell: Bell) -> None:
        self._path = path
        self._bell = bell
        self._running = Lingering(
            self._poll, "inbox_core.shell SQLite poller", SQLITE_LINGER_SECONDS
        )

    def acquire(self) -> None:
        self._running.acquire()

    def release(self) -> None:
        self._running.release()

    async def _poll(self) -> None:
        while True:
            try:
                conn = _read_only_connection(self._path)
                if conn is None:
                    await self._watch_files()
                    continue
                lock = threading.Lock()  # a look in a worker thread still reading at a cancel
                try:
                    await self._watch(conn, lock)
                finally:
                    with lock:
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

    async def _watch(self, conn: sqlite3.Connection, lock: threading.Lock) -> None:
        version = data_version(conn)
        last_post = _last_post(conn)
        heads = await self._heads(conn, lock)
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
            heads = await self._ring_changed(conn, lock, heads)

    async def _heads(
        self, conn: sqlite3.Connection, lock: threading.Lock
    ) -> dict[str, tuple[object, ...]]:
        """Where every agent someone waits on stands now (``agent_heads``), read off the
        loop; none known when the file has no table to read them from."""
        agents = self._bell.agents("events", "outcome")

        def look() -> dict[str, tuple[object, ...]]:
            with lock:
                return agent_heads(conn, agents)

        if not agents:
            return {}
        try:
            return await asyncio.to_thread(look)
        except sqlite3.Error:
            return {}

    async def _ring_changed(
        self, conn: sqlite3.Connection, lock: threading.Lock, before: dict[str, tuple[object, ...]]
    ) -> dict[str, tuple[object, ...]]:
        """Ring the watchers and outcome waiters of just the agents whose log or pending
        posts changed since ``before`` (or whose place is not known: they came since, or
        the file has no table to read it from). Returns where they stand now."""
        now = await self._heads(conn, lock)
        for agent in self._bell.agents("events", "outcome"):
            if agent not in now or now[agent] != before.get(agent):
                self._bell.ring(f"events:{agent}")
                self._bell.ring(f"outcome:{agent}")
        return now


_HEADS: Final = (
    "SELECT value, (SELECT max(seq) FROM events WHERE agent_id = value){posts} FROM json_each(?)"
)
_PENDING_HEAD: Final = (
    ", (SELECT count(*) || ',' || ifnull(max(post_id), '') FROM "
    f"{SQLITE_POSTS} WHERE agent_id = value AND outcome IS NULL)"
)


def agent_heads(conn: sqlite3.Connection, agents: list[str]) -> dict[str, tuple[object, ...]]:
    """Where each of ``agents`` stands: its last seq, and its pending posts' number and last
    id (the owner decides posts in order, and a post appends events or is rejected, so any
    decision or new post changes one of them). One index probe per agent and table; a
    file without a posts table has no pending posts."""
    ids = json.dumps(agents, ensure_ascii=False)
    try:
        rows = conn.execute(_HEADS.format(posts=_PENDING_HEAD), (ids,)).fetchall()
    except sqlite3.OperationalError:  # no posts table (yet): the log alone
        rows = conn.execute(_HEADS.format(posts=""), (ids,)).fetchall()
    return {str(row[0]): tuple(row[1:]) for row in rows}


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
        where = _resolved(path)
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
