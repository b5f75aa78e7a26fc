"""What a front door reads and keeps in an SQLite store's file (R39): the statements of the
agent list (``stores.directory``) and the tokens table (``stores.tokens``)."""

from __future__ import annotations

import functools
import json
from typing import Any, Final

from inbox_core.shell.stores.directory import Directory, directory_page
from inbox_core.shell.stores.sqlite.schema import SQLITE_POSTS
from inbox_core.shell.stores.tokens import QUOTA_COLUMNS, TokenDialect

__all__ = ["SQLITE_DIRECTORY", "SQLITE_TOKENS", "sqlite_directory"]

_IN: Final = "agent_id IN (SELECT value FROM json_each(:ids))"
_NO_POSTS: Final = (
    "(SELECT NULL AS agent_id, NULL AS post_id, NULL AS outcome, NULL AS command WHERE 0)"
)


@functools.lru_cache(maxsize=8)
def _directory(events: str, agents: str, posts: str) -> Directory:
    return Directory(
        # text ids only (a BLOB sorts after all text); a cursor read as bytes (text that is
        # not UTF-8) is compared as the text it is
        page=directory_page(
            (events, agents, posts), "CAST(:after AS TEXT)", ":n", "agent_id < X'' AND "
        ),
        pending_one=f"SELECT count(*) FROM {posts} WHERE agent_id = :agent AND outcome IS NULL",
        pending_many=f"SELECT agent_id, count(*) FROM {posts} WHERE outcome IS NULL "
        f"AND {_IN} GROUP BY agent_id",
        work_many=f"SELECT agent_id FROM {agents} WHERE work = 1 AND {_IN}",
        command=f"SELECT command FROM {posts} WHERE post_id = :post AND agent_id = :agent",
        ids=lambda ids: json.dumps(ids, ensure_ascii=False),
    )


SQLITE_DIRECTORY: Final = _directory("events", "agents", SQLITE_POSTS)


def sqlite_directory(conn: Any, kind: str) -> Directory | None:
    """The statements over the tables an SQLite file of ``kind`` (``schema.classify``'s)
    has, None when it holds no agent at all."""
    if kind == "v1":  # one agent, "default", with work not known yet (as the migration says)
        events = "(SELECT 'default' AS agent_id FROM events LIMIT 1)"
    elif kind == "v2":
        events = "events"
    else:
        return None
    tables = {
        str(name)
        for (name,) in conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name IN ('agents', ?)",
            (SQLITE_POSTS,),
        )
    }
    agents = (
        "agents" if "agents" in tables else f"(SELECT DISTINCT agent_id, 1 AS work FROM {events})"
    )
    posts = SQLITE_POSTS if SQLITE_POSTS in tables else _NO_POSTS
    return _directory(events, agents, posts)


SQLITE_TOKENS: Final = TokenDialect(
    ddl="""CREATE TABLE IF NOT EXISTS inbox_core_tokens (
    name    TEXT PRIMARY KEY,
    hash    TEXT NOT NULL UNIQUE,
    scopes  TEXT NOT NULL,
    pattern TEXT NOT NULL,
    created TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
    agents_per_minute INTEGER,
    pending_per_agent INTEGER
)""",
    exists="SELECT EXISTS (SELECT 1 FROM pragma_table_info('inbox_core_tokens') "
    "WHERE name = 'pending_per_agent') "
    "FROM sqlite_master WHERE type = 'table' AND name = 'inbox_core_tokens'",
    add_quotas=(
        "ALTER TABLE inbox_core_tokens ADD COLUMN agents_per_minute INTEGER",
        "ALTER TABLE inbox_core_tokens ADD COLUMN pending_per_agent INTEGER",
    ),
    insert="INSERT INTO inbox_core_tokens "
    f"(name, hash, scopes, pattern, {QUOTA_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?) "
    "ON CONFLICT (name) DO NOTHING RETURNING name",
    select_all="SELECT {columns} FROM inbox_core_tokens ORDER BY name",
    select_hash="SELECT {columns} FROM inbox_core_tokens WHERE hash = ?",
    delete="DELETE FROM inbox_core_tokens WHERE name = ?",
)
