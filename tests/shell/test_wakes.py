"""Wakes (R36) under cancellation: a waiter cancelled at the moment its chime rings ends
cancelled. On Python 3.11, ``asyncio.wait_for`` lost such a cancel (gh-86296); a post
server waiting in a loop then never ended, and ``asyncio.run``'s teardown hung on it."""

from __future__ import annotations

import asyncio

from inbox_core.shell.stores.wakes import Bell

from .support import run_async


@run_async
async def test_r36_sh8_a_waiter_cancelled_as_its_chime_rings_ends_cancelled() -> None:
    """R36, SH8: 300 waiters, each cancelled while a ring of its chime is pending (at
    different points of the loop): every one of them ends cancelled."""
    bell = Bell()
    lost = 0
    for attempt in range(300):
        chime = bell.chime("post:a")

        async def waiter(chime: object = chime) -> None:
            while True:  # a post server's loop: wait, look, wait again
                await chime.wait(10)  # type: ignore[attr-defined]

        task = asyncio.ensure_future(waiter())
        for _ in range(attempt % 4):
            await asyncio.sleep(0)
        chime.ring()
        if attempt % 2:
            await asyncio.sleep(0)
        task.cancel()
        done, _ = await asyncio.wait({task}, timeout=0.5)
        if not done:
            lost += 1
            task.cancel()
            await asyncio.wait({task}, timeout=1)
        else:
            assert task.cancelled()
        chime.close()
    assert lost == 0, f"{lost} of 300 cancels were swallowed"


@run_async
async def test_r36_the_wildcard_hears_every_post() -> None:
    """R36, R37: ``post:*`` is rung by a post for any agent (a worker's wake), and only by
    posts; an agent's own key still hears only its own."""
    bell = Bell()
    anyone, alice = bell.chime("post:*"), bell.chime("post:alice")
    bell.ring("post:bob")
    assert await anyone.wait(1)
    assert not await alice.wait(0.05)
    bell.ring("events:bob")
    assert not await anyone.wait(0.05)
    bell.ring("post:alice")
    assert await anyone.wait(1)
    assert await alice.wait(1)
    anyone.close()
    alice.close()
