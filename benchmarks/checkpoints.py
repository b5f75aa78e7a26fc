"""Issue 32 (R41): opening an agent against its log's length, with and without checkpoints;
what the owner's checkpoint keeping costs the commit path; the cyclic GC while opening.

``python benchmarks/checkpoints.py [--parts opening,keeping,gc,decode]
[--sizes 1000,10000,100000,1000000] [--stores sqlite,postgres] [--rounds 5]
[--pg CONNINFO | --pg-cluster] [--out F]``

*opening*: one log per size (prefixes of one ``big_log`` ending a turn, so that opening
writes nothing: at most 6 events short of the size), written as an owner writes
(``write_group``), then opened again and again with ``LoopAgent.open`` (acquire, read, fold,
``Resume``, no checkpoint written: ``checkpoint_every=None``) in three ways, side by side in
every round in a rotating order: *end* (the checkpoint an owner leaves at detach, at the
log's end), *behind* (the checkpoint ``checkpoint_every - 1`` events behind the end: the
worst an owner that died leaves) and *none* (no checkpoint: the whole log folded; at most
``--whole-rounds`` rounds, of one opening, for the largest size, which takes seconds). Every
opening runs in one event loop, as a worker's do, while another log of the store stays open
(a worker's other agents keep PostgreSQL's pool); each round takes the median of three
openings per way and size. Medians over rounds of wall time per opening, and the medians of
each round's ratio to the smallest log's (paired: the same round, the same load).

*keeping*: the B5 burst (``LoopAgent`` + ``EchoHost``, N followups then ``when_idle``) on a
``MemoryLog`` and an ``SqliteLog`` (``synchronous=NORMAL``) with the owner's checkpoints
(default ``checkpoint_every``, and every 64 events: a stress) against none
(``checkpoint_every=None``), paired per round.

*gc*: the whole read and fold of a 1,000- and a 100,000-event log (SQLite), per event, with
the cyclic GC on (how many generation-2 collections, and their time) and off.

*decode*: where a stored event's decoding goes, per event (CPU time, best of rounds, 20,000
events of a ``big_log``): the fetch of the rows (SQLite), ``json.loads``,
``limits.parse_json`` (the depth check around it), ``event_from_json`` of parsed documents
(the codec: the wire tables' checks and the values' constructors), by event type, and
``decode_rows`` whole (the store's loop: ``CorruptLog`` naming the seq).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import math
import os
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as ``python benchmarks/checkpoints.py``: the repo's root
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.failover import scratch_database
from benchmarks.many_agents import big_log, load
from inbox_core import create_user_message
from inbox_core.checkpoint import checkpoint_to_json, take
from inbox_core.events import DurableEvent, TurnEnded
from inbox_core.limits import dump_json
from inbox_core.replay import LogFold
from inbox_core.shell import EchoHost, LoopAgent, MemoryLog, PostgresStore, SqliteLog, SqliteStore
from inbox_core.shell.stores.checkpoints import DEFAULT_EVERY
from inbox_core.shell.stores.writers import Part

SIZES = (1_000, 10_000, 100_000, 1_000_000)
WRITE_CHUNK = 20_000


def _log(line: str) -> None:
    print(f"... {line}", file=sys.stderr, flush=True)


# ------------------------------------------------------------------- opening


def write_log(store: Any, agent: str, events: Sequence[DurableEvent]) -> None:
    """``events`` as agent ``agent``'s log, in chunks (each an owner's append)."""
    log = store.log(agent, checkpoint_every=None)
    log.acquire()
    for first in range(0, len(events), WRITE_CHUNK):
        (error,) = log.write_group([Part(log, events[first : first + WRITE_CHUNK])])
        assert error is None, error
    log.close()


class Planter:
    """Plants an agent's checkpoint after its first ``at`` events (None: deletes it), as its
    owner writes one; each checkpoint's text is made once."""

    def __init__(self, store: Any, events: Sequence[DurableEvent]) -> None:
        self.store = store
        self.events = events
        self.texts: dict[tuple[str, int], str] = {}

    def __call__(self, agent: str, at: int | None) -> None:
        log = self.store.log(agent, checkpoint_every=None)
        log.acquire()
        try:
            if at is None:
                mark = "%s" if isinstance(self.store, PostgresStore) else "?"
                delete = f"DELETE FROM inbox_core_checkpoints WHERE agent_id = {mark}"
                log.connection.execute(delete, (agent,))
                return
            text = self.texts.get((agent, at))
            if text is None:
                checkpoint = take(LogFold().feed(self.events[:at]))
                text = self.texts[agent, at] = dump_json(checkpoint_to_json(checkpoint, agent))
            (error,) = log.write_checkpoints([(log, at, text)])
            assert error is None, error
        finally:
            log.close()


async def _open_once(store: Any, agent: str) -> tuple[float, int]:
    """Seconds of one ``LoopAgent.open`` (a worker's: acquire, read, fold, ``Resume``, in its
    running loop); generation-2 collections during it."""
    log = await asyncio.to_thread(store.log, agent, checkpoint_every=None)
    gen2 = gc.get_stats()[2]["collections"]
    start = time.perf_counter()
    opened = await LoopAgent.open(EchoHost(), log=log)
    elapsed = time.perf_counter() - start
    gen2 = gc.get_stats()[2]["collections"] - gen2
    await opened.detach()
    await asyncio.to_thread(log.close)
    return elapsed, gen2


def idle_length(history: Sequence[DurableEvent], size: int) -> int:
    """The longest prefix of ``history`` of at most ``size`` events that ends a turn: an
    idle log, so that opening it writes nothing (a prefix cut mid-turn would make every
    opening's ``Resume`` close or run a turn, and time a commit)."""
    for length in range(min(size, len(history)), 0, -1):
        if isinstance(history[length - 1], TurnEnded):
            return length
    raise ValueError(f"no turn ends in the first {size} events")


WAYS: dict[str, Callable[[int], int | None]] = {
    "end": lambda size: size,
    "behind": lambda size: max(1, size - (DEFAULT_EVERY - 1)),
    "none": lambda size: None,
}
"""Where the checkpoint is: at the log's end (a detach left it), ``checkpoint_every - 1``
events behind (the most a dead owner leaves), none."""


def opening(
    store: Any,
    name: str,
    sizes: Sequence[int],
    rounds: int,
    whole_rounds: int,
    inner: int = 3,
) -> dict[str, Any]:
    history = big_log(max(sizes))
    agents = {size: f"open-{name}-{size}-{uuid.uuid4().hex[:6]}" for size in sizes}
    lengths = {size: idle_length(history, size) for size in sizes}
    plant = Planter(store, history)
    for size, agent in agents.items():
        start = time.perf_counter()
        write_log(store, agent, history[: lengths[size]])
        plant(agent, lengths[size])  # makes the table before a round deletes a checkpoint
        _log(f"opening {name}: {size} events written in {time.perf_counter() - start:.1f} s")
    pin = store.log("pin", checkpoint_every=None)  # as a worker's other agents keep the pool
    times: dict[tuple[str, int], list[float]] = {}
    ratios: dict[tuple[str, int], list[float]] = {}
    gen2s: dict[tuple[str, int], list[int]] = {}
    order = [(way, size) for way in WAYS for size in sizes]
    smallest = min(sizes)

    async def measure() -> None:
        for round_ in range(rounds):
            this: dict[tuple[str, int], float] = {}
            for way, size in order[round_ % len(order) :] + order[: round_ % len(order)]:
                repeats = inner
                if way == "none" and size == max(sizes):
                    if round_ >= whole_rounds:
                        continue
                    repeats = 1
                plant(agents[size], WAYS[way](lengths[size]))
                runs = []
                for _ in range(repeats):
                    gc.collect()
                    elapsed, gen2 = await _open_once(store, agents[size])
                    runs.append(elapsed)
                    gen2s.setdefault((way, size), []).append(gen2)
                this[way, size] = statistics.median(runs)
                times.setdefault((way, size), []).append(this[way, size])
            for (way, size), value in this.items():
                if (way, smallest) in this:
                    ratios.setdefault((way, size), []).append(value / this[way, smallest])
            _log(f"opening {name}: round {round_ + 1}/{rounds} (load {load()})")

    asyncio.run(measure())
    pin.close()
    out: dict[str, Any] = {"load1": load(), "every": DEFAULT_EVERY, "ways": {}}
    for way in WAYS:
        rows = {}
        for size in sizes:
            values = times.get((way, size), [])
            if values:
                rows[size] = {
                    "events": lengths[size],
                    "open_ms": statistics.median(values) * 1000,
                    "min_ms": min(values) * 1000,
                    "rounds": len(values),
                    "gen2_collections": statistics.median(gen2s[(way, size)]),
                    "x_smallest": statistics.median(ratios.get((way, size), [math.nan])),
                }
        out["ways"][way] = rows
    return out


# ------------------------------------------------------------------- keeping


async def _burst(log: Any, n: int) -> float:
    start = time.perf_counter()
    agent = LoopAgent(EchoHost(), log=log)
    for i in range(n):
        agent.followup(create_user_message(f"m{i}"))
    await agent.when_idle()
    await agent.detach()
    return time.perf_counter() - start


def keeping(folder: str, rounds: int, n: int) -> dict[str, Any]:
    variants: dict[str, Callable[[], Any]] = {}
    for every_name, every in (("none", None), ("default", DEFAULT_EVERY), ("64", 64)):
        variants[f"memory/{every_name}"] = lambda every=every: MemoryLog(checkpoint_every=every)
        variants[f"sqlite/{every_name}"] = lambda every=every: SqliteLog(
            os.path.join(folder, f"keep-{uuid.uuid4().hex[:8]}.db"),
            synchronous="NORMAL",
            checkpoint_every=every,
        )
    names = list(variants)
    times: dict[str, list[float]] = {name: [] for name in names}
    for round_ in range(rounds):
        for name in names[round_ % len(names) :] + names[: round_ % len(names)]:
            log = variants[name]()
            gc.collect()
            times[name].append(asyncio.run(_burst(log, n)))
            close = getattr(log, "close", None)
            if close is not None:
                close()
    out: dict[str, Any] = {"load1": load(), "messages": n, "rounds": rounds}
    for store in ("memory", "sqlite"):
        base = times[f"{store}/none"]
        for every in ("default", "64"):
            name = f"{store}/{every}"
            ratios = [a / b for a, b in zip(times[name], base, strict=True)]
            out[name] = {
                "msgs_per_s": n / statistics.median(times[name]),
                "msgs_per_s_none": n / statistics.median(base),
                "x_none": statistics.median(ratios),
            }
    return out


# ------------------------------------------------------------------------ gc


def _gen2_watch(pauses: list[float]) -> Callable[[str, dict[str, Any]], None]:
    """A ``gc.callbacks`` entry appending each generation-2 collection's seconds to ``pauses``."""
    started: list[float] = []

    def watch(phase: str, info: dict[str, Any]) -> None:
        if info.get("generation") != 2:
            return
        if phase == "start":
            started.append(time.perf_counter())
        elif started:
            pauses.append(time.perf_counter() - started.pop())

    return watch


def gc_cost(folder: str, repeat: int, sizes: tuple[int, int] = (1_000, 100_000)) -> dict[str, Any]:
    path = os.path.join(folder, "gc.db")
    history = big_log(max(sizes))
    store = SqliteStore(path)
    for size in sizes:
        write_log(store, f"gc-{size}", history[:size])
    out: dict[str, Any] = {"load1": load(), "sizes": list(sizes)}
    small, large = sizes
    for size in sizes:
        for enabled in (True, False):
            per_event, collections, gc_ms = [], [], []
            for _ in range(repeat):
                log = SqliteLog(path, agent_id=f"gc-{size}", checkpoint_every=None)
                pauses: list[float] = []
                watch = _gen2_watch(pauses)
                gc.collect()
                gc.callbacks.append(watch)
                if not enabled:
                    gc.disable()
                start = time.perf_counter()
                LogFold().feed(log.read())
                elapsed = time.perf_counter() - start
                gc.enable()
                gc.callbacks.remove(watch)
                log.close()
                per_event.append(elapsed / size)
                collections.append(len(pauses))
                gc_ms.append(sum(pauses) * 1000)
            out[f"{size}/{'on' if enabled else 'off'}"] = {
                "us_per_event": statistics.median(per_event) * 1e6,
                "gen2_collections": statistics.median(collections),
                "gen2_ms": statistics.median(gc_ms),
            }
    for state in ("on", "off"):
        out[f"x_large_over_small/{state}"] = (
            out[f"{large}/{state}"]["us_per_event"] / out[f"{small}/{state}"]["us_per_event"]
        )
    store.close()
    return out


# -------------------------------------------------------------------- decode


def decode_costs(folder: str, rounds: int, count: int = 20_000) -> dict[str, Any]:
    import sqlite3  # noqa: PLC0415

    from inbox_core import limits  # noqa: PLC0415
    from inbox_core.codec import event_from_json  # noqa: PLC0415
    from inbox_core.shell.stores.rows import decode_rows, encode_event  # noqa: PLC0415

    events = big_log(count)[:count]
    path = os.path.join(folder, "decode.db")
    store = SqliteStore(path)
    write_log(store, "decode", events)
    store.close()
    conn = sqlite3.connect(path)
    query = "SELECT seq, event FROM events WHERE agent_id = 'decode' ORDER BY seq"
    rows = conn.execute(query).fetchall()
    texts = [text for _, text in rows]
    documents = [json.loads(text) for text in texts]

    def best(work: Callable[[], object]) -> float:
        times = []
        for _ in range(rounds):
            gc.collect()
            start = time.process_time()
            work()
            times.append(time.process_time() - start)
        return min(times) / len(texts) * 1e6

    out: dict[str, Any] = {"load1": load(), "events": len(texts)}
    out["us_per_event"] = {
        "fetch": best(lambda: conn.execute(query).fetchall()),
        "json_loads": best(lambda: [json.loads(t) for t in texts]),
        "parse_json": best(lambda: [limits.parse_json(t) for t in texts]),
        "event_from_json": best(lambda: [event_from_json(d) for d in documents]),
        "decode_rows": best(lambda: decode_rows(rows)),
        "encode_event": best(lambda: [encode_event(e) for e in events]),
        "fold": best(lambda: LogFold().feed(events)),
    }
    by_type: dict[str, list[Any]] = {}
    for document in documents:
        by_type.setdefault(document["type"], []).append(document)
    out["event_from_json_by_type"] = {
        kind: {
            "share_of_events": len(docs) / len(documents),
            "us": min(
                _timed(lambda docs=docs: [event_from_json(d) for d in docs]) for _ in range(rounds)
            )
            / len(docs)
            * 1e6,
        }
        for kind, docs in by_type.items()
    }
    conn.close()
    return out


def _timed(work: Callable[[], object]) -> float:
    gc.collect()
    start = time.process_time()
    work()
    return time.process_time() - start


# ---------------------------------------------------------------------- main


def main(argv: list[str] | None = None) -> int:
    from benchmarks.many_agents import postgres_conninfo  # noqa: PLC0415

    parser = argparse.ArgumentParser(prog="python benchmarks/checkpoints.py", description=__doc__)
    parser.add_argument("--parts", default="opening,keeping,gc")
    parser.add_argument("--stores", default="sqlite,postgres")
    parser.add_argument("--sizes", default=",".join(map(str, SIZES)))
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--whole-rounds", type=int, default=1)
    parser.add_argument("--burst", type=int, default=300)
    parser.add_argument("--pg", default=None)
    parser.add_argument("--pg-cluster", action="store_true")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    parts = set(args.parts.split(","))
    stores = [s for s in args.stores.split(",") if s]
    sizes = [int(s) for s in args.sizes.split(",")]
    result: dict[str, Any] = {"load1_start": load()}
    with tempfile.TemporaryDirectory(prefix="inbox-checkpoints-") as folder:
        if "keeping" in parts:
            result["keeping"] = keeping(folder, args.rounds * 2 + 1, args.burst)
            _log(f"keeping: {json.dumps(result['keeping'])}")
        if "gc" in parts:
            result["gc"] = gc_cost(folder, args.rounds)
            _log(f"gc: {json.dumps(result['gc'])}")
        if "decode" in parts:
            result["decode"] = decode_costs(folder, args.rounds)
            _log(f"decode: {json.dumps(result['decode'])}")
        if "opening" in parts:
            if "sqlite" in stores:
                store = SqliteStore(os.path.join(folder, "open.db"))
                result["opening_sqlite"] = opening(
                    store, "sqlite", sizes, args.rounds, args.whole_rounds
                )
                store.close()
                _log(f"opening sqlite: {json.dumps(result['opening_sqlite'])}")
            if "postgres" in stores:
                conninfo, cleanup = args.pg, None
                if conninfo is None:
                    conninfo, cleanup = postgres_conninfo(args.pg_cluster)
                try:
                    with scratch_database(conninfo) as scratch:
                        pg_store = PostgresStore(scratch)
                        result["opening_postgres"] = opening(
                            pg_store, "postgres", sizes, args.rounds, args.whole_rounds
                        )
                        pg_store.close()
                finally:
                    if cleanup is not None:
                        cleanup()
                _log(f"opening postgres: {json.dumps(result['opening_postgres'])}")
    result["load1_end"] = load()
    text = json.dumps(result, indent=2)
    print(text)
    if args.out is not None:
        args.out.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
