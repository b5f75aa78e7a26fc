"""What a front door reads of a store beyond posts, ``events`` and ``watch`` (R39): the
agents it holds, with their work and pending posts, and a post's command.

Reads only, each on the store's own connection (the store hands its ``_connection``
context manager in); each dialect's statements (a ``Directory``) live in its store's
folder (``sqlite/frontdoor.py``, ``postgres/frontdoor.py``). An agent of a store is any
id with an event, a row of the owners' table (R37's ``work`` flag) or a post; the list is
in the database's order of text (SQLite: code points; PostgreSQL: the database's
collation), paged by ``after``: each source is read from ``after`` on by a loose index
scan (one index probe per agent, however long its log), and the first ``limit`` ids of
their union are exactly the next page.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Final

import attrs

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


def _loose(table: str, param: str) -> str:
    """The distinct ``agent_id``s of ``table`` after ``param``, in order, one index probe
    each (a recursive CTE), as a subquery the caller limits."""
    first = f"SELECT min(agent_id) FROM {table} WHERE agent_id > "
    return (
        f"WITH RECURSIVE ids(id) AS (SELECT ({first}{param}) UNION ALL "
        f"SELECT ({first}ids.id) FROM ids WHERE ids.id IS NOT NULL) "
        "SELECT id FROM ids WHERE id IS NOT NULL"
    )


@attrs.frozen
class Directory:
    """The statements of one dialect and how it passes a list of ids."""

    page: str  # the next ids after a cursor: after, limit (named)
    pending_one: str  # agent_id
    pending_many: str  # ids
    work_many: str  # ids
    command: str  # post_id, agent_id
    ids: Callable[[list[str]], Any]  # a list of ids as the driver takes it

    def agents(
        self,
        conn: Any,
        after: str | None,
        limit: int,
        accept: Callable[[str], bool] | None = None,
    ) -> list[AgentSummary]:
        """Up to ``limit`` agents with an id after ``after`` that ``accept`` takes."""
        cursor, found = after or "", list[str]()
        while len(found) < limit:
            want = limit if accept is None else max(limit, CHUNK)
            ids = [str(row[0]) for row in conn.execute(self.page, {"after": cursor, "n": want})]
            found += [agent for agent in ids if accept is None or accept(agent)]
            if len(ids) < want:
                break
            cursor = ids[-1]
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


def directory_page(tables: Sequence[str], param: str, limit: str) -> str:
    """The statement of the next page of agent ids after ``param``, from the ``agent_id``s
    of ``tables`` (each by a loose index scan), in a dialect's parameter style."""
    parts = " UNION ".join(
        f"SELECT * FROM ({_loose(table, param)} LIMIT {limit}) AS {table}_ids" for table in tables
    )
    return f"SELECT id FROM ({parts}) AS found ORDER BY id LIMIT {limit}"
