"""A durable abort survives a kill (R23, R27, R32): cancelled input never reaches a step."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

from inbox_core import AbortedReason, ConsumedFate, TurnEnded, UserCause, fates, replay
from inbox_core.shell import EchoHost, LoopAgent, SqliteLog

ROOT = Path(__file__).resolve().parents[2]

CHILD = textwrap.dedent(
    """
    import asyncio, sys
    from inbox_core import UserMessage
    from inbox_core.shell import EchoHost, LoopAgent, SqliteLog

    class Hanging(EchoHost):
        async def pre_step(self, turn, step, messages, signal):
            print("pre_step", flush=True)
            await asyncio.Event().wait()  # the decision never comes: killed here

    async def main() -> None:
        agent = LoopAgent(Hanging(), log=SqliteLog(sys.argv[1]))
        agent.followup(UserMessage("doomed", "cancel me before I run"))
        line = await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)
        assert line.strip() == "cancel"
        agent.cancel()  # turn/abort is written in this command (R23)
        print("cancelled", flush=True)
        await asyncio.Event().wait()

    asyncio.run(main())
    """
)


def test_R23_R27_cancel_during_a_pending_decision_then_kill_the_input_never_runs(
    tmp_path: Path,
) -> None:
    """R23, R27, R32: a turn is cancelled while its pre-step decision is pending; the process
    is killed (SIGKILL) before the decision; a new process's Resume closes the turn aborted
    with the cancel's cause, restores nothing, and the cancelled input never reaches a step."""
    db = tmp_path / "agent.db"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(db)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert child.stdout is not None
        assert child.stdin is not None
        assert child.stdout.readline().strip() == "pre_step"
        child.stdin.write("cancel\n")
        child.stdin.flush()
        assert child.stdout.readline().strip() == "cancelled"
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=10)

    with SqliteLog(db) as reader:
        crashed = reader.read()
    assert [e.type for e in crashed][-2:] == ["agent/inbox/spliced", "turn/abort"]
    assert replay(crashed).abort_cause == UserCause()

    async def reopen() -> list[object]:
        host = EchoHost()
        with SqliteLog(db) as log:
            agent = LoopAgent(host, log=log)  # Resume: turn 1 closes aborted, nothing restored
            await agent.when_idle()
            events = log.read()
            await agent.detach()
        assert host.admitted == []
        return list(events)

    events = asyncio.run(reopen())
    assert TurnEnded(1, AbortedReason(UserCause())) in events
    assert not any(e.type in ("step/start", "user/message") for e in events)  # type: ignore[attr-defined]
    assert fates(events)["doomed"] == ConsumedFate(1, AbortedReason(UserCause()))  # type: ignore[arg-type]
