"""The SQLite statements of posts (R35): the table, a post, its consumption, its outcome.

Shared by ``SqliteLog`` (the owner consumes posts inside its append
transaction) and ``SqliteStore`` (any process posts and reads outcomes). The
layout comes from ``inbox_core.shell.posts``.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import Final

from inbox_core.errors import LogFenced
from inbox_core.shell.posts import (
    SQLITE_DDL,
    SQLITE_INSERT,
    SQLITE_NOW,
    SQLITE_POSTS,
    Consumed,
    PendingPost,
    PostOutcome,
    outcome_from_row,
)

__all__ = ["consume", "create_posts", "has_posts", "insert_post", "outcomes", "pending"]

_PENDING: Final = (
    f"SELECT post_id, command FROM {SQLITE_POSTS} "
    "WHERE agent_id = ? AND outcome IS NULL ORDER BY post_id LIMIT ?"
)
_CONSUME: Final = (
    f"UPDATE {SQLITE_POSTS} SET outcome = ?, error = ?, message = ?, decided_at = {SQLITE_NOW} "
    "WHERE post_id = ? AND agent_id = ? AND outcome IS NULL"
)
_BY_KEY: Final = f"SELECT post_id FROM {SQLITE_POSTS} WHERE agent_id = ? AND key = ?"
_IDS_PER_STATEMENT: Final = 500  # well under SQLite's limit of bound parameters


def has_posts(conn: sqlite3.Connection) -> bool:
    row = conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (SQLITE_POSTS,)
    ).fetchone()
    return row is not None


def create_posts(conn: sqlite3.Connection) -> None:
    """Create the posts table and its index if missing (one ``BEGIN IMMEDIATE``)."""
    if has_posts(conn):
        return
    conn.execute("BEGIN IMMEDIATE")
    try:
        for statement in SQLITE_DDL:
            conn.execute(statement)
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise


def pending(conn: sqlite3.Connection, agent_id: str, limit: int) -> list[PendingPost]:
    rows = conn.execute(_PENDING, (agent_id, limit)).fetchall()
    return [PendingPost(int(post_id), command) for post_id, command in rows]


def consume(conn: sqlite3.Connection, agent_id: str, consumed: Sequence[Consumed]) -> None:
    """Mark the posts decided, inside the caller's transaction; ``LogFenced`` (the caller
    rolls back) if one of them was not pending: only a second consumer could do that."""
    if not consumed:
        return
    cursor = conn.executemany(_CONSUME, ((*c.columns(), c.post_id, agent_id) for c in consumed))
    if cursor.rowcount != len(consumed):
        raise LogFenced(
            f"agent {agent_id!r}: {len(consumed) - cursor.rowcount} of the posts it applied "
            "were consumed by another writer; nothing was written"
        )


def insert_post(conn: sqlite3.Connection, agent_id: str, text: str, key: str | None) -> int:
    """Insert one post in one transaction (or find the key's earlier post): its id."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        row = conn.execute(SQLITE_INSERT, (agent_id, text, key)).fetchone()
        if row is None:  # the key was posted before: its first post's receipt
            row = conn.execute(_BY_KEY, (agent_id, key)).fetchone()
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    return int(row[0])


def outcomes(
    conn: sqlite3.Connection, agent_id: str, post_ids: Sequence[int]
) -> dict[int, PostOutcome]:
    """The stored outcomes of those of the agent's posts ``post_ids`` that exist (one
    statement per 500 ids: the waits of many posters read together, R36 v4)."""
    found: dict[int, PostOutcome] = {}
    for start in range(0, len(post_ids), _IDS_PER_STATEMENT):
        chunk = list(post_ids[start : start + _IDS_PER_STATEMENT])
        rows = conn.execute(
            f"SELECT post_id, outcome, error, message FROM {SQLITE_POSTS} "
            f"WHERE agent_id = ? AND post_id IN ({', '.join('?' * len(chunk))})",
            (agent_id, *chunk),
        )
        for post_id, outcome, error, message in rows:
            found[int(post_id)] = outcome_from_row(outcome, error, message)
    return found


def prune(conn: sqlite3.Connection, older_than: float) -> int:
    """Delete decided posts (outcomes and keys) decided more than ``older_than`` s ago."""
    cursor = conn.execute(
        f"DELETE FROM {SQLITE_POSTS} WHERE outcome IS NOT NULL AND decided_at < "
        "strftime('%Y-%m-%dT%H:%M:%fZ', 'now', ?)",
        (f"-{older_than:.6f} seconds",),
    )
    return int(cursor.rowcount)
