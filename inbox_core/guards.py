"""Guarded commands: where each expectation holds, and the error when it does not (R34).

A caller that cannot see the state (another process, a stale screen) sends
``Send``, ``Move`` or ``Cancel`` with ``expect=ExpectIdle()`` or
``expect=ExpectTurn(n)``; ``reduce`` looks the pair (phase type,
expectation type) up in ``EXPECTATIONS`` after the checks every command gets
(``ResumeRequired``, ``AgentDisposed``) and before the command's handler
runs. A missing pair never holds, like a missing pair of ``TRANSITIONS``; a
present one holds when its test says so. A failed expectation raises
``AgentBusy`` (``ExpectIdle``) or ``TurnMismatch`` (``ExpectTurn``) naming
what was meant and what was found, with nothing changed (I11).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

from inbox_core.commands import Expectation, ExpectIdle, ExpectTurn
from inbox_core.errors import AgentBusy, InboxCoreError, TurnMismatch
from inbox_core.state import TURN_PHASES, AgentState, Idle


def _holds(_state: AgentState, _expect: Expectation) -> bool:
    """Always: the phase alone makes it hold."""
    return True


def _turn_is_live(state: AgentState, expect: ExpectTurn) -> bool:
    """The driven turn is the expected turn and it is not aborted."""
    return state.last_turn == expect.turn and state.abort_cause is None


EXPECTATIONS: Final[dict[tuple[type, type], Callable[[AgentState, Any], bool]]] = {
    (Idle, ExpectIdle): _holds,
    **{(phase, ExpectTurn): _turn_is_live for phase in TURN_PHASES},
}
"""(phase type, expectation type) -> whether it holds there. A missing pair never holds:
``Maintenance`` is not idle, and only a driven turn is live (``Orphaned`` and ``Stranded``
accept ``Resume`` alone, so ``ResumeRequired`` comes first there)."""


def live_turn(state: AgentState) -> int | None:
    """The turn that is live now (opened, not ended, not aborted), or None."""
    if isinstance(state.phase, TURN_PHASES) and state.abort_cause is None:
        return state.last_turn
    return None


def unmet(state: AgentState, expect: Expectation) -> InboxCoreError:
    """The typed error of an expectation that does not hold: what was meant, what was found."""
    if isinstance(state.phase, TURN_PHASES):
        aborted = " (aborted)" if state.abort_cause is not None else ""
        found = f"turn {state.last_turn} running{aborted}"
    else:
        last = f"; the last turn was {state.last_turn}" if state.last_turn else ""
        found = f"the agent {state.status}{last}"
    if isinstance(expect, ExpectIdle):
        return AgentBusy(f"expected the agent idle, found {found}", status=state.status)
    return TurnMismatch(
        f"expected turn {expect.turn} live, found {found}",
        expected=expect.turn,
        found=live_turn(state),
    )
