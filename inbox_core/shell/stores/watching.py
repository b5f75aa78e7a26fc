"""Following an agent's log and waiting for outcomes, for many waiters at once (R36 v4).

A store's ``watch`` and ``wait`` never read on the caller's event loop: every read runs
in a worker thread (``asyncio.to_thread``), events are decoded there, and the waiters of
one agent in one event loop share one read per wake:

- ``EventFeed`` (one per store, agent and event loop while anyone follows): one task
  waits for the agent's wake, reads the new events once and keeps the newest in a bounded
  window. Each follower (``follow(since)``) keeps its own position and takes the events
  from the window. A follower behind the window (it asked for older events than the
  window holds, or consumed more slowly than the log grew and the window moved on) reads
  from its own position by itself, a page at a time, until it reaches the window. So a
  watcher that starts at ``since=0`` beside watchers at the head gets everything in
  order, and a slow consumer holds nobody up and costs no memory but its position.
- ``OutcomeWaits`` (one per store, agent and event loop while anyone waits): each
  ``wait`` looks once by itself (so an outcome already decided is answered at once), then
  one task reads the outcomes of every waited post of the agent in one statement per wake.

A read that fails (``LogUnavailable``, or ``CorruptLog`` for a bad row after the good
ones) ends every follower that reaches the point where it failed, with that error; the
next watch starts a new feed. ``Watching`` is a store's registry of both.
"""

from __future__ import annotations

import asyncio
import math
import weakref
from collections import deque
from collections.abc import AsyncGenerator, Callable, Iterable, Sequence
from typing import Any, Final, TypeVar

import attrs

from inbox_core import limits
from inbox_core.errors import InvalidInput, shown
from inbox_core.events import DurableEvent
from inbox_core.shell.stores.errors import CorruptLog
from inbox_core.shell.stores.posts import (
    PostOutcome,
    PostPending,
    PostTimeout,
    Receipt,
    UnknownReceipt,
)
from inbox_core.shell.stores.rows import decode_record
from inbox_core.shell.stores.wakes import Wake

__all__ = [
    "BATCH_CHARS",
    "BATCH_EVENTS",
    "MAX_PAGE",
    "MAX_WAIT_SECONDS",
    "WINDOW_CHARS",
    "WINDOW_EVENTS",
    "WAKE_AT_ONCE",
    "Batch",
    "EventFeed",
    "OutcomeWaits",
    "Watching",
    "decode_batch",
    "page_limit",
    "since_seq",
    "wait_seconds",
]

BATCH_EVENTS: Final = 256
"""The most events one read fetches (a feed's, or a follower's catching up)."""
BATCH_CHARS: Final = 4 << 20
"""A read stops once its events' stored text passed this many characters (one event at
least): a page of huge events stays a bounded amount of memory."""
WINDOW_EVENTS: Final = 1024
"""The most recent events a feed keeps for its followers..."""
WINDOW_CHARS: Final = 8 << 20
"""...and the characters of stored text they may hold (the newest read is always kept)."""
WAKE_AT_ONCE: Final = 64
"""How many followers a feed wakes in one turn of the event loop (the rest in the next)."""
MAX_PAGE: Final = 1000
"""The largest ``limit`` of ``store.events``."""
MAX_WAIT_SECONDS: Final = 1e9
"""The longest ``wait`` timeout (about 31 years; ``None`` waits without limit)."""


# ------------------------------------------------------------------ arguments


def since_seq(value: object) -> int:
    """A seq to start from: an int in ``[0, MAX_SAFE_INTEGER]`` (``InvalidInput``)."""
    if type(value) is not int or not 0 <= value <= limits.MAX_SAFE_INTEGER:
        raise InvalidInput(
            f"since must be an int in [0, {limits.MAX_SAFE_INTEGER}] (a seq), got {shown(value)}"
        )
    return value


def page_limit(value: object) -> int:
    """How many events a page holds at most: an int in ``[1, MAX_PAGE]``."""
    if type(value) is not int or not 1 <= value <= MAX_PAGE:
        raise InvalidInput(f"limit must be an int in [1, {MAX_PAGE}], got {shown(value)}")
    return value


def wait_seconds(value: object) -> float | None:
    """A ``wait`` timeout: None (no limit) or a number of seconds in ``[0,
    MAX_WAIT_SECONDS]`` (``InvalidInput`` for anything else, a huge int included)."""
    if value is None:
        return None
    if (
        isinstance(value, (int, float))
        and not isinstance(value, bool)
        and not (isinstance(value, float) and math.isnan(value))
        and 0 <= value <= MAX_WAIT_SECONDS
    ):
        return float(value)
    raise InvalidInput(
        f"timeout must be None or a number of seconds in [0, {MAX_WAIT_SECONDS:g}], "
        f"got {shown(value)}"
    )


# ---------------------------------------------------------------- reading


@attrs.frozen(eq=False)
class Batch:
    """What one read found from seq ``first`` on: the events in order (decoded), the length
    of each one's stored text, whether the read stopped at its limit (more may follow at
    once), and the error at seq ``first + len(events)`` that stopped it, if any."""

    first: int
    events: tuple[DurableEvent, ...] = ()
    sizes: tuple[int, ...] = ()
    full: bool = False
    error: Exception | None = None


def decode_batch(
    first: int, rows: Iterable[tuple[object, object]], limit: int, chars: int = BATCH_CHARS
) -> Batch:
    """Decode ``(seq, text)`` rows (read from seq ``first`` on, in order) into a ``Batch``:
    at most ``limit`` events, stopping once their text passed ``chars`` characters. A gap
    or a row that does not decode ends it with its ``CorruptLog``, the good events kept."""
    events: list[DurableEvent] = []
    sizes: list[int] = []
    total = 0
    seq = first
    for found, text in rows:
        if type(found) is not int or found != seq:
            return Batch(first, tuple(events), tuple(sizes), False, _gap(seq, found))
        try:
            event = decode_record(seq, text)
        except CorruptLog as error:
            return Batch(first, tuple(events), tuple(sizes), False, error)
        size = len(text) if isinstance(text, (str, bytes)) else 0
        events.append(event)
        sizes.append(size)
        total += size
        seq += 1
        if len(events) >= limit or total >= chars:
            return Batch(first, tuple(events), tuple(sizes), True)
    return Batch(first, tuple(events), tuple(sizes))


def _gap(seq: int, found: object) -> CorruptLog:
    return CorruptLog(seq, f"expected seq {seq}, found {shown(found)}")


ReadEvents = Callable[[str, int, int], Batch]
"""``read(agent_id, since, limit)``: a store's blocking read of a page of events."""
ReadOutcomes = Callable[[str, Sequence[int]], dict[int, PostOutcome]]
"""``read(agent_id, post_ids)``: the stored outcomes of those of the posts that exist."""
MakeWake = Callable[[str], Wake]
V = TypeVar("V")
_Registry = weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[str, V]]


# ------------------------------------------------------------------- shared


class _SharedReader:
    """One agent's reader in one event loop: a task (``_run``) that reads for everyone
    after each wake, from the moment the first user comes until the last one leaves
    (``close``: the task cancelled, the wake closed, the registry told)."""

    __slots__ = ("__weakref__", "_agent_id", "_closed", "_on_idle", "_task", "_wake")

    def __init__(self, agent_id: str, wake: Wake, on_idle: Callable[[Any], None]) -> None:
        self._agent_id = agent_id
        self._wake = wake  # made before the first read: no change after it is missed
        self._on_idle = on_idle
        self._task: asyncio.Task[None] | None = None
        self._closed = False

    async def _run(self) -> None:
        raise NotImplementedError

    def _start(self) -> None:
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(
                self._run(), name=f"inbox_core.shell {type(self).__name__} {self._agent_id!r}"
            )

    def close(self) -> None:
        """Stop reading (idempotent); whoever still waits here waits for nothing more."""
        task, self._task = self._task, None
        if task is not None and task is not asyncio.current_task():
            task.cancel()
        if not self._closed:
            self._closed = True
            self._wake.close()
            self._on_idle(self)  # a later user starts afresh


# ------------------------------------------------------------------- events


class EventFeed(_SharedReader):
    """One agent's events read once per wake for every follower in one event loop.

    ``follow(since)`` is one follower. The feed reads while anyone follows and stops
    (its task cancelled, its wake closed) when the last follower leaves.
    """

    __slots__ = (
        "_base",
        "_chars",
        "_error",
        "_followers",
        "_read",
        "_sizes",
        "_waiters",
        "_window",
    )

    def __init__(
        self,
        agent_id: str,
        read: ReadEvents,
        wake: Wake,
        on_idle: Callable[[EventFeed], None],
    ) -> None:
        super().__init__(agent_id, wake, on_idle)
        self._read = read
        self._window: deque[DurableEvent] = deque()
        self._sizes: deque[int] = deque()
        self._chars = 0
        self._base = -1  # the seq of the window's first event, -1 until someone follows
        self._error: Exception | None = None  # what stops the log at the window's end
        self._waiters: dict[asyncio.Future[None], None] = {}  # followers at the head
        self._followers = 0

    @property
    def followers(self) -> int:
        return self._followers

    @property
    def _head(self) -> int:
        return self._base + len(self._window)

    async def follow(self, since: int) -> AsyncGenerator[tuple[int, DurableEvent], None]:
        """The agent's events ``(seq, event)`` from seq ``since`` on, in order, live."""
        self._join(since)
        position = since
        try:
            while True:
                if position < self._base:  # behind the window: a page read by itself
                    page = await self._catch_up(position)
                    for event in page.events:
                        yield position, event
                        position += 1
                    if page.error is not None:
                        raise page.error
                elif position < self._head:
                    yield position, self._window[position - self._base]
                    position += 1
                elif self._error is not None:
                    raise self._error
                else:
                    await self._advance()
        finally:
            self._leave()

    async def _catch_up(self, position: int) -> Batch:
        limit = min(BATCH_EVENTS, self._base - position)
        batch = await asyncio.to_thread(self._read, self._agent_id, position, limit)
        if not batch.events and batch.error is None:  # rows before the window vanished
            return Batch(position, error=_gap(position, None))
        return batch

    def _join(self, since: int) -> None:
        if self._closed:
            raise RuntimeError("a closed feed takes no follower")  # pragma: no cover
        self._followers += 1
        if not self._window and self._error is None and (self._base < 0 or since < self._base):
            # nothing found yet: start where the earliest follower asked, and read from there
            # now (a read in flight or a wait for a wake is about a later seq)
            self._base = since
            if self._task is not None:
                self._task.cancel()
                self._task = None
        self._start()

    def _leave(self) -> None:
        self._followers -= 1
        if self._followers <= 0:
            self.close()

    async def _run(self) -> None:
        try:
            while True:
                batch = await asyncio.to_thread(
                    self._read, self._agent_id, self._head, BATCH_EVENTS
                )
                self._extend(batch)
                if batch.error is not None:
                    raise batch.error
                if not batch.full:
                    await self._wake.wait()
        except asyncio.CancelledError:
            raise
        except Exception as error:  # every follower that reaches this point raises it
            self._error = error
            self._notify()
            self.close()  # a later watch starts a new feed

    def _extend(self, batch: Batch) -> None:
        if not batch.events:
            return
        self._window.extend(batch.events)
        self._sizes.extend(batch.sizes)
        self._chars += sum(batch.sizes)
        keep = len(batch.events)  # the newest read stays, whatever its size
        while len(self._window) > keep and (
            len(self._window) > WINDOW_EVENTS or self._chars > WINDOW_CHARS
        ):
            self._window.popleft()
            self._chars -= self._sizes.popleft()
            self._base += 1
        self._notify()

    async def _advance(self) -> None:
        """Until the window grows or the feed fails (a follower at the head waits here)."""
        waiter = asyncio.get_running_loop().create_future()
        self._waiters[waiter] = None
        try:
            await waiter
        finally:
            self._waiters.pop(waiter, None)

    def _notify(self) -> None:
        waiters, self._waiters = list(self._waiters), {}
        self._release(waiters)

    def _release(self, waiters: list[asyncio.Future[None]]) -> None:
        """Wake ``WAKE_AT_ONCE`` followers now and the next ones in the loop's next turn:
        timers and other tasks run between the slices, so a thousand followers woken by one
        commit do not hold the loop all at once."""
        for waiter in waiters[:WAKE_AT_ONCE]:
            if not waiter.done():
                waiter.set_result(None)
        if len(waiters) > WAKE_AT_ONCE:
            asyncio.get_running_loop().call_soon(self._release, waiters[WAKE_AT_ONCE:])

    def __repr__(self) -> str:
        return (
            f"EventFeed({self._agent_id!r}, followers={self._followers}, "
            f"window=[{self._base}, {self._head}))"
        )


# ----------------------------------------------------------------- outcomes


class OutcomeWaits(_SharedReader):
    """The waits for one agent's posts in one event loop: one read per wake for all."""

    __slots__ = ("_read", "_waiting")

    def __init__(
        self,
        agent_id: str,
        read: ReadOutcomes,
        wake: Wake,
        on_idle: Callable[[OutcomeWaits], None],
    ) -> None:
        super().__init__(agent_id, wake, on_idle)
        self._read = read
        self._waiting: dict[int, set[asyncio.Future[PostOutcome]]] = {}

    async def wait(self, receipt: Receipt, limit: float | None) -> PostOutcome:
        """The post's outcome once decided; ``PostTimeout`` after ``limit`` seconds."""
        loop = asyncio.get_running_loop()
        deadline = None if limit is None else loop.time() + limit
        post_id = receipt.post_id
        future: asyncio.Future[PostOutcome] = loop.create_future()
        self._waiting.setdefault(post_id, set()).add(future)  # before the first look
        try:
            found = await asyncio.to_thread(self._read, self._agent_id, [post_id])
            outcome = found.get(post_id)
            if outcome is None:
                raise self._unknown(post_id)
            if not isinstance(outcome, PostPending):
                return outcome
            self._start()
            try:
                async with asyncio.timeout_at(deadline):
                    return await future
            except TimeoutError:
                if future.done() and not future.cancelled() and future.exception() is None:
                    return future.result()  # decided as the time ran out
                raise PostTimeout(
                    f"post {post_id} for agent {self._agent_id!r} is still pending after "
                    f"{limit:g} s"
                ) from None
        finally:
            self._forget(post_id, future)

    def _unknown(self, post_id: int) -> UnknownReceipt:
        return UnknownReceipt(f"no post {post_id} for agent {self._agent_id!r}")

    def _forget(self, post_id: int, future: asyncio.Future[PostOutcome]) -> None:
        futures = self._waiting.get(post_id)
        if futures is not None:
            futures.discard(future)
            if not futures:
                del self._waiting[post_id]
        if not self._waiting:
            self.close()

    async def _run(self) -> None:
        while True:
            await self._wake.wait()
            post_ids = sorted(self._waiting)
            try:
                found = await asyncio.to_thread(self._read, self._agent_id, post_ids)
            except Exception as error:  # each waiter raises it (its own look would have)
                for post_id in post_ids:
                    self._settle(post_id, error)
                continue
            for post_id in post_ids:
                outcome = found.get(post_id)
                if outcome is None:
                    self._settle(post_id, self._unknown(post_id))  # pruned meanwhile
                elif not isinstance(outcome, PostPending):
                    self._settle(post_id, outcome)

    def _settle(self, post_id: int, result: PostOutcome | Exception) -> None:
        for future in self._waiting.get(post_id, ()):
            if future.done():
                continue
            if isinstance(result, Exception):
                future.set_exception(result)
            else:
                future.set_result(result)


# ----------------------------------------------------------------- registry


class Watching:
    """A store's feeds and outcome waits, by event loop and agent: ``follow`` and
    ``outcome_waits`` make one (its wake registered at once) where none runs."""

    __slots__ = ("_feeds", "_make_wake", "_read_events", "_read_outcomes", "_waits")

    def __init__(
        self, read_events: ReadEvents, read_outcomes: ReadOutcomes, make_wake: MakeWake
    ) -> None:
        self._read_events = read_events
        self._read_outcomes = read_outcomes
        self._make_wake = make_wake
        self._feeds: _Registry[EventFeed] = weakref.WeakKeyDictionary()
        self._waits: _Registry[OutcomeWaits] = weakref.WeakKeyDictionary()

    def feed(self, agent_id: str) -> EventFeed:
        """The running loop's feed of ``agent_id``."""
        return _one(
            self._feeds,
            agent_id,
            lambda drop: EventFeed(
                agent_id, self._read_events, self._make_wake(f"events:{agent_id}"), drop
            ),
        )

    def follow(self, agent_id: str, since: int) -> AsyncGenerator[tuple[int, DurableEvent], None]:
        """A follower of the running loop's feed of ``agent_id`` (``EventFeed.follow``)."""
        return self.feed(agent_id).follow(since)

    def outcome_waits(self, agent_id: str) -> OutcomeWaits:
        """The running loop's waits for ``agent_id``'s posts."""
        return _one(
            self._waits,
            agent_id,
            lambda drop: OutcomeWaits(
                agent_id, self._read_outcomes, self._make_wake(f"outcome:{agent_id}"), drop
            ),
        )


def _one(registry: _Registry[V], agent_id: str, make: Callable[[Callable[[V], None]], V]) -> V:
    """``registry``'s entry for ``agent_id`` in the running loop, ``make(drop)`` if none
    (``drop(entry)`` removes it again, once it stopped)."""
    entries = registry.setdefault(asyncio.get_running_loop(), {})
    found = entries.get(agent_id)
    if found is None:

        def drop(done: V) -> None:
            if entries.get(agent_id) is done:
                del entries[agent_id]

        found = entries[agent_id] = make(drop)
    return found
