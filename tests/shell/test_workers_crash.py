"""Workers under failure (R37, with R27, R29, R35, I4, I12): ``inbox-core serve`` processes
sharing one store while they are killed, stopped, full, or while the store fails.

Every worker runs ``tests.shell.worker_hosts:make_host``, whose host logs a
``host/owner`` record (its pid and a per-opening id) in the same atomic append
as each report, so a log shows which process drove each step and closed each
completed turn. The checks that follow every multi-process run:

- every post applied exactly once: ``store.outcome`` is ``PostApplied`` for every
  receipt, its message is admitted exactly once (``fates``), no message id is
  admitted twice, no key made two rows, each poster's own order kept (R35);
- every agent idle and its log well-formed (``replay``, ``check_durable_log``,
  ``check_fates``; I4, I12, R32);
- one driver at a time (R29, R37): within a turn every ``host/owner`` record
  carries one (pid, opening); a completed turn is closed by that same opening
  (its ``turn_stopping`` record lands with ``turn/end``); a turn closed
  ``interrupted`` by a takeover's Resume holds the dead owner's records only.

A failure prints a summary: the seed (``WORKERS_SEED`` reproduces the choices),
the kills, each worker's last statistics line and the tail of its standard
error. The full sizes run under ``-m slow``.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import json
import logging
import os
import random
import re
import signal
import sqlite3
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from inbox_core import (
    AdmittedFate,
    CompletedReason,
    HostRecord,
    InboxCoreError,
    InboxSpliced,
    InterruptedReason,
    MessageAdmitted,
    TurnEnded,
    TurnStarted,
    fates,
    replay,
)
from inbox_core.commands import followup
from inbox_core.shell import (
    DriverStopped,
    LogUnavailable,
    PostApplied,
    PostgresStore,
    PostPending,
    Receipt,
    SqliteStore,
    Worker,
)
from inbox_core.testing import check_durable_log, check_fates

from .posts_support import execute, pg_url, posts_table
from .worker_hosts import OWNER, RecordingHost, message, read_trace

ROOT = Path(__file__).resolve().parents[2]
FACTORY = "tests.shell.worker_hosts:make_host"
AnyStore = SqliteStore | PostgresStore


def base_seed() -> int:
    env = os.environ.get("WORKERS_SEED")
    return int(env) if env else random.randrange(1 << 31)


# ---------------------------------------------------------------- the processes


@dataclass
class Proc:
    """One child process; its standard error goes to a file (never a full pipe)."""

    name: str
    popen: subprocess.Popen[bytes]
    err: Path
    killed: bool = False

    @property
    def pid(self) -> int:
        return self.popen.pid

    def text(self) -> str:
        return self.err.read_text(errors="replace") if self.err.exists() else ""

    def tail(self, lines: int = 8) -> str:
        return "\n".join("    " + line for line in self.text().splitlines()[-lines:])

    def stats_lines(self) -> list[str]:
        return [line for line in self.text().splitlines() if ": serving " in line]

    def last_stats(self) -> str:
        lines = [
            line for line in self.text().splitlines() if ": serving " in line or "stopped;" in line
        ]
        return lines[-1].removeprefix("inbox-core serve: ") if lines else "(no stats line)"


def child_env(**extra: str) -> dict[str, str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    for key in ("WORKER_HOSTS_DELAY", "WORKER_HOSTS_BLOCK", "WORKER_HOSTS_GATE"):
        env.pop(key, None)
    env.update(extra)
    return env


class Fleet:
    """``inbox-core serve`` processes on one store, and the posting processes."""

    def __init__(
        self,
        spec: str,
        folder: Path,
        *,
        lease: float | None = None,
        idle: float = 1.0,
        poll: float = 0.2,
        seed: int = 0,
    ) -> None:
        self.spec = spec
        self.folder = folder
        self.lease = lease
        self.idle = idle
        self.poll = poll
        self.seed = seed
        self.workers: list[Proc] = []
        self.posters: list[Proc] = []
        self.events: list[str] = []  # what the test did, for the summary
        self.started = time.monotonic()
        self.trace = folder / "hooks.jsonl"  # every worker's hooks, unless a test names one

    def note(self, what: str) -> None:
        self.events.append(f"{time.monotonic() - self.started:6.1f}s {what}")

    def serve(self, *options: str, **env: str) -> Proc:
        name = f"w{len(self.workers) + 1}"
        argv = [
            sys.executable,
            "-m",
            "inbox_core",
            "serve",
            self.spec,
            "--host",
            FACTORY,
            "--poll-seconds",
            str(self.poll),
            "--idle-seconds",
            str(self.idle),
            "--stats-seconds",
            "0.5",
            "--name",
            name,
            *(["--lease-seconds", str(self.lease)] if self.lease is not None else []),
            *options,
        ]
        err = self.folder / f"{name}.err"
        with err.open("wb") as sink:
            popen = subprocess.Popen(
                argv,
                cwd=ROOT,
                env=child_env(**{"WORKER_HOSTS_TRACE": str(self.trace), **env}),
                stdout=subprocess.DEVNULL,
                stderr=sink,
            )
        proc = Proc(name, popen, err)
        self.workers.append(proc)
        self.note(f"started {name} (pid {proc.pid})")
        return proc

    def live(self) -> list[Proc]:
        return [w for w in self.workers if w.popen.poll() is None]

    def driving(self, procs: list[Proc], *, timeout: float) -> list[Proc]:
        """Of ``procs``, those whose host has asked for a step, so that a ``pre_step`` report
        of theirs (with its host/owner record) is durable (the driver asks the host again
        only once its last report is); waits up to ``timeout`` seconds for one."""
        deadline = time.monotonic() + timeout
        while True:
            started = {
                line["pid"]
                for line in read_trace(self.trace)
                if line.get("event") == "enter" and line.get("hook") == "run_step"
            }
            found = [proc for proc in procs if proc.pid in started]
            if found or time.monotonic() > deadline:
                return found
            time.sleep(0.05)

    def kill(self, proc: Proc) -> None:
        proc.killed = True
        proc.popen.send_signal(signal.SIGKILL)
        proc.popen.wait(10)
        self.note(f"killed {proc.name} (pid {proc.pid}) with SIGKILL")

    def post(self, posts: list[tuple[str, str, str]], *, pace: float, retry_every: int) -> Proc:
        name = f"p{len(self.posters) + 1}"
        plan = self.folder / f"{name}.json"
        plan.write_text(json.dumps({"posts": posts, "pace": pace, "retry_every": retry_every}))
        out = self.folder / f"{name}.out"
        err = self.folder / f"{name}.err"
        argv = [sys.executable, "-m", "tests.shell.worker_hosts", "post", self.spec]
        with err.open("wb") as sink:
            popen = subprocess.Popen(
                [*argv, str(plan), str(out)],
                cwd=ROOT,
                env=child_env(),
                stdout=subprocess.DEVNULL,
                stderr=sink,
            )
        proc = Proc(name, popen, err)
        self.posters.append(proc)
        return proc

    def receipts(self) -> list[tuple[str, str, int]]:
        """``(key, agent, post_id)`` of every post the posters made (their OUT files)."""
        found = []
        for poster in self.posters:
            out = self.folder / f"{poster.name}.out"
            if out.exists():
                for line in out.read_text().splitlines():
                    key, agent, post_id = line.split()
                    found.append((key, agent, int(post_id)))
        return found

    def terminate(self, timeout: float = 30.0) -> dict[str, int | None]:
        """SIGTERM every live worker; their exit statuses (None: still running)."""
        live = self.live()
        for proc in live:
            proc.popen.send_signal(signal.SIGTERM)
        self.note(f"SIGTERM to {', '.join(p.name for p in live) or 'nobody'}")
        codes: dict[str, int | None] = {}
        deadline = time.monotonic() + timeout
        for proc in live:
            try:
                codes[proc.name] = proc.popen.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                codes[proc.name] = None
        return codes

    def close(self) -> None:
        for proc in self.workers + self.posters:
            if proc.popen.poll() is None:
                proc.popen.kill()
                proc.popen.wait(10)

    def pid_names(self) -> dict[int, str]:
        return {proc.pid: proc.name for proc in self.workers}

    def summary(self, extra: str = "") -> str:
        lines = [f"seed {self.seed} (WORKERS_SEED={self.seed} reproduces the choices)"]
        lines += ["timeline:", *("  " + e for e in self.events[-40:])]
        for proc in self.workers:
            status = "killed" if proc.killed else f"exit {proc.popen.poll()}"
            lines.append(f"{proc.name} pid {proc.pid} ({status}): {proc.last_stats()}")
            lines.append(proc.tail())
        for proc in self.posters:
            if proc.popen.poll() not in (0, None) or proc.text().strip():
                lines.append(f"{proc.name} exit {proc.popen.poll()}:\n{proc.tail()}")
        if extra:
            lines.append(extra)
        return "\n".join(lines)


@contextlib.contextmanager
def fleet(spec: str, folder: Path, **options: Any) -> Iterator[Fleet]:
    ships = Fleet(spec, folder, **options)
    try:
        yield ships
    finally:
        ships.close()


# --------------------------------------------------------------- the stores


def fresh_pg(pg_server: str) -> tuple[str, Callable[[], None]]:
    """A database of its own (workers serve every agent with work in their store)."""
    from .pg import create_database

    name = f"inbox_core_workers_{uuid.uuid4().hex[:10]}"
    conninfo = create_database(pg_server, name)

    def drop() -> None:
        import psycopg

        with (
            contextlib.suppress(Exception),
            psycopg.connect(pg_server, autocommit=True) as conn,
        ):
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    return conninfo, drop


@contextlib.contextmanager
def backend_store(kind: str, request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    """``(store, spec)`` on a store no other test uses."""
    if kind == "sqlite":
        path = tmp_path / "agents.db"
        store: AnyStore = SqliteStore(path)
        try:
            yield store, f"sqlite:{path}"
        finally:
            store.close()
        return
    conninfo, drop = fresh_pg(request.getfixturevalue("pg_server"))
    store = PostgresStore(conninfo)
    try:
        yield store, pg_url(conninfo)
    finally:
        store.close()
        drop()


def read_log(store: AnyStore, agent: str) -> list[Any]:
    log = store.log(agent)
    try:
        return log.read()
    finally:
        log.close()


def pending_posts(store: AnyStore) -> int:
    return int(
        execute(store, f"SELECT COUNT(*) FROM {posts_table(store)} WHERE outcome IS NULL")[0][0]
    )


def settled(events: list[Any]) -> bool:
    """The log is idle with nothing waking pending: nothing more will run (R19, I3)."""
    state = replay(events)
    inbox = state.inbox
    return state.status == "idle" and not any(
        entry.wakeup for entry in (*inbox.next_step, *inbox.next_turn)
    )


def wait_quiet(store: AnyStore, agents: list[str], timeout: float) -> str | None:
    """Until no post is pending and every agent's log is settled; None, else what is not."""
    deadline = time.monotonic() + timeout
    done: set[str] = set()
    while True:
        left = pending_posts(store)
        if left == 0:
            for agent in agents:
                if agent not in done and settled(read_log(store, agent)):
                    done.add(agent)
            if len(done) == len(agents):
                return None
        if time.monotonic() > deadline:
            busy = sorted(set(agents) - done)[:5]
            return f"not quiet after {timeout:g} s: {left} posts pending, busy agents {busy}"
        time.sleep(0.3)


# --------------------------------------------------------------------- checks


@dataclass
class Findings:
    problems: list[str] = field(default_factory=list)
    turns: int = 0
    interrupted: int = 0
    closed_by: collections.Counter[str] = field(default_factory=collections.Counter)
    drivers: dict[str, set[int]] = field(default_factory=dict)  # agent -> pids

    def add(self, problem: str) -> None:
        if len(self.problems) < 40:
            self.problems.append(problem)

    def line(self) -> str:
        return (
            f"{self.turns} turns, {self.interrupted} closed interrupted by a takeover's Resume; "
            f"agents driven by more than one process: "
            f"{sum(len(p) > 1 for p in self.drivers.values())}"
        )


def record_data(event: HostRecord) -> dict[str, Any]:
    """A host/owner record's fields (see worker_hosts)."""
    data: Any = event.data
    return {key: data[key] for key in data}


def agent_id_of(agent: Any) -> str:
    return str(agent.log.agent_id)


def owns_its_log(agent: Any) -> bool:
    return bool(agent.log.owned)


def check_turn_owners(agent: str, events: list[Any], pids: set[int], found: Findings) -> None:
    """R29, R37, I4: one (pid, opening) drives each turn, and closes it unless a takeover's
    Resume did (``turn/end interrupted``, with no record of its own)."""
    turn: int | None = None
    records: list[dict[str, Any]] = []
    drivers = found.drivers.setdefault(agent, set())
    for seq, event in enumerate(events):
        if isinstance(event, TurnStarted):
            turn, records = event.turn, []
        elif isinstance(event, HostRecord) and event.type == OWNER:
            data = record_data(event)
            if turn is None or data["turn"] != turn or data["agent"] != agent:
                found.add(f"R30: {agent} #{seq}: record {data} outside its turn (open: {turn})")
            if data["pid"] not in pids:
                found.add(f"R37: {agent} #{seq}: record of pid {data['pid']}, no worker of ours")
            records.append(data)
            drivers.add(data["pid"])
        elif isinstance(event, TurnEnded):
            found.turns += 1
            owners = {(r["pid"], r["host"]) for r in records}
            if len(owners) > 1:
                found.add(
                    f"R29/R37: {agent} turn {event.turn} was driven by {sorted(owners)} "
                    f"(hooks {[(r['pid'], r['hook']) for r in records]})"
                )
            closing = [r for r in records if r["hook"] == "turn_stopping"]
            if isinstance(event.reason, InterruptedReason):
                found.interrupted += 1
                if closing:
                    found.add(f"R27: {agent} turn {event.turn} ran turn_stopping, ends interrupted")
            elif isinstance(event.reason, CompletedReason):
                if not closing or records[-1] is not closing[-1] or len(closing) > 1:
                    found.add(
                        f"R37: {agent} turn {event.turn} completed without its own "
                        f"turn_stopping record last: {records}"
                    )
                else:
                    found.closed_by[str(closing[-1]["pid"])] += 1
            else:
                found.add(f"{agent} turn {event.turn} ended {event.reason!r}")
            turn, records = None, []
    if turn is not None:
        found.add(f"{agent}: turn {turn} is still open")


def check_agents(
    store: AnyStore,
    agents: list[str],
    receipts: list[tuple[str, str, int]],
    pids: set[int],
    posters: int,
) -> Findings:
    """Every check of the module docstring over the final logs and the posts table."""
    found = Findings()
    logs = {agent: read_log(store, agent) for agent in agents}
    admitted: collections.Counter[str] = collections.Counter()
    fate_of: dict[str, Any] = {}
    for agent, events in logs.items():
        try:
            if not settled(events):
                found.add(f"R19: {agent} is not idle: {replay(events).status}")
            fold = check_durable_log(events)  # I2, I4, I7, I10
            for mid, fate in check_fates(events, fold=fold).items():  # R32
                fate_of[str(mid)] = fate
        except (InboxCoreError, AssertionError) as error:
            found.add(f"I4/I12: {agent}'s log: {type(error).__name__}: {error}")
            continue
        here = collections.Counter(
            str(e.message.id) for e in events if isinstance(e, MessageAdmitted)
        )
        admitted.update(here)
        check_turn_owners(agent, events, pids, found)
        # R35: each poster's posts to this agent entered its inbox in the poster's order
        first_seen: dict[str, int] = {}
        for event in events:
            if isinstance(event, InboxSpliced):
                for entry in event.inserted:
                    first_seen.setdefault(str(entry.message.id), len(first_seen))
        by_poster: dict[str, list[int]] = collections.defaultdict(list)
        for key in sorted(first_seen, key=first_seen.__getitem__):
            poster, number = key.rsplit("-", 2)[-2:]
            by_poster[poster].append(int(number))
        for poster, numbers in by_poster.items():
            if numbers != sorted(numbers):
                found.add(f"R35: {agent} took {poster}'s posts out of its order: {numbers}")
    twice = {mid: n for mid, n in admitted.items() if n > 1}
    if twice:
        found.add(f"R35/R27: admitted more than once: {sorted(twice.items())[:5]}")
    keys = {key for key, _, _ in receipts}
    if len(keys) != len(receipts):
        found.add(f"R35: {len(receipts)} receipts for {len(keys)} keys")
    for key, agent, post_id in receipts:
        outcome = store.outcome(Receipt(agent, post_id))
        if outcome != PostApplied():
            found.add(f"R35: post {key} to {agent}: {outcome!r}")
        if admitted[key] != 1 or not isinstance(fate_of.get(key), AdmittedFate):
            found.add(f"R35/R32: {key} admitted {admitted[key]} times, fate {fate_of.get(key)!r}")
    stray = set(admitted) - keys
    if stray:
        found.add(f"R35: admitted yet never posted: {sorted(stray)[:5]}")
    table = posts_table(store)
    rows = execute(store, f"SELECT outcome, COUNT(*) FROM {table} GROUP BY outcome")
    counts = {str(outcome): int(n) for outcome, n in rows}
    if counts != {"applied": len(keys)}:
        found.add(f"R35: the posts table holds {counts}, expected {len(keys)} applied rows")
    posters_seen = {key.rsplit("-", 2)[-2] for key in keys}
    if len(posters_seen) != posters:
        found.add(f"expected posts from {posters} posters, got {sorted(posters_seen)}")
    return found


# ------------------------------------------------------------ the kill loop


def plan_posts(
    run: str, agents: list[str], followups: int, posters: int, rng: random.Random
) -> list[list[tuple[str, str, str]]]:
    """Each poster's followups, in its own random order over the agents; key = message id."""
    plans: list[list[tuple[str, str, str]]] = [[] for _ in range(posters)]
    for n in range(followups):
        p = n % posters
        agent = rng.choice(agents)
        key = f"{run}-p{p + 1}-{len(plans[p]):05d}"
        plans[p].append((agent, key, f"{key} to {agent}"))
    return plans


def run_kill_loop(
    store: AnyStore,
    spec: str,
    tmp_path: Path,
    *,
    workers: int,
    agents: int,
    followups: int,
    posters: int,
    kills: int,
    every: tuple[float, float],
    post_seconds: float,
    lease: float | None,
    quiet_timeout: float,
    delay: float = 0.2,
) -> None:
    """R27, R29, R35, R37, I4, I12: ``workers`` serve processes and ``posters`` posting
    processes; every few seconds a random worker is killed (SIGKILL) and a new one started.
    Then every check of the module docstring."""
    seed = base_seed()
    rng = random.Random(seed)
    run = uuid.uuid4().hex[:6]
    names = [f"{run}-a{i:03d}" for i in range(agents)]
    plans = plan_posts(run, names, followups, posters, rng)
    with fleet(spec, tmp_path, lease=lease, seed=seed) as ships:

        def fail(what: str) -> None:
            pytest.fail(f"{what}\n{ships.summary()}", pytrace=False)

        for _ in range(workers):
            ships.serve(WORKER_HOSTS_DELAY=str(delay))
        pace = post_seconds / max(len(plan) for plan in plans)
        for plan in plans:
            ships.post(plan, pace=pace, retry_every=7)
        ships.note(f"{posters} posters, {followups} followups to {agents} agents, pace {pace:.3f}s")
        for _ in range(kills):
            time.sleep(rng.uniform(*every))
            live = ships.live()
            if len(live) != workers:
                gone = [w.name for w in ships.workers if w not in live and not w.killed]
                fail(f"a worker exited on its own: {gone}")
            # a victim that has driven: on a loaded machine a worker still starting up would
            # die having proved nothing (no turn of its own for a takeover to resume)
            ships.kill(rng.choice(ships.driving(live, timeout=20.0) or live))
            ships.serve(WORKER_HOSTS_DELAY=str(delay))
        deadline = time.monotonic() + post_seconds + 60
        for poster in ships.posters:
            try:
                code = poster.popen.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                fail(f"poster {poster.name} did not finish")
            if code != 0:
                fail(f"poster {poster.name} exited {code}")
        ships.note("posters done")
        not_quiet = wait_quiet(store, names, quiet_timeout)
        ships.note("quiet" if not_quiet is None else not_quiet)
        if not_quiet is not None:
            fail(not_quiet)
        codes = ships.terminate()
        if any(code != 0 for code in codes.values()):
            fail(f"SIGTERM: inbox-core serve must exit 0 (R37), got {codes}")
        receipts = ships.receipts()
        if len(receipts) != followups:
            fail(f"the posters acknowledged {len(receipts)} of {followups} posts")
        found = check_agents(store, names, receipts, set(ships.pid_names()), posters)
        killed_drove = {
            w.name
            for w in ships.workers
            if w.killed and any(w.pid in p for p in found.drivers.values())
        }
        ships.note(found.line() + f"; killed workers that had driven turns: {sorted(killed_drove)}")
        if found.problems:
            fail("\n".join(found.problems))
        if kills and not killed_drove:
            fail("no killed worker had driven a turn: the kills proved nothing")
        if kills and not found.interrupted:  # 0.2 s steps: a kill finds turns in flight
            fail("R27: no kill left a turn open for a takeover's Resume: the test proved nothing")
        if candidates := store.candidates(1000):
            fail(f"R37: agents still want an owner after the run: {candidates[:5]}")
        print(ships.summary())


def test_R37_R29_R35_kill_workers_while_four_processes_post_on_postgres(
    request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    """R37, R29, R35, R27, I4, I12: 3 serve processes on one PostgreSQL database (2 s leases),
    4 posting processes, 36 agents, 240 followups; 3 kill -9 of a random worker, each
    replaced. Every post applied exactly once, every agent idle, every log replays, and
    one driver per turn (see the module docstring)."""
    with backend_store("postgres", request, tmp_path) as (store, spec):
        run_kill_loop(
            store,
            spec,
            tmp_path,
            workers=3,
            agents=36,
            followups=240,
            posters=4,
            kills=3,
            every=(1.5, 2.5),
            post_seconds=7.0,
            lease=2.0,
            quiet_timeout=60,
        )


@pytest.mark.slow
def test_R37_R29_R35_kill_workers_while_four_processes_post_on_postgres_full_size(
    request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    """R37, R29, R35, R27, I4, I12: the issue's size: 3 serve processes, 4 posting
    processes, 200 agents, 2,000 followups, a kill -9 every 2-4 s (12 kills)."""
    with backend_store("postgres", request, tmp_path) as (store, spec):
        run_kill_loop(
            store,
            spec,
            tmp_path,
            workers=3,
            agents=200,
            followups=2000,
            posters=4,
            kills=12,
            every=(2.0, 4.0),
            post_seconds=36.0,
            lease=2.0,
            quiet_timeout=180,
        )


def test_R37_R29_R35_kill_workers_on_one_sqlite_file(
    request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    """R37, R29, R35, R27, I4, I12: 2 serve processes on one SQLite file, 3 posting
    processes, 30 agents, 200 followups, 3 kill -9 (SQLite ownership dies with the
    process: the next worker takes over at once). The same checks."""
    with backend_store("sqlite", request, tmp_path) as (store, spec):
        run_kill_loop(
            store,
            spec,
            tmp_path,
            workers=2,
            agents=30,
            followups=200,
            posters=3,
            kills=3,
            every=(1.0, 2.0),
            post_seconds=5.0,
            lease=None,
            quiet_timeout=60,
        )


@pytest.mark.slow
def test_R37_R29_R35_kill_workers_on_one_sqlite_file_full_size(
    request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    """R37, R29, R35, R27, I4, I12: 2 serve processes on one SQLite file, 4 posting
    processes, 200 agents, 2,000 followups, 12 kill -9."""
    with backend_store("sqlite", request, tmp_path) as (store, spec):
        run_kill_loop(
            store,
            spec,
            tmp_path,
            workers=2,
            agents=200,
            followups=2000,
            posters=4,
            kills=12,
            every=(2.0, 4.0),
            post_seconds=36.0,
            lease=None,
            quiet_timeout=180,
        )


def test_R29_R37_the_owner_check_sees_two_drivers_in_one_turn() -> None:
    """R29, R37: the check above can fail. A log driven by one host passes; the same log with
    one record's pid changed (a second process driving the turn), or with a completed turn
    whose closing record came from another opening, is reported."""
    from inbox_core.shell import LoopAgent

    async def drive() -> list[Any]:
        agent = LoopAgent(RecordingHost("solo"))
        agent.followup(message("m1", "hello"))
        agent.followup(message("m2", "again"))
        await asyncio.wait_for(agent.when_idle(), 10)
        return agent.log.read()

    events = asyncio.run(drive())
    me = os.getpid()
    clean = Findings()
    check_turn_owners("solo", events, {me}, clean)
    assert clean.problems == []
    assert clean.turns == 2

    def forged(change: Callable[[dict[str, Any]], None], hook: str) -> list[Any]:
        out, done = [], False
        for event in events:
            if not done and isinstance(event, HostRecord) and record_data(event)["hook"] == hook:
                data = record_data(event)
                change(data)
                out.append(HostRecord(OWNER, data))
                done = True
            else:
                out.append(event)
        return out

    two_pids = Findings()
    check_turn_owners(
        "solo", forged(lambda d: d.update(pid=me + 1), "run_step"), {me, me + 1}, two_pids
    )
    assert any("driven by" in p for p in two_pids.problems), two_pids.problems
    other_closer = Findings()
    check_turn_owners(
        "solo", forged(lambda d: d.update(host="elsewhere"), "turn_stopping"), {me}, other_closer
    )
    assert any("driven by" in p for p in other_closer.problems), other_closer.problems
    stranger = Findings()
    check_turn_owners("solo", events, {me + 1}, stranger)
    assert any("no worker of ours" in p for p in stranger.problems)


# ------------------------------------------------------------ SIGTERM mid-turn


def wait_for(check: Callable[[], Any], timeout: float, what: str, ships: Fleet) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        found = check()
        if found:
            return found
        if time.monotonic() > deadline:
            pytest.fail(
                f"timed out ({timeout:g} s) waiting for {what}\n{ships.summary()}", pytrace=False
            )
        time.sleep(0.05)


def post_followup(store: AnyStore, agent: str, key: str) -> Receipt:
    return store.post(agent, followup(message(key, f"{key} to {agent}")), key=key)


def owner_pids(events: list[Any]) -> dict[int, set[int]]:
    """turn -> the pids of its host/owner records."""
    pids: dict[int, set[int]] = collections.defaultdict(set)
    for event in events:
        if isinstance(event, HostRecord) and event.type == OWNER:
            data = record_data(event)
            pids[int(data["turn"])].add(int(data["pid"]))
    return pids


def turn_ends(events: list[Any]) -> list[tuple[int, str]]:
    return [(e.turn, type(e.reason).__name__) for e in events if isinstance(e, TurnEnded)]


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
@pytest.mark.parametrize("hook", ["pre_step", "run_step"])
def test_R27_R29_R37_sigterm_during_a_hook_detaches_and_the_next_worker_resumes(
    kind: str, hook: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    """R37, R29, R27, I12: ``inbox-core serve`` gets SIGTERM while its host blocks in
    ``pre_step`` (a pending pre-step decision) or ``run_step`` until its AbortSignal trips.
    The signal trips (the host says so), the agent detaches (nothing written, ownership
    released: with a 30 s lease the next worker need not wait it out) and the worker exits
    0. The next worker's Resume closes turn 1 ``interrupted``; with no decision, the claim is
    restored and m1 runs again in turn 2 (its followup m2 in turn 3); after the decision,
    m1 stays admitted in turn 1 and only m2 runs (turn 2), exactly as after a crash."""
    trace = tmp_path / "trace.jsonl"
    with (
        backend_store(kind, request, tmp_path) as (store, spec),
        fleet(spec, tmp_path, lease=30.0 if kind == "postgres" else None, seed=0) as ships,
    ):
        first = ships.serve(WORKER_HOSTS_BLOCK=hook, WORKER_HOSTS_TRACE=str(trace))
        agent = f"sig-{uuid.uuid4().hex[:8]}"
        r1 = post_followup(store, agent, "m1")

        def entered() -> bool:
            return any(t["event"] == "enter" and t["hook"] == hook for t in read_trace(trace))

        wait_for(entered, 30, f"the blocking {hook}", ships)
        r2 = post_followup(store, agent, "m2")
        wait_for(lambda: store.outcome(r2) == PostApplied(), 10, "m2 applied mid-turn", ships)
        assert store.outcome(r1) == PostApplied()
        codes = ships.terminate(timeout=20)
        if codes != {first.name: 0}:
            pytest.fail(
                f"SIGTERM: serve must exit 0, got {codes}\n{ships.summary()}", pytrace=False
            )
        trips = [t for t in read_trace(trace) if t["event"] == "tripped"]
        assert [(t["pid"], t["hook"], t["turn"], t["cause"]) for t in trips] == [
            (first.pid, hook, 1, "ParentCause")
        ], "the turn's AbortSignal must trip on SIGTERM (R29 detach)"
        events = read_log(store, agent)
        state = replay(events)
        assert state.status == "running"
        assert turn_ends(events) == [], "a detach writes nothing"
        admitted_in_1 = [str(e.message.id) for e in events if isinstance(e, MessageAdmitted)]
        assert admitted_in_1 == ([] if hook == "pre_step" else ["m1"])
        if kind == "postgres":
            holder = execute(
                store, "SELECT owner FROM inbox_core_owners WHERE agent_id = %s", agent
            )
            assert holder == [(None,)], f"R29: detach releases the lease, found {holder}"
        second = ships.serve(WORKER_HOSTS_TRACE=str(trace))
        not_quiet = wait_quiet(store, [agent], 20)
        if not_quiet:
            pytest.fail(f"{not_quiet}\n{ships.summary()}", pytrace=False)
        codes = ships.terminate(timeout=20)
        assert codes == {second.name: 0}, ships.summary()
        events = read_log(store, agent)
        check_fates(events, fold=check_durable_log(events))
        fate = fates(events)
        pids = owner_pids(events)
        if hook == "pre_step":
            assert turn_ends(events) == [
                (1, "InterruptedReason"),
                (2, "CompletedReason"),
                (3, "CompletedReason"),
            ]
            assert (fate["m1"], fate["m2"]) == (AdmittedFate(2, 1), AdmittedFate(3, 1))
            end_1 = next(i for i, e in enumerate(events) if isinstance(e, TurnEnded))
            restore = events[end_1 + 1]
            assert isinstance(restore, InboxSpliced)
            assert restore.start == 0
            assert [str(e.message.id) for e in restore.inserted] == ["m1"], "R27: claim restored"
            assert 1 not in pids, "the detached pre-step's answer was discarded"
        else:
            assert turn_ends(events) == [(1, "InterruptedReason"), (2, "CompletedReason")]
            assert (fate["m1"], fate["m2"]) == (AdmittedFate(1, 1), AdmittedFate(2, 1))
            assert not any(
                isinstance(e, InboxSpliced)
                and e.inserted
                and "m1" in [str(x.message.id) for x in e.inserted]
                for e in events[1:]
            ), "R27: a decided claim is never restored"
            assert pids[1] == {first.pid}
        assert all(pids[t] == {second.pid} for t in pids if t > 1)
        admitted = collections.Counter(
            str(e.message.id) for e in events if isinstance(e, MessageAdmitted)
        )
        assert admitted == {"m1": 1, "m2": 1}


# ------------------------------------------------------------ the agent limit


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_R37_a_worker_at_its_limit_leaves_new_work_to_the_others(
    kind: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    """R37: worker A (``--max-agents 2``, steps that block until a gate opens) takes two of
    six agents with a post and leaves the other four pending however often it polls; worker
    B, started then, serves those four while A is still full; once the gate opens all six
    complete. A's statistics lines never show more than 2 served, and the host/owner
    records show A drove exactly two agents and B the other four."""
    trace = tmp_path / "trace.jsonl"
    gate = tmp_path / "gate"
    run = uuid.uuid4().hex[:6]
    agents = [f"{run}-lim{i}" for i in range(6)]
    with (
        backend_store(kind, request, tmp_path) as (store, spec),
        fleet(spec, tmp_path, lease=2.0 if kind == "postgres" else None, idle=30.0) as ships,
    ):
        a = ships.serve(
            "--max-agents",
            "2",
            WORKER_HOSTS_BLOCK="run_step",
            WORKER_HOSTS_GATE=str(gate),
            WORKER_HOSTS_TRACE=str(trace),
        )
        receipts = [
            (key, agent, post_followup(store, agent, key).post_id)
            for n, agent in enumerate(agents)
            for key in [f"{run}-p1-{n:05d}"]
        ]

        def entered_by_a() -> set[str]:
            return {
                t["agent"]
                for t in read_trace(trace)
                if t["pid"] == a.pid and t["event"] == "enter" and t["hook"] == "run_step"
            }

        wait_for(lambda: len(entered_by_a()) >= 2, 30, "A running two steps", ships)
        time.sleep(1.5)  # A polls every 0.2 s and is woken by each post: it had every chance
        taken = entered_by_a()
        pending = [r for r in receipts if store.outcome(Receipt(r[1], r[2])) == PostPending()]
        if len(taken) != 2 or len(pending) != 4:
            pytest.fail(
                f"R37: A (max 2) took {sorted(taken)}, {len(pending)} posts pending\n"
                + ships.summary(),
                pytrace=False,
            )
        b = ships.serve(WORKER_HOSTS_TRACE=str(trace))
        others = [agent for agent in agents if agent not in taken]
        not_quiet = wait_quiet_agents(store, others, 30)
        if not_quiet:
            pytest.fail(f"B did not serve the rest: {not_quiet}\n{ships.summary()}", pytrace=False)
        assert entered_by_a() == taken
        assert not any(settled(read_log(store, x)) for x in taken)
        gate.touch()
        not_quiet = wait_quiet(store, agents, 30)
        if not_quiet:
            pytest.fail(f"{not_quiet}\n{ships.summary()}", pytrace=False)
        codes = ships.terminate()
        assert codes == {a.name: 0, b.name: 0}, ships.summary()
        found = check_agents(store, agents, receipts, {a.pid, b.pid}, posters=1)
        assert not found.problems, "\n".join(found.problems) + "\n" + ships.summary()
        assert {x for x, p in found.drivers.items() if a.pid in p} == taken
        assert {x for x, p in found.drivers.items() if b.pid in p} == set(others)
        served = [int(m) for m in re.findall(r"serving (\d+)/2 ", a.text())]
        assert served, "no stats line from A"
        assert max(served) == 2, f"R37: A's stats lines show {served}"
        assert "(at most 2 agents)" in a.text()


def wait_quiet_agents(store: AnyStore, agents: list[str], timeout: float) -> str | None:
    """Until these agents' posts are decided and their logs settled."""
    deadline = time.monotonic() + timeout
    table = posts_table(store)
    while True:
        busy = []
        for agent in agents:
            rows = execute(
                store,
                f"SELECT COUNT(*) FROM {table} WHERE agent_id = %s AND outcome IS NULL",
                agent,
            )
            if int(rows[0][0]) or not settled(read_log(store, agent)):
                busy.append(agent)
        if not busy:
            return None
        if time.monotonic() > deadline:
            return f"after {timeout:g} s still busy: {busy}"
        time.sleep(0.2)


# ------------------------------------------------------- a store that fails writes


HUNG = (
    "a write that failed while no later write was queued must settle every write the agent "
    "issued (inbox_core/shell/commit.py, Committing._lose): else durable(), the driver waiting "
    "for its report, detach() of the stopped agent, Worker.stop() and SIGTERM of inbox-core "
    "serve wait forever, and on SQLite the stopped agent's lock is never released (the bug of "
    "dfcc5af, fixed on main by a465de9)"
)


async def stop_worker(worker: Worker, serving: asyncio.Task[None], timeout: float) -> bool:
    """``worker.stop()`` and wait for ``run`` to return: False (and ``run`` cancelled) when
    it did not return within ``timeout`` (HUNG)."""
    worker.stop()
    done, _ = await asyncio.wait({serving}, timeout=timeout)
    if done:
        serving.result()
        return True
    serving.cancel()
    await asyncio.gather(serving, return_exceptions=True)
    return False


class Served:
    """Every ``LoopAgent`` a worker served, seen by polling ``worker.agents``."""

    def __init__(self, worker: Worker) -> None:
        self.worker = worker
        self.seen: dict[int, Any] = {}
        self.order: list[Any] = []

    async def watch(self) -> None:
        while True:
            for agent in self.worker.agents.values():
                if id(agent) not in self.seen:
                    self.seen[id(agent)] = agent
                    self.order.append(agent)
            await asyncio.sleep(0.005)

    def stopped(self) -> list[Any]:
        return [agent for agent in self.order if agent.stopped is not None]


async def post_retrying(store: AnyStore, agent: str, key: str) -> Receipt:
    """Post until the store answers; the same key tells whether a failed try landed (R35)."""
    deadline = time.monotonic() + 60
    while True:
        try:
            return await asyncio.to_thread(post_followup, store, agent, key)
        except LogUnavailable:
            if time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.1)


DURABLE_WAIT = 10.0
"""How long a followup's ``durable()`` may take before it counts as hung (never acknowledged;
see HUNG)."""


async def direct_followup(worker: Worker, agent_id: str, key: str) -> str:
    """``followup`` on the served agent and ``await durable()``: 'acked' once it returned,
    'refused' when the command raised, 'lost' when durability failed (not acknowledged),
    'hung' when ``durable()`` neither returned nor raised within ``DURABLE_WAIT``."""
    agent = worker.agents.get(agent_id)
    if agent is None:
        return "refused"
    try:
        agent.followup(message(key, f"{key} to {agent_id}"))
    except (InboxCoreError, DriverStopped):
        return "refused"
    try:
        await asyncio.wait_for(agent.durable(), DURABLE_WAIT)
    except (InboxCoreError, DriverStopped):
        return "lost"
    except TimeoutError:
        return "hung"
    return "acked"


def admitted_counts(
    store: AnyStore, agents: list[str]
) -> tuple[collections.Counter[str], dict[str, Any]]:
    admitted: collections.Counter[str] = collections.Counter()
    fate_of: dict[str, Any] = {}
    for agent in agents:
        events = read_log(store, agent)
        check_fates(events, fold=check_durable_log(events))  # I4, R32
        assert settled(events), f"{agent} is not idle"
        admitted.update(str(e.message.id) for e in events if isinstance(e, MessageAdmitted))
        fate_of.update((str(k), v) for k, v in fates(events).items())
    return admitted, fate_of


@pytest.mark.parametrize(
    "backoff",
    [
        pytest.param(1.0, id="backoff-1s"),
        pytest.param(None, id="backoff-default", marks=pytest.mark.slow),
    ],
)
def test_R37_R29_a_postgres_restart_under_a_worker_stops_the_writing_agents_and_loses_nothing(
    pg_cluster: Any,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
    backoff: float | None,
) -> None:
    """R37, R29, R35, R27: a worker serves 6 agents on a private PostgreSQL cluster while
    posts (with keys, retried with the same key when the store fails) and in-process
    followups stream in; the server restarts. The agents whose writes failed stop with a
    typed error (``LogUnavailable``), the worker lets them go and opens them again once the
    server is back; every post ends applied exactly once, and every acknowledged write (a
    post whose outcome was PostApplied, a followup whose ``await agent.durable()``
    returned) is in the log, admitted exactly once.

    An agent the worker tried to open while the server was down is left alone for a
    back-off that doubles with each failure in a row, at most ``BACKOFF_SECONDS`` (30 s).
    The default run caps it at 1 s; ``-m slow`` runs with the real one."""
    caplog.set_level(logging.INFO, logger="inbox_core.worker")
    if backoff is not None:
        from inbox_core.shell import worker as worker_module

        monkeypatch.setattr(worker_module, "BACKOFF_SECONDS", backoff)
    store = PostgresStore(pg_cluster.conninfo)
    agents = [f"pg-{i}" for i in range(6)]
    results: dict[str, str] = {}
    receipts: list[tuple[str, str, Receipt]] = []
    stop_returned: list[bool] = []
    phases: list[str] = []

    async def main() -> Served:
        worker = Worker(
            store,
            lambda agent: RecordingHost(agent, delay=0.05),
            idle_seconds=60,
            poll_seconds=0.2,
            lease_seconds=2.0,
            name="restarted",
        )
        serving = asyncio.create_task(worker.run())
        served = Served(worker)
        watching = asyncio.create_task(served.watch())
        directs: list[asyncio.Task[None]] = []
        try:

            async def direct(key: str, agent: str) -> None:
                results[key] = await direct_followup(worker, agent, key)

            async def traffic(prefix: str, rounds: int) -> None:
                for n in range(rounds):
                    agent = agents[n % len(agents)]
                    key = f"{prefix}-post-{n:03d}"
                    receipts.append((key, agent, await post_retrying(store, agent, key)))
                    if n % 3 == 0:
                        other = agents[(n + 1) % len(agents)]
                        directs.append(
                            asyncio.create_task(direct(f"{prefix}-direct-{n:03d}", other))
                        )
                    await asyncio.sleep(0.02)

            began = time.monotonic()

            def phase(what: str) -> None:
                phases.append(f"{time.monotonic() - began:5.1f}s {what}")

            await traffic("before", 30)
            phase("restarting")
            restart = asyncio.create_task(asyncio.to_thread(pg_cluster.restart))
            await traffic("during", 40)
            await restart
            phase("restarted")
            await traffic("after", 30)
            await asyncio.gather(*directs)
            phase("posted")
            for _, _, receipt in receipts:
                assert await store.wait(receipt, timeout=60) == PostApplied()
            phase("every post applied")
            deadline = time.monotonic() + 60
            while not all(settled(read_log(store, agent)) for agent in agents):
                assert time.monotonic() < deadline, "the agents did not settle"
                await asyncio.sleep(0.2)
            phase("settled")
        finally:
            watching.cancel()
            stop_returned.append(await stop_worker(worker, serving, 8))
        print(worker.stats().line())
        return served

    try:
        served = asyncio.run(asyncio.wait_for(main(), 240))
        stopped = served.stopped()
        summary = (
            f"phases: {phases}; "
            f"direct followups: {collections.Counter(results.values())}; stopped agents: "
            f"{[(agent_id_of(a), type(a.stopped).__name__) for a in stopped]}; "
            f"worker log: {[r.getMessage() for r in caplog.records][-15:]}"
        )
        assert stopped, f"no agent stopped: the restart hit no write\n{summary}"
        assert all(isinstance(a.stopped, InboxCoreError) for a in stopped), summary
        assert any(isinstance(a.stopped, LogUnavailable) for a in stopped), summary
        logged = [r.getMessage() for r in caplog.records if "stopped (" in r.getMessage()]
        assert logged, f"R37: the worker logs each stopped agent\n{summary}"
        for agent in stopped:  # let go, then opened again once the server was back
            later = served.order[served.order.index(agent) + 1 :]
            assert any(agent_id_of(a) == agent_id_of(agent) for a in later), summary
        admitted, fate_of = admitted_counts(store, agents)
        twice = {k: n for k, n in admitted.items() if n > 1}
        assert not twice, f"admitted twice: {twice}\n{summary}"
        acked = [key for key, _, _ in receipts] + [k for k, v in results.items() if v == "acked"]
        missing = [
            k for k in acked if admitted[k] != 1 or not isinstance(fate_of.get(k), AdmittedFate)
        ]
        assert not missing, f"acknowledged yet not admitted once: {missing}\n{summary}"
        rows = execute(store, "SELECT outcome, COUNT(*) FROM inbox_core_posts GROUP BY outcome")
        assert {str(o): int(n) for o, n in rows} == {"applied": len(receipts)}, summary
        print(summary)
        hung = [k for k, v in results.items() if v == "hung"]
        if stop_returned != [True] or hung:
            pytest.fail(f"{HUNG}\nstop returned: {stop_returned}; hung durable(): {hung}")
    finally:
        store.close()


def test_R37_sqlite_agents_whose_writes_fail_stop_alone_and_resume_later(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """R37, R35, R29, R27: a trigger makes every write of agents x and z fail ("disk full")
    under a serving worker: x idle (its accepted followup's write fails), z in the middle of
    a slow step (its step's report fails). Both stop with a typed error (LogUnavailable),
    the log holds nothing of the failed writes, the worker logs it and lets them go; the
    other agents, even in the same group commit, go on; x's new post waits. Once the trigger
    is dropped, x and z are opened again and their work completes (z's turn closed
    interrupted, its admitted message not run again); nothing acknowledged is lost, nothing
    is admitted twice, and the worker stops when asked."""
    caplog.set_level(logging.INFO, logger="inbox_core.worker")
    path = tmp_path / "agents.db"
    store = SqliteStore(path)
    victims, others = ["x", "z"], ["y0", "y1", "y2"]
    results: dict[str, str] = {}
    observed: dict[str, Any] = {}

    def host(agent: str) -> RecordingHost:
        return RecordingHost(agent, delay=1.0 if agent == "z" else 0.02)

    async def until(check: Callable[[], bool], what: str, timeout: float = 10) -> bool:
        deadline = time.monotonic() + timeout
        while not check():
            if time.monotonic() > deadline:
                observed.setdefault("timeouts", []).append(what)
                return False
            await asyncio.sleep(0.02)
        return True

    async def main() -> None:
        worker = Worker(store, host, idle_seconds=60, poll_seconds=0.2, name="diskfull")
        serving = asyncio.create_task(worker.run())
        try:
            first = [await post_retrying(store, a, f"{a}-first") for a in ["x", *others]]
            for receipt in first:
                assert await store.wait(receipt, timeout=20) == PostApplied()
            z_first = await post_retrying(store, "z", "z-first")
            assert await until(lambda: "z" in worker.agents, "z served")
            z = worker.agents["z"]
            assert await until(
                lambda: (
                    z.state.awaiting is not None and type(z.state.awaiting).__name__ == "AwaitStep"
                ),
                "z in its step",
            )
            await asyncio.sleep(0.1)  # the step's report comes in about 0.9 s
            conn = sqlite3.connect(path, isolation_level=None)
            conn.execute(
                "CREATE TRIGGER disk_full BEFORE INSERT ON events "
                "WHEN NEW.agent_id IN ('x', 'z') BEGIN SELECT RAISE(ABORT, 'disk full'); END"
            )
            x = worker.agents["x"]
            ys = [worker.agents[a] for a in others]
            x.followup(message("x-direct", "to x"))  # accepted: its write is on its way
            for y in ys:  # the same group commit, most likely
                y.followup(message(f"{agent_id_of(y)}-direct", "to y"))
            x_durable = asyncio.ensure_future(x.durable())
            assert await until(lambda: x.stopped is not None, "x stopped")
            assert isinstance(x.stopped, LogUnavailable), repr(x.stopped)
            assert "disk full" in str(x.stopped)
            for y in ys:
                await asyncio.wait_for(y.durable(), 10)
                results[f"{agent_id_of(y)}-direct"] = "acked"
            await asyncio.wait({x_durable}, timeout=2)
            if x_durable.done():  # the promise: DriverStopped, the write's error as its cause
                with pytest.raises(DriverStopped) as stopped:
                    x_durable.result()
                assert isinstance(stopped.value.__cause__, LogUnavailable)
                results["x-direct"] = "lost"
            else:  # HUNG
                x_durable.cancel()
                results["x-direct"] = "hung"
            assert await until(lambda: z.stopped is not None, "z stopped")
            assert isinstance(z.stopped, LogUnavailable), repr(z.stopped)
            before = worker.stats()
            waiting = await post_retrying(store, "x", "x-waits")
            later = [await post_retrying(store, a, f"{a}-later") for a in others]
            for receipt in later:
                assert await store.wait(receipt, timeout=20) == PostApplied()
            await asyncio.sleep(2.0)  # ten polls: x stays stopped while the trigger stands
            assert store.outcome(waiting) == PostPending()
            after = worker.stats()
            observed["while failing"] = {
                "reopened": after.opened - before.opened,
                "failed": after.failed - before.failed,
                "lost races": after.lost_races - before.lost_races,
            }
            conn.execute("DROP TRIGGER disk_full")
            conn.close()
            assert await store.wait(waiting, timeout=20) == PostApplied()
            assert store.outcome(z_first) == PostApplied()
            if not await until(
                lambda: all(settled(read_log(store, a)) for a in victims),
                "x and z settled",
                timeout=10,
            ):
                observed["z's stopped object still owns its log"] = owns_its_log(z)
        finally:
            observed["stop returned"] = await stop_worker(worker, serving, 5)

    try:
        asyncio.run(asyncio.wait_for(main(), 120))
        messages = [r.getMessage() for r in caplog.records]
        summary = f"{observed}; {results}; worker log: {messages[-8:]}"
        for victim in victims:
            assert any(f"agent '{victim}' stopped (LogUnavailable" in m for m in messages), summary
        if "timeouts" in observed or not observed["stop returned"] or "hung" in results.values():
            pytest.fail(f"{HUNG}?\n{summary}")
        admitted, fate_of = admitted_counts(store, [*victims, *others])
        assert "x-direct" not in fate_of, "R37: a failed write leaves nothing in the log"
        acked = [f"{a}-first" for a in [*victims, *others]] + [f"{a}-later" for a in others]
        acked += ["x-waits"] + [k for k, v in results.items() if v == "acked"]
        assert {k: admitted[k] for k in acked} == dict.fromkeys(acked, 1), summary
        assert all(isinstance(fate_of[k], AdmittedFate) for k in acked), summary
        assert all(n == 1 for n in admitted.values()), summary
        z_events = read_log(store, "z")
        assert turn_ends(z_events)[0] == (1, "InterruptedReason"), summary  # R27
        print(summary)
    finally:
        store.close()


def test_R37_durable_raises_once_the_last_write_failed(tmp_path: Path) -> None:
    """R37 (specs: ``durable()`` raises ``DriverStopped`` if a write failed): an agent on a
    ``ThreadWriter`` whose only pending write fails stops, and ``await agent.durable()``
    raises DriverStopped (cause LogUnavailable) rather than wait forever (it hung on
    dfcc5af: see HUNG)."""
    from inbox_core.shell import EchoHost, LoopAgent, SqliteLog
    from inbox_core.shell.stores.writers import ThreadWriter

    path = tmp_path / "agents.db"

    async def main() -> None:
        writer = ThreadWriter()
        log = SqliteLog(path, agent_id="x")
        try:
            agent = LoopAgent(EchoHost(), log=log, writer=writer)
            await agent.durable()
            conn = sqlite3.connect(path, isolation_level=None)
            conn.execute(
                "CREATE TRIGGER disk_full BEFORE INSERT ON events "
                "BEGIN SELECT RAISE(ABORT, 'disk full'); END"
            )
            conn.close()
            agent.followup(message("m1", "hello"))
            with pytest.raises(DriverStopped) as stopped:
                await asyncio.wait_for(agent.durable(), 2)
            assert isinstance(stopped.value.__cause__, LogUnavailable)
            assert isinstance(agent.stopped, LogUnavailable)
        finally:
            await writer.aclose()
            log.close()

    asyncio.run(main())


def test_R29_R37_detach_of_an_agent_whose_step_report_failed_releases_its_log(
    tmp_path: Path,
) -> None:
    """R29, R37: an agent on a ``ThreadWriter`` whose step report cannot be written stops;
    ``detach()`` then returns and releases the log (the next owner resumes, R27); on
    dfcc5af the driver waited for its failed report forever and detach with it (HUNG)."""
    from inbox_core.shell import LoopAgent, SqliteLog
    from inbox_core.shell.stores.writers import ThreadWriter

    path = tmp_path / "agents.db"

    async def main() -> None:
        writer = ThreadWriter()
        log = SqliteLog(path, agent_id="z")
        try:
            agent = LoopAgent(RecordingHost("z", delay=0.5), log=log, writer=writer)
            agent.followup(message("m1", "hello"))
            while type(agent.state.awaiting).__name__ != "AwaitStep":
                await asyncio.sleep(0.01)
            conn = sqlite3.connect(path, isolation_level=None)
            conn.execute(
                "CREATE TRIGGER disk_full BEFORE INSERT ON events "
                "BEGIN SELECT RAISE(ABORT, 'disk full'); END"
            )
            conn.close()
            while agent.stopped is None:
                await asyncio.sleep(0.01)
            assert isinstance(agent.stopped, LogUnavailable)
            await asyncio.wait_for(agent.detach(), 2)
            assert not log.owned, "R29: a detached agent releases its log"
        finally:
            await writer.aclose()
            log.close()

    asyncio.run(main())


def test_R37_serve_exits_0_on_sigterm_after_an_agent_stopped_mid_turn(tmp_path: Path) -> None:
    """R37: ``inbox-core serve`` whose agent stopped because its step report could not be
    written ("disk full") still detaches every agent and exits 0 on SIGTERM (on dfcc5af it
    never exited: HUNG)."""
    path = tmp_path / "agents.db"
    trace = tmp_path / "trace.jsonl"
    store = SqliteStore(path)
    try:
        with fleet(f"sqlite:{path}", tmp_path) as ships:
            worker = ships.serve(WORKER_HOSTS_DELAY="1", WORKER_HOSTS_TRACE=str(trace))
            post_followup(store, "z", "m1")
            wait_for(
                lambda: any(t["hook"] == "run_step" for t in read_trace(trace)),
                30,
                "z's step",
                ships,
            )
            conn = sqlite3.connect(path, isolation_level=None)
            conn.execute(
                "CREATE TRIGGER disk_full BEFORE INSERT ON events "
                "BEGIN SELECT RAISE(ABORT, 'disk full'); END"
            )
            conn.close()
            wait_for(lambda: "agent 'z' stopped" in worker.text(), 10, "z stopped", ships)
            codes = ships.terminate(timeout=5)
            assert codes == {worker.name: 0}, ships.summary()
    finally:
        store.close()
