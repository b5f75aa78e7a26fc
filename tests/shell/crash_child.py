"""Crash-test child: open a SqliteLog, resume, run random traffic, die at a random point.

Usage: ``python crash_child.py STORE SEED``: STORE is an SQLite path, or
``pg:<conninfo>#<agent id>`` for a PostgresLog (then ``progress`` is a SIGKILL
from a timer armed 0-3 ms before a random append: the kill lands around the
append's one statement). Everything random derives from SEED, so a failing
run can be replayed. The death is one of:

- ``progress``: an SQLite progress handler, armed at a random append, calls
  ``os._exit`` after a random number of VM steps: in the middle of that
  append's transaction (the kill the one-transaction-per-command rule is about);
- ``sigkill``: a timer thread sends SIGKILL to the process at a random time
  (sqlite releases the GIL, so this lands anywhere, syscalls included);
- ``hook``: ``os._exit`` inside a host hook or a subscriber callback.

Protocol on stdout (flushed per line): ``MODE <mode>``, ``RESUMED`` once the
constructor returned, ``A <id>`` for every message whose delivery returned
(accepted: its events are committed), ``P <n>`` before and ``C`` after every
append of n events, ``DONE`` if the budget ran out first.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import signal
import sys
import threading
from collections.abc import Sequence
from typing import Any

from inbox_core import (
    Completed,
    Continue,
    Decision,
    DurableEvent,
    Enter,
    Failed,
    HookCause,
    InboxCoreError,
    MaxTokens,
    Notification,
    ParentCause,
    Reject,
    StepOutcome,
    UserCause,
    UserMessage,
    create_user_message,
)
from inbox_core.shell import AbortSignal, LoopAgent, PostgresLog, SqliteLog

EXIT_PROGRESS = 71
EXIT_HOOK = 72
MAX_OPS = 400


def say(*words: object) -> None:
    sys.stdout.write(" ".join(map(str, words)) + "\n")
    sys.stdout.flush()


class Fate:
    """Counts the points where a ``hook`` death may strike."""

    def __init__(self, rng: random.Random, mode: str) -> None:
        self.rng = rng
        self.left = rng.randint(1, 120) if mode == "hook" else -1

    def tick(self) -> None:
        if self.left > 0:
            self.left -= 1
            if self.left == 0:
                os._exit(EXIT_HOOK)


class RandomHost:
    """Random decisions, outcomes, failures and delays; honours the abort signal."""

    def __init__(self, rng: random.Random, fate: Fate) -> None:
        self.rng = rng
        self.fate = fate
        self.agent: LoopAgent | None = None
        self.counter = 0

    async def pause(self, signal: AbortSignal) -> None:
        delay = self.rng.choice([0.0, 0.0, 0.0005, 0.002, 0.005])
        if delay and not signal.aborted:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(signal.wait(), delay)
        else:
            await asyncio.sleep(0)

    async def pre_step(
        self, turn: int, step: int, messages: tuple[UserMessage, ...], signal: AbortSignal
    ) -> Decision:
        self.fate.tick()
        await self.pause(signal)
        self.fate.tick()
        roll = self.rng.random()
        if roll < 0.05:
            return Reject()
        if roll < 0.09:
            raise RuntimeError("pre-step failure")
        if roll < 0.14 and messages:
            return Enter(messages[:-1])  # dropped by the decision
        return Enter(messages)

    async def run_step(self, turn: int, step: int, signal: AbortSignal) -> StepOutcome:
        self.fate.tick()
        await self.pause(signal)
        self.fate.tick()
        roll = self.rng.random()
        if roll < 0.2 and step < 4:
            return Continue()
        if roll < 0.25:
            return MaxTokens()
        if roll < 0.3:
            return Failed("model failure", "E_MODEL")
        if roll < 0.34:
            raise ValueError("run-step failure")
        return Completed()

    async def turn_stopping(self, turn: int, signal: AbortSignal) -> None:
        self.fate.tick()
        await self.pause(signal)
        if self.agent is not None and self.rng.random() < 0.1:
            self.counter += 1
            message = create_user_message(f"stopping-steer {turn}/{self.counter}")
            try:
                self.agent.steer(message)
            except InboxCoreError:
                return
            say("A", message.id)


def pending_ids(agent: LoopAgent) -> list[str]:
    return [e.message.id for e in (*agent.inbox.next_turn, *agent.inbox.next_step)]


async def traffic(agent: LoopAgent, rng: random.Random) -> None:
    for op in range(MAX_OPS):
        roll = rng.random()
        message = create_user_message(f"m{op}")
        accepted: list[UserMessage] = []
        try:
            if roll < 0.3:
                agent.followup(message)
                accepted = [message]
            elif roll < 0.42:
                agent.queue(message)
                accepted = [message]
            elif roll < 0.56:
                agent.steer(message)
                accepted = [message]
            elif roll < 0.64:
                agent.inject(message)
                accepted = [message]
            elif roll < 0.7:
                context = create_user_message(f"c{op}")
                agent.followup(message, contexts=(context,))
                accepted = [context, message]
            elif roll < 0.76:
                cause: Any = rng.choice([UserCause(), ParentCause(), HookCause("test")])
                agent.cancel(cause, keep_inbox=rng.random() < 0.6)
            elif roll < 0.82 and pending_ids(agent):
                agent.remove(rng.choice(pending_ids(agent)))
            elif roll < 0.9 and pending_ids(agent):
                target: Any = rng.choice(["next-turn", "next-step"])
                agent.move(rng.choice(pending_ids(agent)), target)
            elif (
                roll < 0.95
                and pending_ids(agent)
                and agent.replace(rng.choice(pending_ids(agent)), message)
            ):
                accepted = [message]
        except InboxCoreError:
            accepted = []  # e.g. SteerUnavailable: rejected, nothing changed
        for item in accepted:
            say("A", item.id)
        await asyncio.sleep(rng.choice([0.0, 0.0, 0.0, 0.001, 0.003]))


async def main(path: str, seed: int) -> None:
    rng = random.Random(seed)
    mode = rng.choice(["progress", "sigkill", "hook"])
    say("MODE", mode)
    fate = Fate(rng, mode)
    if mode == "sigkill":
        timer = threading.Timer(
            rng.uniform(0.0, 0.35), lambda: os.kill(os.getpid(), signal.SIGKILL)
        )
        timer.daemon = True
        timer.start()
    postgres = path.startswith("pg:")
    log: Any
    if postgres:
        conninfo, _, agent_id = path[3:].rpartition("#")
        log = PostgresLog(conninfo, agent_id, lease_seconds=30.0)
    else:
        log = SqliteLog(path, synchronous="NORMAL")
    # progress: die inside the transaction of a random append (after ``countdown`` whole ones)
    countdown = rng.randint(0, 40) if mode == "progress" else -1
    budget = [rng.randint(1, 12)]
    every = rng.randint(1, 25)

    def progress() -> int:
        budget[0] -= 1
        if budget[0] <= 0:
            os._exit(EXIT_PROGRESS)
        return 0

    append = log.append

    def reporting_append(events: Sequence[DurableEvent]) -> None:
        nonlocal countdown
        say("P", len(events))  # the parent checks the log grew by whole appends only
        if countdown == 0 and postgres:
            kill = threading.Timer(rng.uniform(0.0, 0.003), os.kill, (os.getpid(), signal.SIGKILL))
            kill.daemon = True
            kill.start()
        elif countdown == 0:
            log.connection.set_progress_handler(progress, every)
        countdown -= 1
        append(events)
        say("C")

    log.append = reporting_append  # type: ignore[method-assign]
    host = RandomHost(rng, fate)
    agent = LoopAgent(host, log=log)  # replays and resumes (R27)
    host.agent = agent
    say("RESUMED")

    def subscriber(_note: Notification) -> None:
        fate.tick()

    agent.subscribe(subscriber)
    await traffic(agent, rng)
    say("DONE")
    os._exit(0)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], int(sys.argv[2])))
