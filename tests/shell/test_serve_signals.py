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

    import asyncio

    events = asyncio.run(reopen())
    ends = [e for e in events if isinstance(e, TurnEnded)]
    assert ends, "the abandoned turn must be closed by the next owner"
    assert isinstance(ends[0].reason, InterruptedReason)
    assert replay(events).status == "idle"


@pytest.mark.parametrize("ignore", ["sleep", "swallow", "thread"])
def test_R37_R29_serve_abandons_a_hook_that_ignores_its_abort_signal_after_the_grace(
    ignore: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    """R37, R29, R27: serve's host ignores the turn's abort signal in ``run_step`` (an hour's
    sleep; one that swallows every cancel; one in a worker thread). On SIGTERM serve waits
    ``--grace 1`` s, abandons the hook (a cancel it may ignore too), releases the log and
    exits 0; the next owner opens the agent at once and closes the turn ``interrupted``."""
    trace = tmp_path / "trace.jsonl"
    agent = f"ign-{uuid.uuid4().hex[:8]}"
    with (
        backend_store("sqlite", request, tmp_path) as (store, spec),
        fleet(spec, tmp_path) as ships,
    ):
        proc = ships.serve(
            "--grace", "1", WORKER_HOSTS_IGNORE=ignore, WORKER_HOSTS_TRACE=str(trace)
        )
        receipt = post_followup(store, agent, "m1")
        wait_for(lambda: entered(trace, agent), 30, "the ignoring run_step", ships)
        assert store.outcome(receipt) == PostApplied()
        proc.popen.send_signal(signal.SIGTERM)
        code = exit_code(ships, proc, 30)
        if code != 0:
            pytest.fail(f"serve must exit 0 after the grace, got {code}\n{ships.summary()}")
        assert "abandoned" in proc.text(), ships.summary()
        if ignore != "thread":  # a thread cannot be cancelled; the coroutines were
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
        proc = ships.serve(
            "--grace", "1", WORKER_HOSTS_IGNORE="swallow", WORKER_HOSTS_TRACE=str(trace)
        )
        post_followup(store, agent, "m1")
        wait_for(lambda: entered(trace, agent), 30, "the ignoring run_step", ships)
        proc.popen.send_signal(signal.SIGTERM)
        code = exit_code(ships, proc, 30)
        assert code == 0, ships.summary()
        holder = execute(store, "SELECT owner FROM inbox_core_owners WHERE agent_id = %s", agent)
        assert holder == [(None,)], f"R29: the lease must be released, found {holder}"
        resumed_as_after_a_crash(store, agent)


def test_R37_a_second_signal_abandons_the_ignoring_hook_at_once(
    request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    """R37: with ``--grace 600`` a second SIGINT cuts the grace short: the hook (which
    swallows every cancel) is abandoned at once, the log released, and serve exits 0."""
    trace = tmp_path / "trace.jsonl"
    agent = f"hurry-{uuid.uuid4().hex[:8]}"
    with (
        backend_store("sqlite", request, tmp_path) as (store, spec),
        fleet(spec, tmp_path) as ships,
    ):
        proc = ships.serve(
            "--grace", "600", WORKER_HOSTS_IGNORE="swallow", WORKER_HOSTS_TRACE=str(trace)
        )
        post_followup(store, agent, "m1")
        wait_for(lambda: entered(trace, agent), 30, "the ignoring run_step", ships)
        proc.popen.send_signal(signal.SIGTERM)
        time.sleep(0.3)
        assert proc.popen.poll() is None, "the grace is 600 s: still waiting for the hook"
        proc.popen.send_signal(signal.SIGINT)
        code = exit_code(ships, proc, 30)
        assert code == 0, ships.summary()
        resumed_as_after_a_crash(store, agent)


def test_R37_a_hook_that_blocks_the_event_loop_ends_serve_by_the_watchdog(
    request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    """R37: a hook that blocks the event loop itself (``time.sleep``) cannot be abandoned
    from inside the loop: the watchdog ends serve (exit 1, saying why) once the loop has not
    run for max(grace, 5) s after the signal; the SQLite lock died with the process, so the
    next owner resumes the agent at once."""
    trace = tmp_path / "trace.jsonl"
    agent = f"loop-{uuid.uuid4().hex[:8]}"
    with (
        backend_store("sqlite", request, tmp_path) as (store, spec),
        fleet(spec, tmp_path) as ships,
    ):
        proc = ships.serve(
            "--grace", "1", WORKER_HOSTS_IGNORE="loop", WORKER_HOSTS_TRACE=str(trace)
        )
        post_followup(store, agent, "m1")
        wait_for(lambda: entered(trace, agent), 30, "the blocking run_step", ships)
        proc.popen.send_signal(signal.SIGTERM)
        code = exit_code(ships, proc, 30)
        assert code == 1, ships.summary()
        assert "event loop has not run" in proc.text(), ships.summary()
        resumed_as_after_a_crash(store, agent)


@pytest.mark.parametrize(
    ("first", "second", "delay"),
    [
        (signal.SIGTERM, signal.SIGTERM, 0.005),
        (signal.SIGTERM, signal.SIGINT, 0.01),
        (signal.SIGINT, signal.SIGINT, 0.015),
        (signal.SIGINT, signal.SIGTERM, 0.02),
    ],
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
