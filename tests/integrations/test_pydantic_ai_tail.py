"""R41, SH11: ``PydanticAIHost`` restores from a bounded tail: the events its agent's opening
read (after a checkpoint) and earlier pages read backwards only as far as the newest
compaction summary; the whole log only when it holds none. Its history is exactly what the
whole log rebuilds (R30)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pydantic_ai", reason="the pydantic-ai extra is not installed")

from pydantic_ai.messages import ModelMessagesTypeAdapter

from inbox_core import DurableEvent, HostRecord, transcript
from inbox_core.integrations.pydantic_ai import SUMMARY, PydanticAIHost, model_messages
from inbox_core.shell import LoopAgent, MemoryLog, SqliteLog
from inbox_core.shell.stores.checkpoints import LogHistory, open_log
from tests.shell.support import msg, run_async

from .support import Script


def _host(script: Script) -> PydanticAIHost:
    return PydanticAIHost(script.model, instructions="Be brief.")


def _same(left: list[Any], right: list[Any]) -> bool:
    return ModelMessagesTypeAdapter.dump_json(left) == ModelMessagesTypeAdapter.dump_json(right)


async def _conversation(log: Any, *, compact: bool) -> list[DurableEvent]:
    """Three turns, a compaction (if ``compact``), three more turns; the log's events."""
    replies = ["a1", "a2", "a3", *(["the summary"] if compact else []), "b1", "b2", "b3"]
    script = Script.of(*replies)
    host = _host(script)
    agent = LoopAgent(host, log=log)
    for n in range(3):
        agent.followup(msg(f"q{n}"))
        await agent.when_idle()
    if compact:
        await agent.run_maintenance(host.compact)
    for n in range(3):
        agent.followup(msg(f"r{n}"))
        await agent.when_idle()
    await agent.detach()
    return list(log.read())


class SpyLog:
    """A log whose reads are recorded as ``(since, until)``."""

    def __init__(self, events: list[DurableEvent]) -> None:
        self.events = events
        self.reads: list[tuple[int, int | None]] = []

    def read(self, since: int = 0, until: int | None = None) -> list[DurableEvent]:
        self.reads.append((since, until))
        return self.events[since:until]


@run_async
async def test_r41_sh11_a_host_opened_from_a_checkpoint_restores_the_whole_history(
    tmp_path: Path,
) -> None:
    """R41, SH11, R30: over a log with a checkpoint and a summary, a new host's history equals
    the one the whole log rebuilds, and its agent opened from the checkpoint."""
    path = tmp_path / "p.db"
    events = await _conversation(SqliteLog(path, agent_id="a", checkpoint_every=5), compact=True)
    assert open_log(SqliteLog(path, agent_id="a")).checkpoint is not None
    restored = _host(Script.of())
    agent = LoopAgent(restored, log=SqliteLog(path, agent_id="a"))
    assert _same(restored.history, model_messages(transcript(events)))
    assert len(restored.history) == 7  # the summary, then three requests and replies
    await agent.detach()


@run_async
async def test_r41_sh11_restore_reads_backwards_only_to_the_newest_summary() -> None:
    """R41: the host reads pages before the opening's events only until one holds a summary;
    the pages before it are never read."""
    events = await _conversation(MemoryLog(checkpoint_every=None), compact=True)
    summary = next(
        i for i, e in enumerate(events) if isinstance(e, HostRecord) and e.type == SUMMARY
    )
    log = SpyLog(events)
    start = len(events) - 2
    host = _host(Script.of())
    host.restore_tail(LogHistory(log, start, events[start:], page=4))
    assert _same(host.history, model_messages(transcript(events)))
    first_read = min(since for since, _ in log.reads)
    assert summary - 4 < first_read <= summary  # the page holding it, none before
    assert first_read > 0


@run_async
async def test_r41_sh11_without_a_summary_the_whole_log_is_read() -> None:
    """R41: a log without a summary is read back to seq 0 (the whole history is needed)."""
    events = await _conversation(MemoryLog(checkpoint_every=None), compact=False)
    log = SpyLog(events)
    start = len(events) - 3
    host = _host(Script.of())
    host.restore_tail(LogHistory(log, start, events[start:], page=5))
    assert _same(host.history, model_messages(transcript(events)))
    assert min(since for since, _ in log.reads) == 0
