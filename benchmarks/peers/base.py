"""The system-under-test interface of benchmark B8 (``benchmarks/mailbox.py``).

A *mailbox* delivers posts from any process to an agent's consumer. The harness
drives it from three kinds of process, each building its half from the same
picklable ``Mailbox`` value:

- poster processes: ``mailbox.producer().post(agent, payload)``;
- one consumer process: ``mailbox.consumer().serve(expected, applied)``, which
  calls ``applied(agent, payload)`` the moment a post is applied (durably
  consumed), from any thread;
- watch: ``mailbox.appender()`` (in the consumer process) appends to an
  agent's log; ``mailbox.watcher()`` (in a poster process) sees the appends.

Every payload carries ``sent_ns``, taken with ``time.monotonic_ns()`` just
before the post or append. CLOCK_MONOTONIC is one clock for the whole machine
on Linux (not per process), so ``applied_ns - sent_ns`` measured in another
process is a latency.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import ClassVar, Literal, Protocol, TypedDict

Backend = Literal["postgres", "sqlite"]


class Payload(TypedDict):
    poster: int  # the posting process's index (-1 for a watch append)
    seq: int  # the post's rank in that poster's own order
    sent_ns: int  # time.monotonic_ns() just before the post
    text: str  # filler, the same for every system


Applied = Callable[[str, Payload], None]
"""``applied(agent, payload)``: called once per post, right after it is applied."""


def stamp(poster: int, seq: int, text: str) -> Payload:
    """The payload of one post, stamped now (call it immediately before posting)."""
    return {"poster": poster, "seq": seq, "sent_ns": time.monotonic_ns(), "text": text}


class Skipped(Exception):
    """The system cannot run here (a missing package, say); the message says why, in one line."""


@dataclass(frozen=True)
class Target:
    """Where a system keeps its mailboxes: a PostgreSQL conninfo or an SQLite file path.

    ``location`` is a fresh database (or file) for this system alone, made by the harness.
    """

    backend: Backend
    location: str


class Producer(Protocol):
    def post(self, agent: str, payload: Payload) -> None:
        """Durably post ``payload`` to ``agent``'s mailbox (durable when it returns)."""

    def close(self) -> None: ...


class Consumer(Protocol):
    def serve(self, expected: Mapping[str, int], applied: Applied) -> None:
        """Start serving ``expected``'s agents (``expected[agent]`` posts will come).

        Returns once posts to those agents can be sent (DBOS: the workflows exist);
        then calls ``applied`` for each post as it is applied, from any thread.
        """

    def stop(self, timeout: float) -> None:
        """Stop serving the agents of the last ``serve`` (the harness has seen every post
        applied, or gave up waiting)."""

    def close(self) -> None: ...


class Appender(Protocol):
    def open(self, agent: str) -> None:
        """Make ``agent``'s log exist, so that a watcher can follow it."""

    def write(self, agent: str, count: int, interval: float) -> None:
        """Append ``count`` entries to ``agent``'s log, ``interval`` seconds apart; each
        entry's payload is ``stamp(-1, i, text)`` taken immediately before its append."""

    def close(self) -> None: ...


class Watcher(Protocol):
    def watch(
        self, agent: str, count: int, seen: Applied, ready: Callable[[], None], timeout: float
    ) -> None:
        """Follow ``agent``'s log from its start; call ``ready()`` once following, and
        ``seen(agent, payload)`` for each entry as it is seen; return after ``count``."""

    def close(self) -> None: ...


class Mailbox(Protocol):
    """One system under test. Instances are picklable values (a ``Target`` and options)."""

    name: ClassVar[str]
    backends: ClassVar[frozenset[Backend]]
    target: Target

    def prepare(self) -> None:
        """Once per run, in the harness process: create tables (raise ``Skipped`` to skip)."""

    def producer(self) -> Producer: ...

    def consumer(self) -> Consumer: ...

    def appender(self) -> Appender | None:
        """None: this system has no watch to measure."""

    def watcher(self) -> Watcher | None: ...

    def describe(self) -> dict[str, str]:
        """What ran (versions, settings), for the result file."""
