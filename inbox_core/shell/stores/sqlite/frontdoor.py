"""What a front door reads and keeps in an SQLite store's file (R39): the statements of the
agent list (``stores.directory``) and the tokens table (``stores.tokens``)."""

from __future__ import annotations

import json
from typing import Final

from inbox_core.shell.stores.directory import Directory, directory_page
from inbox_core.shell.stores.sqlite.schema import SQLITE_POSTS
from inbox_core.shell.stores.tokens import TOKEN_COLUMNS, TokenDialect

__all__ = ["SQLITE_DIRECTORY", "SQLITE_TOKENS"]

SQLITE_DIRECTORY: Final = Directory(
    page=directory_page(("events", "agents", SQLITE_POSTS), ":after", ":n"),
    pending_one=f"SELECT count(*) FROM {SQLITE_POSTS} WHERE agent_id = :agent AND outcome IS NULL",
    pending_many=f"SELECT agent_id, count(*) FROM {SQLITE_POSTS} WHERE outcome IS NULL "
    "AND agent_id IN (SELECT value FROM json_each(:ids)) GROUP BY agent_id",
    work_many="SELECT agent_id FROM agents WHERE work = 1 "
    "AND agent_id IN (SELECT value FROM json_each(:ids))",
    command=f"SELECT command FROM {SQLITE_POSTS} WHERE post_id = :post AND agent_id = :agent",
    ids=lambda ids: json.dumps(ids, ensure_ascii=False),
)
SQLITE_TOKENS: Final = TokenDialect(
    ddl="""CREATE TABLE IF NOT EXISTS inbox_core_tokens (
    name    TEXT PRIMARY KEY,
    hash    TEXT NOT NULL UNIQUE,
    scopes  TEXT NOT NULL,
    pattern TEXT NOT NULL,
    created TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
)""",
    exists="SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'inbox_core_tokens'",
    insert="INSERT INTO inbox_core_tokens (name, hash, scopes, pattern) VALUES (?, ?, ?, ?) "
    "ON CONFLICT (name) DO NOTHING RETURNING name",
    select_all=f"SELECT {TOKEN_COLUMNS} FROM inbox_core_tokens ORDER BY name",
    select_hash=f"SELECT {TOKEN_COLUMNS} FROM inbox_core_tokens WHERE hash = ?",
    delete="DELETE FROM inbox_core_tokens WHERE name = ?",
)
