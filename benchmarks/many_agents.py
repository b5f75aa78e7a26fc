"""B7: many agents on one event loop, per store; and B5 (shell throughput) on PostgreSQL.

``python -m benchmarks.many_agents [--agents 1000] [--followups 3] [--stores sqlite,postgres]
[--out PATH]``. PostgreSQL: ``$INBOX_CORE_TEST_PG``, else a throwaway cluster
(tests/shell/pg.py, fsync on) started for the run. Measured per store:

- *turns/s*: every agent gets ``followups`` followups through ``EchoHost``, one
  task per agent (send, await idle, repeat), all agents at once;
- *worst stall*: the longest gap seen by a 1 ms ticker task during that phase,
  i.e. the longest time one callback (a command and its append) held the loop;
- *floor ratio*: the same sequence of append transactions (same batches, same
  rows) as bare INSERT transactions on the same connection, timed alone; the
  ratio is floor time / store time (1.0 = no overhead; target >= 0.5);
- *memory per idle agent*: RSS growth / agents after opening them all
  (``LoopAgent`` + its log object and, for SQLite, its connection);
- *open from 10,000 events*: acquire + read + replay + Resume of one agent
  whose log holds 10,000 events (median of 5; detach between).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from inbox_core import (
    AgentState,
    AwaitPreStep,
    AwaitStep,
    Completed,
    DurableEvent,
    Enter,
    create_user_message,
    followup,
    reduce,
)
from inbox_core.shell import EchoHost, LoopAgent, PostgresLog, SqliteLog
from inbox_core.shell.logs import encode_event


def rss() -> int:
    with open("/proc/self/statm") as handle:
        return int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


class Batches:
    """The sizes and texts of every append a store made (for the INSERT floor)."""

    def __init__(self) -> None:
        self.batches: list[list[str]] = []

    def record(self, events: Sequence[DurableEvent]) -> None:
        self.batches.append([encode_event(e) for e in events])


def recording(cls: type, batches: Batches) -> type:
    class Recording(cls):  # type: ignore[misc, valid-type]
        def append(self, events: Sequence[DurableEvent]) -> None:
            super().append(events)
            batches.record(events)

    return Recording


async def ticker(stop: asyncio.Event, worst: list[float]) -> None:
    last = time.perf_counter()
    while not stop.is_set():
        await asyncio.sleep(0.001)
        now = time.perf_counter()
        worst[0] = max(worst[0], now - last - 0.001)
        last = now


async def serve(agents: list[LoopAgent], followups: int) -> tuple[float, float]:
    """All agents at once, each: followup, await idle, ``followups`` times. (wall s, stall s)."""

    async def one(agent: LoopAgent, index: int) -> None:
        for k in range(followups):
            agent.followup(create_user_message(f"agent {index} followup {k}"))
            await agent.when_idle()

    stop = asyncio.Event()
    worst = [0.0]
    tick = asyncio.ensure_future(ticker(stop, worst))
    await asyncio.sleep(0.01)
    worst[0] = 0.0
    start = time.perf_counter()
    await asyncio.gather(*(one(agent, i) for i, agent in enumerate(agents)))
    wall = time.perf_counter() - start
    stop.set()
    await tick
    return wall, worst[0]


def big_log(events: int) -> list[DurableEvent]:
    """A realistic log of ``events`` events: followups, each a one-step turn, via reduce."""
    state = AgentState.initial()
    out: list[DurableEvent] = []
    n = 0
    while len(out) < events:
        n += 1
        m = create_user_message(f"history {n}")
        for command in (followup(m),):
            t = reduce(state, command)
            out += t.durable
            state = t.state
        while (awaiting := state.awaiting) is not None:
            if isinstance(awaiting, AwaitPreStep):
                report: Any = awaiting.answer(Enter(awaiting.batch))
            elif isinstance(awaiting, AwaitStep):
                report = awaiting.answer(Completed())
            else:
                report = awaiting.answer()
            t = reduce(state, report)
            out += t.durable
            state = t.state
    return out


# --------------------------------------------------------------------- stores


class Store:
    name = ""

    def open(self, agent_id: str, batches: Batches | None = None) -> Any:
        raise NotImplementedError

    def floor(self, batches: Batches) -> float:
        """Seconds for the same append transactions as bare INSERTs on one connection."""
        raise NotImplementedError

    def close(self) -> None:
        pass


class Sqlite(Store):
    name = "sqlite"

    def __init__(self, folder: str, synchronous: str = "FULL") -> None:
        self.path = os.path.join(folder, f"b7-{synchronous}.db")
        self.synchronous = synchronous
        self.name = f"sqlite_{synchronous.lower()}"

    def open(self, agent_id: str, batches: Batches | None = None) -> Any:
        cls = SqliteLog if batches is None else recording(SqliteLog, batches)
        return cls(self.path, agent_id=agent_id, synchronous=self.synchronous)

    def floor(self, batches: Batches) -> float:
        log = SqliteLog(self.path, agent_id="floor", synchronous=self.synchronous)
        conn = log.connection
        seq = 0
        start = time.perf_counter()
        for batch in batches.batches:
            conn.execute("BEGIN IMMEDIATE")
            conn.execute("SELECT COALESCE(MAX(seq) + 1, 0) FROM events WHERE agent_id = 'floor'")
            conn.executemany(
                "INSERT INTO events (agent_id, seq, event) VALUES ('floor', ?, ?)",
                ((seq + i, text) for i, text in enumerate(batch)),
            )
            conn.execute("COMMIT")
            seq += len(batch)
        wall = time.perf_counter() - start
        log.close()
        return wall


class Postgres(Store):
    name = "postgres"

    def __init__(self, conninfo: str) -> None:
        import psycopg  # noqa: PLC0415 - the postgres extra is optional

        self.conn = psycopg.connect(conninfo, autocommit=True)  # one worker: one connection

    def open(self, agent_id: str, batches: Batches | None = None) -> Any:
        cls = PostgresLog if batches is None else recording(PostgresLog, batches)
        return cls(self.conn, agent_id, lease_seconds=300.0)

    def floor(self, batches: Batches) -> float:
        agent = f"floor-{uuid.uuid4().hex}"
        seq = 0
        start = time.perf_counter()
        for batch in batches.batches:
            self.conn.execute(
                "INSERT INTO inbox_core_events (agent_id, seq, event) "
                "SELECT %s, %s + t.ord - 1, t.event "
                "FROM unnest(%s::text[]) WITH ORDINALITY AS t(event, ord)",
                (agent, seq, batch),
            )
            seq += len(batch)
        return time.perf_counter() - start

    def close(self) -> None:
        self.conn.close()


# ---------------------------------------------------------------------- B7


async def b7_store(
    store: Store, agents: int, followups: int, big_events: int = 10_000
) -> dict[str, Any]:
    run = uuid.uuid4().hex[:6]
    batches = Batches()
    gc.collect()
    before = rss()
    opened = [
        LoopAgent(EchoHost(), log=store.open(f"b7-{run}-{i}", batches)) for i in range(agents)
    ]
    gc.collect()
    per_agent = (rss() - before) / agents
    wall, stall = await serve(opened, followups)
    turns = sum(a.state.last_turn for a in opened)
    assert turns == agents * followups, (turns, agents * followups)
    for agent in opened:
        await agent.detach()
        close = getattr(agent.log, "close", None)
        if close is not None:
            close()
    floor = store.floor(batches)
    # open one agent from a 10,000-event log
    big = f"b7-{run}-big"
    log = store.open(big)
    log.acquire()
    log.append(big_log(big_events))
    count = len(log.read())
    log.release()
    times = []
    for _ in range(5):
        start = time.perf_counter()
        agent = LoopAgent(EchoHost(), log=store.open(big))
        times.append(time.perf_counter() - start)
        await agent.detach()
    return {
        "agents": agents,
        "followups_per_agent": followups,
        "turns_per_s": turns / wall,
        "appends": len(batches.batches),
        "worst_stall_ms": stall * 1000,
        "floor_turns_per_s": turns / floor,
        "ratio_to_insert_floor": floor / wall,
        "rss_bytes_per_idle_agent": per_agent,
        "open_10k_events_ms": statistics.median(times) * 1000,
        "open_log_events": count,
    }


async def b5_postgres(conninfo: str, messages: int) -> dict[str, Any]:
    """B5 on PostgresLog: one agent, burst and sequential followups (own connection)."""
    out: dict[str, Any] = {}
    for pattern in ("burst", "sequential"):
        rates = []
        for _ in range(3):
            log = PostgresLog(conninfo, f"b5-{uuid.uuid4().hex}")
            start = time.perf_counter()
            agent = LoopAgent(EchoHost(), log=log)
            if pattern == "burst":
                for i in range(messages):
                    agent.followup(create_user_message(f"m{i}"))
                await agent.when_idle()
            else:
                for i in range(messages):
                    agent.followup(create_user_message(f"m{i}"))
                    await agent.when_idle()
            await agent.aclose()
            rates.append(messages / (time.perf_counter() - start))
            log.close()
        out[pattern] = {"messages_per_s": statistics.median(rates)}
    return out


def postgres_conninfo() -> tuple[str, Callable[[], None]]:
    conninfo = os.environ.get("INBOX_CORE_TEST_PG")
    if conninfo:
        return conninfo, lambda: None
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from tests.shell.pg import Cluster, wait_ready  # noqa: PLC0415 - the repo's test helper

    cluster = Cluster(fsync=True, max_connections=100).start()
    wait_ready(cluster.conninfo)
    return cluster.conninfo, cluster.destroy


def _nothing() -> None:
    return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.many_agents", description=__doc__)
    parser.add_argument("--agents", type=int, default=1000)
    parser.add_argument("--followups", type=int, default=3)
    parser.add_argument("--stores", default="sqlite,sqlite_normal,postgres")
    parser.add_argument("--b5-messages", type=int, default=300)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    stores = [s.strip() for s in args.stores.split(",") if s.strip()]
    result: dict[str, Any] = {"B7": {}, "B5_postgres": None}
    cleanup: Callable[[], None] = _nothing
    try:
        with tempfile.TemporaryDirectory(prefix="inbox-b7-") as folder:
            for name in stores:
                if name == "postgres":
                    conninfo, cleanup = postgres_conninfo()
                    store: Store = Postgres(conninfo)
                else:
                    store = Sqlite(folder, "NORMAL" if name == "sqlite_normal" else "FULL")
                try:
                    res = asyncio.run(b7_store(store, args.agents, args.followups))
                finally:
                    store.close()
                result["B7"][store.name] = res
                print(f"B7 {store.name}: {json.dumps(res)}", flush=True)
                if name == "postgres" and args.b5_messages:
                    result["B5_postgres"] = asyncio.run(b5_postgres(conninfo, args.b5_messages))
                    print(f"B5 postgres: {json.dumps(result['B5_postgres'])}", flush=True)
    finally:
        cleanup()
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
