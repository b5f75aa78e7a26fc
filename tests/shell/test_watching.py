"""Watchers and waiters share reads, off the event loop (R36 v4; issue 28, items 11 and 15):
every read of ``watch``, ``wait`` and ``outcome`` runs in a worker thread; the watchers of
one agent in one process share one read per wake, each keeping its own position; a slow
watcher holds nobody up and costs no memory but its position; every argument is
range-checked (``InvalidInput``; the CLI exits 2 with one line)."""

from __future__ import annotations

import asyncio
import contextlib
import math
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from inbox_core import InvalidInput, TurnStarted, limits
from inbox_core.cli import main
from inbox_core.commands import queue
from inbox_core.events import DurableEvent
from inbox_core.shell import (
    EchoHost,
    LoopAgent,
    PostApplied,
    PostgresStore,
    Receipt,
    SqliteLog,
    SqliteStore,
)
from inbox_core.shell.stores import watching
from inbox_core.shell.stores.errors import CorruptLog
from inbox_core.shell.stores.rows import encode_event
from inbox_core.shell.stores.watching import Batch, EventFeed, decode_batch

from .posts_support import AnyStore, agent_name, until
from .support import msg, run_async

# ------------------------------------------------------------------ counting reads


@contextmanager
def counted_reads(store_class: type, name: str) -> Iterator[list[bool]]:
    """Record each call of ``store_class.name`` (a store's blocking read) made while inside,
    as whether it ran on a thread with a running event loop. Patched on the class before
    the store is built (the store binds its reads when built)."""
    original = getattr(store_class, name)
    calls: list[bool] = []

    def read(*args: Any, **kwargs: Any) -> Any:
        try:
            asyncio.get_running_loop()
            calls.append(True)
        except RuntimeError:
            calls.append(False)
        return original(*args, **kwargs)

    setattr(store_class, name, read)
    try:
        yield calls
    finally:
        setattr(store_class, name, original)


def build(kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> AnyStore:
    if kind == "sqlite":
        return SqliteStore(tmp_path / "w.db")
    return PostgresStore(request.getfixturevalue("pg"))


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_r36_v4_watchers_of_one_agent_share_one_read_per_wake_off_the_loop(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """R36 v4: 1 or 40 watchers of an agent, the same owner work: the store reads the
    agent's events about once per commit either way (never once per watcher), and no read
    runs on the event loop; every watcher sees every event in order."""
    store_class = SqliteStore if kind == "sqlite" else PostgresStore
    reads_by_watchers: dict[int, int] = {}
    with counted_reads(store_class, "_read_events") as calls:
        store = build(kind, tmp_path, request)
        try:
            for watchers in (1, 40):
                before = len(calls)
                commits = run_async(_owner_with_watchers)(store, watchers)
                reads_by_watchers[watchers] = len(calls) - before
                assert reads_by_watchers[watchers] <= 2 * commits + 4, (watchers, commits)
        finally:
            store.close()
    assert not any(calls), "a read ran on the event loop"
    assert reads_by_watchers[40] <= reads_by_watchers[1] + 2 * 4 + 8  # not 40 times as many


async def _owner_with_watchers(store: AnyStore, watchers: int) -> int:
    """Start ``watchers`` watchers of a fresh agent, run an owner that appends in several
    commits, wait until each saw everything; the number of commits."""
    agent = agent_name()
    seen: list[list[int]] = [[] for _ in range(watchers)]

    async def follow(mine: list[int]) -> None:
        async for seq, _event in store.watch(agent):
            mine.append(seq)

    tasks = [asyncio.ensure_future(follow(mine)) for mine in seen]
    await asyncio.sleep(0.05)  # every watcher is at the head (nothing written yet)
    owner = LoopAgent(EchoHost(), log=store.log(agent))
    commits = 0
    for index in range(5):
        owner.queue(msg(f"q{index}"))  # one command, one commit
        commits += 1
        await asyncio.sleep(0.02)
    total = len(owner.log)
    await until(lambda: all(len(mine) == total for mine in seen), what="every watcher")
    for task in tasks:
        task.cancel()
    await owner.detach()
    assert all(mine == list(range(total)) for mine in seen)
    return commits


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_r36_v4_waits_share_one_read_per_wake_off_the_loop(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """R36 v4: 30 waits on 30 posts of one agent: each looks once itself, then the store
    reads their outcomes together per wake (not 30 reads per wake), never on the loop."""
    store_class = SqliteStore if kind == "sqlite" else PostgresStore
    with counted_reads(store_class, "_read_outcomes") as calls:
        store = build(kind, tmp_path, request)
        agent = agent_name()
        receipts = [store.post(agent, queue(msg(f"m{i}"))) for i in range(30)]

        async def main_() -> None:
            waits = [asyncio.ensure_future(store.wait(r, timeout=30)) for r in receipts]
            await until(lambda: len(calls) >= 30, what="each wait's own look")
            owner = LoopAgent(EchoHost(), log=store.log(agent))  # applies all 30
            assert await asyncio.gather(*waits) == [PostApplied()] * 30
            await owner.detach()

        try:
            run_async(main_)()
        finally:
            store.close()
    assert not any(calls), "a read ran on the event loop"
    assert len(calls) <= 30 + 10  # the 30 first looks, then a few shared reads


# ------------------------------------------------------------- the feed, in memory


class FakeWake:
    """A wake rung by hand (the feed awaits it between reads)."""

    def __init__(self) -> None:
        self.event = asyncio.Event()
        self.closed = False

    async def wait(self) -> None:
        await self.event.wait()
        self.event.clear()

    def close(self) -> None:
        self.closed = True


class FakeLog:
    """An agent's events as rows, read the way a store reads them (counted)."""

    def __init__(self) -> None:
        self.texts: list[str] = []
        self.reads = 0

    def append(self, count: int) -> None:
        start = len(self.texts)
        self.texts += [encode_event(TurnStarted(start + i + 1)) for i in range(count)]

    def read(self, _agent: str, since: int, limit: int) -> Batch:
        self.reads += 1
        rows = [(seq, self.texts[seq]) for seq in range(since, min(len(self.texts), since + limit))]
        return decode_batch(since, rows, limit)


def turn(event: DurableEvent) -> int:
    assert isinstance(event, TurnStarted)
    return event.turn


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    window=st.integers(1, 6),
    starts=st.lists(st.integers(0, 40), min_size=1, max_size=5),
    pauses=st.lists(st.integers(0, 30), min_size=1, max_size=5),
    bursts=st.lists(st.integers(1, 12), min_size=1, max_size=6),
)
def test_r36_v4_each_follower_gets_every_event_from_its_position_in_order(
    window: int, starts: list[int], pauses: list[int], bursts: list[int]
) -> None:
    """R36 v4: followers that start anywhere (before the window, inside it, past the end)
    and consume at any pace (some stall while the window moves on) each get exactly the
    events from their ``since`` on, in order; the feed holds at most its window."""
    total = sum(bursts)

    async def main_() -> None:
        log, wake = FakeLog(), FakeWake()
        feed = EventFeed("a", log.read, wake, lambda _feed: None)
        got: list[list[int]] = [[] for _ in starts]

        async def follow(index: int, since: int) -> None:
            pause = pauses[index % len(pauses)]
            async with contextlib.aclosing(feed.follow(since)) as events:
                async for seq, event in events:
                    assert turn(event) == seq + 1
                    got[index].append(seq)
                    if seq % 7 == 0:
                        for _ in range(pause):  # a slow consumer: the window moves on
                            await asyncio.sleep(0)
                    if seq == total - 1:
                        return

        tasks = []
        for index, since in enumerate(starts):
            tasks.append(asyncio.ensure_future(follow(index, min(since, total - 1))))
            await asyncio.sleep(0)
        for burst in bursts:
            log.append(burst)
            wake.event.set()
            for _ in range(5):
                await asyncio.sleep(0)
            assert len(feed._window) <= max(window, watching.BATCH_EVENTS)
        await asyncio.wait_for(asyncio.gather(*tasks), 20)
        for index, since in enumerate(starts):
            assert got[index] == list(range(min(since, total - 1), total))
        assert wake.closed  # the last follower gone, the feed stopped

    with _window(window):
        asyncio.run(main_())


@contextmanager
def _window(events: int) -> Iterator[None]:
    saved = watching.WINDOW_EVENTS
    watching.WINDOW_EVENTS = events  # type: ignore[misc]
    try:
        yield
    finally:
        watching.WINDOW_EVENTS = saved  # type: ignore[misc]


def test_r36_v4_a_stalled_follower_holds_nobody_up_and_costs_no_memory() -> None:
    """R36 v4: one follower that never consumes while 3,000 events are appended: a follower
    at the head keeps up, the feed holds at most its window, and the stalled one then gets
    every event in order by reading from its own position."""

    async def main_() -> None:
        log, wake = FakeLog(), FakeWake()
        feed = EventFeed("a", log.read, wake, lambda _feed: None)
        stalled = feed.follow(0)
        log.append(1)
        wake.event.set()
        assert (await anext(stalled))[0] == 0  # then it stalls: never asks for more
        fast: list[int] = []

        async def keep_up() -> None:
            async for seq, _ in feed.follow(1):
                fast.append(seq)
                if seq == 3000:
                    return

        task = asyncio.ensure_future(keep_up())
        for _ in range(30):
            log.append(100)
            wake.event.set()
            await until(lambda: len(fast) == len(log.texts) - 1, what="the fast follower")
            assert len(feed._window) <= watching.WINDOW_EVENTS
        await task
        rest = [seq async for seq, _ in _first(stalled, 3000)]
        assert rest == list(range(1, 3001))

    asyncio.run(main_())


async def _first(events: Any, count: int) -> Any:
    for _ in range(count):
        yield await anext(events)


def test_r36_v4_a_follower_before_a_feed_that_found_nothing_gets_the_events_at_once() -> None:
    """R36 v4: a follower past the end started the feed; one joining at seq 0 gets the
    three events already there with no further commit (no wake)."""

    async def main_() -> None:
        log, wake = FakeLog(), FakeWake()
        log.append(3)
        feed = EventFeed("a", log.read, wake, lambda _feed: None)
        late = asyncio.ensure_future(anext(feed.follow(10)))
        await until(lambda: log.reads >= 1, what="the feed's first read")
        await asyncio.sleep(0.01)  # the feed now waits for a wake that never comes
        early = feed.follow(0)
        assert [(await asyncio.wait_for(anext(early), 5))[0] for _ in range(3)] == [0, 1, 2]
        late.cancel()
        await early.aclose()

    asyncio.run(main_())


def test_r36_v4_a_bad_row_ends_each_follower_at_its_seq_after_the_good_ones() -> None:
    """R36 v4, R36: a row that does not decode: every follower gets the events before it,
    then CorruptLog naming its seq; a follower joining later too."""

    async def main_() -> None:
        log, wake = FakeLog(), FakeWake()
        log.append(3)
        log.texts.append('{"type":"nope"}')
        feed = EventFeed("a", log.read, wake, lambda _feed: None)

        async def follow(since: int) -> tuple[list[int], int]:
            seen: list[int] = []
            try:
                async for seq, _ in feed.follow(since):
                    seen.append(seq)
            except CorruptLog as error:
                return seen, error.seq
            raise AssertionError("the watch ended without CorruptLog")

        assert await asyncio.gather(follow(0), follow(2)) == [([0, 1, 2], 3), ([2], 3)]

    asyncio.run(main_())


# ------------------------------------------------------------------ argument ranges

SINCE_BAD = [-1, 2**53, 2**63, 2**1100, True, 1.0, "1", None, float("nan")]
TIMEOUT_BAD = [-1, -0.5, 2**1100, 1e10, float("inf"), float("nan"), True, "1", [1]]


@pytest.mark.parametrize("since", SINCE_BAD)
def test_r36_v4_watch_and_events_refuse_a_since_out_of_range(store: AnyStore, since: Any) -> None:
    """Issue 28, item 15: ``since`` is a seq in [0, 2**53-1]; anything else InvalidInput
    (never an OverflowError from the database driver)."""

    async def main_() -> None:
        with pytest.raises(InvalidInput):
            async for _ in store.watch("a", since=since):
                pass

    run_async(main_)()
    with pytest.raises(InvalidInput):
        store.events("a", since=since)


@pytest.mark.parametrize("timeout", TIMEOUT_BAD)
def test_r36_v4_wait_refuses_a_timeout_out_of_range(store: AnyStore, timeout: Any) -> None:
    """Issue 28, item 15: ``timeout`` is None or seconds in [0, 1e9]; else InvalidInput."""

    async def main_() -> None:
        with pytest.raises(InvalidInput):
            await store.wait(Receipt("a", 1), timeout=timeout)

    run_async(main_)()


def test_r36_v4_the_largest_since_and_timeout_are_accepted(store: AnyStore) -> None:
    """The ends of the ranges work: a watch from 2**53-1 waits (nothing there), and a
    timeout of 1e9 s or 0 is a wait."""
    agent = agent_name()
    receipt = store.post(agent, queue(msg("x")))

    async def main_() -> None:
        watch = asyncio.ensure_future(_next_seq(store, agent, limits.MAX_SAFE_INTEGER))
        await asyncio.sleep(0.05)
        assert not watch.done()
        watch.cancel()
        waiting = asyncio.ensure_future(store.wait(receipt, timeout=1e9))
        await asyncio.sleep(0.05)
        assert not waiting.done()
        waiting.cancel()

    run_async(main_)()
    assert store.events(agent, since=limits.MAX_SAFE_INTEGER, limit=watching.MAX_PAGE) == []
    for limit in (0, watching.MAX_PAGE + 1, 2**70, 1.5):
        with pytest.raises(InvalidInput):
            store.events(agent, limit=limit)


async def _next_seq(store: AnyStore, agent: str, since: int) -> int:
    async for seq, _ in store.watch(agent, since=since):
        return seq
    raise AssertionError("the watch ended")


@settings(max_examples=200, deadline=None)
@given(value=st.one_of(st.integers(), st.floats(), st.booleans(), st.none(), st.text()))
def test_r36_v4_argument_checks_answer_a_value_or_invalid_input(value: Any) -> None:
    """Issue 28, item 15: the checks behind watch, wait and events return a value in range
    or raise InvalidInput, whatever they are given (never OverflowError or ValueError)."""
    for check in (watching.since_seq, watching.wait_seconds, watching.page_limit):
        try:
            checked = check(value)
        except InvalidInput:
            continue
        assert checked is None or (isinstance(checked, (int, float)) and math.isfinite(checked))


@pytest.mark.parametrize(
    "argv",
    [
        ["watch", "sqlite:{path}", "a", "--since", str(2**63)],
        ["watch", "sqlite:{path}", "a", "--since", "9" * 5000],
        ["watch", "sqlite:{path}", "a", "--since", "-1"],
        ["post", "sqlite:{path}", "a", "--queue", "x", "--wait", "--timeout", "1e400"],
        ["post", "sqlite:{path}", "a", "--queue", "x", "--wait", "--timeout", str(2**1100)],
    ],
)
def test_r36_v4_the_cli_range_checks_since_and_timeout_as_usage_errors(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, argv: list[str]
) -> None:
    """Issue 28, item 15: out of range is a usage error: exit 2, no traceback, no file."""
    path = tmp_path / "a.db"
    code = main([part.replace("{path}", str(path)) for part in argv])
    err = capsys.readouterr().err
    assert code == 2
    assert "Traceback" not in err
    assert "--since" in err or "--timeout" in err
    assert not path.exists()


# ------------------------------------------------------------------ the store's page


def test_r36_v4_events_pages_through_a_log_and_stops_at_a_bad_row(tmp_path: Path) -> None:
    """``store.events`` reads a page from ``since``; a bad row ends the page before it and
    is CorruptLog as the first of the next page."""
    path = tmp_path / "p.db"
    with SqliteLog(path, agent_id="a") as log:
        log.acquire()
        log.append([TurnStarted(n) for n in range(1, 6)])
    with SqliteStore(path) as store:
        assert [seq for seq, _ in store.events("a", since=1, limit=2)] == [1, 2]
        assert [seq for seq, _ in store.events("a", since=3)] == [3, 4]
        conn = _writer(path)
        conn.execute("INSERT INTO events VALUES ('a', 5, 'not json')")
        conn.close()
        assert [seq for seq, _ in store.events("a", since=4)] == [4]
        with pytest.raises(CorruptLog) as info:
            store.events("a", since=5)
        assert info.value.seq == 5


def _writer(path: Path) -> Any:
    import sqlite3

    return sqlite3.connect(path, isolation_level=None)


def test_r36_v4_a_feed_stops_when_its_last_follower_leaves(tmp_path: Path) -> None:
    """The reader of an agent runs while anyone follows: the last watcher gone, its task and
    wake end, and a later watch starts a new one."""
    store = SqliteStore(tmp_path / "f.db")
    agent = agent_name()

    async def main_() -> None:
        first = store.watch(agent)
        pending = asyncio.ensure_future(anext(first))
        await asyncio.sleep(0.02)
        feeds = store._reads._watching._feeds[asyncio.get_running_loop()]
        assert list(feeds) == [agent]
        pending.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await pending
        await first.aclose()
        assert feeds == {}
        second = store.watch(agent)
        again = asyncio.ensure_future(anext(second))
        await asyncio.sleep(0.02)
        assert list(feeds) == [agent]  # a new feed
        again.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await again
        assert feeds == {}

    run_async(main_)()
    store.close()
