"""B8's floor: the cheapest plausible mailbox, bare SQL on PostgreSQL or SQLite.

Not an implementation of R35/R36, only the least work that still delivers
durably across processes, so that the other systems' figures can be read as
multiples of it:

- a post is one transaction of one statement: PostgreSQL inserts the row and
  ``pg_notify``s in the same statement; SQLite inserts it (WAL, ``synchronous=FULL``
  as ``SqliteLog``'s default);
- the consumer wakes on LISTEN (PostgreSQL; a 1 s poll would catch a lost
  notification) or on a change of ``PRAGMA data_version`` polled every 2 ms
  (SQLite), and marks *every* pending row applied in one transaction, in id order:
  the lower bound for a consumer that batches a burst;
- watch: the appender inserts into a log table (and notifies); the watcher reads
  the rows past the last one it saw on each wake.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from .base import Appender, Applied, Backend, Consumer, Payload, Producer, Target, Watcher, stamp

CHANNEL = "b8_floor"
LOG_CHANNEL = "b8_floor_log"
FALLBACK_POLL_S = 1.0  # the slow poll: a lost notification (PostgreSQL), a missed change
SQLITE_POLL_S = 0.002  # the cross-process change check

PG_SCHEMA = """
CREATE TABLE IF NOT EXISTS b8_floor_mailbox (
    id bigserial PRIMARY KEY,
    agent text NOT NULL,
    payload text NOT NULL,
    applied boolean NOT NULL DEFAULT false
);
CREATE INDEX IF NOT EXISTS b8_floor_pending ON b8_floor_mailbox (id) WHERE NOT applied;
CREATE TABLE IF NOT EXISTS b8_floor_log (
    seq bigserial PRIMARY KEY,
    agent text NOT NULL,
    payload text NOT NULL
);
CREATE INDEX IF NOT EXISTS b8_floor_log_agent ON b8_floor_log (agent, seq);
"""
PG_POST = (
    "WITH p AS (INSERT INTO b8_floor_mailbox (agent, payload) VALUES (%s, %s) RETURNING agent) "
    f"SELECT pg_notify('{CHANNEL}', agent) FROM p"
)
PG_DRAIN = (
    "WITH d AS (SELECT id FROM b8_floor_mailbox WHERE NOT applied ORDER BY id "
    "FOR UPDATE SKIP LOCKED) "
    "UPDATE b8_floor_mailbox m SET applied = true FROM d WHERE m.id = d.id "
    "RETURNING m.id, m.agent, m.payload"
)
PG_APPEND = (
    "WITH a AS (INSERT INTO b8_floor_log (agent, payload) VALUES (%s, %s) RETURNING agent) "
    f"SELECT pg_notify('{LOG_CHANNEL}', agent) FROM a"
)
READ_LOG = "SELECT seq, payload FROM b8_floor_log WHERE agent = {p} AND seq > {p} ORDER BY seq"

SQLITE_SCHEMA = """
CREATE TABLE IF NOT EXISTS b8_floor_mailbox (
    id INTEGER PRIMARY KEY,
    agent TEXT NOT NULL,
    payload TEXT NOT NULL,
    applied INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS b8_floor_pending ON b8_floor_mailbox (applied, id);
CREATE TABLE IF NOT EXISTS b8_floor_log (
    seq INTEGER PRIMARY KEY,
    agent TEXT NOT NULL,
    payload TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS b8_floor_log_agent ON b8_floor_log (agent, seq);
"""


def _pg(conninfo: str) -> Any:
    import psycopg  # noqa: PLC0415 - the postgres extra is optional

    return psycopg.connect(conninfo, autocommit=True)


def _sqlite(path: str) -> sqlite3.Connection:
    conn = sqlite3.connect(path, isolation_level=None, timeout=60, check_same_thread=False)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=FULL")
    return conn


# ------------------------------------------------------------------ PostgreSQL


class _PgProducer:
    def __init__(self, conninfo: str) -> None:
        self.conn = _pg(conninfo)

    def post(self, agent: str, payload: Payload) -> None:
        self.conn.execute(PG_POST, (agent, json.dumps(payload)))

    def close(self) -> None:
        self.conn.close()


class _Server:
    """A consumer thread: ``drain`` once, then after every wake, until stopped."""

    def __init__(
        self, wait: Callable[[], None], drain: Callable[[], list[tuple[Any, ...]]]
    ) -> None:
        self._wait, self._drain = wait, drain
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None
        self._applied: Applied | None = None
        self.error: BaseException | None = None

    def serve(self, expected: Mapping[str, int], applied: Applied) -> None:
        self._applied = applied
        self._stopping.clear()
        self._thread = threading.Thread(target=self._run, name="b8-floor-consumer", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        assert self._applied is not None
        try:
            while not self._stopping.is_set():
                for _id, agent, text in self._drain():
                    self._applied(agent, json.loads(text))
                self._wait()
        except BaseException as exc:  # reported by stop(), not lost in a thread
            self.error = exc

    def stop(self, timeout: float, wake: Callable[[], None]) -> None:
        self._stopping.set()
        wake()
        if self._thread is not None:
            self._thread.join(timeout)
        if self.error is not None:
            raise RuntimeError(f"floor consumer failed: {self.error!r}") from self.error


class _PgConsumer:
    def __init__(self, conninfo: str) -> None:
        self.listen, self.work, self.waker = _pg(conninfo), _pg(conninfo), _pg(conninfo)
        self.listen.execute(f"LISTEN {CHANNEL}")
        self.server = _Server(self._wait, self._drain_rows)

    def _wait(self) -> None:
        for _note in self.listen.notifies(timeout=FALLBACK_POLL_S, stop_after=1):
            pass
        for _note in self.listen.notifies(timeout=0):  # the wakes already queued: one drain
            pass

    def _drain_rows(self) -> list[tuple[Any, ...]]:
        with self.work.transaction():
            rows = self.work.execute(PG_DRAIN).fetchall()
        return sorted(rows)  # RETURNING has no order; id order is post order

    def serve(self, expected: Mapping[str, int], applied: Applied) -> None:
        self.server.serve(expected, applied)

    def stop(self, timeout: float) -> None:
        self.server.stop(timeout, lambda: self.waker.execute(f"NOTIFY {CHANNEL}"))

    def close(self) -> None:
        for conn in (self.listen, self.work, self.waker):
            conn.close()


class _PgAppender:
    def __init__(self, conninfo: str, text: str) -> None:
        self.conn, self.text = _pg(conninfo), text

    def open(self, agent: str) -> None:
        return None

    def write(self, agent: str, count: int, interval: float) -> None:
        for i in range(count):
            self.conn.execute(PG_APPEND, (agent, json.dumps(stamp(-1, i, self.text))))
            time.sleep(interval)

    def close(self) -> None:
        self.conn.close()


class _PgWatcher:
    def __init__(self, conninfo: str) -> None:
        self.listen, self.read = _pg(conninfo), _pg(conninfo)
        self.listen.execute(f"LISTEN {LOG_CHANNEL}")

    def watch(
        self, agent: str, count: int, seen: Applied, ready: Callable[[], None], timeout: float
    ) -> None:
        ready()
        last, got, deadline = 0, 0, time.monotonic() + timeout
        while got < count and time.monotonic() < deadline:
            for seq, text in self.read.execute(READ_LOG.format(p="%s"), (agent, last)):
                seen(agent, json.loads(text))
                last, got = seq, got + 1
            if got < count:
                for _note in self.listen.notifies(timeout=FALLBACK_POLL_S, stop_after=1):
                    pass

    def close(self) -> None:
        self.listen.close()
        self.read.close()


# ---------------------------------------------------------------------- SQLite


class _SqliteProducer:
    def __init__(self, path: str) -> None:
        self.conn = _sqlite(path)

    def post(self, agent: str, payload: Payload) -> None:
        self.conn.execute(
            "INSERT INTO b8_floor_mailbox (agent, payload) VALUES (?, ?)",
            (agent, json.dumps(payload)),
        )

    def close(self) -> None:
        self.conn.close()


class _Changes:
    """Another connection's commit, seen through ``PRAGMA data_version`` (cheap, no table read)."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn
        self.version = -1

    def wait(self, limit: float) -> None:
        deadline = time.monotonic() + limit
        while True:
            version = self.conn.execute("PRAGMA data_version").fetchone()[0]
            if version != self.version:
                self.version = version
                return
            if time.monotonic() >= deadline:
                return
            time.sleep(SQLITE_POLL_S)


class _SqliteConsumer:
    def __init__(self, path: str) -> None:
        self.conn = _sqlite(path)
        self.changes = _Changes(self.conn)
        self.server = _Server(lambda: self.changes.wait(FALLBACK_POLL_S), self._drain_rows)

    def _drain_rows(self) -> list[tuple[Any, ...]]:
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            rows = self.conn.execute(
                "SELECT id, agent, payload FROM b8_floor_mailbox WHERE applied = 0 ORDER BY id"
            ).fetchall()
            if rows:
                self.conn.execute(
                    "UPDATE b8_floor_mailbox SET applied = 1 WHERE applied = 0 AND id <= ?",
                    (rows[-1][0],),
                )
            self.conn.execute("COMMIT")
        except BaseException:
            self.conn.execute("ROLLBACK")
            raise
        return rows

    def serve(self, expected: Mapping[str, int], applied: Applied) -> None:
        self.server.serve(expected, applied)

    def stop(self, timeout: float) -> None:
        self.server.stop(timeout, lambda: None)

    def close(self) -> None:
        self.conn.close()


class _SqliteAppender:
    def __init__(self, path: str, text: str) -> None:
        self.conn, self.text = _sqlite(path), text

    def open(self, agent: str) -> None:
        return None

    def write(self, agent: str, count: int, interval: float) -> None:
        for i in range(count):
            self.conn.execute(
                "INSERT INTO b8_floor_log (agent, payload) VALUES (?, ?)",
                (agent, json.dumps(stamp(-1, i, self.text))),
            )
            time.sleep(interval)

    def close(self) -> None:
        self.conn.close()


class _SqliteWatcher:
    def __init__(self, path: str) -> None:
        self.conn = _sqlite(path)
        self.changes = _Changes(self.conn)

    def watch(
        self, agent: str, count: int, seen: Applied, ready: Callable[[], None], timeout: float
    ) -> None:
        ready()
        last, got, deadline = 0, 0, time.monotonic() + timeout
        while got < count and time.monotonic() < deadline:
            for seq, text in self.conn.execute(READ_LOG.format(p="?"), (agent, last)).fetchall():
                seen(agent, json.loads(text))
                last, got = seq, got + 1
            if got < count:
                self.changes.wait(FALLBACK_POLL_S)

    def close(self) -> None:
        self.conn.close()


# ----------------------------------------------------------------------- floor


@dataclass(frozen=True)
class FloorMailbox:
    """The floor on either backend (``target.backend`` picks the SQL)."""

    name: ClassVar[str] = "floor"
    backends: ClassVar[frozenset[Backend]] = frozenset({"postgres", "sqlite"})
    target: Target
    text: str = ""

    @property
    def _postgres(self) -> bool:
        return self.target.backend == "postgres"

    def prepare(self) -> None:
        if self._postgres:
            with _pg(self.target.location) as conn:
                conn.execute(PG_SCHEMA)
        else:
            conn = _sqlite(self.target.location)
            conn.executescript(SQLITE_SCHEMA)
            conn.close()

    def producer(self) -> Producer:
        loc = self.target.location
        return _PgProducer(loc) if self._postgres else _SqliteProducer(loc)

    def consumer(self) -> Consumer:
        loc = self.target.location
        return _PgConsumer(loc) if self._postgres else _SqliteConsumer(loc)

    def appender(self) -> Appender:
        loc = self.target.location
        return _PgAppender(loc, self.text) if self._postgres else _SqliteAppender(loc, self.text)

    def watcher(self) -> Watcher:
        loc = self.target.location
        return _PgWatcher(loc) if self._postgres else _SqliteWatcher(loc)

    def describe(self) -> dict[str, str]:
        if self._postgres:
            import psycopg  # noqa: PLC0415

            return {"psycopg": psycopg.__version__, "wake": "LISTEN/NOTIFY, 1 s poll"}
        return {
            "sqlite": sqlite3.sqlite_version,
            "wake": f"PRAGMA data_version every {SQLITE_POLL_S * 1000:g} ms",
            "synchronous": "FULL",
        }
