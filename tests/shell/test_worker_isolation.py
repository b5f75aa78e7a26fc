"""A worker's agents cost only themselves (R37 v4, issue 28 items 12, 14 and 16).

A factory or hook that raises anything (``SystemExit``, ``KeyboardInterrupt``, any
``BaseException``) costs its agent only; ``LoopAgent.detach(grace=...)`` abandons a hook
that ignores its abort signal and releases the log without it; the worker's ``posts``
statistic counts only posts whose write was durable.
"""

from __future__ import annotations

import asyncio
import json
import signal
import sqlite3
import uuid
from pathlib import Path
from typing import Any

import pytest

from inbox_core import ErrorReason, InvalidInput, TurnEnded, followup
from inbox_core.shell import (
    AbortSignal,
    EchoHost,
    LogOwned,
    LoopAgent,
    PostApplied,
    PostPending,
    SqliteLog,
    SqliteStore,
    Worker,
)
from inbox_core.shell.stores.writers import ThreadWriter

from .support import msg, run_async
from .test_worker import until
from .test_workers_crash import backend_store, fleet, post_followup, read_log, wait_for


class Unusual(BaseException):
    """Neither an Exception nor SystemExit/KeyboardInterrupt: still only its agent's."""


def error_codes(store: SqliteStore, agent: str) -> list[str]:
    return [
        e.reason.code
        for e in read_log(store, agent)
        if isinstance(e, TurnEnded) and isinstance(e.reason, ErrorReason)
    ]


class Raising(EchoHost):
    def __init__(self, hook: str, error: BaseException) -> None:
        super().__init__()
        self.hook, self.error = hook, error

    async def pre_step(self, turn: int, step: int, messages: Any, signal: AbortSignal) -> Any:
        if self.hook == "pre_step":
            raise self.error
        return await super().pre_step(turn, step, messages, signal)

    async def run_step(self, turn: int, step: int, signal: AbortSignal) -> Any:
        if self.hook == "run_step":
            raise self.error
        return await super().run_step(turn, step, signal)


@run_async
async def test_R37_a_factory_or_hook_raising_any_base_exception_costs_only_its_agent(
    tmp_path: Path,
) -> None:
    """R37, R33: factories raising ``SystemExit``, ``GeneratorExit`` or a bare
    ``BaseException`` subclass count as that agent's failed opening (its post waits); hooks
    raising them end that agent's turn with the exception's class name as the code; the
    worker serves the others and stops when asked. (A factory's ``GeneratorExit`` ended the
    whole worker, a hook's killed the agent's driver with its turn left open: both were
    taken for the coroutine being closed.)"""
    store = SqliteStore(tmp_path / "x.db")
    plan: dict[str, Any] = {
        "factory-exit": SystemExit(2),
        "factory-unusual": Unusual("no host"),
        "factory-closing": GeneratorExit("no host"),
        "step-exit": Raising("run_step", SystemExit("step")),
        "pre-unusual": Raising("pre_step", Unusual("pre")),
        "step-closing": Raising("run_step", GeneratorExit("step")),
    }

    def factory(agent_id: str) -> Any:
        made = plan.get(agent_id, EchoHost())
        if isinstance(made, BaseException):
            raise made
        return made

    worker = Worker(store, factory, idle_seconds=60, poll_seconds=0.02)
    running = asyncio.ensure_future(worker.run())
    try:
        receipts = {a: store.post(a, followup(msg(a))) for a in [*plan, "fine"]}
        hooks = ("step-exit", "pre-unusual", "step-closing")
        for agent in ("fine", *hooks):
            assert await store.wait(receipts[agent], timeout=5) == PostApplied()
        await until(lambda: worker.stats().failed >= 3)
        for agent in hooks:
            await until(lambda a=agent: worker.agents[a].status == "idle")  # type: ignore[misc]
            await worker.agents[agent].durable()
        assert not running.done(), "the worker must survive its agents"
        assert store.outcome(receipts["factory-exit"]) == PostPending()
        assert store.outcome(receipts["factory-unusual"]) == PostPending()
        assert store.outcome(receipts["factory-closing"]) == PostPending()
        assert error_codes(store, "step-exit") == ["SystemExit"]
        assert error_codes(store, "pre-unusual") == ["Unusual"]
        assert error_codes(store, "step-closing") == ["GeneratorExit"]
        assert error_codes(store, "fine") == []
    finally:
        worker.stop()
        await running
        store.close()


def test_R37_serve_survives_factories_and_hooks_raising_system_exit_or_keyboard_interrupt(
    request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    """R37 (issue 28 item 14), a real ``inbox-core serve``: its factory raises SystemExit
    for one agent and KeyboardInterrupt for another, its hooks raise them for two more;
    serve keeps serving (the fine agent's post is applied after all of them), the hooks'
    turns end with those codes, and SIGTERM still exits 0."""
    run = uuid.uuid4().hex[:6]
    plan = {
        f"{run}-fx": "factory:SystemExit",
        f"{run}-fk": "factory:KeyboardInterrupt",
        f"{run}-hx": "run_step:SystemExit",
        f"{run}-hk": "pre_step:KeyboardInterrupt",
    }
    with (
        backend_store("sqlite", request, tmp_path) as (store, spec),
        fleet(spec, tmp_path, idle=600.0) as ships,
    ):
        proc = ships.serve(WORKER_HOSTS_RAISE=json.dumps(plan))
        receipts = {agent: post_followup(store, agent, f"{agent}-m") for agent in plan}
        wait_for(lambda: "could not be opened" in proc.text(), 30, "a refused opening", ships)
        fine = post_followup(store, f"{run}-fine", "fine-m")
        wait_for(lambda: store.outcome(fine) == PostApplied(), 30, "the fine post", ships)
        for agent in (f"{run}-hx", f"{run}-hk"):
            wait_for(lambda a=agent: error_codes(store, a), 30, f"{agent}'s turn", ships)  # type: ignore[misc]
        assert proc.popen.poll() is None, ships.summary()
        assert error_codes(store, f"{run}-hx") == ["SystemExit"]
        assert error_codes(store, f"{run}-hk") == ["KeyboardInterrupt"]
        assert store.outcome(receipts[f"{run}-fx"]) == PostPending()
        assert store.outcome(receipts[f"{run}-fk"]) == PostPending()
        for error in ("SystemExit", "KeyboardInterrupt"):
            assert f"could not be opened ({error}" in proc.text(), ships.summary()
        proc.popen.send_signal(signal.SIGTERM)
        assert proc.popen.wait(30) == 0, ships.summary()


# ------------------------------------------------------------------------ detach


class Deaf(EchoHost):
    """``run_step`` ignores its abort signal; ``swallow``: every cancel too."""

    def __init__(self, *, swallow: bool = False) -> None:
        super().__init__()
        self.swallow = swallow
        self.entered = asyncio.Event()
        self.cancels = 0

    async def run_step(self, turn: int, step: int, signal: AbortSignal) -> Any:
        self.entered.set()
        while True:
            try:
                await asyncio.sleep(3600)
            except asyncio.CancelledError:
                self.cancels += 1
                if not self.swallow:
                    raise


@pytest.mark.parametrize("swallow", [False, True])
@run_async
async def test_R29_R37_detach_with_a_grace_abandons_a_hook_that_ignores_its_signal(
    tmp_path: Path, swallow: bool
) -> None:
    """R29, R37: ``detach(grace=0.1)`` with a hook that ignores the tripped signal returns
    after the grace, the hook cancelled (once; one that swallows it is left running), the
    log released: another owner acquires at once and resumes the turn as after a crash."""
    path = tmp_path / "a.db"
    host = Deaf(swallow=swallow)
    agent = LoopAgent(host, log=SqliteLog(path))
    agent.followup(msg("m1"))
    await asyncio.wait_for(host.entered.wait(), 5)
    await asyncio.wait_for(agent.detach(grace=0.1), 5)
    assert host.cancels == 1
    assert agent.detached
    with SqliteLog(path) as log:
        nxt = LoopAgent(EchoHost(), log=log)  # LogOwned if the log were still held
        await nxt.when_idle()
        ends = [e for e in log.read() if isinstance(e, TurnEnded)]
        assert [type(e.reason).__name__ for e in ends][:1] == ["InterruptedReason"]
        await nxt.detach()
    host.swallow = False  # the abandoned task still runs: let asyncio.run's cancel end it


@run_async
async def test_R29_a_second_detach_with_grace_0_abandons_while_the_first_waits(
    tmp_path: Path,
) -> None:
    """R29, R37: ``detach()`` (no grace) waits for the hook; ``detach(grace=0)`` called
    meanwhile abandons it at once: both return and the log is released."""
    path = tmp_path / "a.db"
    host = Deaf(swallow=True)
    agent = LoopAgent(host, log=SqliteLog(path))
    agent.followup(msg("m1"))
    await asyncio.wait_for(host.entered.wait(), 5)
    patient = asyncio.ensure_future(agent.detach())
    await asyncio.sleep(0.05)
    assert not patient.done()
    with pytest.raises(LogOwned):
        SqliteLog(path).acquire()
    await asyncio.wait_for(agent.detach(grace=0), 5)
    with SqliteLog(path) as log:
        log.acquire()
        log.release()
    patient.cancel()
    host.swallow = False  # the abandoned task still runs: let asyncio.run's cancel end it


@pytest.mark.parametrize(
    "grace",
    [-1, float("nan"), float("inf"), 2**1100, 1e10, True, "1"],
    ids=["negative", "nan", "inf", "huge-int", "past-max", "bool", "text"],
)
@run_async
async def test_R26_detach_refuses_a_bad_grace(tmp_path: Path, grace: Any) -> None:
    """R26: a grace that is no number of seconds in [0, 1e9] is InvalidInput; nothing is
    detached."""
    agent = LoopAgent(EchoHost(), log=SqliteLog(tmp_path / "a.db"))
    with pytest.raises(InvalidInput, match="grace"):
        await agent.detach(grace=grace)
    assert not agent.detached
    await agent.detach()


# ---------------------------------------------------------------- posts counted


@run_async
async def test_R37_the_posts_statistic_counts_only_durable_posts(tmp_path: Path) -> None:
    """R37, R35 (issue 28 item 16): a post whose write failed ("disk full") was decided by
    nobody: neither the agent's ``posts_decided`` nor the worker's ``posts`` count it; the
    post stays pending for the next owner."""
    path = tmp_path / "agents.db"
    store = SqliteStore(path)
    worker = Worker(store, lambda a: EchoHost(), idle_seconds=60, poll_seconds=0.05)
    running = asyncio.ensure_future(worker.run())
    try:
        first = store.post("x", followup(msg("first")))
        assert await store.wait(first, timeout=5) == PostApplied()
        await until(lambda: worker.stats().posts == 1)
        x = worker.agents["x"]
        await until(lambda: x.status == "idle")
        conn = sqlite3.connect(path, isolation_level=None)
        conn.execute(
            "CREATE TRIGGER disk_full BEFORE INSERT ON events "
            "BEGIN SELECT RAISE(ABORT, 'disk full'); END"
        )
        conn.close()
        second = store.post("x", followup(msg("second")))
        await until(lambda: x.stopped is not None)
        assert x.posts_decided == 1
        assert worker.stats().posts == 1
        await until(lambda: "x" not in worker.agents)  # let go: counted from the released
        await asyncio.sleep(0.1)
        assert worker.stats().posts == 1
        assert store.outcome(second) == PostPending()
    finally:
        worker.stop()
        await running
        store.close()


def test_R37_a_thread_writer_agent_counts_a_post_once_durable(tmp_path: Path) -> None:
    """R37: on a ThreadWriter, ``posts_decided`` moves when the post's write is adopted."""

    async def main() -> None:
        store = SqliteStore(tmp_path / "a.db")
        writer = ThreadWriter()
        log = store.log("a")
        try:
            agent = await LoopAgent.open(EchoHost(), log=log, writer=writer)
            receipt = store.post("a", followup(msg("m")))
            assert await store.wait(receipt, timeout=5) == PostApplied()
            await agent.durable()
            assert agent.posts_decided == 1
            await agent.detach()
        finally:
            await writer.aclose()
            log.close()
            store.close()

    asyncio.run(main())
