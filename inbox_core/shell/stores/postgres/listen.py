"""Waking a PostgreSQL database's waiters (R36): one ``LISTEN`` connection per database and
event loop (``PgListener``) rings the payload of every notification, which triggers send
inside the changing transaction (never before its commit), and every key after a
reconnect; each waiter also looks again after a slow poll.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import logging
import weakref
from typing import Any, Final

from inbox_core.shell.stores.postgres.schema import NOTIFY_CHANNEL
from inbox_core.shell.stores.wakes import Bell, Lingering, slow_poll

__all__ = ["PG_POLL_SECONDS", "PgListener", "PgWake", "pg_listener"]

logger: Final = logging.getLogger("inbox_core.shell")

PG_POLL_SECONDS: Final = 10.0
"""The slow poll of a PostgreSQL waiter: how late a post whose notification was lost is seen."""
PG_LINGER_SECONDS: Final = 30.0
"""How long a ``LISTEN`` connection stays open after its last waiter left."""
_RECONNECT_SECONDS: Final = 0.5


class PgWake:
    """A chime of a ``PgListener``'s bell, with the slow poll."""

    __slots__ = ("_chime", "_listener")

    def __init__(self, listener: PgListener, key: str) -> None:
        self._listener = listener
        self._chime = listener.bell.chime(key)

    async def wait(self) -> None:
        await self._chime.wait(slow_poll(PG_POLL_SECONDS))

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

    __slots__ = ("_conninfo", "_running", "bell", "listening")

    def __init__(self, conninfo: str) -> None:
        self._conninfo = conninfo
        self.bell = Bell()
        self.listening = asyncio.Event()
        # the connection stays PG_LINGER_SECONDS after the last user (a poster's ``wait``
        # after each post would otherwise connect every time)
        self._running = Lingering(
            self._listen, "inbox_core.shell LISTEN", PG_LINGER_SECONDS, self.listening.clear
        )

    def wake(self, key: str) -> PgWake:
        """A wake for ``key`` (starts the listener if it is the first user)."""
        self._running.acquire()
        return PgWake(self, key)

    def release(self) -> None:
        """One user fewer."""
        self._running.release()

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
