"""Waking whoever waits on a store (R36): a post for its owner, events for a watcher, an
outcome for a poster.

A ``Bell`` rings keys (``"post:<agent>"``, ``"events:<agent>"``,
``"outcome:<agent>"``; ``"post:*"`` hears every post) to ``Chime``s, each an
asyncio event of one loop (rung from any thread). Within one process a writer rings the bell of its
database at once. Across processes:

- SQLite: one ``SqlitePoller`` per database file and event loop checks
  ``PRAGMA data_version`` on its own read-only connection every
  ``SQLITE_POLL_SECONDS`` while anyone waits (it changes when another
  connection commits: a read of shared memory, no I/O); on a change it
  rings ``post:<agent>`` for each agent with a new post, and every watcher
  and outcome waiter of the file. While no ``-wal`` file exists (nobody
  writes, or there is no file yet) it watches the file and its ``-wal`` with
  ``stat`` instead, so that it creates nothing (R36 v4). The cost is one
  pragma per interval however many agents wait; each waiter also looks
  again after ``SQLITE_FALLBACK_SECONDS`` to twice that (``slow_poll``);
- PostgreSQL: a ``PgListener`` holds one ``LISTEN`` connection and rings the
  payload of every notification (sent by triggers inside the changing
  transaction, never before its commit); the listener rings every key after
  it (re)connects, and a waiter also wakes after ``PG_POLL_SECONDS`` to twice
  that (the slow poll).

A wake means "look again": waiters always re-read the database.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import threading
from collections.abc import Callable, Coroutine
from typing import Any, Final, Protocol

__all__ = [
    "Bell",
    "Chime",
    "Lingering",
    "Wake",
    "slow_poll",
]

logger: Final = logging.getLogger("inbox_core.shell")


def slow_poll(seconds: float) -> float:
    """A waiter's look with no wake: between ``seconds`` and twice that, at random, so that
    a thousand idle agents of a worker do not all read the store at once (and read it
    rarely: the bell and the change poller, or the listener's ring after a reconnect, are
    what wakes them; this only covers a wake that was lost)."""
    return seconds * (1.0 + random.random())


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
            # not wait_for: on 3.11 it can swallow a cancel that races the event (gh-86296),
            # and a waiter in a loop then never ends (asyncio.run's teardown hangs on it)
            async with asyncio.timeout(timeout):
                await self._event.wait()
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
        """Ring ``key``'s chimes and those of its kind's wildcard (``post:*`` for ``post:a``:
        a worker waiting for any post, R37)."""
        kind, _, _ = key.partition(":")
        with self._lock:
            chimes = (*self._chimes.get(key, ()), *self._chimes.get(f"{kind}:*", ()))
        for chime in chimes:
            chime.ring()

    def ring_all(self) -> None:
        with self._lock:
            chimes = [chime for group in self._chimes.values() for chime in group]
        for chime in chimes:
            chime.ring()

    def agents(self, *kinds: str) -> list[str]:
        """The agent ids someone waits on under any of ``kinds`` (``"events"``), sorted."""
        prefixes = tuple(f"{kind}:" for kind in kinds)
        with self._lock:
            keys = [key for key in self._chimes if key.startswith(prefixes)]
        return sorted({key.partition(":")[2] for key in keys} - {"*"})


class Wake(Protocol):
    """What a store hands a waiter (an owner's post server, a watcher, a poster's wait):
    ``await wait()`` returns when something it waits for may have changed (always look
    again), ``close()`` forgets it."""

    async def wait(self) -> None: ...

    def close(self) -> None: ...


class Lingering:
    """A task run while anyone uses it and ``linger`` seconds after the last user left
    (``acquire``/``release``), since users come and go (a front door's requests, a poster's
    ``wait`` after each post) and each would otherwise start it and take its baseline
    again. ``stopped`` runs when the task is cancelled. Call inside the event loop."""

    __slots__ = ("_idle", "_linger", "_make", "_name", "_stopped", "_task", "_users")

    def __init__(
        self,
        make: Callable[[], Coroutine[Any, Any, None]],
        name: str,
        linger: float,
        stopped: Callable[[], None] = lambda: None,
    ) -> None:
        self._make = make
        self._name = name
        self._linger = linger
        self._stopped = stopped
        self._users = 0
        self._task: asyncio.Task[None] | None = None
        self._idle: asyncio.TimerHandle | None = None

    def acquire(self) -> None:
        self._users += 1
        if self._idle is not None:
            self._idle.cancel()
            self._idle = None
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._make(), name=self._name)

    def release(self) -> None:
        self._users -= 1
        if self._users <= 0 and self._task is not None and self._idle is None:
            self._idle = asyncio.get_running_loop().call_later(self._linger, self._stop)

    def _stop(self) -> None:
        self._idle = None
        if self._users <= 0 and self._task is not None:
            self._task.cancel()
            self._task = None
            self._stopped()
