"""Stores (R35, R36): the database the agents' logs live in, seen from any process.

``SqliteStore(path)`` and ``PostgresStore(conninfo)`` hand out their agents'
logs (``store.log(agent_id)``), take posts for agents the caller does not own
(``store.post``), answer how a post ended (``store.outcome``, ``await
store.wait``) and follow any agent's log without owning it (``store.watch``).
For workers (R37) they name the agents that have work and no live owner
(``store.candidates``), renew a worker's leases in one statement
(``store.renew``) and wake a worker on any post (``store.work_wake``).
A store object is safe to use from several threads (one lock per object);
``wait`` and ``watch`` run in an event loop. See specs/shell.md section 12.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import os
import sqlite3
import threading
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any, Final

from inbox_core import limits
from inbox_core.errors import InvalidInput, shown
from inbox_core.events import DurableEvent
from inbox_core.shell import sqlite_posts
from inbox_core.shell.logs import CorruptLog, LogUnavailable, decode_record
from inbox_core.shell.owners import held_elsewhere
from inbox_core.shell.postgres_schema import (
    CANDIDATES,
    CANDIDATES_AFTER,
    RENEW_MANY,
    connection_source,
    create_tables,
    psycopg_module,
)
from inbox_core.shell.posts import (
    PG_INSERT,
    PG_POSTS,
    PostOutcome,
    PostPending,
    PostTimeout,
    Receipt,
    UnknownReceipt,
    encode_post,
    outcome_from_row,
    post_key,
)
from inbox_core.shell.serving import Wake
from inbox_core.shell.sqlite import SqliteLog
from inbox_core.shell.sqlite_schema import sqlite_errors, timeout_seconds
from inbox_core.shell.wakes import SqliteWake, pg_listener, sqlite_bell

if TYPE_CHECKING:
    import psycopg

    from inbox_core.commands import Command
    from inbox_core.shell.postgres import PostgresLog

__all__ = ["PostgresStore", "SqliteStore", "open_store", "parse_store"]

logger: Final = logging.getLogger("inbox_core.shell")

_WATCH_BATCH: Final = 1000
MAX_PRUNE_SECONDS: Final = 10**10
"""``prune(older_than=...)`` past this (about 317 years, both stores' clocks reach back so
far) means the same: nothing was decided that long ago."""
_REPORTED_MOST: Final = 4096
"""How many unservable agent ids one store object remembers having reported."""


def _receipt(receipt: object) -> Receipt:
    if not isinstance(receipt, Receipt):
        raise InvalidInput(f"expected a Receipt, got {type(receipt).__name__}")
    return receipt


def _seconds(value: object, what: str, *, allow_none: bool) -> float | None:
    if value is None and allow_none:
        return None
    if (
        not isinstance(value, (int, float))
        or isinstance(value, bool)
        or not math.isfinite(value)
        or value < 0
    ):
        raise InvalidInput(f"{what} must be a number of seconds >= 0, got {value!r:.80}")
    return float(value)


def _older_than(value: object) -> float:
    """``prune``'s age: a number >= 0 (InvalidInput otherwise), at most ``MAX_PRUNE_SECONDS``
    (a larger one, an infinite one or an int past any float included: the same on every
    store)."""
    if (
        not isinstance(value, (int, float))
        or isinstance(value, bool)
        or (isinstance(value, float) and math.isnan(value))
        or value < 0
    ):
        raise InvalidInput(f"older_than must be a number of seconds >= 0, got {shown(value)}")
    return float(min(value, MAX_PRUNE_SECONDS))


def _since(value: object) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise InvalidInput(f"since must be an int >= 0 (a seq), got {value!r:.80}")
    return value


def _limit(value: object) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise InvalidInput(f"limit must be an int >= 1, got {value!r:.80}")
    return value


def parse_store(spec: object) -> tuple[str, str]:
    """``("sqlite", path)`` for ``sqlite:PATH``, ``("postgresql", url)`` for a
    ``postgresql://`` (or ``postgres://``) URL; anything else is ``InvalidInput``. The one
    form of ``STORE`` on the command line (``inbox-core post``, ``watch``, ``serve``)."""
    if isinstance(spec, str):
        if spec.startswith("sqlite:"):
            path = spec[len("sqlite:") :]
            if path.startswith("//"):  # sqlite:///abs/path, the URL form
                path = path[2:]
            if not path:
                raise InvalidInput("sqlite: needs a path, e.g. sqlite:agents.db")
            return "sqlite", path
        if spec.startswith(("postgresql://", "postgres://")):
            return "postgresql", spec
    raise InvalidInput(f"a store is sqlite:PATH or a postgresql://... URL, got {spec!r:.80}")


def open_store(spec: str) -> SqliteStore | PostgresStore:
    """The store ``spec`` names (``parse_store``)."""
    kind, target = parse_store(spec)
    return SqliteStore(target) if kind == "sqlite" else PostgresStore(target)


class _Store:
    """What both stores share: ``wait`` and ``watch`` over ``outcome``, ``_events`` and a wake;
    ``candidates`` over ``_candidate_page``."""

    def __init__(self) -> None:
        self._reported: set[object] = set()

    def outcome(self, receipt: Receipt) -> PostOutcome:
        raise NotImplementedError

    def _wake(self, key: str) -> Wake:
        raise NotImplementedError

    def _events(self, agent_id: str, since: int, limit: int) -> list[tuple[Any, Any]]:
        raise NotImplementedError

    def candidates(self, limit: int, *, after: str | None = None) -> list[str]:
        """Up to ``limit`` agents that have work and no live owner (R37): an unconsumed post,
        or an open turn, a maintenance job or waking work its last owner left (the ``work``
        flag), or a flag not known yet. Reads only; a worker then tries to acquire them.

        In the store's order of agent ids, from the first or from the one after ``after``:
        passing the last id of each answer pages through every candidate, and fewer than
        ``limit`` means there are no more (R37 v4: placement is fair). A pending post whose
        agent id names no agent (not text, not UTF-8, empty, too long) is never a candidate:
        it is skipped, and reported once per store object (R35 v4)."""
        limit = _limit(limit)
        cursor = None if after is None else self._cursor(limits.agent_id(after))
        found: list[str] = []
        while len(found) < limit:
            agents, cursor = self._candidate_page(cursor, limit)
            found.extend(agents)
            if cursor is None:
                break
        return found[:limit]

    def _cursor(self, agent_id: str) -> Any:
        """The position of ``agent_id`` in ``_candidate_page``'s order."""
        return agent_id

    def _candidate_page(self, after: Any, limit: int) -> tuple[list[str], Any]:
        """One page of up to ``limit`` stored ids after ``after``: the candidates among them
        (valid agent ids no live owner holds), and the page's last position, None at the end."""
        raise NotImplementedError

    def _agent_ids(self, stored: Sequence[Any], agent_text: Callable[[Any], str]) -> list[str]:
        """The agent ids among ``stored`` (``agent_text`` reads one, ``InvalidInput`` for
        what is none), each other reported once: its posts can never be served."""
        agents: list[str] = []
        for value in stored:
            try:
                agents.append(agent_text(value))
            except InvalidInput as why:
                self._report(value, why)
        return agents

    def _report(self, stored: object, why: InvalidInput) -> None:
        if stored in self._reported or len(self._reported) >= _REPORTED_MOST:
            return
        self._reported.add(stored)
        logger.warning(
            "%r: posts for agent id %s can never be served (%s); no worker places them, "
            "they stay pending: delete them",
            self,
            shown(stored),
            why,
        )

    def renew(self, logs: Sequence[Any]) -> set[str]:
        """Renew the leases of ``logs`` (this store's, held by the caller) in one statement;
        the agent ids whose lease was taken over (R29). Stores without leases renew nothing."""
        return set()

    def work_wake(self) -> Wake:
        """A wake rung by every post to any agent of the store (R36, R37). In the loop."""
        return self._wake("post:*")

    async def wait(self, receipt: Receipt, timeout: float | None = None) -> PostOutcome:
        """The post's outcome once decided (``PostApplied()`` or ``PostRejected``); raises
        ``PostTimeout`` after ``timeout`` seconds (None: no limit) while it is pending."""
        receipt = _receipt(receipt)
        limit = _seconds(timeout, "timeout", allow_none=True)
        loop = asyncio.get_running_loop()
        deadline = None if limit is None else loop.time() + limit
        wake = self._wake(f"outcome:{receipt.agent_id}")  # before the first look
        try:
            while True:
                outcome = self.outcome(receipt)
                if not isinstance(outcome, PostPending):
                    return outcome
                left = None if deadline is None else deadline - loop.time()
                if left is not None and left <= 0:
                    raise PostTimeout(
                        f"post {receipt.post_id} for agent {receipt.agent_id!r} is still "
                        f"pending after {limit:g} s"
                    )
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(left):  # not wait_for (see wakes.Chime)
                        await wake.wait()
        finally:
            wake.close()

    async def watch(self, agent_id: str, since: int = 0) -> AsyncIterator[tuple[int, DurableEvent]]:
        """Agent ``agent_id``'s durable events ``(seq, event)`` from seq ``since`` on, in log
        order, then each one as it is appended, from any process and across takeovers;
        it never needs ownership nor blocks the writer (R36). ``CorruptLog`` for a bad row."""
        agent = limits.agent_id(agent_id)
        seq = _since(since)
        wake = self._wake(f"events:{agent}")
        try:
            while True:
                rows = self._events(agent, seq, _WATCH_BATCH)
                for found, text in rows:
                    if found != seq or isinstance(found, bool):
                        raise CorruptLog(seq, f"expected seq {seq}, found {found!r}")
                    event = decode_record(seq, text)
                    yield seq, event
                    seq += 1
                if len(rows) < _WATCH_BATCH:
                    await wake.wait()
        finally:
            wake.close()


# ---------------------------------------------------------------------- SQLite


class SqliteStore(_Store):
    """The agents of one SQLite database file (``SqliteLog``'s file): posts, outcomes, watch.

    ``log(agent_id)`` is ``SqliteLog(path, agent_id=agent_id)``; the store's own
    connection (``synchronous=FULL``: a post survives power loss once ``post``
    returned) writes posts only and reads. Bad arguments raise ``InvalidInput``;
    every SQLite failure ``LogUnavailable`` (or ``IncompatibleLog`` for a file that
    is no inbox-core log), nothing written.
    """

    def __init__(self, path: str | os.PathLike[str], *, timeout: float = 5.0) -> None:
        super().__init__()
        SqliteLog(path, timeout=timeout).close()  # checks, creates or migrates the file
        self._path = os.fspath(path)
        self._timeout = timeout_seconds(timeout)
        self._lock = threading.Lock()
        self._bell = sqlite_bell(self._path)
        with self._errors("open"):
            conn = sqlite3.connect(
                self._path, timeout=self._timeout, isolation_level=None, check_same_thread=False
            )
            try:
                conn.execute("PRAGMA synchronous=FULL")
                sqlite_posts.create_posts(conn, self._path)
            except BaseException:
                conn.close()
                raise
        self._conn: sqlite3.Connection | None = conn

    @property
    def path(self) -> str:
        return self._path

    def _errors(self, what: str) -> contextlib.AbstractContextManager[None]:
        return sqlite_errors(self._path, what, self._timeout)

    @contextlib.contextmanager
    def _connection(self, what: str) -> Iterator[sqlite3.Connection]:
        with self._lock, self._errors(what):
            if self._conn is None:
                raise LogUnavailable(f"SqliteStore {self._path!r} is closed")
            yield self._conn

    def log(self, agent_id: str, **options: Any) -> SqliteLog:
        """Agent ``agent_id``'s log in this file (options as ``SqliteLog``'s)."""
        return SqliteLog(self._path, agent_id=agent_id, **options)

    def post(self, agent_id: str, command: Command, *, key: str | None = None) -> Receipt:
        """Post ``command`` for agent ``agent_id`` (R35); durable when it returns. A ``key``
        posted before for that agent returns the first post's receipt and writes nothing."""
        agent = limits.agent_id(agent_id)
        text = encode_post(command)
        checked = post_key(key)
        with self._connection("post") as conn:
            post_id = sqlite_posts.insert_post(conn, agent, text, checked)
        self._bell.ring(f"post:{agent}")
        return Receipt(agent, post_id)

    def outcome(self, receipt: Receipt) -> PostOutcome:
        """``PostPending()``, ``PostApplied()`` or ``PostRejected(error, message)``;
        ``UnknownReceipt`` when no such post is stored (never made here, or pruned)."""
        receipt = _receipt(receipt)
        with self._connection("read outcome") as conn:
            found = sqlite_posts.outcome(conn, receipt.agent_id, receipt.post_id)
        if found is None:
            raise UnknownReceipt(f"no post {receipt.post_id} for agent {receipt.agent_id!r}")
        return found

    def prune(self, *, older_than: float) -> int:
        """Delete the outcomes (and keys) of posts decided more than ``older_than`` seconds
        ago; pending posts stay. Returns how many were deleted."""
        seconds = _older_than(older_than)
        with self._connection("prune") as conn:
            return sqlite_posts.prune(conn, seconds)

    def _cursor(self, agent_id: str) -> bytes:
        return agent_id.encode("utf-8")  # SQLite orders text by its bytes

    def _candidate_page(self, after: bytes | None, limit: int) -> tuple[list[str], bytes | None]:
        with self._connection("read") as conn:
            stored = sqlite_posts.candidate_page(conn, after, limit)
        agents = self._agent_ids(stored, sqlite_posts.agent_text)
        held = held_elsewhere(self._path, agents)  # a live process owns it: not a candidate
        end = stored[-1] if len(stored) == limit else None
        return [agent for agent in agents if agent not in held], end

    def _wake(self, key: str) -> Wake:
        return SqliteWake(self._path, key)

    def _events(self, agent_id: str, since: int, limit: int) -> list[tuple[Any, Any]]:
        with self._connection("read") as conn:
            return conn.execute(
                "SELECT seq, event FROM events WHERE agent_id = ? AND seq >= ? "
                "ORDER BY seq LIMIT ?",
                (agent_id, since, limit),
            ).fetchall()

    def close(self) -> None:
        """Close the connection (idempotent)."""
        with self._lock:
            conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()

    def __enter__(self) -> SqliteStore:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"SqliteStore({self._path!r})"


# ------------------------------------------------------------------ PostgreSQL

_BY_KEY: Final = f"SELECT post_id FROM {PG_POSTS} WHERE agent_id = %(agent)s AND key = %(key)s"
_POST_ATTEMPTS: Final = 8
"""How often ``post`` tries again when a prune deleted its key's earlier post between its
``INSERT`` and its look-up (each try that finds neither wrote nothing)."""
_OUTCOME: Final = (
    f"SELECT outcome, error, message FROM {PG_POSTS} "
    "WHERE post_id = %(post)s AND agent_id = %(agent)s"
)
_PRUNE: Final = (
    f"DELETE FROM {PG_POSTS} WHERE outcome IS NOT NULL "
    "AND decided_at < clock_timestamp() - %(seconds)s * interval '1 second'"
)
_EVENTS: Final = (
    "SELECT seq, event FROM inbox_core_events WHERE agent_id = %(agent)s AND seq >= %(since)s "
    "ORDER BY seq LIMIT %(limit)s"
)


class PostgresStore(_Store):
    """The agents of one PostgreSQL database (``PostgresLog``'s tables): posts, outcomes, watch.

    ``conninfo`` is a libpq connection string; the store opens (and, after a
    lost connection, reopens) its own autocommit connection, and for ``wait``
    and ``watch`` one ``LISTEN`` connection per event loop while they run.
    ``log(agent_id)`` is ``PostgresLog(conninfo, agent_id)``. Every driver or
    server error is ``LogUnavailable``: a ``post`` that raises it may or may not
    have landed (the reply was lost); post again with the same ``key`` to know.
    """

    def __init__(self, conninfo: str) -> None:
        super().__init__()
        source, _ = connection_source(conninfo)
        if source is None:
            raise InvalidInput("PostgresStore takes a libpq connection string")
        self._conninfo = source
        self._lock = threading.Lock()
        self._conn: psycopg.Connection[Any] | None = None
        self._closed = False
        with self._connection("connect"):
            pass

    @property
    def conninfo(self) -> str:
        return self._conninfo

    @contextlib.contextmanager
    def _connection(self, what: str) -> Iterator[psycopg.Connection[Any]]:
        psycopg = psycopg_module()
        with self._lock:
            if self._closed:
                raise LogUnavailable("PostgresStore is closed")
            try:
                if self._conn is None or self._conn.closed:
                    self._conn = psycopg.connect(self._conninfo, autocommit=True)
                    create_tables(self._conn)
                yield self._conn
            except psycopg.Error as error:
                raise LogUnavailable(
                    f"PostgresStore {what} failed: {type(error).__name__}: {error}"
                ) from error

    def log(self, agent_id: str, **options: Any) -> PostgresLog:
        """Agent ``agent_id``'s log in this database (options as ``PostgresLog``'s)."""
        from inbox_core.shell.postgres import PostgresLog  # noqa: PLC0415

        return PostgresLog(self._conninfo, agent_id, **options)

    def post(self, agent_id: str, command: Command, *, key: str | None = None) -> Receipt:
        """Post ``command`` for agent ``agent_id`` (R35): one ``INSERT`` (its trigger notifies
        the owner in the same transaction), durable when it returns. A ``key`` posted
        before for that agent returns the first post's receipt and writes nothing."""
        agent = limits.agent_id(agent_id)
        args = {"agent": agent, "command": encode_post(command), "key": post_key(key)}
        with self._connection("post") as conn:
            for _ in range(_POST_ATTEMPTS):
                row = conn.execute(PG_INSERT, args).fetchone()
                if row is None:  # the key was posted before: that post's id
                    row = conn.execute(_BY_KEY, args).fetchone()
                if row is not None:  # else that post was pruned since: post again
                    return Receipt(agent, int(row[0]))
        raise LogUnavailable(
            f"post for {agent!r}: the key's earlier post was pruned while posting, "
            f"{_POST_ATTEMPTS} times; nothing was written"
        )

    def outcome(self, receipt: Receipt) -> PostOutcome:
        """``PostPending()``, ``PostApplied()`` or ``PostRejected(error, message)``;
        ``UnknownReceipt`` when no such post is stored (never made here, or pruned)."""
        receipt = _receipt(receipt)
        args = {"post": receipt.post_id, "agent": receipt.agent_id}
        with self._connection("read outcome") as conn:
            row = conn.execute(_OUTCOME, args).fetchone()
        if row is None:
            raise UnknownReceipt(f"no post {receipt.post_id} for agent {receipt.agent_id!r}")
        return outcome_from_row(*row)

    def prune(self, *, older_than: float) -> int:
        """Delete the outcomes (and keys) of posts decided more than ``older_than`` seconds
        ago; pending posts stay. Returns how many were deleted."""
        seconds = _older_than(older_than)
        with self._connection("prune") as conn:
            return int(conn.execute(_PRUNE, {"seconds": seconds}).rowcount)

    def _candidate_page(self, after: str | None, limit: int) -> tuple[list[str], str | None]:
        with self._connection("read") as conn:
            if after is None:
                rows = conn.execute(CANDIDATES, {"limit": limit}).fetchall()
            else:
                rows = conn.execute(CANDIDATES_AFTER, {"limit": limit, "after": after}).fetchall()
        stored = [agent for (agent,) in rows]
        end = stored[-1] if len(stored) == limit else None
        return self._agent_ids(stored, limits.agent_id), end

    def renew(self, logs: Sequence[Any]) -> set[str]:
        held = [log for log in logs if log.token is not None]
        lost = {log.agent_id for log in logs if log.token is None}
        if not held:
            return lost
        args = {
            "agents": [log.agent_id for log in held],
            "epochs": [log.epoch for log in held],
            "owners": [log.token for log in held],
        }
        with self._connection("renew") as conn:
            renewed = {str(agent) for (agent,) in conn.execute(RENEW_MANY, args).fetchall()}
        return lost | {log.agent_id for log in held if log.agent_id not in renewed}

    def _wake(self, key: str) -> Wake:
        return pg_listener(self._conninfo).wake(key)

    def _events(self, agent_id: str, since: int, limit: int) -> list[tuple[Any, Any]]:
        args = {"agent": agent_id, "since": since, "limit": limit}
        with self._connection("read") as conn:
            return conn.execute(_EVENTS, args).fetchall()

    def close(self) -> None:
        """Close the connection (idempotent)."""
        with self._lock:
            self._closed = True
            conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()

    def __enter__(self) -> PostgresStore:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return "PostgresStore(<conninfo>)"
