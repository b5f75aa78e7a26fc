"""Plain JSON read in one pass (issue 32, D42; issue 17's limits, R26).

Opaque JSON a decoder reads (content blocks, metadata, record data) is what a parser
makes: dicts, lists, strs, ints, floats, bools and None. ``json_values`` freezes it with
a walk that recurses (at most ``limits.MAX_DEPTH`` levels) and reads the common members
inline; anything else, and a caller without that much stack, goes to the walk with its
own stack. ``limits.parse_json`` reads a text with the ``json`` scanner at index 0 when
that reads it whole, and with ``json.loads`` otherwise. Each is held here to what it
stands in for: the same value (the same sizes and depths) or the same error.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from types import MappingProxyType
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from inbox_core import limits
from inbox_core.errors import InboxCoreError, InvalidInput
from inbox_core.json_values import JsonObject, _freeze_tree, freeze_json, frozen_object
from inbox_core.testing.hostile import hostile_documents, hostile_json, nested, storable_json
from tests.core.helpers import identical, outcome

SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))


def freezes_alike(value: Any) -> None:
    """The plain walk (``freeze_json``, ``frozen_object``) and the walk with its own stack
    give the same value or the same error."""
    tree = outcome(_freeze_tree, value) if isinstance(value, dict | list) else None
    plain = outcome(freeze_json, value)
    if tree is not None:
        assert plain[0] == tree[0], (plain, tree)
        assert identical(plain[1], tree[1]) if plain[0] == "ok" else plain == tree
    if isinstance(value, dict):
        assert outcome(frozen_object, value)[0] == plain[0]


@SETTINGS
@given(storable_json())
def test_issue17_plain_json_freezes_as_the_walk_freezes_it(value: Any) -> None:
    freezes_alike(value)


@SETTINGS
@given(hostile_json())
def test_issue17_hostile_json_fails_in_the_plain_walk_as_in_the_walk(hostile: Any) -> None:
    freezes_alike(hostile.value)


@pytest.mark.parametrize(
    "value",
    [
        nested(limits.MAX_DEPTH),
        nested(limits.MAX_DEPTH, kind="array"),
        nested(limits.MAX_DEPTH + 1),
        nested(limits.MAX_DEPTH + 1, kind="array"),
        {"a": [1.5, None, True, 2**63 - 1, -(2**63), {"b": []}]},
        {"a": (1,)},  # not plain: a tuple
        {"a": JsonObject({"b": 1})},  # not plain: frozen already
        [float("inf")],
        [2**63],
        [["\ud800"]],
        {"k": "x" * (limits.MAX_JSON_SIZE - 7)},  # exactly the limit
        {"k": "x" * (limits.MAX_JSON_SIZE - 6)},
        ["x" * (limits.MAX_JSON_SIZE - 3)],
    ],
)
def test_issue17_the_plain_walk_at_the_limits(value: Any) -> None:
    freezes_alike(value)


def test_issue17_freezing_deep_in_a_callers_stack_falls_back_to_the_walk() -> None:
    """A caller with a few frames of room left: the plain walk's recursion runs out, the walk
    with its own stack freezes the value all the same."""
    value = nested(limits.MAX_DEPTH)
    expected = _freeze_tree(value)

    def deep(frames: int) -> Any:
        return deep(frames - 1) if frames else (freeze_json(value), frozen_object(value))

    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(200)
    try:
        here = len(_stack())
        frozen, obj = deep(200 - here - 20)
    finally:
        sys.setrecursionlimit(limit)
    assert identical(frozen, expected)
    assert identical(obj, expected)


def _stack() -> list[Any]:
    frames, frame = [], sys._getframe()
    while frame is not None:
        frames.append(frame)
        frame = frame.f_back  # type: ignore[assignment]
    return frames


def test_issue17_frozen_object_takes_any_mapping_and_refuses_the_rest() -> None:
    """A mapping that is no dict (not plain) goes to the walk with its own stack."""
    proxy = MappingProxyType({"a": [1], "b": {"c": None}})
    assert identical(frozen_object(proxy), _freeze_tree(dict(proxy)))
    with pytest.raises(InvalidInput, match="expected a JSON object"):
        frozen_object([1])


def parsed(parse: Callable[[str], Any], text: str) -> tuple[str, Any]:
    try:
        return "ok", parse(text)
    except InboxCoreError as error:
        return type(error).__name__, str(error)
    except ValueError as error:
        return "ValueError", str(error)


TEXTS_TO_PARSE = st.one_of(
    hostile_documents(), st.text(max_size=30), st.sampled_from([" 1", "1 ", "\ufeff1", "[1] x"])
)


@SETTINGS
@given(TEXTS_TO_PARSE)
def test_r26_the_parser_reads_every_text_as_json_loads_does(text: str) -> None:
    """The scanner at 0 (``json.loads`` without its wrappers) for a text it reads whole,
    ``json.loads`` for any other: the same value or the same error, behind the same
    depth guard (``InvalidInput`` before any parser runs)."""
    new = parsed(limits.parse_json, text)
    if new[0] != "InvalidInput":
        old = parsed(json.loads, text)
        assert new[0] == old[0], (new, old)
        assert identical(new[1], old[1]) if new[0] == "ok" else new == old


LONG_INTEGER = "7" * 4400  # past int()'s 4,300 digits: json.loads raises ValueError


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        (LONG_INTEGER, "InvalidInput"),
        (f"[-{LONG_INTEGER}]", "InvalidInput"),
        (f'{{"a": {{"b": [1, {LONG_INTEGER}]}}}}', "InvalidInput"),
        (f"[{LONG_INTEGER},]", "ValueError"),  # malformed as well: malformed it stays
        (f"[{LONG_INTEGER}] x", "ValueError"),
        ("7" * 4300, "ok"),
    ],
)
def test_d46_an_integer_too_long_to_read_is_out_of_bounds_not_malformed(
    text: str, kind: str
) -> None:
    """Valid JSON whose only fault is an integer past the digits ``int`` reads is a value
    out of int64's bounds (``InvalidInput``, 422 at the front door), not malformed text."""
    found = parsed(limits.parse_json, text)
    assert found[0] == kind, found
    if kind == "InvalidInput":
        assert "4400 digits" in found[1]
