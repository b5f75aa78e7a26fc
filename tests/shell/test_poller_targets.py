"""The SQLite change poller rings only the agents that changed (R36 v4): a commit by
another process to one agent's log or posts wakes that agent's watchers and outcome
waiters at once (never the slow poll), and costs the watchers of the other agents of the
file no read. So the streams of a front door over a hundred agents cost one read per
commit, not a hundred."""

from __future__ import annotations

import asyncio
import sqlite3
from collections import Counter
from pathlib import Path

from inbox_core.codec import event_to_json
from inbox_core.commands import queue
from inbox_core.events import TurnStarted
from inbox_core.shell import PostRejected, SqliteStore
from inbox_core.shell.stores.sqlite.wake import agent_heads

from .support import msg, run_async

TURN = '{"type":"turn/start","data":{"turn":%d}}'


def counting_reads(store: SqliteStore) -> Counter[str]:
    """Count the store's event reads per agent (what a wake costs a watcher)."""
    reads: Counter[str] = Counter()
    original = store._read_events

    def counted(agent_id: str, since: int, limit: int) -> object:
        reads[agent_id] += 1
        return original(agent_id, since, limit)

    store._reads._watching._read_events = counted  # type: ignore[attr-defined]
    return reads


@run_async
async def test_r36_v4_a_commit_to_one_agent_wakes_its_watchers_and_no_other_agents(
    tmp_path: Path,
) -> None:
    path = tmp_path / "agents.db"
    store = SqliteStore(path)
    store.prepare()
    reads = counting_reads(store)
    other = sqlite3.connect(path, isolation_level=None)  # another process: no bell rung
    seen: dict[str, list[int]] = {"busy": [], "quiet": []}

    async def follow(agent: str) -> None:
        async for seq, _event in store.watch(agent):
            seen[agent].append(seq)

    tasks = [asyncio.ensure_future(follow(agent)) for agent in seen]
    try:
        await asyncio.sleep(0.3)  # both feeds read once, the poller took its baseline
        quiet_before = reads["quiet"]
        for seq in range(20):
            other.execute(
                "INSERT INTO events (agent_id, seq, event) VALUES ('busy', ?, ?)",
                (seq, TURN % (seq + 1)),
            )
            async with asyncio.timeout(5):  # woken by the poller, not the slow poll
                while len(seen["busy"]) <= seq:
                    await asyncio.sleep(0.005)
        assert seen["busy"] == list(range(20))
        assert reads["busy"] >= 2  # its feed read after the commits
        assert reads["quiet"] == quiet_before  # twenty commits of another agent: no read
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        other.close()
        store.close()


@run_async
async def test_r36_v4_a_rejection_by_another_process_wakes_the_posts_waiter_at_once(
    tmp_path: Path,
) -> None:
    """A post rejected elsewhere appends nothing: the pending posts' count says it."""
    path = tmp_path / "agents.db"
    store = SqliteStore(path)
    try:
        receipt = store.post("a", queue(msg("x")))
        other = sqlite3.connect(path, isolation_level=None)
        waiting = asyncio.ensure_future(store.wait(receipt, timeout=60))
        await asyncio.sleep(0.3)
        other.execute(
            "UPDATE posts SET outcome = 'rejected', error = 'TurnMismatch', message = 'no',"
            " decided_at = 'now' WHERE post_id = ?",
            (receipt.post_id,),
        )
        other.close()
        outcome = await asyncio.wait_for(waiting, 5)  # not the slow poll (10 to 20 s)
    finally:
        store.close()
    assert outcome == PostRejected("TurnMismatch", "no")


def test_r36_v4_agent_heads_change_with_every_event_decision_and_post(tmp_path: Path) -> None:
    path = tmp_path / "agents.db"
    with SqliteStore(path) as store:
        first = store.post("a", queue(msg("x")))
    conn = sqlite3.connect(path, isolation_level=None)
    seen = [agent_heads(conn, ["a", "b"])]

    def step(statement: str, *args: object) -> None:
        conn.execute(statement, args)
        seen.append(agent_heads(conn, ["a", "b"]))

    event = event_to_json(TurnStarted(1))
    step("INSERT INTO events (agent_id, seq, event) VALUES ('a', 0, ?)", str(event))
    step("INSERT INTO posts (agent_id, command) VALUES ('a', '{}')")
    # a decision and a new post at once: the count stays, the last pending id moves
    step("UPDATE posts SET outcome = 'applied' WHERE post_id = ?", first.post_id)
    conn.execute("INSERT INTO posts (agent_id, command) VALUES ('a', '{}')")
    seen[-1] = agent_heads(conn, ["a", "b"])
    conn.close()
    heads_of_a = [heads["a"] for heads in seen]
    assert len(set(heads_of_a)) == len(heads_of_a)  # every change is seen
    assert len({heads["b"] for heads in seen}) == 1  # b never changed
