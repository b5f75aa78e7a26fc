"""The conversation survives the process: a crash mid-step (a killed child), a detach, and a
new agent over the same SqliteLog that restores the history and goes on (R27, R29, R30);
guarded commands against a model loop."""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("pydantic_ai", reason="the pydantic-ai extra is not installed")

import inbox_core
from inbox_core import transcript
from inbox_core.integrations.pydantic_ai import REQUEST, RESPONSE, PydanticAIHost, model_messages
from inbox_core.shell import LoopAgent, SqliteLog
from tests.shell.support import check_invariants, log_json, msg, run_async, turn_ends

from .support import Script, shape, states, text

ROOT = Path(__file__).resolve().parents[2]
CHILD = Path(__file__).with_name("crash_child.py")
INTERRUPTED = {"kind": "interrupted"}
COMPLETED = {"kind": "completed"}


def _kill_mid_stream(path: Path) -> None:
    """Run the child until its second turn streams, then SIGKILL it."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    child = subprocess.Popen(
        [sys.executable, str(CHILD), str(path)], stdout=subprocess.PIPE, text=True, env=env
    )
    try:
        assert child.stdout is not None
        ready, _, _ = select.select([child.stdout], [], [], 60)
        assert ready, "the child did not start streaming"
        assert child.stdout.readline().strip() == "STREAMING"
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
        if child.stdout is not None:
            child.stdout.close()
    assert child.returncode == -signal.SIGKILL


@run_async
async def test_r27_r30_a_process_killed_mid_step_is_continued_by_a_new_one(tmp_path: Path) -> None:
    """R27, R30: SIGKILL while turn 2 streams leaves its request recorded and no reply; a new
    process's agent restores the history from the log alone, Resume closes turn 2
    ``interrupted``, and the next request holds the whole conversation."""
    path = tmp_path / "agent.db"
    _kill_mid_stream(path)
    events = SqliteLog(path).read()
    types = [e["type"] for e in log_json(events)]
    assert types.count(REQUEST) == 2
    assert types.count(RESPONSE) == 1  # the streamed part of turn 2 died with the process

    script = Script.of("third answer")
    host = PydanticAIHost(script.model, instructions="Be brief.")
    with SqliteLog(path) as log:
        agent = LoopAgent(host, log=log)
        assert shape(host.history) == [
            ("request", [("user", "first question")]),
            ("response", [("text", "first answer")]),
            ("request", [("user", "second question")]),
        ]
        assert turn_ends(agent) == [(1, COMPLETED), (2, INTERRUPTED)]
        agent.followup(msg("third question"))
        await agent.when_idle()
        assert shape(script.requests[0]) == [
            ("request", [("user", "first question")]),
            ("response", [("text", "first answer")]),
            ("request", [("user", "second question"), ("user", "third question")]),
        ]
        assert script.requests[0][-1].instructions == "Be brief."
        assert turn_ends(agent)[-1] == (3, COMPLETED)
        check_invariants(agent)
        await agent.detach()


@run_async
async def test_r29_r30_a_detached_agent_is_continued_by_a_new_agent_on_the_same_host(
    tmp_path: Path,
) -> None:
    """R29, R30: detach mid-stream stops the stream (the host winds down) and writes nothing;
    a new LoopAgent over the same log, even with the same host object, restores exactly what
    the log holds (not what the host said in the discarded report) and continues."""
    path = tmp_path / "agent.db"
    script = Script.of("Hi there.", text("I was say", "ing", hold=True), "Resumed.")
    host = PydanticAIHost(script.model)
    first = LoopAgent(host, log=SqliteLog(path))
    first.followup(msg("hello"))
    await first.when_idle()
    first.followup(msg("tell me more"))
    await script.streaming.wait()
    before = SqliteLog(path).read()
    await first.detach()
    assert script.cancelled == 1
    assert SqliteLog(path).read() == before  # the discarded report wrote nothing

    second = LoopAgent(host, log=SqliteLog(path))
    on_log = model_messages(transcript(second.log.read()))
    assert shape(host.history) == shape(on_log)
    assert states(host.history) == ["complete", "complete", "complete"]
    assert turn_ends(second) == [(1, COMPLETED), (2, INTERRUPTED)]
    second.followup(msg("go on"))
    await second.when_idle()
    assert shape(script.requests[-1]) == [
        ("request", [("user", "hello")]),
        ("response", [("text", "Hi there.")]),
        ("request", [("user", "tell me more"), ("user", "go on")]),
    ]
    await second.detach()


@run_async
async def test_guarded_steer_into_a_turn_that_ended_raises_turn_mismatch() -> None:
    """R34 (guarded commands, issue 18): a steer guarded by the turn the user was looking at
    enters that turn while it streams, and raises TurnMismatch, changing nothing, once it ended."""
    expect_turn = inbox_core.ExpectTurn
    mismatch = inbox_core.TurnMismatch
    script = Script.of(text("Paris ", "is big.", hold=True), "Grande.", "Lyon.")
    host = PydanticAIHost(script.model)
    agent = LoopAgent(host)
    agent.followup(msg("about Paris"))
    await script.streaming.wait()
    agent.steer(msg("in French"), expect=expect_turn(1))
    script.release()
    await agent.when_idle()
    before = agent.log.read()
    with pytest.raises(mismatch):
        agent.steer(msg("too late"), expect=expect_turn(1))
    assert agent.log.read() == before
    assert agent.status == "idle"
    assert shape(script.requests[1])[-1] == ("request", [("user", "in French")])
    assert len(script.requests) == 2
