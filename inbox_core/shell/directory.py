"""What a front door reads of a store beyond posts, ``events`` and ``watch`` (R39): the
agents it holds, with their work and pending posts, and a post's command.

Reads only (R36 v4: a GET never creates, migrates or writes a database), each on a
read-only connection the store hands in, in either dialect. An agent of a store is any id
with an event, a row of the owners' table (R37's ``work`` flag) or a post; the list is in
the database's order of text (SQLite: code points; PostgreSQL: the database's collation),
paged by ``after``: each source is read from ``after`` on by a loose index scan (one index
probe per agent, however long its log), and the first ``limit`` ids of their union are
exactly the next page. A stored id that is no agent id (a producer's BLOB, bytes that are
not UTF-8, an empty or too long text) is no agent: it is skipped, never listed and never
an error (R35 v4). A table nobody made yet reads as empty (a v1 SQLite file: its one agent
``"default"``; owners' rows missing: every agent with events has work, as a migration
would say).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Sequence
from typing import Any, Final

import attrs

from inbox_core import limits
from inbox_core.errors import InvalidInput
from inbox_core.shell.posts import PG_POSTS, SQLITE_POSTS

__all__ = [
    "PG_DIRECTORY",
    "SQLITE_DIRECTORY",
    "AgentSummary",
    "Directory",
    "pg_directory",
    "sqlite_directory",
]

CHUNK: Final = 256
"""Ids read per statement while a filter drops some (the rest of a page is read again)."""


@attrs.frozen
class AgentSummary:
    """One agent of a store: its id, whether it has work (R37: a pending post, or an open
    turn or waking work its log leaves for an owner, or a flag not known yet), and how
    many of its posts wait."""

    id: str
    work: bool
    pending_posts: int


def _agent_id(stored: object) -> str | None:
    """The agent id a stored cell holds, None for one that is no agent id."""
    if not isinstance(stored, str):
        return None  # bytes: a BLOB or text that is not UTF-8
    try:
        return limits.agent_id(stored)
    except InvalidInput:
        return None


@attrs.frozen
class Directory:
    """The statements of one dialect over one set of tables, and how it passes a list of
    ids."""

    page: str  # the next stored ids after a cursor: after, n (named)
    pending_one: str  # agent
    pending_many: str  # ids
    work_many: str  # ids
    command: str  # post, agent
    ids: Callable[[list[str]], Any]  # a list of ids as the driver takes it

    def agents(
        self,
        conn: Any,
        after: str | None,
        limit: int,
        accept: Callable[[str], bool] | None = None,
    ) -> list[AgentSummary]:
        """Up to ``limit`` agents with an id after ``after`` that ``accept`` takes."""
        cursor: object = after or ""
        found: list[str] = []
        while len(found) < limit:
            want = limit if accept is None else max(limit, CHUNK)
            stored = [row[0] for row in conn.execute(self.page, {"after": cursor, "n": want})]
            for value in stored:
                agent = _agent_id(value)
                if agent is not None and (accept is None or accept(agent)):
                    found.append(agent)
            if len(stored) < want:
                break
            cursor = stored[-1]
        found = found[:limit]
        if not found:
            return []
        listed = self.ids(found)
        pending = {str(a): int(n) for a, n in conn.execute(self.pending_many, {"ids": listed})}
        work = {str(a) for (a,) in conn.execute(self.work_many, {"ids": listed})}
        return [
            AgentSummary(agent, agent in work or pending.get(agent, 0) > 0, pending.get(agent, 0))
            for agent in found
        ]

    def pending_posts(self, conn: Any, agent_id: str) -> int:
        row = conn.execute(self.pending_one, {"agent": agent_id}).fetchone()
        return int(row[0])

    def post_command(self, conn: Any, agent_id: str, post_id: int) -> tuple[bool, object]:
        """``(found, the stored command)`` of agent ``agent_id``'s post ``post_id``."""
        row = conn.execute(self.command, {"post": post_id, "agent": agent_id}).fetchone()
        return (False, None) if row is None else (True, row[0])


def _loose(source: str, after: str, text: str) -> str:
    """The distinct ``agent_id``s of ``source`` after ``after``, in order, one index probe
    each (a recursive CTE), as a subquery the caller limits; ``text`` keeps text ids only."""
    first = f"SELECT min(agent_id) FROM {source} WHERE {text}agent_id > "
    return (
        f"WITH RECURSIVE ids(id) AS (SELECT ({first}{after}) UNION ALL "
        f"SELECT ({first}ids.id) FROM ids WHERE ids.id IS NOT NULL) "
        "SELECT id FROM ids WHERE id IS NOT NULL"
    )


def _page(sources: Sequence[str], after: str, limit: str, text: str = "") -> str:
    parts = " UNION ".join(
        f"SELECT * FROM ({_loose(source, after, text)} LIMIT {limit}) AS ids_{n}"
        for n, source in enumerate(sources)
    )
    return f"SELECT id FROM ({parts}) AS found ORDER BY id LIMIT {limit}"


# ---------------------------------------------------------------------- SQLite

_SQLITE_IN: Final = "agent_id IN (SELECT value FROM json_each(:ids))"
_SQLITE_NO_POSTS: Final = (
    "(SELECT NULL AS agent_id, NULL AS post_id, NULL AS outcome, NULL AS command WHERE 0)"
)


@functools.lru_cache(maxsize=8)
def _sqlite(events: str, agents: str, posts: str) -> Directory:
    return Directory(
        # text ids only (a BLOB sorts after all text); a cursor read as bytes (text that is
        # not UTF-8) is compared as the text it is
        page=_page((events, agents, posts), "CAST(:after AS TEXT)", ":n", "agent_id < X'' AND "),
        pending_one=f"SELECT count(*) FROM {posts} WHERE agent_id = :agent AND outcome IS NULL",
        pending_many=f"SELECT agent_id, count(*) FROM {posts} WHERE outcome IS NULL "
        f"AND {_SQLITE_IN} GROUP BY agent_id",
        work_many=f"SELECT agent_id FROM {agents} WHERE work = 1 AND {_SQLITE_IN}",
        command=f"SELECT command FROM {posts} WHERE post_id = :post AND agent_id = :agent",
        ids=lambda ids: json.dumps(ids, ensure_ascii=False),
    )


SQLITE_DIRECTORY: Final = _sqlite("events", "agents", SQLITE_POSTS)


def sqlite_directory(conn: Any, kind: str) -> Directory | None:
    """The statements over the tables an SQLite file of ``kind`` (``classify``'s) has, None
    when it holds no agent at all."""
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
    posts = SQLITE_POSTS if SQLITE_POSTS in tables else _SQLITE_NO_POSTS
    return _sqlite(events, agents, posts)


# ------------------------------------------------------------------ PostgreSQL

_PG_IN: Final = "agent_id = ANY(%(ids)s)"
_PG_TABLES: Final = ("inbox_core_events", "inbox_core_owners", PG_POSTS)


@functools.lru_cache(maxsize=8)
def _pg(events: str, owners: str, posts: str) -> Directory:
    return Directory(
        page=_page((events, owners, posts), "%(after)s", "%(n)s"),
        pending_one=f"SELECT count(*) FROM {posts} WHERE agent_id = %(agent)s AND outcome IS NULL",
        pending_many=f"SELECT agent_id, count(*) FROM {posts} WHERE outcome IS NULL "
        f"AND {_PG_IN} GROUP BY agent_id",
        work_many=f"SELECT agent_id FROM {owners} WHERE work IS NOT FALSE AND {_PG_IN}",
        command=f"SELECT command FROM {posts} WHERE post_id = %(post)s AND agent_id = %(agent)s",
        ids=list,
    )


PG_DIRECTORY: Final = _pg(*_PG_TABLES)


def pg_directory(conn: Any) -> Directory | None:
    """The statements over the tables a PostgreSQL database has (``PG_DIRECTORY`` once a
    writer made them all), None when it has none."""
    found = conn.execute(
        "SELECT " + ", ".join("to_regclass(%s) IS NOT NULL" for _ in _PG_TABLES), _PG_TABLES
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
    return _pg(events, owners, posts)
