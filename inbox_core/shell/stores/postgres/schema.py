"""The PostgreSQL database behind ``PostgresLog`` and ``PostgresStore``: its tables, the
statements that touch them, and this process's connections to it.

The table layout is the one of ``inbox_core.shell.stores.postgres.log`` (and specs/shell.md);
the posts table and its triggers come from ``inbox_core.shell.stores.posts``.
Connections (``PgConnections``): one autocommit connection per connection string
and thread, shared by every ``PostgresLog`` of that database in this process, so a
worker serving a thousand agents holds a few connections, not a thousand.
"""

from __future__ import annotations

import importlib
import math
import weakref
from typing import TYPE_CHECKING, Any, Final

from inbox_core.errors import InvalidInput
from inbox_core.shell.stores.base import MAX_LEASE_SECONDS, MIN_LEASE_SECONDS
from inbox_core.shell.stores.connections import PerThread
from inbox_core.shell.stores.posts import create_table

if TYPE_CHECKING:
    import psycopg

__all__ = [
    "CHECKPOINTS",
    "CHECKPOINTS_DDL",
    "NOTIFY_CHANNEL",
    "PG_DDL",
    "PG_INSERT",
    "PG_POSTS",
    "DEFAULT_LEASE_SECONDS",
    "MAX_LEASE_SECONDS",
    "MIN_LEASE_SECONDS",
    "PgConnections",
    "connection_source",
    "create_tables",
    "lease_seconds",
    "psycopg_module",
]

# ------------------------------------------------------------------ the posts table (R35)

NOTIFY_CHANNEL: Final = "inbox_core"
"""PostgreSQL: the channel every change is notified on, in the changing transaction; the
payload is ``post:<agent>``, ``events:<agent>`` or ``outcome:<agent>``."""

PG_POSTS: Final = "inbox_core_posts"
PG_DDL: Final = (
    create_table(PG_POSTS, "postgres", "IF NOT EXISTS "),
    f"CREATE INDEX IF NOT EXISTS inbox_core_posts_pending ON {PG_POSTS} (agent_id, post_id) "
    "WHERE outcome IS NULL",
    f"""CREATE OR REPLACE FUNCTION inbox_core_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('{NOTIFY_CHANNEL}', TG_ARGV[0] || ':' || agent_id)
       FROM (SELECT DISTINCT agent_id FROM changed) AS c;
    RETURN NULL;
END $$""",
    f"CREATE OR REPLACE TRIGGER inbox_core_posted AFTER INSERT ON {PG_POSTS} "
    "REFERENCING NEW TABLE AS changed FOR EACH STATEMENT "
    "EXECUTE FUNCTION inbox_core_notify('post')",
    f"CREATE OR REPLACE TRIGGER inbox_core_decided AFTER UPDATE ON {PG_POSTS} "
    "REFERENCING NEW TABLE AS changed FOR EACH STATEMENT "
    "EXECUTE FUNCTION inbox_core_notify('outcome')",
    "CREATE OR REPLACE TRIGGER inbox_core_appended AFTER INSERT ON inbox_core_events "
    "REFERENCING NEW TABLE AS changed FOR EACH STATEMENT "
    "EXECUTE FUNCTION inbox_core_notify('events')",
)


PG_INSERT: Final = (
    f"INSERT INTO {PG_POSTS} (agent_id, command, key) VALUES (%(agent)s, %(command)s, %(key)s) "
    "ON CONFLICT (agent_id, key) DO NOTHING RETURNING post_id"
)
"""The one statement a producer runs (any language): ``post_id`` back, or no row when the
key was posted before (then read that post's id by ``agent_id`` and ``key``)."""

DEFAULT_LEASE_SECONDS: Final = 30.0

CHECKPOINTS_DDL: Final = """CREATE TABLE IF NOT EXISTS inbox_core_checkpoints (
    agent_id   text   NOT NULL,
    seq        bigint NOT NULL CHECK (seq >= 1),
    checkpoint text   NOT NULL,
    PRIMARY KEY (agent_id, seq)
)"""
"""R41: the owner's newest checkpoint of each agent, beside its log (never part of it)."""

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
    # R37 (a later column: ADD COLUMN keeps databases made before it)
    "ALTER TABLE inbox_core_owners ADD COLUMN IF NOT EXISTS work boolean",
    "CREATE INDEX IF NOT EXISTS inbox_core_owners_work ON inbox_core_owners (agent_id) "
    "WHERE work IS NOT FALSE",
    CHECKPOINTS_DDL,
)
# any constant: serializes concurrent CREATE TABLE IF NOT EXISTS (it can race on pg_type)
_CREATE_LOCK: Final = 0x1B0C_C0DE

TAKE: Final = """
INSERT INTO inbox_core_owners AS o (agent_id, epoch, owner, next_seq, lease_seconds, expires_at)
VALUES (%(agent)s, 1, %(owner)s, 0, %(lease)s,
        clock_timestamp() + %(lease)s * interval '1 second')
ON CONFLICT (agent_id) DO UPDATE
   SET epoch = o.epoch + 1, owner = EXCLUDED.owner, lease_seconds = EXCLUDED.lease_seconds,
       expires_at = EXCLUDED.expires_at
 WHERE o.owner IS NULL OR o.expires_at <= clock_timestamp()
RETURNING epoch, work
"""
# a second statement (a fresh snapshot, the row lock held): every append that
# committed before the takeover is counted
NEXT_SEQ: Final = """
UPDATE inbox_core_owners
   SET next_seq = (SELECT COALESCE(MAX(seq) + 1, 0) FROM inbox_core_events
                    WHERE agent_id = %(agent)s)
 WHERE agent_id = %(agent)s
RETURNING next_seq
"""
HOLDER: Final = """
SELECT owner, epoch, next_seq, EXTRACT(EPOCH FROM expires_at - clock_timestamp())::float8
  FROM inbox_core_owners WHERE agent_id = %(agent)s
"""
WRITE: Final = f"""
WITH part AS (
    SELECT * FROM unnest(%(agents)s::text[], %(epochs)s::bigint[], %(owners)s::text[],
                         %(nexts)s::bigint[], %(counts)s::bigint[], %(works)s::boolean[])
             AS p(agent_id, epoch, owner, next_seq, count, work)
), lease AS (
    UPDATE inbox_core_owners AS o
       SET next_seq = o.next_seq + part.count,
           expires_at = clock_timestamp() + o.lease_seconds * interval '1 second',
           work = COALESCE(part.work, o.work)
      FROM part
     WHERE o.agent_id = part.agent_id AND o.epoch = part.epoch AND o.owner = part.owner
       AND o.next_seq = part.next_seq
 RETURNING o.agent_id
), appended AS (
    INSERT INTO inbox_core_events (agent_id, seq, event)
    SELECT e.agent_id, e.seq, e.event
      FROM unnest(%(event_agents)s::text[], %(seqs)s::bigint[], %(events)s::text[])
           AS e(agent_id, seq, event)
      JOIN lease USING (agent_id)
    RETURNING 1
), decided AS (
    UPDATE {PG_POSTS} AS p
       SET outcome = t.outcome, error = t.error, message = t.message,
           decided_at = clock_timestamp()
      FROM unnest(%(post_agents)s::text[], %(post_ids)s::bigint[], %(outcomes)s::text[],
                  %(errors)s::text[], %(messages)s::text[])
           AS t(agent_id, post_id, outcome, error, message)
      JOIN lease USING (agent_id)
     WHERE p.post_id = t.post_id AND p.agent_id = t.agent_id AND p.outcome IS NULL
 RETURNING p.agent_id
)
SELECT lease.agent_id, (SELECT count(*) FROM decided WHERE decided.agent_id = lease.agent_id)
  FROM lease
"""
"""One statement (so one transaction) for a group of parts (R29, R35, R37): per agent, the
lease check (epoch, owner, the next seq), its renewal and the ``work`` flag, then the rows
and the posts' outcomes of the agents whose lease held. An agent it does not return was
fenced and got nothing written."""
SET_WORK: Final = """
UPDATE inbox_core_owners SET work = %(work)s
 WHERE agent_id = %(agent)s AND epoch = %(epoch)s AND owner = %(owner)s
"""
RENEW: Final = """
UPDATE inbox_core_owners
   SET expires_at = clock_timestamp() + lease_seconds * interval '1 second'
 WHERE agent_id = %(agent)s AND epoch = %(epoch)s AND owner = %(owner)s
"""
RELEASE: Final = """
UPDATE inbox_core_owners SET owner = NULL, expires_at = clock_timestamp()
 WHERE agent_id = %(agent)s AND epoch = %(epoch)s AND owner = %(owner)s
"""
RENEW_MANY: Final = """
UPDATE inbox_core_owners AS o
   SET expires_at = clock_timestamp() + o.lease_seconds * interval '1 second'
  FROM unnest(%(agents)s::text[], %(epochs)s::bigint[], %(owners)s::text[])
       AS t(agent_id, epoch, owner)
 WHERE o.agent_id = t.agent_id AND o.epoch = t.epoch AND o.owner = t.owner
RETURNING o.agent_id
"""
"""A worker's heartbeat (R37): every lease it holds renewed in one statement; an agent it
does not return was taken over."""


def _candidates(after: str) -> str:
    return f"""
SELECT agent_id FROM inbox_core_owners
 WHERE work IS NOT FALSE AND (owner IS NULL OR expires_at <= clock_timestamp()){after}
UNION
SELECT p.agent_id FROM {PG_POSTS} AS p
 WHERE p.outcome IS NULL{after} AND NOT EXISTS (
       SELECT 1 FROM inbox_core_owners AS o
        WHERE o.agent_id = p.agent_id AND o.owner IS NOT NULL
          AND o.expires_at > clock_timestamp())
ORDER BY agent_id LIMIT %(limit)s
"""


CANDIDATES: Final = _candidates("")
"""Placement (R37): agents with work (a pending post; an open turn, maintenance or waking
work recorded by ``work``, or not known) and no live lease, in the order of their ids."""
CANDIDATES_AFTER: Final = _candidates(" AND agent_id > %(after)s")
"""The same, after the id ``%(after)s`` (the next page)."""
READ: Final = (
    "SELECT seq, event FROM inbox_core_events WHERE agent_id = %(agent)s "
    "AND seq >= %(since)s AND seq < %(until)s ORDER BY seq"
)
CHECKPOINTS: Final = "inbox_core_checkpoints"
HAS_CHECKPOINTS: Final = f"SELECT to_regclass('{CHECKPOINTS}') IS NOT NULL"
CHECKPOINT_NEWEST: Final = (
    f"SELECT seq, checkpoint FROM {CHECKPOINTS} WHERE agent_id = %(agent)s "
    "ORDER BY seq DESC LIMIT 1"
)
CHECKPOINT_ALL: Final = (
    f"SELECT seq, checkpoint FROM {CHECKPOINTS} WHERE agent_id = %(agent)s ORDER BY seq"
)
WRITE_CHECKPOINTS: Final = f"""
WITH held AS (
    SELECT t.agent_id, t.seq, t.checkpoint
      FROM unnest(%(agents)s::text[], %(epochs)s::bigint[], %(owners)s::text[],
                  %(seqs)s::bigint[], %(texts)s::text[])
           AS t(agent_id, epoch, owner, seq, checkpoint)
      JOIN inbox_core_owners AS o
        ON o.agent_id = t.agent_id AND o.epoch = t.epoch AND o.owner = t.owner
), gone AS (
    DELETE FROM {CHECKPOINTS} AS c USING held
     WHERE c.agent_id = held.agent_id AND c.seq <> held.seq
)
INSERT INTO {CHECKPOINTS} (agent_id, seq, checkpoint)
SELECT agent_id, seq, checkpoint FROM held
ON CONFLICT (agent_id, seq) DO UPDATE SET checkpoint = EXCLUDED.checkpoint
RETURNING agent_id
"""
"""R41: one statement for the checkpoints of many agents, each written only while its
writer still holds the lease (epoch and owner), replacing the agent's others: one per
agent. An agent it does not return was taken over and got nothing written."""
PENDING: Final = f"""
SELECT post_id, CASE WHEN octet_length(command) <= %(most)s THEN command END,
       octet_length(command)
  FROM {PG_POSTS}
 WHERE agent_id = %(agent)s AND outcome IS NULL ORDER BY post_id LIMIT %(limit)s
"""
"""An agent's oldest pending posts; a command past ``%(most)s`` bytes is not read (its size
is: the row is rejected, R35 v4)."""


def psycopg_module() -> Any:
    try:
        return importlib.import_module("psycopg")  # optional: imported on first use
    except ImportError as error:  # pragma: no cover - the extra is installed in tests
        raise ImportError(
            "PostgresLog needs psycopg 3: pip install 'psycopg[binary]'"
            " (from the checkout: pip install -e '.[postgres]')"
        ) from error


_PREPARED: weakref.WeakSet[Any] = weakref.WeakSet()  # connections that created the tables


_COMPLETE: Final = f"""
SELECT to_regclass('inbox_core_events') IS NOT NULL
   AND to_regclass('{PG_POSTS}') IS NOT NULL
   AND to_regclass('inbox_core_checkpoints') IS NOT NULL
   AND EXISTS (SELECT 1 FROM pg_attribute
                WHERE attrelid = to_regclass('inbox_core_owners') AND attname = 'work'
                  AND NOT attisdropped)
"""
"""Whether every table (and the latest column) exists: then nothing is locked or created."""


def create_tables(conn: psycopg.Connection[Any]) -> None:
    """Create the tables if missing (idempotent, safe from many workers at once): events,
    owners, and the posts table with the triggers that notify (``inbox_core.shell.stores.posts``).
    A database that has them all is only read (the DDL would lock the tables every
    connection writes to)."""
    if conn in _PREPARED:
        return
    row = conn.execute(_COMPLETE).fetchone()
    if row is None or not row[0]:
        with conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (_CREATE_LOCK,))
            for statement in _CREATE:
                conn.execute(statement)
            row = conn.execute("SELECT to_regclass(%s) IS NULL", (PG_POSTS,)).fetchone()
            if row is not None and row[0]:  # the posts table and its triggers (R35, R36)
                for statement in PG_DDL:
                    conn.execute(statement)
    _PREPARED.add(conn)


def lease_seconds(value: object) -> float:
    if (
        not isinstance(value, (int, float))
        or isinstance(value, bool)
        or not math.isfinite(value)
        or not MIN_LEASE_SECONDS <= value <= MAX_LEASE_SECONDS
    ):
        raise InvalidInput(
            f"lease_seconds must be a number of seconds in [{MIN_LEASE_SECONDS:g}, "
            f"{MAX_LEASE_SECONDS:g}], got {value!r:.80}"
        )
    return float(value)


def connection_source(conninfo: object) -> tuple[str | None, psycopg.Connection[Any] | None]:
    """``(conninfo, None)`` for a libpq string (checked, not connected), ``(None, conn)`` for
    a shared connection; anything else is ``InvalidInput``."""
    psycopg = psycopg_module()
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


class PgConnections(PerThread["psycopg.Connection[Any]"]):
    """This process's autocommit connections to one database (by connection string), one
    per thread (``connections.PerThread``), its tables created when one is opened, one
    reopened once broken (a server restart), shared by every ``PostgresLog`` of it."""

    __slots__ = ()

    @classmethod
    def take(cls, conninfo: str) -> PgConnections:
        return cls._share(conninfo, lambda: cls(conninfo))

    def open(self) -> psycopg.Connection[Any]:
        conn: psycopg.Connection[Any] = psycopg_module().connect(str(self.key), autocommit=True)
        try:
            create_tables(conn)
        except BaseException:
            conn.close()
            raise
        return conn

    def usable(self, conn: psycopg.Connection[Any]) -> bool:
        return not conn.closed

    def let_go(self, conn: psycopg.Connection[Any]) -> None:
        """Close another thread's connection if no statement runs on it (its lock is
        free: libpq's connection must not be finished under a running query); a busy one
        is closed by its last reference, when that thread is done with it."""
        if conn.lock.acquire(blocking=False):
            try:
                conn.close()
            finally:
                conn.lock.release()

    def __repr__(self) -> str:  # the connection string may hold a password
        return f"PgConnections(users={self.users}, threads={len(self._conns)})"
