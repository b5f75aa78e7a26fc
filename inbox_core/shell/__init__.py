"""inbox_core.shell: the thin asyncio layer that drives a host's model loop (brief section 9).

``LoopAgent(host, *, log=None)`` implements the structural ``inbox_core.Agent``
protocol over the pure reducer: synchronous delivery and edits, notifications
in commit order, one driver task per running agent calling the ``Host``
hooks, and a durable ``EventLog`` (``MemoryLog``, ``SqliteLog``,
``PostgresLog``) that a new agent acquires, replays and resumes. One writer
per agent log, enforced by the store (R29): ``LogOwned``, ``LogFenced``,
``detach()``. Delivery from any process (R35, R36): ``SqliteStore``,
``PostgresStore`` (``open_store(text)`` builds one from ``sqlite:PATH``, a
``postgresql://`` URL or a libpq string), ``Receipt`` and the post outcomes. Workers that share a
store (R37): ``Worker``, over the writers of the commit path (``InlineWriter``,
``ThreadWriter``). Only this package
imports asyncio, sqlite3, psycopg or logging; the core stays pure. See
specs/shell.md.
"""

from inbox_core.errors import LogFenced, LogOwned
from inbox_core.shell.agent import (
    AgentDetached,
    DriverStopped,
    LoopAgent,
    MaintenanceJob,
    Subscriber,
)
from inbox_core.shell.echo import EchoHost
from inbox_core.shell.errors import OutputClosed
from inbox_core.shell.host import AbortSignal, Host, Recorded, RestoringHost
from inbox_core.shell.output import StepOutput
from inbox_core.shell.stores.base import EventLog
from inbox_core.shell.stores.errors import CorruptLog, IncompatibleLog, LogUnavailable
from inbox_core.shell.stores.jsonl import from_json_lines, to_json_lines
from inbox_core.shell.stores.memory import MemoryLog
from inbox_core.shell.stores.opening import open_store, parse_store
from inbox_core.shell.stores.postgres.log import PostgresLog
from inbox_core.shell.stores.postgres.store import PostgresStore
from inbox_core.shell.stores.posts import (
    NotPostable,
    PostApplied,
    PostOutcome,
    PostPending,
    PostRejected,
    PostTimeout,
    Receipt,
    UnknownReceipt,
)
from inbox_core.shell.stores.sqlite.log import SqliteLog
from inbox_core.shell.stores.sqlite.store import SqliteStore
from inbox_core.shell.stores.writers import InlineWriter, ThreadWriter, Writer
from inbox_core.shell.worker import Worker, WorkerStats

__all__ = [
    "AbortSignal",
    "AgentDetached",
    "CorruptLog",
    "DriverStopped",
    "EchoHost",
    "EventLog",
    "Host",
    "IncompatibleLog",
    "MaintenanceJob",
    "Recorded",
    "RestoringHost",
    "LogUnavailable",
    "LogFenced",
    "LogOwned",
    "LoopAgent",
    "MemoryLog",
    "NotPostable",
    "OutputClosed",
    "PostApplied",
    "PostOutcome",
    "PostPending",
    "PostRejected",
    "PostTimeout",
    "PostgresLog",
    "PostgresStore",
    "Receipt",
    "SqliteLog",
    "SqliteStore",
    "StepOutput",
    "UnknownReceipt",
    "Subscriber",
    "InlineWriter",
    "ThreadWriter",
    "Worker",
    "WorkerStats",
    "Writer",
    "from_json_lines",
    "open_store",
    "parse_store",
    "to_json_lines",
]
