"""``PerThread``: this process's connections to one database, one per thread, shared.

Every log object of a database (``SqliteLog``, ``PostgresLog``) takes a share when it is
built and gives it back when closed or collected; each thread that uses one of them gets
its own connection, opened on first use (and reopened once ``usable`` says it is broken),
and the last share given back closes them all. A connection is only ever used by the
thread it belongs to, so none is locked. A forked child keeps none of them (unclosed: they
are the parent's). ``SqliteConnections`` and ``PgConnections`` say how to open one.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Hashable, Iterator
from typing import Any, ClassVar, Final, Generic, TypeVar

from inbox_core.shell.stores.errors import LogUnavailable

__all__ = ["PerThread"]

C = TypeVar("C")
P = TypeVar("P", bound="PerThread[Any]")


class PerThread(Generic[C]):
    """The shared connections of one database; subclasses ``open`` (and may refine
    ``usable``). ``key`` names the database and the options the connections are made with."""

    __slots__ = ("_conns", "key", "users")

    _pools: ClassVar[dict[Hashable, Any]]
    _lock: Final = threading.RLock()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls._pools = {}

    def __init__(self, key: Hashable) -> None:
        self.key = key
        self.users = 0
        self._conns: dict[int, C] = {}

    def open(self) -> C:
        """A new connection for the calling thread (errors propagate, nothing kept)."""
        raise NotImplementedError

    def usable(self, conn: C) -> bool:
        return True

    def close(self, conn: C) -> None:
        conn.close()  # type: ignore[attr-defined]

    @classmethod
    def _share(cls: type[P], key: Hashable, make: Any) -> P:
        """A share of ``key``'s connections; ``make()`` builds the registry of a new key (its
        error propagates and nothing is shared)."""
        with cls._lock:
            pool: P | None = cls._pools.get(key)
            if pool is None:
                pool = make()
                cls._pools[key] = pool
            assert pool is not None
            pool.users += 1
            return pool

    def let_go(self, conn: C) -> None:
        """What ``give_back`` does with another thread's connection: nothing, by default.
        That thread may be running a statement on it right now (a read the event loop
        handed to a worker thread, whose agent is then closed), and closing a connection
        under a running statement crashes the process (SQLite's module frees what the
        statement still uses): dropped from the registry, the connection closes when its
        last reference goes, at once when idle, else when that thread is done with it."""

    def give_back(self) -> None:
        """Return a share; the last one closes the calling thread's connection and lets go
        of the others (``let_go``). Each share is given back once: the caller's
        ``weakref.finalize`` sees to that."""
        with self._lock:
            self.users -= 1
            if self.users > 0:
                return
            if self._pools.get(self.key) is self:
                del self._pools[self.key]
            conns, self._conns = self._conns, {}
        own = conns.pop(threading.get_ident(), None)
        for conn in conns.values():
            with contextlib.suppress(Exception):
                self.let_go(conn)
        conns.clear()
        if own is not None:
            with contextlib.suppress(Exception):
                self.close(own)

    @contextlib.contextmanager
    def held(self) -> Iterator[C]:
        """The calling thread's connection, with a share held while it is used: what a
        background thread (a checkpoint writer) uses, so that the last log object closed
        meanwhile does not close a connection in use (``LogUnavailable`` once all were)."""
        with self._lock:
            if self.users <= 0:
                raise LogUnavailable(f"{self!r}: every log of this database was closed")
            self.users += 1
        try:
            yield self.connection()
        finally:
            self.give_back()

    def connection(self) -> C:
        """The calling thread's connection, opened on first use (again once broken)."""
        ident = threading.get_ident()
        known = self._conns.get(ident)
        if known is not None and self.usable(known):
            return known
        conn = self.open()
        with self._lock:
            self._conns[ident] = conn
        return conn

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}({self.key!r}, users={self.users}, threads={len(self._conns)})"
        )


def _forget_in_child() -> None:  # pragma: no cover - runs in a forked child
    pending: list[type[PerThread[Any]]] = [PerThread]
    while pending:
        cls = pending.pop()
        pending.extend(cls.__subclasses__())
        if "_pools" in vars(cls):
            cls._pools.clear()


os.register_at_fork(after_in_child=_forget_in_child)
