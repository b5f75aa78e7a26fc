"""Maintenance always ends (R31, SH10): a job's records that cannot be written, a store locked
past its timeout, a job that returns what no job may return. The agent leaves maintenance
(the record-less end), or owes that end and writes it as soon as the store lets it; it
never hangs, and every failure is the store's typed error. And
``run_maintenance`` returns the job's answer (``Recorded(answer, records)``)."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from inbox_core import DurableEvent, HostRecord, InvalidInput
from inbox_core.shell import (
    AbortSignal,
    DriverStopped,
    EchoHost,
    LogUnavailable,
    LoopAgent,
    MemoryLog,
    Recorded,
    SqliteLog,
)

from .support import (
    ScriptedHost,
    admitted_texts,
    capture_loop_errors,
    check_invariants,
    log_types,
    msg,
    run_async,
    settle,
)

SUMMARY = HostRecord("host/summary", {"text": "so far"})
WAIT = 2.0  # what "never hangs" waits at most


@contextmanager
def write_lock(path: Path) -> Iterator[sqlite3.Connection]:
    """Another connection holding the database's write lock until the block ends."""
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        yield holder
    finally:
        holder.execute("COMMIT")
        holder.close()


class RecordRefusingLog(MemoryLog):
    """A store that cannot write the job's record (as if it could not be encoded): ValueError.
    (A step's host/output, R43, it writes.)"""

    def append(self, events: Sequence[DurableEvent]) -> None:
        if SUMMARY in events:
            raise ValueError("cannot encode host/summary")
        super().append(events)


def returning(value: Any, *, during: Any = None, until: asyncio.Event | None = None) -> Any:
    """A job that runs ``during()`` (e.g. a followup), waits for ``until``, returns ``value``."""

    async def job(signal: AbortSignal) -> Any:
        if during is not None:
            during()
        if until is not None:
            await until.wait()
        await asyncio.sleep(0)
        return value

    return job


@run_async
async def test_R31_SH10_records_that_cannot_be_written_end_maintenance_without_them() -> None:
    """R31, SH10: the job's records cannot be written (ValueError from the store): the
    maintenance still ends (record-less), run_maintenance raises that error, and the agent
    goes on: when_idle returns, a followup runs, a new job runs."""
    log = RecordRefusingLog()
    agent = LoopAgent(EchoHost(), log=log)
    with pytest.raises(ValueError, match="cannot encode"):
        await agent.run_maintenance(returning([SUMMARY]))
    assert agent.status == "idle"
    await asyncio.wait_for(agent.when_idle(), WAIT)
    agent.followup(msg("after"))
    await asyncio.wait_for(agent.when_idle(), WAIT)
    assert "turn/end" in log_types(agent)
    assert await agent.run_maintenance(returning(None)) is None
    assert SUMMARY.type not in log_types(agent)
    check_invariants(agent)


@run_async
async def test_R31_SH10_a_failed_end_releases_the_waking_work_it_held_back() -> None:
    """R31: a followup sent during the job still opens its turn when the job's records
    cannot be written: the record-less end is what the log records."""
    host = ScriptedHost()
    agent = LoopAgent(host, log=RecordRefusingLog())
    job = returning([SUMMARY], during=lambda: agent.followup(msg("during")))
    with pytest.raises(ValueError, match="cannot encode"):
        await agent.run_maintenance(job)
    assert agent.status == "running"
    assert (await host.complete_turn()) == ["during"]
    await asyncio.wait_for(agent.when_idle(), WAIT)
    check_invariants(agent)


@run_async
async def test_R31_SH8_a_store_locked_past_its_timeout_at_the_end(tmp_path: Path) -> None:
    """R31, SH8, SH9: SQLite locked by another connection past the timeout when the job ends
    (nothing waiting): LogUnavailable from run_maintenance, the agent is idle, and once the
    lock clears a followup, cancel and a new job all work."""
    path = tmp_path / "agent.db"
    with SqliteLog(path, timeout=0.05) as log:
        agent = LoopAgent(EchoHost(), log=log)
        with write_lock(path):
            with pytest.raises(LogUnavailable, match="locked"):
                await agent.run_maintenance(returning([SUMMARY]))
            assert agent.status == "idle"
            await asyncio.wait_for(agent.when_idle(), WAIT)
        agent.cancel()  # nothing to cancel: a no-op, no error
        assert await agent.run_maintenance(returning(Recorded("done", [SUMMARY]))) == "done"
        agent.followup(msg("after the lock"))
        await asyncio.wait_for(agent.when_idle(), WAIT)
        types = log_types(agent)
        assert types.count("host/summary") == 1  # only the second job's record
        assert types[-1] == "turn/end"
        check_invariants(agent)
        await agent.detach()


@run_async
async def test_R31_an_end_that_cannot_be_written_at_all_is_owed_and_retried(
    tmp_path: Path,
) -> None:
    """R31, SH8: the lock also blocks the record-less end (it opens the waiting followup's
    turn): run_maintenance raises LogUnavailable and the end is owed. While the lock holds,
    when_idle (also one already waiting), a new run_maintenance and cancel raise the typed
    error, never hang; once it clears, when_idle writes the end and the followup's turn runs,
    and a new job runs."""
    path = tmp_path / "agent.db"
    with SqliteLog(path, timeout=0.05) as log:
        host = ScriptedHost()
        agent = LoopAgent(host, log=log)
        release = asyncio.Event()
        job = returning([SUMMARY], during=lambda: agent.followup(msg("during")), until=release)
        running = asyncio.ensure_future(agent.run_maintenance(job))
        await settle()
        waiting = asyncio.ensure_future(agent.when_idle())  # waits through maintenance
        await settle()
        with write_lock(path):
            release.set()
            with pytest.raises(LogUnavailable, match="locked"):
                await running
            assert agent.status == "maintenance"
            with pytest.raises(LogUnavailable, match="locked"):
                await asyncio.wait_for(waiting, WAIT)
            with pytest.raises(LogUnavailable, match="locked"):
                await asyncio.wait_for(agent.when_idle(), WAIT)
            with pytest.raises(LogUnavailable, match="locked"):
                await asyncio.wait_for(agent.run_maintenance(returning(None)), WAIT)
            with pytest.raises(LogUnavailable, match="locked"):
                agent.cancel()  # would cancel "during": a write, refused, nothing changed
        assert agent.status == "maintenance"
        idle = asyncio.ensure_future(agent.when_idle())
        assert (await host.complete_turn()) == ["during"]
        await asyncio.wait_for(idle, WAIT)
        assert await agent.run_maintenance(returning(Recorded(7, [SUMMARY]))) == 7
        assert log_types(agent).count("host/summary") == 1
        check_invariants(agent)
        await agent.detach()


@run_async
async def test_R31_a_failing_job_whose_end_cannot_be_written_raises_the_jobs_error(
    tmp_path: Path,
) -> None:
    """R31: the job raises and its record-less end cannot be written either: the job's error
    propagates; the owed end is written by aclose once the lock cleared (dispose cancels
    the followup sent during the job), and the agent converges."""
    path = tmp_path / "agent.db"
    with SqliteLog(path, timeout=0.05) as log:
        agent = LoopAgent(EchoHost(), log=log)
        release = asyncio.Event()

        async def job(signal: AbortSignal) -> None:
            agent.followup(msg("during"))
            await release.wait()
            raise LookupError("job broke")

        running = asyncio.ensure_future(agent.run_maintenance(job))
        await settle()
        with write_lock(path):
            release.set()
            with pytest.raises(LookupError, match="job broke"):
                await running
            with pytest.raises(LogUnavailable):  # the dispose's cancel cannot be written
                await asyncio.wait_for(agent.aclose(), WAIT)
        await asyncio.wait_for(agent.aclose(), WAIT)
        assert agent.state.disposed
        assert agent.status == "idle"
        assert admitted_texts(agent) == []  # "during" was canceled by the dispose
        check_invariants(agent)


# ------------------------------------------------------------- what a job returns


@run_async
async def test_R30_R31_run_maintenance_returns_the_jobs_answer() -> None:
    """R30, R31: Recorded(answer, records) gives answer back and logs the records; None and an
    iterable of records (a list, a generator) still work and return None."""
    agent = LoopAgent(EchoHost())
    assert await agent.run_maintenance(returning(Recorded({"kept": 3}, [SUMMARY]))) == {"kept": 3}
    assert await agent.run_maintenance(returning(Recorded("no records"))) == "no records"
    assert await agent.run_maintenance(returning(None)) is None
    assert await agent.run_maintenance(returning([SUMMARY])) is None
    assert await agent.run_maintenance(returning(r for r in [SUMMARY])) is None
    assert log_types(agent) == ["host/summary"] * 3
    assert agent.status == "idle"


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        ("compacted", "a str"),
        (b"compacted", "a bytes"),
        ({"type": "host/summary"}, "a dict"),
        (SUMMARY, "a HostRecord"),
        (42, "a int"),
        ([SUMMARY, "x"], "an iterable holding a str"),
        ((n for n in [1]), "an iterable holding a int"),
    ],
    ids=["str", "bytes", "mapping", "lone-record", "int", "mixed-list", "generator"],
)
@run_async
async def test_R31_a_job_returning_anything_else_gets_a_typed_error_and_maintenance_ends(
    value: Any, shown: str
) -> None:
    """R31, R26: a job's return value that is neither None, host records nor Recorded is
    InvalidInput saying what a job may return (a str is never read as records); maintenance
    ends record-less and the followup sent during the job runs."""
    host = ScriptedHost()
    agent = LoopAgent(host)
    job = returning(value, during=lambda: agent.followup(msg("during")))
    with pytest.raises(InvalidInput) as info:
        await agent.run_maintenance(job)
    assert "None, an iterable of HostRecord, or Recorded(answer, records)" in str(info.value)
    assert shown in str(info.value)
    assert agent.status == "running"
    assert (await host.complete_turn()) == ["during"]
    await asyncio.wait_for(agent.when_idle(), WAIT)
    assert not any(t.startswith("host/") for t in log_types(agent))
    await settle()
    check_invariants(agent)


@run_async
async def test_R31_a_job_that_is_no_coroutine_function_is_invalid_input() -> None:
    """R31, R26: run_maintenance(<not callable>) raises InvalidInput with nothing begun; a job
    whose call returns no awaitable raises InvalidInput and maintenance ends."""
    agent = LoopAgent(EchoHost())
    with pytest.raises(InvalidInput, match="coroutine function"):
        await agent.run_maintenance(None)  # type: ignore[call-overload]
    with pytest.raises(InvalidInput, match="not an awaitable"):
        await agent.run_maintenance(lambda signal: [SUMMARY])  # type: ignore[arg-type,return-value]
    assert agent.status == "idle"
    assert agent.log.read() == []


class TurnEndRefusingLog(MemoryLog):
    """A store that fails (LogUnavailable) every append that would end a turn."""

    def append(self, events: Sequence[DurableEvent]) -> None:
        if any(event.type == "turn/end" for event in events):
            raise LogUnavailable("store down")
        super().append(events)


@run_async
async def test_SH8_R31_run_maintenance_on_a_stopped_agent_raises_driver_stopped() -> None:
    """SH8, R31: once the driver stopped (a report the log refused), run_maintenance raises
    DriverStopped at once, with the log's error as its cause, and begins nothing."""
    errors = capture_loop_errors()
    agent = LoopAgent(EchoHost(), log=TurnEndRefusingLog())
    agent.followup(msg("f"))
    with pytest.raises(DriverStopped):
        await asyncio.wait_for(agent.when_idle(), WAIT)
    ran: list[AbortSignal] = []

    async def job(signal: AbortSignal) -> None:
        ran.append(signal)

    with pytest.raises(DriverStopped) as info:
        await agent.run_maintenance(job)
    assert isinstance(info.value.__cause__, LogUnavailable)
    assert ran == []
    assert agent.status == "running"
    assert [type(e["exception"]) for e in errors] == [LogUnavailable]
