"""Many agents, served where there is work (R37): the host of README's "Running many agents".

From this directory, start workers (any number, on any machines that share the store)
and post work from anywhere; each agent is served by one worker at a time:

    inbox-core serve sqlite:agents.db --host many_agents:make_host
    inbox-core post sqlite:agents.db alice --followup "hello" --wait

Run as a program, it does both in one process: a ``Worker`` over the store, a post to
each of N agents, every post applied, then the worker's statistics::

    python examples/many_agents.py [STORE] [--agents N] [--delay SECONDS]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys

from inbox_core import HostRecord, create_user_message, followup
from inbox_core.shell import AbortSignal, EchoHost, PostApplied, Recorded, Worker, open_store


class Greeter(EchoHost):
    """Answers every step with a greeting, kept in the log as a host record (R30) that
    names the process that drove it. ``delay`` is how long a step takes (an abort cuts it)."""

    def __init__(self, agent_id: str, delay: float) -> None:
        super().__init__(delay=delay)
        self.agent_id = agent_id

    async def run_step(self, turn: int, step: int, signal: AbortSignal) -> Recorded[object]:
        outcome = await super().run_step(turn, step, signal)
        reply = {"text": f"hello from {self.agent_id}, turn {turn}", "pid": os.getpid()}
        return Recorded(outcome, [HostRecord("host/reply", reply)])


def make_host(agent_id: str) -> Greeter:
    """The worker's factory: ``FACTORY(agent_id)`` returns that agent's ``Host``."""
    return Greeter(agent_id, delay=float(os.environ.get("MANY_AGENTS_DELAY", "0.01")))


async def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("store", nargs="?", default="sqlite:agents.db")
    parser.add_argument("--agents", type=int, default=100)
    parser.add_argument("--delay", type=float, default=0.01, help="seconds per step")
    args = parser.parse_args(argv)
    os.environ["MANY_AGENTS_DELAY"] = str(args.delay)
    store = open_store(args.store)
    worker = Worker(store, make_host, idle_seconds=1.0, poll_seconds=0.1)
    serving = asyncio.create_task(worker.run())
    receipts = [
        store.post(f"agent-{n}", followup(create_user_message(f"hi {n}")))
        for n in range(args.agents)
    ]
    outcomes = [await store.wait(receipt, timeout=60) for receipt in receipts]
    applied = sum(outcome == PostApplied() for outcome in outcomes)
    await asyncio.gather(*(agent.when_idle() for agent in worker.agents.values()))
    print(f"applied {applied} of {len(receipts)} posts; every turn ended")
    print(worker.stats().line())
    worker.stop()
    await serving
    store.close()
    return 0 if applied == len(receipts) else 1


if __name__ == "__main__":
    sys.exit(asyncio.run(main(sys.argv[1:])))
