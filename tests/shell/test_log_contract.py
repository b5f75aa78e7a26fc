"""The ``EventLog`` contract (R29, R10, I12), run against every store.

MemoryLog (one process), SqliteLog with one agent per file and with many
agents per file, and PostgresLog (a real server: see conftest.py). Each test
names the rule it checks; each can fail on a store that breaks it.
"""

from __future__ import annotations

import gc
import sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from inbox_core import (
    CompletedReason,
    DurableEvent,
    InvalidInput,
    LogFenced,
    LogOwned,
    ReplayError,
    StepEnded,
    TurnEnded,
    TurnStarted,
    replay,
)
from inbox_core.shell import CorruptLog, EchoHost, LogUnavailable, LoopAgent

from .stores import CORRUPTIONS, STORES, Store, make_store
from .support import msg, run_async

TURN: list[DurableEvent] = [TurnStarted(1), TurnEnded(1, CompletedReason())]


@pytest.fixture(params=STORES)
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    made = make_store(request, request.param, tmp_path)
    try:
        yield made
    finally:
        made.close()


def test_R29_building_takes_no_ownership_and_an_unacquired_append_is_fenced(store: Store) -> None:
    """R29: a new log object owns nothing; its append raises LogFenced and writes nothing."""
    log = store.new()
    assert not log.owned
    assert log.read() == []
    with pytest.raises(LogFenced):
        log.append(TURN)
    assert log.read() == []
    other = store.another(log)
    other.acquire()  # the first object's existence blocks nobody
    assert other.owned


def test_R29_I12_appends_are_contiguous_and_read_by_any_object(store: Store) -> None:
    """R29, I12: appends land in order at seq 0, 1, 2, ...; a reader needs no ownership."""
    log = store.new()
    log.acquire()
    log.append([TurnStarted(1)])
    log.append([TurnEnded(1, CompletedReason()), TurnStarted(2)])
    expected = [TurnStarted(1), TurnEnded(1, CompletedReason()), TurnStarted(2)]
    assert log.read() == expected
    reader = store.another(log)
    assert reader.read() == expected
    assert len(reader) == 3
    assert not reader.owned


def test_R29_a_second_acquire_raises_log_owned_and_writes_nothing(store: Store) -> None:
    """R29: while a live writer owns the log, acquire raises LogOwned (any object, itself too)."""
    log = store.new()
    log.acquire()
    log.append([TurnStarted(1)])
    other = store.another(log)
    with pytest.raises(LogOwned):
        other.acquire()
    with pytest.raises(LogOwned):
        log.acquire()
    assert not other.owned
    with pytest.raises(LogFenced):
        other.append([TurnEnded(1, CompletedReason())])
    assert log.read() == [TurnStarted(1)]
    log.append([TurnEnded(1, CompletedReason())])  # the owner is unaffected
    assert len(log.read()) == 2


def test_R29_release_hands_over_and_fences_the_old_object(store: Store) -> None:
    """R29: after release the old object's appends raise LogFenced; the next owner continues."""
    log = store.new()
    log.acquire()
    log.append([TurnStarted(1)])
    log.release()
    log.release()  # idempotent
    assert not log.owned
    with pytest.raises(LogFenced):
        log.append([TurnEnded(1, CompletedReason())])
    other = store.another(log)
    other.acquire()
    other.append([TurnEnded(1, CompletedReason())])
    with pytest.raises(LogFenced):
        log.append([TurnStarted(2)])
    assert other.read() == TURN
    other.release()
    log.acquire()  # re-acquiring picks up at the log's end
    log.append([TurnStarted(2)])
    assert [type(e).__name__ for e in log.read()] == ["TurnStarted", "TurnEnded", "TurnStarted"]


def test_R29_append_is_conditional_on_the_expected_seq(store: Store) -> None:
    """R29: a row written behind the owner's back (a writer that bypassed ownership) makes the
    owner's next append raise LogFenced, writing nothing: two writers never interleave."""
    log = store.new()
    log.acquire()
    log.append([TurnStarted(1)])
    store.sneak(log, 1)
    before = store.another(log).read()
    with pytest.raises(LogFenced):
        log.append([TurnEnded(1, CompletedReason())])
    assert store.another(log).read() == before
    assert not log.owned


def test_I12_one_append_is_all_or_nothing(store: Store) -> None:
    """I12, SH9: an unencodable event, or a store failure on the 2nd row of a call, writes none
    of the call; the log stays usable and contiguous."""
    if not store.rows:
        pytest.skip("MemoryLog stores event objects: one list.extend, nothing to fail")
    log = store.new()
    log.acquire()
    log.append([TurnStarted(1)])
    bad: Any = [StepEnded(1, 1), object()]
    with pytest.raises(InvalidInput):  # typed (issue 17, G9)
        log.append(bad)
    assert log.read() == [TurnStarted(1)]
    store.fail_at(log, 2)
    with pytest.raises(LogUnavailable, match="injected failure"):  # typed on every store
        log.append([TurnEnded(1, CompletedReason()), TurnStarted(2)])
    assert log.read() == [TurnStarted(1)]
    store.fail_at(log, None)
    log.append([TurnEnded(1, CompletedReason())])
    assert log.read() == TURN


def test_R29_close_or_garbage_collection_releases(store: Store) -> None:
    """R29: a closed (or, for SQLite and memory, garbage-collected) object releases the log."""
    log = store.new()
    log.acquire()
    other = store.another(log)
    if hasattr(log, "close"):
        log.close()
    else:
        del log
        gc.collect()
    other.acquire()
    assert other.owned
    if store.name.startswith("sqlite") or store.name == "memory":
        third = store.another(other)
        del other
        gc.collect()
        third.acquire()  # garbage collection released it
        assert third.owned


def test_R29_exactly_one_of_racing_threads_wins(store: Store) -> None:
    """R29: eight threads acquire at once (one object each): one wins, seven get LogOwned."""
    first = store.new()
    logs = [store.another(first) for _ in range(8)]
    barrier = threading.Barrier(len(logs))
    results: list[str] = []

    def race(log: Any) -> None:
        barrier.wait()
        try:
            log.acquire()
            results.append("won")
        except LogOwned:
            results.append("owned")

    if store.name.startswith("sqlite"):  # an sqlite3 connection belongs to its thread
        logs = []
        made: list[Any] = []
        lock = threading.Lock()

        def race_own(_: None) -> None:
            with lock:
                log = store.another(first)
                made.append(log)
            race(log)

        threads = [threading.Thread(target=race_own, args=(None,)) for _ in range(8)]
    else:
        threads = [threading.Thread(target=race, args=(log,)) for log in logs]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert sorted(results) == ["owned"] * 7 + ["won"]


@pytest.mark.parametrize("how", CORRUPTIONS)
def test_R10_a_bad_stored_row_raises_corrupt_log_naming_its_seq(store: Store, how: str) -> None:
    """R10: a gap, bad JSON, a non-event or null raises CorruptLog (a ReplayError) with the seq."""
    if not store.rows:
        pytest.skip("MemoryLog stores event objects, not rows")
    log = store.new()
    log.acquire()
    log.append([TurnStarted(1), StepEnded(1, 1), TurnStarted(2), TurnStarted(3)])
    store.corrupt(log, how, 2)
    with pytest.raises(CorruptLog) as info:
        store.another(log).read()
    assert info.value.seq == 2
    assert isinstance(info.value, ReplayError)


@run_async
async def test_R29_a_loop_agent_acquires_and_detach_releases(store: Store) -> None:
    """R29: LoopAgent acquires at construction (a second one raises LogOwned having written
    nothing); after detach the next owner resumes the same log."""
    log = store.new()
    agent = LoopAgent(EchoHost(), log=log)
    agent.followup(msg("one"))
    await agent.when_idle()
    size = len(log.read())
    with pytest.raises(LogOwned):
        LoopAgent(EchoHost(), log=store.another(log))
    assert len(log.read()) == size
    await agent.detach()
    assert not log.owned
    with pytest.raises(LogFenced):
        log.append([TurnStarted(99)])
    again = LoopAgent(EchoHost(), log=store.another(log))
    again.followup(msg("two"))
    await again.when_idle()
    assert replay(again.log.read()).projection() == again.state.projection()
    await again.aclose()
    assert not again.log.owned  # aclose releases once converged


def test_R29_read_never_blocks_a_writer(store: Store) -> None:
    """R29: a reader holding an open read snapshot does not delay the owner's append."""
    log = store.new()
    log.acquire()
    log.append([TurnStarted(1)])
    reader = store.another(log)
    with _open_snapshot(store, reader):
        log.append([TurnEnded(1, CompletedReason())])  # would block (timeout) if it waited
    assert reader.read() == TURN


class _open_snapshot:
    """Hold a read transaction open on a reader's own connection (another process's, say:
    a log's connection is shared by the logs of its file in one thread) while the owner
    appends."""

    def __init__(self, store: Store, reader: Any) -> None:
        self.store, self.reader = store, reader
        self.conn: Any = None

    def __enter__(self) -> None:
        if self.store.name.startswith("sqlite"):
            self.conn = sqlite3.connect(self.reader.path, isolation_level=None)
            self.conn.execute("BEGIN")
            self.conn.execute("SELECT COUNT(*) FROM events").fetchone()
        elif self.store.name == "postgres":
            import psycopg

            self.conn = psycopg.connect(self.store.conninfo, autocommit=True)  # type: ignore[attr-defined]
            self.conn.execute("BEGIN ISOLATION LEVEL REPEATABLE READ")
            self.conn.execute("SELECT COUNT(*) FROM inbox_core_events").fetchone()

    def __exit__(self, *exc: object) -> None:
        if self.conn is not None:
            self.conn.execute("ROLLBACK")
            self.conn.close()


def test_R29_a_lapsed_lease_nobody_took_stays_writable(store: Store) -> None:
    """R29: only a writer that lost ownership is fenced. An owner whose lease lapsed while
    nobody took the log (an idle agent without a heartbeat) still appends, which renews the
    lease: a later acquire by another writer is refused again."""
    if not store.lapses:
        pytest.skip("ownership dies with the process, never under a live owner")
    log: Any = store.new()
    log.acquire()
    log.append([TurnStarted(1)])
    store.lapse(log)  # type: ignore[attr-defined]
    log.append([TurnEnded(1, CompletedReason())])
    other: Any = store.another(log)
    with pytest.raises(LogOwned):
        other.acquire()
    assert other.read() == TURN


def test_R29_a_lapsed_lease_is_taken_over_and_the_old_owner_fenced(store: Store) -> None:
    """R29: a lease-based store lets the next acquire take a lapsed lease (epoch + 1); the old
    owner's next append raises LogFenced and writes nothing."""
    if not store.lapses:
        pytest.skip("ownership dies with the process, never under a live owner")
    log: Any = store.new()
    log.acquire()
    log.append([TurnStarted(1)])
    epoch = log.epoch
    other: Any = store.another(log)
    with pytest.raises(LogOwned):
        other.acquire()
    store.lapse(log)  # type: ignore[attr-defined]
    other.acquire()
    assert other.epoch == epoch + 1
    with pytest.raises(LogFenced, match="taken over"):
        log.append([TurnEnded(1, CompletedReason())])
    with pytest.raises(LogFenced):
        log.renew()
    other.append([TurnEnded(1, CompletedReason())])
    other.renew()
    assert other.read() == TURN
