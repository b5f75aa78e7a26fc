"""Child process for the post tests (test_posts.py, test_posts_crash.py).

Usage: ``python post_child.py MODE STORE AGENT [N]``; STORE as ``inbox-core``
takes it (``sqlite:PATH`` or a ``postgresql://`` URL). One flushed line each.

- ``serve``: own AGENT (``LoopAgent`` over ``EchoHost``; on PostgreSQL a one-second
  lease, retried while a killed owner's lease runs out), say ``SERVING`` and serve
  its posts until killed.
- ``post``: post N queued messages ``<pid>-<i>`` in order, say ``POSTED N``.
- ``followup``: the same with followups (each may open a turn).
"""

from __future__ import annotations

import asyncio
import os
import sys
import time

from inbox_core import LogOwned, create_user_message
from inbox_core.commands import followup, queue
from inbox_core.shell import EchoHost, LoopAgent, PostgresStore
from inbox_core.shell.stores.opening import open_store


def say(*words: object) -> None:
    sys.stdout.write(" ".join(map(str, words)) + "\n")
    sys.stdout.flush()


async def serve(spec: str, agent_id: str) -> None:
    store = open_store(spec)
    options = {"lease_seconds": 1.0} if isinstance(store, PostgresStore) else {}
    deadline = time.monotonic() + 30
    while True:
        try:
            agent = LoopAgent(EchoHost(), log=store.log(agent_id, **options))
            break
        except LogOwned:  # a killed owner's lease has not run out yet
            if time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.05)
    say("SERVING")
    while True:
        await asyncio.sleep(3600)
    await agent.aclose()  # pragma: no cover - killed before


def post(spec: str, agent_id: str, count: int, make: object) -> None:
    store = open_store(spec)
    for i in range(count):
        store.post(agent_id, make(create_user_message(f"{os.getpid()}-{i}")))  # type: ignore[operator]
    say("POSTED", count)


if __name__ == "__main__":
    mode, spec, agent_id = sys.argv[1:4]
    if mode == "serve":
        asyncio.run(serve(spec, agent_id))
    else:
        post(spec, agent_id, int(sys.argv[4]), followup if mode == "followup" else queue)
