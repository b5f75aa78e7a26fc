"""Host integration in the shell: records with answers (R30), maintenance jobs (R31),
failures a host can see (R33)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import pytest

from inbox_core import (
    AgentDisposed,
    AgentError,
    Completed,
    Continue,
    DurableEvent,
    Enter,
    HostRecord,
    MaintenanceUnavailable,
    RecordsTranscript,
    TurnTranscript,
    UserCause,
    replay,
    transcript,
)
from inbox_core.shell import AbortSignal, LoopAgent, MemoryLog, Recorded

from .support import (
    Recorder,
    ScriptedHost,
    capture_loop_errors,
    check_invariants,
    log_types,
    msg,
    run_async,
    settle,
    turn_ends,
)


class CountingLog(MemoryLog):
    """A MemoryLog that keeps each ``append`` call (one per command, SH1)."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[list[DurableEvent]] = []

    def append(self, events: Sequence[DurableEvent]) -> None:
        super().append(events)
        self.calls.append(list(events))


def reply(text: str) -> HostRecord:
    return HostRecord("host/reply", {"text": text})


# ----------------------------------------------------------------- R30 records


@run_async
async def test_R30_each_hook_can_return_records_appended_first_in_the_same_append() -> None:
    """R30: Recorded(answer, records) from pre_step, run_step and turn_stopping: the records
    come first in the one append of the report they travel with."""
    host = ScriptedHost()
    log = CountingLog()
    agent = LoopAgent(host, log=log)
    agent.followup(msg("f1"))
    pre = await host.next("pre_step")
    pre.answer(Recorded(Enter(pre.messages), [HostRecord("host/plan", [1, 2])]))
    (await host.next("run_step")).answer(Recorded(Completed(), (reply("hi"),)))
    (await host.next("turn_stopping")).answer(Recorded(None, (HostRecord("host/stop", None),)))
    await agent.when_idle()
    types = [[e.type for e in call] for call in log.calls]
    assert ["host/plan", "step/start", "user/message"] in types
    assert ["host/reply", "step/end"] in types
    assert ["host/stop", "turn/end"] in types
    [turn] = transcript(log.read())
    assert isinstance(turn, TurnTranscript)
    assert [item.type for item in turn.items if isinstance(item, HostRecord)] == [
        "host/plan",
        "host/stop",
    ]
    assert turn.steps[0].items[-1] == reply("hi")
    check_invariants(agent)


@run_async
async def test_R30_R33_invalid_records_fail_the_turn_and_are_not_written() -> None:
    """R30, R33: an answer carrying something that is not a HostRecord is a host failure:
    nothing of it is written, the turn ends error, agent/error is announced."""
    host = ScriptedHost()
    agent = LoopAgent(host)
    notes = Recorder()
    agent.subscribe(notes)
    agent.followup(msg("f1"))
    (await host.next("pre_step")).enter()

    class Fake:
        type = "host/fake"

    call = await host.next("run_step")
    call.future.set_result(_LateRecorded(Completed(), [Fake()]))
    await agent.when_idle()
    assert "host/fake" not in log_types(agent)
    [(_, reason)] = turn_ends(agent)
    assert reason["kind"] == "error"
    assert [n.step for n in notes.of("agent/error")] == [1]  # type: ignore[attr-defined]
    check_invariants(agent)


class _LateRecorded:
    """Duck-typed like ``Recorded`` but never validated: the shell must not trust it."""

    def __init__(self, value: Any, records: list[Any]) -> None:
        self.value = value
        self.records = records


# ----------------------------------------------------------------- R33 failures


class Unprintable(Exception):
    def __str__(self) -> str:
        raise RuntimeError("no str")

    def __repr__(self) -> str:
        raise RuntimeError("no repr")


class UnrenderableAnswer:
    def __repr__(self) -> str:
        raise RuntimeError("no repr")


@run_async
async def test_R33_exception_whose_str_and_repr_raise_is_the_turns_error() -> None:
    """R33: the driver survives an exception that cannot be rendered; turn/end error with the
    class name; agent/error delivered to subscribers; the next turn still runs."""
    host = ScriptedHost()
    agent = LoopAgent(host)
    notes = Recorder()
    agent.subscribe(notes)
    agent.followup(msg("f1"))
    (await host.next("pre_step")).fail(Unprintable())
    agent.followup(msg("f2"))
    await host.complete_turn()
    await agent.when_idle()
    ends = turn_ends(agent)
    error = {"message": "Unprintable", "code": "Unprintable"}
    assert ends[0] == (1, {"kind": "error", "error": error})
    assert ends[1][1] == {"kind": "completed"}
    assert notes.of("agent/error") == [AgentError(1, None, "Unprintable", "Unprintable")]
    check_invariants(agent)


@run_async
async def test_R33_answer_whose_repr_raises_is_the_turns_error() -> None:
    """R33: a hook returning a value that is not an answer and cannot be rendered is reported
    as the step's error; the driver goes on."""
    host = ScriptedHost()
    agent = LoopAgent(host)
    notes = Recorder()
    agent.subscribe(notes)
    agent.followup(msg("f1"))
    (await host.next("pre_step")).enter()
    (await host.next("run_step")).answer(UnrenderableAnswer())
    await agent.when_idle()
    [(_, reason)] = turn_ends(agent)
    assert reason["kind"] == "error"
    assert [type(n).__name__ for n in notes.of("agent/error")] == ["AgentError"]
    assert agent.status == "idle"
    check_invariants(agent)


@run_async
async def test_R33_failure_of_an_aborted_turn_is_not_announced() -> None:
    """R33: the failure report of an aborted turn is ignored: turn/end aborted, no agent/error."""
    host = ScriptedHost()
    agent = LoopAgent(host)
    notes = Recorder()
    agent.subscribe(notes)
    agent.followup(msg("f1"))
    (await host.next("pre_step")).enter()
    call = await host.next("run_step")
    agent.cancel()
    call.fail(ValueError("late"))
    await agent.when_idle()
    assert turn_ends(agent) == [(1, {"kind": "aborted", "reason": {"kind": "user"}})]
    assert notes.of("agent/error") == []
    check_invariants(agent)


@run_async
async def test_R33_turn_stopping_failure_goes_to_the_loop_handler_and_the_turn_goes_on() -> None:
    """R33: a turn_stopping failure stays the shell's to log (loop exception handler); no
    agent/error; the turn ends completed."""
    errors = capture_loop_errors()
    host = ScriptedHost()
    agent = LoopAgent(host)
    notes = Recorder()
    agent.subscribe(notes)
    agent.followup(msg("f1"))
    (await host.next("pre_step")).enter()
    (await host.next("run_step")).answer(Completed())
    (await host.next("turn_stopping")).fail(Unprintable())
    await agent.when_idle()
    assert turn_ends(agent) == [(1, {"kind": "completed"})]
    assert notes.of("agent/error") == []
    assert any(isinstance(e.get("exception"), Unprintable) for e in errors)


# -------------------------------------------------------------- R31 maintenance


@run_async
async def test_R31_maintenance_parks_waking_input_and_releases_it_at_the_end() -> None:
    """R31, R30: during the job the status is maintenance and a followup opens no turn;
    the job's records are logged with EndMaintenance, then the followup's turn runs;
    when_idle waits through both."""
    host = ScriptedHost()
    log = CountingLog()
    agent = LoopAgent(host, log=log)
    notes = Recorder()
    agent.subscribe(notes)
    started = asyncio.Event()
    release = asyncio.Event()

    async def compact(signal: AbortSignal) -> list[HostRecord]:
        started.set()
        await release.wait()
        return [HostRecord("host/summary", {"text": "so far"})]

    job = asyncio.ensure_future(agent.run_maintenance(compact))
    await started.wait()
    assert agent.status == "maintenance"
    agent.followup(msg("f1"))
    idle = asyncio.ensure_future(agent.when_idle())
    await settle()
    assert not idle.done()
    assert "turn/start" not in log_types(agent)
    assert host.pending.empty()
    release.set()
    await job
    assert log.calls[-1][0] == HostRecord("host/summary", {"text": "so far"})
    assert [e.type for e in log.calls[-1]][:2] == ["host/summary", "turn/start"]
    await host.complete_turn()
    await idle
    statuses = [n.status for n in notes.of("agent/status")]  # type: ignore[attr-defined]
    assert statuses == ["maintenance", "running", "idle"]
    blocks = transcript(log.read())
    assert isinstance(blocks[0], RecordsTranscript)
    check_invariants(agent)


@run_async
async def test_R31_run_maintenance_raises_at_once_when_not_idle() -> None:
    """R31: while a turn runs, run_maintenance raises MaintenanceUnavailable and runs nothing;
    once disposed, AgentDisposed."""
    host = ScriptedHost()
    agent = LoopAgent(host)
    ran = []

    async def job(signal: AbortSignal) -> None:
        ran.append(signal)

    agent.followup(msg("f1"))
    with pytest.raises(MaintenanceUnavailable):
        await agent.run_maintenance(job)
    await host.complete_turn()
    await agent.when_idle()
    await agent.aclose()
    with pytest.raises(AgentDisposed):
        await agent.run_maintenance(job)
    assert ran == []


@pytest.mark.parametrize("keep_inbox", [False, True])
@run_async
async def test_R31_cancel_trips_the_jobs_signal(keep_inbox: bool) -> None:
    """R31, R22: cancel aborts the job (its signal trips with the cause); without keep_inbox
    the pending input is canceled, with it the followup runs after the job."""
    host = ScriptedHost()
    agent = LoopAgent(host)

    async def job(signal: AbortSignal) -> None:
        assert await signal.wait() == UserCause()

    running = asyncio.ensure_future(agent.run_maintenance(job))
    await settle()
    agent.followup(msg("f1"))
    agent.cancel(keep_inbox=keep_inbox)
    await running
    if keep_inbox:
        await host.complete_turn()
    await agent.when_idle()
    assert ("turn/start" in log_types(agent)) == keep_inbox
    assert agent.state.abort_cause is None
    check_invariants(agent)


@run_async
async def test_R31_R25_dispose_during_maintenance_converges_at_the_jobs_end() -> None:
    """R31, R25: aclose() during a job trips its signal and returns once the job ended:
    status idle, then agent/disposed."""
    host = ScriptedHost()
    agent = LoopAgent(host)
    notes = Recorder()
    agent.subscribe(notes)

    async def job(signal: AbortSignal) -> list[HostRecord]:
        await signal.wait()
        return [HostRecord("host/partial", {})]

    running = asyncio.ensure_future(agent.run_maintenance(job))
    await settle()
    agent.queue(msg("q"))
    await agent.aclose()
    await running
    assert notes.types[-2:] == ["agent/status", "agent/disposed"]
    assert log_types(agent)[-1] == "host/partial"
    assert agent.inbox.next_turn == ()


@run_async
async def test_R31_a_failing_job_still_ends_maintenance() -> None:
    """R31: the job's exception propagates from run_maintenance; maintenance ended (no records)
    and the waking input it held back runs."""
    host = ScriptedHost()
    agent = LoopAgent(host)

    async def job(signal: AbortSignal) -> None:
        agent.followup(msg("during"))
        raise LookupError("job broke")

    with pytest.raises(LookupError):
        await agent.run_maintenance(job)
    assert agent.status == "running"
    await host.complete_turn()
    await agent.when_idle()
    assert not any(t.startswith("host/") for t in log_types(agent))


@run_async
async def test_R31_R27_crash_during_maintenance_resumes_the_pending_waking_work() -> None:
    """R31, R27: maintenance writes nothing durable; a crash during the job leaves a log whose
    replay is Stranded; a new agent's Resume runs the followup sent during the job."""
    host = ScriptedHost()
    log = MemoryLog()
    agent = LoopAgent(host, log=log)
    hold = asyncio.Event()

    async def job(signal: AbortSignal) -> None:
        await hold.wait()

    running = asyncio.ensure_future(agent.run_maintenance(job))
    await settle()
    agent.followup(msg("during"))
    events = log.read()  # the "crash": what the log holds now
    assert replay(events).resume_required
    running.cancel()
    await asyncio.gather(running, return_exceptions=True)
    crashed = MemoryLog(events)
    host2 = ScriptedHost()
    agent2 = LoopAgent(host2, log=crashed)
    assert (await host2.complete_turn()) == ["during"]
    await agent2.when_idle()
    check_invariants(agent2)


@run_async
async def test_R30_example_of_continue_with_records_per_step() -> None:
    """R30, R16: a two-step turn (Continue) whose steps each log a reply; the transcript
    rebuilds both steps with their records in order."""
    host = ScriptedHost()
    agent = LoopAgent(host)
    agent.followup(msg("f1"))
    (await host.next("pre_step")).enter()
    (await host.next("run_step")).answer(Recorded(Continue(), [reply("calling tool")]))
    (await host.next("pre_step")).enter([])
    (await host.next("run_step")).answer(Recorded(Completed(), [reply("done")]))
    (await host.next("turn_stopping")).answer()
    await agent.when_idle()
    [turn] = transcript(agent.log.read())
    assert isinstance(turn, TurnTranscript)
    assert [s.items[-1] for s in turn.steps] == [reply("calling tool"), reply("done")]
