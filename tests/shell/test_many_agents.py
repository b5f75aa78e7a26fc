"""README "Running many agents": two worker processes share one PostgreSQL database, each
owning a disjoint set of agents; one is killed and the other takes its agents over after the
lease and runs their pending waking work (R29, R27). Runs examples/many_agents.py."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

from inbox_core import replay
from inbox_core.shell import PostgresLog

from .support import log_json

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "many_agents.py"


def worker(pg: str, name: str, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, str(EXAMPLE), pg, name, "--lease", "1.0", "--idle", "0.5", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )


class Lines:
    """A worker's stdout, read by a thread (a test never blocks on a silent worker)."""

    def __init__(self, proc: subprocess.Popen[str]) -> None:
        self.proc = proc
        self.lines: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for text in self.proc.stdout:
            self.lines.append(text.strip())

    def wait_for(self, want: str, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while want not in self.lines:
            if time.monotonic() > deadline or self.proc.poll() is not None:
                time.sleep(0.2)  # the reader thread catches up with a worker that exited
                if want in self.lines:
                    return
                err = self.proc.stderr.read() if self.proc.poll() is not None else ""
                raise AssertionError(f"no {want!r} in {self.lines}\n{err}")
            time.sleep(0.02)


def test_R29_two_workers_share_a_database_and_one_takes_over_when_the_other_dies(
    pg: str,
) -> None:
    """R29, R27: worker A is killed inside turn 1 of each of its agents with two followups
    waiting; worker B adopts them once the 1 s leases lapse, Resume closes turn 1
    interrupted, and B runs the waiting followups; idle agents are detached."""
    run = uuid.uuid4().hex[:6]
    mine = [f"a{i}-{run}" for i in range(3)]
    theirs = [f"b{i}-{run}" for i in range(2)]
    a = worker(pg, "A", "--own", *mine, "--send", "3", "--delay", "60")
    b = None
    try:
        a_out = Lines(a)
        a_out.wait_for(f"A SERVING {' '.join(sorted(mine))}", 30)
        b = worker(pg, "B", "--own", *theirs, "--send", "1", "--watch", *mine)
        b_out = Lines(b)
        b_out.wait_for(f"B SERVING {' '.join(sorted(theirs))}", 30)
        killed = time.monotonic()
        a.send_signal(signal.SIGKILL)
        a.wait(10)
        for agent_id in mine:
            b_out.wait_for(f"B IDLE {agent_id} 3", 30)
        assert time.monotonic() - killed > 0.3  # it waited for the lease, not less
        for agent_id in theirs:
            b_out.wait_for(f"B DETACHED {agent_id}", 30)  # idle: detached
        b.send_signal(signal.SIGTERM)
        b_out.wait_for("B STOPPED", 30)
        assert b.wait(10) == 0
    finally:
        for proc in (a, b):
            if proc is not None and proc.poll() is None:
                proc.kill()
    b_lines = b_out.lines
    assert [line for line in b_lines if "ADOPTED" in line] == [f"B ADOPTED {i}" for i in mine]
    for agent_id in mine:
        with PostgresLog(pg, agent_id) as log:
            events = log.read()
            log.acquire()  # B detached it on SIGTERM: free at once
        state = replay(events)
        assert state.status == "idle"
        ends = [e["data"]["reason"]["kind"] for e in log_json(events) if e["type"] == "turn/end"]
        assert ends == ["interrupted", "completed", "completed"]
        admitted = [
            e["data"]["content"][0]["text"] for e in log_json(events) if e["type"] == "user/message"
        ]
        assert admitted[-2:] == [f"{agent_id} #2 from A", f"{agent_id} #3 from A"]


def test_B7_smoke_many_agents_on_one_sqlite_file(tmp_path: Path) -> None:
    """Benchmark B7 at a tiny size (shape only, no timings asserted): 5 agents in one file."""
    import asyncio

    from benchmarks.many_agents import Sqlite, b7_store

    result = asyncio.run(b7_store(Sqlite(str(tmp_path), "NORMAL"), 5, 2, big_events=200))
    assert result["agents"] == 5
    assert result["appends"] > 10
    assert result["open_log_events"] >= 200
    assert result["ratio_to_insert_floor"] > 0
