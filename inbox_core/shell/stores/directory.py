"""What a front door reads of a store beyond posts, ``events`` and ``watch`` (R39): the
agents it holds, with their work and pending posts, and a post's command.

Reads only (R36 v4: a GET never creates, migrates or writes a database), each on a
read-only connection the store hands in; each dialect's statements (a ``Directory``) live
in its store's folder (``sqlite/frontdoor.py``, ``postgres/frontdoor.py``), made over the
tables a database has. An agent of a store is any id with an event, a row of the owners'
table (R37's ``work`` flag) or a post; the list is in the database's order of text
(SQLite: code points; PostgreSQL: the database's collation), paged by ``after``: each
source is read from ``after`` on by a loose index scan (one index probe per agent, however
long its log), and the first ``limit`` ids of their union are exactly the next page. A
stored id that is no agent id (a producer's BLOB, bytes that are not UTF-8, an empty or
too long text) is no agent: it is skipped, never listed and never an error (R35 v4). A
table nobody made yet reads as empty (a v1 SQLite file: its one agent ``"default"``;
owners' rows missing: every agent with events has work, as a migration would say).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Final

import attrs

from inbox_core import limits
from inbox_core.errors import InvalidInput

__all__ = ["AgentSummary", "Directory", "directory_page"]

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


def _loose(source: str, after: str, text: str) -> str:
    """The distinct ``agent_id``s of ``source`` after ``after``, in order, one index probe
    each (a recursive CTE), as a subquery the caller limits; ``text`` keeps text ids only."""
    first = f"SELECT min(agent_id) FROM {source} WHERE {text}agent_id > "
    return (
        f"WITH RECURSIVE ids(id) AS (SELECT ({first}{after}) UNION ALL "
        f"SELECT ({first}ids.id) FROM ids WHERE ids.id IS NOT NULL) "
        "SELECT id FROM ids WHERE id IS NOT NULL"
    )


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


def directory_page(sources: Sequence[str], after: str, limit: str, text: str = "") -> str:
    """The statement of the next page of agent ids after ``after``, from the ``agent_id``s
    of ``sources`` (tables or subqueries, each by a loose index scan), in a dialect's
    parameter style; ``text`` is a condition that keeps text ids only."""
    parts = " UNION ".join(
        f"SELECT * FROM ({_loose(source, after, text)} LIMIT {limit}) AS ids_{n}"
        for n, source in enumerate(sources)
    )
    return f"SELECT id FROM ({parts}) AS found ORDER BY id LIMIT {limit}"
