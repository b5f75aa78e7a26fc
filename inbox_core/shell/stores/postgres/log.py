"""``PostgresLog``: many agents' logs in one PostgreSQL database, shared by many workers (R29).

Needs the optional driver (psycopg 3): ``pip install -e '.[postgres]'`` from the checkout.
The layout is a contract for other ports and for operators (specs/shell.md,
section 9)::

    CREATE TABLE inbox_core_events (
        agent_id text   NOT NULL,
        seq      bigint NOT NULL CHECK (seq >= 0),
        event    text   NOT NULL,          -- compact {"type","data"} JSON (event_to_json)
        PRIMARY KEY (agent_id, seq)
    );
    CREATE TABLE inbox_core_owners (       -- one lease row per agent ever acquired
        agent_id      text             PRIMARY KEY,
        epoch         bigint           NOT NULL,  -- +1 at every acquire
        owner         text,                       -- the holder's token; NULL once released
        next_seq      bigint           NOT NULL,  -- the seq the holder writes next
        lease_seconds double precision NOT NULL,
        expires_at    timestamptz      NOT NULL,  -- the server's clock, never a worker's
        work          boolean                     -- R37: needs an owner (NULL: not known)
    );

Ownership is a lease with an epoch. ``acquire`` takes the row when it is
free, released or lapsed, bumping ``epoch``; ``append`` is one statement (so
one transaction) that renews the lease and inserts the rows only if this
object's ``(epoch, owner)`` still hold the row and ``next_seq`` is the seq
this object expects; otherwise it inserts nothing and raises ``LogFenced``.
The epoch is the fence (R29): a worker that was paused past its lease
(SIGSTOP, a long GC, a VM migration) and taken over meanwhile is fenced on its
next append; one whose lapsed lease nobody took writes on and renews it (its
row lock orders the append against any concurrent ``acquire``, which either
bumps the epoch first, fencing the append, or reads the log after it). So an
idle agent needs no heartbeat to stay writable, only to stay *owned*: a dead
worker's agents can be taken over once its leases lapse, and ``renew()`` (a
heartbeat every ``lease_seconds / 3`` or so) keeps a live worker's agents from
being taken. Lease time is measured by the database server's clock, so worker
clocks do not matter.
"""

from __future__ import annotations

import os
import socket
import uuid
import weakref
from collections.abc import Hashable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Final

from inbox_core import limits
from inbox_core.errors import InboxCoreError, LogFenced, LogOwned
from inbox_core.events import DurableEvent
from inbox_core.shell.stores.base import ClosesOnExit, Tail
from inbox_core.shell.stores.checkpoints import DEFAULT_EVERY
from inbox_core.shell.stores.checkpoints import checkpoint_every as checked_every
from inbox_core.shell.stores.errors import LogUnavailable, fenced
from inbox_core.shell.stores.postgres import posts as pg_posts
from inbox_core.shell.stores.postgres import schema as sql
from inbox_core.shell.stores.postgres.listen import PgWake, pg_listener
from inbox_core.shell.stores.postgres.schema import (
    DEFAULT_LEASE_SECONDS,
    MAX_LEASE_SECONDS,
    PgConnections,
    connection_source,
    create_tables,
    lease_seconds,
    psycopg_module,
)
from inbox_core.shell.stores.posts import Consumed, PendingPost
from inbox_core.shell.stores.rows import decode_rows, encode_event, seq_range
from inbox_core.shell.stores.writers import Part, plain_part, work_after, write_failed

if TYPE_CHECKING:
    import psycopg

__all__ = [
    "DEFAULT_LEASE_SECONDS",
    "MAX_LEASE_SECONDS",
    "PostgresLog",
    "create_tables",
    "read_tail",
    "stored_checkpoints",
]


_WRITE_ARGUMENTS: Final = (
    *("agents", "epochs", "owners", "nexts", "counts", "works"),
    *("event_agents", "seqs", "events"),
    *("post_agents", "post_ids", "outcomes", "errors", "messages"),
)


_CHECKPOINT_ARGUMENTS: Final = ("agents", "epochs", "owners", "seqs", "texts")
_Ready = tuple[int, "PostgresLog", list[str], Part, bool | None]
"""A part about to be written: its index, log, encoded events, the part, its ``work``."""


class _PostsTaken(Exception):
    """A group write found a post consumed by someone else: roll the group back."""


class PostgresLog(ClosesOnExit):
    """Agent ``agent_id``'s durable log in a PostgreSQL database (psycopg 3).

    ``conninfo`` is a libpq connection string: the log uses this process's
    connection to that database for the calling thread (``PgConnections``,
    shared by every ``PostgresLog`` of the database in that thread and
    reopened after a lost connection), so the object may be used from any
    thread and logs of one database can share one transaction (``write_group``:
    a worker's group commit, R37). Or it is an open psycopg ``Connection`` in
    autocommit mode that the caller shares between logs and closes. The tables
    are created on first use. Building the object connects but takes no
    ownership; ``read()`` never needs ownership and never blocks a writer (MVCC).

    ``checkpoint_every`` (R41): about how many events apart its owner writes a
    checkpoint beside the log (None: never; ``read_tail`` still reads them).

    Bad arguments raise ``InvalidInput`` here, before anything connects: an
    agent id ``limits.agent_id`` refuses (the same limits as every store),
    a ``lease_seconds`` that is not a finite number in (0, a day], a
    ``conninfo`` that is neither a libpq string nor an autocommit connection.

    Errors: ``LogOwned`` (``acquire`` while another live lease holds the
    agent), ``LogFenced`` (``append``/``renew`` without the lease; nothing
    written), ``CorruptLog`` (a bad stored row, naming its seq), and
    ``LogUnavailable`` for every driver or server error (``__cause__`` is
    psycopg's), e.g. a server restart: nothing is half-written, since every
    append is one statement. A garbage-collected object does not release
    (that would need a statement at an arbitrary point); its lease lapses.
    """

    def __init__(
        self,
        conninfo: str | psycopg.Connection[Any],
        agent_id: str,
        *,
        lease_seconds: float = DEFAULT_LEASE_SECONDS,
        checkpoint_every: int | None = DEFAULT_EVERY,
    ) -> None:
        self._agent_id = limits.agent_id(agent_id)
        self._lease_seconds = _lease(lease_seconds)
        self._every = checked_every(checkpoint_every)
        self._conninfo: str | None
        self._shared: psycopg.Connection[Any] | None
        self._conninfo, self._shared = connection_source(conninfo)
        self._epoch: int | None = None
        self._token: str | None = None
        self._next = 0
        self._work: bool | None = None
        self._closed = False
        self._pool: PgConnections | None = None
        if self._conninfo is not None:
            pool = self._pool = PgConnections.take(self._conninfo)
            self._give_back = weakref.finalize(self, pool.give_back)
        try:
            with self._errors("connect"):
                conn = self._connection()
                if self._shared is not None:
                    create_tables(conn)
        except BaseException:
            self.close()
            raise

    # ----------------------------------------------------------------- views

    @property
    def agent_id(self) -> str:
        return self._agent_id

    @property
    def lease_seconds(self) -> float:
        return self._lease_seconds

    @property
    def checkpoint_every(self) -> int | None:
        return self._every

    @property
    def epoch(self) -> int | None:
        """The epoch of this object's lease, or None when it holds none."""
        return self._epoch

    @property
    def token(self) -> str | None:
        """This object's owner token while it holds the lease."""
        return self._token

    @property
    def owned(self) -> bool:
        """Whether this object believes it holds the lease (the server decides at each append)."""
        return self._token is not None

    @property
    def connection(self) -> psycopg.Connection[Any]:
        """The connection in use by the calling thread (for inspection and tests), shared
        with every log of the database in this thread: leave no transaction open on it."""
        with self._errors("connect"):
            return self._connection()

    @property
    def group_key(self) -> Hashable:
        """Logs of one database (one connection string, or one shared connection) share a
        group commit (``write_group``)."""
        return self._conninfo if self._shared is None else id(self._shared)

    # ------------------------------------------------------------- ownership

    def acquire(self) -> None:
        """Take the lease when free, released or lapsed (``epoch`` + 1), or raise ``LogOwned``."""
        if self._token is not None:
            raise LogOwned(f"this PostgresLog already owns agent {self._agent_id!r}")
        token = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex}"
        args = {"agent": self._agent_id, "owner": token, "lease": self._lease_seconds}
        with self._errors("acquire"):
            conn = self._connection()
            with conn.transaction():
                row = conn.execute(sql.TAKE, args).fetchone()
                if row is None:
                    holder = conn.execute(sql.HOLDER, args).fetchone()
                    who, left = (holder[0], holder[3]) if holder else ("?", 0.0)
                    raise LogOwned(
                        f"agent {self._agent_id!r} is owned by {who} (lease ends in "
                        f"{max(left, 0.0):.1f} s); nothing was written"
                    )
                epoch, work = int(row[0]), row[1]
                next_row = conn.execute(sql.NEXT_SEQ, args).fetchone()
        assert next_row is not None
        self._epoch, self._token, self._next = epoch, token, int(next_row[0])
        self._work = None if work is None else bool(work)

    def renew(self) -> None:
        """Extend the lease by ``lease_seconds`` from now; ``LogFenced`` if taken over."""
        if self._token is None:
            raise fenced("PostgresLog", self._agent_id, "it holds no lease")
        with self._errors("renew"):
            renewed = self._connection().execute(sql.RENEW, self._args()).rowcount
        if renewed != 1:
            self._lose()
            raise fenced("PostgresLog", self._agent_id, "its lease was taken over")

    def release(self) -> None:
        """Give the lease back at once (idempotent); appends raise ``LogFenced`` until ``acquire``.

        Local ownership is dropped first: if the server cannot be reached
        (``LogUnavailable``), the lease lapses by itself.
        """
        if self._token is None:
            return
        args = self._args()
        self._lose()
        with self._errors("release"):
            self._connection().execute(sql.RELEASE, args)

    def _lose(self) -> None:
        self._epoch = self._token = None

    def _args(self) -> dict[str, Any]:
        return {"agent": self._agent_id, "epoch": self._epoch, "owner": self._token}

    # ---------------------------------------------------------------- events

    def append(self, events: Sequence[DurableEvent], *, consumed: Sequence[Consumed] = ()) -> None:
        """One statement: renew the lease and insert the rows, only if this object still owns it.

        ``consumed`` (R35): posts decided by the commands that caused ``events``,
        marked in the same transaction (so a post is applied exactly once). The
        lease row's ``work`` (R37) follows the events (``work_after``).
        """
        if self._token is None:
            raise fenced("PostgresLog", self._agent_id, "it never acquired, or released")
        if not events and not consumed:
            return
        (error,) = self.write_group([Part(self, events, consumed)])
        if error is not None:
            raise error

    def write_work(self, work: bool) -> None:
        """Record whether the agent needs an owner (R37), if the database says otherwise."""
        if self._token is None:
            raise fenced("PostgresLog", self._agent_id, "it never acquired, or released")
        if work == self._work:
            return
        with self._errors("append"):
            done = self._connection().execute(sql.SET_WORK, {**self._args(), "work": work})
        if done.rowcount != 1:
            why = self._why_fenced(self._next)
            self._lose()
            raise fenced("PostgresLog", self._agent_id, why)
        self._work = work

    def write_group(self, parts: Sequence[Part]) -> list[BaseException | None]:
        """Write the parts of logs of this database in one statement (``postgres_schema.WRITE``:
        a group commit). A part whose lease check fails writes nothing and gets ``LogFenced``;
        if the statement fails, whatever the error (or a post was consumed by someone else),
        each part is tried alone, so one bad part fails alone (R35 v4, R37), and a part that
        fails alone is tried once more with its rejections' text in ASCII (``plain_part``).
        Returns each part's error (typed), None once durable."""
        results: list[BaseException | None] = [None] * len(parts)
        ready: list[_Ready] = []
        for index, part in enumerate(parts):
            log = part.log
            try:
                if not isinstance(log, PostgresLog) or log.group_key != self.group_key:
                    raise InboxCoreError(f"{log!r} is not a log of this database")
                if log._token is None:
                    raise fenced("PostgresLog", log._agent_id, "it never acquired, or released")
                texts = [encode_event(event) for event in part.events]
            except Exception as error:
                results[index] = error
                continue
            work = part.work if part.work is not None else work_after(part.events, log._work)
            ready.append((index, log, texts, part, work))
        if not ready:
            return results
        psycopg = psycopg_module()
        try:
            with self._errors("append"):
                held = self._statement(ready)
        except Exception as error:  # any error: a part's text, a value, the database
            if len(ready) > 1:
                for index, log, _, part, _ in ready:
                    (results[index],) = log.write_group([part])
                return results
            index, log, _, part, _ = ready[0]
            plain = None if isinstance(error, _PostsTaken) else plain_part(part)
            if plain is not None:
                (results[index],) = log.write_group([plain])
            elif isinstance(error, _PostsTaken):
                results[index] = LogFenced(
                    f"agent {log._agent_id!r}: a post it applied was consumed by "
                    "another writer; nothing was written"
                )
            elif isinstance(error.__cause__, psycopg.errors.UniqueViolation):
                log._lose()  # someone wrote at our seq: only a writer bypassing the lease
                results[index] = fenced("PostgresLog", log._agent_id, "its seq is taken")
            else:
                results[index] = write_failed(f"PostgresLog for agent {log._agent_id!r}", error)
            return results
        for index, log, texts, _, work in ready:
            if log._agent_id in held:
                log._next += len(texts)
                log._work = work
            else:
                why = log._why_fenced(log._next)
                log._lose()
                results[index] = fenced("PostgresLog", log._agent_id, why)
        return results

    def _statement(self, ready: list[_Ready]) -> set[str]:
        """Run ``WRITE`` for ``ready``; the agents whose lease held (their rows are in)."""
        args: dict[str, list[Any]] = {key: [] for key in _WRITE_ARGUMENTS}
        expected: dict[str, int] = {}
        for _, log, texts, part, work in ready:
            agent = log._agent_id
            args["agents"].append(agent)
            args["epochs"].append(log._epoch)
            args["owners"].append(log._token)
            args["nexts"].append(log._next)
            args["counts"].append(len(texts))
            args["works"].append(work)
            args["event_agents"].extend([agent] * len(texts))
            args["seqs"].extend(range(log._next, log._next + len(texts)))
            args["events"].extend(texts)
            for post in part.consumed:
                outcome, error, message = post.columns()
                args["post_agents"].append(agent)
                args["post_ids"].append(post.post_id)
                args["outcomes"].append(outcome)
                args["errors"].append(error)
                args["messages"].append(message)
            expected[agent] = len(part.consumed)
        conn = self._connection()
        if not args["post_ids"]:  # one autocommitted statement
            return {str(agent) for agent, _ in conn.execute(sql.WRITE, args).fetchall()}
        with conn.transaction():  # the post counts are checked before the commit
            rows = conn.execute(sql.WRITE, args).fetchall()
            if any(int(count) != expected[str(agent)] for agent, count in rows):
                raise _PostsTaken
        return {str(agent) for agent, _ in rows}

    def _why_fenced(self, expected: int) -> str:
        try:
            row = self._connection().execute(sql.HOLDER, {"agent": self._agent_id}).fetchone()
        except Exception:  # best effort: the message only
            return "the lease check failed"
        if row is None:  # pragma: no cover - the row is never deleted
            return "its lease row is gone"
        owner, epoch, next_seq, left = row
        if epoch != self._epoch or owner != self._token:
            return f"taken over (epoch {epoch}, owner {owner})"
        if next_seq != expected:
            return f"expected to write seq {expected}, the log's next seq is {next_seq}"
        return f"its lease lapsed {-left:.1f} s ago"

    def read(self, since: int = 0, until: int | None = None) -> list[DurableEvent]:
        """Decode the agent's rows in ``seq`` order from ``since`` on (before ``until``); a
        gap or a bad row raises ``CorruptLog``."""
        first, end = seq_range(since, until)
        args = {"agent": self._agent_id, "since": first, "until": end}
        with self._errors("read"):
            rows = self._connection().execute(sql.READ, args).fetchall()
        return decode_rows(rows, first)

    def read_tail(self) -> Tail:
        """The newest checkpoint and the events from the one it follows on (R41)."""
        with self._errors("read"):
            return read_tail(self._connection(), self._agent_id, has_table=True)

    def checkpoints(self) -> list[tuple[object, object]]:
        """Every stored ``(seq, checkpoint)`` of the agent (R41), as stored."""
        with self._errors("read"):
            return stored_checkpoints(self._connection(), self._agent_id)

    def write_checkpoints(
        self, items: Sequence[tuple[Any, int, str]]
    ) -> list[BaseException | None]:
        """As the owner, store each ``(log, seq, text)`` (logs of this database) as its
        agent's one checkpoint, in one statement conditional on each lease
        (``WRITE_CHECKPOINTS``); a log whose lease was taken over writes nothing
        (``LogFenced``)."""
        results: list[BaseException | None] = [None] * len(items)
        args: dict[str, list[Any]] = {key: [] for key in _CHECKPOINT_ARGUMENTS}
        for index, (log, seq, text) in enumerate(items):
            if not isinstance(log, PostgresLog) or log.group_key != self.group_key:
                results[index] = InboxCoreError(f"{log!r} is not a log of this database")
                continue
            if log._token is None:
                results[index] = fenced("PostgresLog", log._agent_id, "it holds no lease")
                continue
            row = (log._agent_id, log._epoch, log._token, seq, text)
            for key, value in zip(_CHECKPOINT_ARGUMENTS, row, strict=True):
                args[key].append(value)
        if not args["agents"]:
            return results
        try:
            with self._errors("write a checkpoint"), self._held() as conn:  # from its thread
                rows = conn.execute(sql.WRITE_CHECKPOINTS, args).fetchall()
        except Exception as error:
            return [error if result is None else result for result in results]
        held = {str(agent) for (agent,) in rows}
        for index, (log, _, _) in enumerate(items):
            if results[index] is None and log._agent_id not in held:
                results[index] = fenced("PostgresLog", log._agent_id, "its lease was taken over")
        return results

    def pending_posts(self, limit: int) -> list[PendingPost]:
        """The agent's oldest unconsumed posts (R35), by ``post_id``; needs no ownership."""
        with self._errors("read posts"):
            return pg_posts.pending(self._connection(), self._agent_id, limit)

    def post_wake(self) -> PgWake:
        """What the owner awaits between posts (R36): a notification of a post for this agent
        (one ``LISTEN`` connection per database and event loop), or the slow poll. Call inside
        the event loop."""
        conninfo = self._conninfo
        if conninfo is None:  # a shared connection: listen with its parameters
            conninfo = self._connection().info.dsn
        return pg_listener(conninfo).wake(f"post:{self._agent_id}")

    def __len__(self) -> int:
        with self._errors("count"):
            row = (
                self._connection()
                .execute(
                    "SELECT COUNT(*) FROM inbox_core_events WHERE agent_id = %(agent)s",
                    {"agent": self._agent_id},
                )
                .fetchone()
            )
        assert row is not None
        return int(row[0])

    # ------------------------------------------------------------ connection

    def _connection(self) -> psycopg.Connection[Any]:
        """The calling thread's connection (reopened once broken), or the shared one."""
        if self._closed:
            raise LogUnavailable(f"PostgresLog for agent {self._agent_id!r} is closed")
        if self._shared is not None:
            return self._shared
        assert self._pool is not None
        return self._pool.connection()

    @contextmanager
    def _held(self) -> Iterator[psycopg.Connection[Any]]:
        """``_connection`` for a background thread: a share of the connections is held
        while it is used (``PerThread.held``)."""
        if self._shared is not None or self._pool is None:
            yield self._connection()
            return
        with self._pool.held() as conn:
            yield conn

    @contextmanager
    def _errors(self, what: str) -> Iterator[None]:
        """Every psycopg error becomes ``LogUnavailable`` (typed, the driver's error chained)."""
        psycopg = psycopg_module()
        try:
            yield
        except psycopg.Error as error:
            raise LogUnavailable(
                f"PostgresLog {what} for agent {self._agent_id!r} failed: "
                f"{type(error).__name__}: {error}"
            ) from error

    def close(self) -> None:
        """Release the lease (best effort) and give the connections back (idempotent)."""
        if self._closed:
            return
        try:
            self.release()
        except LogUnavailable:
            pass  # the lease lapses by itself
        finally:
            self._closed = True
            if self._pool is not None:
                self._pool = None
                self._give_back()

    def __repr__(self) -> str:
        state = (
            "closed" if self._closed else f"owned, epoch {self._epoch}" if self._token else "open"
        )
        return f"PostgresLog(agent_id={self._agent_id!r}, {state})"


_lease: Final = lease_seconds


def read_tail(conn: psycopg.Connection[Any], agent_id: str, *, has_table: bool) -> Tail:
    """Agent ``agent_id``'s newest checkpoint and the events from the one it follows on
    (R41): two statements, the checkpoint first (the events it follows were durable before
    it was written, and the log only grows). ``has_table`` False: look for the table first
    (a reader creates nothing, R36 v4)."""
    stored: str | None = None
    first = 0
    if has_table or _has_checkpoints(conn):
        row = conn.execute(sql.CHECKPOINT_NEWEST, {"agent": agent_id}).fetchone()
        if row is not None:
            stored = row[1]
            if type(row[0]) is int and 1 <= row[0] <= limits.MAX_SAFE_INTEGER:
                first = row[0] - 1
    args = {"agent": agent_id, "since": first, "until": limits.MAX_SAFE_INTEGER}
    rows = conn.execute(sql.READ, args).fetchall()
    return Tail(stored, first, decode_rows(rows, first))


def stored_checkpoints(conn: psycopg.Connection[Any], agent_id: str) -> list[tuple[object, object]]:
    """Every stored ``(seq, checkpoint)`` of the agent (none without the table)."""
    if not _has_checkpoints(conn):
        return []
    return [(seq, text) for seq, text in conn.execute(sql.CHECKPOINT_ALL, {"agent": agent_id})]


def _has_checkpoints(conn: psycopg.Connection[Any]) -> bool:
    row = conn.execute(sql.HAS_CHECKPOINTS).fetchone()
    return bool(row and row[0])


if TYPE_CHECKING:
    from inbox_core.shell.stores.base import EventLog
    from inbox_core.shell.stores.writers import GroupLog

    def _is_event_log(log: PostgresLog) -> EventLog:
        return log  # mypy: PostgresLog satisfies the EventLog protocol

    def _is_group_log(log: PostgresLog) -> GroupLog:
        return log  # mypy: and joins a group commit
