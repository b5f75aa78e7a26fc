"""Hypothesis strategies for what a tool (or a provider) may hand a host: JSON-like values
with what a log refuses mixed in (issue 28 item 17)."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st


def nested(depth: int, leaf: Any = 1) -> Any:
    """``leaf`` inside ``depth`` lists."""
    for _ in range(depth):
        leaf = [leaf]
    return leaf


def json_ish(max_leaves: int = 12, max_depth: int = 120) -> st.SearchStrategy[Any]:
    """JSON-like values holding lone surrogates (in strings and keys), control characters,
    integers far past int64, floats that are not finite, tuples, and nesting up to
    ``max_depth`` levels past what a record holds."""
    text = st.text(st.characters(categories=["L", "N", "P", "Cs", "Zs", "Cc"]), max_size=12)
    leaves = (
        st.none()
        | st.booleans()
        | st.integers(min_value=-(2**90), max_value=2**90)
        | st.floats(allow_nan=True, allow_infinity=True)
        | text
    )
    tree = st.recursive(
        leaves,
        lambda inner: (
            st.lists(inner, max_size=4)
            | st.dictionaries(text, inner, max_size=4)
            | st.tuples(inner, inner)
        ),
        max_leaves=max_leaves,
    )
    return st.one_of(tree, st.builds(nested, st.integers(0, max_depth), tree))
