"""Waking whoever waits on a store (R36): a post for its owner, events for a watcher, an
outcome for a poster.

A ``Bell`` rings keys (``"post:<agent>"``, ``"events:<agent>"``,
``"outcome:<agent>"``) to ``Chime``s, each an asyncio event of one loop
(rung from any thread). Within one process a writer rings the bell of its
database at once. Across processes:

- SQLite: a waiter's chime times out every ``SQLITE_POLL_SECONDS`` and
  checks ``PRAGMA data_version`` on its connection (it changes when another
  connection commits: a read of shared memory, no I/O), so a change in
  another process is seen within that interval;
- PostgreSQL: a ``PgListener`` holds one ``LISTEN`` connection and rings the
  payload of every notification (sent by triggers inside the changing
  transaction, never before its commit); a waiter also wakes every
  ``PG_POLL_SECONDS`` (the slow poll for a notification lost with its
  connection), and the listener rings every key after it (re)connects.

A wake means "look again": waiters always re-read the database.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import logging
import os
import sqlite3
import threading
import weakref
from collections.abc import Callable
from typing import Any, Final

from inbox_core.shell.posts import NOTIFY_CHANNEL

__all__ = [
    "PG_POLL_SECONDS",
    "SQLITE_POLL_SECONDS",
    "Bell",
    "Chime",
    "PgListener",
    "SqliteWake",
    "data_version",
    "pg_listener",
    "sqlite_bell",
]

logger: Final = logging.getLogger("inbox_core.shell")

SQLITE_POLL_SECONDS: Final = 0.01
"""How often an SQLite waiter checks for another process's commit (``PRAGMA data_version``)."""
PG_POLL_SECONDS: Final = 2.0
"""The slow poll of a PostgreSQL waiter: how late a post whose notification was lost is seen."""
_RECONNECT_SECONDS: Final = 0.5


class Chime:
    """One waiter's wake-up: rung by its ``Bell`` from any thread, awaited in its loop."""

    __slots__ = ("_bell", "_event", "_key", "_loop")

    def __init__(self, bell: Bell, key: str) -> None:
        self._bell = bell
        self._key = key
        self._loop = asyncio.get_running_loop()
        self._event = asyncio.Event()

    def ring(self) -> None:
        with contextlib.suppress(RuntimeError):  # the loop was closed: nobody waits
            self._loop.call_soon_threadsafe(self._event.set)

    async def wait(self, timeout: float) -> bool:
        """True when rung (since the last wait), False after ``timeout`` seconds."""
        try:
            await asyncio.wait_for(self._event.wait(), timeout)
        except TimeoutError:
            return False
        self._event.clear()
        return True

    def close(self) -> None:
        self._bell.remove(self._key, self)

    def __enter__(self) -> Chime:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class Bell:
    """Rings chimes by key; thread-safe."""

    __slots__ = ("_chimes", "_lock")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._chimes: dict[str, set[Chime]] = {}

    def chime(self, key: str) -> Chime:
        """A chime for ``key`` in the running loop (register it before looking)."""
        chime = Chime(self, key)
        with self._lock:
            self._chimes.setdefault(key, set()).add(chime)
        return chime

    def remove(self, key: str, chime: Chime) -> None:
        with self._lock:
            chimes = self._chimes.get(key)
            if chimes is not None:
                chimes.discard(chime)
                if not chimes:
                    del self._chimes[key]

    def ring(self, key: str) -> None:
        with self._lock:
            chimes = tuple(self._chimes.get(key, ()))
        for chime in chimes:
            chime.ring()

    def ring_all(self) -> None:
        with self._lock:
            chimes = [chime for group in self._chimes.values() for chime in group]
        for chime in chimes:
            chime.ring()


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


class SqliteWake:
    """A chime that also wakes when another connection committed (``PRAGMA data_version``)."""

    __slots__ = ("_chime", "_read_version", "_version")

    def __init__(self, chime: Chime, data_version: Callable[[], int]) -> None:
        self._chime = chime
        self._read_version = data_version
        self._version = self._data_version()

    def _data_version(self) -> int | None:
        try:
            return self._read_version()
        except Exception:  # a closed or failing connection: the next read says why
            return None

    async def wait(self) -> None:
        """Return once rung or once another connection committed."""
        while not await self._chime.wait(SQLITE_POLL_SECONDS):
            version = self._data_version()
            if version != self._version:
                self._version = version
                return

    def close(self) -> None:
        self._chime.close()


def data_version(conn: sqlite3.Connection) -> int:
    """SQLite's count of commits by other connections, as this connection last saw it."""
    return int(conn.execute("PRAGMA data_version").fetchone()[0])


class PgWake:
    """A chime of a ``PgListener``'s bell, with the slow poll."""

    __slots__ = ("_chime", "_listener")

    def __init__(self, listener: PgListener, key: str) -> None:
        self._listener = listener
        self._chime = listener.bell.chime(key)

    async def wait(self) -> None:
        await self._chime.wait(PG_POLL_SECONDS)

    def close(self) -> None:
        self._chime.close()
        self._listener.release()


_LISTENERS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[str, PgListener]] = (
    weakref.WeakKeyDictionary()
)


def pg_listener(conninfo: str) -> PgListener:
    """The running loop's listener of one database (by conninfo): one ``LISTEN`` connection
    serves every log and store of that database in the loop, however many agents."""
    by_conninfo = _LISTENERS.setdefault(asyncio.get_running_loop(), {})
    listener = by_conninfo.get(conninfo)
    if listener is None:
        listener = by_conninfo[conninfo] = PgListener(conninfo)
    return listener


class PgListener:
    """One ``LISTEN inbox_core`` connection in one event loop, shared by reference count.

    ``acquire``/``release`` count its users; the task runs while anyone uses it
    and reconnects (ringing every key) after a lost connection.
    """

    __slots__ = ("_conninfo", "_task", "_users", "bell", "listening")

    def __init__(self, conninfo: str) -> None:
        self._conninfo = conninfo
        self.bell = Bell()
        self._users = 0
        self._task: asyncio.Task[None] | None = None
        self.listening = asyncio.Event()

    def wake(self, key: str) -> PgWake:
        """A wake for ``key`` (starts the listener if it is the first user)."""
        self._users += 1
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(
                self._listen(), name="inbox_core.shell LISTEN"
            )
        return PgWake(self, key)

    def release(self) -> None:
        self._users -= 1
        if self._users <= 0 and self._task is not None:
            self._task.cancel()
            self._task = None
            self.listening.clear()

    async def _listen(self) -> None:
        psycopg: Any = importlib.import_module("psycopg")
        while True:
            try:
                conn = await psycopg.AsyncConnection.connect(self._conninfo, autocommit=True)
                try:
                    await conn.execute(f"LISTEN {NOTIFY_CHANNEL}")
                    self.listening.set()
                    self.bell.ring_all()  # what was notified while not listening is looked at
                    async for note in conn.notifies():
                        self.bell.ring(note.payload)
                finally:
                    self.listening.clear()
                    with contextlib.suppress(Exception):
                        await conn.close()
            except asyncio.CancelledError:
                raise
            except Exception as error:  # the server went away: the slow poll covers the gap
                logger.debug("inbox_core LISTEN connection lost: %s", error)
            await asyncio.sleep(_RECONNECT_SECONDS)
