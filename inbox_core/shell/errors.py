"""The errors an agent raises once it can no longer go on: stopped, or handed over."""

from __future__ import annotations

from inbox_core.errors import InboxCoreError

__all__ = ["AgentDetached", "DriverStopped", "OutputClosed"]


class DriverStopped(RuntimeError):
    """The driver could not record a report (the log failed, or a core bug); ``__cause__`` says why.

    Raised by ``when_idle``/``aclose``/``durable`` (and ``run_maintenance``) of an
    agent whose driver stopped: its open turn can no longer progress. The log
    holds everything committed; a new ``LoopAgent`` over it resumes (the turn
    closes ``interrupted``). A writer that lost its log (R29) stops the same way,
    with ``LogFenced`` as the cause; a store that became unreachable, with
    ``LogUnavailable``. With a ``ThreadWriter`` a failed write stops the agent
    altogether: every later command raises it too (R37).
    """


class AgentDetached(InboxCoreError):
    """The agent was detached (R29): it no longer owns its log and refuses every command.

    Nothing was changed or written. The log is the agent now: build a new
    ``LoopAgent`` over it (here or in another process) to go on.
    """


class OutputClosed(InboxCoreError):
    """Output published for a step that is not running (R43): the step ended, its turn was
    aborted, or no step runs (``signal.output`` outside ``run_step``). Nothing changed; the
    step, if any, goes on.
    """
