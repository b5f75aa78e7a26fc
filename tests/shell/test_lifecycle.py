"""when_idle, aclose, the single driver task, lazy start, driver failure (R19, R25)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import pytest

from inbox_core import (
    Completed,
    DurableEvent,
    Enter,
    Notification,
    StatusChanged,
    StepOutcome,
    TurnEnded,
    UserMessage,
    replay,
)
from inbox_core.shell import AbortSignal, DriverStopped, EchoHost, LoopAgent, MemoryLog

from .support import (
    ScriptedHost,
    capture_loop_errors,
    check_invariants,
    log_types,
    msg,
    run_async,
    settle,
    turn_ends,
)

DRIVER = "inbox_core.shell driver"


def driver_tasks() -> list[asyncio.Task[object]]:
    return [t for t in asyncio.all_tasks() if t.get_name().startswith(DRIVER) and not t.done()]


@run_async
async def test_R19_when_idle_returns_at_once_when_idle() -> None:
    """SH6, R19: an idle agent (fresh, or with only non-waking input) is idle right away."""
    agent = LoopAgent(EchoHost())
    await asyncio.wait_for(agent.when_idle(), 0.5)
    agent.queue(msg("parked"))
    agent.inject(msg("context"))
    await asyncio.wait_for(agent.when_idle(), 0.5)
    assert driver_tasks() == []


@run_async
async def test_R19_when_idle_waits_for_work_that_arrives_while_waiting() -> None:
    """SH6, R19: a followup sent during turn 1 keeps it running: when_idle waits for turn 2."""
    host = ScriptedHost()
    agent = LoopAgent(host)
    agent.followup(msg("f1"))
    waiters = [asyncio.ensure_future(agent.when_idle()) for _ in range(3)]
    pre = await host.next("pre_step")
    agent.followup(msg("f2"))
    pre.enter()
    (await host.next("run_step")).answer(Completed())
    (await host.next("turn_stopping")).answer()
    await settle()
    assert not any(w.done() for w in waiters)  # turn 2 opened inside turn 1's last report
    assert await host.complete_turn() == ["f2"]
    await asyncio.wait_for(asyncio.gather(*waiters), 1)
    assert agent.status == "idle"
    assert [t for t, _ in turn_ends(agent)] == [1, 2]


@run_async
async def test_R19_when_idle_does_not_return_on_an_idle_that_was_re_woken_at_once() -> None:
    """SH6, R19: when_idle returns with status idle; a re-wake at `idle` is waited for."""
    host = ScriptedHost()
    agent = LoopAgent(host)
    rewoken = False

    def rewake(note: Notification) -> None:
        nonlocal rewoken
        if note == StatusChanged("idle") and not rewoken:
            rewoken = True
            agent.followup(msg("again"))

    agent.subscribe(rewake)
    agent.followup(msg("f1"))
    waiter = asyncio.ensure_future(agent.when_idle())
    await host.complete_turn()
    await settle()
    assert not waiter.done()
    await host.complete_turn()
    await asyncio.wait_for(waiter, 1)
    assert agent.status == "idle"
    assert len(turn_ends(agent)) == 2


@run_async
async def test_when_idle_cancelled_by_its_caller_leaves_the_agent_working() -> None:
    """SH6: a when_idle abandoned by a timeout does not disturb the agent or later waiters."""
    agent = LoopAgent(EchoHost(delay=0.05))
    agent.followup(msg("f1"))
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(agent.when_idle(), 0.001)
    await agent.when_idle()
    assert turn_ends(agent) == [(1, {"kind": "completed"})]


@run_async
async def test_exactly_one_driver_task_while_running_and_none_while_idle() -> None:
    """SH3: one asyncio driver task while running, across consecutive turns; none when idle."""
    counts: list[int] = []

    class CountingHost(EchoHost):
        async def run_step(self, turn: int, step: int, signal: AbortSignal) -> StepOutcome:
            counts.append(len(driver_tasks()))
            return await super().run_step(turn, step, signal)

    host = CountingHost()
    agent = LoopAgent(host)
    for i in range(5):
        agent.followup(msg(f"f{i}"))
        agent.steer(msg(f"s{i}"))
        assert len(driver_tasks()) == 1
    await agent.when_idle()
    assert counts
    assert set(counts) == {1}
    await settle()
    assert driver_tasks() == []
    agent.followup(msg("later"))  # a new running interval: a new (single) driver
    assert len(driver_tasks()) == 1
    await agent.when_idle()
    check_invariants(agent)


@run_async
async def test_the_host_is_called_one_hook_at_a_time_from_one_task() -> None:
    """SH3, R23: sequential host calls: never two hooks in flight, all in the same driver task."""
    host = ScriptedHost()
    agent = LoopAgent(host)
    for i in range(3):
        agent.followup(msg(f"f{i}"))
    for _ in range(3):
        await host.complete_turn()
    await agent.when_idle()
    assert host.max_active == 1
    assert len({c.task for c in host.history}) == 1
    assert not any(c.cancelled for c in host.history)


def test_lazy_start_outside_a_running_loop() -> None:
    """SH7: commands work without a loop (R14 is synchronous); the driver starts on first await."""
    host = EchoHost()
    agent = LoopAgent(host)
    agent.followup(msg("f1"))
    assert agent.status == "running"
    assert log_types(agent)[:3] == ["agent/inbox/spliced", "turn/start", "agent/inbox/spliced"]
    assert host.calls == []

    async def main() -> None:
        await agent.when_idle()

    asyncio.run(main())
    assert turn_ends(agent) == [(1, {"kind": "completed"})]
    check_invariants(agent)


@run_async
async def test_when_idle_or_aclose_from_a_host_hook_raise_instead_of_deadlocking() -> None:
    """SH3, SH6: a hook awaiting its own turn's end would never return: RuntimeError instead."""
    seen: list[BaseException] = []

    class SelfWaiting(EchoHost):
        agent: LoopAgent

        async def run_step(self, turn: int, step: int, signal: AbortSignal) -> StepOutcome:
            for call in (self.agent.when_idle, self.agent.aclose):
                try:
                    await call()
                except RuntimeError as error:
                    seen.append(error)
            return Completed()

    host = SelfWaiting()
    agent = host.agent = LoopAgent(host)
    agent.followup(msg("f1"))
    await agent.when_idle()
    assert len(seen) == 2
    assert not agent.state.disposed  # the refused aclose did not dispose
    assert turn_ends(agent) == [(1, {"kind": "completed"})]


class FlakyLog(MemoryLog):
    """Fails the ``fail_at``-th append (1-based)."""

    def __init__(self, fail_at: int) -> None:
        super().__init__()
        self.calls = 0
        self.fail_at = fail_at

    def append(self, events: Sequence[DurableEvent]) -> None:
        self.calls += 1
        if self.calls == self.fail_at:
            raise OSError("disk full")
        super().append(events)


@run_async
async def test_a_log_failure_in_a_command_changes_nothing() -> None:
    """SH1, SH8, I11: append fails -> the command raises, state unchanged."""
    log = FlakyLog(fail_at=2)
    agent = LoopAgent(EchoHost(), log=log)
    agent.queue(msg("a"))
    before = agent.state
    with pytest.raises(OSError, match="disk full"):
        agent.followup(msg("b"))
    assert agent.state is before
    assert agent.status == "idle"
    check_invariants(agent)


@run_async
async def test_a_log_failure_in_a_report_stops_the_driver_and_a_new_agent_resumes() -> None:
    """SH8: the driver reports the failure and stops; when_idle raises; the log resumes (R27)."""
    errors = capture_loop_errors()
    log = FlakyLog(fail_at=3)  # 1: followup, 2: pre-step decision, 3: step outcome
    agent = LoopAgent(EchoHost(), log=log)
    agent.followup(msg("f1"))
    with pytest.raises(DriverStopped) as info:
        await agent.when_idle()
    assert isinstance(info.value.__cause__, OSError)
    assert [e["message"] for e in errors] == ["inbox_core.shell: the driver stopped"]
    assert agent.status == "running"  # stuck where the log is
    check_invariants(agent)
    with pytest.raises(DriverStopped):
        await agent.aclose()
    resumed = LoopAgent(EchoHost(), log=MemoryLog(log.read()))  # a copy: a new process
    await resumed.when_idle()
    # aclose's Dispose recorded turn/abort (R23 v2), so Resume ends the turn aborted (R27 v2)
    assert turn_ends(resumed) == [(1, {"kind": "aborted", "reason": {"kind": "disposed"}})]
    check_invariants(resumed)


def test_a_cancelled_driver_restarts_and_asks_again_in_a_new_loop() -> None:
    """SH8: the loop shutting down cancels the driver; a later await restarts it."""
    asked: list[tuple[str, int]] = []

    class Blocking(EchoHost):
        async def run_step(self, turn: int, step: int, signal: AbortSignal) -> StepOutcome:
            asked.append(("run_step", step))
            if len(asked) == 1:
                await asyncio.Event().wait()  # blocks until the loop is torn down
            return Completed()

    host = Blocking()

    async def first() -> LoopAgent:
        agent = LoopAgent(host)
        agent.followup(msg("f1"))
        await settle()
        return agent  # asyncio.run cancels the driver blocked in run_step

    agent = asyncio.run(first())
    assert agent.status == "running"

    async def second() -> None:
        await agent.when_idle()

    asyncio.run(second())
    assert asked == [("run_step", 1), ("run_step", 1)]
    assert turn_ends(agent) == [(1, {"kind": "completed"})]


@run_async
async def test_R27_constructing_over_a_log_resumes_and_runs_pending_work() -> None:
    """SH7, R27, D8: replay, Resume (turn/end interrupted, claim restored), then the work runs."""
    host = ScriptedHost()
    log = MemoryLog()
    crashed = LoopAgent(host, log=log)
    crashed.followup(msg("f1"))
    crashed.queue(msg("q"))
    await host.next("pre_step")  # "crash" between claim and decision: abandon the agent
    log = MemoryLog(log.read())  # what a new process finds (the crashed one still holds `log`)
    before = len(log)
    echo = EchoHost()
    agent = LoopAgent(echo, log=log)
    assert isinstance(log.read()[before], TurnEnded)
    assert turn_ends(agent)[0] == (1, {"kind": "interrupted"})
    await agent.when_idle()
    # f1 was restored to the head of next-turn and runs in turn 2; q is not waking,
    # so it stays parked (R15)
    assert [m.content[0]["text"] for m in echo.admitted] == ["f1"]
    assert [e.message.content[0]["text"] for e in agent.inbox.next_turn] == ["q"]
    assert replay(log.read()).projection() == agent.state.projection()


@run_async
async def test_D8_constructing_over_a_clean_log_appends_nothing() -> None:
    """SH7, D8: Resume on a log that needs none is a no-op: nothing appended."""
    log = MemoryLog()
    agent = LoopAgent(EchoHost(), log=log)
    agent.followup(msg("f1"))
    await agent.when_idle()
    size = len(log)
    await agent.detach()  # R29: hand the log over (a live agent still owns it)
    again = LoopAgent(EchoHost(), log=log)
    assert len(log) == size
    assert again.state.projection() == agent.state.projection()


def test_enter_passthrough_type_is_pinned() -> None:
    """R16: EchoHost enters the batch unchanged (tuple of messages)."""

    async def main() -> Enter | object:
        signal = AbortSignal(1)
        batch: tuple[UserMessage, ...] = (msg("a"),)
        return await EchoHost().pre_step(1, 1, batch, signal)

    result = asyncio.run(main())
    assert isinstance(result, Enter)
    assert [m.content[0]["text"] for m in result.messages] == ["a"]
