"""A posts row is one agent's problem at most (R35 v4, R37 v4; issue 28, items 1-9 and 15).

Any producer, in any language, can write any cells into the posts table (specs/shell.md
section 12): text that decodes to a lone surrogate or a NUL, bytes that are not UTF-8, a
BLOB where text belongs, ids past what a receipt holds, another application's table of
the same name. Each test writes such rows as a foreign producer would (its own connection,
raw SQL) and checks that the row ends decided or reported, that its agent's next post is
applied, and that nothing else notices: other agents, group commits, placement, wakes.
The property and the chaos test are in test_hostile_rows_property.py.
"""

from __future__ import annotations

import asyncio
import json
import logging
import sqlite3
import uuid
from pathlib import Path
from typing import Any

import attrs
import pytest

from inbox_core import InvalidInput, replay
from inbox_core.commands import queue
from inbox_core.events import TurnStarted
from inbox_core.shell import (
    CorruptLog,
    EchoHost,
    IncompatibleLog,
    LogUnavailable,
    LoopAgent,
    PostApplied,
    PostPending,
    PostRejected,
    SqliteLog,
    SqliteStore,
    Worker,
)
from inbox_core.shell.serving import decide, decode_posts
from inbox_core.shell.stores.posts import MAX_OUTCOME_TEXT, Consumed, PendingPost
from inbox_core.shell.stores.writers import Part

from .posts_support import AnyStore, agent_name, execute, posts_table, until
from .support import msg, run_async

# ------------------------------------------------------------------ helpers


def produce(store: AnyStore, agent_sql: str, command_sql: str, *args: Any) -> None:
    """A foreign producer's row: the cells as SQL expressions over ``%s`` arguments (after
    ``prepare``, what a producer in another language runs first: a store writes nothing
    until its first write, R36 v4)."""
    store.prepare()
    execute(
        store,
        f"INSERT INTO {posts_table(store)} (agent_id, command) VALUES ({agent_sql}, {command_sql})",
        *args,
    )


def decided(store: AnyStore, agent: str) -> list[tuple[Any, Any, Any]]:
    """``(outcome, error, message)`` of every row naming ``agent`` (as text or, on SQLite, as
    the BLOB of its bytes), in post order."""
    match = "CAST(agent_id AS BLOB) = CAST(%s AS BLOB)" if _sqlite(store) else "agent_id = %s"
    return [
        tuple(row)
        for row in execute(
            store,
            f"SELECT outcome, error, message FROM {posts_table(store)} WHERE {match} "
            "ORDER BY post_id",
            agent,
        )
    ]


def storable(text: object) -> bool:
    """Text every store can hold: UTF-8 encodable, no NUL, at most MAX_OUTCOME_TEXT long."""
    if not isinstance(text, str) or "\x00" in text or len(text) > MAX_OUTCOME_TEXT:
        return False
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _sqlite(store: AnyStore) -> bool:
    return isinstance(store, SqliteStore)


async def served(store: AnyStore, agent: str, good: str) -> LoopAgent:
    """Post ``good`` for ``agent``, open its owner (which applies what waited first) and wait
    until the good post is applied."""
    receipt = store.post(agent, queue(msg(good)))
    owner = LoopAgent(EchoHost(), log=store.log(agent))  # raised UnicodeEncodeError before
    assert await store.wait(receipt, timeout=10) == PostApplied()
    return owner


def queued_texts(owner: LoopAgent) -> list[str]:
    return [str(entry.message.content[0]["text"]) for entry in owner.inbox.next_turn]


# ------------------------------------------------ 1, 5: text that cannot be stored back

HOSTILE_COMMANDS = {
    "a key holding a lone surrogate": r'{"type":"clear","\ud800":1}',
    "a key holding a NUL": r'{"type":"clear","a\u0000b":1}',
    "a value holding a lone surrogate": r'{"type":"remove","message_id":"\udfff"}',
    "a type holding a NUL": r'{"type":"clear\u0000"}',
    "a message id holding a lone surrogate": r'{"type":"remove","messageId":"\ud800"}',
    "many unknown keys": json.dumps(
        {"type": "clear", **{f"k{i}\ud800\x00": 1 for i in range(500)}}
    ),
    "an integer of 5,000 digits": '{"type":"clear","expect":{"kind":"turn","turn":'
    + "9" * 5000
    + "}}",
}


@pytest.mark.parametrize("text", list(HOSTILE_COMMANDS.values()), ids=list(HOSTILE_COMMANDS))
def test_r35_v4_a_rejection_whose_text_holds_what_no_store_can_hold_is_stored_escaped(
    store: AnyStore, text: str
) -> None:
    """Items 1, 5: the rejection message of such a row (a lone surrogate, a NUL) made the
    owner's write raise UnicodeEncodeError (SQLite, PostgreSQL) or DataError (PostgreSQL)
    at every open: the agent was wedged. Now the row is rejected with a storable message
    and the agent's next post is applied."""
    agent = agent_name()
    produce(store, "%s", "%s", agent, text)

    async def main() -> None:
        owner = await served(store, agent, "after")
        assert queued_texts(owner) == ["after"]
        await owner.aclose()

    run_async(main)()
    (row, after) = decided(store, agent)
    assert row[0] == "rejected", row
    assert row[1] in ("DecodeError", "InvalidInput"), row
    assert storable(row[2]), row
    assert after == ("applied", None, None)


def test_r35_v4_whatever_text_an_outcome_holds_is_made_storable_before_it_is_written(
    store: AnyStore,
) -> None:
    """Item 1, the store path: an outcome written by any code path (not only the core's
    messages) is escaped and cut before it reaches the database; the error name too."""
    agent = agent_name()
    receipt = store.post(agent, queue(msg("rejected by hand")))
    log = store.log(agent)
    log.acquire()
    hostile = PostRejected("Bad\ud800Name\x00", "\ud83d lone, NUL \x00, " + "x" * 10**6)
    log.append([], consumed=[Consumed(receipt.post_id, hostile)])  # raised before
    log.close()
    ((outcome, error, message),) = decided(store, agent)
    assert outcome == "rejected"
    assert storable(error)
    assert storable(message)
    for escaped in ("\\ud83d", "\\x00", "cut"):
        assert escaped in message


# --------------------------------------------- 3: one part's error fails that part alone


@attrs.frozen
class _Exploding(Consumed):
    """A consumed post whose stored form raises what no database raises (a bug, a value no
    driver can adapt): the group commit must fail this part alone."""

    def columns(self) -> tuple[str, str | None, str | None]:
        raise RuntimeError("this part cannot be written")


def test_r35_v4_r37_a_group_commit_retries_each_part_alone_on_any_error(store: AnyStore) -> None:
    """Item 3: only database errors made a group commit retry its parts alone; any other
    error of one part (UnicodeEncodeError was the one met) failed the whole group, and a
    worker stopped every busy agent in it. Now the other parts are written and the bad
    one gets a typed error."""
    agents = [agent_name() for _ in range(6)]
    logs = [store.log(agent) for agent in agents]
    for log in logs:
        log.acquire()
    bad = store.post(agents[3], queue(msg("bad")))
    parts = [Part(log, [TurnStarted(1)]) for log in logs]
    parts[3] = Part(logs[3], [TurnStarted(1)], [_Exploding(bad.post_id, PostApplied())])
    results = logs[0].write_group(parts)  # raised RuntimeError before
    assert [r is None for r in results] == [True, True, True, False, True, True]
    assert isinstance(results[3], LogUnavailable)
    assert [len(log.read()) for log in logs] == [1, 1, 1, 0, 1, 1]
    assert store.outcome(bad) == PostPending()
    for log in logs:
        log.close()


# ----------------------------------------------------- 2, 6: cells that are not text


def test_r35_v4_an_agent_id_that_is_not_utf8_breaks_neither_candidates_nor_the_poller(
    tmp_path: Path,
) -> None:
    """Item 2: one row whose agent_id is not UTF-8 made every candidates() raise
    LogUnavailable (no worker placed any agent of the file) and the change poller see no
    post again (every cross-process post waited for the 10-20 s slow poll). Now the row is
    skipped and reported, and the others are placed and woken."""
    from inbox_core.shell.stores.sqlite.wake import _new_posts

    store = SqliteStore(tmp_path / "a.db")
    produce(store, "CAST(X'FF61' AS TEXT)", "%s", '{"type":"clear"}')
    good = agent_name()
    store.post(good, queue(msg("placed")))
    records: list[str] = []
    handler = logging.Handler(logging.WARNING)
    handler.emit = lambda record: records.append(record.getMessage())  # type: ignore[method-assign]
    logging.getLogger("inbox_core.shell").addHandler(handler)
    try:
        assert store.candidates(10) == [good]
        assert store.candidates(10) == [good]
    finally:
        logging.getLogger("inbox_core.shell").removeHandler(handler)
    reports = [line for line in records if "can never be served" in line]
    assert len(reports) == 1  # once per store object
    assert "xffa" in reports[0]
    conn = sqlite3.connect(store.path)
    try:
        rung = [agent for agent, _ in _new_posts(conn, 0)]
    finally:
        conn.close()
    assert good in rung  # was [] for ever once the row was written
    store.close()


def test_r35_v4_a_blob_agent_id_makes_no_phantom_agent(tmp_path: Path) -> None:
    """Item 6: a BLOB agent_id became the phantom agent "b'alice'", which a worker opened,
    detached and opened again for ever while the row stayed pending. Now the BLOB of an
    agent id is that agent's row, consumed as a DecodeError; a BLOB that is no agent id is
    skipped and reported; no phantom is ever a candidate or opened."""
    store = SqliteStore(tmp_path / "a.db")
    alice, nobody = agent_name(), agent_name()
    produce(store, "CAST(%s AS BLOB)", "%s", alice, '{"type":"clear"}')
    produce(store, "X'00FF'", "%s", '{"type":"clear"}')
    assert store.candidates(10) == [alice]

    async def main() -> None:
        opened: list[str] = []

        def factory(agent_id: str) -> EchoHost:
            opened.append(agent_id)
            return EchoHost()

        worker = Worker(store, factory, idle_seconds=0.05, poll_seconds=0.02)
        running = asyncio.ensure_future(worker.run())
        await until(lambda: decided(store, alice)[0][0] is not None, what="the BLOB row")
        await until(lambda: worker.stats().detached >= 1, what="a detach")
        later = store.post(nobody, queue(msg("later")))
        assert await store.wait(later, timeout=10) == PostApplied()
        worker.stop()
        await running
        assert set(opened) == {alice, nobody}
        assert worker.stats().failed == 0

    run_async(main)()
    ((outcome, error, message),) = decided(store, alice)
    assert (outcome, error) == ("rejected", "DecodeError")
    assert "BLOB" in message
    store.close()


SQLITE_UNREADABLE = {
    "a command that is not UTF-8": ("%s", "CAST(X'7BFF7D' AS TEXT)", "not valid UTF-8"),
    "a BLOB command": ("%s", "CAST(%s AS BLOB)", "BLOB"),
    "a command of a number": ("%s", "12345", "type"),
}


@pytest.mark.parametrize(
    ("agent_sql", "command_sql", "why"),
    list(SQLITE_UNREADABLE.values()),
    ids=list(SQLITE_UNREADABLE),
)
def test_r35_v4_a_command_cell_that_is_not_text_is_rejected_and_later_posts_apply(
    tmp_path: Path, agent_sql: str, command_sql: str, why: str
) -> None:
    """Item 5: a command cell in invalid UTF-8 made every read of the agent's posts fail
    (LogUnavailable, "retrying" every 0.5 s for ever; every later post stayed pending). Now
    the row is consumed as DecodeError saying why, and the agent's next post is applied."""
    store = SqliteStore(tmp_path / "a.db")
    agent = agent_name()
    args = [agent] + (['{"type":"clear"}'] if "%s" in command_sql else [])
    produce(store, agent_sql, command_sql, *args)

    async def main() -> None:
        owner = await served(store, agent, "after")
        await owner.aclose()

    run_async(main)()
    (row, after) = decided(store, agent)
    assert row[:2] == ("rejected", "DecodeError"), row
    assert why in row[2], row
    assert after == ("applied", None, None)
    store.close()


FOREIGN_EVENTS = {
    "an event that is not UTF-8": "CAST(X'7BFF7D' AS TEXT)",
    "a BLOB event": "X'7B7D'",
    "an event that is not JSON": "'nope'",
}


@pytest.mark.parametrize("event_sql", list(FOREIGN_EVENTS.values()), ids=list(FOREIGN_EVENTS))
def test_r35_v4_a_foreign_events_row_is_corrupt_log_at_its_seq_and_costs_only_its_agent(
    tmp_path: Path, event_sql: str
) -> None:
    """R35 v4, R10: an events row a foreign writer appended is ``CorruptLog`` naming its seq
    for the owner, a watcher and a reader (an event cell that is not UTF-8 was
    ``LogUnavailable``, "try again later", for the owner); a worker counts the agent failed
    and serves the others; ``agent_ids`` names no phantom for a BLOB id."""
    store = SqliteStore(tmp_path / "a.db")
    bad, good = agent_name(), agent_name()
    with store.log(bad) as log:
        log.acquire()
        log.append([TurnStarted(1)])
    execute(store, f"INSERT INTO events VALUES (%s, 1, {event_sql})", bad)
    execute(store, "INSERT INTO events VALUES (CAST(%s AS BLOB), 0, '{}')", good)
    store.post(bad, queue(msg("waits")))
    with store.log(bad) as log:
        with pytest.raises(CorruptLog) as raised:
            log.read()
        assert raised.value.seq == 1
        assert log.agent_ids() == [bad]
    assert [seq for seq, _ in store.events(bad)] == [0]
    with pytest.raises(CorruptLog):
        store.events(bad, since=1)

    async def main() -> None:
        with pytest.raises(CorruptLog):
            LoopAgent(EchoHost(), log=store.log(bad))
        worker = Worker(store, lambda _: EchoHost(), idle_seconds=60, poll_seconds=0.02)
        running = asyncio.ensure_future(worker.run())
        try:
            receipt = store.post(good, queue(msg("served")))
            assert await store.wait(receipt, timeout=10) == PostApplied()
            await until(lambda: worker.stats().failed >= 1, what="the corrupt agent's failure")
            assert bad not in worker.agents
        finally:
            worker.stop()
            await running

    run_async(main)()
    store.close()


@pytest.mark.slow  # writes 200 MB
def test_r35_v4_a_command_past_the_document_size_is_rejected_unread(store: AnyStore) -> None:
    """A command over maxDocumentSize is rejected from its size: the owner never reads a
    producer's gigabyte into memory (it did, then refused it)."""
    from inbox_core import limits

    agent = agent_name()
    produce(store, "%s", "%s", agent, " " * (limits.MAX_DOCUMENT_SIZE + 1))
    log = store.log(agent)
    (post,) = log.pending_posts(10)
    assert not isinstance(post.command, str)  # its text was not handed over
    (_, (consumed,)) = decide(replay([]), decode_posts([post])[0])
    assert consumed.outcome.error == "DecodeError"  # type: ignore[union-attr]
    assert str(limits.MAX_DOCUMENT_SIZE) in consumed.outcome.message  # type: ignore[union-attr]
    log.close()


def test_r35_v4_decide_rejects_whatever_a_store_hands_over(store: AnyStore) -> None:
    """decode_posts() and decide() turn any command cell into an outcome, never an
    exception."""
    state = replay([])
    cells: list[object] = [None, 5, b"{}", bytearray(b"{}"), 1.5, [], {"type": "clear"}]
    posts = [PendingPost(i + 1, cell) for i, cell in enumerate(cells)]
    decoded, left = decode_posts(posts)
    assert not left
    _, consumed = decide(state, decoded)
    assert [c.outcome.error for c in consumed] == ["DecodeError"] * len(cells)  # type: ignore[union-attr]


# ------------------------------------------------------------------ 4: placement


def _refusing(refused: set[str]) -> Any:
    def factory(agent_id: str) -> EchoHost:
        if agent_id in refused:
            raise RuntimeError(f"this worker does not serve {agent_id}")
        return EchoHost()

    return factory


async def _placed_despite(store: AnyStore, refused: int, max_agents: int | None) -> None:
    tag = uuid.uuid4().hex[:8]
    blocked = {f"aaa-refused-{i:04}-{tag}" for i in range(refused)}
    for agent in sorted(blocked):
        store.post(agent, queue(msg("never served here")))
    good = [store.post(f"zzz-good-{i}-{tag}", queue(msg("served"))) for i in range(3)]
    options = {} if max_agents is None else {"max_agents": max_agents}
    worker = Worker(store, _refusing(blocked), idle_seconds=0.05, poll_seconds=0.02, **options)
    running = asyncio.ensure_future(worker.run())
    try:
        for receipt in good:  # were never placed: the refused ones filled every look
            assert await store.wait(receipt, timeout=20) == PostApplied()
    finally:
        worker.stop()
        await running


def test_r37_v4_agents_a_worker_cannot_open_never_hide_those_it_can(store: AnyStore) -> None:
    """Item 4: candidates(limit) applied its LIMIT (in id order) before the worker dropped
    the agents it could not open: 40 posts to agents its factory refuses starved
    --max-agents 4 for ever (100 here). Now a look pages past them (and they wait out their
    back-off)."""
    asyncio.run(asyncio.wait_for(_placed_despite(store, refused=100, max_agents=4), 60))


@pytest.mark.slow
def test_r37_v4_a_thousand_refused_agents_hide_nothing_from_the_default_worker(
    store: AnyStore,
) -> None:
    """Item 4 at the issue's size: 1,100 refused agents starved the default max_agents."""
    asyncio.run(asyncio.wait_for(_placed_despite(store, refused=1100, max_agents=None), 300))


def test_r37_v4_candidates_page_through_every_agent_with_work_once(store: AnyStore) -> None:
    """Paging (R37 v4): passing the last id of each answer reads every candidate once, in
    one order; a short page is the last."""
    tag = uuid.uuid4().hex[:8]
    mine = {f"page-{i:03}-{tag}" for i in range(30)}
    for agent in mine:
        store.post(agent, queue(msg("work")))
    seen: list[str] = []
    after = None
    while True:
        page = store.candidates(7, after=after)
        seen.extend(page)
        if len(page) < 7:
            break
        after = page[-1]
    assert len(seen) == len(set(seen))
    assert mine <= set(seen)


def test_r37_v4_sqlite_candidates_skip_held_agents_and_still_fill_the_page(
    tmp_path: Path,
) -> None:
    """SQLite drops the agents a live owner holds after reading them: that came back short
    (or empty) while free agents with work sorted after them. Now it reads on."""
    store = SqliteStore(tmp_path / "a.db")
    held = [store.log(f"a-held-{i}") for i in range(10)]
    for log in held:
        store.post(log.agent_id, queue(msg("held")))
        log.acquire()
    free = [f"b-free-{i}" for i in range(3)]
    for agent in free:
        store.post(agent, queue(msg("free")))
    assert store.candidates(3) == free  # was []
    for log in held:
        log.close()
    store.close()


# ---------------------------------------------------------------- 7: the table's shape

FOREIGN_TABLES = {
    "an application's posts table": "CREATE TABLE posts (id INTEGER PRIMARY KEY, title TEXT)",
    "posts without its key constraint": (
        "CREATE TABLE posts (post_id INTEGER PRIMARY KEY AUTOINCREMENT, agent_id TEXT NOT NULL,"
        " command TEXT NOT NULL, key TEXT, posted_at TEXT NOT NULL DEFAULT '', outcome TEXT,"
        " error TEXT, message TEXT, decided_at TEXT)"
    ),
    "a view named posts": "CREATE VIEW posts AS SELECT 1 AS post_id",
    "an application's agents table, in a file of before R37": (
        "DROP TABLE agents; CREATE TABLE agents (name TEXT, age INTEGER)"
    ),
}


@pytest.mark.parametrize("ddl", list(FOREIGN_TABLES.values()), ids=list(FOREIGN_TABLES))
def test_r35_v4_a_file_whose_posts_or_agents_table_is_not_ours_is_refused_untouched(
    tmp_path: Path, ddl: str
) -> None:
    """Item 7: an application's own table named posts in an inbox file made every post()
    raise LogUnavailable for ever ("retry later"). Now such a file is IncompatibleLog when a
    log or store opens it, and stays byte for byte as it was."""
    path = tmp_path / "app.db"
    SqliteLog(path, agent_id="a").close()  # an inbox-core file ...
    conn = sqlite3.connect(path)
    conn.executescript(ddl)  # ... in which an application made a table of its own
    conn.close()
    before = path.read_bytes()
    for open_file in (SqliteStore, SqliteLog):
        with pytest.raises(IncompatibleLog, match=r"agents|posts"):
            open_file(path)
    assert path.read_bytes() == before


def test_r35_v4_an_older_posts_table_gains_the_id_triggers_when_a_store_opens_it(
    tmp_path: Path,
) -> None:
    """A file made before the id triggers (an older inbox-core) gets them at a store's first
    write, and keeps its posts."""
    store = SqliteStore(tmp_path / "a.db")
    receipt = store.post("a", queue(msg("kept")))
    execute(store, "DROP TRIGGER posts_post_id_insert")
    store.close()
    store = SqliteStore(tmp_path / "a.db")
    store.prepare()  # its first write (reading never writes, R36 v4)
    with pytest.raises(sqlite3.IntegrityError, match="post_id must lie in"):
        execute(
            store, "INSERT INTO posts (post_id, agent_id, command) VALUES (%s, 'a', '{}')", 2**53
        )
    assert store.outcome(receipt) == PostPending()
    store.close()


# ---------------------------------------------------------------- 8: the id space


@pytest.mark.parametrize("post_id", [2**53, 2**63 - 1, 0, -5])
def test_r35_v4_a_producer_cannot_write_a_post_id_no_receipt_holds(
    tmp_path: Path, post_id: int
) -> None:
    """Item 8: a producer's post_id past 2**53 pushed every later id past it (the next
    post() committed, then raised InvalidInput: a retry without a key duplicated it); past
    2**63-1 every post of every agent failed "database or disk is full". Now the file
    refuses such a row (the producer's INSERT fails) and posting goes on."""
    store = SqliteStore(tmp_path / "a.db")
    store.prepare()
    with pytest.raises(sqlite3.IntegrityError, match="post_id must lie in"):
        execute(
            store, "INSERT INTO posts (post_id, agent_id, command) VALUES (%s, 'a', '{}')", post_id
        )
    produce(store, "'a'", "'{}'")
    with pytest.raises(sqlite3.IntegrityError, match="post_id must lie in"):
        execute(store, "UPDATE posts SET post_id = %s", post_id)
    receipt = store.post("b", queue(msg("fine")))
    assert receipt.post_id == 2  # the refused statements moved no id
    store.close()


def test_r35_v4_post_never_raises_after_committing_whatever_ids_the_file_holds(
    tmp_path: Path,
) -> None:
    """Item 8, a file written before the triggers: post() refuses an id past 2**53 with a
    typed error and writes nothing (it committed, then raised)."""
    store = SqliteStore(tmp_path / "a.db")
    store.prepare()
    execute(store, "DROP TRIGGER posts_post_id_insert")
    execute(store, "INSERT INTO posts (post_id, agent_id, command) VALUES (%s, 'a', '{}')", 2**53)
    count = execute(store, "SELECT COUNT(*) FROM posts")[0][0]
    for key in (None, "k"):
        with pytest.raises(LogUnavailable, match="nothing was written"):
            store.post("b", queue(msg("refused")), key=key)
    assert execute(store, "SELECT COUNT(*) FROM posts")[0][0] == count
    store.close()


# --------------------------------------------------------- 9: a post racing a prune


class _PrunedMeanwhile:
    """A connection on which a prune deletes the key's decided post right after the post's
    INSERT found it (the race of item 9, made certain)."""

    def __init__(self, conn: Any, store: AnyStore, agent: str, key: str) -> None:
        self._conn, self._store, self._agent, self._key = conn, store, agent, key
        self.raced = 0

    def execute(self, sql: str, args: Any = None) -> Any:
        cursor = self._conn.execute(sql, args)
        if sql.lstrip().startswith("INSERT") and not self.raced:
            self.raced += 1
            execute(
                self._store,
                f"DELETE FROM {posts_table(self._store)} WHERE agent_id = %s AND key = %s",
                self._agent,
                self._key,
            )
        return cursor

    def __getattr__(self, name: str) -> Any:
        return getattr(self._conn, name)


def test_r35_v4_a_keyed_post_racing_a_prune_posts_again_typed(pg: str) -> None:
    """Item 9: PostgresStore.post(key=K) racing prune raised an untyped AssertionError (its
    INSERT found K's earlier post, the prune deleted it, its look-up found nothing). Now
    it posts again: a new pending post, one row."""
    import contextlib

    from inbox_core.shell import PostgresStore

    store = PostgresStore(pg)
    agent = agent_name()
    first = store.post(agent, queue(msg("first")), key="k")
    connection = store._connection

    @contextlib.contextmanager
    def racing(what: str) -> Any:
        with connection(what) as conn:
            yield _PrunedMeanwhile(conn, store, agent, "k")

    store._connection = racing  # type: ignore[method-assign]
    again = store.post(agent, queue(msg("again")), key="k")  # AssertionError before
    store._connection = connection  # type: ignore[method-assign]
    assert again.post_id > first.post_id
    assert store.outcome(again) == PostPending()
    assert [row[0] for row in decided(store, agent)] == [None]
    store.close()


# --------------------------------------------------------------- 15: prune's range


@pytest.mark.parametrize(
    "older_than",
    [2**1100, 1e300, float("inf"), 10**10, 0.0],
    ids=["2**1100", "1e300", "inf", "1e10", "0"],
)
def test_r35_prune_takes_any_age_the_same_on_every_store(
    store: AnyStore, older_than: float
) -> None:
    """Item 15: prune(older_than=2**1100) raised OverflowError (both stores), and
    PostgreSQL's prune(1e300) LogUnavailable where SQLite returned 0. An age past about
    317 years means the same on both: nothing was decided that long ago."""
    agent = agent_name()
    receipt = store.post(agent, queue(msg("kept")))

    async def main() -> None:
        owner = LoopAgent(EchoHost(), log=store.log(agent))
        assert await store.wait(receipt, timeout=10) == PostApplied()
        await owner.aclose()

    run_async(main)()
    deleted = store.prune(older_than=older_than)
    assert deleted >= 0
    if older_than > 1:
        assert store.outcome(receipt) == PostApplied()


@pytest.mark.parametrize(
    "older_than",
    [float("nan"), -1, "1", True, None, -(2**1100)],
    ids=["nan", "-1", "str", "bool", "None", "-2**1100"],
)
def test_r35_prune_refuses_what_is_no_age_with_invalid_input(
    store: AnyStore, older_than: Any
) -> None:
    with pytest.raises(InvalidInput):
        store.prune(older_than=older_than)


# ---------------------------------------------------------------- typed, all of them


def test_r35_v4_rows_that_name_no_agent_are_never_candidates(tmp_path: Path) -> None:
    """Items 2, 6: an agent_id cell that is no agent id (not UTF-8, a BLOB that is not, empty,
    too long, holding a NUL) is never a candidate: no phantom agent, no failed placement."""
    store = SqliteStore(tmp_path / "a.db")
    for agent_sql, command_sql in [
        ("CAST(X'FF' AS TEXT)", "CAST(X'FF' AS TEXT)"),
        ("X'FF'", "X'FF'"),
        ("''", "'{}'"),
        ("'" + "a" * 300 + "'", "'{}'"),
        ("'a' || char(0) || 'b'", "'{}'"),
    ]:
        produce(store, agent_sql, command_sql)
    assert store.candidates(5) == []
    store.post("a", queue(msg("fine")))
    assert store.candidates(5) == ["a"]
    store.close()
