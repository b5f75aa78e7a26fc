"""B10: many watchers of one agent in one process (issue 28, item 11; R36 v4).

``python -m benchmarks.watchers [--watchers 1,100,300,1000] [--messages 40]
[--stores sqlite,postgres] [--pg CONNINFO | --pg-cluster] [--out PATH] [--markdown]``.
PostgreSQL: ``--pg CONNINFO``, else ``$INBOX_CORE_TEST_PG``, else a throwaway cluster
(tests/shell/pg.py); without the server binaries the PostgreSQL rows are skipped.

Per store and per number of watchers N (N = 0 first: the owner alone), in one process and
one event loop: a fresh agent, its owner a ``LoopAgent(EchoHost())`` writing through a
``ThreadWriter`` (the ``Worker``'s path: its own commits never block the loop), and N tasks
each following the agent with ``store.watch(agent, since=0)``. The owner then runs
``messages`` followups one after the other (send, await idle); the phase ends once every
watcher has seen the last event. Figures:

- *stall max / p99*: an unrelated task sleeps 1 ms again and again; its lateness (gap -
  1 ms) is how long the loop was held by someone else;
- *owner ms/msg* and *slowdown*: the owner's wall time per followup, and that time over
  the owner's alone (N = 0) in the same run;
- *reads/commit*: the store's event reads (``SqliteStore``/``PostgresStore`` calls that
  fetch rows of the agent's events) over the owner's commits (transactions that appended
  events) during the phase. With one shared read per wake it stays about 1 whatever N.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import platform
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from inbox_core import create_user_message
from inbox_core.shell import EchoHost, LoopAgent, PostgresLog, PostgresStore, SqliteLog, SqliteStore
from inbox_core.shell.stores.writers import ThreadWriter

SCHEMA = "inbox_core.bench.b10/1"
DEFAULT_WATCHERS = (1, 100, 300, 1000)


@contextmanager
def counting(owner: type, name: str) -> Iterator[list[int]]:
    """Count the calls of method ``name`` of class ``owner`` while inside."""
    original = getattr(owner, name)
    calls = [0]

    def counted(*args: Any, **kwargs: Any) -> Any:
        calls[0] += 1
        return original(*args, **kwargs)

    setattr(owner, name, counted)
    try:
        yield calls
    finally:
        setattr(owner, name, original)


def read_method(store_class: type) -> str:
    """The store method that reads a page of an agent's events (the one a watch calls)."""
    return "_read_events" if hasattr(store_class, "_read_events") else "_events"


class Ticker:
    """How late a 1 ms sleep wakes: the event loop's latency, in ms; and the longest pause
    of the cyclic GC meanwhile (to tell a GC pause from the watchers' work)."""

    def __init__(self) -> None:
        self.late: list[float] = []
        self._task: asyncio.Task[None] | None = None
        self._gc_started = 0.0
        self.gc_max = 0.0

    def _gc(self, phase: str, _info: dict[str, Any]) -> None:
        if phase == "start":
            self._gc_started = time.perf_counter()
        else:
            self.gc_max = max(self.gc_max, (time.perf_counter() - self._gc_started) * 1000)

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            before = loop.time()
            await asyncio.sleep(0.001)
            self.late.append(max(0.0, (loop.time() - before - 0.001) * 1000))

    def start(self) -> None:
        gc.callbacks.append(self._gc)
        self._task = asyncio.ensure_future(self._run())

    async def stop(self) -> dict[str, float]:
        assert self._task is not None
        gc.callbacks.remove(self._gc)
        self._task.cancel()
        await asyncio.gather(self._task, return_exceptions=True)
        late = sorted(self.late) or [0.0]
        return {
            "stall_max_ms": late[-1],
            "stall_p99_ms": late[min(len(late) - 1, int(len(late) * 0.99))],
            "gc_pause_max_ms": self.gc_max,
        }


async def phase(
    store: Any, log_class: type, reads: list[int], watchers: int, messages: int
) -> dict[str, Any]:
    agent_id = f"b10-{uuid.uuid4().hex[:10]}"
    writer = ThreadWriter()
    owner = LoopAgent(EchoHost(), log=store.log(agent_id), writer=writer)
    seen = [0] * watchers

    async def follow(index: int) -> None:
        async for _seq, _event in store.watch(agent_id, since=0):
            seen[index] += 1

    tasks = [asyncio.ensure_future(follow(i)) for i in range(watchers)]
    owner.followup(create_user_message("warm-up"))
    await owner.when_idle()
    await owner.durable()
    written = len(owner.log)
    await until(lambda: all(count == written for count in seen))
    ticker = Ticker()
    reads_before = reads[0]
    with counting(log_class, "write_group") as commits:
        ticker.start()
        started = time.perf_counter()
        for index in range(messages):
            owner.followup(create_user_message(f"m{index}"))
            await owner.when_idle()
        await owner.durable()
        owner_seconds = time.perf_counter() - started
        total = len(owner.log)
        await until(lambda: all(count == total for count in seen))
        stall = await ticker.stop()
        read_count = reads[0] - reads_before
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    await owner.detach()
    writer.close()
    return {
        "watchers": watchers,
        "messages": messages,
        "owner_ms_per_message": owner_seconds * 1000 / messages,
        "reads": read_count,
        "commits": commits[0],
        "reads_per_commit": read_count / max(1, commits[0]),
        **stall,
    }


async def until(check: Callable[[], bool], timeout: float = 600.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise TimeoutError("the watchers did not catch up")
        await asyncio.sleep(0.005)


def run_store(kind: str, target: str, counts: list[int], messages: int) -> list[dict[str, Any]]:
    store_class: Any = SqliteStore if kind == "sqlite" else PostgresStore
    log_class = SqliteLog if kind == "sqlite" else PostgresLog
    rows = []
    with counting(store_class, read_method(store_class)) as reads:  # before the store binds it
        store = store_class(target)
        try:
            for watchers in [0, *counts]:
                row = asyncio.run(phase(store, log_class, reads, watchers, messages))
                print(f"... {kind} {watchers} watchers: {json.dumps(row)}", file=sys.stderr)
                rows.append(row)
        finally:
            store.close()
    alone = rows[0]["owner_ms_per_message"]
    for row in rows:
        row["owner_slowdown"] = row["owner_ms_per_message"] / alone
    return rows


def pg_target(args: argparse.Namespace) -> tuple[str | None, Any]:
    conninfo = args.pg or os.environ.get("INBOX_CORE_TEST_PG")
    if conninfo and not args.pg_cluster:
        return conninfo, None
    from tests.shell.pg import Cluster, binaries_missing  # noqa: PLC0415 - only when asked

    if binaries_missing():
        print(f"... PostgreSQL skipped: {binaries_missing()}", file=sys.stderr)
        return None, None
    cluster = Cluster(max_connections=100)
    cluster.start()
    return cluster.conninfo, cluster


def table(result: dict[str, Any], *, markdown: bool = False) -> str:
    head = ["store", "watchers", "stall max ms", "stall p99 ms", "owner ms/msg", "slowdown"]
    head.append("reads/commit")
    lines = []
    for kind, rows in result["stores"].items():
        for row in rows:
            lines.append(
                [
                    kind,
                    str(row["watchers"]),
                    f"{row['stall_max_ms']:.1f}",
                    f"{row['stall_p99_ms']:.1f}",
                    f"{row['owner_ms_per_message']:.2f}",
                    f"{row['owner_slowdown']:.2f}x",
                    f"{row['reads_per_commit']:.2f}",
                ]
            )
    if markdown:
        out = ["| " + " | ".join(head) + " |", "|" + "---:|" * len(head)]
        out += ["| " + " | ".join(line) + " |" for line in lines]
        return "\n".join(out)
    widths = [max(len(row[i]) for row in [head, *lines]) for i in range(len(head))]
    return "\n".join(
        "  ".join(cell.rjust(width) for cell, width in zip(row, widths, strict=True))
        for row in [head, *lines]
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.watchers", description=__doc__)
    parser.add_argument("--watchers", default=",".join(map(str, DEFAULT_WATCHERS)))
    parser.add_argument("--messages", type=int, default=40)
    parser.add_argument("--stores", default="sqlite,postgres")
    parser.add_argument("--pg", help="a PostgreSQL conninfo")
    parser.add_argument("--pg-cluster", action="store_true", help="start a throwaway cluster")
    parser.add_argument("--out", type=Path, help="JSON result file")
    parser.add_argument("--markdown", action="store_true")
    args = parser.parse_args(argv)
    counts = [int(part) for part in args.watchers.split(",") if part.strip()]
    result: dict[str, Any] = {
        "schema": SCHEMA,
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count()},
        "load_before": os.getloadavg()[0],
        "stores": {},
    }
    kinds = [part.strip() for part in args.stores.split(",") if part.strip()]
    if "sqlite" in kinds:
        with tempfile.TemporaryDirectory(prefix="inbox-core-b10-") as folder:
            path = str(Path(folder) / "watch.db")
            result["stores"]["sqlite"] = run_store("sqlite", path, counts, args.messages)
    if "postgres" in kinds:
        conninfo, cluster = pg_target(args)
        try:
            if conninfo is not None:
                result["stores"]["postgres"] = run_store(
                    "postgres", conninfo, counts, args.messages
                )
        finally:
            if cluster is not None:
                cluster.stop()
    result["load_after"] = os.getloadavg()[0]
    result["median_reads_per_commit"] = (
        statistics.median(
            row["reads_per_commit"] for rows in result["stores"].values() for row in rows[1:]
        )
        if any(len(rows) > 1 for rows in result["stores"].values())
        else 0.0
    )
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(table(result, markdown=args.markdown))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
