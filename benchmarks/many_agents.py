"""B7: many agents on one event loop, per store: the worker's commit path against the old one.

``python -m benchmarks.many_agents [--agents 1000] [--followups 3] [--rounds 2]
[--stores sqlite,sqlite_normal,postgres] [--parts b7,failover,memory] [--pg-cluster]
[--out PATH] [--markdown]``. PostgreSQL: ``--pg CONNINFO``, else ``$INBOX_CORE_TEST_PG``,
else a throwaway cluster (tests/shell/pg.py, fsync on); ``--pg-cluster`` always starts one.

Part *b7* (issue 9, again for issue 20). Per store, in every round, side by side in
one process and one file (or database), in an order that rotates from round to round:

- *thread*: the ``Worker``'s path. ``agents`` ``LoopAgent``s opened as ``Worker`` opens
  them (``store.log(agent_id)`` and ``LoopAgent.open(host, log=..., writer=...)`` in worker
  threads, ``OPENING_AT_ONCE`` at a time) with one ``ThreadWriter`` shared by all (group
  commit per database on the writer thread). No real ``Worker`` drives them: the commands
  and rows are then exactly those of the *inline* run and of the floors, so the ratios
  compare commit paths alone (placement and posts are what the *failover* part and B8
  measure);
- *inline*: the old synchronous path (``InlineWriter``: each command appends on the event
  loop before it returns), agents built with ``LoopAgent(host, log=...)`` on the loop;
- *floor, per command*: the event rows of the *thread* run, one transaction per command
  (SQLite: ``BEGIN IMMEDIATE``, the agent's ``MAX(seq)``, ``executemany`` INSERT,
  ``COMMIT``; PostgreSQL: one autocommitted ``INSERT ... unnest``), a bare loop on one
  connection, timed alone. The ratio target (>= 0.8) is floor time / serve time;
- *floor, batched*: the same rows in the transactions the writer made (its groups).

Each agent gets ``followups`` followups through ``EchoHost``, one task per agent (send,
await idle, repeat), all agents at once. An unrelated task ticks every 1 ms: its lateness
(gap - 1 ms) is the event-loop latency (p50 / p99 / max; targets p99 <= 20 ms, max <= 100
ms), reported for the serving phase and, separately, while the agents are opened. Cyclic
GC pauses in the serving phase are recorded (``gc.callbacks``) to tell GC stalls from
store stalls. Ratios are paired within a round, then the median over rounds.

Part *failover* is ``benchmarks.failover``; part *memory* is ``benchmarks.agent_memory``.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import platform
import random
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
from inbox_core.shell.stores.writers import Part, ThreadWriter
from inbox_core.shell.worker import OPENING_AT_ONCE

SCHEMA = "inbox_core.bench.b7/2"
PATHS = ("thread", "inline", "memory", "thread_nogc", "thread_frozen")
"""The Worker's path; the old synchronous one; MemoryLog (no I/O at all: what the same work
costs the loop by itself); the Worker's path with the cyclic GC off (a diagnostic)."""
TARGET_P99_MS = 20.0
TARGET_MAX_MS = 100.0
TARGET_RATIO = 0.8


def rss() -> int:
    with open("/proc/self/statm") as handle:
        return int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def load() -> float | None:
    try:
        return os.getloadavg()[0]
    except OSError:  # pragma: no cover - no load average on this platform
        return None


def percentile(values: Sequence[float], fraction: float) -> float:
    """Nearest rank (0.0 for no values)."""
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(fraction * len(ordered)) - 1))]


def spread(values: Sequence[float]) -> dict[str, float]:
    """min / median / max of a figure over rounds."""
    return {"min": min(values), "median": statistics.median(values), "max": max(values)}


# ------------------------------------------------------------------ recording


Counts = list[tuple[str, int]]
"""(agent id, events) per part. Only ids and counts are kept while measuring: tuples of
atomic values leave the cyclic GC's lists, so recording adds nothing to the GC pauses
measured (keeping the events would, some 15 objects per turn). The floors read the rows
back from the database afterwards (``Store.texts``) and cut them by these counts."""
Rows = list[tuple[str, list[str]]]
"""(agent id, event texts) per part, as the floors insert them."""


class Recorder:
    """What the store wrote, as commands (one ``Part`` handed to the writer per command, or
    per batch of posts) and as transactions (the groups ``write_group`` wrote)."""

    def __init__(self) -> None:
        self.commands: Counts = []
        self.groups: list[Counts] = []
        self.busy = [0.0, 0.0]  # seconds inside write_group: wall, CPU of the writing thread
        self.burst = (0, 0)

    def group(self, parts: Sequence[Part]) -> None:
        self.groups.append([(_agent(p), len(p.events)) for p in parts if p.events])

    def timed(self, write: Callable[[], list[BaseException | None]]) -> list[BaseException | None]:
        wall, cpu = time.perf_counter(), time.thread_time()
        try:
            return write()
        finally:
            self.busy[0] += time.perf_counter() - wall
            self.busy[1] += time.thread_time() - cpu

    def command(self, part: Part) -> None:
        if part.events:
            self.commands.append((_agent(part), len(part.events)))

    def cut(self) -> None:
        """Keep what was recorded so far as the burst's (the floors replay only that)."""
        self.burst = (len(self.commands), len(self.groups))

    @property
    def burst_commands(self) -> Counts:
        return self.commands[: self.burst[0]]

    @property
    def burst_groups(self) -> list[Counts]:
        return self.groups[: self.burst[1]]

    @property
    def rows(self) -> int:
        """Event rows written in the burst."""
        return sum(count for group in self.burst_groups for _, count in group)


def cut(texts: dict[str, list[str]], counts: Counts) -> Rows:
    """The rows of each part: each agent's texts in seq order, cut by the parts' counts."""
    at: dict[str, int] = {}
    rows: Rows = []
    for agent, count in counts:
        first = at.get(agent, 0)
        rows.append((agent, texts[agent][first : first + count]))
        at[agent] = first + count
    return rows


def _agent(part: Part) -> str:
    return str(part.log.agent_id)  # type: ignore[attr-defined]


class RecordingSqliteLog(SqliteLog):
    recorder: Recorder | None = None

    def write_group(self, parts: Sequence[Part]) -> list[BaseException | None]:
        recorder = self.recorder
        if recorder is None:
            return super().write_group(parts)
        recorder.group(parts)
        return recorder.timed(lambda: super(RecordingSqliteLog, self).write_group(parts))


class RecordingPostgresLog(PostgresLog):
    recorder: Recorder | None = None

    def write_group(self, parts: Sequence[Part]) -> list[BaseException | None]:
        recorder = self.recorder
        if recorder is None:
            return super().write_group(parts)
        recorder.group(parts)
        return recorder.timed(lambda: super(RecordingPostgresLog, self).write_group(parts))


class RecordingWriter(ThreadWriter):
    """A ``ThreadWriter`` that notes each part as one command (for the per-command floor)."""

    def __init__(self, recorder: Recorder) -> None:
        super().__init__(name="b7 writer")
        self.recorder = recorder

    def write(self, part: Part, done: Callable[[BaseException | None], None]) -> bool:
        self.recorder.command(part)
        return super().write(part, done)


# ------------------------------------------------------------------- the ticker


class Ticker:
    """An unrelated task that sleeps 1 ms in a loop: each tick's lateness (gap - 1 ms) is
    what a callback of the event loop waited. ``mark()`` splits phases; cyclic GC pauses
    are recorded alongside (``gc.callbacks``)."""

    def __init__(self) -> None:
        self.lateness: list[float] = []
        self.gc_pauses: list[tuple[float, int, float]] = []  # (start, generation, seconds)
        self._gc_start = 0.0
        self._stop = False
        self._task: asyncio.Task[None] | None = None

    def _gc(self, phase: str, info: dict[str, Any]) -> None:
        now = time.perf_counter()
        if phase == "start":
            self._gc_start = now
        else:
            self.gc_pauses.append((self._gc_start, int(info["generation"]), now - self._gc_start))

    async def __aenter__(self) -> Ticker:
        gc.callbacks.append(self._gc)
        self._task = asyncio.ensure_future(self._run())
        await asyncio.sleep(0.01)
        return self

    async def __aexit__(self, *exc: object) -> None:
        self._stop = True
        assert self._task is not None
        await self._task
        gc.callbacks.remove(self._gc)

    async def _run(self) -> None:
        last = time.perf_counter()
        while not self._stop:
            await asyncio.sleep(0.001)
            now = time.perf_counter()
            self.lateness.append(max(0.0, now - last - 0.001))
            last = now

    def mark(self) -> tuple[int, float]:
        return len(self.lateness), time.perf_counter()

    def figures(self, start: tuple[int, float], end: tuple[int, float]) -> dict[str, Any]:
        late = self.lateness[start[0] : end[0]]
        pauses = [p for p in self.gc_pauses if start[1] <= p[0] < end[1]]
        return {
            "ticks": len(late),
            "p50_ms": percentile(late, 0.5) * 1000,
            "p99_ms": percentile(late, 0.99) * 1000,
            "max_ms": max(late, default=0.0) * 1000,
            "over_20ms": sum(x > 0.020 for x in late),
            "over_100ms": sum(x > 0.100 for x in late),
            "gc_collections": len(pauses),
            "gc_full": sum(1 for p in pauses if p[1] == 2),
            "gc_max_ms": max((p[2] for p in pauses), default=0.0) * 1000,
            "gc_total_ms": sum(p[2] for p in pauses) * 1000,
        }


# ----------------------------------------------------------------------- stores


class Store:
    """One database: logs for the agents, and the two INSERT floors on one connection."""

    name = ""

    def log(self, agent_id: str, recorder: Recorder | None = None) -> Any:
        raise NotImplementedError

    def texts(self, prefix: str) -> dict[str, list[str]]:
        """The event texts of every agent whose id starts with ``prefix``, in seq order."""
        raise NotImplementedError

    def floor(self, transactions: list[Rows], run: str) -> float:
        """Seconds to insert ``transactions`` (each a list of parts' rows), one transaction
        each, on one connection."""
        raise NotImplementedError

    def floor_commands(self, rows: Rows, run: str) -> float:
        """One transaction per command."""
        return self.floor([[one] for one in rows], run)

    def floor_groups(self, groups: list[Rows], run: str) -> float:
        """One transaction per group the writer wrote."""
        return self.floor([group for group in groups if group], run)

    def describe(self) -> dict[str, Any]:
        return {}

    def close(self) -> None:
        pass


def _grouped(rows: Sequence[tuple[Any, Any, Any]]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for agent, _, text in rows:
        out.setdefault(str(agent), []).append(str(text))
    return out


class Sqlite(Store):
    def __init__(self, folder: str, synchronous: str = "FULL") -> None:
        self.path = os.path.join(folder, f"b7-{synchronous.lower()}.db")
        self.synchronous = synchronous
        self.name = f"sqlite_{synchronous.lower()}"

    def log(self, agent_id: str, recorder: Recorder | None = None) -> Any:
        log = RecordingSqliteLog(self.path, agent_id=agent_id, synchronous=self.synchronous)  # type: ignore[arg-type]
        log.recorder = recorder
        return log

    def texts(self, prefix: str) -> dict[str, list[str]]:
        log = SqliteLog(self.path, agent_id="reader", synchronous=self.synchronous)  # type: ignore[arg-type]
        rows = log.connection.execute(
            "SELECT agent_id, seq, event FROM events WHERE agent_id >= ? AND agent_id < ? "
            "ORDER BY agent_id, seq",
            (prefix, prefix + "\uffff"),
        ).fetchall()
        log.close()
        return _grouped(rows)

    def floor(self, transactions: list[Rows], run: str) -> float:
        log = SqliteLog(self.path, agent_id=f"floor-{run}", synchronous=self.synchronous)  # type: ignore[arg-type]
        conn = log.connection
        start = time.perf_counter()
        for transaction in transactions:
            conn.execute("BEGIN IMMEDIATE")
            for agent, texts in transaction:
                floor_agent = f"floor-{run}-{agent}"
                (first,) = conn.execute(
                    "SELECT COALESCE(MAX(seq) + 1, 0) FROM events WHERE agent_id = ?",
                    (floor_agent,),
                ).fetchone()
                conn.executemany(
                    "INSERT INTO events (agent_id, seq, event) VALUES (?, ?, ?)",
                    ((floor_agent, first + i, text) for i, text in enumerate(texts)),
                )
            conn.execute("COMMIT")
        wall = time.perf_counter() - start
        log.close()
        return wall

    def describe(self) -> dict[str, Any]:
        return {"synchronous": self.synchronous, "journal": "WAL"}


class Postgres(Store):
    name = "postgres"

    def __init__(self, conninfo: str) -> None:
        import psycopg  # noqa: PLC0415 - the postgres extra is optional

        self.conninfo = conninfo
        self.conn = psycopg.connect(conninfo, autocommit=True)  # the floors' one connection
        PostgresLog(self.conn, "b7-tables").close()  # the tables exist before any timing

    def log(self, agent_id: str, recorder: Recorder | None = None) -> Any:
        log = RecordingPostgresLog(self.conninfo, agent_id, lease_seconds=300.0)
        log.recorder = recorder
        return log

    def _insert(self, agents: list[str], seqs: list[int], texts: list[str]) -> None:
        self.conn.execute(
            "INSERT INTO inbox_core_events (agent_id, seq, event) "
            "SELECT * FROM unnest(%s::text[], %s::bigint[], %s::text[])",
            (agents, seqs, texts),
        )

    def texts(self, prefix: str) -> dict[str, list[str]]:
        rows = self.conn.execute(
            "SELECT agent_id, seq, event FROM inbox_core_events WHERE agent_id LIKE %s "
            "ORDER BY agent_id, seq",
            (prefix.replace("_", "\\_") + "%",),
        ).fetchall()
        return _grouped(rows)

    def floor(self, transactions: list[Rows], run: str) -> float:
        nexts: dict[str, int] = {}
        start = time.perf_counter()
        for transaction in transactions:  # one statement each: autocommitted
            agents: list[str] = []
            seqs: list[int] = []
            texts: list[str] = []
            for agent, mine in transaction:
                first = nexts.get(agent, 0)
                agents += [f"floor-{run}-{agent}"] * len(mine)
                seqs += range(first, first + len(mine))
                texts += mine
                nexts[agent] = first + len(mine)
            self._insert(agents, seqs, texts)
        return time.perf_counter() - start

    def describe(self) -> dict[str, Any]:
        row = self.conn.execute(
            "SELECT current_setting('server_version'), current_setting('fsync'), "
            "current_setting('synchronous_commit')"
        ).fetchone()
        assert row is not None
        return {"version": row[0], "fsync": row[1], "synchronous_commit": row[2]}

    def close(self) -> None:
        self.conn.close()


# ------------------------------------------------------------------ one run


async def _drive(agents: list[LoopAgent], followups: int) -> None:
    async def one(agent: LoopAgent, index: int) -> None:
        for k in range(followups):
            agent.followup(create_user_message(f"agent {index} followup {k}"))
            await agent.when_idle()

    await asyncio.gather(*(one(agent, i) for i, agent in enumerate(agents)))


async def _open_thread(store: Store, ids: list[str], writer: ThreadWriter) -> list[LoopAgent]:
    """As ``Worker._open``: the log object and ``LoopAgent.open`` off the loop, 8 at a time."""
    gate = asyncio.Semaphore(OPENING_AT_ONCE)

    async def one(agent_id: str) -> LoopAgent:
        async with gate:
            log = await asyncio.to_thread(store.log, agent_id, writer.recorder)  # type: ignore[attr-defined]
            return await LoopAgent.open(EchoHost(), log=log, writer=writer)

    return list(await asyncio.gather(*(one(agent_id) for agent_id in ids)))


async def _paced(agents: list[LoopAgent], window: float, seed: int) -> list[float]:
    """One more followup per agent, each at a uniformly random time within ``window``
    seconds (the same times for every path of a round): each turn's latency (followup
    sent to idle and durable)."""
    rng = random.Random(seed)
    offsets = [rng.uniform(0, window) for _ in agents]
    start = time.perf_counter()

    async def one(agent: LoopAgent, index: int, at: float) -> float:
        await asyncio.sleep(max(0.0, start + at - time.perf_counter()))
        sent = time.perf_counter()
        agent.followup(create_user_message(f"agent {index} paced"))
        await agent.when_idle()
        return time.perf_counter() - sent

    return list(
        await asyncio.gather(
            *(one(a, i, at) for i, (a, at) in enumerate(zip(agents, offsets, strict=True)))
        )
    )


async def run_path(
    store: Store,
    path: str,
    agents: int,
    followups: int,
    paced: float = 0.0,
    seed: int = 0,
) -> dict[str, Any]:
    """Open ``agents`` fresh agents on ``path`` (one of ``PATHS``), serve ``followups``
    followups each at once (the burst), then, if ``paced`` (seconds), one more each spread
    over that window; detach them. Timings, loop latency and what was written."""
    run = uuid.uuid4().hex[:8]
    ids = [f"b7-{path}-{run}-{i}" for i in range(agents)]
    recorder = Recorder()
    threaded = path in ("thread", "thread_nogc", "thread_frozen")
    writer: RecordingWriter | None = RecordingWriter(recorder) if threaded else None
    gc.collect()
    if path == "thread_nogc":
        gc.disable()
    try:
        async with Ticker() as ticker:
            opening = ticker.mark()
            if writer is not None:
                opened = await _open_thread(store, ids, writer)
            elif path == "memory":
                opened = [LoopAgent(EchoHost()) for _ in ids]
            else:
                opened = [LoopAgent(EchoHost(), log=store.log(i, recorder)) for i in ids]
            await asyncio.sleep(0.005)  # the tick a synchronous open delayed lands in this phase
            if path == "thread_frozen":
                gc.freeze()  # what a Worker does after opening a batch (shell.md section 13)
            served = ticker.mark()
            busy = list(recorder.busy)
            cpu = time.thread_time(), time.process_time()
            await _drive(opened, followups)
            done = ticker.mark()
            cpu = time.thread_time() - cpu[0], time.process_time() - cpu[1]
            busy = [recorder.busy[0] - busy[0], recorder.busy[1] - busy[1]]
            recorder.cut()
            latencies: list[float] = []
            if paced > 0:
                await asyncio.sleep(0.05)
                if path == "thread_frozen":
                    gc.freeze()  # and again once its agents settled (its next quiet look)
                pacing = ticker.mark()
                latencies = await _paced(opened, paced, seed)
                paced_end = ticker.mark()
            await asyncio.sleep(0.005)
    finally:
        gc.enable()
        gc.unfreeze()
    turns = sum(agent.state.last_turn for agent in opened) - len(latencies)
    assert turns == agents * followups, (turns, agents * followups)
    for agent in opened:
        await agent.detach()
        close = getattr(agent.log, "close", None)
        if close is not None and writer is not None:
            await asyncio.to_thread(close)
        elif close is not None:
            close()
    out: dict[str, Any] = {
        "path": path,
        "run": run,
        "agents": agents,
        "turns": turns,
        "open_s": served[1] - opening[1],
        "serve_s": done[1] - served[1],
        "turns_per_s": turns / (done[1] - served[1]),
        "loop_open": ticker.figures(opening, served),
        "loop_serve": ticker.figures(served, done),
        "serve_cpu": {  # where the serving phase's time went (seconds)
            "loop_thread_cpu_s": cpu[0],
            "process_cpu_s": cpu[1],
            "write_group_wall_s": busy[0],
            "write_group_cpu_s": busy[1],
            "gc_s": ticker.figures(served, done)["gc_total_ms"] / 1000,
        },
        "rows": recorder.rows,
        "transactions": len([g for g in recorder.burst_groups if g]),
        "recorder": recorder,
    }
    if paced > 0:
        out["paced"] = {
            "window_s": paced,
            "offered_turns_per_s": agents / paced,
            "turns": len(latencies),
            "loop": ticker.figures(pacing, paced_end),
            "turn_p50_ms": percentile(latencies, 0.5) * 1000,
            "turn_p99_ms": percentile(latencies, 0.99) * 1000,
            "turn_max_ms": max(latencies) * 1000,
        }
    if writer is not None:
        stats = writer.stats()
        await writer.aclose()
        out["commands"] = len(recorder.burst_commands)
        out["writer"] = {
            "parts": stats.parts,
            "groups": stats.groups,
            "parts_per_group": stats.parts / max(1, stats.groups),
            "failed": stats.failed,
            "latency_p50_ms": stats.latency_p50 * 1000,
            "latency_p99_ms": stats.latency_p99 * 1000,
            "latency_max_ms": stats.latency_max * 1000,
        }
    else:
        out["commands"] = out["transactions"]
    return out


def _public(run: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in run.items() if k != "recorder"}


async def b7_store_rounds(
    store: Store,
    agents: int,
    followups: int,
    rounds: int,
    log: Callable[[str], None],
    paced: float = 0.0,
) -> dict[str, Any]:
    """Side by side, ``rounds`` times: a run of each path (in an order rotating from round to
    round), then the two floors of the thread run's rows (order alternating); ratios are
    paired within each round."""
    per_round: list[dict[str, Any]] = []
    for r in range(rounds):
        order = PATHS[r % len(PATHS) :] + PATHS[: r % len(PATHS)]
        runs: dict[str, dict[str, Any]] = {}
        for path in order:
            runs[path] = await run_path(store, path, agents, followups, paced, seed=r)
            log(
                f"{store.name} round {r + 1}/{rounds} {path}: "
                f"{runs[path]['turns_per_s']:.0f} turns/s, loop p99 "
                f"{runs[path]['loop_serve']['p99_ms']:.1f} ms max "
                f"{runs[path]['loop_serve']['max_ms']:.1f} ms"
                + (
                    f"; paced: loop p99 {runs[path]['paced']['loop']['p99_ms']:.1f} ms max "
                    f"{runs[path]['paced']['loop']['max_ms']:.1f} ms, turn p99 "
                    f"{runs[path]['paced']['turn_p99_ms']:.0f} ms"
                    if paced
                    else ""
                )
                + f" (load {load()})"
            )
        rec: Recorder = runs["thread"]["recorder"]
        texts = store.texts(f"b7-thread-{runs['thread']['run']}-")
        commands = cut(texts, rec.burst_commands)
        groups = [cut(texts, group) for group in rec.burst_groups]
        del texts
        floors: dict[str, float] = {}
        for kind in ("commands", "groups") if r % 2 == 0 else ("groups", "commands"):
            gc.collect()
            run = f"{runs['thread']['run']}-{kind}"
            floors[kind] = (
                store.floor_commands(commands, run)
                if kind == "commands"
                else store.floor_groups(groups, run)
            )
        turns = runs["thread"]["turns"]
        inline_rows = runs["inline"]["rows"]
        log(
            f"{store.name} round {r + 1}/{rounds} floors: per command "
            f"{turns / floors['commands']:.0f} turns/s, batched {turns / floors['groups']:.0f}"
        )
        per_round.append(
            {
                "load1": load(),
                **{path: _public(runs[path]) for path in PATHS},
                "floor_per_command_s": floors["commands"],
                "floor_batched_s": floors["groups"],
                "floor_per_command_turns_per_s": turns / floors["commands"],
                "floor_batched_turns_per_s": turns / floors["groups"],
                "same_rows": inline_rows == rec.rows,
                "ratio": {
                    "thread": floors["commands"] / runs["thread"]["serve_s"],
                    "inline": floors["commands"] / runs["inline"]["serve_s"],
                    "thread_to_batched": floors["groups"] / runs["thread"]["serve_s"],
                    "thread_over_inline": runs["thread"]["turns_per_s"]
                    / runs["inline"]["turns_per_s"],
                    "thread_over_memory": runs["thread"]["turns_per_s"]
                    / runs["memory"]["turns_per_s"],
                },
            }
        )
    return {
        "store": store.name,
        "server": store.describe(),
        "rounds": per_round,
        **_summary(per_round),
    }


def _at(*keys: str) -> Callable[[dict[str, Any]], float]:
    def get(entry: dict[str, Any]) -> float:
        value: Any = entry
        for key in keys:
            value = value[key]
        return float(value)

    return get


def _summary(rounds: list[dict[str, Any]]) -> dict[str, Any]:
    def over(get: Callable[[dict[str, Any]], float]) -> dict[str, float]:
        return spread([get(r) for r in rounds])

    summary: dict[str, Any] = {"ratio": {}, "paths": {}}
    for key in rounds[0]["ratio"]:
        summary["ratio"][key] = over(_at("ratio", key))
    for path in PATHS:
        summary["paths"][path] = {
            "turns_per_s": over(_at(path, "turns_per_s")),
            "open_s": over(_at(path, "open_s")),
            "serve_p99_ms": over(_at(path, "loop_serve", "p99_ms")),
            "serve_max_ms": over(_at(path, "loop_serve", "max_ms")),
            "open_p99_ms": over(_at(path, "loop_open", "p99_ms")),
            "open_max_ms": over(_at(path, "loop_open", "max_ms")),
            "gc_max_ms": over(_at(path, "loop_serve", "gc_max_ms")),
            "gc_total_ms": over(_at(path, "loop_serve", "gc_total_ms")),
        }
        if "paced" in rounds[0][path]:
            summary["paths"][path]["paced"] = {
                "loop_p99_ms": over(_at(path, "paced", "loop", "p99_ms")),
                "loop_max_ms": over(_at(path, "paced", "loop", "max_ms")),
                "turn_p50_ms": over(_at(path, "paced", "turn_p50_ms")),
                "turn_p99_ms": over(_at(path, "paced", "turn_p99_ms")),
                "gc_max_ms": over(_at(path, "paced", "loop", "gc_max_ms")),
            }
    summary["floor_per_command_turns_per_s"] = over(_at("floor_per_command_turns_per_s"))
    summary["floor_batched_turns_per_s"] = over(_at("floor_batched_turns_per_s"))
    thread = summary["paths"]["thread"]
    summary["targets"] = {
        "serve_p99_ms<=20": thread["serve_p99_ms"]["median"] <= TARGET_P99_MS,
        "serve_max_ms<=100": thread["serve_max_ms"]["max"] <= TARGET_MAX_MS,
        "ratio>=0.8": summary["ratio"]["thread"]["median"] >= TARGET_RATIO,
    }
    if "paced" in thread:
        summary["targets"]["paced_p99_ms<=20"] = (
            thread["paced"]["loop_p99_ms"]["median"] <= TARGET_P99_MS
        )
        summary["targets"]["paced_max_ms<=100"] = (
            thread["paced"]["loop_max_ms"]["max"] <= TARGET_MAX_MS
        )
    return summary


# ------------------------------------------------- issue 9's figures (compat)


def big_log(events: int) -> list[DurableEvent]:
    """A realistic log of at least ``events`` events: followups, each a one-step turn."""
    state = AgentState.initial()
    out: list[DurableEvent] = []
    n = 0
    while len(out) < events:
        n += 1
        t = reduce(state, followup(create_user_message(f"history {n}")))
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


async def b7_store(
    store: Store, agents: int, followups: int, big_events: int = 10_000
) -> dict[str, Any]:
    """Issue 9's B7 figures on the inline path (one run; kept for its smoke test)."""
    run = await run_path(store, "inline", agents, followups)
    rec: Recorder = run["recorder"]
    texts = store.texts(f"b7-inline-{run['run']}-")
    floor = store.floor_commands(cut(texts, [r for g in rec.burst_groups for r in g]), run["run"])
    big = f"b7-big-{run['run']}"
    log = store.log(big)
    log.acquire()
    log.append(big_log(big_events))
    count = len(log.read())
    log.close()
    times = []
    for _ in range(3):
        start = time.perf_counter()
        agent = LoopAgent(EchoHost(), log=store.log(big))
        times.append(time.perf_counter() - start)
        await agent.detach()
        agent.log.close()  # type: ignore[attr-defined]
    return {
        "agents": agents,
        "followups_per_agent": followups,
        "turns_per_s": run["turns_per_s"],
        "appends": run["transactions"],
        "worst_stall_ms": run["loop_serve"]["max_ms"],
        "ratio_to_insert_floor": floor / run["serve_s"],
        "open_10k_events_ms": statistics.median(times) * 1000,
        "open_log_events": count,
    }


# --------------------------------------------------------------------- running


def postgres_conninfo(cluster: bool = False) -> tuple[str, Callable[[], None]]:
    """``$INBOX_CORE_TEST_PG`` (unless ``cluster``), else a throwaway cluster with fsync on."""
    conninfo = os.environ.get("INBOX_CORE_TEST_PG")
    if conninfo and not cluster:
        return conninfo, _nothing
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from tests.shell.pg import Cluster, wait_ready  # noqa: PLC0415 - the repo's test helper

    started = Cluster(fsync=True, max_connections=100).start()
    wait_ready(started.conninfo)
    return started.conninfo, started.destroy


def _nothing() -> None:
    return None


def machine() -> dict[str, Any]:
    cpu = ""
    try:
        with open("/proc/cpuinfo") as handle:
            cpu = next((ln.split(":", 1)[1].strip() for ln in handle if "model name" in ln), "")
    except OSError:  # pragma: no cover
        pass
    return {
        "python": platform.python_version(),
        "cpu": cpu,
        "cores": os.cpu_count(),
        "platform": platform.platform(),
    }


def _log(line: str) -> None:
    print(f"... {line}", file=sys.stderr, flush=True)


def run_b7(
    stores: Sequence[str],
    folder: str,
    conninfo: str | None,
    agents: int,
    followups: int,
    rounds: int,
    log: Callable[[str], None] = _log,
    paced: float = 0.0,
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name in stores:
        if name == "postgres":
            if conninfo is None:
                continue
            store: Store = Postgres(conninfo)
        else:
            store = Sqlite(folder, "NORMAL" if name == "sqlite_normal" else "FULL")
        try:
            out[store.name] = asyncio.run(
                b7_store_rounds(store, agents, followups, rounds, log, paced)
            )
        finally:
            store.close()
    return out


STORES = ("sqlite_full", "sqlite_normal", "postgres")
PARTS = ("b7", "failover", "memory")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.many_agents", description=__doc__)
    parser.add_argument("--agents", type=int, default=1000, help="B7 agents (1000)")
    parser.add_argument("--followups", type=int, default=3, help="B7 followups per agent (3)")
    parser.add_argument("--rounds", type=int, default=3, help="B7 rounds per store (3)")
    parser.add_argument(
        "--paced-seconds",
        type=float,
        default=8.0,
        help="B7 paced phase: one more followup per agent spread over this window (0: none)",
    )
    parser.add_argument("--stores", default=",".join(STORES), help=",".join(STORES))
    parser.add_argument("--parts", default=",".join(PARTS), help=",".join(PARTS))
    parser.add_argument("--failover-agents", type=int, default=500)
    parser.add_argument("--failover-events", type=int, default=1000)
    parser.add_argument("--lease", type=float, default=3.0, help="failover: PostgreSQL lease (s)")
    parser.add_argument("--memory-agents", type=int, default=1000)
    parser.add_argument("--memory-idle", type=float, default=15.0, help="memory: idle_seconds")
    parser.add_argument("--pg", default=None, help="a libpq conninfo (else $INBOX_CORE_TEST_PG)")
    parser.add_argument("--pg-cluster", action="store_true", help="start a cluster, fsync on")
    parser.add_argument("--out", type=Path, default=None, help="JSON result file")
    parser.add_argument("--markdown", action="store_true", help="print tables as Markdown")
    args = parser.parse_args(argv)
    stores = [s.strip() for s in args.stores.split(",") if s.strip()]
    stores = ["sqlite_full" if s == "sqlite" else s for s in stores]
    parts = [p.strip() for p in args.parts.split(",") if p.strip()]
    unknown = [s for s in stores if s not in STORES] + [p for p in parts if p not in PARTS]
    if unknown:
        parser.error(f"unknown store or part: {', '.join(unknown)}")

    from benchmarks import agent_memory, failover  # noqa: PLC0415 - they import this module

    started = time.time()
    result: dict[str, Any] = {
        "schema": SCHEMA,
        "machine": machine(),
        "argv": sys.argv[1:] if argv is None else list(argv),
        "load1_start": load(),
        "config": {
            "agents": args.agents,
            "followups": args.followups,
            "rounds": args.rounds,
            "paced_seconds": args.paced_seconds,
            "stores": stores,
            "parts": parts,
            "failover_agents": args.failover_agents,
            "failover_events": args.failover_events,
            "lease_seconds": args.lease,
            "memory_agents": args.memory_agents,
            "memory_idle_seconds": args.memory_idle,
        },
    }
    cleanup: Callable[[], None] = _nothing
    conninfo: str | None = args.pg
    try:
        if "postgres" in stores and conninfo is None:
            conninfo, cleanup = postgres_conninfo(args.pg_cluster)
        with tempfile.TemporaryDirectory(prefix="inbox-b7-") as folder:
            if "b7" in parts:
                result["B7"] = run_b7(
                    stores,
                    folder,
                    conninfo,
                    args.agents,
                    args.followups,
                    args.rounds,
                    paced=args.paced_seconds,
                )
            if "failover" in parts:
                result["failover"] = failover.run_all(
                    stores,
                    folder,
                    conninfo,
                    args.failover_agents,
                    args.failover_events,
                    args.lease,
                    log=_log,
                )
            if "memory" in parts:
                result["memory"] = agent_memory.run_all(
                    stores, folder, conninfo, args.memory_agents, args.memory_idle, log=_log
                )
    finally:
        cleanup()
    result["load1_end"] = load()
    result["seconds"] = time.time() - started
    from benchmarks.many_agents_report import tables  # noqa: PLC0415

    print(tables(result, markdown=args.markdown))
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(result, indent=2) + "\n")
        print(f"\nwritten: {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
