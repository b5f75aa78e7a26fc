"""Fitting a JSON value into what one host record may hold (specs/shell.md section 11).

A host records what it was told (a model's reply, a tool's result), and what it was told
need not fit the log's limits (``inbox_core.limits``): a lone surrogate, an integer past
int64, nesting past ``MAX_DEPTH``, more characters than a record holds. ``fit_json``
keeps what fits and represents the rest as text, cut with a marker where it must be, so
the record is written and the conversation goes on. It works on plain JSON (dicts with
str keys, lists, scalars) without recursion, and imports no framework.
"""

from __future__ import annotations

import math
import sys
from typing import Any, Final

from inbox_core import limits
from inbox_core.errors import InvalidInput

SHORTEST_CUT: Final = 64
"""A unit is never cut shorter than this (its marker alone is about 30 characters): a
value that would need it is not fitted (``InvalidInput``)."""


def escaped(text: str) -> str:
    """``text`` with each lone surrogate written as its escape (``"\\ud800"``), uncut."""
    return limits.storable_text(text, sys.maxsize)


def _outside_int64(value: Any) -> bool:
    return (
        isinstance(value, int)
        and not isinstance(value, bool)
        and not -limits.MAX_JSON_INTEGER - 1 <= value <= limits.MAX_JSON_INTEGER
    )


def _leaf(value: Any) -> Any:
    if isinstance(value, str):
        return escaped(value)
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, int):
        try:
            str(value)  # JSON text can hold it (a unit holding it becomes that text)
        except ValueError:  # past str's 4,300 digits: a description
            return limits.short_int(value)
        return int(value)
    if isinstance(value, float):
        return float(value) if math.isfinite(value) else None  # pydantic's JSON form
    return escaped(repr(value))


def _cleaned(root: Any) -> Any:
    """A copy of ``root`` whose strings and keys are storable and whose scalars are plain
    (``_leaf``), any depth; integers outside int64 stay (``fit_json`` deals with them)."""
    if not isinstance(root, (dict, list, tuple)):
        return _leaf(root)
    top: Any = {} if isinstance(root, dict) else []
    stack: list[tuple[Any, Any]] = [(root, top)]
    while stack:
        source, copy = stack.pop()
        items = source.items() if isinstance(source, dict) else enumerate(source)
        for key, item in items:
            child: Any
            if isinstance(item, (dict, list, tuple)):
                child = {} if isinstance(item, dict) else []
                stack.append((item, child))  # filled later, in place
            else:
                child = _leaf(item)
            if isinstance(copy, dict):
                copy[escaped(key if isinstance(key, str) else str(key))] = child
            else:
                copy.append(child)
    return top


def _measure(root: Any) -> tuple[int, int, bool]:
    """``(size, depth, whether it holds an integer outside int64)`` of a cleaned value, in
    ``limits``' measure (``values.json_size``)."""
    size, depth, wide = 0, 0, False
    stack: list[tuple[Any, int]] = [(root, 0)]
    while stack:
        value, level = stack.pop()
        if isinstance(value, str):
            size += len(value) + 2
        elif isinstance(value, bool) or value is None:
            size += 5
        elif isinstance(value, int):
            size += 20
            wide = wide or _outside_int64(value)
        elif isinstance(value, float):
            size += 24
        elif isinstance(value, dict):
            size += 2 + sum(len(key) + 4 for key in value)
            depth = max(depth, level + 1)
            stack.extend((item, level + 1) for item in value.values())
        else:
            size += 2 + len(value)
            depth = max(depth, level + 1)
            stack.extend((item, level + 1) for item in value)
    return size, depth, wide


def _units(root: Any, unit_depth: int) -> list[tuple[Any, Any]]:
    """``(container, key)`` of each unit: each value ``unit_depth`` levels below ``root``,
    and each string above that level. An integer outside int64 above that level (in no
    unit) becomes its decimal text in place."""
    units: list[tuple[Any, Any]] = []
    stack: list[tuple[Any, int]] = [(root, 0)]
    while stack:
        container, level = stack.pop()
        items = container.items() if isinstance(container, dict) else enumerate(container)
        for key, item in items:
            if level + 1 == unit_depth or isinstance(item, str):
                units.append((container, key))
            elif isinstance(item, (dict, list)):
                stack.append((item, level + 1))
            elif _outside_int64(item):
                container[key] = str(item)
    return units


def _cap(sizes: list[int], available: int) -> int:
    """The largest length ``c`` with ``sum(min(size, c)) <= available``: cutting only the
    units longer than ``c`` to ``c`` keeps every smaller unit whole."""
    ordered = sorted(sizes, reverse=True)
    rest = sum(ordered)
    for count, size in enumerate(ordered, 1):
        rest -= size
        cap = (available - rest) // count
        if cap >= (ordered[count] if count < len(ordered) else 0):
            return cap
    return available  # no units


def fit_json(data: Any, budget: int, unit_depth: int) -> Any:
    """``data`` made a value a ``HostRecord`` accepts, of size at most ``budget``.

    Every string and key has its lone surrogates escaped, a non-finite float becomes null.
    The *units* are the values ``unit_depth`` levels down (a message's part fields) and the
    strings above them: a unit nested past ``MAX_DEPTH`` or holding an integer outside int64
    becomes its JSON text (the digits kept), and when the whole exceeds ``budget`` the largest
    units become their text cut to one common length, ending with ``… [cut: N
    characters]`` (``limits.storable_text``), so every smaller unit stays whole. The
    structure around the units is kept; if it alone leaves no room (units cut below
    ``SHORTEST_CUT``), ``InvalidInput``.
    """
    if not isinstance(data, (dict, list, tuple)):
        raise InvalidInput("fit_json fits an object or an array")
    root = _cleaned(data)
    units = _units(root, unit_depth)
    sizes: list[int] = []
    for container, key in units:
        size, depth, wide = _measure(container[key])
        if wide or unit_depth + depth > limits.MAX_DEPTH:
            container[key] = limits.dump_json(container[key])
            size = len(container[key]) + 2
        sizes.append(size)
    total, _, _ = _measure(root)
    if total <= budget:
        return root
    cap = _cap(sizes, budget - (total - sum(sizes)))
    if cap < SHORTEST_CUT:
        raise InvalidInput(f"a record's structure alone exceeds a size of {budget}")
    for (container, key), size in zip(units, sizes, strict=True):
        if size > cap:
            value = container[key]
            text = value if isinstance(value, str) else limits.dump_json(value)
            container[key] = limits.storable_text(text, cap - 2)
    return root
