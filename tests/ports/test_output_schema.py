"""The output forms' JSON Schemas (R43: specs/schema/output, output-message, output-snapshot)
accept what the reference writes and agree with its decoders (D40): a document, and every
one-change variant of it, validates exactly when decoding raises no ``DecodeError``."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from inbox_core.errors import DecodeError, InboxCoreError
from inbox_core.output import (
    Output,
    OutputSnapshot,
    Usage,
    output_from_json,
    output_message_from_json,
    output_message_to_json,
    output_to_json,
    snapshot_from_json,
    snapshot_to_json,
)
from tests.core.test_output import PARTS, _messages
from tests.ports.schemas import documents, errors, integral_float, is_valid
from tests.ports.test_schemas import _variants

OUTPUT = Output(PARTS, "a-model", Usage(10, 20), "2026-12-06T10:00:00Z", "2026-12-06T10:00:01Z")
DECODERS: dict[str, Callable[[object], object]] = {
    "output": output_from_json,
    "output-message": output_message_from_json,
    "output-snapshot": snapshot_from_json,
}


def _documents() -> list[tuple[str, Any]]:
    written = [("output", output_to_json(OUTPUT)), ("output", output_to_json(Output(())))]
    written += [("output-message", output_message_to_json(m)) for m in _messages()]
    written.append(("output-snapshot", snapshot_to_json(OutputSnapshot(3, 2, PARTS))))
    return [(name, json.loads(json.dumps(doc))) for name, doc in written]


def test_r43_every_output_document_the_reference_writes_is_valid() -> None:
    for name, document in _documents():
        assert errors(name, document) == [], (name, document)
    assert "outputPart" in documents()["output"]["$defs"]
    assert documents()["output-snapshot"]["properties"]["parts"]["items"] == {
        "$ref": "output.schema.json#/$defs/outputPart"
    }


def _decode_error(name: str, document: object) -> bool:
    try:
        DECODERS[name](document)
    except DecodeError:
        return True
    except InboxCoreError:
        pass
    return False


def test_r43_d40_the_output_schemas_agree_with_the_decoders_on_changed_documents() -> None:
    seen: set[str] = set()
    disagree = []
    for name, document in _documents():
        for changed in _variants(document):
            text = name + json.dumps(changed, sort_keys=True)
            if text in seen or integral_float(changed):
                continue
            seen.add(text)
            if _decode_error(name, changed) == is_valid(name, changed):
                disagree.append(text)
    assert len(seen) > 300
    assert disagree == []


@pytest.mark.parametrize(
    ("name", "document"),
    [
        ("output", {"parts": [], "model": ""}),
        ("output", {"parts": [], "endedAt": "tomorrow"}),
        ("output", {"parts": [{"type": "tool-result", "id": "", "content": "", "isError": True}]}),
        ("output-message", {"kind": "text-delta", "turn": 0, "step": 1, "part": 0, "text": ""}),
        ("output-snapshot", {"turn": 1, "step": 1, "parts": [{"type": "text", "text": "\ud800"}]}),
    ],
)
def test_r43_d40_a_value_rule_is_no_shape(name: str, document: Any) -> None:
    """The schemas state shapes only: a value rule broken validates, and the decoder raises
    the value's error (InvalidInput), not a DecodeError."""
    assert is_valid(name, document)
    with pytest.raises(InboxCoreError) as raised:
        DECODERS[name](document)
    assert not isinstance(raised.value, DecodeError)
