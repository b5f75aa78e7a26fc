"""``PostgresStore``: the agents of one PostgreSQL database, from any process and machine
(R35-R37, R39).

It hands out the agents' logs (``store.log(agent_id)``: ``PostgresLog``), takes
posts (one ``INSERT`` whose trigger notifies the owner in the same transaction),
renews a worker's leases in one statement, and reads: outcomes, pages of events,
candidates, what a front door lists. What it answers like every store is
``StoreReads``'s. See specs/shell.md section 12.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, Final

from inbox_core import limits
from inbox_core.errors import InvalidInput, LogFenced
from inbox_core.events import DurableEvent
from inbox_core.shell.stores.base import ClosesOnExit, Tail
from inbox_core.shell.stores.directory import AgentSummary, Directory
from inbox_core.shell.stores.errors import LogUnavailable
from inbox_core.shell.stores.postgres import posts as pg_posts
from inbox_core.shell.stores.postgres.frontdoor import PG_DIRECTORY, PG_TOKENS, pg_directory
from inbox_core.shell.stores.postgres.listen import pg_listener
from inbox_core.shell.stores.postgres.schema import (
    CANDIDATES,
    CANDIDATES_AFTER,
    HOLDER,
    PG_INSERT,
    PG_POSTS,
    RENEW_MANY,
    connection_source,
    create_tables,
    psycopg_module,
)
from inbox_core.shell.stores.posts import (
    PendingPost,
    PostOutcome,
    Receipt,
    encode_post,
    outcome_from_row,
    post_key,
)
from inbox_core.shell.stores.reads import StoreReads, T, checked_limit, prune_age
from inbox_core.shell.stores.tokens import TokenTable
from inbox_core.shell.stores.wakes import Wake
from inbox_core.shell.stores.watching import BATCH_EVENTS, Batch, decode_batch

if TYPE_CHECKING:
    import psycopg

    from inbox_core.commands import Command
    from inbox_core.shell.stores.postgres.log import PostgresLog

__all__ = ["PostgresStore"]


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


class PostgresStore(ClosesOnExit):
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

    leases = True  # ownership is a lease the worker renews

    def __init__(self, conninfo: str) -> None:
        source, _ = connection_source(conninfo)
        if source is None:
            raise InvalidInput("PostgresStore takes a libpq connection string")
        self._conninfo = source
        self._lock = threading.Lock()
        self._conn: psycopg.Connection[Any] | None = None
        self._closed = False
        self._reads = StoreReads(
            self,
            read_events=self._read_events,
            read_outcomes=self._read_outcomes,
            wake=self._wake,
            candidate_page=self._candidate_page,
            agent_text=limits.agent_id,
            cursor=lambda agent_id: agent_id,
            connection=self._connection,
            look=self._look,
            token_dialect=PG_TOKENS,
        )
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

    def _look(self, what: str, read: Callable[[Directory, Any], T], absent: T) -> T:
        """``read`` on the connection without creating a table (R36 v4), over the tables
        the database has."""
        undefined = psycopg_module().errors.UndefinedTable
        with self._connection(what, write=False) as conn:
            try:
                return read(PG_DIRECTORY, conn)
            except undefined:  # a table no writer made yet (autocommit: nothing to undo)
                directory = pg_directory(conn)
                return absent if directory is None else read(directory, conn)

    def prepare(self) -> None:
        """Create the tables now (what the first write does): for producers in other
        languages that insert posts before anyone wrote."""
        with self._connection("prepare"):
            pass

    def log(self, agent_id: str, **options: Any) -> PostgresLog:
        """Agent ``agent_id``'s log in this database (options as ``PostgresLog``'s)."""
        from inbox_core.shell.stores.postgres.log import PostgresLog  # noqa: PLC0415

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
        seconds = prune_age(older_than)
        with self._connection("prune") as conn:
            return int(conn.execute(_PRUNE, {"seconds": seconds}).rowcount)

    def _candidate_page(self, after: str | None, limit: int) -> tuple[list[Any], str | None]:
        """The stored ids of one page after ``after`` (the statement leaves out the held)."""
        with self._connection("read") as conn:
            if after is None:
                rows = conn.execute(CANDIDATES, {"limit": limit}).fetchall()
            else:
                rows = conn.execute(CANDIDATES_AFTER, {"limit": limit, "after": after}).fetchall()
        stored = [agent for (agent,) in rows]
        return stored, (stored[-1] if len(stored) == limit else None)

    def has_owner(self, agent_id: str) -> bool:
        rows = self._read("read owner", HOLDER, {"agent": limits.agent_id(agent_id)})
        return bool(rows) and rows[0][0] is not None and float(rows[0][3]) > 0

    def pending(self, agent_id: str, limit: int = 100) -> list[PendingPost]:
        agent, count = limits.agent_id(agent_id), checked_limit(limit)
        undefined = psycopg_module().errors.UndefinedTable
        with self._connection("read posts", write=False) as conn:
            try:
                return pg_posts.pending(conn, agent, count)
            except undefined:  # no writer made the tables yet: nothing pending
                return []

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
        try:
            with self._connection("renew") as conn:
                renewed = {str(agent) for (agent,) in conn.execute(RENEW_MANY, args).fetchall()}
        except LogUnavailable:
            if len(held) == 1:
                raise
            return lost | _renew_each(held)
        return lost | {log.agent_id for log in held if log.agent_id not in renewed}

    def _wake(self, key: str) -> Wake:
        return pg_listener(self._conninfo).wake(key)

    def _read_events(self, agent_id: str, since: int, limit: int) -> Batch:
        args = {"agent": agent_id, "since": since, "limit": limit}
        return decode_batch(since, self._read("read", _EVENTS, args), limit)

    def read_tail(self, agent_id: str) -> Tail:
        """The agent's newest checkpoint and the events from the one it follows on (R41);
        reads only (no events, no checkpoint from a database no writer made yet)."""
        from inbox_core.shell.stores.postgres.log import read_tail  # noqa: PLC0415

        agent = limits.agent_id(agent_id)
        undefined = psycopg_module().errors.UndefinedTable
        with self._connection("read", write=False) as conn:
            try:
                return read_tail(conn, agent, has_table=False)
            except undefined:
                return Tail(None, 0, [])

    def _read_outcomes(self, agent_id: str, post_ids: Sequence[int]) -> dict[int, PostOutcome]:
        rows = self._read("read outcomes", _OUTCOMES, {"agent": agent_id, "posts": post_ids})
        return {int(row[0]): outcome_from_row(*row[1:]) for row in rows}

    def _read(self, what: str, statement: str, args: dict[str, Any]) -> list[Any]:
        """A read's rows; none from a database whose tables no writer made yet."""
        undefined = psycopg_module().errors.UndefinedTable
        with self._connection(what, write=False) as conn:
            try:
                return conn.execute(statement, args).fetchall()
            except undefined:
                return []

    # what every store answers alike (``reads.StoreReads``; documented by ``base.Store``)

    def outcome(self, receipt: Receipt) -> PostOutcome:
        return self._reads.outcome(receipt)

    async def wait(self, receipt: Receipt, timeout: float | None = None) -> PostOutcome:
        return await self._reads.wait(receipt, timeout)

    def watch(self, agent_id: str, since: int = 0) -> AsyncIterator[tuple[int, DurableEvent]]:
        return self._reads.watch(agent_id, since)

    def events(
        self, agent_id: str, since: int = 0, limit: int = BATCH_EVENTS
    ) -> list[tuple[int, DurableEvent]]:
        return self._reads.events(agent_id, since, limit)

    def candidates(self, limit: int, *, after: str | None = None) -> list[str]:
        return self._reads.candidates(limit, after=after)

    def work_wake(self) -> Wake:
        return self._reads.work_wake()

    def agents(
        self,
        after: str | None = None,
        limit: int = 100,
        accept: Callable[[str], bool] | None = None,
    ) -> list[AgentSummary]:
        return self._reads.agents(after, limit, accept)

    def pending_count(self, agent_id: str) -> int:
        return self._reads.pending_count(agent_id)

    def posted_command(self, receipt: Receipt) -> object:
        return self._reads.posted_command(receipt)

    @property
    def tokens(self) -> TokenTable:
        return self._reads.tokens()

    def close(self) -> None:
        """Close the connection (idempotent)."""
        with self._lock:
            self._closed = True
            conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()

    def __repr__(self) -> str:
        return "PostgresStore(<conninfo>)"


def _renew_each(logs: Sequence[Any]) -> set[str]:
    """The leases of ``logs`` renewed one at a time, after their one statement failed (R35
    v4: a row of one agent, say a lease a foreign writer made no interval can hold, stops
    no other renewal): the agents whose own renewal failed or was fenced. ``LogUnavailable``
    when every one failed so (the store is down: nobody is let go for it)."""
    failed: set[str] = set()
    down: LogUnavailable | None = None
    for log in logs:
        try:
            log.renew()
        except LogFenced:
            failed.add(log.agent_id)
        except LogUnavailable as error:
            failed.add(log.agent_id)
            down = error
    if down is not None and len(failed) == len(logs):
        raise down
    return failed
