"""The front door's use of a store (R39): only through the ``Store`` protocol.

The app holds no state of its own: every answer comes from the store's calls, so any
number of replicas serve one store. The synchronous ones may block (they run in worker
threads, never on the event loop); ``wait`` and ``watch`` are the store's own asynchronous
ones (R35, R36).
"""

from __future__ import annotations

from typing import Final

from inbox_core.events import DurableEvent
from inbox_core.shell.stores.base import Store

__all__ = ["PAGE", "Store", "read_log"]

PAGE: Final = 1000
"""Events read per statement when a whole log is folded."""


def read_log(store: Store, agent_id: str) -> list[DurableEvent]:
    """Agent ``agent_id``'s whole log as it is now (blocking: call it in a worker thread)."""
    events: list[DurableEvent] = []
    while page := store.events(agent_id, len(events), PAGE):
        events += [event for _, event in page]
    return events
