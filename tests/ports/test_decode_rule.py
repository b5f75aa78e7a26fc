"""D40: one rule decides ``DecodeError`` against a value's error, and the schemas state it.

A document the JSON Schema of its format refuses is a ``DecodeError`` wherever
the fault is; one it accepts decodes, or raises the error of the value whose
rule it breaks. So "the schema accepts" is equivalent to "no ``DecodeError``"
(formats.md section 1, *Shapes and values*), checked here on every document of
every vector and on documents changed at random: keys dropped or added, values
swapped for other JSON types, tags and enums, value rules broken, several at
once. The documented exceptions: JSON Schema counts ``1.0`` as an integer, and a
command document past ``maxCommandValues`` is ``InvalidInput`` before its shape
is judged (D47).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from inbox_core import codec
from inbox_core.errors import DecodeError, InboxCoreError
from inbox_core.vectors import read_vector, vector_files
from tests.ports.schemas import integral_float, is_valid, past_the_values

ROOT = Path(__file__).resolve().parents[2]
VECTORS = [read_vector(path) for path in vector_files(ROOT / "specs" / "vectors")]

DECODERS: dict[str, Callable[[Any], Any]] = {
    "command": codec.command_from_json,
    "event": codec.event_from_json,  # a bare event or a log record (with its seq)
    "message": codec.message_from_json,
    "entry": codec.ENTRY.decode,
    "notification": codec.notification_from_json,
}


def outcome(kind: str, doc: Any) -> str:
    """``"ok"``, ``"DecodeError"`` or the name of the value's error ``doc`` raises."""
    try:
        DECODERS[kind](doc)
    except InboxCoreError as error:
        return type(error).__name__
    return "ok"


def schema_of(kind: str, doc: Any) -> str:
    """The schema a document of ``kind`` is held to: a log record has a ``seq``."""
    if kind == "event":
        return "log-record" if isinstance(doc, dict) and "seq" in doc else "durable-event"
    return kind


def disagreement(kind: str, doc: Any) -> str | None:
    """None if the schema and the decoder agree on ``doc`` (D40), else what each said."""
    decoded = outcome(kind, doc)
    valid = is_valid(schema_of(kind, doc), doc)
    if valid == (decoded != "DecodeError"):
        return None
    if decoded == "DecodeError" and integral_float(doc):
        return None  # the documented exception: 1.0 is no integer in the format
    if decoded == "InvalidInput" and kind == "command" and past_the_values(doc):
        return None  # D47: a command's values are counted before its shape is read
    return f"schema {'accepts' if valid else 'refuses'}, decoder says {decoded}"



def documents() -> Iterator[tuple[str, Any]]:
    """Every command, event, notification, message and entry the vectors hold."""
    for vector in VECTORS:
        for seq, event in enumerate(vector.get("seed", [])):
            yield "event", event
            yield "event", {"seq": seq, **event}
        for step in vector["commands"]:
            yield "command", step["command"]
            for event in step.get("durable", []):
                yield "event", event
                if event["type"] == "user/message":
                    yield "message", event["data"]
                if event["type"] == "agent/inbox/spliced":
                    yield from (("entry", entry) for entry in event["data"]["inserted"])
            yield from (("notification", note) for note in step.get("notifications", []))


DOCUMENTS = list(documents())


def test_d37_every_vector_document_validates_exactly_when_it_decodes_without_decode_error() -> None:
    kinds = {kind for kind, _ in DOCUMENTS}
    assert kinds == set(DECODERS)
    bad = [(kind, doc, why) for kind, doc in DOCUMENTS if (why := disagreement(kind, doc))]
    assert bad == []


def test_d37_the_vectors_pin_both_sides_of_the_rule() -> None:
    """The stored vectors hold command steps rejected for their shape and for a value."""
    names = {
        step["error"]
        for vector in VECTORS
        for step in vector["commands"]
        if step.get("error") in ("DecodeError", "InvalidInput", "InvalidSplice")
    }
    assert names == {"DecodeError", "InvalidInput", "InvalidSplice"}


# ------------------------------------------------------------------ changed documents

OTHERS: tuple[Any, ...] = (
    None, 0, -1, 1.5, 1.0, 2**53, True, "", "x", "host/", "next-step", "disposed",
    [], [1], {}, {"kind": "user"}, {"type": "host/x", "data": 1}, "n" * 121,
)  # fmt: skip
"""What a value is swapped for: other JSON types, enum and tag values, value-rule breakers."""


def _paths(doc: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    yield path
    if isinstance(doc, dict):
        for key, value in doc.items():
            yield from _paths(value, (*path, key))
    elif isinstance(doc, list):
        for index, value in enumerate(doc):
            yield from _paths(value, (*path, index))


def _change(doc: Any, path: tuple[Any, ...], how: str, other: Any) -> Any:
    """``doc`` with one change at ``path``: ``swap`` the value, ``drop`` it, or ``add`` a key
    next to it (a change that does not apply returns ``doc`` as is)."""
    doc = copy.deepcopy(doc)
    if not path:
        return other if how == "swap" else doc
    *parents, last = path
    parent = doc
    for key in parents:
        parent = parent[key]
    if how == "swap":
        parent[last] = other
    elif how == "drop":
        del parent[last]
    elif isinstance(parent, dict):
        parent["extra" if other is None else f"k{len(parent)}"] = other
    return doc


@st.composite
def changed(draw: st.DrawFn) -> tuple[str, Any]:
    """A vector document with one to three random changes."""
    kind, doc = draw(st.sampled_from(DOCUMENTS))
    for _ in range(draw(st.integers(1, 3))):
        path = draw(st.sampled_from(list(_paths(doc))))
        how = draw(st.sampled_from(["swap", "swap", "drop", "add"]))
        doc = _change(doc, path, how, draw(st.sampled_from(OTHERS)))
    return kind, doc


def _agree(case: tuple[str, Any]) -> None:
    kind, doc = case
    assert disagreement(kind, doc) is None, json.dumps(doc)[:2000]


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(changed())
def test_d37_a_changed_document_validates_exactly_when_it_decodes_without_decode_error(
    case: tuple[str, Any],
) -> None:
    """Hypothesis: whatever is changed, and however many faults of either kind a document
    holds, the schema and the decoder agree (a shape error anywhere wins)."""
    _agree(case)


@pytest.mark.slow
@settings(max_examples=3000, deadline=None, suppress_health_check=list(HealthCheck))
@given(changed())
def test_d37_many_changed_documents_agree(case: tuple[str, Any]) -> None:
    _agree(case)


def test_d37_one_point_zero_is_the_documented_exception() -> None:
    doc = {"type": "turn-stopping-done", "turn": 1.0}
    assert is_valid("command", doc)
    with pytest.raises(DecodeError):
        codec.command_from_json(doc)
