"""R35 v4, R37 v4 as a property and under chaos: whatever a producer writes into posts rows,
no row is more than one agent's problem (issue 28).

- The property: any cells a producer can write into a posts row (text, a BLOB, bytes that
  are not UTF-8, any JSON, NUL, huge integers) end as a decided post (its agent's owner
  consumed it) or a reported skip (it names no agent: never a candidate, logged), and the
  agent's next good post is applied; another agent's post, sharing the group commit, and
  placement are not changed by it.
- The chaos test: a Worker serves many agents while a hostile producer writes random rows
  for some of them; every good post is applied exactly once, in order, and no agent stops.

Both run on SQLite and on PostgreSQL (a fresh database per test).
"""

from __future__ import annotations

import asyncio
import json
import logging
import random
import sqlite3
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from inbox_core import limits, replay
from inbox_core.commands import followup, queue
from inbox_core.errors import InvalidInput, shown
from inbox_core.shell import EchoHost, LoopAgent, PostApplied, SqliteStore, ThreadWriter, Worker

from .posts_support import AnyStore, execute, posts_table, until
from .support import msg

# ------------------------------------------------------------------ the stores


@pytest.fixture(params=["sqlite", "postgres"])
def fresh(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[AnyStore]:
    """A store of its own: an SQLite file, or a new PostgreSQL database."""
    if request.param == "sqlite":
        store: AnyStore = SqliteStore(tmp_path / "agents.db")
    else:
        from inbox_core.shell import PostgresStore

        from .pg import create_database

        server = request.getfixturevalue("pg_server")
        store = PostgresStore(create_database(server, f"hostile_{uuid.uuid4().hex[:12]}"))
    try:
        yield store
    finally:
        store.close()


def reopened(store: AnyStore) -> AnyStore:
    """Another store object of the same database (its reports start afresh)."""
    if isinstance(store, SqliteStore):
        return SqliteStore(store.path)
    from inbox_core.shell import PostgresStore

    return PostgresStore(store.conninfo)


class Reports(logging.Handler):
    """The messages logged by inbox_core's shell while installed."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())

    def __enter__(self) -> Reports:
        logging.getLogger("inbox_core").addHandler(self)
        return self

    def __exit__(self, *exc: object) -> None:
        logging.getLogger("inbox_core").removeHandler(self)


# ------------------------------------------------------------ what a producer writes

# A cell is (kind, value): "agent" (the example's agent, as text), "agent-blob" (its UTF-8
# bytes as a BLOB), "text", "bytes" (stored as TEXT whatever they are), "blob", "int".
_SCALAR_TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=40)
_JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**80), max_value=2**80)
    | st.floats(allow_nan=False)
    | _SCALAR_TEXT,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_SCALAR_TEXT, inner, max_size=4),
    max_leaves=12,
)
_TYPES = ["send", "clear", "remove", "move", "splice", "cancel", "replace", "dispose", "resume"]
_COMMAND_LIKE = st.builds(
    lambda kind, extra: {"type": kind, **extra},
    st.sampled_from(_TYPES) | _SCALAR_TEXT,
    st.dictionaries(st.text(max_size=6), _JSON, max_size=3),  # keys with lone surrogates too
)


def _dumped(document: Any, ascii_only: bool) -> str:
    return json.dumps(document, ensure_ascii=ascii_only)


_COMMAND_TEXT = st.one_of(
    st.builds(_dumped, _COMMAND_LIKE, st.booleans()),
    st.builds(_dumped, _JSON, st.just(True)),
    _SCALAR_TEXT,
    st.integers(min_value=20, max_value=6000).map(lambda digits: "9" * digits),  # a huge int
)


def _agent_cells(sqlite: bool) -> st.SearchStrategy[tuple[str, Any]]:
    text = st.tuples(st.just("text"), _SCALAR_TEXT | st.text(min_size=250, max_size=300))
    cells = st.sampled_from([("agent", None)]) | text
    if sqlite:
        cells |= st.sampled_from([("agent-blob", None)])
        cells |= st.tuples(st.sampled_from(["bytes", "blob"]), st.binary(max_size=12))
    return cells


def _command_cells(sqlite: bool) -> st.SearchStrategy[tuple[str, Any]]:
    cells = st.tuples(st.just("text"), _COMMAND_TEXT)
    if sqlite:
        cells |= st.tuples(st.sampled_from(["bytes", "blob"]), st.binary(max_size=40))
        cells |= st.tuples(st.just("int"), st.integers(min_value=-(2**63), max_value=2**63 - 1))
    return cells


def write_row(store: AnyStore, agent: str, agent_cell: tuple[str, Any], command_cell: Any) -> Any:
    """Write the row as a foreign producer; the agent id as the store reads it (str or, on
    SQLite, bytes), or None when the database refused the row itself (its producer's
    problem: PostgreSQL text cannot hold a NUL, say)."""
    sqlite = isinstance(store, SqliteStore)
    cells: list[str] = []
    args: list[Any] = []
    stored: Any = None
    for cell_kind, cell in (agent_cell, command_cell):
        kind, value = {"agent": ("text", agent), "agent-blob": ("blob", agent.encode())}.get(
            cell_kind, (cell_kind, cell)
        )
        if stored is None:
            stored = value.encode() if sqlite and isinstance(value, str) else value
        cells.append("CAST(%s AS TEXT)" if kind == "bytes" else "%s")
        args.append(value)
    table = posts_table(store)
    try:
        execute(
            store, f"INSERT INTO {table} (agent_id, command) VALUES ({cells[0]}, {cells[1]})", *args
        )
    except Exception as error:  # refused by the database: nothing was written
        if sqlite and not isinstance(error, sqlite3.Error):
            raise
        return None
    return stored


def names_agent(stored: Any) -> str | None:
    """The agent a stored id names (its text, UTF-8 decoded), None when it names none."""
    try:
        text = stored.decode("utf-8") if isinstance(stored, bytes) else stored
        return limits.agent_id(text)
    except (InvalidInput, UnicodeDecodeError):
        return None


def every_candidate(store: AnyStore) -> list[str]:
    found: list[str] = []
    after = None
    while page := store.candidates(100, after=after):
        found.extend(page)
        if len(page) < 100:
            break
        after = page[-1]
    return found


async def serve_both(store: AnyStore, agents: list[str], receipts: list[Any]) -> list[Any]:
    """Open the agents' owners on one ThreadWriter (their writes share group commits) and
    wait for the receipts; the owners' errors (None while they drive)."""
    writer = ThreadWriter()
    owners = [await LoopAgent.open(EchoHost(), log=store.log(a), writer=writer) for a in agents]
    try:
        outcomes = [await store.wait(r, timeout=20) for r in receipts]
        assert outcomes == [PostApplied()] * len(receipts)
        return [owner.stopped for owner in owners]
    finally:
        for owner in owners:
            await owner.detach()
            owner.log.close()  # type: ignore[attr-defined]
        await writer.aclose()


# ----------------------------------------------------------------- the property


def test_r35_v4_r37_v4_any_row_is_decided_or_reported_and_touches_no_other_agent(
    fresh: AnyStore,
) -> None:
    sqlite = isinstance(fresh, SqliteStore)

    @settings(
        max_examples=25,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
    )
    @given(agent_cell=_agent_cells(sqlite), command_cell=_command_cells(sqlite))
    def check(agent_cell: tuple[str, Any], command_cell: tuple[str, Any]) -> None:
        mine, other = f"a-{uuid.uuid4().hex[:10]}", f"b-{uuid.uuid4().hex[:10]}"
        store = reopened(fresh)
        try:
            stored = write_row(store, mine, agent_cell, command_cell)
            named = None if stored is None else names_agent(stored)
            receipts = [store.post(a, queue(msg(f"good {a}"))) for a in (mine, other)]
            with Reports() as reports:
                candidates = every_candidate(store)
            assert {mine, other} <= set(candidates)  # placement sees both
            if named is not None:
                assert named in candidates
            elif stored is not None:  # names no agent: skipped, and said so
                assert any(shown(stored) in line for line in reports.messages)
            assert asyncio.run(serve_both(store, [mine, other], receipts)) == [None, None]
            for agent in (mine, other):
                queued = replay(store.log(agent).read()).inbox.next_turn
                texts = [entry.message.content[0]["text"] for entry in queued]
                assert texts[-1:] == [f"good {agent}"]
                assert agent != other or texts == [f"good {other}"]  # nothing of mine
            if named == mine:  # its owner decided it before the good post
                assert _pending(store, mine) == 0
        finally:
            store.close()

    check()


def _pending(store: AnyStore, agent: str) -> int:
    match = (
        "CAST(agent_id AS BLOB) = CAST(%s AS BLOB)"
        if isinstance(store, SqliteStore)
        else "agent_id = %s"
    )
    rows = execute(
        store, f"SELECT COUNT(*) FROM {posts_table(store)} WHERE {match} AND outcome IS NULL", agent
    )
    return int(rows[0][0])


# ------------------------------------------------------------------- the chaos test

_GARBAGE_SQLITE = [  # (agent cell, command cell, command, whether it names the agent)
    ("%s", "CAST(%s AS TEXT)", b"{\xff}", True),  # a command that is not UTF-8
    ("%s", "%s", b'{"type":"clear"}', True),  # a BLOB command
    ("CAST(%s AS BLOB)", "%s", '{"type":"clear"}', True),  # the agent's id as a BLOB
    ("CAST(%s AS TEXT)", "%s", "nobody's", False),  # the agent's id + FF: not UTF-8
]
_GARBAGE_TEXT = [
    r'{"type":"clear","\ud800":1}',
    r'{"type":"clear","a\u0000b":1}',
    r'{"type":"remove","messageId":"\udfff"}',
    '{"type":"dispose"}',
    "{not json",
    "[" * 200,
    '{"type":"clear","expect":{"kind":"turn","turn":' + "9" * 5000 + "}}",
]


def hostile_producer(store: AnyStore, poisoned: list[str], rows: int, seed: int) -> int:
    """Write ``rows`` random hostile rows for the poisoned agents; how many name one."""
    rng = random.Random(seed)
    sqlite = isinstance(store, SqliteStore)
    table = posts_table(store)
    named = 0
    for _ in range(rows):
        agent = rng.choice(poisoned)
        if sqlite and rng.random() < 0.4:
            agent_sql, command_sql, value, names = rng.choice(_GARBAGE_SQLITE)
            args = [agent if names else agent.encode() + b"\xff", value]
            named += names
        else:
            agent_sql, command_sql, args = "%s", "%s", [agent, rng.choice(_GARBAGE_TEXT)]
            named += 1
        execute(
            store,
            f"INSERT INTO {table} (agent_id, command) VALUES ({agent_sql}, {command_sql})",
            *args,
        )
    return named


async def chaos(store: AnyStore, agents: int, poisoned: int, posts: int, hostile: int) -> None:
    store.prepare()  # what a producer in another language runs first (R36 v4)
    tag = uuid.uuid4().hex[:8]
    names = [f"chaos-{i:03}-{tag}" for i in range(agents)]
    bad = names[:poisoned]
    opened: list[str] = []

    def factory(agent_id: str) -> EchoHost:
        opened.append(agent_id)
        return EchoHost()

    worker = Worker(store, factory, idle_seconds=0.2, poll_seconds=0.05)
    with Reports() as reports:
        running = asyncio.ensure_future(worker.run())

        def good_producer() -> list[Any]:
            receipts = []
            for i in range(posts):
                for name in names:  # each agent's posts in order; a retry with its key
                    receipts.append(store.post(name, followup(msg(f"{name}:{i}")), key=f"{i}"))
            return receipts

        named, receipts = await asyncio.gather(
            asyncio.to_thread(hostile_producer, store, bad, hostile, seed=28),
            asyncio.to_thread(good_producer),
        )
        for receipt in receipts:
            assert await store.wait(receipt, timeout=60) == PostApplied()
        await until(lambda: sum(map(_pending_of(store), bad)) == 0, 60, "the hostile rows")
        await until(lambda: all(len(entered(store, n)) == posts for n in names), 60, "turns")
        worker.stop()
        await running
    for name in names:  # every good post exactly once, in order
        assert entered(store, name) == [f"{name}:{i}" for i in range(posts)], name
    assert named > 0
    assert set(opened) <= set(names)  # no phantom agent
    assert worker.stats().failed == 0, [m for m in reports.messages if tag in m]
    assert not [m for m in reports.messages if "stopped" in m and tag in m]


def entered(store: AnyStore, agent: str) -> list[str]:
    """The texts of the agent's messages that entered a turn, in log order."""
    log = store.log(agent)
    try:
        return [e.message.content[0]["text"] for e in log.read() if e.type == "user/message"]
    finally:
        log.close()  # type: ignore[union-attr]


def _pending_of(store: AnyStore) -> Any:
    return lambda agent: _pending(store, agent)


def test_r35_v4_r37_chaos_a_worker_serves_every_good_post_while_rows_are_hostile(
    fresh: AnyStore,
) -> None:
    """12 agents, 4 of them poisoned by 40 hostile rows, 5 good posts each."""
    asyncio.run(asyncio.wait_for(chaos(fresh, agents=12, poisoned=4, posts=5, hostile=40), 120))


@pytest.mark.slow
def test_r35_v4_r37_chaos_at_scale(fresh: AnyStore) -> None:
    """60 agents, 20 poisoned by 600 hostile rows, 20 good posts each."""
    asyncio.run(asyncio.wait_for(chaos(fresh, agents=60, poisoned=20, posts=20, hostile=600), 600))
