"""An agent outlives the event loop that first drove it (SH5, SH7, SH8, R23).

A first ``asyncio.run`` that ends in the middle of a step abandons the in-flight hook; a
second loop drives the agent again and the host is asked again. The turn's ``AbortSignal``
works in whichever loop awaits it, and a loop closed without cancelling its tasks (the
``run_until_complete`` then ``close`` style) leaves no dead driver behind.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable

import pytest

from inbox_core import Completed, StepOutcome, UserCause
from inbox_core.shell import AbortSignal, EchoHost, LoopAgent

from .support import check_invariants, msg, turn_ends


class WaitsForAbort(EchoHost):
    """Every step waits for the signal, for ever the first time, ``patience`` s afterwards."""

    def __init__(self, patience: float = 0.01) -> None:
        super().__init__()
        self.steps = 0
        self.patience = patience
        self.causes: list[object] = []

    async def run_step(self, turn: int, step: int, signal: AbortSignal) -> StepOutcome:
        self.steps += 1
        if self.steps == 1:
            await signal.wait()  # the first loop ends here
        with contextlib.suppress(TimeoutError):
            self.causes.append(await asyncio.wait_for(signal.wait(), self.patience))
        return Completed()


async def first_loop(agent: LoopAgent) -> None:
    agent.followup(msg("started in the first loop"))
    asyncio.ensure_future(agent.when_idle())  # a waiter this loop leaves behind  # noqa: RUF006
    await asyncio.sleep(0.02)  # the step is in flight when this loop ends


def closed_without_cancelling(agent: LoopAgent) -> None:
    """Run ``first_loop`` on a loop that is closed with the driver task still pending."""
    loop = asyncio.new_event_loop()
    try:
        loop.run_until_complete(first_loop(agent))
    finally:
        loop.close()


def ended_by_asyncio_run(agent: LoopAgent) -> None:
    asyncio.run(first_loop(agent))


FIRST_LOOPS: list[Callable[[LoopAgent], None]] = [ended_by_asyncio_run, closed_without_cancelling]


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # the abandoned hook never awaited
@pytest.mark.parametrize("first", FIRST_LOOPS, ids=["asyncio.run", "loop.close"])
def test_SH5_SH8_a_second_loop_asks_the_host_again_and_the_signal_works_there(
    first: Callable[[LoopAgent], None],
) -> None:
    """SH8, SH5: the first loop ended mid-step (a when_idle waiter left in it); in a second loop
    the driver asks the host again, its signal.wait() works there (no "bound to a different
    event loop"), the turn completes, and the dead loop's waiter is skipped."""
    host = WaitsForAbort()
    agent = LoopAgent(host)
    first(agent)
    assert host.steps == 1
    asyncio.run(asyncio.wait_for(agent.when_idle(), 5))
    assert host.steps == 2
    assert turn_ends(agent) == [(1, {"kind": "completed"})]
    check_invariants(agent)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("first", FIRST_LOOPS, ids=["asyncio.run", "loop.close"])
def test_R23_SH5_a_cancel_in_the_second_loop_wakes_the_hook_waiting_there(
    first: Callable[[LoopAgent], None],
) -> None:
    """R23, SH5: the signal of a turn whose first wait was in a dead loop trips in the new one:
    the hook awaiting it there returns with the cause and the turn ends aborted."""
    host = WaitsForAbort(patience=5.0)
    agent = LoopAgent(host)
    first(agent)

    async def second() -> None:
        idle = asyncio.ensure_future(agent.when_idle())
        while host.steps < 2:
            await asyncio.sleep(0.005)
        agent.cancel()
        await asyncio.wait_for(idle, 5)

    asyncio.run(second())
    assert host.causes == [UserCause()]
    assert turn_ends(agent) == [(1, {"kind": "aborted", "reason": {"kind": "user"}})]


def test_SH5_an_abort_signal_waits_in_any_loop_and_ignores_dead_waiters() -> None:
    """SH5: wait() in one loop (left pending when that loop closed), then in another: trip()
    wakes the live waiter and skips the dead one without raising."""
    signal = AbortSignal(1)
    dead = asyncio.new_event_loop()
    pending = dead.create_task(signal.wait())
    dead.run_until_complete(asyncio.sleep(0))
    dead.close()

    async def live() -> object:
        waiting = asyncio.ensure_future(signal.wait())
        await asyncio.sleep(0)
        signal.trip(UserCause())
        return await asyncio.wait_for(waiting, 1)

    assert asyncio.run(live()) == UserCause()
    assert not pending.done()  # its loop is gone; nothing ran it
    assert asyncio.run(signal.wait()) == UserCause()  # tripped: returns at once, any loop
