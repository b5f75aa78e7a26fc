"""B7 memory (issue 20): what an idle served agent costs a worker, and what a detached one
leaves behind. Each store runs in a process of its own (RSS is per process, and memory
one run freed would be reused by the next).

``python -m benchmarks.agent_memory --store sqlite|postgres --target PATH|CONNINFO
[--agents 1000] [--idle 15]`` prints one JSON document; ``run_all`` (part *memory* of
``python -m benchmarks.many_agents``) starts it per store, PostgreSQL in a scratch database.

A real ``Worker`` (``echo_host``, ``idle_seconds=--idle``) serves ``agents`` agents: each
gets one posted followup, so the worker opens it (``LoopAgent`` + its log object on the
shared per-thread connection + its host + its post server task and wake), runs one turn
and keeps it, idle, until ``idle_seconds`` pass; then it detaches it. Three cycles over
the same agents:

1. warm-up: the worker's threads, their connections and caches appear; its RSS figures
   include them;
2. steady state: *RSS per idle served agent* = (RSS with every agent served and idle -
   RSS after cycle 1 detached them all) / agents; *RSS per detached agent* = (RSS after
   cycle 2 detached them - RSS after cycle 1 did) / agents: what a serve-and-detach cycle
   leaves behind. Also the CPU the idle agents cost (the worker's whole process, 2 s);
3. ``tracemalloc`` on: the Python bytes per served agent, and the bytes still allocated
   after the detach, by line, if any; plus the count of live ``LoopAgent``, log and host
   objects after it (``gc``), which should be 0.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import ctypes
import gc
import json
import os
import subprocess
import sys
import time
import tracemalloc
import types
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from benchmarks.many_agents import rss
from inbox_core import create_user_message, followup
from inbox_core.shell import PostgresStore, SqliteStore, Worker
from inbox_core.shell.echo import echo_host

WATCHED = ("LoopAgent", "SqliteLog", "PostgresLog", "EchoHost", "PostServer", "Chime")


def live_objects() -> dict[str, int]:
    gc.collect()
    counts = dict.fromkeys(WATCHED, 0)
    for obj in gc.get_objects():
        name = type(obj).__name__
        if name in counts:
            counts[name] += 1
    return counts


def holders(limit: int = 3) -> list[str]:
    """For up to ``limit`` live ``LoopAgent``s: the chain of objects that keeps each alive
    (the first referrer at each step, up to a frame, a module or 8 steps)."""
    gc.collect()
    ids = [id(o) for o in gc.get_objects() if type(o).__name__ == "LoopAgent"][:limit]
    chains: list[str] = []
    for wanted in ids:
        agent = next(o for o in gc.get_objects() if id(o) == wanted)
        chains.append(" <- ".join(_chain(agent)))
        del agent
    return chains


def _chain(agent: object) -> list[str]:
    names = ["LoopAgent"]
    obj: Any = agent
    mine: set[int] = {id(names), id(sys._getframe())}
    for _ in range(8):
        refs = gc.get_referrers(obj)
        mine.add(id(refs))
        found = [
            r
            for r in refs
            if id(r) not in mine
            and not (isinstance(r, types.FrameType) and r.f_code.co_filename == __file__)
        ]
        del refs
        if not found:
            names.append("(no tracked referrer: a local of a running frame, e.g. a thread's)")
            break
        obj = found[0]
        del found
        mine.add(id(obj))
        if isinstance(obj, types.FrameType):
            code = obj.f_code
            names.append(f"frame {code.co_name} ({Path(code.co_filename).name}:{obj.f_lineno})")
            break
        if isinstance(obj, types.ModuleType):
            names.append(f"module {obj.__name__}")
            break
        name = type(obj).__name__
        if isinstance(obj, types.FunctionType):
            name += f" {obj.__qualname__}"
        elif isinstance(obj, dict):
            name += f" (keys {', '.join(type(k).__name__ for k in list(obj)[:2])})"
        names.append(name)
    return names


async def _until(ready: Callable[[], bool], what: str, timeout: float = 600.0) -> float:
    start = time.perf_counter()
    while not ready():
        if time.perf_counter() - start > timeout:
            raise TimeoutError(what)
        await asyncio.sleep(0.05)
    return time.perf_counter() - start


def _settled_rss() -> int:
    """RSS after a full collection and ``malloc_trim`` (freed heap pages back to the OS, so
    that what a detach freed shows)."""
    gc.collect()
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    return rss()


async def measure(kind: str, target: str, agents: int, idle: float) -> dict[str, Any]:
    store: Any = SqliteStore(target) if kind == "sqlite" else PostgresStore(target)
    run = uuid.uuid4().hex[:6]
    ids = [f"mem-{run}-{i:05d}" for i in range(agents)]
    warm = [f"mem-{run}-warm-{i}" for i in range(max(1, min(50, agents // 10)))]
    worker = Worker(
        store,
        echo_host,
        max_agents=agents + 100,
        idle_seconds=idle,
        poll_seconds=0.2,
        lease_seconds=120.0 if kind == "postgres" else None,
    )
    window = min(2.0, idle / 2)  # the CPU of idle agents is measured this long
    serving = asyncio.ensure_future(worker.run())
    await asyncio.sleep(min(1.0, idle / 2))
    out: dict[str, Any] = {"store": kind, "agents": agents, "idle_seconds": idle, "cycles": []}
    out["rss_base_mb"] = _settled_rss() / 2**20
    cpu0, wall0 = time.process_time(), time.perf_counter()
    await asyncio.sleep(window)
    no_agents = (time.process_time() - cpu0) / (time.perf_counter() - wall0)
    out["idle_cpu_share_no_agents"] = no_agents
    totals = {"posts": 0, "detached": 0}

    async def cycle(number: int, agent_ids: list[str], tracing: bool) -> dict[str, Any]:
        n = len(agent_ids)
        before = _settled_rss()
        if tracing:
            tracemalloc.start(1)
            snap0 = tracemalloc.take_snapshot()
            traced0 = tracemalloc.get_traced_memory()[0]
        posted = time.perf_counter()

        def post_all() -> None:
            for agent_id in agent_ids:
                store.post(agent_id, followup(create_user_message(f"{agent_id} cycle {number}")))

        await asyncio.to_thread(post_all)
        totals["posts"] += n
        totals["detached"] += n

        def all_idle() -> bool:
            s = worker.stats()
            return s.posts >= totals["posts"] and s.running == 0

        await _until(all_idle, f"cycle {number}: agents not served")
        served_in = time.perf_counter() - posted
        stats = worker.stats()
        served = _settled_rss()
        cpu0, wall0 = time.process_time(), time.perf_counter()
        await asyncio.sleep(window)
        idle_cpu = (time.process_time() - cpu0) / (time.perf_counter() - wall0)
        traced_served = tracemalloc.get_traced_memory()[0] - traced0 if tracing else 0

        def all_detached() -> bool:
            s = worker.stats()
            return s.detached >= totals["detached"] and not s.agents

        await _until(all_detached, f"cycle {number}: agents not detached")
        await asyncio.sleep(min(1.0, idle))  # the detaches close their logs in the background
        detached = _settled_rss()
        entry: dict[str, Any] = {
            "cycle": number,
            "agents": n,
            "served_in_s": served_in,
            "all_served_at_once": stats.agents == n,
            "served_at_measure": stats.agents,
            "rss_before_mb": before / 2**20,
            "rss_served_mb": served / 2**20,
            "rss_detached_mb": detached / 2**20,
            "rss_per_served_agent_kb": (served - before) / max(1, stats.agents) / 1024,
            "rss_per_detached_agent_kb": (detached - before) / n / 1024,
            "idle_cpu_share": idle_cpu,
            "idle_cpu_us_per_agent_per_s": (idle_cpu - no_agents) / max(1, stats.agents) * 1e6,
        }
        if tracing:
            gc.collect()
            snap1 = tracemalloc.take_snapshot()
            traced1 = tracemalloc.get_traced_memory()[0]
            tracemalloc.stop()
            entry["traced_per_served_agent_kb"] = traced_served / max(1, stats.agents) / 1024
            entry["traced_per_detached_agent_b"] = (traced1 - traced0) / n
            entry["traced_retained_top"] = [
                {"where": str(diff.traceback[0]), "bytes": diff.size_diff, "count": diff.count_diff}
                for diff in snap1.compare_to(snap0, "lineno")[:8]
                if diff.size_diff > 0
            ]
            entry["live_objects_after_detach"] = live_objects()
            entry["held_by"] = holders()
        return entry

    warm_up = await cycle(0, warm, tracing=False)
    out["warm_up"] = warm_up
    for number in (1, 2, 3):
        out["cycles"].append(await cycle(number, ids, tracing=number == 3))
    worker.stop()
    await serving
    store.close()
    c1, c2, c3 = out["cycles"]
    out["rss_per_served_agent_kb"] = c1["rss_per_served_agent_kb"]
    out["rss_per_detached_agent_kb"] = c1["rss_per_detached_agent_kb"]
    out["rss_growth_per_agent_per_cycle_kb"] = (
        (c2["rss_detached_mb"] - c1["rss_detached_mb"]) * 1024 / agents
    )
    out["traced_per_served_agent_kb"] = c3["traced_per_served_agent_kb"]
    out["traced_per_detached_agent_b"] = c3["traced_per_detached_agent_b"]
    out["live_objects_after_detach"] = c3["live_objects_after_detach"]
    out["held_by"] = c3["held_by"]
    out["idle_cpu_share"] = c1["idle_cpu_share"]
    out["idle_cpu_us_per_agent_per_s"] = c1["idle_cpu_us_per_agent_per_s"]
    out["all_served_at_once"] = all(c["all_served_at_once"] for c in out["cycles"])
    return out


def run_one(kind: str, target: str, agents: int, idle: float, timeout: float = 900) -> Any:
    """``measure`` in a process of its own; its JSON."""
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "benchmarks.agent_memory",
            "--store",
            kind,
            "--target",
            target,
            "--agents",
            str(agents),
            "--idle",
            str(idle),
        ],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )
    if done.returncode != 0:
        raise RuntimeError(f"agent_memory {kind} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def _log(line: str) -> None:
    print(f"... {line}", file=sys.stderr, flush=True)


def run_all(
    stores: Sequence[str],
    folder: str,
    conninfo: str | None,
    agents: int,
    idle: float = 15.0,
    log: Callable[[str], None] = _log,
) -> dict[str, Any]:
    from benchmarks.failover import scratch_database  # noqa: PLC0415

    out: dict[str, Any] = {}
    if any(s.startswith("sqlite") for s in stores):
        path = os.path.join(folder, f"memory-{uuid.uuid4().hex[:6]}.db")
        out["sqlite"] = run_one("sqlite", path, agents, idle)
        _report(out["sqlite"], log)
    if "postgres" in stores and conninfo is not None:
        with scratch_database(conninfo) as scratch:
            out["postgres"] = run_one("postgres", scratch, agents, idle)
        _report(out["postgres"], log)
    return out


def _report(result: dict[str, Any], log: Callable[[str], None]) -> None:
    log(
        f"memory {result['store']}: {result['rss_per_served_agent_kb']:.1f} KB RSS per idle "
        f"served agent, {result['rss_per_detached_agent_kb']:.2f} KB per detached agent "
        f"({result['rss_growth_per_agent_per_cycle_kb']:.2f} KB per cycle); "
        f"traced {result['traced_per_served_agent_kb']:.1f} KB / "
        f"{result['traced_per_detached_agent_b']:.0f} B; live {result['live_objects_after_detach']}"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.agent_memory", description=__doc__)
    parser.add_argument("--store", choices=("sqlite", "postgres"), required=True)
    parser.add_argument("--target", required=True, help="an SQLite path or a libpq conninfo")
    parser.add_argument("--agents", type=int, default=1000)
    parser.add_argument("--idle", type=float, default=15.0, help="the worker's idle_seconds")
    args = parser.parse_args(argv)
    result = asyncio.run(measure(args.store, args.target, args.agents, args.idle))
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
