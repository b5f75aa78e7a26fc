"""The stores the ``EventLog`` contract runs against, behind one small interface.

``Store.new()`` is a fresh agent log (its own agent id), ``Store.another(log)``
a second object over the same agent log (what another process would build),
``Store.sneak(log, seq, text)`` a row written behind the log's back (a writer
that bypassed ownership), ``Store.corrupt(log, how, seq)`` a bad stored row.
"""

from __future__ import annotations

import sqlite3
import uuid
import weakref
from pathlib import Path
from typing import Any

import pytest

from inbox_core import TurnStarted
from inbox_core.shell import MemoryLog, PostgresLog, SqliteLog
from inbox_core.shell.stores.rows import encode_event

AnyLog = MemoryLog | SqliteLog | PostgresLog
STORES = ["memory", "sqlite", "sqlite-multi", "postgres"]
CORRUPTIONS = ["gap", "not-json", "not-an-event", "null"]


class Store:
    name = ""
    rows = True  # stores rows (bad rows can be injected)
    lapses = False  # ownership is a lease that can lapse under a live owner

    def new(self) -> AnyLog:
        raise NotImplementedError

    def another(self, log: Any) -> AnyLog:
        raise NotImplementedError

    def sneak(self, log: Any, seq: int) -> None:
        raise NotImplementedError

    def corrupt(self, log: Any, how: str, seq: int) -> None:
        raise NotImplementedError

    def fail_at(self, log: Any, seq: int | None) -> None:
        """Make inserting ``seq`` of ``log``'s agent fail ("injected failure"); None: stop."""
        raise NotImplementedError

    def close(self) -> None:
        """Close every object this store built."""


SNEAKED = encode_event(TurnStarted(99))
NOT_AN_EVENT = '{"type":"nope","data":{}}'


class Memory(Store):
    name = "memory"
    rows = False

    def new(self) -> AnyLog:
        return MemoryLog()

    def another(self, log: Any) -> AnyLog:
        assert isinstance(log, MemoryLog)
        return log.handle()

    def sneak(self, log: Any, seq: int) -> None:
        log._store.events.append(TurnStarted(99))


class Sqlite(Store):
    name = "sqlite"

    def __init__(self, tmp: Path, *, multi: bool) -> None:
        self.path = tmp / "store.db"
        self.multi = multi
        self.opened: weakref.WeakSet[SqliteLog] = weakref.WeakSet()  # never keeps one alive
        if multi:  # a neighbour agent with events in the same file, interleaved below
            self.neighbour = self._open("neighbour")
            self.neighbour.acquire()

    def _open(self, agent_id: str) -> SqliteLog:
        log = SqliteLog(self.path, agent_id=agent_id, synchronous="NORMAL")
        self.opened.add(log)
        return log

    def new(self) -> AnyLog:
        if not self.multi:
            return self._open("default")
        self.neighbour.append([TurnStarted(len(self.neighbour) + 1)])
        return self._open(f"agent-{uuid.uuid4().hex[:8]}")

    def another(self, log: Any) -> AnyLog:
        return self._open(log.agent_id)

    def _exec(self, sql: str, *args: object) -> None:
        with sqlite3.connect(self.path) as conn:
            conn.execute(sql, args)

    def sneak(self, log: Any, seq: int) -> None:
        self._exec("INSERT INTO events VALUES (?, ?, ?)", log.agent_id, seq, SNEAKED)

    def corrupt(self, log: Any, how: str, seq: int) -> None:
        where = "WHERE agent_id = ? AND seq = ?"
        sql = {
            "gap": f"DELETE FROM events {where}",
            "not-json": f"UPDATE events SET event = '{{not json' {where}",
            "not-an-event": f"UPDATE events SET event = '{NOT_AN_EVENT}' {where}",
            "null": f"UPDATE events SET event = 'null' {where}",
        }[how]
        self._exec(sql, log.agent_id, seq)

    def fail_at(self, log: Any, seq: int | None) -> None:
        self._exec("DROP TRIGGER IF EXISTS fail_at")
        if seq is not None:
            self._exec(
                f"CREATE TRIGGER fail_at BEFORE INSERT ON events WHEN NEW.agent_id = "
                f"'{log.agent_id}' AND NEW.seq = {seq} "
                "BEGIN SELECT RAISE(ABORT, 'injected failure'); END"
            )

    def close(self) -> None:
        for log in list(self.opened):
            log.close()


class Postgres(Store):
    name = "postgres"
    lapses = True

    def __init__(self, conninfo: str) -> None:
        self.conninfo = conninfo
        self.opened: list[PostgresLog] = []

    def _open(self, agent_id: str, lease: float = 30.0) -> PostgresLog:
        log = PostgresLog(self.conninfo, agent_id, lease_seconds=lease)
        self.opened.append(log)
        return log

    def new(self) -> AnyLog:
        return self._open(f"agent-{uuid.uuid4().hex}")

    def another(self, log: Any) -> AnyLog:
        return self._open(log.agent_id)

    def _exec(self, sql: str, *args: object) -> None:
        import psycopg

        with psycopg.connect(self.conninfo, autocommit=True) as conn:
            conn.execute(sql, args)

    def sneak(self, log: Any, seq: int) -> None:
        self._exec("INSERT INTO inbox_core_events VALUES (%s, %s, %s)", log.agent_id, seq, SNEAKED)

    def corrupt(self, log: Any, how: str, seq: int) -> None:
        where = "WHERE agent_id = %s AND seq = %s"
        table = "inbox_core_events"
        sql = {
            "gap": f"DELETE FROM {table} {where}",
            "not-json": f"UPDATE {table} SET event = '{{not json' {where}",
            "not-an-event": f"UPDATE {table} SET event = '{NOT_AN_EVENT}' {where}",
            "null": f"UPDATE {table} SET event = 'null' {where}",
        }[how]
        self._exec(sql, log.agent_id, seq)

    def fail_at(self, log: Any, seq: int | None) -> None:
        name = "fail_" + log.agent_id.replace("-", "_")
        self._exec(f"DROP TRIGGER IF EXISTS {name} ON inbox_core_events")
        if seq is not None:
            self._exec(
                f"CREATE OR REPLACE FUNCTION {name}() RETURNS trigger LANGUAGE plpgsql AS $$ "
                f"BEGIN IF NEW.agent_id = '{log.agent_id}' AND NEW.seq = {seq} THEN "
                "RAISE EXCEPTION 'injected failure'; END IF; RETURN NEW; END $$"
            )
            self._exec(
                f"CREATE TRIGGER {name} BEFORE INSERT ON inbox_core_events "
                f"FOR EACH ROW EXECUTE FUNCTION {name}()"
            )

    def lapse(self, log: Any) -> None:
        """Fast-forward the lease clock: the lease of ``log``'s agent has lapsed."""
        self._exec(
            "UPDATE inbox_core_owners SET expires_at = clock_timestamp() - interval '1 second' "
            "WHERE agent_id = %s",
            log.agent_id,
        )

    def close(self) -> None:
        for log in self.opened:
            log.close()


def make_store(request: pytest.FixtureRequest, name: str, tmp_path: Path) -> Store:
    if name == "memory":
        return Memory()
    if name in ("sqlite", "sqlite-multi"):
        return Sqlite(tmp_path, multi=name == "sqlite-multi")
    return Postgres(request.getfixturevalue("pg"))
