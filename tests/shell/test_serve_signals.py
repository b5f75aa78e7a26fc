"""How ``inbox-core serve`` ends (R37 v4, issue 28 items 12 and 13), in real processes.

A hook that ignores its abort signal is abandoned after ``--grace`` seconds (at once
on a second signal) and serve exits 0 with the log released, so the next owner resumes
the agent as after a crash (R27, R29); a hook that blocks the event loop itself ends
serve by the watchdog (exit 1, the SQLite lock dies with the process); a second SIGTERM
or SIGINT arriving milliseconds after the first still exits 0 after detaching.

Without the grace these processes never exit (the tests fail with a status ``None``);
without the process-wide handlers a second signal during shutdown kills serve (-15/-2).
"""

from __future__ import annotations

import asyncio
import signal
import subprocess
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from inbox_core import InterruptedReason, TurnEnded, replay
from inbox_core.shell import EchoHost, LoopAgent, PostApplied

from .test_workers_crash import (
    Fleet,
    Proc,
    backend_store,
    execute,
    fleet,
    post_followup,
    read_log,
    read_trace,
    wait_for,
)


def entered(trace: Path, agent: str) -> bool:
    return any(
        t["event"] == "enter" and t["hook"] == "run_step" and t["agent"] == agent
        for t in read_trace(trace)
    )


def serve_ignoring(
    ships: Fleet, store: Any, agent: str, trace: Path, *, grace: str, ignore: str
) -> Proc:
    """A serve process whose run_step ignores its abort signal (``ignore``, see
    worker_hosts), once it runs that hook for ``agent``'s first post."""
    proc = ships.serve("--grace", grace, WORKER_HOSTS_IGNORE=ignore, WORKER_HOSTS_TRACE=str(trace))
    receipt = post_followup(store, agent, "m1")
    wait_for(lambda: entered(trace, agent), 30, f"the {ignore} run_step", ships)
    assert store.outcome(receipt) == PostApplied()
    return proc


def exit_code(ships: Fleet, proc: Proc, timeout: float) -> int | None:
    try:
        return proc.popen.wait(timeout)
    except subprocess.TimeoutExpired:
        ships.note(f"{proc.name} still running after {timeout:g} s")
        return None


def resumed_as_after_a_crash(store: Any, agent: str) -> None:
    """The next owner acquires the log at once (it was released) and its Resume closes the
    abandoned turn ``interrupted`` (R27, R29)."""

    async def reopen() -> list[Any]:
        owner = LoopAgent(EchoHost(), log=store.log(agent))  # LogOwned if still held
        try:
            await owner.when_idle()
            return owner.log.read()
        finally:
            await owner.detach()
            owner.log.close()

    events = asyncio.run(reopen())
    ends = [e for e in events if isinstance(e, TurnEnded)]
    assert ends, "the abandoned turn must be closed by the next owner"
    assert isinstance(ends[0].reason, InterruptedReason)
    assert replay(events).status == "idle"


@pytest.mark.parametrize(
    ("ignore", "grace", "signals", "code", "says"),
    [
        ("sleep", "1", [signal.SIGTERM], 0, "abandoned"),
        ("swallow", "1", [signal.SIGTERM], 0, "abandoned"),
        ("thread", "1", [signal.SIGTERM], 0, "abandoned"),
        ("swallow", "600", [signal.SIGTERM, signal.SIGINT], 0, "abandoned"),
        ("loop", "1", [signal.SIGTERM], 1, "event loop has not run"),
    ],
    ids=["sleep", "swallow", "thread", "second-signal", "blocked-loop"],
)
def test_R37_R29_serve_abandons_a_hook_that_ignores_its_abort_signal(
    ignore: str,
    grace: str,
    signals: list[signal.Signals],
    code: int,
    says: str,
    request: pytest.FixtureRequest,
    tmp_path: Path,
) -> None:
    """R37, R29, R27: serve's host ignores the turn's abort signal in ``run_step`` (an hour's
    sleep; one that swallows every cancel; one in a worker thread). On SIGTERM serve waits
    ``--grace 1`` s, abandons the hook (cancelled once: the coroutines see it), releases the
    log and exits 0. With ``--grace 600`` a second signal abandons it at once. A hook that
    blocks the event loop itself cannot be abandoned from inside it: the watchdog ends serve
    (exit 1, saying why) once the loop has not run for max(grace, 5) s. Either way the next
    owner opens the agent at once (the SQLite lock was released, or died with the process)
    and closes the turn ``interrupted``."""
    trace = tmp_path / "trace.jsonl"
    agent = f"ign-{uuid.uuid4().hex[:8]}"
    with (
        backend_store("sqlite", request, tmp_path) as (store, spec),
        fleet(spec, tmp_path) as ships,
    ):
        proc = serve_ignoring(ships, store, agent, trace, grace=grace, ignore=ignore)
        for n, signum in enumerate(signals):
            if n:  # still waiting for the hook: only the second signal cuts the grace
                time.sleep(0.3)
                assert proc.popen.poll() is None, ships.summary()
            proc.popen.send_signal(signum)
        found = exit_code(ships, proc, 30)
        if found != code:
            pytest.fail(f"serve must exit {code}, got {found}\n{ships.summary()}")
        assert says in proc.text(), ships.summary()
        if ignore in ("sleep", "swallow"):  # a thread or a blocked loop sees no cancel
            assert any(t["event"] == "cancelled" for t in read_trace(trace)), ships.summary()
        resumed_as_after_a_crash(store, agent)


@pytest.mark.postgres
def test_R37_R29_on_postgres_the_abandoned_agent_s_lease_is_released(
    request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    """R37, R29: the same on PostgreSQL with a 30 s lease: after the grace the lease row is
    released (owner NULL), so the next owner need not wait the lease out."""
    trace = tmp_path / "trace.jsonl"
    agent = f"ign-{uuid.uuid4().hex[:8]}"
    with (
        backend_store("postgres", request, tmp_path) as (store, spec),
        fleet(spec, tmp_path, lease=30.0) as ships,
    ):
        proc = serve_ignoring(ships, store, agent, trace, grace="1", ignore="swallow")
        proc.popen.send_signal(signal.SIGTERM)
        code = exit_code(ships, proc, 30)
        assert code == 0, ships.summary()
        holder = execute(store, "SELECT owner FROM inbox_core_owners WHERE agent_id = %s", agent)
        assert holder == [(None,)], f"R29: the lease must be released, found {holder}"
        resumed_as_after_a_crash(store, agent)


@pytest.mark.parametrize(
    ("first", "second", "delay"),
    [
        (signal.SIGTERM, signal.SIGTERM, 0.005),
        (signal.SIGTERM, signal.SIGINT, 0.01),
        (signal.SIGINT, signal.SIGINT, 0.015),
        (signal.SIGINT, signal.SIGTERM, 0.02),
    ],
    ids=["TERM-TERM-5ms", "TERM-INT-10ms", "INT-INT-15ms", "INT-TERM-20ms"],
)
def test_R37_a_second_signal_milliseconds_after_the_first_still_exits_0(
    first: signal.Signals,
    second: signal.Signals,
    delay: float,
    request: pytest.FixtureRequest,
    tmp_path: Path,
) -> None:
    """R37 (issue 28 item 13): a second SIGTERM or SIGINT 5-20 ms after the first, while
    serve detaches, never kills it with the default action: it exits 0 and its agent's
    log is released (the next owner opens it at once)."""
    agent = f"twice-{uuid.uuid4().hex[:8]}"
    with (
        backend_store("sqlite", request, tmp_path) as (store, spec),
        fleet(spec, tmp_path, idle=600.0) as ships,
    ):
        proc = ships.serve()
        receipt = post_followup(store, agent, "m1")
        wait_for(lambda: store.outcome(receipt) == PostApplied(), 30, "m1 applied", ships)
        wait_for(lambda: replay(read_log(store, agent)).status == "idle", 30, "idle", ships)
        proc.popen.send_signal(first)
        time.sleep(delay)
        proc.popen.send_signal(second)
        code = exit_code(ships, proc, 30)
        assert code == 0, ships.summary()
        log = store.log(agent)
        try:
            log.acquire()  # LogOwned if serve had not released it
            log.release()
        finally:
            log.close()
