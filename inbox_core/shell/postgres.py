"""``PostgresLog``: many agents' logs in one PostgreSQL database, shared by many workers (R29).

Needs the optional driver: ``pip install 'inbox-core[postgres]'`` (psycopg 3).
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
        expires_at    timestamptz      NOT NULL   -- the server's clock, never a worker's
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

import importlib
import math
import os
import socket
import uuid
import weakref
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from types import TracebackType
from typing import TYPE_CHECKING, Any, Final

from inbox_core import limits
from inbox_core.errors import InvalidInput, LogOwned
from inbox_core.events import DurableEvent
from inbox_core.shell.logs import LogUnavailable, decode_rows, encode_event, fenced
from inbox_core.shell.posts import PG_DDL, PG_POSTS, Consumed, PendingPost
from inbox_core.shell.wakes import PgWake, pg_listener

if TYPE_CHECKING:
    import psycopg

__all__ = ["DEFAULT_LEASE_SECONDS", "MAX_LEASE_SECONDS", "PostgresLog", "create_tables"]

DEFAULT_LEASE_SECONDS: Final = 30.0
MAX_LEASE_SECONDS: Final = 86_400.0
"""A day: a longer lease would leave a dead worker's agents unserved for longer than that."""

_CREATE: Final = (
    """
    CREATE TABLE IF NOT EXISTS inbox_core_events (
        agent_id text   NOT NULL,
        seq      bigint NOT NULL CHECK (seq >= 0),
        event    text   NOT NULL,
        PRIMARY KEY (agent_id, seq)
    )""",
    """
    CREATE TABLE IF NOT EXISTS inbox_core_owners (
        agent_id      text             PRIMARY KEY,
        epoch         bigint           NOT NULL,
        owner         text,
        next_seq      bigint           NOT NULL,
        lease_seconds double precision NOT NULL,
        expires_at    timestamptz      NOT NULL
    )""",
)
# any constant: serializes concurrent CREATE TABLE IF NOT EXISTS (it can race on pg_type)
_CREATE_LOCK: Final = 0x1B0C_C0DE

_TAKE: Final = """
INSERT INTO inbox_core_owners AS o (agent_id, epoch, owner, next_seq, lease_seconds, expires_at)
VALUES (%(agent)s, 1, %(owner)s, 0, %(lease)s,
        clock_timestamp() + %(lease)s * interval '1 second')
ON CONFLICT (agent_id) DO UPDATE
   SET epoch = o.epoch + 1, owner = EXCLUDED.owner, lease_seconds = EXCLUDED.lease_seconds,
       expires_at = EXCLUDED.expires_at
 WHERE o.owner IS NULL OR o.expires_at <= clock_timestamp()
RETURNING epoch
"""
# a second statement (a fresh snapshot, the row lock held): every append that
# committed before the takeover is counted
_NEXT_SEQ: Final = """
UPDATE inbox_core_owners
   SET next_seq = (SELECT COALESCE(MAX(seq) + 1, 0) FROM inbox_core_events
                    WHERE agent_id = %(agent)s)
 WHERE agent_id = %(agent)s
RETURNING next_seq
"""
_HOLDER: Final = """
SELECT owner, epoch, next_seq, EXTRACT(EPOCH FROM expires_at - clock_timestamp())::float8
  FROM inbox_core_owners WHERE agent_id = %(agent)s
"""
_APPEND: Final = """
WITH lease AS (
    UPDATE inbox_core_owners
       SET next_seq = next_seq + %(count)s,
           expires_at = clock_timestamp() + lease_seconds * interval '1 second'
     WHERE agent_id = %(agent)s AND epoch = %(epoch)s AND owner = %(owner)s
       AND next_seq = %(next)s
 RETURNING agent_id
)
INSERT INTO inbox_core_events (agent_id, seq, event)
SELECT lease.agent_id, %(next)s + t.ord - 1, t.event
  FROM lease, unnest(%(events)s::text[]) WITH ORDINALITY AS t(event, ord)
"""
_RENEW: Final = """
UPDATE inbox_core_owners
   SET expires_at = clock_timestamp() + lease_seconds * interval '1 second'
 WHERE agent_id = %(agent)s AND epoch = %(epoch)s AND owner = %(owner)s
"""
_RELEASE: Final = """
UPDATE inbox_core_owners SET owner = NULL, expires_at = clock_timestamp()
 WHERE agent_id = %(agent)s AND epoch = %(epoch)s AND owner = %(owner)s
"""
_READ: Final = "SELECT seq, event FROM inbox_core_events WHERE agent_id = %(agent)s ORDER BY seq"
# R35: the lease check of an append that consumes posts and appends nothing
_HOLD: Final = """
UPDATE inbox_core_owners
   SET expires_at = clock_timestamp() + lease_seconds * interval '1 second'
 WHERE agent_id = %(agent)s AND epoch = %(epoch)s AND owner = %(owner)s AND next_seq = %(next)s
"""
_CONSUME: Final = f"""
UPDATE {PG_POSTS} AS p
   SET outcome = t.outcome, error = t.error, message = t.message, decided_at = clock_timestamp()
  FROM unnest(%(ids)s::bigint[], %(outcomes)s::text[], %(errors)s::text[], %(messages)s::text[])
       AS t(post_id, outcome, error, message)
 WHERE p.post_id = t.post_id AND p.agent_id = %(agent)s AND p.outcome IS NULL
"""
_PENDING: Final = f"""
SELECT post_id, command FROM {PG_POSTS}
 WHERE agent_id = %(agent)s AND outcome IS NULL ORDER BY post_id LIMIT %(limit)s
"""


def _psycopg() -> Any:
    try:
        return importlib.import_module("psycopg")  # optional: imported on first use
    except ImportError as error:  # pragma: no cover - the extra is installed in tests
        raise ImportError(
            "PostgresLog needs psycopg 3: pip install 'inbox-core[postgres]'"
        ) from error


_PREPARED: weakref.WeakSet[Any] = weakref.WeakSet()  # connections that created the tables


def create_tables(conn: psycopg.Connection[Any]) -> None:
    """Create the tables if missing (idempotent, safe from many workers at once): events,
    owners, and the posts table with the triggers that notify (``inbox_core.shell.posts``)."""
    if conn in _PREPARED:
        return
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (_CREATE_LOCK,))
        for statement in _CREATE:
            conn.execute(statement)
        row = conn.execute("SELECT to_regclass(%s) IS NULL", (PG_POSTS,)).fetchone()
        if row is not None and row[0]:  # the posts table and its triggers (R35, R36)
            for statement in PG_DDL:
                conn.execute(statement)
    _PREPARED.add(conn)


def _lease(value: object) -> float:
    if (
        not isinstance(value, (int, float))
        or isinstance(value, bool)
        or not math.isfinite(value)
        or not 0 < value <= MAX_LEASE_SECONDS
    ):
        raise InvalidInput(
            f"lease_seconds must be a number of seconds in (0, {MAX_LEASE_SECONDS:g}], "
            f"got {value!r:.80}"
        )
    return float(value)


def _connection_source(conninfo: object) -> tuple[str | None, psycopg.Connection[Any] | None]:
    """``(conninfo, None)`` for a libpq string (checked, not connected), ``(None, conn)`` for
    a shared connection; anything else is ``InvalidInput``."""
    psycopg = _psycopg()
    if isinstance(conninfo, str):
        if "\x00" in conninfo:  # libpq would stop reading at it
            raise InvalidInput("conninfo must not contain NUL")
        try:
            psycopg.conninfo.conninfo_to_dict(conninfo)
        except psycopg.Error as error:
            raise InvalidInput(
                f"conninfo is not a libpq connection string: {str(error).strip()}"
            ) from None
        return conninfo, None
    if isinstance(conninfo, psycopg.Connection):
        if not conninfo.autocommit:
            raise InvalidInput("a shared connection must be in autocommit mode")
        return None, conninfo
    raise InvalidInput(
        "conninfo must be a libpq connection string or an open psycopg Connection, "
        f"got {type(conninfo).__name__}"
    )


class PostgresLog:
    """Agent ``agent_id``'s durable log in a PostgreSQL database (psycopg 3).

    ``conninfo`` is a libpq connection string (the log opens, owns and, after
    a lost connection, reopens its own autocommit connection) or an open
    psycopg ``Connection`` in autocommit mode to share between many logs of
    one thread (one worker serving many agents: every call is synchronous and
    leaves no transaction open, so sharing is safe; the caller closes it).
    The tables are created on first use. Building the object connects but
    takes no ownership; ``read()`` never needs ownership and never blocks a
    writer (MVCC).

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
    ) -> None:
        self._agent_id = limits.agent_id(agent_id)
        self._lease_seconds = _lease(lease_seconds)
        self._conninfo: str | None
        self._conn: psycopg.Connection[Any] | None
        self._conninfo, self._conn = _connection_source(conninfo)
        if self._conn is not None:
            with self._errors("create tables"):
                create_tables(self._conn)
        self._epoch: int | None = None
        self._token: str | None = None
        self._next = 0
        self._closed = False
        with self._errors("connect"):
            self._connection()

    # ----------------------------------------------------------------- views

    @property
    def agent_id(self) -> str:
        return self._agent_id

    @property
    def lease_seconds(self) -> float:
        return self._lease_seconds

    @property
    def epoch(self) -> int | None:
        """The epoch of this object's lease, or None when it holds none."""
        return self._epoch

    @property
    def owned(self) -> bool:
        """Whether this object believes it holds the lease (the server decides at each append)."""
        return self._token is not None

    @property
    def connection(self) -> psycopg.Connection[Any]:
        """The connection in use (for inspection and tests)."""
        return self._connection()

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
                row = conn.execute(_TAKE, args).fetchone()
                if row is None:
                    holder = conn.execute(_HOLDER, args).fetchone()
                    who, left = (holder[0], holder[3]) if holder else ("?", 0.0)
                    raise LogOwned(
                        f"agent {self._agent_id!r} is owned by {who} (lease ends in "
                        f"{max(left, 0.0):.1f} s); nothing was written"
                    )
                epoch = int(row[0])
                next_row = conn.execute(_NEXT_SEQ, args).fetchone()
        assert next_row is not None
        self._epoch, self._token, self._next = epoch, token, int(next_row[0])

    def renew(self) -> None:
        """Extend the lease by ``lease_seconds`` from now; ``LogFenced`` if taken over."""
        if self._token is None:
            raise fenced("PostgresLog", self._agent_id, "it holds no lease")
        with self._errors("renew"):
            renewed = self._connection().execute(_RENEW, self._args()).rowcount
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
            self._connection().execute(_RELEASE, args)

    def _lose(self) -> None:
        self._epoch = self._token = None

    def _args(self) -> dict[str, Any]:
        return {"agent": self._agent_id, "epoch": self._epoch, "owner": self._token}

    # ---------------------------------------------------------------- events

    def append(self, events: Sequence[DurableEvent], *, consumed: Sequence[Consumed] = ()) -> None:
        """One statement: renew the lease and insert the rows, only if this object still owns it.

        ``consumed`` (R35): posts decided by the commands that caused ``events``,
        marked in the same transaction (so a post is applied exactly once).
        """
        if self._token is None:
            raise fenced("PostgresLog", self._agent_id, "it never acquired, or released")
        texts = [encode_event(event) for event in events]
        if not texts and not consumed:
            return
        args = {**self._args(), "next": self._next, "count": len(texts), "events": texts}
        psycopg = _psycopg()
        try:
            with self._errors("append"):
                if consumed:
                    inserted = len(texts) if self._consume(args, consumed) else -1
                else:
                    inserted = self._connection().execute(_APPEND, args).rowcount
        except LogUnavailable as error:
            if isinstance(error.__cause__, psycopg.errors.UniqueViolation):
                self._lose()  # someone wrote at our seq: only a writer that bypassed the lease
                raise fenced("PostgresLog", self._agent_id, "its seq is taken") from None
            raise
        if inserted != len(texts):
            if inserted > 0:  # pragma: no cover - one statement inserts all rows or none
                raise LogUnavailable(f"append inserted {inserted} of {len(texts)} rows")
            expected = self._next
            why = self._why_fenced(expected)
            self._lose()
            raise fenced("PostgresLog", self._agent_id, why)
        self._next += len(texts)

    def _consume(self, args: dict[str, Any], consumed: Sequence[Consumed]) -> bool:
        """Append and mark the posts in one transaction; False (nothing written) if fenced."""
        columns = [c.columns() for c in consumed]
        marks = {
            "agent": self._agent_id,
            "ids": [c.post_id for c in consumed],
            "outcomes": [outcome for outcome, _, _ in columns],
            "errors": [error for _, error, _ in columns],
            "messages": [message for _, _, message in columns],
        }
        conn = self._connection()
        with conn.transaction():
            if args["events"]:
                held = conn.execute(_APPEND, args).rowcount == len(args["events"])
            else:
                held = conn.execute(_HOLD, args).rowcount == 1
            # a post consumed by someone else: only a writer that bypassed the lease
            if held and conn.execute(_CONSUME, marks).rowcount == len(consumed):
                return True
            raise _psycopg().Rollback()
        return False

    def _why_fenced(self, expected: int) -> str:
        try:
            row = self._connection().execute(_HOLDER, {"agent": self._agent_id}).fetchone()
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

    def read(self) -> list[DurableEvent]:
        """Decode the agent's rows in ``seq`` order; a gap or a bad row raises ``CorruptLog``."""
        with self._errors("read"):
            rows = self._connection().execute(_READ, {"agent": self._agent_id}).fetchall()
        return decode_rows(rows)

    def pending_posts(self, limit: int) -> list[PendingPost]:
        """The agent's oldest unconsumed posts (R35), by ``post_id``; needs no ownership."""
        with self._errors("read posts"):
            rows = (
                self._connection()
                .execute(_PENDING, {"agent": self._agent_id, "limit": limit})
                .fetchall()
            )
        return [PendingPost(int(post_id), command) for post_id, command in rows]

    def post_wake(self) -> PgWake:
        """What the owner awaits between posts (R36): a notification of a post for this agent
        (its own ``LISTEN`` connection), or the slow poll. Call inside the event loop."""
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
        """The connection; an own one that broke (server restart) is reopened."""
        if self._closed:
            raise LogUnavailable(f"PostgresLog for agent {self._agent_id!r} is closed")
        current = self._conn
        if current is not None and (self._conninfo is None or not current.closed):
            return current
        assert self._conninfo is not None
        conn: psycopg.Connection[Any] = _psycopg().connect(self._conninfo, autocommit=True)
        self._conn = conn
        create_tables(conn)
        return conn

    @contextmanager
    def _errors(self, what: str) -> Iterator[None]:
        """Every psycopg error becomes ``LogUnavailable`` (typed, the driver's error chained)."""
        psycopg = _psycopg()
        try:
            yield
        except psycopg.Error as error:
            raise LogUnavailable(
                f"PostgresLog {what} for agent {self._agent_id!r} failed: "
                f"{type(error).__name__}: {error}"
            ) from error

    def close(self) -> None:
        """Release the lease (best effort) and close an own connection (idempotent)."""
        if self._closed:
            return
        try:
            self.release()
        except LogUnavailable:
            pass  # the lease lapses by itself
        finally:
            self._closed = True
            if self._conninfo is not None and self._conn is not None:
                self._conn.close()
            self._conn = None

    def __enter__(self) -> PostgresLog:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        state = (
            "closed" if self._closed else f"owned, epoch {self._epoch}" if self._token else "open"
        )
        return f"PostgresLog(agent_id={self._agent_id!r}, {state})"


if TYPE_CHECKING:
    from inbox_core.shell.logs import EventLog

    def _is_event_log(log: PostgresLog) -> EventLog:
        return log  # mypy: PostgresLog satisfies the EventLog protocol
