"""MemoryLog, SqliteLog and the JSON Lines form (R10, I5, I12; section Formats)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from inbox_core import (
    CompletedReason,
    DurableEvent,
    InvalidInput,
    LogFenced,
    ReplayError,
    StepEnded,
    TurnEnded,
    TurnStarted,
    event_to_json,
    replay,
)
from inbox_core.shell import (
    CorruptLog,
    EchoHost,
    IncompatibleLog,
    LogUnavailable,
    LoopAgent,
    MemoryLog,
    SqliteLog,
    from_json_lines,
    to_json_lines,
)

from .support import check_invariants, msg, run_async


async def session(log: MemoryLog | SqliteLog) -> LoopAgent:
    """A little of everything: turns, contexts, steer, inject, queue, cancel, edits."""
    agent = LoopAgent(EchoHost(), log=log)
    agent.followup(msg("f1"), contexts=(msg("c1"),))
    agent.steer(msg("s1"))
    agent.inject(msg("i1"))
    agent.queue(q := msg("q1"))
    await agent.when_idle()
    agent.replace(q.id, msg("q2"))
    agent.followup(msg("f2"))
    agent.cancel(keep_inbox=True)
    await agent.when_idle()
    return agent


def rows(path: Path, agent_id: str = "default") -> list[tuple[int, str]]:
    with sqlite3.connect(path) as conn:
        query = "SELECT seq, event FROM events WHERE agent_id = ? ORDER BY seq"
        return list(conn.execute(query, (agent_id,)))


@run_async
async def test_R10_sqlite_log_round_trips_a_session(tmp_path: Path) -> None:
    """SH9, R10, I5: rows are seq 0..n-1 holding event_to_json; a reopened log replays the state."""
    path = tmp_path / "agent.db"
    with SqliteLog(path) as log:
        agent = await session(log)
        events = log.read()
        assert len(log) == len(events) > 10
        await agent.detach()
    stored = rows(path)
    assert [seq for seq, _ in stored] == list(range(len(events)))
    assert [json.loads(text) for _, text in stored] == [event_to_json(e) for e in events]
    with SqliteLog(path) as reopened:
        assert reopened.read() == events
        again = LoopAgent(EchoHost(), log=reopened)
        assert again.state.projection() == agent.state.projection()
        assert len(reopened) == len(events)  # nothing to resume: nothing appended (D8)


def test_sqlite_log_uses_wal_and_a_versioned_schema(tmp_path: Path) -> None:
    """SH9, R29: WAL journal, PRAGMA user_version 2, the documented multi-agent table."""
    with SqliteLog(tmp_path / "a.db") as log:
        conn = log.connection
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert conn.execute("PRAGMA user_version").fetchone()[0] == 2
        columns = [(r[1], r[5]) for r in conn.execute("PRAGMA table_info(events)")]
        assert columns == [("agent_id", 1), ("seq", 2), ("event", 0)]  # PRIMARY KEY (agent_id, seq)


def test_sqlite_log_refuses_an_unknown_schema_version(tmp_path: Path) -> None:
    """SH9: another schema version is refused (IncompatibleLog), untouched."""
    path = tmp_path / "future.db"
    with sqlite3.connect(path) as conn:
        conn.execute("PRAGMA user_version=7")
    conn.close()
    before = path.read_bytes()
    with pytest.raises(IncompatibleLog, match="schema version 7"):
        SqliteLog(path)
    assert path.read_bytes() == before


def test_I12_one_append_is_one_transaction(tmp_path: Path) -> None:
    """SH1, SH9, I12: a failure on the 2nd row of an append leaves none of its rows."""
    events: list[DurableEvent] = [TurnStarted(1), TurnEnded(1, CompletedReason())]
    with SqliteLog(tmp_path / "t.db") as log:
        log.acquire()
        log.append([StepEnded(1, 1)])
        log.connection.execute(
            "CREATE TRIGGER fail_second BEFORE INSERT ON events WHEN NEW.seq = 2 "
            "BEGIN SELECT RAISE(ABORT, 'injected failure'); END"
        )
        with pytest.raises(LogUnavailable, match="injected failure") as info:
            log.append(events)
        assert isinstance(info.value.__cause__, sqlite3.IntegrityError)
        assert len(log) == 1
        assert not log.connection.in_transaction
        log.connection.execute("DROP TRIGGER fail_second")
        log.append(events)  # the log is still usable, seq stays contiguous
        assert [seq for seq, _ in rows(Path(log.path))] == [0, 1, 2]


def test_I12_an_unencodable_event_writes_nothing(tmp_path: Path) -> None:
    """SH9, I12: encoding happens before the transaction: a bad event anywhere writes nothing."""
    with SqliteLog(tmp_path / "t.db") as log:
        log.acquire()
        with pytest.raises(InvalidInput):  # typed (issue 17, G9)
            log.append([TurnStarted(1), "not an event"])  # type: ignore[list-item]
        assert len(log) == 0


@run_async
async def test_I11_a_failing_sqlite_append_leaves_the_agent_unchanged(tmp_path: Path) -> None:
    """SH1, I11: the agent commits only after the log did: a failed transaction changes nothing."""
    with SqliteLog(tmp_path / "t.db") as log:
        agent = LoopAgent(EchoHost(), log=log)
        agent.queue(msg("q"))
        log.connection.execute(
            "CREATE TRIGGER no_more BEFORE INSERT ON events "
            "BEGIN SELECT RAISE(ABORT, 'read-only now'); END"
        )
        before = agent.state
        with pytest.raises(LogUnavailable, match="read-only now"):
            agent.followup(msg("f"))
        assert agent.state is before
        assert agent.status == "idle"
        check_invariants(agent)


@pytest.mark.parametrize(
    ("corrupt", "seq"),
    [
        ("UPDATE events SET seq = 999 WHERE seq = 2", 2),
        ("DELETE FROM events WHERE seq = 0", 0),
        ("UPDATE events SET event = '{not json' WHERE seq = 3", 3),
        ("""UPDATE events SET event = '{"type":"turn/start","data":{}}' WHERE seq = 1""", 1),
        ("""UPDATE events SET event = '{"type":"nope","data":{}}' WHERE seq = 4""", 4),
        ("UPDATE events SET event = 'null' WHERE seq = 1", 1),
    ],
)
@run_async
async def test_R10_corrupt_rows_raise_corrupt_log_naming_the_seq(
    tmp_path: Path, corrupt: str, seq: int
) -> None:
    """R10: a gap, bad JSON or a bad event raises CorruptLog (a ReplayError) with its seq."""
    path = tmp_path / "c.db"
    with SqliteLog(path) as log:
        await (await session(log)).detach()
        log.connection.execute(corrupt)
        with pytest.raises(CorruptLog) as info:
            log.read()
        assert info.value.seq == seq
        assert isinstance(info.value, ReplayError)
        with pytest.raises(CorruptLog):
            LoopAgent(EchoHost(), log=log)
        assert not log.owned  # a log the agent cannot resume is not held


def test_R10_an_inconsistent_log_is_refused_by_the_agent() -> None:
    """R10: a log that decodes but does not replay raises ReplayError from the constructor."""
    log = MemoryLog([StepEnded(1, 1)])
    with pytest.raises(ReplayError) as info:
        LoopAgent(EchoHost(), log=log)
    assert info.value.seq == 0
    assert len(log) == 1


@run_async
async def test_json_lines_round_trip_and_seq_check() -> None:
    """SH9: the JSON Lines form: one {"seq","type","data"} per line; seq must be contiguous."""
    log = MemoryLog()
    await session(log)
    events = log.read()
    text = to_json_lines(events)
    lines = text.splitlines()
    assert len(lines) == len(events)
    first = json.loads(lines[0])
    assert list(first) == ["seq", "type", "data"]
    assert first["seq"] == 0
    assert from_json_lines(text) == events
    assert from_json_lines("\n" + text + "\n\n") == events
    replay(from_json_lines(text))
    swapped = "\n".join([lines[1], lines[0], *lines[2:]])
    with pytest.raises(CorruptLog) as info:
        from_json_lines(swapped)
    assert info.value.seq == 0
    with pytest.raises(CorruptLog) as info:
        from_json_lines(lines[0] + "\n{oops\n")
    assert info.value.seq == 1
    with pytest.raises(CorruptLog):
        from_json_lines('{"type":"turn/start","data":{"turn":"one"}}')
    # the reason names the line (blank lines count), and a bool is no seq (True == 1)
    with pytest.raises(CorruptLog) as info:
        from_json_lines(lines[0] + "\n\n{oops\n")
    assert (info.value.seq, info.value.reason.startswith("line 3 is not JSON")) == (1, True)
    second = json.loads(lines[1])
    second["seq"] = True
    with pytest.raises(CorruptLog) as info:
        from_json_lines(lines[0] + "\n" + json.dumps(second))
    assert info.value.seq == 1
    assert "has seq True, expected 1" in info.value.reason


def test_sqlite_log_close_is_idempotent(tmp_path: Path) -> None:
    log = SqliteLog(tmp_path / "x.db")
    log.close()
    log.close()
    assert "closed" in repr(log)
    with pytest.raises(LogUnavailable, match="is closed"):  # typed, as for PostgresLog
        log.read()
    with pytest.raises(LogFenced):  # closing released it (R29)
        log.append([TurnStarted(1)])
    with pytest.raises(LogUnavailable, match="is closed"):
        log.acquire()


def test_memory_log_read_returns_a_copy() -> None:
    log = MemoryLog()
    log.acquire()
    log.append([TurnStarted(1)])
    events = log.read()
    events.clear()
    assert log.read() == [TurnStarted(1)]
    assert "1 events" in repr(log)
