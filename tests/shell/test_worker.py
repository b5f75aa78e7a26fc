"""``Worker`` in one process (R37, issue 20): placement by work, the agent limit, idle
detach, takeover of what a dead owner left, leases, stop, bad arguments, and the
``inbox-core serve`` command line. Multi-process kills live in test_workers_crash.py."""

from __future__ import annotations

import asyncio
import sqlite3
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest

from inbox_core import InvalidInput, followup, queue, replay
from inbox_core.shell import (
    EchoHost,
    LoopAgent,
    PostApplied,
    PostgresStore,
    SqliteLog,
    SqliteStore,
    Worker,
)

from .support import ScriptedHost, msg, run_async


async def until(condition: Any, timeout: float = 5.0) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not condition():
        assert loop.time() < deadline, "condition not reached in time"
        await asyncio.sleep(0.01)


class Counting:
    """A host factory that counts the hosts it made and the agents served at once."""

    def __init__(self, delay: float = 0.0) -> None:
        self.delay = delay
        self.made: list[str] = []
        self.active: set[str] = set()
        self.most = 0

    def __call__(self, agent_id: str) -> Any:
        self.made.append(agent_id)
        factory = self

        class Host(EchoHost):
            async def run_step(self, turn: int, step: int, signal: Any) -> Any:
                factory.active.add(agent_id)
                factory.most = max(factory.most, len(factory.active))
                try:
                    return await super().run_step(turn, step, signal)
                finally:
                    factory.active.discard(agent_id)

        return Host(delay=self.delay)


@run_async
async def test_r37_a_worker_serves_every_agent_with_a_post_and_detaches_idle_ones(
    tmp_path: Path,
) -> None:
    """R35, R37: no list of agents: the worker opens each agent that has a post, applies it,
    drives the turn, and detaches the agent once it stayed idle; stats count it all."""
    store = SqliteStore(tmp_path / "w.db")
    hosts = Counting()
    worker = Worker(store, hosts, idle_seconds=0.2, poll_seconds=0.05)
    running = asyncio.ensure_future(worker.run())
    receipts = [store.post(f"a{i}", followup(msg(f"hi {i}"))) for i in range(12)]
    for receipt in receipts:
        assert isinstance(await store.wait(receipt, timeout=5), PostApplied)
    await until(lambda: worker.stats().detached == 12)
    stats = worker.stats()
    assert (stats.opened, stats.agents, stats.posts, stats.failed) == (12, 0, 12, 0)
    assert sorted(hosts.made) == sorted(f"a{i}" for i in range(12))
    worker.stop()
    await running
    for i in range(12):
        with SqliteLog(store.path, agent_id=f"a{i}") as log:
            state = replay(log.read())
            assert (state.status, state.last_turn) == ("idle", 1)
    store.close()


@run_async
async def test_r27_r37_a_worker_takes_over_the_open_turn_a_dead_owner_left(
    tmp_path: Path,
) -> None:
    """R27, R37: an owner leaves a turn open and goes (its lock released, no detach: what a
    crash leaves, as far as the store can tell); a worker finds the agent by its work flag,
    resumes it (the turn closes interrupted, the undecided claim runs again) and counts a
    takeover."""
    path = tmp_path / "t.db"
    store = SqliteStore(path)
    host = ScriptedHost()
    log = SqliteLog(path, agent_id="orphan")
    owner = LoopAgent(host, log=log)
    owner.followup(msg("unanswered"))
    await host.next("pre_step")  # the claim is undecided
    log.release()  # the owner is gone; its driver waits forever on a dead host
    echo = Counting()
    worker = Worker(store, echo, idle_seconds=5, poll_seconds=0.05)
    running = asyncio.ensure_future(worker.run())
    await until(lambda: worker.stats().takeovers == 1)
    served = worker.agents["orphan"]
    await served.when_idle()
    texts = [e.message.content[0]["text"] for e in replay(served.log.read()).inbox.next_turn]
    assert texts == []
    ends = [e for e in served.log.read() if type(e).__name__ == "TurnEnded"]
    assert [(e.turn, e.reason.kind) for e in ends] == [(1, "interrupted"), (2, "completed")]
    worker.stop()
    await running
    store.close()


@run_async
async def test_r37_a_worker_at_its_limit_takes_no_more_work(tmp_path: Path) -> None:
    """R37: max_agents bounds how many agents a worker serves at once; the rest wait (for
    another worker, or until agents are detached) and are served in the end."""
    store = SqliteStore(tmp_path / "m.db")
    hosts = Counting(delay=0.05)
    worker = Worker(store, hosts, max_agents=2, idle_seconds=0.05, poll_seconds=0.02)
    running = asyncio.ensure_future(worker.run())
    receipts = [store.post(f"b{i}", followup(msg("work"))) for i in range(6)]
    peak = 0
    while not all(isinstance(store.outcome(r), PostApplied) for r in receipts):
        peak = max(peak, worker.stats().agents)
        await asyncio.sleep(0.005)
    await until(lambda: worker.stats().opened == 6)
    assert peak <= 2
    assert hosts.most <= 2
    worker.stop()
    await running
    store.close()


@run_async
async def test_r29_r37_two_workers_in_one_process_serve_each_agent_once(
    tmp_path: Path,
) -> None:
    """R29, R37: two workers over one store: every agent is served by one of them (the
    other loses the race quietly), every post is applied once."""
    store = SqliteStore(tmp_path / "two.db")
    first, second = Counting(), Counting()
    workers = [
        Worker(store, first, idle_seconds=0.1, poll_seconds=0.02, name="one"),
        Worker(store, second, idle_seconds=0.1, poll_seconds=0.02, name="two"),
    ]
    runs = [asyncio.ensure_future(w.run()) for w in workers]
    receipts = [store.post(f"c{i}", followup(msg("x"))) for i in range(20)]
    for receipt in receipts:
        assert isinstance(await store.wait(receipt, timeout=5), PostApplied)
    for i in range(20):
        with SqliteLog(store.path, agent_id=f"c{i}") as log:
            assert replay(log.read()).last_turn == 1  # one turn: applied once
    for worker in workers:
        worker.stop()
    await asyncio.gather(*runs)
    assert len(first.made) + len(second.made) >= 20
    store.close()


@run_async
async def test_r29_stop_detaches_every_agent_and_keeps_its_inbox(tmp_path: Path) -> None:
    """R29, R37: stop() detaches every agent (a graceful shutdown: nothing cancelled, the
    inbox stays in the log, the locks are released) and run() returns."""
    store = SqliteStore(tmp_path / "s.db")
    worker = Worker(store, lambda agent_id: EchoHost(), idle_seconds=60, poll_seconds=0.05)
    running = asyncio.ensure_future(worker.run())
    woken = store.post("keeper", followup(msg("wake")))
    assert isinstance(await store.wait(woken, timeout=5), PostApplied)
    await until(lambda: "keeper" in worker.agents)
    await worker.agents["keeper"].when_idle()
    store.post("keeper", queue(msg("stay")))  # not waking: it waits in the inbox
    await until(lambda: worker.stats().posts == 2)
    worker.stop()
    await asyncio.wait_for(running, 5)
    assert worker.agents == {}
    with SqliteLog(store.path, agent_id="keeper") as log:
        log.acquire()  # released
        state = replay(log.read())
        assert state.status == "idle"
        assert [e.message.content[0]["text"] for e in state.inbox.next_turn] == ["stay"]
    store.close()


@run_async
async def test_r37_an_agent_that_cannot_be_opened_is_left_alone(tmp_path: Path) -> None:
    """R37: a host factory that raises (or a log that cannot be read) costs that agent a
    back-off, never the worker; the others are served."""
    store = SqliteStore(tmp_path / "f.db")

    def factory(agent_id: str) -> Any:
        if agent_id == "broken":
            raise RuntimeError("no host for you")
        return EchoHost()

    worker = Worker(store, factory, idle_seconds=60, poll_seconds=0.02)
    running = asyncio.ensure_future(worker.run())
    store.post("broken", followup(msg("x")))
    fine = store.post("fine", followup(msg("y")))
    assert isinstance(await store.wait(fine, timeout=5), PostApplied)
    await until(lambda: worker.stats().failed >= 1)
    await asyncio.sleep(1.2)  # 60 polls: backed off 0.5 s, then 1 s, not tried at each
    assert "broken" not in worker.agents
    assert worker.stats().failed <= 3
    worker.stop()
    await running
    store.close()


def test_r26_bad_worker_arguments_raise_invalid_input(tmp_path: Path) -> None:
    """R26: every bad argument is InvalidInput when the worker is built."""
    store = SqliteStore(tmp_path / "a.db")
    for options in (
        {"max_agents": 0},
        {"max_agents": True},
        {"idle_seconds": -1},
        {"poll_seconds": float("nan")},
        {"lease_seconds": float("inf")},
    ):
        with pytest.raises(InvalidInput):
            Worker(store, lambda agent_id: EchoHost(), **options)
    with pytest.raises(InvalidInput):
        Worker(store, "not callable")  # type: ignore[arg-type]
    with pytest.raises(InvalidInput):
        Worker(object(), lambda agent_id: EchoHost())  # type: ignore[arg-type]
    with pytest.raises(InvalidInput):
        Worker("mysql://nope", lambda agent_id: EchoHost())
    store.close()


@pytest.mark.postgres
@run_async
async def test_r29_r37_a_lease_taken_over_is_let_go(pg: str) -> None:
    """R29, R37: an agent whose lease another owner took (after it lapsed while the worker
    was paused) is let go at the next heartbeat; the worker never writes to it again."""
    store = PostgresStore(pg)
    agent_id = f"lease-{uuid.uuid4().hex}"
    worker = Worker(
        store, lambda a: EchoHost(), idle_seconds=60, poll_seconds=0.05, lease_seconds=0.3
    )
    running = asyncio.ensure_future(worker.run())
    receipt = store.post(agent_id, followup(msg("x")))
    assert isinstance(await store.wait(receipt, timeout=5), PostApplied)
    served = worker.agents[agent_id]
    import psycopg

    with psycopg.connect(pg, autocommit=True) as conn:  # another owner took it (epoch + 1)
        conn.execute(
            "UPDATE inbox_core_owners SET epoch = epoch + 1, owner = 'thief', "
            "expires_at = clock_timestamp() + interval '60 seconds' WHERE agent_id = %s",
            (agent_id,),
        )
    await until(lambda: agent_id not in worker.agents)
    assert worker.stats().failed >= 1
    with pytest.raises(Exception, match=r"detached|stopped"):  # never written either way
        served.queue(msg("never written"))
    worker.stop()
    await running
    store.close()


@pytest.mark.postgres
@run_async
async def test_r29_r37_leases_are_renewed_on_time_whatever_the_poll(pg: str) -> None:
    """R29, R37: the worker renews every third of a lease, also while it waits ``poll_seconds``
    for work: a lease shorter than that wait lapsed between two looks (at the default 1 s
    poll, any lease under about 1 s), so that other workers could take its agents over."""
    store = PostgresStore(pg)
    agent_id = f"beat-{uuid.uuid4().hex}"
    worker = Worker(
        store, lambda a: EchoHost(), idle_seconds=600, poll_seconds=600, lease_seconds=1.5
    )
    running = asyncio.ensure_future(worker.run())
    try:
        receipt = store.post(agent_id, followup(msg("x")))
        assert isinstance(await store.wait(receipt, timeout=10), PostApplied)
        for _ in range(4):  # well past the lease, with no post to wake the worker
            await asyncio.sleep(1.0)
            assert await asyncio.to_thread(store.has_owner, agent_id), "the lease lapsed"
        assert agent_id in worker.agents
    finally:
        worker.stop()
        await running
        store.close()


@pytest.mark.postgres
def test_r35_v4_r37_one_unrenewable_lease_row_stops_no_other_renewal(pg: str) -> None:
    """R35 v4, R37: a worker renews all its leases in one statement; when a foreign writer
    made one agent's row unrenewable (a lease no interval holds), that statement failed for
    every agent, and every lease of the worker lapsed. Now each is renewed alone then: only
    that agent is reported lost."""
    import psycopg

    store = PostgresStore(pg)
    bad, good = (f"renew-{uuid.uuid4().hex}" for _ in range(2))
    logs = [store.log(agent, lease_seconds=30) for agent in (bad, good)]
    for log in logs:
        log.acquire()
    assert store.renew(logs) == set()
    with psycopg.connect(pg, autocommit=True) as conn:
        conn.execute(
            "UPDATE inbox_core_owners SET lease_seconds = 'Infinity' WHERE agent_id = %s", (bad,)
        )
    assert store.renew(logs) == {bad}
    logs[1].renew()  # still its owner
    for log in logs:
        log.close()
    store.close()


# --------------------------------------------------------------- command line


def serve(*argv: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "inbox_core", "serve", *argv],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=cwd,
        check=False,
    )


@pytest.mark.parametrize(
    ("host", "says"),
    [
        ("no_colon", "MODULE:FACTORY"),
        ("no_such_module_xyz:make", "cannot import module"),
        ("inbox_core.shell.echo:nothing_here", "has no attribute"),
        ("inbox_core.shell.echo:__doc__", "is not callable"),
    ],
)
def test_r37_serve_explains_a_bad_host(tmp_path: Path, host: str, says: str) -> None:
    """R37: --host must name a callable MODULE:FACTORY; anything else is a usage error
    (exit 2) that says what is wrong, before the store is touched."""
    done = serve(f"sqlite:{tmp_path / 'x.db'}", "--host", host)
    assert done.returncode == 2, done.stderr
    assert says in done.stderr
    assert "Traceback" not in done.stderr
    assert not (tmp_path / "x.db").exists()


def test_r37_serve_refuses_a_bad_store(tmp_path: Path) -> None:
    """R37: a STORE that is neither sqlite:PATH nor postgresql:// is a usage error; a file
    that is no inbox-core log is a typed failure (exit 1), left untouched."""
    done = serve("mysql://x", "--host", "inbox_core.shell.echo:echo_host")
    assert done.returncode == 2
    other = tmp_path / "other.db"
    with sqlite3.connect(other) as conn:
        conn.execute("CREATE TABLE mine (x)")
    conn.close()
    before = other.read_bytes()
    done = serve(f"sqlite:{other}", "--host", "inbox_core.shell.echo:echo_host")
    assert done.returncode == 1, done.stderr
    assert "IncompatibleLog" in done.stderr
    assert "Traceback" not in done.stderr
    assert other.read_bytes() == before


def test_r37_serve_imports_a_factory_from_the_current_directory(tmp_path: Path) -> None:
    """R37: MODULE is imported with the current directory on the path (as python -m)."""
    (tmp_path / "my_hosts.py").write_text(
        "from inbox_core.shell import EchoHost\n"
        "def make(agent_id):\n"
        "    return EchoHost()\n"
        "raise SystemExit(7)  # proves the import happened\n"
    )
    done = serve(f"sqlite:{tmp_path / 'y.db'}", "--host", "my_hosts:make", cwd=tmp_path)
    assert done.returncode == 2
    assert "importing 'my_hosts' raised SystemExit" in done.stderr


def test_r37_the_worker_s_stats_line_says_what_it_did() -> None:
    """R37: the stats line names the served count, the limit, takeovers, races, failures,
    posts and the write latency (one line a minute from inbox-core serve)."""
    worker = Worker(
        SqliteStore(Path(__import__("tempfile").mkdtemp()) / "z.db"), lambda a: EchoHost()
    )
    line = worker.stats().line()
    for word in ("serving 0/1000", "takeovers 0", "lost races 0", "failed 0", "posts 0"):
        assert word in line
    assert "latency p50" in line
    worker.store.close()
