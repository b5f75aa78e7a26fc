"""What the integration needs from the core, without the extra: the shell's restore hook
(``RestoringHost``) and a core that never imports a framework."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import inbox_core
from inbox_core.shell import LoopAgent, RestoringHost, SqliteLog
from tests.shell.support import msg, turn_ends

ROOT = Path(__file__).resolve().parents[2]
INTERRUPTED = {"kind": "interrupted"}


class _RestoringHost:
    """Records when the shell calls restore, relative to the log's content."""

    def __init__(self) -> None:
        self.restored: list[list[Any]] = []

    def restore(self, events: Any) -> None:
        self.restored.append(list(events))

    async def pre_step(self, turn: int, step: int, messages: Any, signal: Any) -> Any:
        return inbox_core.Enter(messages)

    async def run_step(self, turn: int, step: int, signal: Any) -> Any:
        return inbox_core.Completed()

    async def turn_stopping(self, turn: int, signal: Any) -> None:
        return None


def test_r27_the_shell_restores_a_host_once_with_the_log_before_resume(tmp_path: Path) -> None:
    """R27, R30 (SH7): LoopAgent calls ``host.restore(events)`` once, in its constructor, with
    the events it replayed, before Resume appends its own; a host without ``restore`` is fine."""
    empty = _RestoringHost()
    LoopAgent(empty)
    assert empty.restored == [[]]

    path = tmp_path / "agent.db"
    log = SqliteLog(path)
    log.acquire()
    opened = [
        inbox_core.InboxSpliced("next-turn", 0, 0, (inbox_core.Entry(msg("hi"), (), True),)),
        inbox_core.TurnStarted(1),
        inbox_core.InboxSpliced("next-turn", 0, 1, ()),
    ]
    log.append(opened)
    log.close()
    host = _RestoringHost()
    agent = LoopAgent(host, log=SqliteLog(path))
    assert host.restored == [opened]
    assert len(agent.log.read()) > len(opened)  # Resume wrote after the restore
    assert turn_ends(agent)[0] == (1, INTERRUPTED)


def test_a_restoring_host_satisfies_the_protocol() -> None:
    """RestoringHost is the Host protocol plus ``restore``."""
    host: RestoringHost = _RestoringHost()
    assert callable(host.restore)


def test_r46_importing_inbox_core_never_imports_a_framework() -> None:
    """R46: the core keeps its two runtime dependencies: importing the package, the shell, the
    CLI and the integrations package imports no framework (pydantic-ai, the Agents SDK,
    Anthropic's SDK: each extra stays optional)."""
    code = (
        "import sys, inbox_core, inbox_core.shell, inbox_core.cli, inbox_core.integrations\n"
        "roots = {m.split('.')[0] for m in sys.modules}\n"
        "frameworks = {'pydantic_ai', 'pydantic', 'agents', 'openai', 'anthropic', 'httpx2'}\n"
        "loaded = sorted(roots & frameworks)\n"
        "assert not loaded, loaded\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    subprocess.run([sys.executable, "-c", code], check=True, env=env, timeout=60)
