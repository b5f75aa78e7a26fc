"""``MemoryLog``: a log in a Python list, with the ownership contract of every store (R29)."""

from __future__ import annotations

import weakref
from collections.abc import Iterable, Sequence
from typing import Any

from inbox_core.errors import LogOwned
from inbox_core.events import DURABLE_TYPES, DurableEvent, checked_events
from inbox_core.shell.stores.errors import fenced

__all__ = ["MemoryLog"]


_DURABLE_CLASSES: frozenset[type] = frozenset(DURABLE_TYPES)


class _MemoryStore:
    """What the ``MemoryLog`` handles of one log share: its events and its owner's token."""

    __slots__ = ("events", "owner")

    def __init__(self, events: Iterable[DurableEvent]) -> None:
        self.events: list[DurableEvent] = list(checked_events(events, "MemoryLog"))
        self.owner: object | None = None


def _free_memory_store(store: _MemoryStore, token: object) -> None:
    if store.owner is token:
        store.owner = None


class MemoryLog:
    """A log in a Python list (tests, demos, hosts that persist elsewhere).

    A ``MemoryLog`` object is a handle on one in-process log. ``handle()``
    returns another handle on the same events, with ownership of its own: what
    a second process would open over the same file (the contract tests use it).
    Ownership is the handle's, within the process: a second ``acquire`` (through
    any handle, this one included) raises ``LogOwned`` until the owner releases
    it, or is garbage-collected.
    """

    __slots__ = ("__weakref__", "_finalizer", "_next", "_store", "_token")

    def __init__(self, events: Iterable[DurableEvent] = ()) -> None:
        self._store = _MemoryStore(events)
        self._token: object | None = None
        self._next = 0
        self._finalizer: weakref.finalize[Any, Any] | None = None

    def handle(self) -> MemoryLog:
        """Another handle on the same log: same events, no ownership (``acquire`` it)."""
        other = MemoryLog()
        other._store = self._store
        return other

    @property
    def owned(self) -> bool:
        """Whether this handle is the log's writer now."""
        return self._token is not None and self._store.owner is self._token

    def acquire(self) -> None:
        store = self._store
        if store.owner is not None:
            who = "this handle" if store.owner is self._token else "another MemoryLog handle"
            raise LogOwned(f"the MemoryLog is owned by {who}; nothing was written")
        token = self._token = store.owner = object()
        self._next = len(store.events)
        self._finalizer = weakref.finalize(self, _free_memory_store, store, token)

    def release(self) -> None:
        finalizer, self._finalizer, self._token = self._finalizer, None, None
        if finalizer is not None:
            finalizer()

    def append(self, events: Sequence[DurableEvent]) -> None:
        if not self.owned:
            why = "never acquired, or released" if self._token is None else "taken over"
            raise fenced("MemoryLog", "-", why)
        if type(events) is not tuple and type(events) is not list:
            events = list(checked_events(events, "MemoryLog.append"))  # all or none
        else:
            for event in events:
                if type(event) not in _DURABLE_CLASSES:  # the hot path: one set lookup each
                    events = list(checked_events(events, "MemoryLog.append"))
                    break
        store = self._store
        if len(store.events) != self._next:  # pragma: no cover - only a bypassing writer
            self.release()
            raise fenced("MemoryLog", "-", f"expected seq {self._next}, the log has more")
        store.events.extend(events)
        self._next += len(events)

    def read(self) -> list[DurableEvent]:
        return list(self._store.events)

    def __len__(self) -> int:
        return len(self._store.events)

    def __repr__(self) -> str:
        owned = ", owned" if self.owned else ""
        return f"MemoryLog(<{len(self._store.events)} events>{owned})"
