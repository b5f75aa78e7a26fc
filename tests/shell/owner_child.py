"""Child process for the ownership tests (test_ownership.py).

Usage: ``python owner_child.py MODE STORE AGENT DIR``; STORE is an SQLite path
or ``pg:<conninfo>``. Protocol on stdout, one flushed line each.

- ``race``: build the log, wait for ``DIR/go``, ``acquire()``; print ``WON`` or
  ``OWNED``, then hold until ``DIR/done`` exists.
- ``fork``: acquire the SQLite log, then ``os.fork()``. The forked child tries to
  acquire it too (``CHILD OWNED`` or ``CHILD WON``), says ``CHILD <pid> WAITING`` and
  lives until ``DIR/done`` exists; the parent, once ``DIR/child-spoke`` exists, says
  ``PARENT DYING`` and exits at once, the lock still held.
- ``paused``: a ``LoopAgent`` over a PostgresLog with a 0.5 s lease; followup
  ``m1`` whose step takes ``STEP_SECONDS`` (the parent SIGSTOPs us meanwhile,
  takes the log over, SIGCONTs); then print how the driver stopped and whether a
  later followup ``m2`` was refused (``STOPPED <cause>``, ``REFUSED <error>``).
"""

from __future__ import annotations

import asyncio
import os
import sys
import time
from pathlib import Path
from typing import Any

from inbox_core import InboxCoreError, StepOutcome, UserMessage, create_user_message
from inbox_core.shell import AbortSignal, DriverStopped, EchoHost, LoopAgent, PostgresLog, SqliteLog

STEP_SECONDS = 2.0


def say(*words: object) -> None:
    sys.stdout.write(" ".join(map(str, words)) + "\n")
    sys.stdout.flush()


def open_log(store: str, agent: str, lease: float = 30.0) -> Any:
    if store.startswith("pg:"):
        return PostgresLog(store[3:], agent, lease_seconds=lease)
    return SqliteLog(store, agent_id=agent)


def wait_for(path: Path) -> None:
    while not path.exists():
        time.sleep(0.005)


def race(store: str, agent: str, folder: Path) -> None:
    log = open_log(store, agent)
    say("READY")
    wait_for(folder / "go")
    try:
        log.acquire()
        say("WON")
    except InboxCoreError as error:
        say("OWNED", type(error).__name__)
    wait_for(folder / "done")


def fork_and_die(store: str, agent: str, folder: Path) -> None:
    log = open_log(store, agent)
    log.acquire()
    pid = os.fork()
    if pid == 0:  # the child: owns nothing (R29)
        mine = open_log(store, agent)
        try:
            mine.acquire()
            say("CHILD WON")
        except InboxCoreError as error:
            say("CHILD OWNED", type(error).__name__)
        say("CHILD", os.getpid(), "WAITING")
        wait_for(folder / "done")
        os._exit(0)
    wait_for(folder / "child-spoke")
    say("PARENT DYING")
    os._exit(0)  # the lock is still held: only the kernel drops it


class SlowStep(EchoHost):
    async def run_step(self, turn: int, step: int, signal: AbortSignal) -> StepOutcome:
        say("IN-STEP", turn, step)
        await asyncio.sleep(STEP_SECONDS)  # wall time: the SIGSTOP passes inside it
        return await super().run_step(turn, step, signal)


async def paused(store: str, agent: str) -> None:
    log = open_log(store, agent, lease=0.5)
    agent_ = LoopAgent(SlowStep(), log=log)
    m1: UserMessage = create_user_message("m1 from the paused owner")
    agent_.followup(m1)
    say("SENT", m1.id)
    try:
        await agent_.when_idle()
        say("IDLE")
    except DriverStopped as error:
        say("STOPPED", type(error.__cause__).__name__)
    m2 = create_user_message("m2 from the paused owner")
    try:
        agent_.followup(m2)
        say("ACCEPTED", m2.id)
    except InboxCoreError as error:
        say("REFUSED", type(error).__name__, m2.id)


def main() -> None:
    mode, store, agent, folder = sys.argv[1:5]
    if mode == "race":
        race(store, agent, Path(folder))
    elif mode == "fork":
        fork_and_die(store, agent, Path(folder))
    else:
        asyncio.run(paused(store, agent))


if __name__ == "__main__":
    main()
