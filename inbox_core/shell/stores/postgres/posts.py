"""The PostgreSQL reading of posts (R35): an agent's pending rows as its owner sees them.

Shared by ``PostgresLog`` (the owner serves them) and ``PostgresStore`` (``pending``
lists them for the command line). A command past ``MAX_DOCUMENT_SIZE`` bytes is never
loaded: its size is read instead, and the row is rejected (R35 v4).
"""

from __future__ import annotations

from typing import Any

from inbox_core import limits
from inbox_core.shell.stores.postgres.schema import PENDING
from inbox_core.shell.stores.posts import PendingPost, Unreadable

__all__ = ["pending"]


def pending(conn: Any, agent_id: str, limit: int) -> list[PendingPost]:
    """Agent ``agent_id``'s oldest ``limit`` unconsumed posts, by ``post_id``."""
    args = {"agent": agent_id, "limit": limit, "most": limits.MAX_DOCUMENT_SIZE}
    return [
        PendingPost(int(post_id), command if command is not None else _too_long(size))
        for post_id, command, size in conn.execute(PENDING, args).fetchall()
    ]


def _too_long(size: int) -> Unreadable:
    return Unreadable(
        f"holds a command of {size} bytes, over {limits.MAX_DOCUMENT_SIZE} (not read)"
    )
