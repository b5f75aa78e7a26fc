"""The commit path with deferred writes (SH1, R37, issue 20): a command is reduced and
ordered when it returns, adopted (announced, handed to the host) only once durable; a failed
deferred write stops the agent and the log stays the authority."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from inbox_core import (
    Completed,
    InboxCoreError,
    LogFenced,
    TurnStarted,
    replay,
)
from inbox_core.shell import (
    AgentDetached,
    DriverStopped,
    EchoHost,
    LogUnavailable,
    LoopAgent,
    MemoryLog,
    SqliteLog,
    ThreadWriter,
)
from inbox_core.shell.stores.writers import Part, write_alone

from .support import (
    Recorder,
    ScriptedHost,
    check_invariants,
    msg,
    run_async,
    settle,
)


class GateWriter:
    """A deferred writer the test opens by hand: ``flush()`` makes the queued parts durable
    (or fails them with ``error``), in order."""

    def __init__(self) -> None:
        self.pending: list[tuple[Part, Any]] = []
        self.failed: BaseException | None = None  # as ThreadWriter: later parts fail too

    def write(self, part: Part, done: Any) -> bool:
        if part.empty and part.work is None:
            return True
        self.pending.append((part, done))
        return False

    def flush(self, count: int | None = None, error: BaseException | None = None) -> None:
        taken = self.pending[:count] if count is not None else list(self.pending)
        del self.pending[: len(taken)]
        self.failed = self.failed or error
        for part, done in taken:
            if self.failed is None:
                write_alone(part)
            done(self.failed)


@run_async
async def test_sh1_r14_r37_a_deferred_command_is_ordered_at_once_and_adopted_when_durable() -> None:
    """SH1, R13, R14, R37: followup returns with the turn reserved (status running, the input
    claimed) while its write is on its way; nothing is announced and the host is asked
    nothing until the write is durable; then the notifications come in commit order."""
    gate = GateWriter()
    log = MemoryLog()
    host = ScriptedHost()
    agent = LoopAgent(host, log=log, writer=gate)
    seen = Recorder()
    agent.subscribe(seen)
    agent.followup(msg("hello"))
    assert agent.status == "running"  # R14 holds when the command returns
    assert agent.inbox.next_turn == ()
    assert len(log) == 0  # not durable yet
    assert await host.nothing_pending()  # the host sees durable facts only
    assert seen.types == []  # nothing announced before it is durable
    agent.queue(msg("later"))  # ordered after it, reduced against the head
    assert len(agent.inbox.next_turn) == 1
    gate.flush()
    await settle()
    assert seen.types == [
        "agent/inbox/inserted",
        "agent/status",
        "agent/inbox/claimed",
        "agent/inbox/inserted",
    ]
    pre = await host.next("pre_step")
    assert pre.texts == ["hello"]
    pre.enter()
    await settle()
    assert await host.nothing_pending()
    assert len(gate.pending) == 1  # the report's write
    gate.flush()
    (await host.next("run_step")).answer(Completed())
    await settle()
    gate.flush()
    (await host.next("turn_stopping")).answer()
    await settle()
    gate.flush()
    await agent.durable()
    assert agent.status == "idle"
    assert replay(log.read()).projection() == agent.state.projection()  # I5
    check_invariants(agent)


@run_async
async def test_r37_durable_waits_for_the_writes_issued_before_it() -> None:
    """R37: ``await agent.durable()`` returns once every command issued so far is durable;
    with the inline writer at once."""
    inline = LoopAgent(EchoHost())
    inline.queue(msg("q"))
    await asyncio.wait_for(inline.durable(), 0.01)
    gate = GateWriter()
    agent = LoopAgent(EchoHost(), log=MemoryLog(), writer=gate)
    agent.queue(msg("a"))
    agent.queue(msg("b"))
    waiting = asyncio.ensure_future(agent.durable())
    await settle()
    assert not waiting.done()
    gate.flush(1)
    await settle()
    assert not waiting.done()  # the second is not durable yet
    gate.flush()
    await asyncio.wait_for(waiting, 1)
    assert len(agent.log.read()) == 2


@run_async
async def test_r37_a_failed_deferred_write_stops_the_agent_and_the_log_stays_the_authority() -> (
    None
):
    """R37, R10: a deferred write fails: that command and every one built on it are dropped,
    the state falls back to what the log holds, nothing of them is announced, every later
    command and wait raises DriverStopped (caused by the write's error); a new agent over
    the log resumes from what is durable."""
    gate = GateWriter()
    log = MemoryLog()
    agent = LoopAgent(EchoHost(), log=log, writer=gate)
    agent.queue(msg("durable"))
    gate.flush()
    await agent.durable()
    seen = Recorder()
    agent.subscribe(seen)
    durable_state = agent.state
    agent.queue(msg("lost 1"))
    agent.queue(msg("lost 2"))
    assert len(agent.inbox.next_turn) == 3
    gate.flush(1, error=LogUnavailable("the disk is full"))
    await settle()
    assert agent.state is durable_state  # the head fell back to the durable state
    assert seen.types == []
    assert isinstance(agent.stopped, LogUnavailable)
    with pytest.raises(DriverStopped) as info:
        agent.queue(msg("after"))
    assert isinstance(info.value.__cause__, LogUnavailable)
    with pytest.raises(DriverStopped):
        await agent.durable()
    with pytest.raises(DriverStopped):
        await agent.when_idle()
    gate.flush()  # the second part's outcome arrives after the failure: ignored
    assert agent.state is durable_state
    assert log.owned  # a stopped agent still holds its log: detach hands it over (R29)
    await agent.detach()
    again = LoopAgent(EchoHost(), log=log.handle())
    assert [m.message.id for m in again.inbox.next_turn] == [
        m.message.id for m in durable_state.inbox.next_turn
    ]


@run_async
async def test_r37_a_failed_report_write_trips_the_signal_and_stops_driving() -> None:
    """R37, R23: the write of a host report fails: the agent stops, the open turn's signal
    trips (the host winds down), the next hook is never called."""
    gate = GateWriter()
    host = ScriptedHost()
    agent = LoopAgent(host, log=MemoryLog(), writer=gate)
    agent.followup(msg("f"))
    gate.flush()
    pre = await host.next("pre_step")
    pre.enter()
    await settle()
    gate.flush(error=LogFenced("taken over"))
    await settle()
    assert pre.signal.aborted
    assert await host.nothing_pending()
    with pytest.raises(DriverStopped) as info:
        await agent.when_idle()
    assert isinstance(info.value.__cause__, LogFenced)


@run_async
async def test_r29_r37_detach_waits_for_accepted_writes_then_releases() -> None:
    """R29, R37: a detach keeps every command that was accepted: it waits for their writes,
    announces nothing more, and releases the log."""
    gate = GateWriter()
    log = MemoryLog()
    agent = LoopAgent(EchoHost(), log=log, writer=gate)
    seen = Recorder()
    agent.subscribe(seen)
    agent.queue(msg("accepted"))
    detaching = asyncio.ensure_future(agent.detach())
    await settle()
    assert not detaching.done()
    assert log.owned
    with pytest.raises(AgentDetached):
        agent.queue(msg("refused"))
    gate.flush()
    await asyncio.wait_for(detaching, 1)
    assert not log.owned
    assert seen.types == []  # detached: nothing announced
    assert [e.message.id for e in replay(log.read()).inbox.next_turn] != []


@run_async
async def test_r37_thread_writer_group_commits_many_agents_in_few_transactions(
    tmp_path: Path,
) -> None:
    """R37: agents of one SQLite file written through one ThreadWriter share transactions
    (far fewer groups than parts); every log replays to its agent's state (I5)."""
    writer = ThreadWriter()
    path = tmp_path / "many.db"
    agents = [
        await LoopAgent.open(EchoHost(), log=SqliteLog(path, agent_id=f"a{i}"), writer=writer)
        for i in range(40)
    ]

    async def talk(agent: LoopAgent) -> None:
        for n in range(3):
            agent.followup(msg(f"m{n}"))
            await agent.when_idle()

    await asyncio.gather(*(talk(agent) for agent in agents))
    stats = writer.stats()
    assert stats.failed == 0
    assert stats.queued == 0
    assert stats.groups < stats.parts / 3  # group commit: many parts per transaction
    for agent in agents:
        assert replay(agent.log.read()).projection() == agent.state.projection()
        assert agent.state.last_turn == 3
        await agent.detach()
    await writer.aclose()
    assert writer.closed


@run_async
async def test_r37_one_failing_agent_in_a_group_fails_alone(tmp_path: Path) -> None:
    """R37, I12: a group commit in which one agent's insert fails (a trigger refusing its
    rows): that agent stops with the typed error and writes nothing; the others commit."""
    path = tmp_path / "g.db"
    writer = ThreadWriter()
    good = await LoopAgent.open(EchoHost(), log=SqliteLog(path, agent_id="good"), writer=writer)
    bad = await LoopAgent.open(EchoHost(), log=SqliteLog(path, agent_id="bad"), writer=writer)
    with sqlite3.connect(path) as conn:
        conn.execute(
            "CREATE TRIGGER refuse BEFORE INSERT ON events WHEN NEW.agent_id = 'bad' "
            "BEGIN SELECT RAISE(ABORT, 'disk full'); END"
        )
    conn.close()
    good.queue(msg("kept"))
    bad.queue(msg("refused"))
    await good.durable()
    with pytest.raises(DriverStopped) as info:
        await bad.durable()
    assert isinstance(info.value.__cause__, LogUnavailable)
    assert "disk full" in str(info.value.__cause__)
    assert len(good.log.read()) == 1
    assert bad.log.read() == []
    await good.detach()
    await bad.detach()
    await writer.aclose()


def test_r37_the_work_flag_follows_the_log(tmp_path: Path) -> None:
    """R37: the agents table says whether a log needs an owner: 1 while a turn is open, 0
    once it ended, 1 for waking input behind a maintenance job; an agent opened over a stale
    flag corrects it (it says what its log holds, not what a dead owner last wrote)."""
    path = tmp_path / "w.db"

    def flag(agent_id: str) -> Any:
        with sqlite3.connect(path) as conn:
            row = conn.execute("SELECT work FROM agents WHERE agent_id = ?", (agent_id,))
            found = row.fetchone()
        conn.close()
        return None if found is None else found[0]

    async def scenario() -> None:
        host = ScriptedHost()
        agent = LoopAgent(host, log=SqliteLog(path, agent_id="w"))
        agent.queue(msg("quiet"))
        assert flag("w") == 0
        agent.followup(msg("go"))
        assert flag("w") == 1  # a turn is open
        assert (await host.complete_turn()) == ["quiet"]
        assert (await host.complete_turn()) == ["go"]
        await agent.when_idle()
        assert flag("w") == 0

        started = asyncio.Event()
        release = asyncio.Event()

        async def job(signal: Any) -> None:
            started.set()
            await release.wait()

        running = asyncio.ensure_future(agent.run_maintenance(job))
        await started.wait()
        agent.followup(msg("behind the job"))  # waking, opens no turn during maintenance
        assert flag("w") == 1
        release.set()
        await running
        await host.complete_turn()
        await agent.when_idle()
        assert flag("w") == 0
        await agent.detach()

    asyncio.run(scenario())
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE agents SET work = 1 WHERE agent_id = 'w'")  # a stale flag
    conn.close()
    with SqliteLog(path, agent_id="w") as log:
        LoopAgent(EchoHost(), log=log)
        assert flag("w") == 0  # corrected at construction, nothing else written


def test_r37_thread_writer_refuses_after_close() -> None:
    """R37: a closed writer refuses new parts with a typed error (nothing written)."""

    async def scenario() -> None:
        writer = ThreadWriter()
        await writer.aclose()
        log = MemoryLog()
        log.acquire()
        from inbox_core.shell.stores.writers import WriterClosed

        with pytest.raises(WriterClosed):
            writer.write(Part(log, [TurnStarted(1)]), lambda error: None)
        assert issubclass(WriterClosed, InboxCoreError)
        assert len(log) == 0

    asyncio.run(scenario())


def test_r37_a_waiting_writer_keeps_no_agent_alive(tmp_path: Path) -> None:
    """R37 (memory): once its parts are written, a ThreadWriter waiting for more holds no
    reference to the agents that sent them (a detached agent is freed at once)."""
    import gc
    import weakref

    async def scenario() -> weakref.ref[Any]:
        writer = ThreadWriter()
        agent = await LoopAgent.open(
            EchoHost(), log=SqliteLog(tmp_path / "m.db", agent_id="gone"), writer=writer
        )
        agent.queue(msg("q"))
        await agent.durable()
        await agent.detach()
        ref = weakref.ref(agent)
        del agent
        await asyncio.sleep(0.05)  # the writer thread is back waiting for work
        gc.collect()
        assert ref() is None
        await writer.aclose()
        return ref

    asyncio.run(scenario())
