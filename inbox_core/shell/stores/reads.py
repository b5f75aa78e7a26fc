"""What both stores answer alike (R35-R37, R39), over the few reads each makes its own way.

A ``StoreReads`` holds what a store reads in its own SQL (a page of an agent's
events, the outcomes of some of its posts, a page of placement candidates), its
wake, and the connection and statements its front-door reads use. On them it
builds ``outcome``, ``events``, ``wait`` and ``watch`` (one read per wake for
every waiter of an agent in one event loop, ``watching.Watching``),
``candidates`` (paged in id order, so that placement is fair, R37 v4) and the
front door's ``agents``, ``pending_count``, ``posted_command`` and ``tokens``.
``SqliteStore`` and ``PostgresStore`` each hold one and delegate to it: the two
differ in their SQL only. The argument checks every store applies live here too.
"""

from __future__ import annotations

import contextlib
import logging
import math
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any, Final, Protocol, TypeVar

from inbox_core import limits
from inbox_core.errors import InvalidInput, shown
from inbox_core.events import DurableEvent
from inbox_core.shell.stores.directory import AgentSummary, Directory
from inbox_core.shell.stores.posts import PostOutcome, Receipt, UnknownReceipt
from inbox_core.shell.stores.tokens import Connection, TokenDialect, TokenTable
from inbox_core.shell.stores.wakes import Wake
from inbox_core.shell.stores.watching import (
    BATCH_EVENTS,
    ReadEvents,
    ReadOutcomes,
    Watching,
    page_limit,
    since_seq,
    wait_seconds,
)

__all__ = ["MAX_PRUNE_SECONDS", "StoreReads", "checked_limit", "prune_age", "receipt_of"]

T = TypeVar("T")


class Look(Protocol):
    """A store's read-only look (R36 v4): ``read(directory, conn)`` on a connection that
    writes nothing, ``directory`` the statements over the tables the database has;
    ``absent`` when it has none."""

    def __call__(self, what: str, read: Callable[[Directory, Any], T], absent: T) -> T: ...


logger: Final = logging.getLogger("inbox_core.shell")

MAX_PRUNE_SECONDS: Final = 10**10
"""``prune(older_than=...)`` past this (about 317 years, both stores' clocks reach back so
far) means the same: nothing was decided that long ago."""
_REPORTED_MOST: Final = 4096
"""How many unservable agent ids one store object remembers having reported."""

CandidatePage = Callable[[Any, int], tuple[list[Any], Any]]
"""``(after, limit)`` -> one page of stored ids after the cursor ``after`` and the page's
last position (None at the end)."""


def receipt_of(receipt: object) -> Receipt:
    if not isinstance(receipt, Receipt):
        raise InvalidInput(f"expected a Receipt, got {type(receipt).__name__}")
    return receipt


def prune_age(value: object) -> float:
    """``prune``'s age: a number >= 0 (InvalidInput otherwise), at most ``MAX_PRUNE_SECONDS``
    (a larger one, an infinite one or an int past any float included: the same on every
    store)."""
    if (
        not isinstance(value, (int, float))
        or isinstance(value, bool)
        or (isinstance(value, float) and math.isnan(value))
        or value < 0
    ):
        raise InvalidInput(f"older_than must be a number of seconds >= 0, got {shown(value)}")
    return float(min(value, MAX_PRUNE_SECONDS))


def checked_limit(value: object) -> int:
    if (
        not isinstance(value, int)
        or isinstance(value, bool)
        or not 1 <= value <= limits.MAX_JSON_INTEGER
    ):
        what = "a larger int" if isinstance(value, int) and value > 0 else f"{value!r:.80}"
        raise InvalidInput(f"limit must be an int in [1, 2**63 - 1], got {what}")
    return value


class StoreReads:
    """One store's shared answers, built on its own reads (see the module).

    ``store`` names the store in log lines; ``read_events`` and ``read_outcomes`` are
    blocking and read-only (``wait`` and ``watch`` run them in worker threads);
    ``candidate_page`` reads one page of ids with work and ``agent_text`` turns a stored id
    into an agent id (``InvalidInput`` for what is none); ``cursor`` turns an agent id into
    the page's position; ``look`` runs a front door's read on a read-only connection with
    the ``Directory`` over the tables the database has (R36 v4: a GET writes nothing);
    ``connection`` is the store's writer ``_connection(what)``, which adds and revokes
    tokens (``token_dialect``).
    """

    __slots__ = (
        "_agent_text",
        "_candidate_page",
        "_connection",
        "_cursor",
        "_look",
        "_read_events",
        "_read_outcomes",
        "_reported",
        "_store",
        "_token_dialect",
        "_wake",
        "_watching",
    )

    def __init__(
        self,
        store: object,
        *,
        read_events: ReadEvents,
        read_outcomes: ReadOutcomes,
        wake: Callable[[str], Wake],
        candidate_page: CandidatePage,
        agent_text: Callable[[Any], str],
        cursor: Callable[[str], Any],
        connection: Connection,
        look: Look,
        token_dialect: TokenDialect,
    ) -> None:
        self._store = store
        self._read_events = read_events
        self._read_outcomes = read_outcomes
        self._watching = Watching(read_events, read_outcomes, wake)
        self._wake = wake
        self._candidate_page = candidate_page
        self._agent_text = agent_text
        self._cursor = cursor
        self._connection = connection
        self._look = look
        self._token_dialect = token_dialect
        self._reported: set[object] = set()

    # ------------------------------------------------------------ posts, events

    def outcome(self, receipt: Receipt) -> PostOutcome:
        """``PostPending()``, ``PostApplied()`` or ``PostRejected(error, message)``;
        ``UnknownReceipt`` when no such post is stored (never made here, or pruned). Reads
        only (R36 v4), in the calling thread: from an event loop, ``await store.wait(receipt,
        timeout=0)`` reads off the loop (``PostTimeout`` while pending)."""
        receipt = receipt_of(receipt)
        found = self._read_outcomes(receipt.agent_id, [receipt.post_id])
        outcome = found.get(receipt.post_id)
        if outcome is None:
            raise UnknownReceipt(f"no post {receipt.post_id} for agent {receipt.agent_id!r}")
        return outcome

    def events(
        self, agent_id: str, since: int = 0, limit: int = BATCH_EVENTS
    ) -> list[tuple[int, DurableEvent]]:
        """A page of agent ``agent_id``'s durable events: ``(seq, event)`` from seq ``since``
        on, at most ``limit`` (1 to ``watching.MAX_PAGE``; fewer when their text is long),
        in the calling thread, read-only (R36 v4). The next page starts at the seq after
        the last one; a bad row ends a page before it and is ``CorruptLog`` as the first
        of the next."""
        agent = limits.agent_id(agent_id)
        first = since_seq(since)
        batch = self._read_events(agent, first, page_limit(limit))
        if batch.error is not None and not batch.events:
            raise batch.error
        return [(first + offset, event) for offset, event in enumerate(batch.events)]

    async def wait(self, receipt: Receipt, timeout: float | None = None) -> PostOutcome:
        """The post's outcome once decided (``PostApplied()`` or ``PostRejected``); raises
        ``PostTimeout`` after ``timeout`` seconds (None: no limit, else at most
        ``watching.MAX_WAIT_SECONDS``) while it is pending. Reads in worker threads; the
        waits for one agent's posts in this event loop share one read per wake (R36 v4)."""
        receipt = receipt_of(receipt)
        limit = wait_seconds(timeout)
        return await self._watching.outcome_waits(receipt.agent_id).wait(receipt, limit)

    async def watch(self, agent_id: str, since: int = 0) -> AsyncIterator[tuple[int, DurableEvent]]:
        """Agent ``agent_id``'s durable events ``(seq, event)`` from seq ``since`` on, in log
        order, then each one as it is appended, from any process and across takeovers;
        it never needs ownership nor blocks the writer (R36), and writes nothing: reads
        run in worker threads, one per wake for every watcher of the agent in this event
        loop (R36 v4, ``watching.EventFeed``). ``CorruptLog`` for a bad row."""
        agent = limits.agent_id(agent_id)
        first = since_seq(since)
        async with contextlib.aclosing(self._watching.follow(agent, first)) as events:
            async for item in events:
                yield item

    def work_wake(self) -> Wake:
        """A wake rung by every post to any agent of the store (R36, R37). In the loop."""
        return self._wake("post:*")

    # ---------------------------------------------------------------- placement

    def candidates(self, limit: int, *, after: str | None = None) -> list[str]:
        """Up to ``limit`` agents that have work and no live owner (R37): an unconsumed post,
        or an open turn, a maintenance job or waking work its last owner left (the ``work``
        flag), or a flag not known yet. Reads only; a worker then tries to acquire them.

        In the store's order of agent ids, from the first or from the one after ``after``:
        passing the last id of each answer pages through every candidate, and fewer than
        ``limit`` means there are no more (R37 v4: placement is fair). A pending post whose
        agent id names no agent (not text, not UTF-8, empty, too long) is never a candidate:
        it is skipped, and reported once per store object (R35 v4)."""
        limit = checked_limit(limit)
        cursor = None if after is None else self._cursor(limits.agent_id(after))
        found: list[str] = []
        while len(found) < limit:
            stored, cursor = self._candidate_page(cursor, limit)
            found.extend(self._agent_ids(stored))
            if cursor is None:
                break
        return found[:limit]

    def _agent_ids(self, stored: Sequence[Any]) -> list[str]:
        """The agent ids among ``stored``, each other reported once: its posts can never be
        served."""
        agents: list[str] = []
        for value in stored:
            try:
                agents.append(self._agent_text(value))
            except InvalidInput as why:
                self._report(value, why)
        return agents

    def _report(self, stored: object, why: InvalidInput) -> None:
        if stored in self._reported or len(self._reported) >= _REPORTED_MOST:
            return
        self._reported.add(stored)
        logger.warning(
            "%r: posts for agent id %s can never be served (%s); no worker places them, "
            "they stay pending: delete them",
            self._store,
            shown(stored),
            why,
        )

    # ------------------------------------- what a front door reads (R39, inbox_core.http)

    def agents(
        self,
        after: str | None = None,
        limit: int = 100,
        accept: Callable[[str], bool] | None = None,
    ) -> list[AgentSummary]:
        """Up to ``limit`` agents of the store (an event, an owner's row or a post) with an id
        after ``after``, in the database's order, that ``accept`` takes (all by default).
        Reads only."""
        first = None if after is None else limits.agent_id(after)
        most = checked_limit(limit)
        return self._look("list agents", lambda d, conn: d.agents(conn, first, most, accept), [])

    def pending_count(self, agent_id: str) -> int:
        """How many of agent ``agent_id``'s posts wait for its owner. Reads only."""
        agent = limits.agent_id(agent_id)
        return self._look("count posts", lambda d, conn: d.pending_posts(conn, agent), 0)

    def posted_command(self, receipt: Receipt) -> object:
        """The command a post holds, as stored (the text a producer wrote);
        ``UnknownReceipt`` when no such post is stored. Reads only."""
        receipt = receipt_of(receipt)
        nothing: tuple[bool, object] = (False, None)
        found, command = self._look(
            "read a post",
            lambda d, conn: d.post_command(conn, receipt.agent_id, receipt.post_id),
            nothing,
        )
        if not found:
            raise UnknownReceipt(f"no post {receipt.post_id} for agent {receipt.agent_id!r}")
        return command

    def tokens(self) -> TokenTable:
        """The store's bearer tokens (``stores.tokens``): added and revoked on the writer's
        connection, looked up read-only (a server that may only read the database serves)."""
        return TokenTable(
            self._connection,
            self._token_dialect,
            lambda what, read: self._look(what, lambda _d, conn: read(conn), None),
        )
