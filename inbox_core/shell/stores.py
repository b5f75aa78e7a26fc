"""Stores (R35, R36): the database the agents' logs live in, seen from any process.

``SqliteStore(path)`` and ``PostgresStore(conninfo)`` hand out their agents'
logs (``store.log(agent_id)``), take posts for agents the caller does not own
(``store.post``), answer how a post ended (``store.outcome``, ``await
store.wait``) and follow any agent's log without owning it (``store.watch``,
and a page of it: ``store.events``). These reads never write (R36 v4: a store
creates or migrates its database at its first write only), and ``wait`` and
``watch`` read in worker threads, shared per agent and event loop
(``inbox_core.shell.watching``). For workers (R37) they name the agents that
have work and no live owner (``store.candidates``), renew a worker's leases in
one statement (``store.renew``) and wake a worker on any post
(``store.work_wake``). A store object is safe to use from several threads;
``wait`` and ``watch`` run in an event loop. See specs/shell.md section 12.
"""

from __future__ import annotations

import contextlib
import logging
import math
import os
import re
import sqlite3
import threading
import weakref
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any, Final, TypeVar

from inbox_core import limits
from inbox_core.errors import InvalidInput, shown
from inbox_core.events import DurableEvent
from inbox_core.shell import sqlite_posts, sqlite_reading
from inbox_core.shell.directory import (
    PG_DIRECTORY,
    AgentSummary,
    Directory,
    pg_directory,
    sqlite_directory,
)
from inbox_core.shell.logs import LogUnavailable
from inbox_core.shell.owners import held_elsewhere
from inbox_core.shell.postgres_schema import (
    CANDIDATES,
    CANDIDATES_AFTER,
    HOLDER,
    PENDING,
    RENEW_MANY,
    connection_source,
    create_tables,
    psycopg_module,
)
from inbox_core.shell.posts import (
    PG_INSERT,
    PG_POSTS,
    PendingPost,
    PostOutcome,
    Receipt,
    UnknownReceipt,
    encode_post,
    outcome_from_row,
    post_key,
)
from inbox_core.shell.serving import Wake
from inbox_core.shell.sqlite import SqliteLog
from inbox_core.shell.sqlite_reading import SqliteReader
from inbox_core.shell.sqlite_schema import (
    database_path,
    regular_or_absent,
    sqlite_errors,
    timeout_seconds,
)
from inbox_core.shell.tokens import PG_TOKENS, SQLITE_TOKENS, TokenDialect, TokenTable
from inbox_core.shell.wakes import SqliteWake, pg_listener, sqlite_bell
from inbox_core.shell.watching import (
    BATCH_EVENTS,
    Batch,
    Watching,
    decode_batch,
    page_limit,
    since_seq,
    wait_seconds,
)

if TYPE_CHECKING:
    from collections.abc import Callable

    import psycopg

    from inbox_core.commands import Command
    from inbox_core.shell.postgres import PostgresLog

__all__ = ["PostgresStore", "SqliteStore", "open_store", "parse_store"]

T = TypeVar("T")

logger: Final = logging.getLogger("inbox_core.shell")

MAX_PRUNE_SECONDS: Final = 10**10
"""``prune(older_than=...)`` past this (about 317 years, both stores' clocks reach back so
far) means the same: nothing was decided that long ago."""
_REPORTED_MOST: Final = 4096
"""How many unservable agent ids one store object remembers having reported."""


def _receipt(receipt: object) -> Receipt:
    if not isinstance(receipt, Receipt):
        raise InvalidInput(f"expected a Receipt, got {type(receipt).__name__}")
    return receipt


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


def _limit(value: object) -> int:
    if (
        not isinstance(value, int)
        or isinstance(value, bool)
        or not 1 <= value <= limits.MAX_JSON_INTEGER
    ):
        shown = "a larger int" if isinstance(value, int) and value > 0 else f"{value!r:.80}"
        raise InvalidInput(f"limit must be an int in [1, 2**63 - 1], got {shown}")
    return value


_CONNINFO: Final = re.compile(r"\s*[A-Za-z_]+\s*=")
"""A libpq keyword/value connection string starts with a keyword and ``=``."""


def parse_store(spec: object) -> tuple[str, str]:
    """``("sqlite", path)`` for ``sqlite:PATH``, ``("postgresql", conninfo)`` for a
    ``postgresql://`` (or ``postgres://``) URL or a libpq keyword/value string
    (``host=db dbname=agents``: both forms ``PostgresStore`` takes); anything else is
    ``InvalidInput``. The one form of ``STORE`` wherever a store is named (``inbox-core
    post``, ``watch``, ``serve``, ``Worker``); ``PostgresStore`` checks the rest."""
    if isinstance(spec, str):
        if spec.startswith("sqlite:"):
            path = spec[len("sqlite:") :]
            if path.startswith("//"):  # sqlite:///abs/path, the URL form
                path = path[2:]
            if not path:
                raise InvalidInput("sqlite: needs a path, e.g. sqlite:agents.db")
            return "sqlite", path
        if spec.startswith(("postgresql://", "postgres://")) or _CONNINFO.match(spec):
            return "postgresql", spec
    shown = f"{spec!r:.80}" if isinstance(spec, str) else type(spec).__name__
    raise InvalidInput(
        "a store is sqlite:PATH, a postgresql://... URL or a libpq connection string"
        f" (host=... dbname=...), got {shown}"
    )


def open_store(spec: str) -> SqliteStore | PostgresStore:
    """The store ``spec`` names (``parse_store``)."""
    kind, target = parse_store(spec)
    return SqliteStore(target) if kind == "sqlite" else PostgresStore(target)


class _Store:
    """What both stores share: ``outcome``, ``events``, ``wait`` and ``watch`` over two
    read-only reads (``_read_events``, ``_read_outcomes``: blocking, run in worker threads
    by ``wait`` and ``watch``) and a wake; ``watching.Watching`` shares the reads;
    ``candidates`` over ``_candidate_page``."""

    _watching: Watching

    def __init__(self) -> None:
        self._reported: set[object] = set()

    def _wake(self, key: str) -> Wake:
        raise NotImplementedError

    def _read_events(self, agent_id: str, since: int, limit: int) -> Batch:
        """Up to ``limit`` of the agent's events from seq ``since`` on (read-only)."""
        raise NotImplementedError

    def _read_outcomes(self, agent_id: str, post_ids: Sequence[int]) -> dict[int, PostOutcome]:
        """The outcomes of those of the agent's posts ``post_ids`` that exist (read-only)."""
        raise NotImplementedError

    def outcome(self, receipt: Receipt) -> PostOutcome:
        """``PostPending()``, ``PostApplied()`` or ``PostRejected(error, message)``;
        ``UnknownReceipt`` when no such post is stored (never made here, or pruned). Reads
        only (R36 v4), in the calling thread: from an event loop, ``await store.wait(receipt,
        timeout=0)`` reads off the loop (``PostTimeout`` while pending)."""
        receipt = _receipt(receipt)
        found = self._read_outcomes(receipt.agent_id, [receipt.post_id]).get(receipt.post_id)
        if found is None:
            raise UnknownReceipt(f"no post {receipt.post_id} for agent {receipt.agent_id!r}")
        return found

    def events(
        self, agent_id: str, since: int = 0, limit: int = BATCH_EVENTS
    ) -> list[tuple[int, DurableEvent]]:
        """A page of agent ``agent_id``'s durable events: ``(seq, event)`` from seq ``since``
        on, at most ``limit`` (1 to ``watching.MAX_PAGE``; fewer when their text is long),
        in the calling thread, read-only (R36 v4). The next page starts at the seq after
        the last one; a bad row ends a page before it and is ``CorruptLog`` as the first
        of the next."""
        agent = limits.agent_id(agent_id)
        first = since_seq(since)
        batch = self._read_events(agent, first, page_limit(limit))
        if batch.error is not None and not batch.events:
            raise batch.error
        return [(first + offset, event) for offset, event in enumerate(batch.events)]

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

    def has_owner(self, agent_id: str) -> bool:
        """Whether a live process owns agent ``agent_id``'s log now (R29): someone serves its
        posts. Reads only (a lock test on SQLite, the lease row on PostgreSQL)."""
        raise NotImplementedError

    def pending(self, agent_id: str, limit: int = 100) -> list[PendingPost]:
        """Agent ``agent_id``'s oldest ``limit`` unconsumed posts, by ``post_id`` (R35): what
        its next owner applies first. Reads only."""
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
        ``PostTimeout`` after ``timeout`` seconds (None: no limit, else at most
        ``watching.MAX_WAIT_SECONDS``) while it is pending. Reads in worker threads; the
        waits for one agent's posts in this event loop share one read per wake (R36 v4)."""
        receipt = _receipt(receipt)
        limit = wait_seconds(timeout)
        return await self._watching.outcome_waits(receipt.agent_id).wait(receipt, limit)

    async def watch(self, agent_id: str, since: int = 0) -> AsyncIterator[tuple[int, DurableEvent]]:
        """Agent ``agent_id``'s durable events ``(seq, event)`` from seq ``since`` on, in log
        order, then each one as it is appended, from any process and across takeovers;
        it never needs ownership nor blocks the writer (R36), and writes nothing: reads
        run in worker threads, one per wake for every watcher of the agent in this event
        loop (R36 v4, ``watching.EventFeed``). ``CorruptLog`` for a bad row."""
        agent = limits.agent_id(agent_id)
        first = since_seq(since)
        async with contextlib.aclosing(self._watching.follow(agent, first)) as events:
            async for item in events:
                yield item

    # ---------------------------------------- what a front door reads (R39, inbox_core.http)

    _token_dialect: TokenDialect

    def _connection(self, what: str) -> contextlib.AbstractContextManager[Any]:
        raise NotImplementedError

    def _look(self, what: str, read: Callable[[Directory, Any], T], absent: T) -> T:
        """``read(directory, conn)`` on a read-only connection (R36 v4: nothing created,
        migrated or written), ``directory`` the statements over the tables there are;
        ``absent`` when there are none."""
        raise NotImplementedError

    def agents(
        self,
        after: str | None = None,
        limit: int = 100,
        accept: Callable[[str], bool] | None = None,
    ) -> list[AgentSummary]:
        """Up to ``limit`` agents of the store (an event, an owner's row or a post) with an id
        after ``after``, in the database's order, that ``accept`` takes (all by default).
        Reads only."""
        first = None if after is None else limits.agent_id(after)
        most = _limit(limit)
        return self._look("list agents", lambda d, conn: d.agents(conn, first, most, accept), [])

    def pending_count(self, agent_id: str) -> int:
        """How many of agent ``agent_id``'s posts wait for its owner. Reads only."""
        agent = limits.agent_id(agent_id)
        return self._look("count posts", lambda d, conn: d.pending_posts(conn, agent), 0)

    def posted_command(self, receipt: Receipt) -> object:
        """The command a post holds, as stored (the text a producer wrote);
        ``UnknownReceipt`` when no such post is stored. Reads only."""
        receipt = _receipt(receipt)
        nothing: tuple[bool, object] = (False, None)
        found, command = self._look(
            "read a post",
            lambda d, conn: d.post_command(conn, receipt.agent_id, receipt.post_id),
            nothing,
        )
        if not found:
            raise UnknownReceipt(f"no post {receipt.post_id} for agent {receipt.agent_id!r}")
        return command

    @property
    def tokens(self) -> TokenTable:
        """The store's bearer tokens (``inbox_core.shell.tokens``): added and revoked on the
        writer's connection, looked up read-only (a server that may only read serves)."""
        return TokenTable(
            self._connection,
            self._token_dialect,
            lambda what, read: self._look(what, lambda _d, conn: read(conn), None),
        )


# ---------------------------------------------------------------------- SQLite


class SqliteStore(_Store):
    """The agents of one SQLite database file (``SqliteLog``'s file): posts, outcomes, watch.

    ``log(agent_id)`` is ``SqliteLog(path, agent_id=agent_id)``. Building a store
    writes nothing (R36 v4): a path that is no regular file (a device such as
    ``/dev/null``, a directory) is ``LogUnavailable`` at once, a file that is no
    inbox-core log ``IncompatibleLog`` (read-only), and the file is created, or
    migrated, by the first write (``post``, ``prune``, or ``candidates`` for a
    worker). The writes go through the store's own
    connection (``synchronous=FULL``: a post survives power loss once ``post``
    returned); ``outcome``, ``events``, ``wait`` and ``watch`` read through
    read-only connections (``SqliteReader``) and work for a user who may only
    read the file. Bad arguments raise ``InvalidInput``; every SQLite failure
    ``LogUnavailable`` (or ``IncompatibleLog`` for a file that is no inbox-core
    log), nothing written.
    """

    _token_dialect = SQLITE_TOKENS

    def __init__(self, path: str | os.PathLike[str], *, timeout: float = 5.0) -> None:
        super().__init__()
        self._path = database_path(path)
        self._timeout = timeout_seconds(timeout)
        exists = regular_or_absent(self._path)  # before anything is created beside it
        self._lock = threading.Lock()
        self._bell = sqlite_bell(self._path)
        self._conn: sqlite3.Connection | None = None  # the writer's: made by the first write
        self._closed = False
        reader = self._reader = SqliteReader.take(self._path, self._timeout)
        self._give_back = weakref.finalize(self, reader.give_back)
        self._watching = Watching(self._read_events, self._read_outcomes, self._wake)
        if exists:  # a file that is no inbox-core log: IncompatibleLog now, read-only
            reader.read(lambda _conn, _kind: None, absent=None)

    @property
    def path(self) -> str:
        return self._path

    def _errors(self, what: str) -> contextlib.AbstractContextManager[None]:
        return sqlite_errors(self._path, what, self._timeout)

    @contextlib.contextmanager
    def _connection(self, what: str) -> Iterator[sqlite3.Connection]:
        """The writer's connection; the first use checks, creates or migrates the file."""
        with self._lock, self._errors(what):
            if self._closed:
                raise LogUnavailable(f"SqliteStore {self._path!r} is closed")
            if self._conn is None:
                self._conn = self._open_writer()
            yield self._conn

    def _open_writer(self) -> sqlite3.Connection:
        SqliteLog(self._path, timeout=self._timeout).close()  # checks, creates or migrates
        conn = sqlite3.connect(
            self._path, timeout=self._timeout, isolation_level=None, check_same_thread=False
        )
        try:
            conn.execute("PRAGMA synchronous=FULL")
            sqlite_posts.create_posts(conn, self._path)
        except BaseException:
            conn.close()
            raise
        return conn

    def _reading(self) -> SqliteReader:
        if self._closed:
            raise LogUnavailable(f"SqliteStore {self._path!r} is closed")
        return self._reader

    def prepare(self) -> None:
        """Create the file and its tables, or migrate it, now (what the first write does):
        for producers in other languages that insert posts before anyone wrote."""
        with self._connection("prepare"):
            pass

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

    def has_owner(self, agent_id: str) -> bool:
        agent = limits.agent_id(agent_id)
        return bool(held_elsewhere(self._path, [agent]))

    def pending(self, agent_id: str, limit: int = 100) -> list[PendingPost]:
        agent, count = limits.agent_id(agent_id), _limit(limit)
        with self._connection("read posts") as conn:
            return sqlite_posts.pending(conn, agent, count)

    def _wake(self, key: str) -> Wake:
        return SqliteWake(self._path, key)

    def _read_events(self, agent_id: str, since: int, limit: int) -> Batch:
        def page(conn: sqlite3.Connection, kind: str) -> Batch:
            rows = sqlite_reading.event_rows(conn, kind, agent_id, since, limit)
            return decode_batch(since, rows, limit)

        return self._reading().read(page, absent=Batch(since))

    def _read_outcomes(self, agent_id: str, post_ids: Sequence[int]) -> dict[int, PostOutcome]:
        def found(conn: sqlite3.Connection, kind: str) -> dict[int, PostOutcome]:
            return sqlite_reading.outcomes(conn, kind, self._path, agent_id, post_ids)

        return self._reading().read(found, absent={})

    def _look(self, what: str, read: Callable[[Directory, Any], T], absent: T) -> T:
        def look(conn: sqlite3.Connection, kind: str) -> T:
            directory = sqlite_directory(conn, kind)
            return absent if directory is None else read(directory, conn)

        return self._reading().read(look, absent=absent)

    def close(self) -> None:
        """Close the connections (idempotent); watches and waits then end in
        ``LogUnavailable``."""
        with self._lock:
            self._closed = True
            conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()
        self._give_back()

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
_OUTCOMES: Final = (
    f"SELECT post_id, outcome, error, message FROM {PG_POSTS} "
    "WHERE agent_id = %(agent)s AND post_id = ANY(%(posts)s::bigint[])"
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
    ``log(agent_id)`` is ``PostgresLog(conninfo, agent_id)``. The tables are
    created by the first write (``post``, ``prune``, a worker's ``candidates``
    and ``renew``); ``outcome``, ``events``, ``wait`` and ``watch`` only read
    (R36 v4): on a database without the tables they find nothing (no events,
    ``UnknownReceipt``), and a role that may only read can use them. Every driver
    or server error is ``LogUnavailable``: a ``post`` that raises it may or may
    not have landed (the reply was lost); post again with the same ``key`` to know.
    """

    _token_dialect = PG_TOKENS

    def __init__(self, conninfo: str) -> None:
        super().__init__()
        source, _ = connection_source(conninfo)
        if source is None:
            raise InvalidInput("PostgresStore takes a libpq connection string")
        self._conninfo = source
        self._lock = threading.Lock()
        self._conn: psycopg.Connection[Any] | None = None
        self._closed = False
        self._watching = Watching(self._read_events, self._read_outcomes, self._wake)
        with self._connection("connect", write=False):
            pass

    @property
    def conninfo(self) -> str:
        return self._conninfo

    @contextlib.contextmanager
    def _connection(self, what: str, *, write: bool = True) -> Iterator[psycopg.Connection[Any]]:
        """The store's connection; for a ``write``, with the tables created (once per
        connection: a read never creates one, R36 v4)."""
        psycopg = psycopg_module()
        with self._lock:
            if self._closed:
                raise LogUnavailable("PostgresStore is closed")
            try:
                if self._conn is None or self._conn.closed:
                    self._conn = psycopg.connect(self._conninfo, autocommit=True)
                if write:
                    create_tables(self._conn)
                yield self._conn
            except psycopg.Error as error:
                raise LogUnavailable(
                    f"PostgresStore {what} failed: {type(error).__name__}: {error}"
                ) from error

    def prepare(self) -> None:
        """Create the tables now (what the first write does): for producers in other
        languages that insert posts before anyone wrote."""
        with self._connection("prepare"):
            pass

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

    def has_owner(self, agent_id: str) -> bool:
        args = {"agent": limits.agent_id(agent_id)}
        with self._connection("read owner") as conn:
            row = conn.execute(HOLDER, args).fetchone()
        return row is not None and row[0] is not None and float(row[3]) > 0

    def pending(self, agent_id: str, limit: int = 100) -> list[PendingPost]:
        args = {"agent": limits.agent_id(agent_id), "limit": _limit(limit)}
        with self._connection("read posts") as conn:
            rows = conn.execute(PENDING, args).fetchall()
        return [PendingPost(int(post_id), command) for post_id, command in rows]

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

    def _read_events(self, agent_id: str, since: int, limit: int) -> Batch:
        args = {"agent": agent_id, "since": since, "limit": limit}
        return decode_batch(since, self._read("read", _EVENTS, args), limit)

    def _read_outcomes(self, agent_id: str, post_ids: Sequence[int]) -> dict[int, PostOutcome]:
        rows = self._read("read outcomes", _OUTCOMES, {"agent": agent_id, "posts": post_ids})
        return {int(row[0]): outcome_from_row(*row[1:]) for row in rows}

    def _look(self, what: str, read: Callable[[Directory, Any], T], absent: T) -> T:
        undefined = psycopg_module().errors.UndefinedTable
        with self._connection(what, write=False) as conn:
            try:
                return read(PG_DIRECTORY, conn)
            except undefined:  # a table no writer made yet (autocommit: nothing to undo)
                directory = pg_directory(conn)
                return absent if directory is None else read(directory, conn)

    def _read(self, what: str, statement: str, args: dict[str, Any]) -> list[Any]:
        """A read's rows; none from a database whose tables no writer made yet."""
        undefined = psycopg_module().errors.UndefinedTable
        with self._connection(what, write=False) as conn:
            try:
                return conn.execute(statement, args).fetchall()
            except undefined:
                return []

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
