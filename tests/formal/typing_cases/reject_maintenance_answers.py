# ruff: noqa
# fmt: off
"""Must be rejected: the answer of ``run_maintenance`` has the job's type, and a job returns
None, host records or ``Recorded`` (R31)."""

from __future__ import annotations

from inbox_core.shell import AbortSignal, LoopAgent, Recorded


async def summary(signal: AbortSignal) -> Recorded[str]:
    return Recorded("compacted", ())


async def text(signal: AbortSignal) -> str:
    return "compacted"


async def use(agent: LoopAgent) -> None:
    count: int = await agent.run_maintenance(summary)  # E: [arg-type] Argument 1 to "run_maintenance" of "LoopAgent" has incompatible type "Callable[[AbortSignal], Coroutine[Any, Any, Recorded[str]]]"; expected "Callable[[AbortSignal], Awaitable[Recorded[int]]]"
    await agent.run_maintenance(text)  # E: [arg-type] Argument 1 to "run_maintenance" of "LoopAgent" has incompatible type "Callable[[AbortSignal], Coroutine[Any, Any, str]]"
