"""What a front door reads and keeps in a PostgreSQL store's database (R39): the statements
of the agent list (``stores.directory``) and the tokens table (``stores.tokens``)."""

from __future__ import annotations

from typing import Final

from inbox_core.shell.stores.directory import Directory, directory_page
from inbox_core.shell.stores.postgres.schema import PG_POSTS
from inbox_core.shell.stores.tokens import TOKEN_COLUMNS, TokenDialect

__all__ = ["PG_DIRECTORY", "PG_TOKENS"]

PG_DIRECTORY: Final = Directory(
    page=directory_page(("inbox_core_events", "inbox_core_owners", PG_POSTS), "%(after)s", "%(n)s"),
    pending_one=f"SELECT count(*) FROM {PG_POSTS} WHERE agent_id = %(agent)s AND outcome IS NULL",
    pending_many=f"SELECT agent_id, count(*) FROM {PG_POSTS} WHERE outcome IS NULL "
    "AND agent_id = ANY(%(ids)s) GROUP BY agent_id",
    work_many="SELECT agent_id FROM inbox_core_owners WHERE work IS NOT FALSE "
    "AND agent_id = ANY(%(ids)s)",
    command=f"SELECT command FROM {PG_POSTS} WHERE post_id = %(post)s AND agent_id = %(agent)s",
    ids=list,
)

PG_TOKENS: Final = TokenDialect(
    ddl="""CREATE TABLE IF NOT EXISTS inbox_core_tokens (
    name    text PRIMARY KEY,
    hash    text NOT NULL UNIQUE,
    scopes  text NOT NULL,
    pattern text NOT NULL,
    created timestamptz NOT NULL DEFAULT clock_timestamp()
)""",
    exists="SELECT 1 WHERE to_regclass('inbox_core_tokens') IS NOT NULL",
    insert="INSERT INTO inbox_core_tokens (name, hash, scopes, pattern) "
    "VALUES (%s, %s, %s, %s) ON CONFLICT (name) DO NOTHING RETURNING name",
    select_all=f"SELECT {TOKEN_COLUMNS} FROM inbox_core_tokens ORDER BY name",
    select_hash=f"SELECT {TOKEN_COLUMNS} FROM inbox_core_tokens WHERE hash = %s",
    delete="DELETE FROM inbox_core_tokens WHERE name = %s",
)
