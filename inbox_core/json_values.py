"""JSON values a message may hold (content blocks, metadata, extension fields), frozen.

``freeze_json`` turns parsed JSON (or any mapping and sequence of JSON scalars)
into a deeply immutable, hashable value: objects become ``JsonObject``, arrays
tuples; ``thaw_json`` gives plain ``dict``/``list`` data back. Freezing checks the
limits of ``inbox_core.limits`` (depth, integer range, strings of Unicode scalar
values, size: ``json_size``) once, in the same walk, so a value that exists can be
stored by every store (issue 17). Neither needs recursion the data controls: plain
JSON (what a parser makes) is frozen by a walk that recurses at most
``limits.MAX_DEPTH`` levels, and anything else, or a caller too deep in its own stack
for those, by one with its own stack (thawing likewise).
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from typing import Any, Final, TypeAlias

from inbox_core import limits
from inbox_core.errors import InvalidInput, shown


class JsonObject(Mapping[str, "JsonValue"]):
    """A deeply immutable JSON object: str keys; values frozen recursively.

    Arrays become tuples and objects become ``JsonObject``; equality and hashing
    follow the contents, so messages built from equal JSON are equal. It knows
    its nesting depth and size (``limits``), so an object nested into a new
    value is not walked again.
    """

    __slots__ = ("_data", "_depth", "_hash", "_size")

    _data: dict[str, JsonValue]
    _depth: int
    _size: int
    _hash: int | None

    def __init__(self, data: Mapping[str, object] | None = None) -> None:
        if data is None:
            self._data, self._depth, self._size = {}, 1, 2
        else:
            built = frozen_object(data)
            self._data, self._depth, self._size = built._data, built._depth, built._size
        self._hash = None

    @classmethod
    def _built(cls, data: dict[str, JsonValue], depth: int, size: int) -> JsonObject:
        """An object whose items ``_freeze_tree`` has checked already."""
        self = object.__new__(cls)
        self._data, self._depth, self._size, self._hash = data, depth, size, None
        return self

    def __getitem__(self, key: str) -> JsonValue:
        return self._data[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, JsonObject):
            return self._data == other._data
        if isinstance(other, Mapping):
            return self._data == dict(other)
        return NotImplemented

    def __hash__(self) -> int:
        if self._hash is None:
            self._hash = hash(frozenset(self._data.items()))
        return self._hash

    def __repr__(self) -> str:
        return f"JsonObject({self._data!r})"


JsonValue: TypeAlias = "bool | int | float | str | tuple[JsonValue, ...] | JsonObject | None"

_CONTAINER: Final = object()
_new: Final = object.__new__  # what ``_leaf`` answers for an array or an object


def _leaf(value: Any) -> Any:
    """A checked JSON scalar as it is stored, or ``_CONTAINER``; InvalidInput otherwise."""
    kind = type(value)
    if kind is str:
        return limits.string(value, "a JSON string")
    if kind is int:
        if not -_INT_LIMIT - 1 <= value <= _INT_LIMIT:
            raise InvalidInput(f"JSON integers lie within int64, got {limits.short_int(value)}")
        return value
    if value is None or kind is bool:
        return value
    if kind is float:
        if not math.isfinite(value):
            raise InvalidInput(f"JSON numbers must be finite, got {shown(value)}")
        return value
    if kind is dict or kind is list or kind is tuple or kind is JsonObject:
        return _CONTAINER
    # subclasses (an IntEnum, a str subclass, an OrderedDict): judged by their base type
    for base in (bool, int, float, str):
        if isinstance(value, base):
            return _leaf(base(value))
    if isinstance(value, (Mapping, list, tuple)):
        return _CONTAINER
    raise InvalidInput(f"not a JSON value: {kind.__name__}")


_INT_LIMIT: Final = limits.MAX_JSON_INTEGER
_INT_LOW: Final = -_INT_LIMIT - 1
_MAX_DEPTH: Final = limits.MAX_DEPTH
_MAX_SIZE: Final = limits.MAX_JSON_SIZE
_scalar_values: Final = limits.scalar_values
_INT_WIDTH: Final = 20  # len("-9223372036854775808")
_FLOAT_WIDTH: Final = 24  # len("-2.2250738585072014e-308"), the longest float repr


def _scalar_size(value: Any) -> int:
    """The size (``limits``) of a checked JSON scalar: its text, a number at its widest."""
    kind = type(value)
    if kind is str:
        return len(value) + 2
    if kind is int:
        return _INT_WIDTH
    if kind is float:
        return _FLOAT_WIDTH
    return 5  # true, false, null


def json_size(value: JsonValue) -> int:
    """The size of a frozen JSON value in ``limits``' measure (an upper bound of its compact
    JSON text's length with string characters unescaped): read from a frozen object, added
    up without recursion over arrays (only their items that are not objects are visited)."""
    if type(value) is JsonObject:
        return value._size
    if type(value) is not tuple:
        return _scalar_size(value)
    size, stack = 0, [value]
    while stack:
        items = stack.pop()
        size += 2 + len(items)  # brackets and commas
        for item in items:
            if type(item) is tuple:
                stack.append(item)
            elif type(item) is JsonObject:
                size += item._size
            else:
                size += _scalar_size(item)
    return size


def _freeze_tree(root: object) -> JsonValue:
    """Check and freeze an array or object in one iterative walk (no recursion the data
    controls): types, strings, integers, and the ``limits`` on depth and size.

    A frame is ``[items, is_object, built, key, depth below, size]``; a child container
    pushes a frame (saving the running depth and size into it), and a finished frame hands
    its frozen value to its parent. Scalars are checked inline: this walk is most of what
    building a message costs. The size is ``limits``' measure: the compact JSON text's
    length with string characters unescaped and numbers at their widest (a member costs
    its key, two quotes, a colon and a comma; an item its comma; a container its brackets).
    """
    frames: list[list[Any]] = [_frame(root)]
    limit = limits.MAX_JSON_SIZE
    while True:
        items, is_object, built, _key, below, size = frame = frames[-1]
        for item in items:
            if is_object:
                key, child = item
                if type(key) is not str:
                    if not isinstance(key, str):
                        raise InvalidInput(f"JSON object keys must be str, got {shown(key)}")
                    key = str(key)
                if not key.isascii():
                    limits.scalar_text(key, "a JSON object key")
                size += len(key) + 4
            else:
                child = item
                size += 1
            kind = type(child)
            if kind is str:
                size += len(child) + 2
                if not child.isascii():
                    limits.scalar_text(child, "a JSON string")
            elif kind is int:
                if not -_INT_LIMIT - 1 <= child <= _INT_LIMIT:
                    raise InvalidInput(
                        f"JSON integers lie within int64, got {limits.short_int(child)}"
                    )
                size += _INT_WIDTH
            elif child is None or kind is bool:
                size += 5
            elif kind is JsonObject:  # frozen already: its depth and size are known
                if len(frames) + child._depth > limits.MAX_DEPTH:
                    _too_deep()
                below = max(below, child._depth)
                size += child._size
            else:
                child = _CONTAINER if kind is dict or kind is list else _leaf(child)
                if child is _CONTAINER:
                    if len(frames) >= limits.MAX_DEPTH:
                        _too_deep()
                    frame[3:] = [key if is_object else None, below, size]
                    frames.append(_frame(item[1] if is_object else item))
                    break
                size += _scalar_size(child)
            if size > limit:
                _too_big()
            if is_object:
                built[key] = child
            else:
                built.append(child)
        else:
            frames.pop()
            below += 1
            size += 2  # the brackets
            value: JsonValue = JsonObject._built(built, below, size) if is_object else tuple(built)
            if not frames:
                return value
            parent = frames[-1]
            if parent[1]:
                parent[2][parent[3]] = value
            else:
                parent[2].append(value)
            parent[4] = max(parent[4], below)
            parent[5] += size
            if parent[5] > limit:
                _too_big()


class _Unplain(Exception):
    """Not plain JSON, or past a limit: ``_freeze_tree`` judges it, and says what."""


def _plain_object(data: dict[Any, Any], depth: int) -> JsonObject:
    """``_freeze_tree`` of a dict of plain JSON (dicts, lists, strs, ints, floats, bools and
    None, as a parser makes them) that keeps every limit.

    It recurses, at most ``limits.MAX_DEPTH`` levels, and is twice as fast as the walk with
    its own stack (strs, ints and objects, the common members, are read inline). Anything
    else raises ``_Unplain``, and a caller too deep in its own stack gets a
    ``RecursionError``: ``_freeze_tree`` then freezes it or says what is wrong."""
    if depth > _MAX_DEPTH:
        raise _Unplain
    built: dict[str, JsonValue] = {}
    size, below = 2 + 4 * len(data), 0
    for key, item in data.items():
        if type(key) is not str or not (key.isascii() or _scalar_values(key)):
            raise _Unplain
        kind = type(item)
        if kind is str:
            if not (item.isascii() or _scalar_values(item)):
                raise _Unplain
            size += len(key) + len(item) + 2
            built[key] = item
        elif kind is int and _INT_LOW <= item <= _INT_LIMIT:
            size += len(key) + _INT_WIDTH
            built[key] = item
        elif kind is dict:
            built[key] = child = _plain_object(item, depth + 1)
            size += len(key) + child._size
            below = child._depth if child._depth > below else below
        elif kind is list:
            built[key], deep, weight = _plain_array(item, depth + 1)
            size += len(key) + weight
            below = deep if deep > below else below
        else:
            size += len(key) + _plain_weight(item)
            built[key] = item
    if size > _MAX_SIZE:
        raise _Unplain
    frozen = _new(JsonObject)  # JsonObject._built, inline: a call less per object
    frozen._data = built
    frozen._depth = below + 1
    frozen._size = size
    frozen._hash = None
    return frozen


def _plain_array(data: list[Any], depth: int) -> tuple[tuple[JsonValue, ...], int, int]:
    """``_plain_object`` of a list: the tuple, its depth and size."""
    if depth > _MAX_DEPTH:
        raise _Unplain
    built: list[JsonValue] = []
    size, below = 2 + len(data), 0
    for item in data:
        kind = type(item)
        if kind is str:
            if not (item.isascii() or _scalar_values(item)):
                raise _Unplain
            size += len(item) + 2
            built.append(item)
        elif kind is dict:
            child = _plain_object(item, depth + 1)
            size += child._size
            below = child._depth if child._depth > below else below
            built.append(child)
        elif kind is list:
            frozen, deep, weight = _plain_array(item, depth + 1)
            size += weight
            below = deep if deep > below else below
            built.append(frozen)
        else:
            size += _plain_weight(item)
            built.append(item)
    if size > _MAX_SIZE:
        raise _Unplain
    return tuple(built), below + 1, size


def _plain_weight(value: Any) -> int:
    """The size of a plain scalar other than a str (an int, a float, a bool or None)."""
    kind = type(value)
    if kind is int and _INT_LOW <= value <= _INT_LIMIT:
        return _INT_WIDTH
    if value is None or kind is bool:
        return 5
    if kind is not float or not math.isfinite(value):
        raise _Unplain
    return _FLOAT_WIDTH


def frozen_object(data: object) -> JsonObject:
    """``JsonObject(data)`` as it is built (the constructor copies it into a second object):
    what a decoder calls for each object it reads. InvalidInput if not a JSON object."""
    if type(data) is dict:
        try:
            return _plain_object(data, 1)
        except (_Unplain, RecursionError):
            pass
    elif not isinstance(data, Mapping):
        raise InvalidInput(f"expected a JSON object, got {type(data).__name__}")
    tree = _freeze_tree(data)
    assert isinstance(tree, JsonObject)
    return tree


def _frame(container: object) -> list[Any]:
    kind = type(container)
    if kind is dict or (kind is not list and kind is not tuple and isinstance(container, Mapping)):
        return [iter(container.items()), True, {}, None, 0, 0]  # type: ignore[attr-defined]
    return [iter(container), False, [], None, 0, 0]  # type: ignore[call-overload]


def _too_deep() -> None:
    raise InvalidInput(f"JSON values nest at most {limits.MAX_DEPTH} levels deep")


def _too_big() -> None:
    raise InvalidInput(f"a JSON value has a size of at most {limits.MAX_JSON_SIZE}")


def freeze_json(value: object) -> JsonValue:
    """Validate a JSON value and return its deeply immutable form (``limits`` apply)."""
    try:  # plain JSON first: what a parser makes, and most of what callers pass
        if type(value) is dict:
            return _plain_object(value, 1)
        if type(value) is list:
            return _plain_array(value, 1)[0]
    except (_Unplain, RecursionError):
        pass  # judged below, outside this handler: its errors chain to nothing
    leaf = _leaf(value)
    if leaf is not _CONTAINER:
        return leaf  # type: ignore[no-any-return]
    if type(value) is JsonObject:
        return value
    return _freeze_tree(value)


def thaw_json(value: JsonValue) -> Any:
    """The plain ``dict``/``list`` form of a frozen JSON value (for encoders).

    It recurses, at most ``limits.MAX_DEPTH`` levels (a frozen value is never deeper); a
    caller too deep in its own stack for that gets the same result from a loop.
    """
    try:
        return _thaw(value)
    except RecursionError:
        return _thaw_iteratively(value)


def _thaw(value: JsonValue) -> Any:
    if isinstance(value, JsonObject):
        return {key: _thaw(item) for key, item in value.items()}
    if isinstance(value, tuple):
        return [_thaw(item) for item in value]
    return value


def _thaw_iteratively(root: JsonValue) -> Any:
    """``_thaw`` with an explicit stack of (frozen container, its thawed copy)."""
    if not isinstance(root, (JsonObject, tuple)):
        return root
    top: Any = {} if isinstance(root, JsonObject) else []
    stack: list[tuple[JsonValue, Any]] = [(root, top)]
    while stack:
        frozen, thawed = stack.pop()
        items = frozen.items() if isinstance(frozen, JsonObject) else enumerate(frozen)  # type: ignore[arg-type]
        for key, item in items:
            copy: Any = item
            if isinstance(item, (JsonObject, tuple)):
                copy = {} if isinstance(item, JsonObject) else []
                stack.append((item, copy))  # filled later, in place
            if isinstance(thawed, dict):
                thawed[key] = copy
            else:
                thawed.append(copy)
    return top
