"""What every store shares: the ``EventLog`` protocol, the store errors, stored events.

A log stores the core's durable events in commit order; it is the only
authority about the agent (R10): ``replay(log.read())`` rebuilds the state.
``LoopAgent`` writes each command's durable events in one atomic write (through
its writer, ``stores.writers``), and only then adopts the new state. A log must
make each write atomic: after a crash either all events of the write are
there, or none is (I12: every prefix the log can show is a prefix of whole
commands).

Ownership (R29): at most one live writer per agent log, enforced by the store.
Building a log object takes no ownership and ``read()`` never needs it;
``acquire()`` takes it (or raises ``LogOwned``, writing nothing); ``append``
works only through the object that owns the log and only at the seq that
object expects next (else ``LogFenced``, writing nothing), so two writers can
never interleave; ``release()`` gives it back.

The stores: ``memory.MemoryLog``; ``sqlite/`` (``SqliteLog``, ``SqliteStore``)
and ``postgres/`` (``PostgresLog``, ``PostgresStore``, behind the optional
psycopg driver), each folder holding all of that store: its SQL, its posts
statements, its ownership and its wake. A stored event is the compact
``{"type","data"}`` text of ``encode_event``, read back by ``decode_record``.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Protocol

from inbox_core import limits
from inbox_core.codec import event_from_json, event_to_json
from inbox_core.errors import InboxCoreError, LogFenced, ReplayError
from inbox_core.events import DurableEvent

__all__ = [
    "CorruptLog",
    "EventLog",
    "IncompatibleLog",
    "LogUnavailable",
    "decode_record",
    "decode_rows",
    "encode_event",
    "fenced",
    "iter_rows",
]


class EventLog(Protocol):
    """What ``LoopAgent`` needs of a durable log (R10, R29). All four calls are synchronous."""

    def acquire(self) -> None:
        """Become the log's one writer, or raise ``LogOwned`` (writing nothing)."""

    def release(self) -> None:
        """Stop being the writer (idempotent); appends raise ``LogFenced`` until ``acquire``."""

    def append(self, events: Sequence[DurableEvent]) -> None:
        """Append ``events`` atomically (all or none) at the seq this writer expects next.

        Raises ``LogFenced`` (writing nothing) unless this object owns the log.
        """

    def read(self) -> list[DurableEvent]:
        """Every durable event appended so far, in order (seq 0, 1, 2, ...); needs no ownership."""


class CorruptLog(ReplayError):
    """A stored log record cannot be read back: a gap in ``seq``, bad JSON, or a bad event.

    A ``ReplayError`` (so ``seq`` names the record), raised by a log's ``read``.
    """


class LogUnavailable(InboxCoreError):
    """The store could not be reached or refused the statement (``__cause__`` says why).

    Raised by ``PostgresLog`` for a lost connection or a server restart. The
    store is transactional, so nothing is half-written; an ``append`` that
    raises this may or may not have landed, which is safe: the agent did not
    commit it, and the next ``append`` through the same object is conditional
    on the seq it expects, so it raises ``LogFenced`` rather than write after
    an append it never saw. Recovery: ``detach()`` the agent (or ``release()``
    the log) and build a new agent over the log; it replays and resumes (R27).
    ``SqliteLog`` raises it too: a file it cannot open, a database locked past
    its timeout, a read-only or failing disk.
    """


class IncompatibleLog(InboxCoreError):
    """The file or database holds no inbox-core log this version can use; nothing was changed.

    A text file, another application's database (tables of its own, or an
    ``events`` table of another shape) or an unknown schema version. Unlike
    ``LogUnavailable`` it is permanent (retrying cannot help) and, unlike
    ``CorruptLog``, there is no log whose record could be named. ``where``
    names the file, ``reason`` says what it holds instead.
    """

    def __init__(self, where: str, reason: str) -> None:
        super().__init__(f"{where!r} is not an inbox-core log: {reason}; nothing was changed")
        self.where = where
        self.reason = reason


def fenced(log: str, agent_id: str, why: str) -> LogFenced:
    """The ``LogFenced`` of a refused append: which log, and why this object is not its writer."""
    return LogFenced(f"{log}, agent {agent_id!r}: not the writer ({why}); nothing was written")


# ------------------------------------------------------------- stored events


def encode_event(event: DurableEvent) -> str:
    """The compact ``{"type","data"}`` JSON text of one durable event (section Formats)."""
    return limits.dump_json(event_to_json(event))


def decode_record(seq: int, text: object) -> DurableEvent:
    """Decode one stored record; any failure is a ``CorruptLog`` naming ``seq``."""
    if not isinstance(text, str):
        raise CorruptLog(seq, f"stored event is not text: {type(text).__name__}")
    try:
        document = limits.parse_json(text)
    except InboxCoreError as error:  # past limits.MAX_DOCUMENT_DEPTH (an InvalidInput)
        raise CorruptLog(seq, f"stored event: {error}") from None
    except ValueError as error:
        raise CorruptLog(seq, f"stored event is not JSON: {error}") from None
    try:
        return event_from_json(document)
    except InboxCoreError as error:
        raise CorruptLog(seq, f"{type(error).__name__}: {error}") from None


def decode_rows(rows: Iterable[tuple[object, object]]) -> list[DurableEvent]:
    """Decode ``(seq, event text)`` rows in seq order; a gap or a bad row is ``CorruptLog``."""
    return list(iter_rows(rows))


def iter_rows(rows: Iterable[tuple[object, object]]) -> Iterator[DurableEvent]:
    """``decode_rows`` one event at a time: a reader keeps the good prefix."""
    for expected, (seq, text) in enumerate(rows):
        if seq != expected or isinstance(seq, bool):
            raise CorruptLog(expected, f"expected seq {expected}, found {seq!r}")
        yield decode_record(expected, text)
