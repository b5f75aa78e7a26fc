"""What the front door needs of a store (R39): ``SqliteStore`` and ``PostgresStore`` have it.

The app holds no state of its own: every answer comes from these calls, so any number of
replicas serve one store. The synchronous ones may block (they run in worker threads, never
on the event loop); ``wait`` and ``watch`` are the store's own asynchronous ones (R35, R36).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Final, Protocol

from inbox_core.commands import Command
from inbox_core.events import DurableEvent
from inbox_core.shell.stores.directory import AgentSummary
from inbox_core.shell.stores.posts import PostOutcome, Receipt
from inbox_core.shell.stores.tokens import TokenTable

__all__ = ["PAGE", "FrontDoorStore", "read_log"]

PAGE: Final = 1000
"""Events read per statement when a whole log is folded."""


class FrontDoorStore(Protocol):
    def post(self, agent_id: str, command: Command, *, key: str | None = None) -> Receipt:
        """Durable when it returns; a ``key`` posted before returns the first receipt."""

    def outcome(self, receipt: Receipt) -> PostOutcome:
        """``UnknownReceipt`` for a post pruned or never made for that agent."""

    async def wait(self, receipt: Receipt, timeout: float | None = None) -> PostOutcome:
        """The outcome once decided; ``PostTimeout`` after ``timeout`` s."""

    def watch(self, agent_id: str, since: int = 0) -> AsyncIterator[tuple[int, DurableEvent]]:
        """The agent's events from ``since`` on, live."""

    def events(
        self, agent_id: str, since: int = 0, limit: int = PAGE
    ) -> list[tuple[int, DurableEvent]]:
        """A page of the events from ``since`` on, as they are now: at most ``limit``, maybe
        fewer before the end (a store may cut a page of long events short)."""

    def pending_count(self, agent_id: str) -> int:
        """How many posts wait for the agent's owner."""

    def posted_command(self, receipt: Receipt) -> object:
        """The stored command of a post (``UnknownReceipt`` when there is none)."""

    def agents(
        self,
        after: str | None = None,
        limit: int = 100,
        accept: Callable[[str], bool] | None = None,
    ) -> list[AgentSummary]:
        """A page of the store's agents after ``after`` that ``accept`` takes."""

    @property
    def tokens(self) -> TokenTable:
        """The store's bearer tokens."""


def read_log(store: FrontDoorStore, agent_id: str) -> list[DurableEvent]:
    """Agent ``agent_id``'s whole log as it is now (blocking: call it in a worker thread)."""
    events: list[DurableEvent] = []
    while page := store.events(agent_id, len(events), PAGE):
        events += [event for _, event in page]
    return events
