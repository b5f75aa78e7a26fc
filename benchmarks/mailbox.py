"""B8: delivery from any process (issue 19), side by side with DBOS and a bare-SQL floor.

``python -m benchmarks.mailbox [--quick | --config tiny|quick|full] [--systems ...]
[--backends postgres,sqlite] [--pg CONNINFO | --pg-cluster] [--out PATH]``

Each system (``benchmarks/peers``: ``inbox_core``, ``dbos``, ``floor``) gets a fresh
database on the same PostgreSQL server (or a fresh SQLite file), the same payloads
and the same processes: one consumer process serving every agent, and up to 16
poster processes started once for the run. Per cell (posters x agents x backend):

- *latency*: each poster keeps one post in flight (posts, waits until the consumer
  has applied it, posts the next); post-to-applied latency p50 / p99;
- *burst*: each poster posts its share as fast as it can; *applied/s* is posts over
  (last applied - first sent), *accepted/s* the rate at which ``post`` returned.

*Watch*: the consumer process appends to one agent's log every ``watch_interval``
seconds; a watcher in a poster process follows it; latency from just before the
append to the watcher seeing it. Every time is ``time.monotonic_ns()``, one clock
for all processes (``peers/base.py``). Systems take turns within each cell (the
order rotates); each figure is also given as a ratio to DBOS's and to the floor's
from the same run. The load average is recorded with every measurement.
"""

from __future__ import annotations

import argparse
import importlib
import json
import multiprocessing
import os
import sys
import tempfile
import threading
import time
import traceback
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager, suppress
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from benchmarks.mailbox_figures import cell_ratios, latency_ms, summarize, table, watch_ratios
from benchmarks.peers import SYSTEMS
from benchmarks.peers.base import (
    Backend,
    Consumer,
    Mailbox,
    Payload,
    Producer,
    Skipped,
    Target,
    Watcher,
    stamp,
)

SCHEMA = "inbox-core-bench-b8/1"
DEFAULT_OUT = Path(__file__).resolve().parent / "results" / "b8.json"


@dataclass(frozen=True)
class Config:
    name: str
    posters: tuple[int, ...]
    agents: tuple[int, ...]
    latency_posts: int  # per cell and system, over all posters (closed loop)
    burst_posts: int  # per cell and system, over all posters (open loop)
    watch_appends: int
    watch_interval: float  # seconds between two appends
    text_bytes: int = 200  # filler in every payload
    timeout: float = 120.0  # per measurement; a lost post fails the run after this


TINY = Config("tiny", (1, 2), (1, 3), 4, 8, 3, 0.005)
QUICK = Config("quick", (1, 4, 16), (1, 100), 32, 64, 20, 0.02)
FULL = Config("full", (1, 4, 16), (1, 100), 320, 960, 200, 0.02)
CONFIGS = {c.name: c for c in (TINY, QUICK, FULL)}
WARMUP_POSTS = 10  # one poster, one agent, per system and backend, not reported


def load_system(name: str) -> type[Mailbox]:
    module, _, attr = SYSTEMS[name].partition(":")
    cls: type[Mailbox] = getattr(importlib.import_module(module), attr)
    return cls


# ------------------------------------------------------------------ processes


def _serve_commands(conn: Any, handlers: Mapping[str, Callable[..., Any]]) -> None:
    """A child's loop: ``(kind, *args)`` in, ``("ok", value)`` or ``("error", text)`` out."""
    while (message := conn.recv()) is not None:
        kind, *args = message
        try:
            conn.send(("ok", handlers[kind](*args)))
        except BaseException as exc:  # the harness reports it; the child keeps serving
            conn.send(("error", f"{type(exc).__name__}: {exc}\n{traceback.format_exc()}"))


def _sleep_until(ns: int) -> None:
    delay = (ns - time.monotonic_ns()) / 1e9
    if delay > 0:
        time.sleep(delay)


def poster_main(conn: Any, index: int, acks: Any) -> None:
    """Poster process ``index``: posts (``post``) and watches (``watch``) for every system."""
    producers: dict[str, Producer] = {}
    watchers: dict[str, Watcher] = {}

    def prepare(mailbox: Mailbox) -> None:
        producers[mailbox.name] = mailbox.producer()  # connect before any clock starts

    def release() -> None:
        """Close every connection (a backend is done, its databases are about to go)."""
        for made in (producers, watchers):
            for closing in made.values():
                closing.close()
            made.clear()

    def post(
        name: str, agents: list[str], closed: bool, start_ns: int, text: str, timeout: float
    ) -> dict[str, int]:
        producer = producers[name]
        while acks.poll():  # acks left over by an earlier measurement that gave up
            acks.recv_bytes()
        _sleep_until(start_ns)
        cpu, first = time.process_time_ns(), time.monotonic_ns()
        for seq, agent in enumerate(agents):
            producer.post(agent, stamp(index, seq, text))
            while closed:  # one post in flight: wait for this one's ack
                if not acks.poll(timeout):
                    raise TimeoutError(f"poster {index}: post {seq} not applied in {timeout} s")
                if int(acks.recv_bytes()) == seq:
                    break
        return {
            "first_sent_ns": first,
            "last_posted_ns": time.monotonic_ns(),
            "cpu_ns": time.process_time_ns() - cpu,
        }

    def watch(mailbox: Mailbox, agent: str, count: int, timeout: float) -> list[tuple[int, int]]:
        if mailbox.name not in watchers:
            made = mailbox.watcher()
            assert made is not None
            watchers[mailbox.name] = made
        seen: list[tuple[int, int]] = []
        watchers[mailbox.name].watch(
            agent,
            count,
            lambda _agent, payload: seen.append((payload["sent_ns"], time.monotonic_ns())),
            lambda: conn.send(("ready", None)),
            timeout,
        )
        return seen

    try:
        _serve_commands(
            conn, {"prepare": prepare, "release": release, "post": post, "watch": watch}
        )
    finally:
        release()


class _Applied:
    """The consumer process's record of one measurement; acks each post to its poster."""

    def __init__(self, acks: Sequence[Any]) -> None:
        self.acks = acks
        self.ack_locks = [threading.Lock() for _ in acks]
        self.lock = threading.Lock()
        self.records: list[tuple[str, int, int, int, int]] = []
        self.done = threading.Event()
        self.total, self.closed = 0, False
        self.cpu_ns = 0  # the process's CPU time (every thread) when the measurement began

    def reset(self, total: int, closed: bool) -> None:
        with self.lock:
            self.records, self.total, self.closed = [], total, closed
            self.cpu_ns = time.process_time_ns()
            self.done.clear()

    def __call__(self, agent: str, payload: Payload) -> None:
        now = time.monotonic_ns()
        poster, seq = payload["poster"], payload["seq"]
        with self.lock:
            self.records.append((agent, poster, seq, payload["sent_ns"], now))
            if len(self.records) >= self.total:
                self.done.set()
        if self.closed:
            with self.ack_locks[poster]:
                self.acks[poster].send_bytes(str(seq).encode())


def consumer_main(conn: Any, mailbox: Mailbox, acks: Sequence[Any]) -> None:
    """The consumer process of one system: serves every agent of every measurement."""
    try:
        consumer: Consumer = mailbox.consumer()
        appender = mailbox.appender()
    except BaseException as exc:
        conn.send(("error", f"{type(exc).__name__}: {exc}\n{traceback.format_exc()}"))
        return
    conn.send(("ok", appender is not None))  # whether it has a watch to measure
    applied = _Applied(acks)

    def serve(expected: dict[str, int], closed: bool) -> None:
        applied.reset(sum(expected.values()), closed)
        consumer.serve(expected, applied)

    def drain(timeout: float) -> tuple[list[tuple[str, int, int, int, int]], int]:
        """The measurement's records, and the CPU time the consumer process spent on it."""
        applied.done.wait(timeout)
        cpu = time.process_time_ns() - applied.cpu_ns
        consumer.stop(timeout=30.0)
        with applied.lock:
            return list(applied.records), cpu

    def watch_open(agent: str) -> None:
        assert appender is not None
        appender.open(agent)

    def watch_write(agent: str, count: int, interval: float) -> None:
        assert appender is not None
        appender.write(agent, count, interval)

    try:
        _serve_commands(
            conn,
            {"serve": serve, "drain": drain, "watch_open": watch_open, "watch_write": watch_write},
        )
    finally:
        if appender is not None:
            appender.close()
        consumer.close()


class Child:
    """A spawned child and its command pipe."""

    def __init__(self, ctx: Any, target: Callable[..., None], *args: Any) -> None:
        self.conn, child_conn = ctx.Pipe()
        self.process = ctx.Process(target=target, args=(child_conn, *args), daemon=True)
        self.process.start()
        child_conn.close()

    def send(self, *message: Any) -> None:
        self.conn.send(message)

    def reply(self, timeout: float, want: str = "ok") -> Any:
        if not self.conn.poll(timeout):
            raise TimeoutError(f"no reply from {self.process.name} in {timeout} s")
        kind, value = self.conn.recv()
        if kind == "error":
            raise RuntimeError(f"{self.process.name} failed: {value}")
        assert kind == want, (kind, want)
        return value

    def call(self, *message: Any, timeout: float) -> Any:
        self.send(*message)
        return self.reply(timeout)

    def close(self) -> None:
        with suppress(BrokenPipeError, OSError):
            self.conn.send(None)
        self.process.join(30)
        if self.process.is_alive():
            self.process.kill()
            self.process.join(5)


def plans(posters: int, agents: Sequence[str], total: int) -> list[list[str]]:
    """Each poster's posts, round-robin over the agents in global post order."""
    share = max(1, total // posters)
    return [[agents[(k * posters + i) % len(agents)] for k in range(share)] for i in range(posters)]


def loadavg() -> float | None:
    return round(os.getloadavg()[0], 2) if hasattr(os, "getloadavg") else None


# ------------------------------------------------------------------ the run


class Run:
    """One backend's systems, their consumer processes, and the shared posters."""

    def __init__(
        self,
        config: Config,
        posters: list[Child],
        acks: Sequence[Any],
        ctx: Any,
        log: Callable[[str], None],
    ) -> None:
        self.config, self.posters, self.acks, self.ctx, self.log = config, posters, acks, ctx, log
        self.text = "x" * config.text_bytes
        self.seq = 0  # measurements so far: fresh agent ids for each
        self.turn = 0  # phases so far: who goes first

    def measure(
        self, consumer: Child, name: str, n_posters: int, n_agents: int, closed: bool, total: int
    ) -> dict[str, Any]:
        self.seq += 1
        agents = [f"b8-{self.seq:04d}-{j:03d}" for j in range(n_agents)]
        planned = plans(n_posters, agents, total)
        expected = Counter(agent for plan in planned for agent in plan)
        timeout = self.config.timeout
        consumer.call("serve", dict(expected), closed, timeout=timeout)
        load = loadavg()
        start_ns = time.monotonic_ns() + 50_000_000  # every poster starts at once
        for poster, plan in zip(self.posters, planned, strict=False):
            poster.send("post", name, plan, closed, start_ns, self.text, timeout)
        posted = [poster.reply(timeout + 5) for poster in self.posters[:n_posters]]
        records, consumer_cpu = consumer.call("drain", timeout, timeout=timeout + 60)
        figures = summarize(records, posted, sum(expected.values()))
        posts = max(1, len(records))
        return {
            **figures,
            "consumer_cpu_ms_per_post": round(consumer_cpu / 1e6 / posts, 3),
            "poster_cpu_ms_per_post": round(sum(p["cpu_ns"] for p in posted) / 1e6 / posts, 3),
            "load1": load,
        }

    def watch(self, consumer: Child, mailbox: Mailbox) -> dict[str, Any]:
        config, watcher = self.config, self.posters[0]
        agent = f"b8-watch-{mailbox.name}"
        consumer.call("watch_open", agent, timeout=config.timeout)
        load = loadavg()
        watcher.send("watch", mailbox, agent, config.watch_appends, config.timeout)
        watcher.reply(config.timeout, want="ready")
        consumer.call(
            "watch_write",
            agent,
            config.watch_appends,
            config.watch_interval,
            timeout=config.timeout + config.watch_appends * config.watch_interval,
        )
        seen = watcher.reply(config.timeout)
        return {
            "appends": config.watch_appends,
            "seen": len(seen),
            "latency_ms": latency_ms(seen),
            "load1": load,
        }

    def cell(
        self, consumers: Mapping[str, Child], backend: str, n_posters: int, n_agents: int
    ) -> dict[str, Any]:
        """Both phases of one cell, each system in turn (the order rotates every phase)."""
        systems: dict[str, dict[str, Any]] = {name: {} for name in consumers}
        for phase, closed, total in (
            ("latency", True, self.config.latency_posts),
            ("burst", False, self.config.burst_posts),
        ):
            self.turn += 1
            names = list(consumers)
            for name in names[self.turn % len(names) :] + names[: self.turn % len(names)]:
                figures = self.measure(consumers[name], name, n_posters, n_agents, closed, total)
                systems[name][phase] = figures
                self.log(
                    f"{backend} {name} {phase} posters={n_posters} agents={n_agents}: "
                    f"{json.dumps(figures)}"
                )
        return {
            "posters": n_posters,
            "agents": n_agents,
            "systems": systems,
            "ratios": cell_ratios(systems),
        }

    def backend(self, backend: Backend, mailboxes: Mapping[str, Mailbox]) -> dict[str, Any]:
        """Every cell and the watch of one backend's systems, in one consumer process each."""
        config = self.config
        consumers: dict[str, Child] = {}
        try:
            for name, mailbox in mailboxes.items():
                consumers[name] = Child(self.ctx, consumer_main, mailbox, self.acks)
            watches = {name: consumers[name].reply(config.timeout) for name in mailboxes}
            for poster in self.posters:
                for mailbox in mailboxes.values():
                    poster.call("prepare", mailbox, timeout=config.timeout)
            for name in mailboxes:
                self.measure(consumers[name], name, 1, 1, False, WARMUP_POSTS)
            cells = [
                self.cell(consumers, backend, n_posters, n_agents)
                for n_agents in config.agents
                for n_posters in config.posters
            ]
            watch: dict[str, Any] = {}
            for name, mailbox in mailboxes.items():
                if watches[name]:
                    watch[name] = self.watch(consumers[name], mailbox)
                    self.log(f"{backend} {name} watch: {json.dumps(watch[name])}")
            return {
                "systems": {name: mailbox.describe() for name, mailbox in mailboxes.items()},
                "cells": cells,
                "watch": watch,
                "watch_ratios": watch_ratios(watch),
            }
        finally:
            for poster in self.posters:  # before the databases go
                poster.call("release", timeout=config.timeout)
            for child in consumers.values():
                child.close()


# ------------------------------------------------------------------ targets


@contextmanager
def postgres_server(conninfo: str | None, private: bool) -> Iterator[str]:
    """``conninfo`` (else ``$INBOX_CORE_TEST_PG``), or a throwaway cluster with fsync on."""
    conninfo = conninfo or os.environ.get("INBOX_CORE_TEST_PG")
    if conninfo and not private:
        yield conninfo
        return
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from tests.shell.pg import Cluster, wait_ready  # noqa: PLC0415 - the repo's test helper

    cluster = Cluster(fsync=True, max_connections=200).start()
    try:
        wait_ready(cluster.conninfo)
        yield cluster.conninfo
    finally:
        cluster.destroy()


@contextmanager
def fresh_databases(server: str, names: Sequence[str]) -> Iterator[dict[str, str]]:
    """One fresh database per system on ``server`` (dropped afterwards): name -> conninfo."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    import psycopg  # noqa: PLC0415 - the postgres extra

    from tests.shell.pg import create_database  # noqa: PLC0415

    databases = {name: f"inbox_core_b8_{os.getpid()}_{name}" for name in names}
    try:
        yield {name: create_database(server, db) for name, db in databases.items()}
    finally:
        with psycopg.connect(server, autocommit=True) as conn:
            for db in databases.values():
                conn.execute(f'DROP DATABASE IF EXISTS "{db}" WITH (FORCE)')


def server_settings(conninfo: str) -> dict[str, str]:
    import psycopg  # noqa: PLC0415

    with psycopg.connect(conninfo, autocommit=True) as conn:
        return {
            key: str(conn.execute(f"SHOW {key}").fetchone()[0])  # type: ignore[index]
            for key in ("server_version", "fsync", "synchronous_commit", "max_connections")
        }


# ------------------------------------------------------------------ run


def run(
    config: Config,
    systems: Sequence[str] = tuple(SYSTEMS),
    backends: Sequence[Backend] = ("postgres", "sqlite"),
    *,
    conninfo: str | None = None,
    private_cluster: bool = False,
    log: Callable[[str], None] = lambda _: None,
) -> dict[str, Any]:
    """The whole B8 run: every backend, every system that can run, side by side."""
    from benchmarks.suite import machine  # noqa: PLC0415 - not needed in the children

    result: dict[str, Any] = {
        "schema": SCHEMA,
        "config": asdict(config),
        "machine": machine(),
        "skipped": [],
        "backends": {},
    }

    def skip(name: str, backend: str, reason: str) -> None:
        log(f"B8 {backend}: {name} skipped: {reason}")
        result["skipped"].append({"system": name, "backend": backend, "reason": reason})

    ctx = multiprocessing.get_context("spawn")  # no fork of threads and open connections
    pipes = [ctx.Pipe(duplex=False) for _ in range(max(config.posters))]
    posters: list[Child] = []
    try:
        posters += [Child(ctx, poster_main, i, reader) for i, (reader, _w) in enumerate(pipes)]
        harness = Run(config, posters, [writer for _r, writer in pipes], ctx, log)
        for backend in backends:
            classes: dict[str, type[Mailbox]] = {}
            for name in systems:
                try:
                    cls = load_system(name)
                except ImportError as exc:
                    skip(name, backend, f"cannot import it ({exc})")
                    continue
                if backend in cls.backends:
                    classes[name] = cls
                else:
                    skip(name, backend, f"no {backend} backend")
            with ExitStack() as stack:
                settings: dict[str, str] = {}
                if backend == "postgres":
                    server = stack.enter_context(postgres_server(conninfo, private_cluster))
                    settings = server_settings(server)
                    locations = stack.enter_context(fresh_databases(server, list(classes)))
                else:
                    folder = stack.enter_context(tempfile.TemporaryDirectory(prefix="inbox-b8-"))
                    locations = {name: os.path.join(folder, f"{name}.db") for name in classes}
                mailboxes: dict[str, Mailbox] = {}
                for name, cls in classes.items():
                    target = Target(backend, locations[name])
                    mailbox = cls(target=target, text="x" * config.text_bytes)  # type: ignore[call-arg]
                    try:
                        mailbox.prepare()
                    except (Skipped, NotImplementedError) as exc:
                        skip(name, backend, str(exc))
                        continue
                    mailboxes[name] = mailbox
                if mailboxes:
                    measured = harness.backend(backend, mailboxes)
                    measured["server"] = settings
                    result["backends"][backend] = measured
    finally:
        for poster in posters:
            poster.close()
    result["loadavg_at_end"] = os.getloadavg() if hasattr(os, "getloadavg") else None
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.mailbox",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--quick", action="store_true", help="the quick config (seconds)")
    parser.add_argument("--config", choices=sorted(CONFIGS), help="sizes by name")
    parser.add_argument("--systems", default=",".join(SYSTEMS), help="comma-separated")
    parser.add_argument("--backends", default="postgres,sqlite", help="comma-separated")
    parser.add_argument("--pg", default=None, help="server conninfo ($INBOX_CORE_TEST_PG)")
    parser.add_argument(
        "--pg-cluster",
        action="store_true",
        help="a private throwaway cluster with fsync on (tests/shell/pg.py)",
    )
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="JSON result file")
    args = parser.parse_args(argv)
    config = CONFIGS[args.config or ("quick" if args.quick else "full")]
    systems = [s.strip() for s in args.systems.split(",") if s.strip()]
    unknown = sorted(set(systems) - set(SYSTEMS))
    backends = [b.strip() for b in args.backends.split(",") if b.strip()]
    if unknown or not set(backends) <= {"postgres", "sqlite"}:
        parser.error(f"systems are {', '.join(SYSTEMS)}; backends are postgres, sqlite")
    result = run(
        config,
        systems,
        backends,  # type: ignore[arg-type]
        conninfo=args.pg,
        private_cluster=args.pg_cluster,
        log=lambda line: print(f"... {line}", file=sys.stderr, flush=True),
    )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(table(result))
    print(f"written: {args.out}")
    return 0


if __name__ == "__main__":
    from benchmarks.mailbox import main as _main  # the children import this module by name

    raise SystemExit(_main())
