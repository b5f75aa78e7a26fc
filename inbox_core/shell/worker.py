"""``Worker`` (R37): one process serving many agents from one store, placed by work.

A worker owns the agents it serves (R29) and nothing else. It needs no list of
agents: every ``poll_seconds``, and at once (after a short random delay, so
that workers do not all run for the same agent) when a post arrives for any
agent, it asks the store for *candidates* (agents with an unconsumed post, or
whose log needs an owner: an open turn, a maintenance job or waking work left
by an owner that died or detached, R27) that no live owner holds, and opens
as many as it has room for (``max_agents``): acquire, read and replay in a
worker thread, then ``Resume`` and serve (``LoopAgent.open``). Another worker
that wins the race for an agent makes the acquire raise ``LogOwned``, which
only counts as a lost race. An agent that stayed idle for ``idle_seconds`` is
detached (its inbox stays in the log; it is opened again when it has work).
With leases (PostgreSQL) the worker renews all of its leases in one statement
every third of a lease; an agent whose lease was taken over is dropped.

Store I/O never blocks the worker's event loop: logs are opened in worker
threads, and every agent's writes go through one ``ThreadWriter`` (a group
commit per database, off the loop), so a command's events are durable before
its notifications are announced or the host sees what they lead to. An agent
whose write fails stops (its log stays the authority) and is dropped; its work
stays in the store for the next owner. ``stop()`` (``inbox-core serve`` calls
it on SIGTERM) detaches every agent and returns from ``run``.

Nothing an agent's host does stops the worker (R37): a factory or hook that
raises anything, ``SystemExit`` and ``KeyboardInterrupt`` included, costs that
agent only, and a hook that ignores its abort signal when its agent is let go
is abandoned after ``grace`` seconds (at once on a second ``stop()``): the log
is released without it, so the worker exits and the next owner resumes the
agent as after a crash.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import random
import socket
from collections.abc import Callable
from typing import Any, Final

import attrs

from inbox_core.errors import InboxCoreError, InvalidInput, LogOwned
from inbox_core.shell import durations
from inbox_core.shell.agent import LoopAgent
from inbox_core.shell.collector import Freezer
from inbox_core.shell.host import Host, closing
from inbox_core.shell.stores.base import MAX_LEASE_SECONDS, MIN_LEASE_SECONDS, EventLog, Store
from inbox_core.shell.stores.checkpoints import DEFAULT_EVERY
from inbox_core.shell.stores.checkpoints import checkpoint_every as checked_every
from inbox_core.shell.stores.opening import open_store, parse_store
from inbox_core.shell.stores.writers import ThreadWriter, WriteStats

__all__ = ["HostFactory", "Worker", "WorkerStats"]

logger: Final = logging.getLogger("inbox_core.worker")

HostFactory = Callable[[str], Host]
"""``factory(agent_id)``: the ``Host`` of one agent (a new one for each opening)."""

DEFAULT_MAX_AGENTS: Final = 1000
DEFAULT_IDLE_SECONDS: Final = 30.0
DEFAULT_POLL_SECONDS: Final = 1.0
DEFAULT_GRACE_SECONDS: Final = 30.0
MAX_AGENTS: Final = 1_000_000
"""The most ``max_agents`` may be (a worker past it would hold more than a process can)."""
MIN_POLL_SECONDS: Final = 0.001
"""The shortest ``poll_seconds``: shorter would only spin on the store."""
MAX_NAME_LENGTH: Final = 200
OPENING_AT_ONCE: Final = 8
"""How many agents a worker opens concurrently (each in a worker thread)."""
CANDIDATE_PAGE: Final = 256
"""How many candidates one look reads from the store at a time."""
PAGES_PER_LOOK: Final = 16
"""The most pages of candidates one look reads (the next look goes on where it stopped)."""
JITTER_SECONDS: Final = 0.05
"""The most a worker waits after a post's wake before it looks for candidates."""
FIRST_BACKOFF_SECONDS: Final = 0.5
BACKOFF_SECONDS: Final = 30.0
"""An agent that could not be opened (not a lost race), or whose writes failed, is left
alone for ``FIRST_BACKOFF_SECONDS``, twice as long after each further failure in a row, at
most ``BACKOFF_SECONDS``: a short outage costs a short wait, a broken log or host little
work. The count starts again once the agent was served until it went idle."""


@attrs.frozen
class WorkerStats:
    """What a worker did since it started (``Worker.stats``); ``line()`` is its log line."""

    name: str
    agents: int  # served now
    running: int  # of them, with a turn open
    capacity: int  # max_agents
    opened: int
    takeovers: int  # opened and resumed: an open turn or waking work left by another owner
    lost_races: int  # another worker opened it first
    detached: int  # detached after idle_seconds, or at stop
    failed: int  # stopped by a failed write or a lost lease, or not opened (an error)
    posts: int  # posts its agents decided durably (applied or rejected)
    writes: WriteStats
    abandoned: int = 0  # hooks that ignored their abort signal past the grace

    def line(self) -> str:
        w = self.writes
        return (
            f"{self.name}: serving {self.agents}/{self.capacity} ({self.running} running); "
            f"opened {self.opened} (takeovers {self.takeovers}, lost races {self.lost_races}), "
            f"detached {self.detached}, failed {self.failed}, abandoned {self.abandoned}, "
            f"posts {self.posts}; "
            f"writes {w.parts} in {w.groups} groups, queued {w.queued}, "
            f"latency p50 {w.latency_p50 * 1000:.1f} ms p99 {w.latency_p99 * 1000:.1f} ms "
            f"max {w.latency_max * 1000:.1f} ms"
        )


class _Served:
    __slots__ = ("agent", "idle_since", "log")

    def __init__(self, agent: LoopAgent, log: EventLog) -> None:
        self.agent = agent
        self.log = log
        self.idle_since: float | None = None


def _count(value: object, what: str, high: int) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= high:
        shown = "a larger int" if isinstance(value, int) and value > high else f"{value!r:.80}"
        raise InvalidInput(f"{what} must be an int in [1, {high}], got {shown}")
    return value


def _name(value: object) -> str:
    if (
        not isinstance(value, str)
        or not 0 < len(value) <= MAX_NAME_LENGTH
        or not value.isprintable()  # no control character, no lone surrogate
    ):
        raise InvalidInput(
            f"name must be printable text of 1 to {MAX_NAME_LENGTH} characters, got {value!r:.80}"
        )
    return value


def _own_cancellation(error: BaseException) -> bool:
    """Whether ``error`` is the current task being cancelled (to re-raise, never contain)."""
    task = asyncio.current_task()
    return isinstance(error, asyncio.CancelledError) and task is not None and task.cancelling() > 0


_STORE_CALLS: Final = ("log", "candidates", "renew", "work_wake")
"""What a worker calls on its store (``base.Store``)."""


class Worker:
    """Serves the agents of ``store`` (a ``SqliteStore``, a ``PostgresStore`` or the
    ``sqlite:PATH`` / ``postgresql://`` text of one) that have work, with a ``Host`` from
    ``host(agent_id)`` each. ``await worker.run()`` serves until ``stop()``.

    ``max_agents`` (1 to ``MAX_AGENTS``): the most agents served at once (the worker
    takes no more work past it; other workers do). ``idle_seconds``: how long an agent
    stays idle before it is detached. ``poll_seconds`` (at least ``MIN_POLL_SECONDS``): how
    often the store is asked for work with no wake. ``lease_seconds`` (PostgreSQL; at most
    ``MAX_LEASE_SECONDS``, a day): the lease of each agent (default: ``PostgresLog``'s).
    ``grace`` (0 allowed): how long a hook may take to return once its agent is let go
    before it is abandoned. ``checkpoint_every`` (R41): about how many events apart the
    worker writes each agent's checkpoint (None: never; it still opens from them).
    ``freeze_gc``: keep the served agents' long-lived objects out of the cyclic garbage
    collector's full collections (``collector.Freezer``: ``gc.freeze``, process-wide).
    Durations are at most ``durations.MAX_SECONDS``. Bad arguments
    raise ``InvalidInput`` before the store is opened (a ``sqlite:``/``postgresql://``
    text is opened only once they are all good).
    """

    def __init__(
        self,
        store: Store | str,
        host: HostFactory,
        *,
        max_agents: int = DEFAULT_MAX_AGENTS,
        idle_seconds: float = DEFAULT_IDLE_SECONDS,
        poll_seconds: float = DEFAULT_POLL_SECONDS,
        lease_seconds: float | None = None,
        grace: float = DEFAULT_GRACE_SECONDS,
        name: str | None = None,
        checkpoint_every: int | None = DEFAULT_EVERY,
        freeze_gc: bool = True,
    ) -> None:
        if not callable(host):
            raise InvalidInput(f"host must be a callable (agent_id -> Host), got {host!r:.80}")
        if isinstance(store, str):
            parse_store(store)  # InvalidInput before anything is opened
        elif not all(callable(getattr(store, name, None)) for name in _STORE_CALLS):
            raise InvalidInput(f"store must be a SqliteStore or a PostgresStore, got {store!r:.80}")
        self._max = _count(max_agents, "max_agents", MAX_AGENTS)
        self._idle_seconds = durations.seconds(idle_seconds, "idle_seconds")
        self._poll_seconds = durations.seconds(
            poll_seconds, "poll_seconds", low=MIN_POLL_SECONDS, zero=True
        )
        self._grace = durations.seconds(grace, "grace", zero=True)
        self._lease_seconds = 30.0
        self._log_options: dict[str, Any] = {"checkpoint_every": checked_every(checkpoint_every)}
        if lease_seconds is not None:  # a lease the store cannot hold is refused here (R37)
            self._lease_seconds = durations.seconds(
                lease_seconds,
                "lease_seconds",
                low=MIN_LEASE_SECONDS,
                zero=True,
                high=MAX_LEASE_SECONDS,
            )
            self._log_options["lease_seconds"] = self._lease_seconds
        if not isinstance(freeze_gc, bool):
            raise InvalidInput(f"freeze_gc must be a bool, got {freeze_gc!r:.80}")
        self._freezer = Freezer(enabled=freeze_gc)
        self._name = f"{socket.gethostname()}:{os.getpid()}" if name is None else _name(name)
        if isinstance(store, str):
            store = open_store(store)
        self._leases = bool(store.leases)
        if not self._leases:
            self._log_options.pop("lease_seconds", None)  # SQLite ownership: a lock, no lease
        self._store = store
        self._host = host
        self._agents: dict[str, _Served] = {}
        self._opening: set[str] = set()
        self._backoff: dict[str, float] = {}  # agent -> when it may be tried again
        self._after: str | None = None  # where the next look at the candidates starts
        self._strikes: dict[str, int] = {}  # agent -> failures in a row
        self._closing: set[asyncio.Task[None]] = set()
        self._releasing: set[_Served] = set()  # let go, their hooks winding down
        self._writer: ThreadWriter | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stopping: asyncio.Event | None = None
        self._hurry: asyncio.Event | None = None  # a second stop(): abandon every hook now
        self._stops = 0
        self._counts = dict.fromkeys(
            ("opened", "takeovers", "lost_races", "detached", "failed", "abandoned", "posts"), 0
        )

    # ------------------------------------------------------------------ views

    @property
    def name(self) -> str:
        return self._name

    @property
    def store(self) -> Store:
        return self._store

    @property
    def agents(self) -> dict[str, LoopAgent]:
        """The agents served now, by id (a copy)."""
        return {agent_id: served.agent for agent_id, served in self._agents.items()}

    def stats(self) -> WorkerStats:
        counts = self._counts
        served = [s.agent for s in self._agents.values()]
        writes = (
            self._writer.stats()
            if self._writer is not None
            else WriteStats(0, 0, 0, 0, 0.0, 0.0, 0.0)
        )
        return WorkerStats(
            name=self._name,
            agents=len(served),
            running=sum(agent.status == "running" for agent in served),
            capacity=self._max,
            opened=counts["opened"],
            takeovers=counts["takeovers"],
            lost_races=counts["lost_races"],
            detached=counts["detached"],
            failed=counts["failed"],
            posts=counts["posts"]
            + sum(s.agent.posts_decided for s in (*self._agents.values(), *self._releasing)),
            writes=writes,
            abandoned=counts["abandoned"],
        )

    def __repr__(self) -> str:
        return f"Worker({self._name!r}, serving {len(self._agents)}/{self._max})"

    # ---------------------------------------------------------------- running

    def stop(self) -> None:
        """Ask ``run`` to detach every agent and return (from any thread, or a signal).
        A second call abandons at once the hooks that have not returned yet (no grace)."""
        self._stops += 1
        loop = self._loop
        if loop is not None:
            with contextlib.suppress(RuntimeError):  # the loop is closed: run has returned
                loop.call_soon_threadsafe(self._stop_events)

    def _stop_events(self) -> None:
        assert self._stopping is not None
        assert self._hurry is not None
        if self._stops:
            self._stopping.set()
        if self._stops > 1:
            self._hurry.set()

    async def run(self) -> None:
        """Serve until ``stop()``; then detach every agent (the graceful shutdown that keeps
        every inbox, R29) and return."""
        if self._loop is not None:
            raise RuntimeError("this Worker is already running")
        self._loop = asyncio.get_running_loop()
        self._stopping = asyncio.Event()
        self._hurry = asyncio.Event()
        self._stop_events()
        self._writer = ThreadWriter(name=f"inbox_core writer {self._name}")
        wake = self._store.work_wake()
        logger.info("%s: serving %r (at most %d agents)", self._name, self._store, self._max)
        try:
            await self._serve(wake)
        finally:
            wake.close()
            await self._detach_all()
            await self._writer.aclose()
            self._freezer.close()
            logger.info("%s: stopped; %s", self._name, self.stats().line())

    async def _serve(self, wake: Any) -> None:
        assert self._stopping is not None
        loop = asyncio.get_running_loop()
        beating = asyncio.ensure_future(self._beat()) if self._leases else None
        woken = False
        try:
            while not self._stopping.is_set():
                if woken:  # spread the workers a post woke: the first to look takes the agent
                    await asyncio.sleep(random.uniform(0, JITTER_SECONDS))
                self._reap()
                opened = self._counts["opened"]
                await self._place()
                self._detach_idle(loop.time())
                self._freezer.look(opened=self._counts["opened"] - opened, served=len(self._agents))
                woken = await self._wait(wake)
        finally:
            if beating is not None:
                beating.cancel()
                await asyncio.gather(beating, return_exceptions=True)

    async def _beat(self) -> None:
        """Renew the leases every third of a lease, in a task of its own: on time whatever
        placement is doing and however long ``poll_seconds`` is (a lease shorter than the
        wait for work lapsed between two looks, and other workers took its agents over)."""
        while True:
            await asyncio.sleep(self._lease_seconds / 3)
            await self._heartbeat()

    async def _wait(self, wake: Any) -> bool:
        """Until a post's wake, ``stop()`` or ``poll_seconds``; whether a wake came."""
        assert self._stopping is not None
        waits = {
            asyncio.ensure_future(wake.wait()),
            asyncio.ensure_future(self._stopping.wait()),
        }
        done, pending = await asyncio.wait(
            waits, timeout=self._poll_seconds, return_when=asyncio.FIRST_COMPLETED
        )
        for task in pending:
            task.cancel()
        await asyncio.gather(*pending, return_exceptions=True)
        return bool(done) and not self._stopping.is_set()

    # -------------------------------------------------------------- placement

    async def _place(self) -> None:
        """Open candidates while there is room (at most ``OPENING_AT_ONCE`` at a time)."""
        room = self._max - len(self._agents) - len(self._opening)
        if room <= 0:
            return
        try:
            fresh = await self._look(room)
        except InboxCoreError as error:  # e.g. LogUnavailable: look again at the next poll
            logger.warning("%s: looking for work failed: %s", self._name, error)
            return
        random.shuffle(fresh)  # workers that saw the same candidates start apart
        gate = asyncio.Semaphore(OPENING_AT_ONCE)

        async def open_one(agent_id: str) -> None:
            async with gate:
                assert self._stopping is not None
                if self._stopping.is_set() or len(self._agents) >= self._max:
                    return
                await self._open(agent_id)

        await asyncio.gather(*(open_one(agent_id) for agent_id in fresh[:room]))

    async def _look(self, room: int) -> list[str]:
        """Up to ``room`` candidates this worker may try (not served, not being opened, not
        left alone after a failure), in the store's order from where the last look stopped,
        round and round (R37 v4: fair). Agents it cannot open never hide the others: the
        look pages past them until it found ``room``, saw every candidate once, or read
        ``PAGES_PER_LOOK`` pages (the next look goes on from there)."""
        now = asyncio.get_running_loop().time()
        found: list[str] = []
        seen: set[str] = set()
        after = self._after
        wrapped = after is None  # a look from the first candidate ends at the last
        for _ in range(PAGES_PER_LOOK):
            page = await asyncio.to_thread(self._store.candidates, CANDIDATE_PAGE, after=after)
            for agent_id in page:
                if agent_id in seen:  # round once: every candidate was looked at
                    return found
                seen.add(agent_id)
                after = self._after = agent_id
                if (
                    agent_id not in self._agents
                    and agent_id not in self._opening
                    and self._backoff.get(agent_id, 0.0) <= now
                ):
                    found.append(agent_id)
                    if len(found) == room:
                        return found
            if len(page) < CANDIDATE_PAGE:  # the last candidate: go on from the first
                self._after = after = None
                if wrapped:
                    return found
                wrapped = True
        return found

    def _new_log(self, agent_id: str) -> EventLog:
        log: EventLog = self._store.log(agent_id, **self._log_options)
        return log

    async def _open(self, agent_id: str) -> None:
        me = asyncio.current_task()
        self._opening.add(agent_id)
        log: EventLog | None = None
        try:
            log = opened = await asyncio.to_thread(self._new_log, agent_id)
            agent = await LoopAgent.open(self._host(agent_id), log=opened, writer=self._writer)
        except LogOwned:
            self._counts["lost_races"] += 1
            await self._close(log)
            return
        except BaseException as error:  # the factory's, the host's: anything costs the agent
            if _own_cancellation(error) or closing(error, me):
                raise
            self._counts["failed"] += 1
            wait = self._strike(agent_id)
            logger.warning(
                "%s: agent %r could not be opened (%s: %s); left alone for %g s",
                self._name,
                agent_id,
                type(error).__name__,
                error,
                wait,
            )
            await self._close(log)
            return
        finally:
            self._opening.discard(agent_id)
        self._agents[agent_id] = _Served(agent, opened)
        self._counts["opened"] += 1
        if agent.resumed:
            self._counts["takeovers"] += 1
            logger.info("%s: took over agent %r", self._name, agent_id)

    def _strike(self, agent_id: str) -> float:
        """One more failure in a row for ``agent_id``: how long it is now left alone."""
        strikes = self._strikes[agent_id] = self._strikes.get(agent_id, 0) + 1
        wait: float = min(BACKOFF_SECONDS, FIRST_BACKOFF_SECONDS * 2.0 ** min(strikes - 1, 30))
        assert self._loop is not None
        self._backoff[agent_id] = self._loop.time() + wait
        return wait

    # ----------------------------------------------------------- letting go

    def _reap(self) -> None:
        """Drop the agents that stopped (a failed write, a fenced log): their work stays in
        the store for the next owner."""
        for agent_id, served in list(self._agents.items()):
            error = served.agent.stopped
            if error is not None:
                self._counts["failed"] += 1
                logger.warning(
                    "%s: agent %r stopped (%s: %s); let go, left alone for %g s",
                    self._name,
                    agent_id,
                    type(error).__name__,
                    error,
                    self._strike(agent_id),
                )
                self._let_go(agent_id)

    async def _heartbeat(self) -> None:
        """Renew every lease in one statement; let go the agents another worker took."""
        served = list(self._agents.items())
        if not served:
            return
        try:
            lost = await asyncio.to_thread(self._store.renew, [s.log for _, s in served])
        except InboxCoreError as error:  # the appends renew too; try again next beat
            logger.warning("%s: renewing leases failed: %s", self._name, error)
            return
        for agent_id in lost:
            if agent_id in self._agents:
                self._counts["failed"] += 1
                logger.warning("%s: lost the lease of agent %r", self._name, agent_id)
                self._let_go(agent_id)

    def _detach_idle(self, now: float) -> None:
        for agent_id, served in list(self._agents.items()):
            agent = served.agent
            if agent.status != "idle":
                served.idle_since = None
            elif served.idle_since is None:
                served.idle_since = now
            elif now - served.idle_since >= self._idle_seconds:
                self._counts["detached"] += 1
                self._strikes.pop(agent_id, None)  # it was served until idle: a clean slate
                self._backoff.pop(agent_id, None)
                self._let_go(agent_id)

    def _let_go(self, agent_id: str) -> None:
        """Detach and close one agent in the background (a hook may take its time)."""
        served = self._agents.pop(agent_id)
        self._freezer.let_go()
        self._releasing.add(served)
        task = asyncio.ensure_future(self._release(agent_id, served))
        self._closing.add(task)
        task.add_done_callback(self._closing.discard)

    async def _release(self, agent_id: str, served: _Served) -> None:
        me = asyncio.current_task()
        agent = served.agent
        try:
            detaching = asyncio.ensure_future(agent.detach())
            if await self._within_grace(detaching):
                detaching.result()
            else:
                self._counts["abandoned"] += 1
                logger.warning(
                    "%s: agent %r: a hook ignored its abort signal; abandoned, log released",
                    self._name,
                    agent_id,
                )
                await agent.detach(grace=0)  # releases the log without the hook
                detaching.cancel()
        except BaseException as error:  # never stops the worker
            if _own_cancellation(error) or closing(error, me):
                raise
            logger.warning("%s: detaching failed: %s", self._name, error, exc_info=error)
        finally:
            self._releasing.discard(served)
            self._counts["posts"] += agent.posts_decided  # durable ones: writes are settled
        await self._close(served.log)

    async def _within_grace(self, detaching: asyncio.Future[None]) -> bool:
        """Whether ``detaching`` ended within the grace (cut short by a second ``stop()``)."""
        assert self._hurry is not None
        hurry: asyncio.Future[Any] = asyncio.ensure_future(self._hurry.wait())
        try:
            await asyncio.wait(
                {detaching, hurry}, timeout=self._grace, return_when=asyncio.FIRST_COMPLETED
            )
        finally:
            hurry.cancel()
        return detaching.done()

    async def _close(self, log: EventLog | None) -> None:
        if log is None:
            return
        if self._writer is not None:
            self._writer.forget(log)
        close = getattr(log, "close", None)
        if close is not None:
            try:
                await asyncio.to_thread(close)
            except Exception as error:
                logger.warning("%s: closing a log failed: %s", self._name, error)

    async def _detach_all(self) -> None:
        for agent_id in list(self._agents):
            self._counts["detached"] += 1
            self._let_go(agent_id)
        if self._closing:
            await asyncio.gather(*self._closing, return_exceptions=True)
