"""The errors every store raises beyond the core's (``LogOwned``, ``LogFenced``): typed, so a
caller can tell "retry later" (``LogUnavailable``) from "never" (``IncompatibleLog``) and from
a bad stored record (``CorruptLog``, naming its seq)."""

from __future__ import annotations

from inbox_core.errors import InboxCoreError, LogFenced, ReplayError

__all__ = ["CorruptLog", "IncompatibleLog", "LogUnavailable", "fenced"]


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
