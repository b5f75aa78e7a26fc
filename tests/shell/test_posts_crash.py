"""Delivery from any process under failure (R35, R36): kill -9 of the owner while posts
stream in, concurrent posting processes, a producer with no Python (psql, sqlite3), a
restarted PostgreSQL server and a lost notification. Long loops are marked slow."""

from __future__ import annotations

import asyncio
import collections
import random
import shutil
import subprocess
import time
from typing import Any

import pytest

from inbox_core import InboxSpliced, MessageAdmitted, fates
from inbox_core.shell import LogUnavailable, LoopAgent, PostApplied, PostgresStore, SqliteStore
from inbox_core.shell.stores.postgres.schema import PG_POSTS
from inbox_core.shell.stores.sqlite.schema import SQLITE_POSTS

from .posts_support import (
    AnyStore,
    agent_name,
    child,
    execute,
    expect_line,
    posts_table,
    until,
)
from .support import ScriptedHost, run_async, text_of


def _pending(store: AnyStore, agent: str) -> int:
    table = posts_table(store)
    sql = f"SELECT COUNT(*) FROM {table} WHERE agent_id = %s AND outcome IS NULL"
    return int(execute(store, sql, agent)[0][0])


def _outcomes(store: AnyStore, agent: str) -> collections.Counter[str]:
    table = posts_table(store)
    rows = execute(store, f"SELECT outcome FROM {table} WHERE agent_id = %s", agent)
    return collections.Counter(str(row[0]) for row in rows)


def _serve_until_drained(store: AnyStore, agent: str) -> list[Any]:
    """Own the agent (after the children's leases ran out), serve until no post is pending,
    and return the final log."""

    async def main() -> list[Any]:
        options = {"lease_seconds": 1.0} if isinstance(store, PostgresStore) else {}
        deadline = time.monotonic() + 30
        while True:
            try:
                owner = LoopAgent(ScriptedHost(), log=store.log(agent, **options))
                break
            except Exception:  # LogOwned while a killed child's lease runs out
                if time.monotonic() > deadline:
                    raise
                await asyncio.sleep(0.05)
        await until(lambda: _pending(store, agent) == 0, timeout=30, what="every post decided")
        events = owner.log.read()
        await owner.detach()
        return events

    return run_async(main)()


def _inserted_texts(events: list[Any]) -> list[str]:
    return [
        text_of(entry.message)
        for event in events
        if isinstance(event, InboxSpliced)
        for entry in event.inserted
    ]


def _check_each_posters_order(texts: list[str], posters: int, per_poster: int) -> None:
    by_poster: dict[str, list[int]] = collections.defaultdict(list)
    for text in texts:
        pid, index = text.rsplit("-", 1)
        by_poster[pid].append(int(index))
    assert len(by_poster) == posters
    for indexes in by_poster.values():
        assert indexes == list(range(per_poster)), "a poster's own order was not kept (R35)"


def _kill_owner_while_posting(
    backend: tuple[AnyStore, str],
    *,
    posters: int,
    per_poster: int,
    kills: int,
    seed: int,
    mode: str = "post",
) -> list[Any]:
    store, spec = backend
    agent = agent_name()
    rng = random.Random(seed)
    senders = [child(mode, spec, agent, str(per_poster)) for _ in range(posters)]
    try:
        for _ in range(kills):
            owner = child("serve", spec, agent)
            try:
                expect_line(owner, "SERVING")
                time.sleep(rng.uniform(0.0, 0.3))
            finally:
                owner.kill()  # SIGKILL: no detach, no release
                owner.wait()
        for sender in senders:
            expect_line(sender, "POSTED")
            assert sender.wait(timeout=60) == 0
    finally:
        for sender in senders:
            sender.kill()
    events = _serve_until_drained(store, agent)
    assert _outcomes(store, agent) == {"applied": posters * per_poster}
    return events


@pytest.mark.parametrize("seed", [1, 2])
def test_r35_kill_the_owner_while_posts_stream_in_each_applied_exactly_once(
    backend: tuple[AnyStore, str], seed: int
) -> None:
    events = _kill_owner_while_posting(backend, posters=2, per_poster=40, kills=4, seed=seed)
    texts = _inserted_texts(events)
    assert len(texts) == len(set(texts)) == 80, "a post was lost or applied twice"
    _check_each_posters_order(texts, posters=2, per_poster=40)


def test_r35_kill_the_owner_mid_turn_no_posted_followup_is_admitted_twice(
    backend: tuple[AnyStore, str],
) -> None:
    events = _kill_owner_while_posting(
        backend, posters=2, per_poster=25, kills=4, seed=7, mode="followup"
    )
    admitted = collections.Counter(
        text_of(e.message) for e in events if isinstance(e, MessageAdmitted)
    )
    assert all(count == 1 for count in admitted.values()), admitted.most_common(3)
    by_text = {text_of(e.message): e.message.id for e in events if isinstance(e, MessageAdmitted)}
    fate_of = fates(events)
    posted = set(_inserted_texts(events))
    assert len(posted) == 50  # every post entered the log (a restore re-inserts the same text)
    assert all(by_text.get(text) is None or by_text[text] in fate_of for text in posted)


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(3, 9))
def test_r35_kill_loop_slow(backend: tuple[AnyStore, str], seed: int) -> None:
    events = _kill_owner_while_posting(backend, posters=4, per_poster=100, kills=15, seed=seed)
    texts = _inserted_texts(events)
    assert len(texts) == len(set(texts)) == 400
    _check_each_posters_order(texts, posters=4, per_poster=100)


def test_r35_concurrent_posting_processes_one_total_order_no_deadlock(
    backend: tuple[AnyStore, str],
) -> None:
    store, spec = backend
    agent = agent_name()
    owner = child("serve", spec, agent)
    try:
        expect_line(owner, "SERVING")
        senders = [child("post", spec, agent, "30") for _ in range(4)]
        for sender in senders:
            expect_line(sender, "POSTED")
            assert sender.wait(timeout=60) == 0
    finally:
        owner.kill()
        owner.wait()
    events = _serve_until_drained(store, agent)
    texts = _inserted_texts(events)
    assert len(texts) == len(set(texts)) == 120
    _check_each_posters_order(texts, posters=4, per_poster=30)


# ------------------------------------------------------- a producer in any language

_COMMAND = (
    '{"type":"send","input":{"message":{"id":"from-%s","role":"user",'
    '"content":[{"type":"text","text":"hello from %s"}],"source":{"kind":"user"}},'
    '"contexts":[],"target":"next-turn","wakeup":false}}'
)


def test_r35_a_producer_without_python_posts_with_the_documented_sql(
    backend: tuple[AnyStore, str],
) -> None:
    """specs/shell.md section 12: the one INSERT a producer runs, here through psql or the
    sqlite3 shell, with the command written by hand in its JSON form."""
    store, spec = backend
    agent = agent_name()
    if isinstance(store, SqliteStore):
        tool = shutil.which("sqlite3")
        command = _COMMAND % ("sqlite3", "sqlite3")
        sql = (
            f"INSERT INTO {SQLITE_POSTS} (agent_id, command, key) VALUES "
            f"('{agent}', '{command}', 'k1') ON CONFLICT (agent_id, key) DO NOTHING "
            "RETURNING post_id;"
        )
        argv = [str(tool), store.path, sql]
    else:
        tool = shutil.which("psql")
        command = _COMMAND % ("psql", "psql")
        sql = (
            f"INSERT INTO {PG_POSTS} (agent_id, command, key) VALUES "
            f"('{agent}', '{command}', 'k1') ON CONFLICT (agent_id, key) DO NOTHING "
            "RETURNING post_id;"
        )
        argv = [str(tool), "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-d", spec, "-c", sql]
    if tool is None:
        pytest.skip("no command-line client on PATH")
    done = subprocess.run(argv, capture_output=True, text=True, timeout=30, check=True)
    post_id = int(done.stdout.split()[0])
    again = subprocess.run(argv, capture_output=True, text=True, timeout=30, check=True)
    assert again.stdout.strip() == ""  # the key was posted before: no second row

    async def main() -> None:
        owner = LoopAgent(ScriptedHost(), log=store.log(agent))
        from inbox_core.shell import Receipt

        assert await store.wait(Receipt(agent, post_id), timeout=10) == PostApplied()
        assert [str(e.message.id) for e in owner.inbox.next_turn] == [
            "from-sqlite3" if isinstance(store, SqliteStore) else "from-psql"
        ]
        await owner.detach()

    run_async(main)()


# ------------------------------------------------------------ PostgreSQL failures


def test_r36_a_lost_notification_is_covered_by_the_poll(pg: str) -> None:
    store = PostgresStore(pg)
    agent = agent_name()

    async def main() -> None:
        owner = LoopAgent(ScriptedHost(), log=store.log(agent))
        first = store.post(agent, _queue("before"))
        assert await store.wait(first, timeout=10) == PostApplied()
        killed = execute(
            store,
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            # this database's listeners only: other test workers share the server
            "WHERE query LIKE 'LISTEN inbox_core%%' AND pid <> pg_backend_pid() "
            "AND datname = current_database()",
        )
        assert killed, "no LISTEN connection to terminate"
        second = store.post(agent, _queue("after"))
        assert await store.wait(second, timeout=10) == PostApplied()
        assert [text_of(e.message) for e in owner.inbox.next_turn] == ["before", "after"]
        await owner.detach()

    try:
        run_async(main)()
    finally:
        store.close()


def _queue(text: str) -> Any:
    from inbox_core import create_user_message
    from inbox_core.commands import queue

    return queue(create_user_message(text))


def test_r35_postgres_restarted_while_posting_and_serving(pg_cluster: Any) -> None:
    """A post either raises a typed error or returns a durable receipt; never half written.
    The owner keeps serving once the server is back."""
    conninfo = pg_cluster.conninfo
    store = PostgresStore(conninfo)
    agent = agent_name()
    receipts: list[Any] = []
    failed = 0

    async def main() -> None:
        nonlocal failed
        owner = LoopAgent(ScriptedHost(), log=store.log(agent, lease_seconds=30.0))
        for i in range(40):
            if i == 15:
                await asyncio.to_thread(pg_cluster.restart)
            try:
                receipts.append(store.post(agent, _queue(f"m-{i}"), key=f"k-{i}"))
            except LogUnavailable:
                failed += 1
                await asyncio.sleep(0.1)
        for receipt in receipts:
            assert await store.wait(receipt, timeout=30) == PostApplied()
        texts = [text_of(e.message) for e in owner.inbox.next_turn]
        assert len(texts) == len(receipts) == len(set(texts))
        assert texts == sorted(texts, key=lambda t: int(t.split("-")[1]))
        await owner.detach()

    try:
        run_async(main)()
    finally:
        store.close()
    rows = PostgresStore(conninfo)
    try:
        assert int(execute(rows, f"SELECT COUNT(*) FROM {PG_POSTS}")[0][0]) == len(receipts)
    finally:
        rows.close()
    assert failed >= 1, "the restart was not seen: the test proves nothing"
