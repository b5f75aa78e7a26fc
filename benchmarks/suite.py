"""The benchmark suite B1-B6 (issue 6) and B9 (issue 33): workloads, timing, ratios and targets.

Method
------
* Hand-rolled timer, no plugin: each benchmark runs *batches* of work and
  records, per batch, CPU time (``time.process_time_ns``) and wall time
  (``time.perf_counter_ns``). Figures are medians over batches. The pure
  benchmarks (B1, B2, B3, B6) are CPU-bound and single-threaded, so CPU time
  is the headline: on a 2-core machine shared with other jobs it is not
  inflated when the scheduler preempts us. Wall medians are kept in the JSON.
  B5 (asyncio, SQLite) is reported in wall time.
* Side by side: B1 and B6 variants run interleaved, one batch of each per
  round, so load from other processes spreads evenly over all of them and
  the ratios compare like with like. B2 edits are interleaved the same way.
* The cyclic GC stays enabled (a persistent structure allocates; its GC cost
  is part of its cost); ``gc.collect()`` runs before each batch.
* Noise is reported per figure as the interquartile range relative to the
  median (``spread``).
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import importlib
import itertools
import linecache
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from benchmarks import workloads
from benchmarks.floor import FloorAgent
from inbox_core import (
    AgentState,
    Remove,
    Replace,
    UserMessage,
    reduce,
    replay,
)

SCHEMA = "inbox-core-bench/1"


@dataclass(frozen=True)
class Config:
    """Sizes of one run. ``FULL`` is the issue's sizes, ``QUICK`` a smoke run."""

    name: str
    rounds: int
    b1_depths: tuple[int, ...]
    b1_batch: int
    b2_depths: tuple[int, int]
    b2_batch: int
    b3_events: int
    b3_repeats: int
    b4_depth: int
    b5_messages: int
    b5_repeats: int
    b5_sqlite_messages: int
    only: tuple[str, ...] = field(default=())

    def wants(self, bench: str) -> bool:
        return not self.only or bench in self.only


FULL = Config(
    name="full",
    rounds=41,
    b1_depths=(10, 1_000, 10_000),
    b1_batch=500,
    b2_depths=(10, 10_000),
    b2_batch=1_000,
    b3_events=1_000_000,
    b3_repeats=5,
    b4_depth=100_000,
    b5_messages=5_000,
    b5_repeats=5,
    b5_sqlite_messages=2_000,
)

QUICK = Config(
    name="quick",
    rounds=5,
    b1_depths=(10, 1_000, 10_000),
    b1_batch=200,
    b2_depths=(10, 10_000),
    b2_batch=300,
    b3_events=100_000,
    b3_repeats=1,
    b4_depth=10_000,
    b5_messages=500,
    b5_repeats=2,
    b5_sqlite_messages=200,
)

TINY = Config(
    name="tiny",
    rounds=2,
    b1_depths=(10, 100),
    b1_batch=20,
    b2_depths=(10, 100),
    b2_batch=20,
    b3_events=3_000,
    b3_repeats=1,
    b4_depth=300,
    b5_messages=20,
    b5_repeats=1,
    b5_sqlite_messages=10,
)
"""For the smoke test only: every code path, no meaningful numbers."""

CONFIGS = {c.name: c for c in (FULL, QUICK, TINY)}

# --------------------------------------------------------------------- timing


@dataclass
class Samples:
    """Per-batch timings (ns) and the units of work each batch did."""

    units: int
    cpu: list[int] = field(default_factory=list)
    wall: list[int] = field(default_factory=list)

    def add(self, cpu: int, wall: int) -> None:
        self.cpu.append(cpu)
        self.wall.append(wall)

    def per_unit_us(self, clock: str = "cpu") -> float:
        values = self.cpu if clock == "cpu" else self.wall
        return statistics.median(values) / self.units / 1_000

    def summary(self, clock: str = "cpu") -> dict[str, Any]:
        values = sorted(v / self.units / 1_000 for v in (self.cpu if clock == "cpu" else self.wall))
        return {
            "median_us": statistics.median(values),
            "min_us": values[0],
            "max_us": values[-1],
            "spread": _spread(values),
            "batches": len(values),
            "units_per_batch": self.units,
        }


def _spread(values: list[float]) -> float:
    """Interquartile range / median: the noise of one figure."""
    if len(values) < 4:
        return (max(values) - min(values)) / statistics.median(values)
    q1, _, q3 = statistics.quantiles(values, n=4)
    return (q3 - q1) / statistics.median(values)


def paired(a: Samples, b: Samples, clock: str = "cpu") -> float:
    """Median over rounds of a's per-unit time / b's, both measured in the same round."""
    xs = a.cpu if clock == "cpu" else a.wall
    ys = b.cpu if clock == "cpu" else b.wall
    return statistics.median((x / a.units) / (y / b.units) for x, y in zip(xs, ys, strict=True))


def timed(fn: Callable[[], Any]) -> tuple[int, int, Any]:
    """Run ``fn`` once after a collection; return (cpu ns, wall ns, result)."""
    gc.collect()
    cpu0, wall0 = time.process_time_ns(), time.perf_counter_ns()
    result = fn()
    cpu1, wall1 = time.process_time_ns(), time.perf_counter_ns()
    return cpu1 - cpu0, wall1 - wall0, result


def _both(samples: Samples) -> dict[str, Any]:
    return {"cpu": samples.summary("cpu"), "wall": samples.summary("wall")}


# ------------------------------------------------------------------ B1 + B6


def bench_steady(config: Config) -> dict[str, Any]:
    """B1 (core) and B6 (floor) side by side: µs per message at each depth.

    Every round runs one batch of each variant (core and floor at each
    depth), in an order that rotates from round to round. Ratios are
    *paired*: computed within each round, then the median over rounds, so a
    load change between rounds cancels out.
    """
    depths = config.b1_depths
    total = max(depths) + 1 + config.rounds * config.b1_batch
    sends = workloads.followups("m", total)
    messages = [send.input.message for send in sends]

    core: dict[int, AgentState] = {}
    floor: dict[int, FloorAgent] = {}
    for depth in depths:
        core[depth] = workloads.steady_state(iter(sends), depth)
        floor[depth] = workloads.floor_steady_state(iter(messages), depth)
    core_samples = {d: Samples(config.b1_batch) for d in depths}
    floor_samples = {d: Samples(config.b1_batch) for d in depths}

    def run_core(depth: int, start: int) -> None:
        batch = sends[start : start + config.b1_batch]
        state = core[depth]
        cpu, wall, core[depth] = timed(lambda: workloads.core_messages(state, batch))
        core_samples[depth].add(cpu, wall)

    def run_floor(depth: int, start: int) -> None:
        agent, plain = floor[depth], messages[start : start + config.b1_batch]
        cpu, wall, _ = timed(lambda: workloads.floor_messages(agent, plain))
        floor_samples[depth].add(cpu, wall)

    variants = [(run_core, d) for d in depths] + [(run_floor, d) for d in depths]
    for r in range(config.rounds):
        shift = r % len(variants)
        for run, depth in variants[shift:] + variants[:shift]:
            run(depth, depth + 1 + r * config.b1_batch)
    for depth in depths:
        workloads.check_steady(core[depth], depth)
        workloads.check_floor(floor[depth], depth)

    low, high = min(depths), max(depths)
    b1: dict[str, Any] = {
        "what": "one followup + one full turn through reduce, steady depth D in next-turn",
        "depths": {str(d): _both(core_samples[d]) for d in depths},
        "us_per_message": {str(d): core_samples[d].per_unit_us() for d in depths},
        "ratio_high_low": paired(core_samples[high], core_samples[low]),
        "ratio_high_low_wall": paired(core_samples[high], core_samples[low], "wall"),
        "ratio_of_medians": core_samples[high].per_unit_us() / core_samples[low].per_unit_us(),
        "x_floor": {str(d): paired(core_samples[d], floor_samples[d]) for d in depths},
    }
    b1["x_floor_max"] = max(b1["x_floor"].values())
    b6 = {
        "what": "the same B1 work on a mutable deque + dict agent (benchmarks/floor.py)",
        "depths": {str(d): _both(floor_samples[d]) for d in depths},
        "us_per_message": {str(d): floor_samples[d].per_unit_us() for d in depths},
        "ratio_high_low": paired(floor_samples[high], floor_samples[low]),
        "unit_us": floor_samples[low].per_unit_us(),
        "unit_depth": low,
    }
    return {"B1": b1, "B6": b6}


# ------------------------------------------------------------------------ B2


def bench_edits(config: Config, floor_unit_us: float | None) -> dict[str, Any]:
    """B2: ``Replace`` and ``Remove`` of the middle entry at two depths.

    Each edit is applied to the same persistent state again and again (the
    state is a value, so nothing drifts); the steady B1 state is the base:
    a running turn with D waking followups queued behind it. Rounds and
    paired ratios as in B1.
    """
    low, high = config.b2_depths
    sends = workloads.followups("m", high + 1)
    bases = {d: workloads.steady_state(iter(sends), d) for d in (low, high)}
    replacement = UserMessage("replacement", workloads.TEXT)
    commands: dict[tuple[str, int], Any] = {}
    for depth, state in bases.items():
        middle = state.next_turn[depth // 2].message.id
        commands["replace", depth] = Replace(middle, replacement)
        commands["remove", depth] = Remove(middle)
        for op in ("replace", "remove"):
            _check_edit(state, commands[op, depth], depth // 2)

    floors: dict[int, tuple[FloorAgent, str]] = {}
    for depth in (low, high):
        agent = workloads.floor_steady_state(iter(s.input.message for s in sends), depth)
        floors[depth] = (agent, agent.next_turn[depth // 2][0].id)

    samples = {key: Samples(config.b2_batch) for key in commands}
    floor_samples = {d: Samples(config.b2_batch) for d in (low, high)}
    reps = range(config.b2_batch)

    def edit(key: tuple[str, int]) -> None:
        state, command = bases[key[1]], commands[key]

        def work() -> None:
            for _ in reps:
                reduce(state, command)

        cpu, wall, _ = timed(work)
        samples[key].add(cpu, wall)

    def floor_edit(depth: int) -> None:
        agent, original = floors[depth]
        other = UserMessage("floor-replacement", workloads.TEXT)
        back = UserMessage(original, workloads.TEXT)

        def work() -> None:
            for _ in range(len(reps) // 2):
                agent.replace(original, other)
                agent.replace(other.id, back)

        cpu, wall, _ = timed(work)
        floor_samples[depth].add(cpu, wall)

    variants: list[tuple[Callable[[Any], None], Any]] = [(edit, key) for key in commands]
    variants += [(floor_edit, d) for d in (low, high)]
    for r in range(config.rounds):
        shift = r % len(variants)
        for run, key in variants[shift:] + variants[:shift]:
            run(key)

    result: dict[str, Any] = {
        "what": "Replace / Remove of the middle entry of next-turn (running turn, D waking)",
        "depths": [low, high],
        "floor_replace": {str(d): _both(floor_samples[d]) for d in (low, high)},
        "floor_replace_ratio": paired(floor_samples[high], floor_samples[low]),
    }
    for op in ("replace", "remove"):
        result[op] = {
            "depths": {str(d): _both(samples[op, d]) for d in (low, high)},
            "us": {str(d): samples[op, d].per_unit_us() for d in (low, high)},
            "ratio": paired(samples[op, high], samples[op, low]),
            "ratio_wall": paired(samples[op, high], samples[op, low], "wall"),
            "ratio_of_medians": samples[op, high].per_unit_us() / samples[op, low].per_unit_us(),
        }
        if floor_unit_us:
            result[op]["x_floor_unit"] = {
                str(d): samples[op, d].per_unit_us() / floor_unit_us for d in (low, high)
            }
    return result


def _check_edit(state: AgentState, command: Any, position: int) -> None:
    transition = reduce(state, command)
    (spliced,) = transition.durable
    if spliced.start != position or spliced.removed_count != 1:
        raise AssertionError(f"unexpected edit events: {transition.durable!r}")


# ------------------------------------------------------------------------ B3


def bench_replay(config: Config, floor_unit_us: float | None) -> dict[str, Any]:
    """B3: fold a generated durable log; events/s and the cost of its last vs first tenth."""
    started = time.perf_counter()
    log, commands, live = workloads.build_log(config.b3_events)
    build_s = time.perf_counter() - started
    if replay(log).projection() != live.projection():
        raise AssertionError("replay does not reproduce the live projection")
    n = len(log)
    buckets = 100 if n >= 10_000 else 10
    size = -(-n // buckets)
    runs = []
    for _ in range(config.b3_repeats):
        cpu_marks: list[int] = []
        wall_marks: list[int] = []

        def marked(
            cpu_marks: list[int] = cpu_marks, wall_marks: list[int] = wall_marks
        ) -> Iterator[Any]:
            for i in range(0, n, size):
                cpu_marks.append(time.process_time_ns())
                wall_marks.append(time.perf_counter_ns())
                yield from log[i : i + size]
            cpu_marks.append(time.process_time_ns())
            wall_marks.append(time.perf_counter_ns())

        gc.collect()
        replay(marked())
        counts = [min(size, n - i) for i in range(0, n, size)]
        cpu = [b - a for a, b in itertools.pairwise(cpu_marks)]
        wall = [b - a for a, b in itertools.pairwise(wall_marks)]
        runs.append(
            {
                "events_per_s": n / (sum(cpu) / 1e9),
                "events_per_s_wall": n / (sum(wall) / 1e9),
                **_tail_ratios(cpu, counts, "cpu"),
                **_tail_ratios(wall, counts, "wall"),
                "tenths_events_per_s": _tenths(cpu, counts),
            }
        )
    result: dict[str, Any] = {
        "what": "replay() of a log generated by driving reduce with a realistic command mix",
        "events": n,
        "buckets": len(counts),
        "log_build_s": build_s,
        "commands": commands,
        "event_mix": workloads.event_mix(log),
        "runs": runs,
        "events_per_s": statistics.median(r["events_per_s"] for r in runs),
        "events_per_s_wall": statistics.median(r["events_per_s_wall"] for r in runs),
        "last_first": statistics.median(r["last_first_cpu"] for r in runs),
        "last_first_sum": statistics.median(r["last_first_sum_cpu"] for r in runs),
        "last_first_wall": statistics.median(r["last_first_wall"] for r in runs),
    }
    result["us_per_event"] = 1e6 / result["events_per_s"]
    if floor_unit_us:
        result["x_floor_unit"] = result["us_per_event"] / floor_unit_us
    return result


def _tail_ratios(times: list[int], counts: list[int], clock: str) -> dict[str, float]:
    """Cost per event of the last tenth of the log over the first tenth.

    ``last_first_sum``: total time of the last 10% of events / the first 10%
    (the literal definition). ``last_first``: the same with each tenth's cost
    taken as the median of its buckets (1% of the log each), which a burst
    of load from another process on the shared machine cannot move much.
    """
    per_event = [t / c for t, c in zip(times, counts, strict=True)]
    k = max(1, len(times) // 10)
    first, last = per_event[:k], per_event[-k:]
    literal = (sum(times[-k:]) / sum(counts[-k:])) / (sum(times[:k]) / sum(counts[:k]))
    return {
        f"last_first_{clock}": statistics.median(last) / statistics.median(first),
        f"last_first_sum_{clock}": literal,
    }


def _tenths(times: list[int], counts: list[int]) -> list[float]:
    """Events per second of each tenth of the log (the shape of the curve)."""
    k = max(1, len(times) // 10)
    return [sum(counts[i : i + k]) / (sum(times[i : i + k]) / 1e9) for i in range(0, len(times), k)]


# ------------------------------------------------------------------------ B4


def bench_memory(config: Config) -> dict[str, Any]:
    """B4: bytes the inbox holds per pending entry, messages excluded.

    The messages and their ``Send`` commands exist before tracing starts;
    then ``depth`` ``queue`` sends go through ``reduce`` (idle agent, so
    nothing is claimed) and what is still allocated once the final state is
    the only survivor is the inbox's: entries, order keys, chunks, the id
    index, and one ``AgentState``.
    """
    depth = config.b4_depth
    sends = workloads.queued("q", depth)
    messages = [s.input.message for s in sends]
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        state = AgentState.initial()
        for send in sends:
            state = reduce(state, send).state
        gc.collect()
        core_bytes = tracemalloc.get_traced_memory()[0] - before
        snapshot = tracemalloc.take_snapshot()
        if state.inbox.size("next-turn") != depth:
            raise AssertionError("B4: not every entry is pending")
        del state
        gc.collect()
        before = tracemalloc.get_traced_memory()[0]
        agent = FloorAgent()
        for m in messages:
            agent.send("next-turn", m, (), False)
        gc.collect()
        floor_bytes = tracemalloc.get_traced_memory()[0] - before
        del agent
    finally:
        tracemalloc.stop()
    sites = [
        {
            "site": f"{Path(stat.traceback[0].filename).name}:{stat.traceback[0].lineno}",
            "code": linecache.getline(stat.traceback[0].filename, stat.traceback[0].lineno).strip(),
            "bytes_per_entry": stat.size / depth,
            "blocks": stat.count,
        }
        for stat in snapshot.statistics("lineno")[:8]
        if stat.size / depth >= 0.5
    ]
    return {
        "what": "tracemalloc: bytes retained by the inbox per pending entry (messages excluded)",
        "depth": depth,
        "bytes_per_entry": core_bytes / depth,
        "floor_bytes_per_entry": floor_bytes / depth,
        "x_floor": core_bytes / floor_bytes,
        "sites": sites,
    }


# ------------------------------------------------------------------------ B5


def shell_available() -> str | None:
    """None if ``inbox_core.shell`` exports what B5 needs, else why not."""
    try:
        shell = importlib.import_module("inbox_core.shell")
    except Exception as error:  # pragma: no cover - depends on the shell's progress
        return f"inbox_core.shell does not import: {error!r}"
    missing = [
        n for n in ("LoopAgent", "EchoHost", "MemoryLog", "SqliteLog") if not hasattr(shell, n)
    ]
    if missing:
        return f"inbox_core.shell does not export {', '.join(missing)} yet"
    return None


def bench_shell(config: Config, floor_unit_us: float | None) -> dict[str, Any]:
    """B5: messages/s through ``LoopAgent`` + ``EchoHost`` with ``MemoryLog`` and ``SqliteLog``.

    ``SqliteLog`` runs with its default ``synchronous="FULL"`` (an fsync per
    command) and, for contrast, ``"NORMAL"``. Two patterns per log: *burst*
    (send N followups, then ``await when_idle()``: each still gets its own
    turn, R20) and *sequential* (send one, await idle, repeat: the
    latency-bound interactive pattern).
    """
    reason = shell_available()
    if reason is not None:
        return {"skipped": reason}
    shell = importlib.import_module("inbox_core.shell")
    result: dict[str, Any] = {
        "what": "followups through LoopAgent(EchoHost()) until idle; wall clock",
    }
    with tempfile.TemporaryDirectory(prefix="inbox-bench-") as tmp:
        counter = itertools.count()

        def memory_log() -> Any:
            return shell.MemoryLog()

        def sqlite_log() -> Any:
            return shell.SqliteLog(os.path.join(tmp, f"log{next(counter)}.db"))

        def sqlite_normal_log() -> Any:
            path = os.path.join(tmp, f"log{next(counter)}.db")
            return shell.SqliteLog(path, synchronous="NORMAL")

        variants: list[tuple[str, Callable[[], Any], int]] = [
            ("memory", memory_log, config.b5_messages),
            ("sqlite", sqlite_log, config.b5_sqlite_messages),
            ("sqlite_normal", sqlite_normal_log, config.b5_sqlite_messages),
        ]
        for name, make_log, count in variants:
            per_pattern: dict[str, Any] = {}
            for pattern in ("burst", "sequential"):
                samples = Samples(count)
                for repeat in range(config.b5_repeats):
                    msgs = [
                        workloads.message(f"{name}-{pattern}-{repeat}-{i}") for i in range(count)
                    ]
                    try:
                        log = make_log()
                    except TypeError as error:  # e.g. no ``synchronous`` option
                        per_pattern[pattern] = {"skipped": repr(error)}
                        break
                    try:
                        cpu, wall, delivered = timed(
                            lambda m=msgs, p=pattern, lg=log: asyncio.run(
                                _drive_shell(shell, lg, m, p)
                            )
                        )
                    finally:
                        close = getattr(log, "close", None)
                        if close is not None:
                            close()
                    if delivered != count:
                        raise AssertionError(f"B5: {delivered} of {count} messages entered")
                    samples.add(cpu, wall)
                else:
                    us = samples.per_unit_us("wall")
                    per_pattern[pattern] = {
                        "messages_per_s": 1e6 / us,
                        "us_per_message": us,
                        "cpu_us_per_message": samples.per_unit_us("cpu"),
                        "wall": samples.summary("wall"),
                    }
                    if floor_unit_us:
                        per_pattern[pattern]["x_floor_unit"] = us / floor_unit_us
            result[name] = per_pattern
    return result


async def _drive_shell(shell: Any, log: Any, messages: list[UserMessage], pattern: str) -> int:
    """Deliver ``messages`` as followups; return how many entered the model."""
    entered = 0

    def count(note: Any) -> None:
        nonlocal entered
        if note.type == "agent/inbox/claimed":
            entered += 1

    agent = shell.LoopAgent(shell.EchoHost(), log=log)
    unsubscribe = agent.subscribe(count)
    try:
        if pattern == "burst":
            for m in messages:
                agent.followup(m)
            await agent.when_idle()
        else:
            for m in messages:
                agent.followup(m)
                await agent.when_idle()
    finally:
        unsubscribe()
        await agent.aclose()
    return entered


# ---------------------------------------------------------------- the run


TARGETS: tuple[tuple[str, str, str, float], ...] = (
    ("B1", "ratio D=10,000 / D=10", "<=", 1.3),
    ("B1", "cost per message vs B6 floor (worst depth)", "<=", 10.0),  # issue 10
    ("B2", "replace ratio depth 10,000 / 10", "<=", 2.0),
    ("B2", "remove ratio depth 10,000 / 10", "<=", 2.0),
    ("B3", "events per second", ">=", 300_000.0),
    ("B3", "last 10% / first 10% cost", "<=", 1.3),
    ("B4", "bytes per pending entry beyond the message", "<=", 400.0),
    ("B5", "messages per second, MemoryLog (burst)", ">=", 10_000.0),
    ("B9", "TypeScript port µs per command at the deepest D", "<=", 2.0),  # issue 33
    ("B9", "TypeScript port ratio D=10,000 / D=10", "<=", 1.3),
)


def _target_values(results: dict[str, Any]) -> list[Any]:
    def get(*path: str) -> Any:
        node: Any = results
        for key in path:
            if not isinstance(node, dict) or key not in node:
                return None
            node = node[key]
        return node

    return [
        get("B1", "ratio_high_low"),
        get("B1", "x_floor_max"),
        get("B2", "replace", "ratio"),
        get("B2", "remove", "ratio"),
        get("B3", "events_per_s"),
        get("B3", "last_first"),
        get("B4", "bytes_per_entry"),
        get("B5", "memory", "burst", "messages_per_s"),
        get("B9", "port_us_at_max_depth"),
        get("B9", "port_ratio_high_low"),
    ]


def evaluate(results: dict[str, Any]) -> list[dict[str, Any]]:
    rows = []
    for (bench, metric, op, limit), value in zip(TARGETS, _target_values(results), strict=True):
        ok = None if value is None else (value <= limit if op == "<=" else value >= limit)
        rows.append(
            {
                "bench": bench,
                "metric": metric,
                "target": f"{op} {limit:g}",
                "value": value,
                "pass": ok,
            }
        )
    return rows


def machine() -> dict[str, Any]:
    cpu = platform.processor() or "unknown"
    with contextlib.suppress(OSError):  # not Linux: keep platform.processor()
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    commit = None
    with contextlib.suppress(OSError):
        git = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            check=False,
            cwd=Path(__file__).resolve().parent,
        )
        commit = git.stdout.strip() or None
    load = os.getloadavg() if hasattr(os, "getloadavg") else None
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "python": sys.version.split()[0],
        "implementation": platform.python_implementation(),
        "platform": platform.platform(),
        "loadavg_at_start": load,
        "git_commit": commit,
        "core_path": str(Path(importlib.import_module("inbox_core").__file__ or "").parent),
    }


def run(config: Config, log: Callable[[str], None] = lambda _: None) -> dict[str, Any]:
    """Run the suite at ``config`` sizes and return the JSON-ready result."""
    started = time.perf_counter()
    results: dict[str, Any] = {}
    floor_unit: float | None = None
    if config.wants("B1") or config.wants("B6") or not config.only:
        log("B1/B6: steady state, core and floor side by side")
        results.update(bench_steady(config))
        floor_unit = results["B6"]["unit_us"]
    if config.wants("B2"):
        log("B2: edits at depth")
        results["B2"] = bench_edits(config, floor_unit)
    if config.wants("B3"):
        log(f"B3: replay of {config.b3_events:,} events")
        results["B3"] = bench_replay(config, floor_unit)
    if config.wants("B4"):
        log(f"B4: memory at depth {config.b4_depth:,}")
        results["B4"] = bench_memory(config)
    if config.wants("B5"):
        log("B5: the shell")
        results["B5"] = bench_shell(config, floor_unit)
    if config.wants("B9"):
        log("B9: the TypeScript port beside the reference")
        from benchmarks import ts_port  # noqa: PLC0415 - it imports this module's timing

        results["B9"] = ts_port.bench(config)
    return {
        "schema": SCHEMA,
        "config": asdict(config),
        "machine": machine(),
        "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "duration_s": time.perf_counter() - started,
        "loadavg_at_end": os.getloadavg() if hasattr(os, "getloadavg") else None,
        "results": results,
        "targets": evaluate(results),
    }
