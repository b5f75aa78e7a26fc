"""The host factory of the failover benchmark's workers (``benchmarks.failover``).

``inbox-core serve STORE --host benchmarks.failover_host:host``: an ``EchoHost`` per
agent whose steps take ``$FAILOVER_DELAY`` seconds (the killed worker: a step that never
ends; the next worker: 0), and which notes when each opening began and ended and when
each turn stopped, one line each, in ``$FAILOVER_TIMES``:
``<time.monotonic()> <what> <agent id> <number>``. ``time.monotonic`` is the system-wide
``CLOCK_MONOTONIC`` on Linux, so the harness compares it with its own clock.

- ``factory``: the worker asked for the agent's host: its log object exists and
  ``LoopAgent.open`` is about to acquire it (number 0);
- ``restored``: ``LoopAgent.open`` acquired and read the log (in a worker thread) and
  replayed it, and hands what it read to the host; ``Resume`` follows at once (number:
  events handed over). By default the host restores from the tail the opening read
  (``restore_tail``: from the newest checkpoint on, R41, as a host that needs no more
  does); with ``$FAILOVER_RESTORE=whole`` it has only ``restore(events)`` (a
  ``RestoringHost``), so every opening reads and decodes the whole log (the figures
  before issue 32);
- ``step``: a step started (number: the turn);
- ``stopping``: the turn ended (``turn_stopping``; number: the turn).
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from typing import IO, Any

from inbox_core.commands import StepOutcome
from inbox_core.shell import AbortSignal, EchoHost
from inbox_core.shell.stores.checkpoints import LogHistory

_OUT: dict[str, IO[str]] = {}


def note(what: str, agent_id: str, number: int) -> None:
    out = _OUT.get("file")
    if out is None:
        path = os.environ.get("FAILOVER_TIMES")
        if not path:
            return
        out = _OUT["file"] = open(path, "a", buffering=1, encoding="utf-8")  # noqa: SIM115
    out.write(f"{time.monotonic():.6f} {what} {agent_id} {number}\n")


class TimedHost(EchoHost):
    def __init__(self, agent_id: str, delay: float) -> None:
        super().__init__(delay=delay)
        self.agent_id = agent_id

    async def run_step(self, turn: int, step: int, signal: AbortSignal) -> StepOutcome:
        note("step", self.agent_id, turn)
        return await super().run_step(turn, step, signal)

    async def turn_stopping(self, turn: int, signal: AbortSignal) -> None:
        note("stopping", self.agent_id, turn)
        await super().turn_stopping(turn, signal)


class TailHost(TimedHost):
    def restore_tail(self, history: LogHistory) -> None:
        note("restored", self.agent_id, len(history.events))


class WholeLogHost(TimedHost):
    def restore(self, events: Sequence[Any]) -> None:
        note("restored", self.agent_id, len(events))


def restore_mode() -> str:
    """``$FAILOVER_RESTORE``: ``tail`` (the default) or ``whole``."""
    mode = os.environ.get("FAILOVER_RESTORE", "tail")
    if mode not in ("tail", "whole"):
        raise ValueError(f"FAILOVER_RESTORE must be tail or whole, got {mode!r}")
    return mode


def host(agent_id: str) -> TimedHost:
    note("factory", agent_id, 0)
    delay = float(os.environ.get("FAILOVER_DELAY", "0"))
    if restore_mode() == "whole":
        return WholeLogHost(agent_id, delay)
    return TailHost(agent_id, delay)
