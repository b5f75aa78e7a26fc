"""What one client may make the store hold (R39, D45): new agents per minute and pending
posts per agent, per token (and, with no token, for the whole store).

A post token reaching ``team-a/*`` made 1,000 agents and 201 MB in 19 s, each one placed by
the worker. So before a post is written (after its body was judged, so a refused body costs
no quota) the front door checks two bounds and answers ``429`` with ``Retry-After`` past
them, nothing written:

- ``pending_per_agent``: the agent already has that many posts waiting for its owner (the
  store's count, read in the post's own thread hop);
- ``agents_per_minute``: the post would give the store an agent it holds nothing of (no
  event, no pending post), and the key (the token; with no token, the store) made that many
  in the last 60 s (a sliding window, in this process: each replica keeps its own).

A token's own bounds (``inbox-core token add --agents-per-minute N --pending-per-agent N``,
kept in the store beside it) win over the server's (``http`` / ``serve --http``; by default
``AGENTS_PER_MINUTE`` and ``PENDING_PER_AGENT`` of ``inbox_core.http.defaults``). A bound is
a count from 0 (``0`` new agents: a token for the agents that exist only).
"""

from __future__ import annotations

import collections
import math
import threading
import time
from collections.abc import Callable
from typing import Any, Final

import attrs

from inbox_core.errors import InboxCoreError, InvalidInput, shown
from inbox_core.http.auth import Access
from inbox_core.http.problem import Problem

__all__ = ["Quota", "Quotas"]

WINDOW_SECONDS: Final = 60.0
KNOWN: Final = 65536
"""Agent ids remembered as held by the store (no read to learn it again)."""
PENDING_RETRY_SECONDS: Final = 5


def _count(_inst: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InvalidInput(f"{attribute.name} is a count from 0, got {shown(value)}")


@attrs.frozen
class Quota:
    """The two bounds of one key (``InvalidInput`` for one that is no count from 0)."""

    agents_per_minute: int = attrs.field(validator=_count)
    pending_per_agent: int = attrs.field(validator=_count)


class Quotas:
    """The bounds of one app; ``check`` runs in a store thread, before the post it guards."""

    def __init__(self, default: Quota, clock: Callable[[], float] = time.monotonic) -> None:
        self.default = default
        self._clock = clock
        self._lock = threading.Lock()
        self._made: dict[str, collections.deque[float]] = {}
        self._known: collections.OrderedDict[str, None] = collections.OrderedDict()

    def of(self, access: Access) -> Quota:
        """The bounds of a request's key: its token's where it has its own."""
        return Quota(
            self.default.agents_per_minute
            if access.agents_per_minute is None
            else access.agents_per_minute,
            self.default.pending_per_agent
            if access.pending_per_agent is None
            else access.pending_per_agent,
        )

    def check(self, store: Any, access: Access, agent: str) -> None:
        """``Problem(429)`` if a post of ``access`` for ``agent`` would pass a bound; else the
        post may be written (a new agent is counted now). Blocking: a store thread."""
        quota = self.of(access)
        pending = int(store.pending_count(agent))
        if pending >= quota.pending_per_agent:
            raise Problem(
                429,
                f"agent {agent!r} has {pending} posts waiting for its owner; at most"
                f" {quota.pending_per_agent} (retry once it applied some)",
                headers={"Retry-After": str(PENDING_RETRY_SECONDS)},
            )
        if pending or self._held(store, agent):
            return
        key = "" if access.token is None else access.token
        with self._lock:
            now = self._clock()
            made = self._made.setdefault(key, collections.deque())
            while made and made[0] <= now - WINDOW_SECONDS:
                made.popleft()
            if len(made) >= quota.agents_per_minute:
                wait = 1 if not made else max(1, math.ceil(made[0] + WINDOW_SECONDS - now))
                who = "the store's clients" if access.token is None else f"token {key!r}"
                raise Problem(
                    429,
                    f"{who} made {len(made)} new agents in the last minute; at most"
                    f" {quota.agents_per_minute}",
                    headers={"Retry-After": str(wait)},
                )
            made.append(now)

    def posted(self, agent: str) -> None:
        """``agent`` holds a post now: the store knows it."""
        self._remember(agent)

    def _held(self, store: Any, agent: str) -> bool:
        """Whether the store holds anything of ``agent`` (remembered once it does)."""
        with self._lock:
            if agent in self._known:
                self._known.move_to_end(agent)
                return True
        try:
            held = bool(store.events(agent, 0, 1))
        except InboxCoreError:  # a log that does not read: it is there all the same
            held = True
        if held:
            self._remember(agent)
        return held

    def _remember(self, agent: str) -> None:
        with self._lock:
            self._known[agent] = None
            self._known.move_to_end(agent)
            while len(self._known) > KNOWN:
                self._known.popitem(last=False)
