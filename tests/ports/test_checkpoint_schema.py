"""The checkpoint's JSON Schema (R41, specs/schema/checkpoint.schema.json) accepts every
document the reference writes, at every position of a session, and rejects what the decoder
refuses for its shape; it is generated from ``inbox_core.checkpoint.CHECKPOINT`` like the
others (``tools/gen_schemas.py``, checked by test_schemas.py)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from inbox_core import DecodeError
from inbox_core.checkpoint import CHECKPOINT_VERSION, checkpoint_from_json, checkpoint_to_json, take
from inbox_core.replay import LogFold
from tests.core.test_checkpoint import SESSION
from tests.ports.schemas import errors, is_valid


def _document(at: int) -> dict[str, Any]:
    taken = take(LogFold().feed(SESSION[:at]))
    return json.loads(json.dumps(checkpoint_to_json(taken, "agent-a")))


def test_R41_every_checkpoint_the_reference_writes_is_valid() -> None:
    for at in range(1, len(SESSION) + 1):
        document = _document(at)
        assert errors("checkpoint", document) == [], at


@pytest.mark.parametrize(
    "change",
    [
        lambda d: d.update(version=CHECKPOINT_VERSION + 1),
        lambda d: d.pop("agent"),
        lambda d: d.update(agent=7),
        lambda d: d.update(seq="1"),
        lambda d: d.update(digest=None),
        lambda d: d.update(extra=1),
        lambda d: d.pop("goalRounds"),
        lambda d: d.update(goalRounds={"g": True}),
        lambda d: d.update(turn={"step": 1}),
        lambda d: d.update(nextStep=[{"wakeup": True}]),
    ],
)
def test_R41_a_document_of_another_shape_is_invalid_and_refused(change: Any) -> None:
    """What the schema rejects for its shape, the decoder refuses too (a DecodeError)."""
    document = _document(6)
    change(document)
    assert not is_valid("checkpoint", document)
    with pytest.raises(DecodeError):
        checkpoint_from_json(document, "agent-a")


@pytest.mark.parametrize(
    "change",
    [
        lambda d: d.update(agent=""),
        lambda d: d.update(seq=0),
        lambda d: d.update(digest="A" * 64),
        lambda d: d.update(digest="0" * 63),
        lambda d: d.update(goalRounds={"g": 0}),
        lambda d: d.update(lastTurn=-1),
    ],
)
def test_R41_D40_a_value_rule_broken_is_valid_in_shape_yet_refused(change: Any) -> None:
    """The schema states shapes only (D40); a checkpoint is no input, so a value rule it
    breaks is a DecodeError too (formats.md, "Checkpoints": one way to be wrong)."""
    document = _document(6)
    change(document)
    assert is_valid("checkpoint", document)
    with pytest.raises(DecodeError):
        checkpoint_from_json(document, "agent-a")
