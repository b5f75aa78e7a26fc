"""Typed errors. Every rejected command raises one of these and changes nothing (R26)."""

from __future__ import annotations

import reprlib

_REPR = reprlib.Repr()
_REPR.maxstring = _REPR.maxother = 80
_REPR.maxlevel = 3


def shown(value: object) -> str:
    """``value`` for an error message: a short repr that never raises, whatever the value
    (an int past Python's 4,300-digit limit, a 16 MiB string, an object whose repr fails)."""
    if type(value) is int and value.bit_length() > 256:
        return f"<an int of {value.bit_length()} bits>"
    try:
        return _REPR.repr(value)
    except Exception:  # a hostile value: say what it is, not what it holds
        return f"<{type(value).__name__}>"


class InboxCoreError(Exception):
    """Base class of every error inbox_core raises on purpose."""


class DuplicateMessageId(InboxCoreError):
    """A mutation would make a MessageId pending twice (R4)."""

    def __init__(self, message_id: str) -> None:
        super().__init__(f"message id {shown(message_id)} is already pending")
        self.message_id = message_id


class InvalidInput(InboxCoreError, ValueError):
    """A value or command is malformed: wrong type, missing field, bad routing (R11)."""


class InvalidSplice(InboxCoreError, ValueError):
    """A splice command is malformed: bad target, non-integer coordinates, non-entries (R5)."""


class SteerUnavailable(InboxCoreError):
    """Promotion to next-step needs a live turn that can still reach a step boundary (R8)."""


class UnexpectedReport(InboxCoreError):
    """A host report does not answer what the core awaits: wrong phase, turn or step (R26)."""


class AgentDisposed(InboxCoreError):
    """The agent was disposed; only the in-flight turn's reports are still accepted (R25)."""


class ResumeRequired(InboxCoreError):
    """The replayed log left a turn open (or work unstarted); apply ``Resume`` first (R27)."""


class AgentBusy(InboxCoreError):
    """A command guarded by ``ExpectIdle()`` met an agent that is not idle (R34).

    ``status`` is what was found (``"running"`` or ``"maintenance"``); nothing changed.
    """

    def __init__(self, message: str, *, status: str | None = None) -> None:
        super().__init__(message)
        self.status = status


class TurnMismatch(InboxCoreError):
    """A command guarded by ``ExpectTurn(turn)`` met no live turn ``turn`` (R34).

    ``expected`` is the turn the caller meant; ``found`` the live turn, or None when
    none is live (idle, maintenance, or the turn was aborted); nothing changed.
    """

    def __init__(
        self, message: str, *, expected: int | None = None, found: int | None = None
    ) -> None:
        super().__init__(message)
        self.expected = expected
        self.found = found


class MaintenanceUnavailable(InboxCoreError):
    """Maintenance begins only while the agent is idle (R31)."""


class LogOwned(InboxCoreError):
    """Another live writer owns this agent's log; nothing was written (R29)."""


class LogFenced(InboxCoreError):
    """This log object does not own the log (never acquired, released, or taken over); the
    append wrote nothing (R29)."""


class HopLimit(InboxCoreError):
    """A chain of sends between agents would pass 16 hops (R45, ``limits.MAX_HOPS``).

    Every post of an agent's chain carries its hop count; the store refuses the post that
    would carry it past the limit with this error and writes nothing, so a cycle of agents
    sending to each other ends there and nothing else stops. ``hops`` is the count the
    refused post would have carried (None when not known).
    """

    def __init__(self, message: str, *, hops: int | None = None) -> None:
        super().__init__(message)
        self.hops = hops


class ReplayError(InboxCoreError):
    """A durable event is inconsistent with the projection built so far (R10).

    ``seq`` is the index of the offending event in the folded sequence.
    """

    def __init__(self, seq: int, reason: str) -> None:
        super().__init__(f"event {seq}: {reason}")
        self.seq = seq
        self.reason = reason


class DecodeError(InboxCoreError, ValueError):
    """A JSON document does not match the formats of the spec (section Formats)."""
