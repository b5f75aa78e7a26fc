"""What a ``Worker`` does about the cyclic garbage collector (R37, issue 32; specs/shell.md
section 13): keep the long-lived objects of the agents it serves out of full collections.

A thousand idle served agents hold some 70,000 objects the collector tracks (their states,
their inboxes' nodes, their log objects and tasks). Every full (generation 2) collection
scans all of them, and its pause stops the event loop: tens of milliseconds, the worst
stalls a worker has (benchmarks/README.md, B7). ``gc.freeze()`` moves every tracked object
to a permanent generation that collections skip, in constant time. So ``Freezer.look``
freezes, at the worker's next look, what an opening added and what a full collection left
alive (the moment the fewest dead objects are tracked). What it freezes and later dies
with a reference cycle (an agent let go, a host's cycles) is kept until ``gc.unfreeze()``,
which hands everything back to the oldest generation: it runs once ``UNFREEZE_AFTER``
agents (or a quarter of those served, if more) were let go, or ``UNFREEZE_SECONDS`` after
the last, so that what is kept stays bounded; the next full collection frees it, and what
survives that is frozen again. The collector itself stays on: young objects are collected
as ever.

The permanent generation is the process's: a worker embedded in an application freezes the
application's objects too (``Worker(..., freeze_gc=False)`` leaves the collector alone);
``close`` unfreezes.
"""

from __future__ import annotations

import gc
import time
from typing import Final

__all__ = ["UNFREEZE_AFTER", "UNFREEZE_SECONDS", "Freezer"]

UNFREEZE_AFTER: Final = 256
"""Agents let go since the last unfreeze (or a quarter of those served, if more) before the
frozen objects go back to the collector."""
UNFREEZE_SECONDS: Final = 600.0
"""The longest anything stays frozen without a full collection looking at it."""


def _full_collections() -> int:
    return int(gc.get_stats()[2]["collections"])


class Freezer:
    """One worker's use of ``gc.freeze`` (see the module); ``enabled`` False: it does
    nothing."""

    __slots__ = ("_enabled", "_frozen", "_full", "_let_go", "_since")

    def __init__(self, *, enabled: bool = True) -> None:
        self._enabled = enabled
        self._full = _full_collections()
        self._let_go = 0
        self._frozen = False
        self._since = time.monotonic()

    def let_go(self) -> None:
        """One agent was let go: its frozen objects may be garbage now."""
        self._let_go += 1

    def look(self, *, opened: int, served: int) -> None:
        """At each of the worker's looks, after it opened ``opened`` agents and serves
        ``served``: freeze what they and the last full collection left, or unfreeze."""
        if not self._enabled:
            return
        now = time.monotonic()
        if self._frozen and (
            self._let_go >= max(UNFREEZE_AFTER, served // 4)
            or now - self._since >= UNFREEZE_SECONDS
        ):
            gc.unfreeze()  # the next full collection frees what died frozen
            self._frozen, self._let_go, self._since = False, 0, now
            self._full = _full_collections()
            return
        full = _full_collections()
        if opened or full != self._full:
            gc.freeze()
            self._full = full
            if not self._frozen:
                self._frozen, self._since = True, now

    def close(self) -> None:
        """Give everything back to the collector (the worker stopped)."""
        if self._enabled and self._frozen:
            gc.unfreeze()
            self._frozen = False
