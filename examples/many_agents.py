"""Many agents from one store: a worker process that serves a set of agents (R29).

``Worker`` is the pattern of README's "Running many agents": agents are
opened on demand from their logs (``LoopAgent`` acquires, replays, resumes),
idle ones are detached to free memory (their inbox stays in the log), leases
are renewed by a heartbeat, and agents whose owner died are adopted once
their lease lapses. It is store-agnostic (``open_log(agent_id)``); with
PostgreSQL many worker processes or machines share one database.

As a program it runs one worker over PostgreSQL (tests/shell/test_many_agents.py
runs two and kills one)::

    python examples/many_agents.py CONNINFO NAME --own a1 a2 --watch b1 b2 \
        [--send N] [--delay SECONDS] [--lease SECONDS] [--idle SECONDS]

It prints one line per event (``SERVING``, ``ADOPTED <id>``, ``IDLE <id> <turns>``,
``DETACHED <id>``, ``LOST <id>``), and detaches every agent on SIGTERM.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
import sys
import time
from collections.abc import Callable, Iterable
from typing import Any

from inbox_core import InboxCoreError, LogFenced, LogOwned, create_user_message
from inbox_core.shell import EchoHost, EventLog, Host, LoopAgent, PostgresLog


class Worker:
    """Serve many agents from one store in one process (one event loop)."""

    def __init__(
        self,
        open_log: Callable[[str], EventLog],
        host: Callable[[str], Host],
        *,
        lease_seconds: float = 30.0,
        idle_seconds: float = 60.0,
        say: Callable[..., None] = lambda *words: None,
    ) -> None:
        self.open_log = open_log
        self.host = host
        self.lease_seconds = lease_seconds
        self.idle_seconds = idle_seconds
        self.say = say
        self.agents: dict[str, LoopAgent] = {}
        self.idle_since: dict[str, float] = {}
        self.parked: set[str] = set()  # detached by us: reopened on demand, never adopted

    def agent(self, agent_id: str) -> LoopAgent:
        """The live agent, opened on demand: acquire (or ``LogOwned``), replay, resume (R27)."""
        agent = self.agents.get(agent_id)
        if agent is None:
            agent = LoopAgent(self.host(agent_id), log=self.open_log(agent_id))
            self.agents[agent_id] = agent
            self.idle_since.pop(agent_id, None)
            self.parked.discard(agent_id)
        return agent

    def send(self, agent_id: str, text: str) -> None:
        """Deliver a followup to an agent, opening it if needed."""
        self.agent(agent_id).followup(create_user_message(text))
        self.idle_since.pop(agent_id, None)

    def adopt(self, agent_ids: Iterable[str]) -> list[str]:
        """Take over every agent whose owner is gone (its lease lapsed); skip live ones."""
        adopted = []
        for agent_id in agent_ids:
            if agent_id in self.agents or agent_id in self.parked:
                continue
            try:
                self.agent(agent_id)  # Resume closes the orphaned turn, starts pending work
            except LogOwned:
                continue
            adopted.append(agent_id)
            self.say("ADOPTED", agent_id)
        return adopted

    def heartbeat(self) -> None:
        """Renew every held lease (stores with leases); drop agents that lost theirs."""
        for agent_id, agent in list(self.agents.items()):
            renew = getattr(agent.log, "renew", None)
            if renew is None:
                continue
            try:
                renew()
            except LogFenced:
                self.say("LOST", agent_id)  # another worker has it now
                del self.agents[agent_id]
            except InboxCoreError as error:  # e.g. LogUnavailable: try again next beat
                self.say("HEARTBEAT-FAILED", agent_id, type(error).__name__)

    async def detach_idle(self) -> None:
        """Detach agents idle for ``idle_seconds``: frees memory, keeps their inbox."""
        now = time.monotonic()
        for agent_id, agent in list(self.agents.items()):
            if agent.status != "idle":
                self.idle_since.pop(agent_id, None)
                continue
            if agent_id not in self.idle_since:
                self.idle_since[agent_id] = now
                self.say("IDLE", agent_id, agent.state.last_turn)
            elif now - self.idle_since[agent_id] >= self.idle_seconds:
                await self.detach(agent_id)

    async def detach(self, agent_id: str) -> None:
        agent = self.agents.pop(agent_id)
        self.idle_since.pop(agent_id, None)
        await agent.detach()
        self.parked.add(agent_id)
        close = getattr(agent.log, "close", None)
        if close is not None:
            close()
        self.say("DETACHED", agent_id)

    async def run(self, watch: Iterable[str], stop: asyncio.Event) -> None:
        """Heartbeat, adopt orphans, detach idle agents, until ``stop`` is set; then detach all."""
        watch = list(watch)
        tick = self.lease_seconds / 3
        try:
            while not stop.is_set():
                self.heartbeat()
                self.adopt(watch)
                await self.detach_idle()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), tick)
        finally:
            for agent_id in list(self.agents):
                await self.detach(agent_id)  # graceful: the inbox stays in the log


async def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("conninfo")
    parser.add_argument("name")
    parser.add_argument("--own", nargs="*", default=[])
    parser.add_argument("--watch", nargs="*", default=[])
    parser.add_argument("--send", type=int, default=0, help="followups per own agent at start")
    parser.add_argument("--delay", type=float, default=0.0, help="seconds per step")
    parser.add_argument("--lease", type=float, default=30.0)
    parser.add_argument("--idle", type=float, default=60.0)
    args = parser.parse_args(argv)

    def say(*words: object) -> None:
        print(args.name, *words, flush=True)

    import psycopg  # noqa: PLC0415 - the worker program needs the postgres extra

    conn: Any = psycopg.connect(args.conninfo, autocommit=True)  # shared by all its logs
    worker = Worker(
        lambda agent_id: PostgresLog(conn, agent_id, lease_seconds=args.lease),
        lambda agent_id: EchoHost(delay=args.delay),
        lease_seconds=args.lease,
        idle_seconds=args.idle,
        say=say,
    )
    for agent_id in args.own:
        worker.agent(agent_id)
        for n in range(args.send):
            worker.send(agent_id, f"{agent_id} #{n + 1} from {args.name}")
    say("SERVING", *sorted(worker.agents))
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGTERM, stop.set)
    await worker.run(args.watch, stop)
    say("STOPPED")
    conn.close()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1:]))
