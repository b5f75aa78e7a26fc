"""Posts (R35): what any process hands an agent it does not own, and the table they wait in.

A post is one caller command in its JSON command form (``command_to_json``,
brief section 8), written as a row of the posts table of the database the
agent's log lives in. The agent's owner consumes it and appends the events
its command caused in one transaction (``PostingLog.append(events,
consumed=...)``), so no crash or takeover loses a post or applies it twice.

This module is the one source of the table layout (``POSTS_COLUMNS``; the
SQLite and PostgreSQL DDL are derived from it), of the values a poster sees
(``Receipt``, ``PostPending``, ``PostApplied``, ``PostRejected``) and of the
check every post goes through, at post time and again when it is served
(``encode_post``, ``decode_post``). See specs/shell.md section 12.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final, Protocol, TypeAlias

import attrs

from inbox_core import limits
from inbox_core.codec import command_from_json, command_to_json
from inbox_core.commands import Cancel, Clear, Command, Move, Remove, Replace, Send, Splice
from inbox_core.errors import DecodeError, InboxCoreError, InvalidInput, shown
from inbox_core.events import DurableEvent
from inbox_core.shell.stores.rows import payload_size
from inbox_core.validators import integer

__all__ = [
    "MAX_KEY_LENGTH",
    "MAX_OUTCOME_TEXT",
    "POSTABLE_TYPES",
    "POSTS_COLUMNS",
    "SQLITE_NOW",
    "Consumed",
    "NotPostable",
    "PendingPost",
    "PostApplied",
    "PostOutcome",
    "PostPending",
    "PostRejected",
    "PostTimeout",
    "PostingLog",
    "Receipt",
    "UnknownReceipt",
    "Unreadable",
    "create_table",
    "decode_post",
    "encode_post",
    "post_key",
]

POSTABLE_TYPES: Final[tuple[type[Command], ...]] = (
    Send,
    Splice,
    Clear,
    Replace,
    Remove,
    Move,
    Cancel,
)
"""The caller commands any process may post (R35). ``Dispose`` is the owner's process
lifecycle (it leaves no durable trace); ``Resume``, maintenance and host reports belong
to the owner's driver."""

MAX_KEY_LENGTH: Final = limits.MAX_AGENT_ID_LENGTH
"""The longest idempotency key (characters): the limits of an agent id."""

MAX_OUTCOME_TEXT: Final = 2**16
"""The most characters of a rejection's stored ``error`` and ``message`` (longer text is cut,
with a marker that says so)."""


# ---------------------------------------------------------------------- values


def _agent(_inst: object, _attribute: attrs.Attribute[Any], value: object) -> None:
    limits.agent_id(value)


@attrs.frozen
class Receipt:
    """A durable post: agent ``agent_id``'s post number ``post_id`` (unique in its database,
    never reused). Built by hand (a receipt kept by a web tier as two columns, say), it is
    checked: ``InvalidInput`` for what no store could have returned."""

    agent_id: str = attrs.field(validator=_agent)
    post_id: int = attrs.field(validator=integer(minimum=1))


@attrs.frozen
class PostPending:
    """The post waits for the agent's owner (none may be serving it now)."""


@attrs.frozen
class PostApplied:
    """The owner applied the post: its command's events are in the log (R35)."""


@attrs.frozen
class PostRejected:
    """The core refused the command: ``error`` is the typed error's class name (e.g.
    ``"AgentBusy"``), ``message`` its text. Nothing was appended for it."""

    error: str
    message: str


PostOutcome: TypeAlias = PostPending | PostApplied | PostRejected


class NotPostable(InvalidInput):
    """``post`` refuses a command that is not a caller command of R35 (``Dispose``,
    ``Resume``, maintenance, host reports) or an argument it cannot store; nothing was
    written. A served row holding one is consumed with this error."""


class PostTimeout(InboxCoreError, TimeoutError):
    """``wait`` timed out before the post was decided (it may still be applied later)."""


class UnknownReceipt(InboxCoreError):
    """No post with this receipt in the store (never made here, or pruned)."""


# ---------------------------------------------------------------- the command


def encode_post(command: object) -> str:
    """The compact JSON text a post stores, after every check that can be made before
    the owner sees it: a postable command (``NotPostable``) that decodes back (R35)."""
    if not isinstance(command, POSTABLE_TYPES):
        raise NotPostable(_not_postable(command))
    text = limits.dump_json(  # in steps past LONG_SIZE, like an event (D47)
        command_to_json(command), in_steps=payload_size(command) > limits.LONG_SIZE
    )
    decode_post(text)  # what the owner will do: a command that cannot come back is refused
    return text


def decode_post(text: object) -> Command:
    """The command of a stored post; ``DecodeError`` (or ``NotPostable``) saying why not.

    Rows are written by any producer, in any language: nothing here trusts them.
    """
    if isinstance(text, Unreadable):
        raise DecodeError(f"the post {text.why}")
    if not isinstance(text, str):
        raise DecodeError(f"the post's command is not text but {type(text).__name__}")
    if len(text) > limits.MAX_DOCUMENT_SIZE:  # characters <= UTF-8 bytes, which it bounds
        raise DecodeError(
            f"the post's command is {len(text)} characters long, over {limits.MAX_DOCUMENT_SIZE}"
        )
    try:
        document = limits.parse_command(text)  # its cost bounded before it is parsed (D47)
    except InvalidInput as error:
        raise DecodeError(f"the post's command: {error}") from None
    except ValueError as error:
        raise DecodeError(f"the post's command is not JSON: {error}") from None
    command = command_from_json(document)
    if not isinstance(command, POSTABLE_TYPES):
        raise NotPostable(_not_postable(command))
    return command


def _not_postable(command: object) -> str:
    name = type(command).__name__
    if name in ("Dispose", "Resume", "BeginMaintenance", "EndMaintenance"):
        why = "the owner's lifecycle, not a caller command"
    elif name in ("PreStepDecided", "PreStepFailed", "StepFinished", "TurnStoppingDone"):
        why = "a host report, which only the owner's driver makes"
    else:
        why = "not a command"
    allowed = ", ".join(cls.__name__ for cls in POSTABLE_TYPES)
    return f"cannot post {name} ({why}); a post holds one of {allowed}; nothing was written"


def post_key(key: object) -> str | None:
    """An idempotency key: None, or a non-empty str with the limits of an agent id."""
    if key is None:
        return None
    try:
        return limits.agent_id(key)
    except InvalidInput as error:
        raise InvalidInput(str(error).replace("agent_id", "key", 1)) from None


def _stored(text: object, plain: bool) -> str:
    """``text`` as every store can hold it (R35 v4): each lone surrogate as its escape, each
    NUL as ``\\x00`` (PostgreSQL's text refuses it), at most ``MAX_OUTCOME_TEXT``
    characters; ``plain``: every non-ASCII character escaped too (for a database whose
    encoding cannot hold the text)."""
    if not isinstance(text, str):
        text = shown(text)
    if "\x00" in text:
        text = text.replace("\x00", "\\x00")
    text = limits.storable_text(text, MAX_OUTCOME_TEXT)
    if plain and not text.isascii():
        text = text.encode("ascii", "backslashreplace").decode("ascii")
    return text


def outcome_from_row(outcome: object, error: object, message: object) -> PostOutcome:
    """The outcome of a stored row (``outcome`` NULL while pending)."""
    if outcome is None:
        return PostPending()
    if outcome == "applied":
        return PostApplied()
    return PostRejected(str(error), str(message))


# ----------------------------------------------------------- the owner's side


@attrs.frozen
class Unreadable:
    """What a store read in place of a row's command it cannot hand over as text (a BLOB,
    invalid UTF-8, an agent id that is no text, a command past ``MAX_DOCUMENT_SIZE``, not
    read at all): ``why`` completes "the post ...". ``decode_post`` rejects it (R35 v4)."""

    why: str


@attrs.frozen
class PendingPost:
    """An unconsumed row: its id and its command text (anything a producer wrote), or an
    ``Unreadable`` saying why the store could not read it as text."""

    post_id: int
    command: object


@attrs.frozen
class Consumed:
    """A post decided by the owner, written in the transaction that appends its events.
    ``plain``: store a rejection's text in ASCII (the retry of a write the database refused)."""

    post_id: int
    outcome: PostApplied | PostRejected
    plain: bool = False

    def columns(self) -> tuple[str, str | None, str | None]:
        """``(outcome, error, message)`` as stored: a rejection's text made storable first,
        whatever it holds (R35 v4: a row's outcome can always be written)."""
        outcome, plain = self.outcome, self.plain
        if isinstance(outcome, PostRejected):
            return "rejected", _stored(outcome.error, plain), _stored(outcome.message, plain)
        return "applied", None, None


class PostingLog(Protocol):
    """A log that serves posts (``SqliteLog``, ``PostgresLog``)."""

    @property
    def agent_id(self) -> str: ...

    def pending_posts(self, limit: int) -> list[PendingPost]:
        """The agent's oldest unconsumed posts, by ``post_id``; needs no ownership."""

    def append(self, events: Sequence[DurableEvent], *, consumed: Sequence[Consumed] = ()) -> None:
        """Append ``events`` and mark ``consumed`` in one transaction, if this object owns the
        log (else ``LogFenced``, nothing written)."""


# ------------------------------------------------------------ the table layout


@attrs.frozen
class Column:
    name: str
    sqlite: str
    postgres: str
    meaning: str


SQLITE_NOW: Final = "strftime('%Y-%m-%dT%H:%M:%fZ', 'now')"
_OUTCOMES: Final = "CHECK (outcome IN ('applied', 'rejected'))"

POSTS_COLUMNS: Final = (
    Column(
        "post_id",
        "INTEGER PRIMARY KEY AUTOINCREMENT",
        "bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY",
        "assigned by the database, never reused; the order posts are applied in",
    ),
    Column("agent_id", "TEXT NOT NULL", "text NOT NULL", "the agent the post is for"),
    Column("command", "TEXT NOT NULL", "text NOT NULL", "the command's JSON form (section 8)"),
    Column("key", "TEXT", "text", "idempotency key, NULL for none; unique per agent"),
    Column(
        "posted_at",
        f"TEXT NOT NULL DEFAULT ({SQLITE_NOW})",
        "timestamptz NOT NULL DEFAULT clock_timestamp()",
        "when the row was written (the database's clock)",
    ),
    Column(
        "outcome",
        f"TEXT {_OUTCOMES}",
        f"text {_OUTCOMES}",
        "NULL while pending, then 'applied' or 'rejected'",
    ),
    Column("error", "TEXT", "text", "a rejected command's error class name"),
    Column("message", "TEXT", "text", "a rejected command's error text"),
    Column("decided_at", "TEXT", "timestamptz", "when the owner consumed it"),
)


def create_table(table: str, dialect: str, exists: str) -> str:
    """The ``CREATE TABLE`` of the posts table in ``dialect`` (a ``Column`` field name)."""
    lines = [f"    {c.name} {getattr(c, dialect)}" for c in POSTS_COLUMNS]
    lines.append("    UNIQUE (agent_id, key)")
    return f"CREATE TABLE {exists}{table} (\n" + ",\n".join(lines) + "\n)"
