"""What a host supplies (the ``Host`` protocol) and what it is given (``AbortSignal``)."""

from __future__ import annotations

import asyncio
from typing import Protocol

from inbox_core.commands import Decision, StepOutcome
from inbox_core.values import Cause, UserMessage

__all__ = ["AbortSignal", "Host"]


class AbortSignal:
    """Trips when the core marks the turn aborted (R23); one signal per turn.

    ``aborted`` and ``cause`` (the first cause, or None) can be polled;
    ``await wait()`` returns the cause once the signal has tripped. The shell
    trips it synchronously in the command that aborts the turn (a ``cancel``
    or ``dispose``), before that command's notifications are delivered. A
    tripped signal never resets: the next turn gets a fresh signal.

    Cancellation is cooperative: the shell never cancels a host coroutine.
    A hook that sees the signal should wind down and return (any value; the
    core ignores a report's content for an aborted turn, D6).
    """

    __slots__ = ("_cause", "_event", "turn")

    def __init__(self, turn: int) -> None:
        self.turn = turn
        self._cause: Cause | None = None
        self._event = asyncio.Event()

    @property
    def aborted(self) -> bool:
        return self._cause is not None

    @property
    def cause(self) -> Cause | None:
        return self._cause

    async def wait(self) -> Cause:
        """Wait until the signal trips; return the abort cause."""
        await self._event.wait()
        assert self._cause is not None
        return self._cause

    def trip(self, cause: Cause) -> None:
        """Shell-internal: mark aborted with ``cause`` (first cause wins)."""
        if self._cause is None:
            self._cause = cause
            self._event.set()

    def __repr__(self) -> str:
        return f"AbortSignal(turn={self.turn}, cause={self._cause!r})"


class Host(Protocol):
    """The model loop ``LoopAgent`` drives; one call at a time, in the order the core awaits.

    Each hook receives the turn's ``AbortSignal``. An exception raised by a
    hook is reported to the core (``pre_step`` -> ``PreStepFailed``,
    ``run_step`` -> ``Failed``, with the exception class name as code; an
    exception in ``turn_stopping`` is reported to the event loop's exception
    handler and the turn goes on as if it returned).
    """

    async def pre_step(
        self, turn: int, step: int, messages: tuple[UserMessage, ...], signal: AbortSignal
    ) -> Decision:
        """Decide the entering batch of step ``step`` (``Enter(messages)`` or ``Reject()``)."""
        ...

    async def run_step(self, turn: int, step: int, signal: AbortSignal) -> StepOutcome:
        """Run one model request plus its tools; say whether another step is needed."""
        ...

    async def turn_stopping(self, turn: int, signal: AbortSignal) -> None:
        """The turn is about to end; listeners may ``steer`` to keep it going (R17)."""
        ...
