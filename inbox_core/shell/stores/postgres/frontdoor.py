"""What a front door reads and keeps in a PostgreSQL store's database (R39): the statements
of the agent list (``stores.directory``) and the tokens table (``stores.tokens``)."""

from __future__ import annotations

import functools
from typing import Any, Final

from inbox_core.shell.stores.directory import Directory, directory_page
from inbox_core.shell.stores.postgres.schema import PG_POSTS
from inbox_core.shell.stores.tokens import QUOTA_COLUMNS, TokenDialect

__all__ = ["PG_DIRECTORY", "PG_TOKENS", "pg_directory"]

_IN: Final = "agent_id = ANY(%(ids)s)"
_TABLES: Final = ("inbox_core_events", "inbox_core_owners", PG_POSTS)


@functools.lru_cache(maxsize=8)
def _directory(events: str, owners: str, posts: str) -> Directory:
    return Directory(
        page=directory_page((events, owners, posts), "%(after)s", "%(n)s"),
        pending_one=f"SELECT count(*) FROM {posts} WHERE agent_id = %(agent)s AND outcome IS NULL",
        pending_many=f"SELECT agent_id, count(*) FROM {posts} WHERE outcome IS NULL "
        f"AND {_IN} GROUP BY agent_id",
        work_many=f"SELECT agent_id FROM {owners} WHERE work IS NOT FALSE AND {_IN}",
        command=f"SELECT command FROM {posts} WHERE post_id = %(post)s AND agent_id = %(agent)s",
        ids=list,
    )


PG_DIRECTORY: Final = _directory(*_TABLES)


def pg_directory(conn: Any) -> Directory | None:
    """The statements over the tables a PostgreSQL database has (``PG_DIRECTORY`` once a
    writer made them all), None when it has none."""
    found = conn.execute(
        "SELECT " + ", ".join("to_regclass(%s) IS NOT NULL" for _ in _TABLES), _TABLES
    ).fetchone()
    if not any(found):
        return None
    have_events, have_owners, have_posts = found
    events = (
        "inbox_core_events" if have_events else "(SELECT NULL::text AS agent_id WHERE false) AS e"
    )
    owners = (
        "inbox_core_owners"
        if have_owners
        else f"(SELECT DISTINCT agent_id, NULL::boolean AS work FROM {events}) AS o"
    )
    posts = (
        PG_POSTS
        if have_posts
        else "(SELECT NULL::text AS agent_id, NULL::bigint AS post_id, NULL::text AS outcome, "
        "NULL::text AS command WHERE false) AS p"
    )
    return _directory(events, owners, posts)


PG_TOKENS: Final = TokenDialect(
    ddl="""CREATE TABLE IF NOT EXISTS inbox_core_tokens (
    name    text PRIMARY KEY,
    hash    text NOT NULL UNIQUE,
    scopes  text NOT NULL,
    pattern text NOT NULL,
    created timestamptz NOT NULL DEFAULT clock_timestamp(),
    agents_per_minute integer,
    pending_per_agent integer
)""",
    exists="SELECT EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = "
    "to_regclass('inbox_core_tokens') AND attname = 'pending_per_agent' AND NOT attisdropped) "
    "WHERE to_regclass('inbox_core_tokens') IS NOT NULL",
    add_quotas=(
        "ALTER TABLE inbox_core_tokens ADD COLUMN IF NOT EXISTS agents_per_minute integer",
        "ALTER TABLE inbox_core_tokens ADD COLUMN IF NOT EXISTS pending_per_agent integer",
    ),
    insert=f"INSERT INTO inbox_core_tokens (name, hash, scopes, pattern, {QUOTA_COLUMNS}) "
    "VALUES (%s, %s, %s, %s, %s, %s) ON CONFLICT (name) DO NOTHING RETURNING name",
    select_all="SELECT {columns} FROM inbox_core_tokens ORDER BY name",
    select_hash="SELECT {columns} FROM inbox_core_tokens WHERE hash = %s",
    delete="DELETE FROM inbox_core_tokens WHERE name = %s",
)
