"""inbox_core.shell: the thin asyncio layer that drives a host's model loop (brief section 9).

``LoopAgent(host, *, log=None)`` implements the structural ``inbox_core.Agent``
protocol over the pure reducer: synchronous delivery and edits, notifications
in commit order, one driver task per running agent calling the ``Host``
hooks, and a durable ``EventLog`` (``MemoryLog``, ``SqliteLog``) that a new
agent replays and resumes. Only this package imports asyncio, sqlite3 or
logging; the core stays pure. See specs/shell.md.
"""

from inbox_core.shell.agent import DriverStopped, LoopAgent, Subscriber
from inbox_core.shell.echo import EchoHost
from inbox_core.shell.host import AbortSignal, Host
from inbox_core.shell.logs import (
    CorruptLog,
    EventLog,
    MemoryLog,
    SqliteLog,
    from_json_lines,
    to_json_lines,
)

__all__ = [
    "AbortSignal",
    "CorruptLog",
    "DriverStopped",
    "EchoHost",
    "EventLog",
    "Host",
    "LoopAgent",
    "MemoryLog",
    "SqliteLog",
    "Subscriber",
    "from_json_lines",
    "to_json_lines",
]
