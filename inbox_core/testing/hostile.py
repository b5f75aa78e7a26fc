"""Hypothesis strategies for hostile and edge-of-the-limits input (issue 17, ``limits``).

Two families, for users fuzzing their own hosts and ports as much as for this suite:

- *storable* values sit inside every limit but are odd: strings with the line breaks
  JSON leaves raw (U+2028, U+2029, U+0085), NUL, astral characters; integers at the
  int64 bounds; nesting exactly ``MAX_DEPTH`` deep. Whatever they build must
  round-trip through every codec and every store.
- *hostile* values break one limit each (too deep, too big, an integer past int64 or
  past Python's 4,300-digit ``str`` limit, a lone surrogate in a string or a key, a
  non-finite float, a key that is not a str, an object that is not JSON), placed
  somewhere inside an otherwise storable value; ``hostile_documents`` are JSON
  texts a reader may find in a damaged or forged log. A constructor must refuse the
  first with ``InvalidInput`` and a reader the second with a typed error, never a
  traceback.
"""

from __future__ import annotations

import functools
import json
from typing import Any, Final

import attrs
from hypothesis import strategies as st

from inbox_core import limits
from inbox_core.errors import shown

ODD_CHARACTERS: Final = (
    "\u2028",
    "\u2029",
    "\x85",
    "\x00",
    "\r",
    "\x0b",
    "\x1e",
    "😀",
    "é",
    "\ufeff",
)
"""Scalar values a naive line reader or encoder mishandles; every one of them is storable."""

LONE_SURROGATES: Final = ("\ud800", "\udfff", "\ud83d")  # the last: half of an emoji
HUGE_INTEGERS: Final = (2**63, -(2**63) - 1, 10**5000, -(10**5000))
TOO_DEEP: Final = (limits.MAX_DEPTH + 1, 330, 500, 5_000)


def storable_strings(*, max_size: int = 12) -> st.SearchStrategy[str]:
    """Strings of Unicode scalar values, rich in the characters that break line readers."""
    alphabet = st.one_of(st.characters(exclude_categories=["Cs"]), st.sampled_from(ODD_CHARACTERS))
    return st.text(alphabet, max_size=max_size)


def storable_json(*, max_leaves: int = 12) -> st.SearchStrategy[Any]:
    """Plain JSON (dict/list) within every limit, odd strings and int64 bounds included."""
    scalars = st.one_of(
        st.none(),
        st.booleans(),
        st.integers(-(2**63), 2**63 - 1),
        st.sampled_from((2**63 - 1, -(2**63), limits.MAX_SAFE_INTEGER)),
        st.floats(allow_nan=False, allow_infinity=False),
        storable_strings(),
    )
    return st.recursive(
        scalars,
        lambda inner: st.one_of(
            st.lists(inner, max_size=3),
            st.dictionaries(storable_strings(max_size=4), inner, max_size=3),
        ),
        max_leaves=max_leaves,
    )


def nested(depth: int, *, leaf: Any = None, kind: str = "object") -> Any:
    """A value ``depth`` levels deep (``[]`` is 1 deep), built without recursion."""
    value = leaf
    for _ in range(depth):
        value = {"k": value} if kind == "object" else [value]
    return value


def huge_integers() -> st.SearchStrategy[int]:
    """Integers past int64 or past Python's 4,300-digit ``str`` limit. Drawn by index: a
    strategy holding them would fail when Hypothesis prints its own repr."""
    return st.sampled_from(range(len(HUGE_INTEGERS))).map(HUGE_INTEGERS.__getitem__)


@functools.cache
def big_text(length: int) -> str:
    """One ASCII string of ``length`` characters, built once (a storable string field at
    ``limits.MAX_JSON_SIZE``, or a part of a value too big only as a whole)."""
    return "x" * length


def _too_big() -> Any:
    """Two strings that each fit ``MAX_JSON_SIZE`` and together do not (one value)."""
    half = big_text(limits.MAX_JSON_SIZE // 2)
    return [half, half]


def oversized_blocks() -> st.SearchStrategy[Hostile]:
    """Content blocks each within ``MAX_JSON_SIZE`` whose message is past ``MAX_VALUE_SIZE``
    (``.value``: a list of blocks): what no single walk of one value can see."""
    block = {"type": "text", "text": big_text(limits.MAX_JSON_SIZE - 64)}
    count = limits.MAX_VALUE_SIZE // limits.MAX_JSON_SIZE + 1
    return st.builds(
        lambda extra, small: Hostile([block] * (count + extra) + small),
        st.integers(0, 3),
        st.lists(st.fixed_dictionaries({"type": storable_strings(max_size=4)}), max_size=2),
    )


def _hostile_leaves() -> st.SearchStrategy[Any]:
    return st.one_of(
        st.builds(_too_big),
        huge_integers(),
        st.sampled_from(LONE_SURROGATES),
        st.sampled_from(LONE_SURROGATES).map(lambda s: {s: 1}),  # a lone surrogate as a key
        st.sampled_from((float("nan"), float("inf"), float("-inf"))),
        st.sampled_from(({1: "x"}, {None: 1}, {b"k": 1})),  # keys that are not str
        st.sampled_from((b"bytes", {1, 2}, object(), 1j)),  # not JSON at all
        st.builds(nested, st.sampled_from(TOO_DEEP), kind=st.sampled_from(("object", "array"))),
    )


@attrs.frozen(repr=False)
class Hostile:
    """A drawn hostile value (``value``), with a repr that is safe to print: Hypothesis
    prints every argument of a failing example, and ``repr(10**5000)`` raises."""

    value: Any

    def __repr__(self) -> str:
        return f"Hostile({shown(self.value)})"


def hostile_json() -> st.SearchStrategy[Hostile]:
    """A JSON-like value that breaks exactly one limit somewhere inside it (``.value``)."""
    return st.builds(
        lambda host, bad, rng: Hostile(_embed(host, bad, rng)),
        storable_json(max_leaves=4),
        _hostile_leaves(),
        st.randoms(),
    )


def _embed(host: Any, bad: Any, rng: Any) -> Any:
    """``host`` with ``bad`` put at a random place in it (a fresh container wraps a scalar)."""
    if isinstance(host, dict) and host and rng.random() < 0.7:
        key = rng.choice(sorted(host))
        return {**host, key: _embed(host[key], bad, rng)}
    if isinstance(host, list) and host and rng.random() < 0.7:
        index = rng.randrange(len(host))
        return [*host[:index], _embed(host[index], bad, rng), *host[index + 1 :]]
    return {"bad": bad} if rng.random() < 0.5 else [bad]


def hostile_strings() -> st.SearchStrategy[str]:
    """A str field a store cannot hold: a lone surrogate somewhere in it."""
    return st.builds(
        lambda head, bad, tail: head + bad + tail,
        storable_strings(max_size=4),
        st.sampled_from(LONE_SURROGATES),
        storable_strings(max_size=4),
    )


def hostile_documents() -> st.SearchStrategy[str]:
    """JSON texts a reader may meet in a damaged or forged log: too deep, integers no
    reader takes, escaped lone surrogates, truncated or not JSON at all, the wrong shape."""
    deep = st.builds(
        _deep_document,
        st.sampled_from((limits.MAX_DEPTH + 1, limits.MAX_DOCUMENT_DEPTH + 1, 5_000, 100_000)),
        st.booleans(),
    )
    return st.one_of(
        deep,
        st.sampled_from(
            (
                '{"type":"turn/start","data":{"turn":' + "9" * 5000 + "}}",
                '{"type":"turn/start","data":{"turn":9007199254740992}}',
                '{"type":"host/x","data":' + "1" * 4400 + "}",
                '{"type":"host/x","data":"\\ud800"}',
                '{"type":"host/\\udc00","data":null}',
                '{"type":"host/x","data":{"\\ud83d":1}}',
                '{"type":"host/x","data":1e999}',
                '{"type":"host/x","data":NaN}',
                '{"type":"turn/start"',
                "[]",
                "null",
                '"\\u2028"',
                "{" * 50,
            )
        ),
        st.text(max_size=40),
        storable_json(max_leaves=6).map(json.dumps),
    )


def _deep_document(depth: int, arrays: bool) -> str:
    opening, closing = ("[", "]") if arrays else ('{"a":', "}")
    return f'{{"type":"host/x","data":{opening * depth}1{closing * depth}}}'
