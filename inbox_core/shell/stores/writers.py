"""Writers (SH1, R37): where a ``LoopAgent``'s parts become durable, and when.

A ``Part`` is what one adoption needs durable in one atomic write (see
``inbox_core.shell.commit`` for the agent's side). Two writers, one path:

- ``InlineWriter`` writes in the caller's thread before the command returns:
  a command that returns is durable, and a failed write raises to the caller
  with nothing changed (the state, the log and the announcements).
- ``ThreadWriter`` hands parts to one thread per writer, which writes every
  queued part of one database in one transaction (group commit, across the
  agents of a worker) and reports back to the event loop. A command that
  returns was accepted and ordered; ``await agent.durable()`` returns once
  it is durable. A failed write stops that agent (its later parts are never
  written, its head falls back to the durable state): the log stays the
  authority.

A log joins a group commit by offering ``group_key`` and ``write_group``
(``SqliteLog``, ``PostgresLog``); any other ``EventLog`` is written part by
part with ``append``.

Checkpoints (R41) take another way: a ``CheckpointWriter``, one small background thread
(the ``ThreadWriter``'s own, and one for every ``InlineWriter`` of the process), writes
them off the event loop and off the commit path, each database's in one transaction, so
that no append a caller waits on waits for one.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Hashable, Sequence
from typing import Final, Protocol, runtime_checkable

import attrs

from inbox_core import limits
from inbox_core.checkpoint import checkpoint_to_json
from inbox_core.errors import InboxCoreError, LogFenced
from inbox_core.events import DurableEvent, InboxSpliced, TurnEnded, TurnStarted
from inbox_core.replay import Checkpoint
from inbox_core.shell.host import describe_failure
from inbox_core.shell.stores.base import EventLog
from inbox_core.shell.stores.errors import LogUnavailable
from inbox_core.shell.stores.posts import Consumed, PostRejected

__all__ = [
    "CheckpointWriter",
    "GroupLog",
    "InlineWriter",
    "Part",
    "ThreadWriter",
    "WriteStats",
    "Writer",
    "WriterClosed",
    "plain_part",
    "work_after",
    "write_alone",
    "write_failed",
]

logger: Final = logging.getLogger("inbox_core.shell")

MAX_GROUP: Final = 512
"""The most parts one group commit writes."""


@attrs.frozen(slots=True)
class Part:
    """What one adoption needs durable, in one atomic write: the events of one command (or
    of a batch of posts) and the posts they consumed (R35). ``work`` is set only on a part
    without events: it records whether the agent needs an owner (R37) and nothing else;
    with events, the log derives that from them (``work_after``)."""

    log: EventLog
    events: Sequence[DurableEvent]
    consumed: Sequence[Consumed] = ()
    work: bool | None = None

    @property
    def empty(self) -> bool:
        return not self.events and not self.consumed


def work_after(events: Sequence[DurableEvent], work: bool | None) -> bool | None:
    """Whether an agent needs an owner once ``events`` are appended to a log for which it
    was ``work`` (R37): a ``turn/start``, or waking input inserted (behind a maintenance job:
    while idle it opens a turn in the same command), says yes; a ``turn/end`` says no (after
    it, waking work would have opened the next turn in the same command, R19, I3)."""
    for event in events:
        if isinstance(event, TurnStarted):
            work = True
        elif isinstance(event, TurnEnded):
            work = False
        elif isinstance(event, InboxSpliced) and not work:
            work = any(entry.wakeup for entry in event.inserted) or work
    return work


def plain_part(part: Part) -> Part | None:
    """``part`` with each rejection's text to be stored in ASCII, or None when it holds no
    rejection still to make plain: the retry of a part the database refused alone (R35 v4: a
    database whose encoding cannot hold a rejection's text still records the outcome)."""
    if not any(isinstance(c.outcome, PostRejected) and not c.plain for c in part.consumed):
        return None
    consumed = [attrs.evolve(c, plain=True) for c in part.consumed]
    return attrs.evolve(part, consumed=consumed)


def write_failed(where: str, error: Exception) -> InboxCoreError:
    """The typed error of a part that failed alone with ``error`` (a store raises only
    ``InboxCoreError``: an error of another kind becomes ``LogUnavailable``, chained)."""
    if isinstance(error, InboxCoreError):
        return error
    message, name = describe_failure(error)
    typed = LogUnavailable(f"{where}: append failed: {name}: {message}")
    typed.__cause__ = error
    return typed


@runtime_checkable
class GroupLog(Protocol):
    """A log whose parts can share one transaction with the parts of its siblings."""

    @property
    def group_key(self) -> Hashable:
        """Equal for logs of one database (and connection options)."""

    def write_group(self, parts: Sequence[Part]) -> list[BaseException | None]:
        """Write ``parts`` (all of this log's group, in order) in one transaction, in the
        calling thread; the error of each part that was not written, None for each that was.
        A part whose log is fenced writes nothing and gets ``LogFenced``; the others commit."""

    def write_work(self, work: bool) -> None:
        """Record ``work`` alone (no events), if it differs from what the store holds."""


def write_alone(part: Part) -> None:
    """Write one part now, in the calling thread, through the log's public ``append`` (or
    ``write_work`` for a part without events); its error is raised."""
    log = part.log
    if part.empty:
        write_work = getattr(log, "write_work", None)
        if part.work is not None and write_work is not None:
            write_work(part.work)
    elif part.consumed:
        log.append(part.events, consumed=part.consumed)  # type: ignore[call-arg]
    else:
        log.append(part.events)


class WriterClosed(InboxCoreError):
    """The writer was closed: nothing more is written through it."""


Done = Callable[[BaseException | None], None]


class Writer(Protocol):
    """Where ``LoopAgent`` sends its parts."""

    def write(self, part: Part, done: Done) -> bool:
        """True: ``part`` is durable now (or raised). False: ``done(error)`` is called later,
        in the event loop's thread, once it is durable (None) or not written (the error)."""


class InlineWriter:
    """Writes each part at once in the caller's thread: a command is durable when it
    returns, and a failed write raises to the caller (the default of ``LoopAgent``).
    Checkpoints go to the process's background ``CheckpointWriter``."""

    __slots__ = ()

    def write(self, part: Part, done: Done) -> bool:
        write_alone(part)
        return True

    def checkpoint(self, log: EventLog, checkpoint: Checkpoint, done: Done | None) -> None:
        background().submit(log, checkpoint, done)

    def __repr__(self) -> str:
        return "InlineWriter()"


INLINE: Final = InlineWriter()


@attrs.frozen(slots=True)
class WriteStats:
    """What a ``ThreadWriter`` did (``Worker.stats`` reports it)."""

    parts: int
    groups: int
    failed: int
    queued: int
    latency_p50: float
    latency_p99: float
    latency_max: float


class CheckpointWriter:
    """One background thread that writes checkpoints (R41): each turn of its loop takes
    every queued one, keeps the newest per log, encodes them (``checkpoint_to_json``) and
    writes those of one database in one transaction (``write_checkpoints``), then reports
    each outcome to the event loop it came from. A checkpoint is a cache: a failure is
    logged and reported, never retried; a log that no longer owns its agent writes none.
    The thread starts with the first checkpoint; ``close()`` writes what is queued, then
    stops it."""

    def __init__(self, *, name: str = "inbox_core checkpoints") -> None:
        self._name = name
        self._lock = threading.Lock()
        self._ready = threading.Condition(self._lock)
        self._queue: deque[_Checkpoint] = deque()
        self._closed = False
        self._thread: threading.Thread | None = None

    def submit(self, log: EventLog, checkpoint: Checkpoint | None, done: Done | None) -> None:
        """Queue ``checkpoint`` of ``log``; ``done(error)`` (if given) runs once it is
        written (None) or not, in the submitting event loop (in this thread without one).
        ``checkpoint`` None is a barrier: ``done`` runs once every checkpoint queued before
        it is written (a log is released only then)."""
        try:
            loop: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            loop = None
        item = _Checkpoint(log, checkpoint, done, loop)
        with self._lock:
            closed = self._closed
            if not closed and self._thread is None:
                self._thread = threading.Thread(target=self._run, name=self._name, daemon=True)
                self._thread.start()
            if not closed:
                self._queue.append(item)
                if len(self._queue) == 1:
                    self._ready.notify()
        if closed:  # never raises into the commit path: a checkpoint is a cache
            item.report(WriterClosed("the checkpoint writer is closed; nothing was written"))

    def close(self) -> None:
        """Write what is queued, then stop the thread (idempotent; blocks until done)."""
        with self._lock:
            self._closed = True
            self._ready.notify()
            thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join()

    def _take(self) -> list[_Checkpoint] | None:
        with self._lock:
            while not self._queue:
                if self._closed:
                    return None
                self._ready.wait()
            items = list(self._queue)
            self._queue.clear()
            return items

    def _run(self) -> None:
        while (items := self._take()) is not None:
            newest: dict[int, _Checkpoint] = {}
            barriers: list[_Checkpoint] = []
            for item in items:  # an older checkpoint of a log is superseded: not written
                if item.checkpoint is None:
                    barriers.append(item)
                    continue
                older = newest.get(id(item.log))
                newest[id(item.log)] = item
                if older is not None:
                    older.report(None)
            groups: dict[Hashable, list[_Checkpoint]] = {}
            for item in newest.values():
                log = item.log
                key = log.group_key if isinstance(log, GroupLog) else ("alone", id(log))
                groups.setdefault(key, []).append(item)
            for group in groups.values():
                _write_checkpoints(group)
            for barrier in barriers:  # everything queued before it is written now
                barrier.report(None)
            del items, newest, groups, barriers  # a waiting thread keeps no agent alive

    def __repr__(self) -> str:
        return f"CheckpointWriter(queued={len(self._queue)}, closed={self._closed})"


class _Checkpoint:
    __slots__ = ("checkpoint", "done", "log", "loop")

    def __init__(
        self,
        log: EventLog,
        checkpoint: Checkpoint | None,
        done: Done | None,
        loop: asyncio.AbstractEventLoop | None,
    ) -> None:
        self.log = log
        self.checkpoint = checkpoint
        self.done = done
        self.loop = loop

    def report(self, error: BaseException | None) -> None:
        if error is not None:
            agent = getattr(self.log, "agent_id", "-")
            if isinstance(error, LogFenced):  # released or taken over meanwhile: expected
                logger.debug("checkpoint of agent %r not written: %s", agent, error)
            else:
                logger.warning("checkpoint of agent %r not written: %s", agent, error)
        done = self.done
        if done is None:
            return
        if self.loop is None:
            done(error)
            return
        with contextlib.suppress(RuntimeError):  # the loop was closed: nobody waits
            self.loop.call_soon_threadsafe(done, error)


def _write_checkpoints(items: list[_Checkpoint]) -> None:
    """Encode and write one database's checkpoints (one per log) in one transaction."""
    ready: list[_Checkpoint] = []
    rows: list[tuple[EventLog, int, str]] = []
    for item in items:
        assert item.checkpoint is not None
        try:
            agent = getattr(item.log, "agent_id", "default")
            document = checkpoint_to_json(item.checkpoint, agent)  # a state: maybe huge
            many = not limits.few_values(document, limits.STEP_VALUES)
            text = limits.dump_json(document, in_steps=many)  # in steps then (D47)
        except Exception as error:
            item.report(error)
            continue
        ready.append(item)
        rows.append((item.log, item.checkpoint.seq, text))
    if not rows:
        return
    try:
        results: list[BaseException | None] = list(rows[0][0].write_checkpoints(rows))  # type: ignore[attr-defined]
    except Exception as error:  # a bug in a log: every checkpoint of the group fails
        results = [error] * len(rows)
    for item, result in zip(ready, results, strict=True):
        item.report(result)


_BACKGROUND: Final = CheckpointWriter(name="inbox_core checkpoints (inline)")


def background() -> CheckpointWriter:
    """The process's ``CheckpointWriter`` for agents with an ``InlineWriter`` (its thread
    starts with the first checkpoint; a daemon: a checkpoint still queued at exit is lost,
    a cache)."""
    return _BACKGROUND


class _Item:
    __slots__ = ("done", "loop", "part", "queued_at")

    def __init__(
        self, part: Part, done: Done, loop: asyncio.AbstractEventLoop, queued_at: float
    ) -> None:
        self.part = part
        self.done = done
        self.loop = loop
        self.queued_at = queued_at


_LATENCY_WINDOW: Final = 4096


class ThreadWriter:
    """One thread that writes the parts of every agent sent to it, a group commit per
    database: each turn of its loop takes every queued part (up to ``MAX_GROUP``) and writes
    those of one database in one transaction (``GroupLog.write_group``), then reports each
    part's outcome to the event loop it came from. Parts of one log keep their order; after
    a part of a log fails, the later parts of that log fail unwritten (``LogUnavailable``
    naming the first error). ``close()`` writes what is queued, then stops the thread."""

    def __init__(self, *, name: str = "inbox_core writer") -> None:
        self._lock = threading.Lock()
        self._ready = threading.Condition(self._lock)
        self._queue: deque[_Item] = deque()
        self._closed = False
        # id(log) -> (the log, kept so its id is not reused, and its first error)
        self._failed: dict[int, tuple[EventLog, BaseException]] = {}
        self._parts = self._groups = self._failures = 0
        self._latencies: deque[float] = deque(maxlen=_LATENCY_WINDOW)
        self._checkpoints = CheckpointWriter(name=f"{name} (checkpoints)")
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    # --------------------------------------------------------------- the loop side

    def write(self, part: Part, done: Done) -> bool:
        if part.empty and part.work is None:
            return True  # nothing to make durable (ordering is the agent's)
        loop = asyncio.get_running_loop()  # a ThreadWriter reports to the loop of its caller
        item = _Item(part, done, loop, time.perf_counter())
        with self._lock:
            if self._closed:
                raise WriterClosed("the writer is closed; nothing was written")
            self._queue.append(item)
            if len(self._queue) == 1:
                self._ready.notify()
        return False

    def checkpoint(self, log: EventLog, checkpoint: Checkpoint, done: Done | None) -> None:
        """Hand a checkpoint (of events already durable) to this writer's own background
        ``CheckpointWriter``: never written in the way of a part (R41)."""
        self._checkpoints.submit(log, checkpoint, done)

    def forget(self, log: EventLog) -> None:
        """Drop the failure recorded for ``log`` (a new owner object may reuse nothing of it)."""
        with self._lock:
            self._failed.pop(id(log), None)

    def stats(self) -> WriteStats:
        with self._lock:
            latencies = sorted(self._latencies)
            queued = len(self._queue)
            parts, groups, failed = self._parts, self._groups, self._failures

        def at(fraction: float) -> float:
            if not latencies:
                return 0.0
            return latencies[min(len(latencies) - 1, int(fraction * len(latencies)))]

        return WriteStats(
            parts=parts,
            groups=groups,
            failed=failed,
            queued=queued,
            latency_p50=at(0.5),
            latency_p99=at(0.99),
            latency_max=latencies[-1] if latencies else 0.0,
        )

    def close(self) -> None:
        """Write what is queued, then stop the thread (idempotent; blocks until done)."""
        with self._lock:
            self._closed = True
            self._ready.notify()
        if self._thread is not threading.current_thread():
            self._thread.join()
        self._checkpoints.close()

    async def aclose(self) -> None:
        """``close`` without blocking the event loop."""
        await asyncio.to_thread(self.close)

    @property
    def closed(self) -> bool:
        return self._closed

    def __repr__(self) -> str:
        return f"ThreadWriter(queued={len(self._queue)}, closed={self._closed})"

    # ------------------------------------------------------------- the thread side

    def _take(self) -> list[_Item] | None:
        with self._lock:
            while not self._queue:
                if self._closed:
                    return None
                self._ready.wait()
            count = min(len(self._queue), MAX_GROUP)
            return [self._queue.popleft() for _ in range(count)]

    def _run(self) -> None:
        while (items := self._take()) is not None:
            self._write_batch(items)
            del items  # a waiting thread keeps no agent alive (each item's done holds one)

    def _write_batch(self, items: list[_Item]) -> None:
        groups: dict[Hashable, list[_Item]] = {}
        for item in items:
            log = item.part.log
            key = log.group_key if isinstance(log, GroupLog) else ("alone", id(log))
            groups.setdefault(key, []).append(item)
        for group in groups.values():
            self._write(group)

    def _write(self, items: list[_Item]) -> None:
        """Write one database's items: each log's parts merged into one (in order), all
        logs in one transaction where they allow it."""
        by_log: dict[int, list[_Item]] = {}
        for item in items:
            by_log.setdefault(id(item.part.log), []).append(item)
        outcome: dict[int, BaseException | None] = {}
        merged: list[Part] = []
        for key, mine in by_log.items():
            earlier = self._failed.get(key)
            if earlier is not None:
                outcome[key] = _after(earlier[1])
            else:
                merged.append(_merge([item.part for item in mine]))
        try:
            results = _write_parts(merged)
        except BaseException as error:  # a bug in a log: every part of the group fails
            logger.error("inbox_core writer: a group write raised", exc_info=error)
            results = [error] * len(merged)
        for part, result in zip(merged, results, strict=True):
            outcome[id(part.log)] = result
        now = time.perf_counter()
        with self._lock:
            self._groups += 1
            self._parts += len(items)
            for key, failure in outcome.items():
                if failure is not None:
                    self._failures += 1
                    self._failed.setdefault(key, (by_log[key][0].part.log, failure))
            self._latencies.extend(now - item.queued_at for item in items)
        for item in items:
            with contextlib.suppress(RuntimeError):  # the loop was closed: nobody waits
                item.loop.call_soon_threadsafe(item.done, outcome[id(item.part.log)])


def _merge(parts: list[Part]) -> Part:
    """One log's consecutive parts as one: all or none of them become durable (a trailing
    explicit ``work`` is the agent's last word on it)."""
    if len(parts) == 1:
        return parts[0]
    return Part(
        parts[0].log,
        [event for part in parts for event in part.events],
        [post for part in parts for post in part.consumed],
        parts[-1].work,
    )


def _after(earlier: BaseException) -> LogUnavailable:
    error = LogUnavailable(
        f"not written: an earlier write of this log failed ({type(earlier).__name__})"
    )
    error.__cause__ = earlier
    return error


def _write_parts(parts: Sequence[Part]) -> list[BaseException | None]:
    """Write one database's parts (one per log): ``write_group`` where the logs offer it
    (parts that only set ``work`` go alone), else one by one with ``append``."""
    if not parts:
        return []
    if not isinstance(parts[0].log, GroupLog):
        return [_guarded(part) for part in parts]
    writing = [part for part in parts if not part.empty]
    results: dict[int, BaseException | None] = {}
    if writing:
        group = parts[0].log.write_group(writing)
        results = dict(zip(map(id, writing), group, strict=True))
    return [results[id(part)] if not part.empty else _guarded(part) for part in parts]


def _guarded(part: Part) -> BaseException | None:
    try:
        write_alone(part)
    except Exception as error:
        return error
    return None
