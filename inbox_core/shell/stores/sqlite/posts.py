"""The SQLite statements of posts (R35): the table, a post, its consumption, its outcome.

Shared by ``SqliteLog`` (the owner consumes posts inside its append
transaction) and ``SqliteStore`` (any process posts and reads outcomes). The
layout comes from ``inbox_core.shell.stores.posts``, the DDL from ``sqlite.schema``.

Rows are written by any producer (R35 v4): a cell may hold a BLOB where text
belongs, or text that is not valid UTF-8, which ``sqlite3`` refuses to hand
over (a whole query fails on one such cell). So every cell a producer writes is
read as bytes here and decoded in Python, one row at a time: such a row is one
agent's problem at most, never a failed query.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import Final

from inbox_core import limits
from inbox_core.errors import InvalidInput, LogFenced
from inbox_core.shell.stores.errors import LogUnavailable
from inbox_core.shell.stores.posts import (
    SQLITE_NOW,
    Consumed,
    PendingPost,
    PostOutcome,
    Unreadable,
    outcome_from_row,
)
from inbox_core.shell.stores.sqlite.schema import (
    SQLITE_DDL,
    SQLITE_INSERT,
    SQLITE_OBJECTS,
    SQLITE_POSTS,
    check_table,
)

__all__ = [
    "agent_text",
    "candidate_page",
    "consume",
    "create_posts",
    "has_posts",
    "insert_post",
    "outcomes",
    "pending",
]

# A post of agent ?1 is a row whose agent_id is the text ?1, or (a producer's binding
# mistake) the BLOB of its UTF-8 bytes: such a row is consumed, as a DecodeError. Two
# ordered index searches merged, so a backlog is never sorted.
_PENDING_COLUMNS: Final = (
    "SELECT post_id, typeof(agent_id), typeof(command), length(command), "
    "CASE WHEN length(command) <= ?3 THEN CAST(command AS BLOB) END "
    f"FROM {SQLITE_POSTS} WHERE outcome IS NULL AND agent_id = "
)
_PENDING: Final = (
    f"{_PENDING_COLUMNS}?1 UNION ALL {_PENDING_COLUMNS}CAST(?1 AS BLOB) ORDER BY 1 LIMIT ?2"
)
_CONSUME: Final = (
    f"UPDATE {SQLITE_POSTS} SET outcome = ?, error = ?, message = ?, decided_at = {SQLITE_NOW} "
    "WHERE post_id = ?4 AND agent_id IN (?5, CAST(?5 AS BLOB)) AND outcome IS NULL"
)
_BY_KEY: Final = f"SELECT post_id FROM {SQLITE_POSTS} WHERE agent_id = ? AND key = ?"
_IDS_PER_STATEMENT: Final = 500  # well under SQLite's limit of bound parameters
_OBJECTS: Final = (
    f"SELECT count(*) FROM sqlite_master WHERE name IN ({', '.join('?' * len(SQLITE_OBJECTS))})"
)

# Placement (R37): agents with work, in the order of their ids' bytes (SQLite compares
# text with memcmp), from a cursor on (two merged index searches), each id read as bytes.
# Text ids only: a BLOB sorts after every text, so BLOB ids are read apart and merged in.
_WORKING: Final = "SELECT agent_id FROM agents WHERE work = 1 AND typeof(agent_id) = 'text'"
_POSTING: Final = (
    f"SELECT agent_id FROM {SQLITE_POSTS} WHERE outcome IS NULL AND typeof(agent_id) = 'text'"
)
_AFTER: Final = " AND agent_id > CAST(?2 AS TEXT)"


def _candidates(after: str) -> str:
    return (
        f"SELECT CAST(agent_id AS BLOB) FROM ({_WORKING}{after} UNION {_POSTING}{after} "
        "ORDER BY agent_id LIMIT ?1)"
    )


_CANDIDATES: Final = _candidates("")
_CANDIDATES_AFTER: Final = _candidates(_AFTER)
_BLOB_AGENTS: Final = (
    f"SELECT DISTINCT agent_id FROM {SQLITE_POSTS} WHERE outcome IS NULL AND agent_id >= X''"
)


def has_posts(conn: sqlite3.Connection, path: str) -> bool:
    """Whether the file has the posts table; ``IncompatibleLog`` for a table of that name
    that is not ours."""
    return check_table(conn, path, SQLITE_POSTS)


def create_posts(conn: sqlite3.Connection, path: str) -> None:
    """Create the posts table, its index and its triggers where missing (one ``BEGIN
    IMMEDIATE``); ``IncompatibleLog``, untouched, for a posts table that is not ours."""
    has_posts(conn, path)
    if conn.execute(_OBJECTS, SQLITE_OBJECTS).fetchone()[0] == len(SQLITE_OBJECTS):
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
    rows = conn.execute(_PENDING, (agent_id, limit, limits.MAX_DOCUMENT_SIZE)).fetchall()
    return [_pending_post(*row) for row in rows]


def _pending_post(
    post_id: int, agent_type: str, command_type: str, length: int, raw: bytes | None
) -> PendingPost:
    """A row as the owner sees it: its command's text, or why it has none (``Unreadable``)."""
    command: str | Unreadable
    if agent_type != "text":
        command = Unreadable(f"names its agent with a {agent_type.upper()}, not text")
    elif command_type != "text":
        command = Unreadable(f"holds a {command_type.upper()} as its command, not text")
    elif raw is None:
        command = Unreadable(
            f"holds a command of {length} characters, over {limits.MAX_DOCUMENT_SIZE}"
        )
    else:
        try:
            command = raw.decode("utf-8")
        except UnicodeDecodeError as error:
            command = Unreadable(
                f"holds a command that is not valid UTF-8 ({error.reason} at byte {error.start})"
            )
    return PendingPost(int(post_id), command)


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
    """Insert one post in one transaction (or find the key's earlier post): its id, always
    one a ``Receipt`` can hold; else nothing is written (``LogUnavailable``)."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        row = conn.execute(SQLITE_INSERT, (agent_id, text, key)).fetchone()
        if row is None:  # the key was posted before: its first post's receipt
            row = conn.execute(_BY_KEY, (agent_id, key)).fetchone()
        post_id = row[0] if row is not None else None
        if type(post_id) is not int or not 1 <= post_id <= limits.MAX_SAFE_INTEGER:
            raise LogUnavailable(_no_receipt(agent_id, post_id))
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    return post_id


def _no_receipt(agent_id: str, post_id: object) -> str:
    found = limits.short_int(post_id) if type(post_id) is int else "missing"
    return (
        f"post for {agent_id!r}: its id would be {found}, not one in [1, "
        f"{limits.MAX_SAFE_INTEGER}] (a producer wrote such ids); nothing was written"
    )


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


# ----------------------------------------------------------------- placement


def candidate_page(conn: sqlite3.Connection, after: bytes | None, limit: int) -> list[bytes]:
    """Up to ``limit`` ids of agents with work (the ``agents`` flag or a pending post) whose
    bytes sort after ``after`` (None: from the first), in that order, as stored: bytes that
    may not be an agent id at all (``agent_text`` says)."""
    if after is None:
        rows = conn.execute(_CANDIDATES, (limit,)).fetchall()
    else:
        rows = conn.execute(_CANDIDATES_AFTER, (limit, after)).fetchall()
    page = [bytes(agent) for (agent,) in rows]
    blobs = [
        bytes(agent)
        for (agent,) in conn.execute(_BLOB_AGENTS)
        if after is None or bytes(agent) > after
    ]
    if blobs:  # a producer's BLOB ids: merged in by their bytes, each once
        page = sorted(set(page).union(blobs))[:limit]
    return page


def agent_text(raw: bytes) -> str:
    """The agent id stored as ``raw`` (UTF-8); ``InvalidInput`` saying why it is none."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        raise InvalidInput(f"not valid UTF-8 ({error.reason} at byte {error.start})") from None
    return limits.agent_id(text)
