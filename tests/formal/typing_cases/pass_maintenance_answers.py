"""Must type-check: ``run_maintenance`` returns the job's answer, typed by the job (R31)."""

from __future__ import annotations

from collections.abc import Sequence

from inbox_core import HostRecord
from inbox_core.shell import AbortSignal, LoopAgent, Recorded


async def summary(signal: AbortSignal) -> Recorded[str]:
    return Recorded("compacted", ())


async def maybe(signal: AbortSignal) -> Recorded[int] | None:
    return None if signal.aborted else Recorded(3, ())


async def records(signal: AbortSignal) -> Sequence[HostRecord]:
    return ()


async def use(agent: LoopAgent) -> tuple[str, int | None]:
    text: str = await agent.run_maintenance(summary)
    count: int | None = await agent.run_maintenance(maybe)
    await agent.run_maintenance(records)  # the answer is None
    return text, count
