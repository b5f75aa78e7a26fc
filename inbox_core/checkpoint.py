"""Checkpoints (R41): what replay keeps after event ``seq``, in a versioned JSON form.

A store keeps checkpoints beside each agent's log so that opening an agent reads
the newest one and only the events after it (``replay.replay_from``), instead of
folding the whole log. The log stays the only authority (R10): a checkpoint is a
cache of ``replay.LogFold``'s state, and one that does not decode, was taken for
another agent, names a version this code does not know, or does not *match* the
log (the event before its ``seq`` is not the one it was taken after: ``digest``)
is ignored, and the whole log is replayed.

The form (specs/formats.md, "Checkpoints"; schema ``specs/schema/checkpoint.schema.json``)::

    {"version": 1, "agent": "a", "seq": 1234, "digest": "<64 hex>",
     "lastTurn": 7, "nextTurn": [entry...], "nextStep": [entry...],
     "turn": null | {"step": 2, "stepOpen": true, "admitting": false,
                     "claim": {"nextStep": [entry...], "nextTurn": [entry...]},
                     "abort": cause | null},
     "goalRounds": {"goal id": rounds, ...}}

``digest`` is the SHA-256, in lowercase hex, of the UTF-8 compact JSON text
(``limits.dump_json``) of ``event_to_json`` of the event at ``seq - 1``: the
same text from the event however the store keeps it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any, Final

from inbox_core import limits
from inbox_core.codec import CAUSE, ENTRY, event_to_json
from inbox_core.errors import DecodeError, InvalidInput, shown
from inbox_core.events import DurableEvent
from inbox_core.replay import Checkpoint, LogFold, OpenTurn
from inbox_core.state import Claim
from inbox_core.wire import Array, Bool, Field, Int, Map, Nullable, Record, Str

__all__ = [
    "CHECKPOINT_VERSION",
    "checkpoint_from_json",
    "checkpoint_to_json",
    "event_digest",
    "matches",
    "take",
]

CHECKPOINT_VERSION: Final = 1
"""The version this code writes and reads; any other is ignored (R41)."""

ENTRIES: Final = Array(ENTRY)
CLAIM: Final = Record("claim", Claim, (Field("next_step", ENTRIES), Field("next_turn", ENTRIES)))
OPEN_TURN: Final = Record(
    "openTurn",
    OpenTurn,
    (
        Field("step", Int(0)),
        Field("step_open", Bool()),
        Field("admitting", Bool()),
        Field("claim", CLAIM),
        Field("abort", Nullable(CAUSE)),
    ),
)
CHECKPOINT: Final = Record(
    "checkpoint",
    Checkpoint,
    (
        Field("seq", Int(1)),
        Field("digest", Str(min_length=64, max_length=64)),
        Field("last_turn", Int(0)),
        Field("next_turn", ENTRIES),
        Field("next_step", ENTRIES),
        Field("turn", Nullable(OPEN_TURN)),
        Field("goal_rounds", Map(Int(1))),
    ),
)
"""The checkpoint's own fields; the document adds ``version`` and ``agent``."""
ENVELOPE: Final = ("version", "agent")


def event_digest(event: DurableEvent) -> str:
    """The SHA-256 (lowercase hex) of ``event``'s compact JSON text: what names the event a
    checkpoint was taken after."""
    text = limits.dump_json(event_to_json(event))
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def take(fold: LogFold) -> Checkpoint:
    """The checkpoint of what ``fold`` folded (at least one event)."""
    if fold.last_event is None:
        raise InvalidInput("a checkpoint follows at least one event")
    return fold.checkpoint(event_digest(fold.last_event))


def matches(checkpoint: Checkpoint, event: DurableEvent) -> bool:
    """Whether ``checkpoint`` was taken right after ``event`` (the log's event at
    ``checkpoint.seq - 1``)."""
    return event_digest(event) == checkpoint.digest


def checkpoint_to_json(checkpoint: Checkpoint, agent: str) -> dict[str, Any]:
    """The document of ``checkpoint``, taken of agent ``agent``'s log."""
    if not isinstance(checkpoint, Checkpoint):
        raise InvalidInput(f"not a checkpoint: {shown(checkpoint)}")
    return {"version": CHECKPOINT_VERSION, "agent": agent, **CHECKPOINT.encode(checkpoint)}


def checkpoint_from_json(data: object, agent: str) -> Checkpoint:
    """The checkpoint a document holds for agent ``agent``'s log.

    ``DecodeError`` for anything else: a document of another shape, version or agent, or
    one whose values no fold could have kept (an id pending twice): a checkpoint is a
    cache, never input, so there is one way for it to be wrong.
    """
    if not isinstance(data, Mapping):
        raise DecodeError(f"checkpoint: expected a JSON object, got {type(data).__name__}")
    version = data.get("version")
    if type(version) is not int or version != CHECKPOINT_VERSION:
        raise DecodeError(f"checkpoint: version {shown(version)} is not {CHECKPOINT_VERSION}")
    if data.get("agent") != agent:
        raise DecodeError(f"checkpoint: taken for agent {shown(data.get('agent'))}")
    fields = {k: v for k, v in data.items() if k not in ENVELOPE}
    try:
        return CHECKPOINT.decode(fields, "checkpoint")
    except DecodeError:
        raise
    except InvalidInput as error:
        raise DecodeError(f"checkpoint: {error}") from None
