"""``EchoHost``: the bundled host for demos and tests."""

from __future__ import annotations

import asyncio
import contextlib

from inbox_core.commands import Completed, Decision, Enter, StepOutcome
from inbox_core.shell.host import AbortSignal
from inbox_core.values import UserMessage

__all__ = ["EchoHost", "echo_host"]


class EchoHost:
    """Enters every batch unchanged, completes every step, does nothing at turn-stopping.

    ``delay`` (seconds) makes each step take that long, unless the turn is
    aborted first: the step then returns at once (cooperative cancellation,
    R23). Each step yields to the event loop at least once. ``calls`` records
    ``(hook, turn, step)`` (step 0 for ``turn_stopping``) and ``admitted``
    every message of every entered batch, for demos and assertions.
    """

    def __init__(self, *, delay: float = 0.0) -> None:
        if delay < 0:
            raise ValueError(f"delay must be >= 0, got {delay!r}")
        self.delay = delay
        self.calls: list[tuple[str, int, int]] = []
        self.admitted: list[UserMessage] = []

    async def pre_step(
        self, turn: int, step: int, messages: tuple[UserMessage, ...], signal: AbortSignal
    ) -> Decision:
        self.calls.append(("pre_step", turn, step))
        self.admitted.extend(messages)
        return Enter(messages)

    async def run_step(self, turn: int, step: int, signal: AbortSignal) -> StepOutcome:
        self.calls.append(("run_step", turn, step))
        if self.delay > 0 and not signal.aborted:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self.delay):  # not wait_for (see wakes.Chime)
                    await signal.wait()
        else:
            await asyncio.sleep(0)
        return Completed()

    async def turn_stopping(self, turn: int, signal: AbortSignal) -> None:
        self.calls.append(("turn_stopping", turn, 0))

    def __repr__(self) -> str:
        return f"EchoHost(delay={self.delay!r})"


def echo_host(agent_id: str) -> EchoHost:
    """A worker's host factory (``inbox-core serve ... --host inbox_core.shell.echo:echo_host``):
    an ``EchoHost`` per agent; ``INBOX_CORE_ECHO_DELAY`` (seconds) sets each step's delay."""
    import os  # noqa: PLC0415 - only this factory reads the environment

    return EchoHost(delay=float(os.environ.get("INBOX_CORE_ECHO_DELAY", "0")))
