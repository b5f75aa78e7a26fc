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
import math
import os
import sqlite3
import threading
from collections.abc import AsyncIterator, Iterator, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any, Final

from inbox_core import limits
from inbox_core.errors import InvalidInput
from inbox_core.events import DurableEvent
from inbox_core.shell import sqlite_posts
from inbox_core.shell.directory import PG_DIRECTORY, SQLITE_DIRECTORY, AgentSummary, Directory
from inbox_core.shell.logs import CorruptLog, LogUnavailable, decode_record
from inbox_core.shell.owners import held_elsewhere
from inbox_core.shell.postgres_schema import (
    CANDIDATES,
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
from inbox_core.shell.tokens import PG_TOKENS, SQLITE_TOKENS, TokenDialect, TokenTable
from inbox_core.shell.wakes import SqliteWake, pg_listener, sqlite_bell

if TYPE_CHECKING:
    from collections.abc import Callable

    import psycopg

    from inbox_core.commands import Command
    from inbox_core.shell.postgres import PostgresLog

__all__ = ["PostgresStore", "SqliteStore", "open_store", "parse_store"]

_WATCH_BATCH: Final = 1000


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


def _since(value: object) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise InvalidInput(f"since must be an int >= 0 (a seq), got {value!r:.80}")
    return value


def _limit(value: object) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise InvalidInput(f"limit must be an int >= 1, got {value!r:.80}")
    return value


_SQLITE_CANDIDATES: Final = (
    "SELECT agent_id FROM agents WHERE work = 1 "
    "UNION SELECT DISTINCT agent_id FROM posts WHERE outcome IS NULL LIMIT ?"
)


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
    """What both stores share: ``wait`` and ``watch`` over ``outcome``, ``_events`` and a wake."""

    def outcome(self, receipt: Receipt) -> PostOutcome:
        raise NotImplementedError

    def _wake(self, key: str) -> Wake:
        raise NotImplementedError

    def _events(self, agent_id: str, since: int, limit: int) -> list[tuple[Any, Any]]:
        raise NotImplementedError

    def candidates(self, limit: int) -> list[str]:
        """Up to ``limit`` agents that have work and no live owner (R37): an unconsumed post,
        or an open turn, a maintenance job or waking work its last owner left (the ``work``
        flag), or a flag not known yet. Reads only; a worker then tries to acquire them."""
        raise NotImplementedError

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

    # ---------------------------------------- what a front door reads (R39, inbox_core.http)

    _directory: Directory
    _token_dialect: TokenDialect

    def _connection(self, what: str) -> contextlib.AbstractContextManager[Any]:
        raise NotImplementedError

    def agents(
        self,
        after: str | None = None,
        limit: int = 100,
        accept: Callable[[str], bool] | None = None,
    ) -> list[AgentSummary]:
        """Up to ``limit`` agents of the store (an event, an owner's row or a post) with an id
        after ``after``, in the database's order, that ``accept`` takes (all by default)."""
        first = None if after is None else limits.agent_id(after)
        with self._connection("list agents") as conn:
            return self._directory.agents(conn, first, _limit(limit), accept)

    def pending_count(self, agent_id: str) -> int:
        """How many of agent ``agent_id``'s posts wait for its owner."""
        agent = limits.agent_id(agent_id)
        with self._connection("count posts") as conn:
            return self._directory.pending_posts(conn, agent)

    def posted_command(self, receipt: Receipt) -> object:
        """The command a post holds, as stored (the text a producer wrote);
        ``UnknownReceipt`` when no such post is stored."""
        receipt = _receipt(receipt)
        with self._connection("read a post") as conn:
            found, command = self._directory.post_command(conn, receipt.agent_id, receipt.post_id)
        if not found:
            raise UnknownReceipt(f"no post {receipt.post_id} for agent {receipt.agent_id!r}")
        return command

    def events(
        self, agent_id: str, since: int = 0, limit: int = _WATCH_BATCH
    ) -> list[tuple[int, DurableEvent]]:
        """Agent ``agent_id``'s events ``(seq, event)`` from seq ``since`` on, at most
        ``limit``, as they are now; ``CorruptLog`` for a bad row. Needs no ownership."""
        agent, seq, most = limits.agent_id(agent_id), _since(since), _limit(limit)
        with self._connection("read") as conn:
            return self._directory.events_page(conn, agent, seq, most)

    @property
    def tokens(self) -> TokenTable:
        """The store's bearer tokens (``inbox_core.shell.tokens``)."""
        return TokenTable(self._connection, self._token_dialect)


# ---------------------------------------------------------------------- SQLite


class SqliteStore(_Store):
    """The agents of one SQLite database file (``SqliteLog``'s file): posts, outcomes, watch.

    ``log(agent_id)`` is ``SqliteLog(path, agent_id=agent_id)``; the store's own
    connection (``synchronous=FULL``: a post survives power loss once ``post``
    returned) writes posts only and reads. Bad arguments raise ``InvalidInput``;
    every SQLite failure ``LogUnavailable`` (or ``IncompatibleLog`` for a file that
    is no inbox-core log), nothing written.
    """

    _directory = SQLITE_DIRECTORY
    _token_dialect = SQLITE_TOKENS

    def __init__(self, path: str | os.PathLike[str], *, timeout: float = 5.0) -> None:
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
                sqlite_posts.create_posts(conn)
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
        seconds = _seconds(older_than, "older_than", allow_none=False)
        assert seconds is not None
        with self._connection("prune") as conn:
            return sqlite_posts.prune(conn, seconds)

    def candidates(self, limit: int) -> list[str]:
        limit = _limit(limit)
        with self._connection("read") as conn:
            rows = conn.execute(_SQLITE_CANDIDATES, (limit,)).fetchall()
        found = [str(agent) for (agent,) in rows]
        held = held_elsewhere(self._path, found)  # a live process owns it: not a candidate
        return [agent for agent in found if agent not in held]

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

    _directory = PG_DIRECTORY
    _token_dialect = PG_TOKENS

    def __init__(self, conninfo: str) -> None:
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
            row = conn.execute(PG_INSERT, args).fetchone()
            if row is None:
                row = conn.execute(_BY_KEY, args).fetchone()
        assert row is not None
        return Receipt(agent, int(row[0]))

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
        seconds = _seconds(older_than, "older_than", allow_none=False)
        with self._connection("prune") as conn:
            return int(conn.execute(_PRUNE, {"seconds": seconds}).rowcount)

    def candidates(self, limit: int) -> list[str]:
        with self._connection("read") as conn:
            rows = conn.execute(CANDIDATES, {"limit": _limit(limit)}).fetchall()
        return [str(agent) for (agent,) in rows]

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
