"""``fit_json``: any plain JSON-ish value becomes a value a host record holds, within its
budget, keeping what fits (issue 28 item 17; specs/shell.md section 11)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from inbox_core import HostRecord, InvalidInput, limits
from inbox_core.integrations._fit import SHORTEST_CUT, fit_json
from inbox_core.json_values import json_size, thaw_json

from .strategies import json_ish, nested


@settings(max_examples=50, deadline=None)
@given(
    parts=st.lists(json_ish(max_leaves=20, max_depth=90), min_size=1, max_size=4),
    budget=st.integers(300, 3000),
)
def test_r30_property_any_value_fits_a_record_within_its_budget(
    parts: list[Any], budget: int
) -> None:
    """R30, item 17: whatever a message's part fields hold, the fitted value is accepted by
    HostRecord, measures at most the budget (or is refused as InvalidInput when the
    structure alone leaves no room), keeps the structure above the units, and leaves a
    value that already fits exactly as it was."""
    data = {"parts": [{"content": part, "part_kind": "x"} for part in parts], "kind": "request"}
    try:
        fitted = fit_json(data, budget, unit_depth=3)
    except InvalidInput:
        assert budget < len(parts) * (SHORTEST_CUT + 40) + 40
        return
    record = HostRecord("host/test", fitted)
    assert json_size(record.data) <= budget
    assert [part["part_kind"] for part in fitted["parts"]] == ["x"] * len(parts)
    try:
        as_is = HostRecord("host/test", data)
    except InvalidInput:
        return
    if json_size(as_is.data) <= budget:
        assert thaw_json(record.data) == thaw_json(as_is.data)


def test_r30_units_too_deep_or_too_wide_become_their_json_text() -> None:
    """R30: a unit nested past maxDepth, or holding an integer past int64, becomes its JSON
    text with the digits kept; its neighbours stay as they are; a string's lone surrogate
    is escaped; an integer past int64 outside every unit becomes its digits."""
    tall = nested(70)
    data = {"a": [{"deep": tall, "wide": {"n": 2**64}, "fine": [1, "\ud800"]}], "n": -(2**70)}
    fitted = fit_json(data, limits.MAX_JSON_SIZE, unit_depth=3)
    assert fitted == {
        "a": [
            {
                "deep": json.dumps(tall, separators=(",", ":")),
                "wide": '{"n":18446744073709551616}',
                "fine": [1, "\\ud800"],
            }
        ],
        "n": "-1180591620717411303424",  # above the units: its digits in place
    }


def test_r30_the_largest_units_are_cut_to_one_length_with_a_marker() -> None:
    """R30: over budget, only the units longer than a common length are cut (marker and
    all); the short ones stay whole."""
    data = {"p": [{"a": "a" * 5000, "b": "b" * 3000, "c": "short", "d": list(range(10))}]}
    fitted = fit_json(data, 2000, unit_depth=3)
    part = fitted["p"][0]
    assert (part["c"], part["d"]) == ("short", list(range(10)))
    assert part["a"].endswith("… [cut: 5000 characters]")
    assert part["b"].endswith("… [cut: 3000 characters]")
    assert len(part["a"]) == len(part["b"])
    assert json_size(HostRecord("host/test", fitted).data) <= 2000


def test_r30_a_structure_with_no_room_is_refused() -> None:
    """R30: when the structure around the units alone exceeds the budget, InvalidInput."""
    with pytest.raises(InvalidInput, match="structure alone"):
        fit_json({"parts": [{"x": 1}] * 100}, 500, unit_depth=3)
    with pytest.raises(InvalidInput):
        fit_json("a string", 500, unit_depth=3)
