"""``MemoryLog``: a log in a Python list, with the ownership contract of every store (R29)."""

from __future__ import annotations

import weakref
from collections.abc import Iterable, Sequence
from typing import Any

from inbox_core.errors import LogOwned
from inbox_core.events import DURABLE_TYPES, DurableEvent, checked_events
from inbox_core.shell.stores.base import Tail
from inbox_core.shell.stores.checkpoints import DEFAULT_EVERY
from inbox_core.shell.stores.checkpoints import checkpoint_every as checked_every
from inbox_core.shell.stores.errors import fenced
from inbox_core.shell.stores.rows import seq_range

__all__ = ["MemoryLog"]


_DURABLE_CLASSES: frozenset[type] = frozenset(DURABLE_TYPES)


class _MemoryStore:
    """What the ``MemoryLog`` handles of one log share: its events, its owner's token and
    its checkpoint (R41: the stored text, as a database would hold it)."""

    __slots__ = ("checkpoint", "events", "owner")

    def __init__(self, events: Iterable[DurableEvent]) -> None:
        self.events: list[DurableEvent] = list(checked_events(events, "MemoryLog"))
        self.owner: object | None = None
        self.checkpoint: tuple[int, str | bytes] | None = None


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

    It keeps one checkpoint (R41) beside the events, as its agent ``"default"``'s:
    its events are Python objects already, so its owner folds them at release
    (``in_memory``), when the checkpoint is ``checkpoint_every`` events behind (or
    ``checkpoints.REOPEN_TAIL``, if fewer; None: never), and not on the way.
    """

    __slots__ = ("__weakref__", "_finalizer", "_next", "_store", "_token", "checkpoint_every")

    agent_id = "default"
    in_memory = True

    def __init__(
        self, events: Iterable[DurableEvent] = (), *, checkpoint_every: int | None = DEFAULT_EVERY
    ) -> None:
        self.checkpoint_every = checked_every(checkpoint_every)
        self._store = _MemoryStore(events)
        self._token: object | None = None
        self._next = 0
        self._finalizer: weakref.finalize[Any, Any] | None = None

    def handle(self) -> MemoryLog:
        """Another handle on the same log: same events, no ownership (``acquire`` it)."""
        other = MemoryLog(checkpoint_every=self.checkpoint_every)
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

    def read(self, since: int = 0, until: int | None = None) -> list[DurableEvent]:
        """The events from seq ``since`` on (before ``until``), a copy."""
        first, end = seq_range(since, until)
        return self._store.events[first:end]

    def read_tail(self) -> Tail:
        """The checkpoint and the events from the one it follows on (R41)."""
        store = self._store
        stored = store.checkpoint
        if stored is None:
            return Tail(None, 0, list(store.events))
        start = max(stored[0] - 1, 0)
        return Tail(stored[1], start, store.events[start:])

    def write_checkpoints(self, items: Sequence[tuple[Any, int, str]]) -> list[Exception | None]:
        """As the owner, keep each ``(log, seq, text)`` as its log's one checkpoint."""
        results: list[Exception | None] = []
        for log, seq, text in items:
            if not isinstance(log, MemoryLog) or not log.owned:
                results.append(fenced("MemoryLog", "-", "it does not own the log"))
                continue
            log._store.checkpoint = (seq, text)
            results.append(None)
        return results

    def checkpoints(self) -> list[tuple[object, object]]:
        """The stored ``(seq, checkpoint)``, if any."""
        stored = self._store.checkpoint
        return [] if stored is None else [stored]

    def __len__(self) -> int:
        return len(self._store.events)

    def __repr__(self) -> str:
        owned = ", owned" if self.owned else ""
        return f"MemoryLog(<{len(self._store.events)} events>{owned})"
