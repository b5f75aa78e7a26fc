"""B7 failover (issue 20): a worker killed with SIGKILL, and the time until the next one has
resumed every agent it served and applied their work.

``python -m benchmarks.failover [--stores sqlite,postgres] [--agents 500] [--events 1000]
[--lease 3] [--pg CONNINFO | --pg-cluster]`` (also part of ``python -m benchmarks.many_agents``).

Per store (SQLite ``synchronous=FULL``, what ``inbox-core serve`` opens; PostgreSQL in a
scratch database of its own, so that no other agent on the server is touched):

1. ``agents`` agents, each with a log of ``events`` events (followups, each a one-step
   turn) and two posted followups;
2. worker A: ``inbox-core serve STORE --host benchmarks.failover_host:host`` with steps
   that never end. It opens every agent, applies both posts (the first opens a turn whose
   step runs, the second waits in next-turn: pending waking work); once every agent's step
   runs, A is killed with SIGKILL;
3. worker B, the same command with instant steps, is started right after the kill. The
   harness polls the store until every agent's ``work`` flag is false again (B resumed
   it: ``Resume`` closed the killed turn ``interrupted`` and opened the next for the
   waiting followup, and B ran that turn to its durable end): the *failover time*. Target:
   the lease plus 5 s (SQLite has no lease: the owner's lock dies with the process).

The time is split with the host's notes (``benchmarks.failover_host``) and the store:
*lease wait* (the longest lease left at the kill, by the server's clock), *startup* (B's
process until its first log line), *placement* (until B began to open the first agent),
*opening* (first open begun to last open read and replayed: acquire, read and decode in a
worker thread, replay on the loop, 8 at a time) and *the rest* (until the last agent's
work is durable). Where opening goes is measured alone on one of the logs (fetch, decode,
replay, the whole ``LoopAgent``), with a cProfile of the decode.

The workers' host restores from the tail an opening reads (from the newest checkpoint on,
R41; worker A writes one right after opening each log); ``FAILOVER_RESTORE=whole`` gives
them a host with only ``restore(events)``, which reads every log whole (issue 20's figures).
``--checkpointed`` also plants, before A starts, the checkpoint a periodic owner leaves
(at the last multiple of ``checkpoint_every``: none below 1,024 events).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import cProfile
import json
import os
import pstats
import signal
import sqlite3
import statistics
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import quote

from benchmarks.failover_host import restore_mode
from benchmarks.many_agents import big_log, load, percentile
from inbox_core import create_user_message, event_to_json, followup, replay
from inbox_core.checkpoint import checkpoint_to_json, take
from inbox_core.events import DurableEvent
from inbox_core.limits import dump_json
from inbox_core.replay import LogFold
from inbox_core.shell import EchoHost, LoopAgent, PostgresStore, SqliteStore
from inbox_core.shell.stores.checkpoints import DEFAULT_EVERY
from inbox_core.shell.stores.rows import decode_rows
from inbox_core.shell.stores.writers import Part

ROOT = Path(__file__).resolve().parents[1]
HOST = "benchmarks.failover_host:host"
TARGET_SLACK_S = 5.0
GROUP = 25  # agents per transaction while the logs are made
CHUNK = 5_000  # events of each agent per transaction


def _log(line: str) -> None:
    print(f"... {line}", file=sys.stderr, flush=True)


# --------------------------------------------------------------------- stores


def pg_url(conninfo: str) -> str:
    """The ``postgresql://`` URL of a libpq conninfo (``inbox-core serve`` takes URLs)."""
    from psycopg.conninfo import conninfo_to_dict  # noqa: PLC0415

    p = {k: str(v) for k, v in conninfo_to_dict(conninfo).items()}
    user = quote(p.get("user", ""), safe="")
    if p.get("password"):
        user += ":" + quote(p["password"], safe="")
    at = f"{user}@" if user else ""
    return f"postgresql://{at}{p.get('host', 'localhost')}:{p.get('port', '5432')}/{p['dbname']}"


@contextlib.contextmanager
def scratch_database(conninfo: str) -> Any:
    """A new database on the server of ``conninfo`` (its conninfo), dropped afterwards."""
    import psycopg  # noqa: PLC0415
    from psycopg.conninfo import conninfo_to_dict, make_conninfo  # noqa: PLC0415

    name = f"inbox_core_bench_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(conninfo, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        params = {k: str(v) for k, v in conninfo_to_dict(conninfo).items() if v is not None}
        yield make_conninfo("", **{**params, "dbname": name})
    finally:
        with psycopg.connect(conninfo, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


class Probe:
    """The harness's own look at the store: counts by plain SQL, on its own connection."""

    def __init__(self, kind: str, target: str) -> None:
        self.kind = kind
        self.target = target
        if kind == "sqlite":
            self.sqlite = sqlite3.connect(target, isolation_level=None)
        else:
            import psycopg  # noqa: PLC0415

            self.pg = psycopg.connect(target, autocommit=True)

    def one(self, sql: str) -> Any:
        if self.kind == "sqlite":
            return self.sqlite.execute(sql).fetchone()
        row = self.pg.execute(sql).fetchone()
        assert row is not None
        return row

    def working(self) -> tuple[int, int]:
        """(agents with work, agents without)."""
        table = "agents" if self.kind == "sqlite" else "inbox_core_owners"
        yes, no = self.one(
            f"SELECT COALESCE(SUM(CASE WHEN work THEN 1 ELSE 0 END), 0), "
            f"COALESCE(SUM(CASE WHEN work THEN 0 ELSE 1 END), 0) FROM {table} "
            "WHERE agent_id LIKE 'fo-%'"
        )
        return int(yes), int(no)

    def pending_posts(self) -> int:
        table = "posts" if self.kind == "sqlite" else "inbox_core_posts"
        return int(self.one(f"SELECT COUNT(*) FROM {table} WHERE outcome IS NULL")[0])

    def lease_left(self) -> tuple[float, float] | None:
        """(shortest, longest) lease left now, by the server's clock (PostgreSQL)."""
        if self.kind == "sqlite":
            return None
        lo, hi = self.one(
            "SELECT MIN(EXTRACT(EPOCH FROM expires_at - clock_timestamp()))::float8, "
            "MAX(EXTRACT(EPOCH FROM expires_at - clock_timestamp()))::float8 "
            "FROM inbox_core_owners WHERE agent_id LIKE 'fo-%' AND owner IS NOT NULL"
        )
        return float(lo), float(hi)

    def close(self) -> None:
        if self.kind == "sqlite":
            self.sqlite.close()
        else:
            self.pg.close()


# --------------------------------------------------------------- the workers


class Worker:
    """An ``inbox-core serve`` process; its standard error read by a thread, each line
    stamped with ``time.monotonic()`` on arrival."""

    def __init__(self, spec: str, name: str, times: Path, delay: float, lease: float) -> None:
        self.times = times
        argv = [
            sys.executable,
            "-m",
            "inbox_core",
            "serve",
            spec,
            "--host",
            HOST,
            "--max-agents",
            "5000",
            "--idle-seconds",
            "600",
            "--poll-seconds",
            "0.2",
            "--stats-seconds",
            "0.5",
            "--name",
            name,
        ]
        if spec.startswith("postgresql:"):
            argv += ["--lease-seconds", str(lease)]
        env = {
            **os.environ,
            "PYTHONPATH": str(ROOT),
            "FAILOVER_TIMES": str(times),
            "FAILOVER_DELAY": str(delay),
        }
        self.started = time.monotonic()
        self.proc = subprocess.Popen(
            argv, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
        )
        self.lines: list[tuple[float, str]] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stderr is not None
        for text in self.proc.stderr:
            self.lines.append((time.monotonic(), text.rstrip("\n")))

    def notes(self) -> list[tuple[float, str, str, int]]:
        if not self.times.exists():
            return []
        out = []
        for line in self.times.read_text().splitlines():
            parts = line.split()
            if len(parts) == 4:
                out.append((float(parts[0]), parts[1], parts[2], int(parts[3])))
        return out

    def first_line(self) -> float | None:
        return self.lines[0][0] if self.lines else None

    def cpu_seconds(self) -> float | None:
        try:
            with open(f"/proc/{self.proc.pid}/stat") as handle:
                fields = handle.read().rsplit(")", 1)[1].split()
        except OSError:
            return None
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def check_alive(self) -> None:
        if self.proc.poll() is not None:
            text = "\n".join(line for _, line in self.lines[-20:])
            raise RuntimeError(f"worker exited with {self.proc.returncode}:\n{text}")

    def stop(self) -> int | None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                return self.proc.wait(60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
                return None
        return self.proc.returncode


def _wait(what: str, ready: Callable[[], bool], timeout: float, worker: Worker) -> None:
    deadline = time.monotonic() + timeout
    while not ready():
        worker.check_alive()
        if time.monotonic() > deadline:
            raise TimeoutError(f"failover: {what} after {timeout:.0f} s")
        time.sleep(0.05)


# -------------------------------------------------------------- making logs


def make_logs(
    store: Any, ids: Sequence[str], history: list[DurableEvent], checkpointed: bool = False
) -> float:
    """Write ``history`` into every agent's log (``GROUP`` agents per transaction, at most
    ``CHUNK`` events of each), then post two followups to each; seconds taken.
    ``checkpointed``: each log also gets the checkpoint an owner writing one every
    ``DEFAULT_EVERY`` events would have left last (R41), so that worker A opens it from there."""
    start = time.perf_counter()
    at = len(history) - len(history) % DEFAULT_EVERY
    checkpoint = take(LogFold().feed(history[:at])) if checkpointed and at else None
    for first in range(0, len(ids), GROUP):
        group = ids[first : first + GROUP]
        logs = [store.log(agent_id, checkpoint_every=None) for agent_id in group]
        for log in logs:
            log.acquire()
        for chunk in range(0, len(history), CHUNK):
            part = history[chunk : chunk + CHUNK]
            errors = logs[0].write_group([Part(log, part) for log in logs])
            assert not any(errors), errors
        if checkpoint is not None:
            items = [
                (log, at, dump_json(checkpoint_to_json(checkpoint, log.agent_id))) for log in logs
            ]
            errors = logs[0].write_checkpoints(items)
            assert not any(errors), errors
        for log in logs:
            log.close()
    for k in (1, 2):
        for agent_id in ids:
            store.post(agent_id, followup(create_user_message(f"{agent_id} followup {k}")))
    return time.perf_counter() - start


def open_costs(store: Any, agent_id: str, repeat: int = 5) -> dict[str, Any]:
    """Where one opening's time goes, measured alone on ``agent_id``'s log (medians)."""
    log = store.log(agent_id)
    fetch, parse, decode, fold, acquire, whole = [], [], [], [], [], []
    events: list[DurableEvent] = []
    sql = "SELECT seq, event FROM {} WHERE agent_id = {} ORDER BY seq"
    pg = isinstance(store, PostgresStore)
    query = sql.format("inbox_core_events" if pg else "events", "%s" if pg else "?")
    for _ in range(repeat):
        conn = log.connection
        t0 = time.perf_counter()
        rows = conn.execute(query, (agent_id,)).fetchall()
        t1 = time.perf_counter()
        for _, text in rows:
            json.loads(text)
        parsed = time.perf_counter() - t1
        t1 = time.perf_counter()
        events = decode_rows(rows)
        t2 = time.perf_counter()
        replay(events)
        t3 = time.perf_counter()
        log.acquire()
        log.release()
        t4 = time.perf_counter()
        fetch.append(t1 - t0 - parsed)
        parse.append(parsed)
        decode.append(t2 - t1)
        fold.append(t3 - t2)
        acquire.append(t4 - t3)

    async def whole_open() -> float:
        t = time.perf_counter()
        agent = await LoopAgent.open(EchoHost(), log=log)
        elapsed = time.perf_counter() - t
        await agent.detach()
        return elapsed

    for _ in range(repeat):
        whole.append(asyncio.run(whole_open()))
    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(repeat):
        decode_rows(rows)
    profiler.disable()
    log.close()
    n = len(events)
    med = statistics.median
    return {
        "events": n,
        "fetch_ms": med(fetch) * 1000,
        "decode_ms": med(decode) * 1000,
        "json_loads_ms": med(parse) * 1000,  # of decode: json.loads alone
        "replay_ms": med(fold) * 1000,
        "acquire_release_ms": med(acquire) * 1000,
        "open_ms": med(whole) * 1000,
        "decode_events_per_s": n / med(decode),
        "replay_events_per_s": n / med(fold),
        "fetch_events_per_s": n / med(fetch),
        "decode_profile": _profile_top(profiler),
    }


def _profile_top(profiler: cProfile.Profile, count: int = 10) -> list[dict[str, Any]]:
    """The functions with the most own time: name, calls, own and cumulative ms, share."""
    stats: dict[Any, Any] = pstats.Stats(profiler).stats  # type: ignore[attr-defined]
    total = sum(entry[2] for entry in stats.values()) or 1.0
    rows = sorted(stats.items(), key=lambda item: item[1][2], reverse=True)[:count]
    return [
        {
            "function": f"{Path(file).name}:{line}({name})",
            "calls": calls,
            "own_ms": own * 1000,
            "cum_ms": cum * 1000,
            "own_share": own / total,
        }
        for (file, line, name), (_, calls, own, cum, _) in rows
    ]


# ------------------------------------------------------------------ one store


def failover_store(
    kind: str,
    target: str,
    agents: int,
    events: int,
    lease: float,
    folder: str,
    log: Callable[[str], None] = _log,
    timeout: float = 600.0,
    checkpointed: bool = False,
) -> dict[str, Any]:
    """One failover run over ``target`` (an SQLite path, or a PostgreSQL conninfo)."""
    run = uuid.uuid4().hex[:6]
    ids = [f"fo-{run}-{i:04d}" for i in range(agents)]
    if kind == "sqlite":
        store: Any = SqliteStore(target)
        spec = f"sqlite:{target}"
    else:
        store = PostgresStore(target)
        spec = pg_url(target)
    history = big_log(events)
    made = make_logs(store, ids, history, checkpointed)
    log(f"failover {kind}: {agents} logs of {len(history)} events made in {made:.1f} s")
    costs = open_costs(store, ids[0])
    probe = Probe(kind, target)
    times = Path(folder)
    a = Worker(spec, "A", times / f"a-{run}.txt", 3600.0, lease)
    b: Worker | None = None
    try:

        def a_steps() -> bool:
            return len({agent for _, what, agent, _ in a.notes() if what == "step"}) >= agents

        _wait("A did not start every agent's step", a_steps, timeout, a)
        a_ready = time.monotonic() - a.started
        working, _ = probe.working()
        assert working == agents, (working, agents)
        assert probe.pending_posts() == 0
        log(f"failover {kind}: A runs a step of all {agents} agents ({a_ready:.1f} s); kill -9")
        load_at_kill = load()
        killed = time.monotonic()
        a.proc.send_signal(signal.SIGKILL)
        b = Worker(spec, "B", times / f"b-{run}.txt", 0.0, lease)
        lease_left = probe.lease_left()
        a.proc.wait(30)
        polls = 0
        while probe.working()[0] > 0:
            b.check_alive()
            polls += 1
            if time.monotonic() - killed > timeout:
                raise TimeoutError(f"failover: B did not finish in {timeout:.0f} s")
            time.sleep(0.05)
        done = time.monotonic()
        b_cpu = b.cpu_seconds()
        b_started = b.started
        assert probe.pending_posts() == 0
        checked = verify(store, ids[:: max(1, agents // 20)])
        code = b.stop()
        b_lines = [line for _, line in b.lines]
    finally:
        for worker in (a, b):
            if worker is not None and worker.proc.poll() is None:
                worker.proc.kill()
                worker.proc.wait(10)
        probe.close()
        store.close()
    notes = b.notes()
    opened = {agent: t for t, what, agent, _ in notes if what == "factory"}
    restored = {agent: t for t, what, agent, _ in notes if what == "restored"}
    stopped = [t for t, what, _, _ in notes if what == "stopping"]
    assert len(restored) == agents, (len(restored), agents)
    per_open = [restored[agent] - opened[agent] for agent in restored]
    first_open, last_restored = min(opened.values()), max(restored.values())
    first_line = min(b.first_line() or first_open, first_open)  # the reader thread may lag
    lease_wait = max(0.0, lease_left[1]) if lease_left else 0.0
    total = done - killed
    timeline = {
        "lease_wait_s": lease_wait,
        "b_startup_s": first_line - b_started,
        "placement_s": first_open - killed - max(lease_wait, first_line - killed),
        "opening_s": last_restored - first_open,
        "rest_s": done - last_restored,
    }
    budget = (lease if kind == "postgres" else 0.0) + TARGET_SLACK_S
    return {
        "store": kind,
        "agents": agents,
        "events_per_log": len(history),
        "host_restore": restore_mode(),
        "lease_seconds": lease if kind == "postgres" else None,
        "lease_left_at_kill_s": list(lease_left) if lease_left else None,
        "a_ready_s": a_ready,
        "load1_at_kill": load_at_kill,
        "failover_s": total,
        "target_s": budget,
        "target_met": total <= budget,
        "timeline": timeline,
        "since_kill": {
            "b_first_line_s": first_line - killed,
            "first_open_s": first_open - killed,
            "last_open_s": last_restored - killed,
            "last_turn_stopping_s": max(stopped) - killed if stopped else None,
            "all_durable_s": total,
        },
        "per_open_ms": {
            "p50": percentile(per_open, 0.5) * 1000,
            "p99": percentile(per_open, 0.99) * 1000,
            "max": max(per_open) * 1000,
        },
        "opening_events_per_s": agents * len(history) / max(1e-9, timeline["opening_s"]),
        "b_cpu_s": b_cpu,
        "b_cpu_share": None if b_cpu is None else b_cpu / max(1e-9, done - b_started),
        "b_exit": code,
        "b_stats": next((line for line in reversed(b_lines) if "serving" in line), None),
        "verified_agents": checked,
        "open_costs": costs,
        "polls": polls,
    }


def verify(store: Any, ids: Sequence[str]) -> int:
    """Each agent is idle; its last two turns ended interrupted (the killed one) and
    completed (the followup that waited); both followups were admitted exactly once."""
    for agent_id in ids:
        log = store.log(agent_id)
        events = log.read()
        log.close()
        assert replay(events).status == "idle", agent_id
        docs = [event_to_json(e) for e in events]
        ends = [d["data"]["reason"]["kind"] for d in docs if d["type"] == "turn/end"]
        assert ends[-2:] == ["interrupted", "completed"], (agent_id, ends[-3:])
        texts = json.dumps(docs[-60:])
        for k in (1, 2):
            assert texts.count(f"{agent_id} followup {k}") >= 1, (agent_id, k)
    return len(ids)


def run_all(
    stores: Sequence[str],
    folder: str,
    conninfo: str | None,
    agents: int,
    events: int,
    lease: float,
    log: Callable[[str], None] = _log,
    checkpointed: bool = False,
) -> dict[str, Any]:
    """The failover on SQLite (FULL: what ``inbox-core serve`` opens) if any SQLite store is
    asked for, and on PostgreSQL (a scratch database) if asked for and ``conninfo`` is set."""
    out: dict[str, Any] = {}
    if any(s.startswith("sqlite") for s in stores):
        path = os.path.join(folder, f"failover-{uuid.uuid4().hex[:6]}.db")
        out["sqlite"] = failover_store(
            "sqlite", path, agents, events, lease, folder, log, checkpointed=checkpointed
        )
        _report(out["sqlite"], log)
    if "postgres" in stores and conninfo is not None:
        with scratch_database(conninfo) as scratch:
            out["postgres"] = failover_store(
                "postgres", scratch, agents, events, lease, folder, log, checkpointed=checkpointed
            )
        _report(out["postgres"], log)
    return out


def _report(result: dict[str, Any], log: Callable[[str], None]) -> None:
    t = result["timeline"]
    log(
        f"failover {result['store']}: {result['failover_s']:.2f} s (target {result['target_s']:g}"
        f" s): lease {t['lease_wait_s']:.2f}, placement {t['placement_s']:.2f}, opening "
        f"{t['opening_s']:.2f}, rest {t['rest_s']:.2f}"
    )


def main(argv: list[str] | None = None) -> int:
    from benchmarks.many_agents import postgres_conninfo  # noqa: PLC0415

    parser = argparse.ArgumentParser(prog="python -m benchmarks.failover", description=__doc__)
    parser.add_argument("--stores", default="sqlite,postgres")
    parser.add_argument("--agents", type=int, default=500)
    parser.add_argument("--events", type=int, default=1000)
    parser.add_argument("--lease", type=float, default=3.0)
    parser.add_argument("--pg", default=None)
    parser.add_argument("--pg-cluster", action="store_true")
    parser.add_argument(
        "--checkpointed",
        action="store_true",
        help="make each log with the checkpoint a periodic owner leaves (R41)",
    )
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    stores = [s.strip() for s in args.stores.split(",") if s.strip()]
    conninfo, cleanup = args.pg, None
    if "postgres" in stores and conninfo is None:
        conninfo, cleanup = postgres_conninfo(args.pg_cluster)
    import tempfile  # noqa: PLC0415

    try:
        with tempfile.TemporaryDirectory(prefix="inbox-failover-") as folder:
            result = run_all(
                stores,
                folder,
                conninfo,
                args.agents,
                args.events,
                args.lease,
                checkpointed=args.checkpointed,
            )
    finally:
        if cleanup is not None:
            cleanup()
    text = json.dumps(result, indent=2)
    print(text)
    if args.out is not None:
        args.out.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
