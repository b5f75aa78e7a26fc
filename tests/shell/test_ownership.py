"""Failure tests of log ownership (R29) and handover (R27): races, a second agent on a live
log, a paused owner, a server restart, detach at every phase, a v1 file."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from inbox_core import (
    Completed,
    LogFenced,
    LogOwned,
    StepFinished,
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
    PostgresLog,
    SqliteLog,
)

from .support import ScriptedHost, check_invariants, log_json, msg, run_async, settle, turn_ends

CHILD = Path(__file__).with_name("owner_child.py")
ROOT = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}


def spawn(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, str(CHILD), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=ENV,
    )


def line(proc: subprocess.Popen[str]) -> str:
    assert proc.stdout is not None
    text = proc.stdout.readline().strip()
    if not text:
        _, err = proc.communicate(timeout=10)
        raise AssertionError(f"child said nothing (exit {proc.returncode}):\n{err[-3000:]}")
    return text


# ------------------------------------------------------------------ races


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_R29_racing_processes_exactly_one_wins(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """R29: four processes acquire the same agent at once: one WON, three LogOwned; the log
    still replays."""
    if kind == "sqlite":
        store, agent = str(tmp_path / "race.db"), "default"
        with SqliteLog(store) as seed:
            LoopAgent(EchoHost(), log=seed).queue(msg("parked"))
    else:
        store, agent = "pg:" + request.getfixturevalue("pg"), f"race-{uuid.uuid4().hex}"
    children = [spawn("race", store, agent, str(tmp_path)) for _ in range(4)]
    try:
        assert [line(c) for c in children] == ["READY"] * 4
        (tmp_path / "go").touch()
        said = sorted(line(c) for c in children)
    finally:
        (tmp_path / "done").touch()
        for child in children:
            child.wait(30)
    assert said == ["OWNED LogOwned"] * 3 + ["WON"]
    if kind == "sqlite":
        with SqliteLog(store) as log:
            replay(log.read())


@run_async
async def _second_agent_on_a_live_log(log: Any, another: Any) -> None:
    host = ScriptedHost()
    live = LoopAgent(host, log=log)
    live.followup(msg("f1"))
    pre = await host.next("pre_step")
    before = log_json(log.read())
    with pytest.raises(LogOwned):
        LoopAgent(EchoHost(), log=another)  # a restarted worker, a second process
    assert log_json(log.read()) == before  # it wrote nothing: no Resume into a live turn
    pre.enter()
    (await host.next("run_step")).answer(Completed())
    (await host.next("turn_stopping")).answer()
    await live.when_idle()
    assert turn_ends(live) == [(1, {"kind": "completed"})]
    check_invariants(live)  # replays (the ReplayError is gone)
    await live.detach()
    resumed = LoopAgent(EchoHost(), log=another)  # now it may
    assert resumed.state.projection() == live.state.projection()


@pytest.mark.parametrize("kind", ["memory", "sqlite", "postgres"])
def test_R29_a_second_loop_agent_on_a_live_log_is_refused(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """R29 (issue 9's scenario): a second LoopAgent built over a log whose agent is inside
    turn 1 raises LogOwned having written nothing; the live agent finishes; the log replays."""
    if kind == "memory":
        log: Any = MemoryLog()
        another: Any = log.handle()
    elif kind == "sqlite":
        log, another = SqliteLog(tmp_path / "a.db"), SqliteLog(tmp_path / "a.db")
    else:
        conninfo, agent = request.getfixturevalue("pg"), f"second-{uuid.uuid4().hex}"
        log, another = PostgresLog(conninfo, agent), PostgresLog(conninfo, agent)
    _second_agent_on_a_live_log(log, another)


# ----------------------------------------------------------- paused owner


def test_R29_a_paused_owner_is_fenced_after_a_takeover(pg: str, tmp_path: Path) -> None:
    """R29: a worker SIGSTOPped past its 0.5 s lease, taken over, then continued: its step
    report raises LogFenced (its driver stops, DriverStopped), a later followup is refused,
    nothing of it lands; the log replays and the new owner's work is intact."""
    agent_id = f"paused-{uuid.uuid4().hex}"
    child = spawn("paused", "pg:" + pg, agent_id, str(tmp_path))
    try:
        sent = line(child).split()
        assert sent[0] == "SENT"
        assert line(child) == "IN-STEP 1 1"
        child.send_signal(signal.SIGSTOP)
        time.sleep(0.8)  # past the lease
        with PostgresLog(pg, agent_id) as log:
            agent = LoopAgent(EchoHost(), log=log)  # takes over: epoch + 1, Resume
            assert log.epoch == 2
            agent.followup(msg("new owner's work"))

            async def finish() -> None:
                await agent.when_idle()

            asyncio.run(finish())
            mine = log.read()
        child.send_signal(signal.SIGCONT)
        out, err = child.communicate(timeout=30)
    finally:
        if child.poll() is None:
            child.kill()
    said = out.split("\n")
    assert "STOPPED LogFenced" in said, err[-3000:]
    assert any(s.startswith("REFUSED LogFenced") for s in said), out
    with PostgresLog(pg, agent_id) as reader:
        events = reader.read()
    assert events == mine  # nothing of the paused owner landed after the takeover
    state = replay(events)
    assert not state.resume_required
    ends = [
        (e["data"]["turn"], e["data"]["reason"]["kind"])
        for e in log_json(events)
        if e["type"] == "turn/end"
    ]
    assert ends == [(1, "interrupted"), (2, "completed")]
    assert "m2 from the paused owner" not in json.dumps(log_json(events))


# ----------------------------------------------------------- server restart


@run_async
async def _restart_under_a_running_agent(cluster: Any) -> None:
    agent_id = f"restart-{uuid.uuid4().hex}"
    log = PostgresLog(cluster.conninfo, agent_id)
    host = ScriptedHost()
    agent = LoopAgent(host, log=log)
    agent.followup(msg("before the restart"))
    pre = await host.next("pre_step")
    pre.enter()
    step = await host.next("run_step")
    before = log.read()
    await asyncio.to_thread(cluster.restart)
    step.answer(Completed())  # the report's append fails: the driver stops with a typed cause
    with pytest.raises(DriverStopped) as info:
        await agent.when_idle()
    assert isinstance(info.value.__cause__, LogUnavailable)
    after = PostgresLog(cluster.conninfo, agent_id)
    assert after.read() == before  # nothing half-written
    await agent.detach()  # releases through a fresh connection: no lease to wait out
    resumed = LoopAgent(EchoHost(), log=after)
    await resumed.when_idle()
    assert turn_ends(resumed) == [(1, {"kind": "interrupted"})]
    resumed.followup(msg("after the restart"))
    await resumed.when_idle()
    check_invariants(resumed)
    # a caller's command during an outage: a typed error, the state unchanged; the log
    # reconnects on the next call, whose append is conditional on the seq it expects.
    # (The server is down, not restarting: the agent's post server also uses the log,
    # and after a restart it may be the one that meets the broken connection first.)
    await asyncio.to_thread(cluster.stop)
    try:
        state = resumed.state
        with pytest.raises(LogUnavailable):
            resumed.queue(msg("during the outage"))
        assert resumed.state is state
    finally:
        await asyncio.to_thread(cluster.start)
    resumed.queue(msg("after the outage"))
    check_invariants(resumed)
    after.close()
    log.close()


def test_R29_a_server_restart_is_a_typed_error_and_a_new_agent_resumes(pg_cluster: Any) -> None:
    """R29, R27: PostgreSQL restarted under a running agent: LogUnavailable (an
    InboxCoreError) from commands, DriverStopped caused by it from the driver; nothing
    half-written; after detach a new agent over the same log resumes at once."""
    _restart_under_a_running_agent(pg_cluster)


# ------------------------------------------------------------------- fenced driver


@run_async
async def test_R29_a_fenced_report_stops_the_driver() -> None:
    """R29: a LogFenced from a report's append stops the driver (DriverStopped, its cause the
    LogFenced), exactly like a log failure; the state stays where the log is."""
    log = MemoryLog()
    host = ScriptedHost()
    agent = LoopAgent(host, log=log)
    agent.followup(msg("f1"))
    pre = await host.next("pre_step")
    log.release()  # e.g. a lease lost under the agent
    pre.enter()
    with pytest.raises(DriverStopped) as info:
        await agent.when_idle()
    assert isinstance(info.value.__cause__, LogFenced)
    with pytest.raises(LogFenced):
        agent.followup(msg("f2"))
    check_invariants(agent)


# ------------------------------------------------------------------- detach


def _stores(kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> tuple[Any, Any]:
    if kind == "memory":
        log = MemoryLog()
        return log, log.handle()
    if kind == "sqlite":
        return SqliteLog(tmp_path / "d.db"), SqliteLog(tmp_path / "d.db")
    conninfo, agent = request.getfixturevalue("pg"), f"detach-{uuid.uuid4().hex}"
    return PostgresLog(conninfo, agent), PostgresLog(conninfo, agent)


@run_async
async def _detach_at(phase: str, log: Any, another: Any) -> None:
    host = ScriptedHost()
    agent = LoopAgent(host, log=log)
    agent.followup(msg("f1"))
    agent.queue(msg("parked"))  # not waking: it waits behind the turn, untouched
    pre = await host.next("pre_step")
    call = pre
    if phase != "pre_step":
        pre.enter()
        call = await host.next("run_step")
        if phase == "turn_stopping":
            call.answer(Completed())
            call = await host.next("turn_stopping")
    before = log_json(another.read())
    detaching = asyncio.ensure_future(agent.detach())
    await settle()
    assert call.signal.aborted  # the host is told to wind down
    assert not detaching.done()  # detach waits for the in-flight hook (never cancels it)
    with pytest.raises(AgentDetached):
        agent.steer(msg("too late"))
    call.answer(None if phase == "turn_stopping" else _answer(phase, call))
    await asyncio.wait_for(detaching, 5)
    assert log_json(another.read()) == before  # nothing written after the call
    assert not log.owned
    with pytest.raises(AgentDetached):
        await agent.when_idle()
    with pytest.raises(AgentDetached):
        agent.followup(msg("refused"))
    await agent.detach()  # idempotent
    # the next owner: Resume as after a crash (R27)
    echo = EchoHost()
    nxt = LoopAgent(echo, log=another)
    assert turn_ends(nxt) == [(1, {"kind": "interrupted"})]
    await nxt.when_idle()
    texts = [m.content[0]["text"] for m in echo.admitted]
    if phase == "pre_step":  # the undecided claim went back and runs again
        assert texts == ["f1"]
    else:
        assert texts == []
    assert [e.message.content[0]["text"] for e in nxt.inbox.next_turn] == ["parked"]
    check_invariants(nxt)


def _answer(phase: str, call: Any) -> Any:
    from inbox_core import Completed, Enter

    return Enter(call.messages) if phase == "pre_step" else Completed()


@pytest.mark.parametrize("phase", ["pre_step", "run_step", "turn_stopping"])
@pytest.mark.parametrize("kind", ["memory", "sqlite", "postgres"])
def test_R29_R27_detach_writes_nothing_and_the_next_owner_resumes(
    phase: str, kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """R29, R27: detach during pre-step, step or turn-stopping trips the signal, waits for the
    hook, discards its report, writes nothing and releases; the next owner closes the turn
    interrupted and restores an undecided claim."""
    log, another = _stores(kind, tmp_path, request)
    _detach_at(phase, log, another)


@run_async
async def test_R29_detach_from_inside_a_hook_releases_when_the_hook_returns() -> None:
    """R29: a hook awaiting detach() of its own agent does not deadlock."""
    log = MemoryLog()
    released: list[bool] = []

    class Leaving(EchoHost):
        async def pre_step(self, turn: int, step: int, messages: Any, signal: Any) -> Any:
            await agent.detach()
            released.append(log.owned)
            return await super().pre_step(turn, step, messages, signal)

    agent = LoopAgent(Leaving(), log=log)
    agent.followup(msg("f1"))
    size = len(log)
    for _ in range(20):
        await settle()
    assert released == [True]  # still held while the hook runs
    assert not log.owned
    assert len(log) == size


@run_async
async def test_R29_detach_while_idle_keeps_the_inbox() -> None:
    """R29: detach is the graceful shutdown that keeps the inbox (aclose would cancel it)."""
    log = MemoryLog()
    agent = LoopAgent(EchoHost(), log=log)
    agent.queue(msg("keep me"))
    size = len(log)
    await agent.detach()
    assert len(log) == size
    again = LoopAgent(EchoHost(), log=log)
    assert [e.message.content[0]["text"] for e in again.inbox.next_turn] == ["keep me"]


# ------------------------------------------------------------ SQLite's OS lock


@pytest.mark.parametrize("touch", ["copytree", "open-close"])
def test_R29_ownership_survives_the_owner_closing_its_own_copy_of_the_lock_file(
    tmp_path: Path, touch: str
) -> None:
    """R29, SH9: the owning process backs up its data directory (shutil.copytree opens and
    closes the -owners file) or opens and closes the lock file itself: another process still
    gets LogOwned, and this object still owns the log and appends."""
    data = tmp_path / "data"
    data.mkdir()
    db = data / "agents.db"
    with SqliteLog(db) as log:
        log.acquire()
        if touch == "copytree":
            shutil.copytree(data, tmp_path / "backup")
        else:
            os.close(os.open(f"{db}-owners", os.O_RDONLY))
        child = spawn("race", str(db), "default", str(tmp_path))
        try:
            assert line(child) == "READY"
            (tmp_path / "go").touch()
            assert line(child) == "OWNED LogOwned"
        finally:
            (tmp_path / "done").touch()
            child.wait(10)
        assert log.owned
        log.append([TurnStarted(1)])


def test_R29_an_owner_whose_lock_file_was_deleted_is_fenced(tmp_path: Path) -> None:
    """R29, SH9: deleting the -owners file lets another process lock a new one; the first owner
    finds out at its next append: LogFenced, nothing written, and it owns nothing."""
    db = tmp_path / "agents.db"
    with SqliteLog(db) as log:
        log.acquire()
        log.append([TurnStarted(1)])
        Path(f"{db}-owners").unlink()
        child = spawn("race", str(db), "default", str(tmp_path))
        try:
            assert line(child) == "READY"
            (tmp_path / "go").touch()
            assert line(child) == "WON"
            with pytest.raises(LogFenced, match="deleted or replaced"):
                log.append([TurnStarted(2)])
            assert not log.owned
            assert log.read() == [TurnStarted(1)]
        finally:
            (tmp_path / "done").touch()
            child.wait(10)
        log.acquire()  # the other owner is gone: a new lock file, a new lock
        assert log.owned


def test_R29_a_forked_child_owns_nothing_and_the_lock_dies_with_the_parent(
    tmp_path: Path,
) -> None:
    """R29, SH9: after a fork the child owns nothing (its acquire raises LogOwned); when the
    owner dies while that child lives on, the next process acquires at once (the child's
    inherited descriptor does not keep the lock)."""
    db = tmp_path / "agents.db"
    SqliteLog(db).close()
    owner = spawn("fork", str(db), "default", str(tmp_path))
    try:
        assert line(owner) == "CHILD OWNED LogOwned"
        words = line(owner).split()
        assert words[0] == "CHILD"
        assert words[2] == "WAITING"
        child_pid = int(words[1])
        (tmp_path / "child-spoke").touch()
        assert line(owner) == "PARENT DYING"
        owner.wait(10)
        os.kill(child_pid, 0)  # the forked child is still alive
        with SqliteLog(db) as log:
            log.acquire()
            assert log.owned
    finally:
        (tmp_path / "done").touch()


# ------------------------------------------------------------------- SQLite schema


def test_R29_a_v1_file_migrates_to_agent_default_losing_nothing(tmp_path: Path) -> None:
    """R29: a file written by the v1 schema (one agent, user_version 1) opens as agent
    "default" with every event, migrated in place in one transaction; other agents start
    empty beside it."""
    path = tmp_path / "v1.db"
    events = [TurnStarted(1), StepFinished]  # placeholder, replaced below
    source = MemoryLog()
    agent = LoopAgent(EchoHost(), log=source)
    agent.queue(msg("q"))
    agent.queue(msg("r"))
    events = source.read()
    with sqlite3.connect(path) as conn:
        conn.execute(
            "CREATE TABLE events (seq INTEGER PRIMARY KEY CHECK (seq >= 0), event TEXT NOT NULL)"
        )
        conn.executemany(
            "INSERT INTO events VALUES (?, ?)",
            [(seq, json.dumps(e)) for seq, e in enumerate(log_json(events))],
        )
        conn.execute("PRAGMA user_version=1")
    with SqliteLog(path) as log:
        assert log.read() == events
        assert log.connection.execute("PRAGMA user_version").fetchone()[0] == 2
        assert log.agent_ids() == ["default"]
        tables = [
            r[0]
            for r in log.connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
        ]
        assert tables == ["events", "agents"]  # R37: the agents table, "default" unknown
        flags = list(log.connection.execute("SELECT agent_id, work FROM agents"))
        assert flags == [("default", 1)]
    with SqliteLog(path, agent_id="other") as other:
        assert other.read() == []
        other.acquire()
        other.append([TurnStarted(1)])
    with SqliteLog(path) as again:
        assert again.read() == events
        assert again.agent_ids() == ["default", "other"]


def test_R29_a_failed_migration_leaves_the_v1_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """R29: the migration is one transaction: if its last statement fails, after the v1 table
    was dropped, the v1 table and rows remain and the error is typed (LogUnavailable)."""
    from inbox_core.shell.stores.sqlite import schema as sqlite_module

    path = tmp_path / "v1.db"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE events (seq INTEGER PRIMARY KEY, event TEXT NOT NULL)")
        conn.execute("INSERT INTO events VALUES (0, 'x')")
        conn.execute("PRAGMA user_version=1")
    conn.close()
    failing = (*sqlite_module._MIGRATE_V1, "DROP TABLE no_such_table")
    monkeypatch.setattr(sqlite_module, "_MIGRATE_V1", failing)
    with pytest.raises(LogUnavailable, match="no_such_table"):
        SqliteLog(path)
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == 1
        assert list(conn.execute("SELECT seq, event FROM events")) == [(0, "x")]
    conn.close()
