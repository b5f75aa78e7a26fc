"""What every store is to the rest of the shell: the ``EventLog``, ``Wake`` and ``Store``
protocols (``opening.open_store`` gives the store a ``STORE`` text names).

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
statements, its ownership and its wake. What the two stores answer alike is
``reads.StoreReads``. The worker and the front door know a store only as
``Store``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any, Final, Protocol, TypeVar, runtime_checkable

import attrs

from inbox_core.events import DurableEvent

if TYPE_CHECKING:
    from inbox_core.commands import Command
    from inbox_core.shell.stores.directory import AgentSummary
    from inbox_core.shell.stores.posts import PendingPost, PostOutcome, Receipt
    from inbox_core.shell.stores.tokens import TokenTable
    from inbox_core.shell.stores.wakes import Wake

__all__ = [
    "MAX_LEASE_SECONDS",
    "MIN_LEASE_SECONDS",
    "CheckpointLog",
    "ClosesOnExit",
    "EventLog",
    "Store",
    "Tail",
]

MAX_LEASE_SECONDS: Final = 86_400.0
"""The longest lease a store holds (a day: a longer lease would leave a dead worker's agents
unserved for longer than that); a worker refuses a longer one when given (R37 v4)."""
MIN_LEASE_SECONDS: Final = 0.001
"""The shortest lease: a shorter one lapses before any renewal could reach the database
(and below a microsecond PostgreSQL's interval holds none at all)."""


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


@attrs.frozen(slots=True)
class Tail:
    """What opening reads of a log that keeps checkpoints (R41): the newest checkpoint as
    stored (its text; bytes a damaged or foreign row holds; None when there is none) and
    the events from seq ``start`` on: from the event the checkpoint follows (``seq - 1``,
    whose digest it holds) to the end, or the whole log (``start`` 0) without one. The
    store does not judge the checkpoint: ``stores.checkpoints.open_log`` does."""

    checkpoint: str | bytes | None
    start: int
    events: Sequence[DurableEvent]


@runtime_checkable
class CheckpointLog(Protocol):
    """An ``EventLog`` that keeps checkpoints beside it (R41): every store's log. A log
    without these methods (a host's own) is read whole and gets no checkpoint."""

    @property
    def agent_id(self) -> str:
        """The agent whose log this is (what its checkpoints name)."""

    @property
    def checkpoint_every(self) -> int | None:
        """About how many events apart its owner writes checkpoints (None: never)."""

    def read(self, since: int = 0, until: int | None = None) -> list[DurableEvent]:
        """The events from seq ``since`` on (a tail), before ``until`` if given; needs no
        ownership."""

    def read_tail(self) -> Tail:
        """The newest checkpoint and the events from the one it follows on, in one read."""

    def write_checkpoints(self, items: Sequence[tuple[Any, int, str]]) -> list[Exception | None]:
        """As the owner, store each ``(log, seq, text)`` (logs of this database) as its
        agent's one checkpoint, replacing the others, in one transaction; a log that no
        longer owns its agent writes nothing (its result a ``LogFenced``)."""

    def checkpoints(self) -> list[tuple[object, object]]:
        """Every stored ``(seq, checkpoint)`` of the agent, as stored (for the check)."""


class Store(Protocol):
    """A database of agents' logs, seen from any process (R35-R37, R39): what the worker,
    the command line and the front door use of ``SqliteStore`` and ``PostgresStore``.

    Reads (``outcome``, ``events``, ``wait``, ``watch``, ``candidates``, ``has_owner``,
    ``pending``, ``agents``, ``pending_count``, ``posted_command``) never write (R36 v4);
    ``leases`` says whether ownership is a lease the worker must renew (PostgreSQL) or a
    lock that dies with its process (SQLite).
    ``wait`` and ``watch`` read off the event loop, one read per wake for every waiter of
    an agent in one loop. Every error is a typed ``InboxCoreError``. specs/shell.md
    section 12 says what each promises.
    """

    @property
    def leases(self) -> bool:
        """Whether ownership is a lease a worker renews (else a lock dying with its process)."""

    def log(self, agent_id: str, **options: Any) -> Any:
        """Agent ``agent_id``'s log in this store (an ``EventLog`` serving posts)."""

    def prepare(self) -> None:
        """Create the database's tables now (the first write does otherwise)."""

    def post(self, agent_id: str, command: Command, *, key: str | None = None) -> Receipt:
        """Post ``command`` for agent ``agent_id`` (R35): durable when it returns."""

    def outcome(self, receipt: Receipt) -> PostOutcome:
        """How the post ended so far; ``UnknownReceipt`` for a post not stored."""

    async def wait(self, receipt: Receipt, timeout: float | None = None) -> PostOutcome:
        """The post's outcome once decided; ``PostTimeout`` after ``timeout`` seconds."""

    def watch(self, agent_id: str, since: int = 0) -> AsyncIterator[tuple[int, DurableEvent]]:
        """The agent's ``(seq, event)`` from ``since`` on, then live (R36)."""

    def events(
        self, agent_id: str, since: int = 0, limit: int = ...
    ) -> list[tuple[int, DurableEvent]]:
        """A page of the agent's ``(seq, event)`` from ``since`` on."""

    def read_tail(self, agent_id: str) -> Tail:
        """The agent's newest checkpoint and the events from the one it follows on, in one
        read (R41; read-only: no checkpoint when its table was never made)."""

    def prune(self, *, older_than: float) -> int:
        """Delete decided posts older than ``older_than`` seconds; how many."""

    def candidates(self, limit: int, *, after: str | None = None) -> list[str]:
        """Agents with work and no live owner, in id order after ``after`` (R37)."""

    def has_owner(self, agent_id: str) -> bool:
        """Whether a live process owns the agent's log now (R29)."""

    def pending(self, agent_id: str, limit: int = 100) -> list[PendingPost]:
        """The agent's oldest unconsumed posts."""

    def renew(self, logs: Sequence[Any]) -> set[str]:
        """Renew the leases of ``logs`` in one statement; the agents taken over."""

    def work_wake(self) -> Wake:
        """A wake rung by every post to any agent of the store (R36, R37)."""

    def agents(
        self,
        after: str | None = None,
        limit: int = 100,
        accept: Callable[[str], bool] | None = None,
    ) -> list[AgentSummary]:
        """A page of the store's agents, in id order (R39)."""

    def pending_count(self, agent_id: str) -> int:
        """How many of the agent's posts wait for its owner (R39)."""

    def posted_command(self, receipt: Receipt) -> object:
        """The command a post holds, as stored (R39)."""

    @property
    def tokens(self) -> TokenTable:
        """The store's bearer tokens (R39)."""

    def close(self) -> None:
        """Close the store's connections (idempotent)."""

    def __enter__(self) -> Any: ...

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None: ...


class _Closable(Protocol):
    def close(self) -> None: ...


_Self = TypeVar("_Self")


class ClosesOnExit:
    """``with log:`` / ``with store:`` closes it at the end: the one context manager of every
    store object (its ``close`` is its own, idempotent)."""

    __slots__ = ()

    def __enter__(self: _Self) -> _Self:
        return self

    def __exit__(
        self: _Closable,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
