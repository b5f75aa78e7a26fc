"""README "Running many agents" (R29, R27, R37): its two commands run as written, with two
workers on one PostgreSQL database (then one is killed and the other takes its agents over),
and examples/many_agents.py runs as a program."""

from __future__ import annotations

import os
import re
import shlex
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from inbox_core import TurnEnded, fates, followup, replay
from inbox_core.shell import PostApplied, PostgresStore

from .support import msg

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"


def readme_commands() -> tuple[list[str], list[str]]:
    """The section's two commands: start a worker, post."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text[text.index("## Running many agents") :]
    block = re.search(r"```sh\n(.*?)```", section, re.S)
    assert block is not None, "the section opens with its two commands"
    serve, post = (shlex.split(line) for line in block.group(1).strip().splitlines())
    assert serve[:2] == ["inbox-core", "serve"]
    assert post[:2] == ["inbox-core", "post"]
    return serve, post


def with_store(argv: list[str], store: str) -> list[str]:
    return [store if arg.startswith("sqlite:") else arg for arg in argv]


def run(argv: list[str], **options: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(  # type: ignore[call-overload, no-any-return]
        [sys.executable, "-m", "inbox_core", *argv[1:]],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        cwd=EXAMPLES,
        **options,
    )


def start(argv: list[str], *extra: str, delay: float) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "inbox_core", *argv[1:], *extra],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        cwd=EXAMPLES,
        env={**os.environ, "MANY_AGENTS_DELAY": str(delay), "PYTHONPATH": str(ROOT)},
    )


def tails(*procs: subprocess.Popen[str]) -> str:
    """The stderr of workers that exited (a live one's stays unread)."""
    return "\n".join(p.stderr.read()[-2000:] for p in procs if p.poll() is not None and p.stderr)


def test_r37_the_readme_commands_serve_and_post(tmp_path: Path) -> None:
    """R35, R37: the two commands as the README gives them (a worker over an SQLite file,
    a post that waits): the post is applied, the worker exits 0 on SIGTERM."""
    serve, post = readme_commands()
    store = f"sqlite:{tmp_path / 'agents.db'}"
    worker = start(with_store(serve, store), "--poll-seconds", "0.05", delay=0.0)
    try:
        done = run(with_store(post, store), env={**os.environ, "PYTHONPATH": str(ROOT)})
        assert done.returncode == 0, done.stderr
        assert "applied" in done.stdout
    finally:
        worker.send_signal(signal.SIGTERM)
        _, err = worker.communicate(timeout=30)
    assert worker.returncode == 0, err
    assert "stopped" in err  # the summary line


def test_r37_the_example_program_serves_every_agent(tmp_path: Path) -> None:
    """R37: examples/many_agents.py as a program: a Worker in-process, a post to each agent,
    every post applied, every turn ended, the stats printed."""
    done = subprocess.run(
        [
            sys.executable,
            str(EXAMPLES / "many_agents.py"),
            f"sqlite:{tmp_path / 'e.db'}",
            "--agents",
            "30",
            "--delay",
            "0.005",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert done.returncode == 0, done.stderr
    assert "applied 30 of 30 posts; every turn ended" in done.stdout
    assert "opened 30" in done.stdout


@pytest.mark.postgres
def test_R29_R27_R37_two_workers_share_a_database_and_one_takes_over_when_the_other_dies(
    pg: str,
) -> None:
    """R29, R27, R37: the README's worker command twice on one PostgreSQL database; work
    posted to 16 agents spreads over both; one worker is killed (SIGKILL) mid-work; the
    other takes its agents over once their leases lapse: every post ends applied, every
    agent ends idle, every message admitted exactly once or its turn closed interrupted."""
    serve, _ = readme_commands()
    from psycopg.conninfo import conninfo_to_dict

    parts = conninfo_to_dict(pg)
    url = (
        f"postgresql://{parts['user']}@{parts['host']}:{parts.get('port', 5432)}/{parts['dbname']}"
    )
    store = PostgresStore(pg)
    tag = uuid.uuid4().hex[:8]
    agents = [f"many-{tag}-{n}" for n in range(16)]
    options = ("--lease-seconds", "1", "--poll-seconds", "0.1", "--idle-seconds", "30")
    first = start(with_store(serve, url), *options, "--name", "first", delay=0.4)
    second = start(with_store(serve, url), *options, "--name", "second", delay=0.4)
    try:
        receipts = [store.post(agent, followup(msg(f"work for {agent}"))) for agent in agents]
        deadline = time.monotonic() + 20
        while sum(store.outcome(r) == PostApplied() for r in receipts) < len(receipts) // 2:
            assert time.monotonic() < deadline, f"workers never started: {tails(first, second)}"
            time.sleep(0.05)
        first.kill()  # mid-work: some of its turns are open
        first.wait(timeout=10)
        deadline = time.monotonic() + 30
        while True:
            states = {agent: replay(store.log(agent).read()) for agent in agents}
            done = all(store.outcome(r) == PostApplied() for r in receipts) and all(
                state.status == "idle" and state.last_turn >= 1 for state in states.values()
            )
            if done:
                break
            assert time.monotonic() < deadline, f"not all served: {states}"
            time.sleep(0.2)
        for agent in agents:
            events = store.log(agent).read()
            ends = [e.reason.kind for e in events if isinstance(e, TurnEnded)]
            assert set(ends) <= {"completed", "interrupted"}  # a killed step: interrupted
            assert all(type(fate).__name__ == "AdmittedFate" for fate in fates(events).values())
    finally:
        for proc in (first, second):
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
                proc.communicate(timeout=30)
        store.close()
    assert second.returncode == 0
