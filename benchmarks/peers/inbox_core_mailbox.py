"""B8's system under test: inbox_core's stores (R35, R36; issue 19).

- ``producer().post(agent, payload)``: ``store.post(agent, queue(message))`` with the
  payload as the message's text (``json.dumps``); durable when it returns. A queue
  (next-turn, not waking) is the delivery alone: no turn runs, so the figures are
  the post path and not a host's work.
- ``consumer().serve(expected, applied)``: one ``LoopAgent`` per agent over the
  store's log (on PostgreSQL all over one shared connection), in one event loop
  on a thread of the consumer process, serving its posts (the agents' own
  ``PostServer``s, R35); ``applied`` is called from a subscriber on
  ``agent/inbox/inserted``, which is announced only after the transaction that
  consumed the post and appended its splice committed.
- ``appender()``/``watcher()``: the owner queues into an agent's log (one append
  each); ``store.watch(agent)`` in the other process.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Callable, Mapping
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any, ClassVar

from .base import Applied, Backend, Payload, Target, stamp


def _store(target: Target) -> Any:
    from inbox_core.shell import PostgresStore, SqliteStore  # noqa: PLC0415

    if target.backend == "postgres":
        return PostgresStore(target.location)
    return SqliteStore(target.location)


def _queue(payload: Payload) -> Any:
    from inbox_core import create_user_message  # noqa: PLC0415
    from inbox_core.commands import queue  # noqa: PLC0415

    return queue(create_user_message(json.dumps(payload)))


def _payload(message: Any) -> Payload:
    return json.loads(message.content[0]["text"])  # type: ignore[no-any-return]


class _Producer:
    def __init__(self, target: Target) -> None:
        self._store = _store(target)

    def post(self, agent: str, payload: Payload) -> None:
        self._store.post(agent, _queue(payload))

    def close(self) -> None:
        self._store.close()


class _Consumer:
    """The agents' ``LoopAgent``s in one event loop on a thread."""

    def __init__(self, target: Target) -> None:
        self._target = target
        self._store = _store(target)
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._thread.start()
        self._agents: list[Any] = []
        self._shared: Any = None

    def _log(self, agent_id: str) -> Any:
        """PostgreSQL: every agent's log over one autocommit connection (as a host with many
        agents in one process would, README "Running many agents"); SQLite: its own."""
        if self._target.backend != "postgres":
            return self._store.log(agent_id)
        from inbox_core.shell import PostgresLog  # noqa: PLC0415

        if self._shared is None:
            import psycopg  # noqa: PLC0415

            self._shared = psycopg.connect(self._target.location, autocommit=True)
        return PostgresLog(self._shared, agent_id)

    def _run(self, work: Callable[[], Any]) -> Any:
        async def call() -> Any:
            return work()

        future: Future[Any] = asyncio.run_coroutine_threadsafe(call(), self._loop)
        return future.result()

    def serve(self, expected: Mapping[str, int], applied: Applied) -> None:
        from inbox_core.shell import EchoHost, LoopAgent  # noqa: PLC0415

        def open_all() -> None:
            for agent_id in expected:
                agent = LoopAgent(EchoHost(), log=self._log(agent_id))

                def seen(note: Any, agent_id: str = agent_id) -> None:
                    if note.type == "agent/inbox/inserted":
                        applied(agent_id, _payload(note.message))

                agent.subscribe(seen)
                self._agents.append(agent)

        self._run(open_all)

    def stop(self, timeout: float) -> None:
        agents, self._agents = self._agents, []

        async def detach() -> None:
            await asyncio.gather(*(agent.detach() for agent in agents))

        asyncio.run_coroutine_threadsafe(detach(), self._loop).result(timeout)

    def close(self) -> None:
        if self._agents:
            self.stop(30)

        async def cancel_the_rest() -> None:  # e.g. a lingering LISTEN task
            current = asyncio.current_task()
            rest = [task for task in asyncio.all_tasks() if task is not current]
            for task in rest:
                task.cancel()
            await asyncio.gather(*rest, return_exceptions=True)

        asyncio.run_coroutine_threadsafe(cancel_the_rest(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        self._store.close()
        if self._shared is not None:
            self._shared.close()


class _Appender:
    def __init__(self, target: Target, text: str) -> None:
        self._store = _store(target)
        self._text = text
        self._agents: dict[str, Any] = {}

    def open(self, agent: str) -> None:
        from inbox_core.shell import EchoHost, LoopAgent  # noqa: PLC0415

        self._agents[agent] = LoopAgent(EchoHost(), log=self._store.log(agent))

    def write(self, agent: str, count: int, interval: float) -> None:
        import time  # noqa: PLC0415

        from inbox_core import create_user_message  # noqa: PLC0415

        owner = self._agents[agent]
        for i in range(count):
            owner.queue(create_user_message(json.dumps(stamp(-1, i, self._text))))  # one append
            time.sleep(interval)

    def close(self) -> None:
        for agent in self._agents.values():
            agent.log.release()
        self._store.close()


class _Watcher:
    def __init__(self, target: Target) -> None:
        self._target = target

    def watch(
        self, agent: str, count: int, seen: Applied, ready: Callable[[], None], timeout: float
    ) -> None:
        from inbox_core.events import InboxSpliced  # noqa: PLC0415

        async def follow() -> None:
            store = _store(self._target)
            found = 0
            try:
                ready()  # watch reads from seq 0: nothing appended after this is missed
                async for _, event in store.watch(agent, since=0):
                    if isinstance(event, InboxSpliced):
                        for entry in event.inserted:
                            seen(agent, _payload(entry.message))
                            found += 1
                    if found >= count:
                        return
            finally:
                store.close()

        asyncio.run(asyncio.wait_for(follow(), timeout))

    def close(self) -> None:
        pass


@dataclass(frozen=True)
class InboxCoreMailbox:
    name: ClassVar[str] = "inbox_core"
    backends: ClassVar[frozenset[Backend]] = frozenset({"postgres", "sqlite"})
    target: Target
    text: str = ""

    def prepare(self) -> None:
        store = _store(self.target)
        try:
            store.prepare()  # creates the tables (or the file)
        finally:
            store.close()

    def producer(self) -> _Producer:
        return _Producer(self.target)

    def consumer(self) -> _Consumer:
        return _Consumer(self.target)

    def appender(self) -> _Appender:
        return _Appender(self.target, self.text)

    def watcher(self) -> _Watcher:
        return _Watcher(self.target)

    def describe(self) -> dict[str, str]:
        from inbox_core.shell.serving import BATCH  # noqa: PLC0415
        from inbox_core.shell.stores.postgres.listen import PG_POLL_SECONDS  # noqa: PLC0415
        from inbox_core.shell.stores.sqlite.wake import SQLITE_POLL_SECONDS  # noqa: PLC0415

        return {
            "command": "queue (next-turn, not waking): delivery only, no turn",
            "consumer": f"one LoopAgent per agent, one event loop; up to {BATCH} posts "
            "consumed per transaction",
            "wake": f"LISTEN/NOTIFY + {PG_POLL_SECONDS} s poll (PostgreSQL); "
            f"PRAGMA data_version every {SQLITE_POLL_SECONDS} s (SQLite)",
        }
