"""Checkpoints beside every store's log (R41): written by the owner, opened from, never trusted
over the log.

Every store (``MemoryLog``, ``SqliteLog``, ``PostgresLog``) keeps its newest checkpoint beside
the log; opening reads it and the events after it. These tests plant every kind of bad
checkpoint (not JSON, not UTF-8, another agent's, a version from the future, beyond the log's
end, a digest of another event, a state the events after it do not replay from) and check
that each is ignored with one warning and the whole log replayed; that opening from a good
one equals opening from the whole log (the state, the goal rounds and the next transitions)
on real logs of turns and posts; that deleting every checkpoint changes nothing; what is
written when; and ``read(since, until)``.
"""

from __future__ import annotations

import asyncio
import json
import logging
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from inbox_core import GoalSource, InvalidInput, TurnEnded, reduce, replay
from inbox_core import commands as intents
from inbox_core.checkpoint import CHECKPOINT_VERSION, checkpoint_to_json, take
from inbox_core.history import goal_rounds
from inbox_core.limits import dump_json
from inbox_core.replay import LogFold
from inbox_core.shell import (
    EchoHost,
    IncompatibleLog,
    LoopAgent,
    MemoryLog,
    PostgresStore,
    SqliteLog,
    SqliteStore,
)
from inbox_core.shell.stores.checkpoints import REOPEN_TAIL, open_log, verify
from inbox_core.shell.stores.sqlite.schema import SQLITE_CHECKPOINTS

from .support import msg, run_async

EVERY = 9  # small, so that a short session writes checkpoints on the way
SHELL_LOGGER = "inbox_core.shell"


class Place:
    """Where an agent's log lives, with its checkpoints: a fresh log object over it
    (``log``), a checkpoint planted behind the owner's back (``plant``), every checkpoint
    deleted (``wipe``)."""

    name = ""
    posts = True

    def log(self, agent: str, every: int | None = EVERY) -> Any:
        raise NotImplementedError

    def plant(self, agent: str, seq: object, text: str | bytes) -> None:
        raise NotImplementedError

    def wipe(self) -> None:
        raise NotImplementedError

    def post(self, agent: str, command: Any) -> None:
        raise NotImplementedError

    def pending(self, agent: str) -> int:
        return 0

    def close(self) -> None:
        pass


class Memory(Place):
    name = "memory"
    posts = False

    def __init__(self) -> None:
        self.logs: dict[str, MemoryLog] = {}

    def log(self, agent: str, every: int | None = EVERY) -> Any:
        first = self.logs.setdefault(agent, MemoryLog(checkpoint_every=every))
        handle = first.handle()
        handle.checkpoint_every = every
        return handle

    def plant(self, agent: str, seq: object, text: str | bytes) -> None:
        self.logs[agent]._store.checkpoint = (seq, text)  # type: ignore[assignment]

    def wipe(self) -> None:
        for log in self.logs.values():
            log._store.checkpoint = None


class Stored(Place):
    """A ``SqliteStore`` or a ``PostgresStore``: its logs, posts and checkpoints table."""

    def __init__(self, store: SqliteStore | PostgresStore) -> None:
        self.store = store
        self.name = "sqlite" if isinstance(store, SqliteStore) else "postgres"
        self.opened: list[Any] = []

    def log(self, agent: str, every: int | None = EVERY) -> Any:
        log = self.store.log(agent, checkpoint_every=every)
        self.opened.append(log)
        return log

    def execute(self, sql: str, *args: Any) -> list[Any]:
        from .posts_support import execute

        return execute(self.store, sql, *args)

    def plant(self, agent: str, seq: object, text: str | bytes) -> None:
        self.execute(f"DELETE FROM {SQLITE_CHECKPOINTS} WHERE agent_id = %s", agent)
        self.execute(f"INSERT INTO {SQLITE_CHECKPOINTS} VALUES (%s, %s, %s)", agent, seq, text)

    def wipe(self) -> None:
        self.execute(f"DELETE FROM {SQLITE_CHECKPOINTS}")

    def post(self, agent: str, command: Any) -> None:
        self.store.post(agent, command)

    def pending(self, agent: str) -> int:
        return self.store.pending_count(agent)

    def close(self) -> None:
        for log in self.opened:
            log.close()


@pytest.fixture(params=["memory", "sqlite", "postgres"])
def place(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Place]:
    made: Place
    if request.param == "memory":
        made = Memory()
    elif request.param == "sqlite":
        made = Stored(SqliteStore(tmp_path / "agents.db"))
    else:
        made = Stored(PostgresStore(request.getfixturevalue("pg")))
    try:
        yield made
    finally:
        made.close()
        if isinstance(made, Stored):
            made.store.close()


_AGENTS = iter(range(10**9))


def agent_id() -> str:
    return f"cp-{next(_AGENTS)}-{id(object()):x}"


async def session(place: Place, agent: str, rounds: int = 6) -> LoopAgent:
    """A real log of turns (and posts where the store takes them): followups with contexts,
    steers, queued and injected messages, goal continuations (R28), a cancel that keeps the
    inbox, edits. Detached at the end, the owner writes its last checkpoint; returns it."""
    served = LoopAgent(EchoHost(), log=place.log(agent))
    for n in range(rounds):
        served.followup(msg(f"f{n}"), contexts=(msg(f"c{n}"),))
        served.steer(msg(f"s{n}", source=GoalSource("goal", n + 1)))
        served.inject(msg(f"i{n}"))
        served.queue(queued := msg(f"q{n}"))
        await served.when_idle()
        served.replace(queued.id, msg(f"r{n}"))
        if place.posts:
            place.post(agent, intents.followup(msg(f"p{n}", source=GoalSource("g2", 1)), ()))
        served.followup(msg(f"g{n}"))
        served.cancel(keep_inbox=True)
        await served.when_idle()
    for _ in range(200):  # every post applied: a reopened agent has none to serve
        await served.when_idle()
        if not place.pending(agent):
            break
        await asyncio.sleep(0.02)
    served.queue(msg("left pending"))
    await served.detach()
    return served


def whole(place: Place, agent: str) -> list[Any]:
    return place.log(agent, None).read()


def checkpoints_of(place: Place, agent: str) -> list[tuple[object, object]]:
    return list(place.log(agent).checkpoints())


def warnings_of(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [
        r.getMessage()
        for r in caplog.records
        if r.name == SHELL_LOGGER and r.levelno == logging.WARNING and "checkpoint" in r.message
    ]


def same_next(a: Any, b: Any) -> None:
    """The next transitions agree: a followup, a queue, a cancel from both states."""
    for command in (
        intents.followup(msg("next"), ()),
        intents.queue(msg("later"), ()),
        intents.Cancel(),
        intents.Resume(),
    ):
        try:
            left = reduce(a, command)
        except Exception as error:
            with pytest.raises(type(error)):
                reduce(b, command)
            continue
        right = reduce(b, command)
        assert left.durable == right.durable
        assert left.notifications == right.notifications
        assert left.state == right.state


# ------------------------------------------------------------------ written


@run_async
async def test_R41_the_owner_writes_checkpoints_every_K_events_and_at_detach(place: Place) -> None:
    """R41: about every ``checkpoint_every`` events and at detach, one per agent, each the
    fold of the log at its seq (a cache ``verify`` finds exactly right)."""
    agent = agent_id()
    await session(place, agent)
    events = whole(place, agent)
    stored = checkpoints_of(place, agent)
    assert len(stored) == 1  # the newest only
    name = "default" if place.name == "memory" else agent
    (seq, _), verdict = stored[0], verify(events, stored, name)
    assert verdict[0].ok, verdict[0].why
    if place.name == "memory":  # folded at release only
        assert seq == len(events)
    else:
        assert len(events) - EVERY < int(seq) <= len(events)  # type: ignore[call-overload]


@run_async
async def test_R41_checkpoint_every_none_writes_none(place: Place) -> None:
    """R41: ``checkpoint_every=None``: the owner writes no checkpoint (and opens as ever)."""
    agent = agent_id()
    served = LoopAgent(EchoHost(), log=place.log(agent, None))
    for n in range(REOPEN_TAIL // 6):
        served.followup(msg(f"f{n}"))
        await served.when_idle()
    await served.detach()
    assert checkpoints_of(place, agent) == []


def test_R41_checkpoint_every_is_range_checked(tmp_path: Path) -> None:
    """R26: a bad ``checkpoint_every`` is InvalidInput when the log is built."""
    for bad in (0, -1, True, 1.5, "9", 2**40):
        with pytest.raises(InvalidInput):
            SqliteLog(tmp_path / "x.db", checkpoint_every=bad)  # type: ignore[arg-type]
        with pytest.raises(InvalidInput):
            MemoryLog(checkpoint_every=bad)  # type: ignore[arg-type]


# ------------------------------------------------------------------ opening


@run_async
async def test_R41_opening_from_a_checkpoint_equals_the_whole_log(place: Place) -> None:
    """R41: an agent opened from its checkpoint holds exactly the whole log's replay (state,
    goal rounds) and its next transitions agree; it read only the events after it."""
    agent = agent_id()
    await session(place, agent)
    events = whole(place, agent)
    opened = open_log(place.log(agent))
    assert opened.checkpoint is not None
    assert opened.start > 0
    assert len(opened.events) == len(events) - opened.start
    assert opened.fold.state() == replay(events)
    assert opened.fold.rounds == goal_rounds(events)
    assert opened.fold.seq == len(events)
    reopened = LoopAgent(EchoHost(), log=place.log(agent))  # and Resume: the posts waited
    resumed = reduce(replay(events), intents.Resume()).state
    assert reopened.state == resumed
    same_next(reopened.state, resumed)
    await reopened.detach()


@run_async
async def test_R41_every_checkpoint_position_opens_exactly(place: Place) -> None:
    """R41: for checkpoints at many positions of a real log (planted as an owner writes
    them), opening equals the whole log's replay, and the next transitions agree."""
    agent = agent_id()
    await session(place, agent, rounds=3)
    events = whole(place, agent)
    name = "default" if place.name == "memory" else agent
    for at in range(1, len(events) + 1, 3):
        document = checkpoint_to_json(take(LogFold().feed(events[:at])), name)
        place.plant(agent, at, dump_json(document))
        opened = open_log(place.log(agent))
        assert opened.checkpoint is not None
        assert opened.start == at
        assert opened.fold.state() == replay(events)
        assert opened.fold.rounds == goal_rounds(events)
        same_next(opened.fold.state(), replay(events))


@run_async
async def test_R41_deleting_every_checkpoint_changes_nothing_but_speed(place: Place) -> None:
    """R41: the same agent opens with its checkpoint, without any, and without the table."""
    agent = agent_id()
    await session(place, agent)
    with_checkpoint = LoopAgent(EchoHost(), log=place.log(agent))
    state = with_checkpoint.state
    await with_checkpoint.detach()
    place.wipe()
    assert checkpoints_of(place, agent) == []
    without = LoopAgent(EchoHost(), log=place.log(agent, None))
    assert without.state == state == replay(whole(place, agent))
    await without.detach()
    if isinstance(place, Stored) and place.name == "sqlite":
        place.execute(f"DROP TABLE {SQLITE_CHECKPOINTS}")
        dropped = LoopAgent(EchoHost(), log=place.log(agent, None))
        assert dropped.state == state
        await dropped.detach()


def _bad_checkpoints(events: list[Any], agent: str) -> dict[str, tuple[object, str | bytes]]:
    """Every kind of checkpoint a reader must not trust, as ``(stored seq, text)``: each
    right after the event before the log's last ``turn/end`` (an open turn the next event
    closes), planted with one thing wrong."""
    at = max(i for i, event in enumerate(events) if isinstance(event, TurnEnded))
    good = checkpoint_to_json(take(LogFold().feed(events[:at])), agent)

    def text(**change: Any) -> str:
        return dump_json({**good, **change})

    end = len(events) + 5
    beyond = {**good, "seq": end}
    other_digest = checkpoint_to_json(take(LogFold().feed(events[: at - 1])), agent)["digest"]
    # a checkpoint whose digest matches but whose state no fold of this log kept: the
    # events after it do not replay from it (a step left open that the log closed)
    wrong_state = {**good, "lastTurn": good["lastTurn"] + 7, "turn": None}
    return {
        "not-json": (at, "{not json"),
        "not-utf8": (at, b"\xff\xfe{"),
        "foreign": (at, text(agent="somebody-else")),
        "future-version": (at, text(version=CHECKPOINT_VERSION + 1)),
        "not-a-checkpoint": (at, json.dumps({"version": CHECKPOINT_VERSION, "agent": agent})),
        "beyond-the-log": (end, dump_json(beyond)),
        "digest-mismatch": (at, text(digest=other_digest)),
        "seq-mismatch": (at, text(seq=at - 1, digest=other_digest)),
        "does-not-replay": (at, dump_json(wrong_state)),
    }


BAD = {  # what the warning says
    "not-json": "not JSON",
    "not-utf8": "not UTF-8",
    "foreign": "taken for agent",
    "future-version": "version",
    "not-a-checkpoint": "checkpoint",
    "beyond-the-log": "beyond the log's end",
    "digest-mismatch": "does not match the log's event",
    "seq-mismatch": "it says seq",
    "does-not-replay": "do not replay from it",
}


@pytest.mark.parametrize("kind", BAD)
@run_async
async def test_R41_a_bad_checkpoint_is_ignored_with_one_warning(
    place: Place, kind: str, caplog: pytest.LogCaptureFixture
) -> None:
    """R41: a checkpoint that does not decode, another agent's, a version this code does not
    know, one beyond the log's end or of another event (its digest), or one the events after
    it do not replay from, is ignored with one warning and the whole log is replayed: the
    agent opens exactly as from its log."""
    agent = agent_id()
    await session(place, agent, rounds=3)
    events = whole(place, agent)
    name = "default" if place.name == "memory" else agent
    seq, text = _bad_checkpoints(events, name)[kind]
    expected = BAD[kind]
    if kind == "not-utf8" and place.name == "postgres":
        text, expected = "\x01 not a checkpoint", "not JSON"  # PostgreSQL text is UTF-8
    place.plant(agent, seq, text)
    caplog.set_level(logging.WARNING, SHELL_LOGGER)
    opened = open_log(place.log(agent))
    assert opened.checkpoint is None
    assert opened.start == 0
    assert opened.fold.state() == replay(events)
    (warning,) = warnings_of(caplog)
    assert expected in warning, warning
    caplog.clear()
    reopened = LoopAgent(EchoHost(), log=place.log(agent))
    assert reopened.state == replay(events)
    assert len(warnings_of(caplog)) == 1
    await reopened.detach()


@run_async
async def test_R41_a_crash_between_a_checkpoint_and_the_next_append(place: Place) -> None:
    """R41, I12: the owner dies right after a checkpoint was written (nothing appended after
    it), or after more appends: the next owner opens from it exactly as from the log."""
    if place.name == "memory":
        pytest.skip("a MemoryLog dies with its process")
    agent = agent_id()
    await session(place, agent, rounds=2)
    events = whole(place, agent)
    owner = place.log(agent)
    owner.acquire()
    checkpoint = take(LogFold().feed(events))
    (error,) = owner.write_checkpoints(
        [(owner, checkpoint.seq, dump_json(checkpoint_to_json(checkpoint, agent)))]
    )
    assert error is None
    owner.release()  # the crash: nothing after the checkpoint; the lock or lease goes
    opened = open_log(place.log(agent))
    assert opened.start == len(events)
    assert opened.events == []
    assert opened.fold.state() == replay(events)
    crashed = LoopAgent(EchoHost(), log=place.log(agent))  # Resume from the checkpoint
    crashed.followup(msg("after"))
    await crashed.when_idle()
    await crashed.detach()
    after = whole(place, agent)
    reopened = LoopAgent(EchoHost(), log=place.log(agent))
    assert reopened.state == replay(after)
    await reopened.detach()


# ------------------------------------------------------------------ reading


def test_R41_read_since_until_reads_a_tail_on_every_store(tmp_path: Path) -> None:
    """R41: ``log.read(since, until)`` is the slice of the whole log; bad bounds are
    InvalidInput (R26)."""
    events = list(_bad_session_events())
    memory = MemoryLog(events)
    with SqliteLog(tmp_path / "r.db") as sqlite_log:
        sqlite_log.acquire()
        sqlite_log.append(events)
        for log in (memory, sqlite_log):
            assert log.read() == events
            assert log.read(3) == events[3:]
            assert log.read(2, 5) == events[2:5]
            assert log.read(len(events)) == []
            assert log.read(5, 2) == []
            for bad in (-1, True, "1", 2**60):
                with pytest.raises(InvalidInput):
                    log.read(bad)  # type: ignore[arg-type]


def _bad_session_events() -> list[Any]:
    state = replay([])
    out: list[Any] = []
    for n in range(3):
        transition = reduce(state, intents.queue(msg(f"q{n}"), ()))
        state, out = transition.state, out + list(transition.durable)
    return out


@run_async
async def test_R36_reading_checkpoints_never_writes(tmp_path: Path) -> None:
    """R36 v4: a store's ``read_tail`` over a file without the checkpoints table finds none
    and creates nothing (the file is untouched)."""
    path = tmp_path / "ro.db"
    with SqliteLog(path, agent_id="a", checkpoint_every=None) as log:
        agent = LoopAgent(EchoHost(), log=log)
        agent.followup(msg("x"))
        await agent.when_idle()
        await agent.detach()
    before = path.read_bytes()
    store = SqliteStore(path)
    tail = store.read_tail("a")
    store.close()
    assert tail.checkpoint is None
    assert tail.start == 0
    assert len(tail.events) > 0
    assert path.read_bytes() == before
    with sqlite3.connect(path) as conn:
        tables = {name for (name,) in conn.execute("SELECT name FROM sqlite_master")}
    assert SQLITE_CHECKPOINTS not in tables


def test_R41_an_applications_own_checkpoints_table_is_refused_untouched(tmp_path: Path) -> None:
    """R41, SH9: an ``inbox_core_checkpoints`` table of another shape (not inbox-core's) is
    IncompatibleLog, the file left as it was, by a log and by a store."""
    path = tmp_path / "app.db"
    with SqliteLog(path) as log:
        log.acquire()
        log.append(_bad_session_events())
    with sqlite3.connect(path) as conn:
        conn.execute(f"CREATE TABLE {SQLITE_CHECKPOINTS} (id INTEGER PRIMARY KEY, note TEXT)")
    before = path.read_bytes()
    with pytest.raises(IncompatibleLog):
        SqliteLog(path)
    with pytest.raises(IncompatibleLog):
        SqliteStore(path)
    assert path.read_bytes() == before


# ------------------------------------------------------------------- worker


@run_async
async def test_R41_a_workers_takeover_opens_from_the_checkpoint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """R41, R37: a worker taking over agents reads their checkpoints and the events after
    them only (no whole read), and serves them from there."""
    from inbox_core.shell import Worker

    path = tmp_path / "w.db"
    store = SqliteStore(path)
    place = Stored(store)
    agents = [agent_id() for _ in range(3)]
    for agent in agents:
        await session(place, agent, rounds=3)
        store.post(agent, intents.followup(msg("waiting"), ()))
    whole_reads: list[str] = []
    read = SqliteLog.read

    def counting(self: SqliteLog, since: int = 0, until: int | None = None) -> list[Any]:
        if since == 0 and until is None:
            whole_reads.append(self.agent_id)
        return read(self, since, until)

    monkeypatch.setattr(SqliteLog, "read", counting)
    worker = Worker(store, lambda _agent: EchoHost(), poll_seconds=0.05, idle_seconds=0.2)
    running = asyncio.ensure_future(worker.run())
    try:
        for _ in range(400):
            if all(store.pending_count(agent) == 0 for agent in agents) and not worker.agents:
                break
            await asyncio.sleep(0.05)
    finally:
        worker.stop()
        await running
    assert all(store.pending_count(agent) == 0 for agent in agents)
    assert whole_reads == []
    for agent in agents:
        events = SqliteLog(path, agent_id=agent).read()
        assert replay(events).status == "idle"
        assert verify(events, checkpoints_of(place, agent), agent)[0].ok
    place.close()
    store.close()


# ---------------------------------------------------------------------- CLI


@run_async
async def test_R41_replay_check_checkpoints_finds_a_planted_bad_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """R41: ``inbox-core replay --check-checkpoints`` compares every stored checkpoint with the
    replay at its seq, one line each: 0 when all agree, 1 for one that differs (a digest that
    matches over a state the log does not have) or cannot be used."""
    from inbox_core.cli import main

    path = tmp_path / "cli.db"
    place = Stored(SqliteStore(path))
    await session(place, "a", rounds=2)
    arguments = ["replay", str(path), "--agent-id", "a", "--check-checkpoints"]
    assert main(arguments) == 0
    assert "checkpoint at seq" in capsys.readouterr().out
    events = whole(place, "a")
    good = checkpoint_to_json(take(LogFold().feed(events[:7])), "a")
    for text in (
        dump_json({**good, "lastTurn": good["lastTurn"] + 1}),  # its digest right, its state not
        "{not json",
    ):
        place.plant("a", 7, text)
        assert main(arguments) == 1
        (line,) = [x for x in capsys.readouterr().out.splitlines() if "checkpoint at seq" in x]
        assert line.startswith("checkpoint at seq 7: MISMATCH")
    place.plant("a", 7, dump_json(good))
    assert main(arguments) == 0
    place.close()
    place.store.close()


def test_R41_specs_shell_md_documents_the_exact_checkpoints_tables() -> None:
    """specs/shell.md section 9 shows the tables each store makes: the statements the stores
    run (each folder's schema.py, their one source)."""
    from inbox_core.shell.stores.postgres import schema as pg_schema
    from inbox_core.shell.stores.sqlite import schema as sqlite_schema

    text = (Path(__file__).resolve().parents[2] / "specs" / "shell.md").read_text()
    for statement in (sqlite_schema.CHECKPOINTS_DDL, pg_schema.CHECKPOINTS_DDL):
        assert statement + ";" in text, statement
