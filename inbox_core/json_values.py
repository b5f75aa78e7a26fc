"""JSON values a message may hold (content blocks, metadata, extension fields), frozen.

``freeze_json`` turns parsed JSON (or any mapping and sequence of JSON scalars)
into a deeply immutable, hashable value: objects become ``JsonObject``, arrays
tuples; ``thaw_json`` gives plain ``dict``/``list`` data back. Both work without
recursion, and freezing checks the limits of ``inbox_core.limits`` (depth,
integer range, strings of Unicode scalar values, size: ``json_size``) once, in
the same walk, so a value that exists can be stored by every store (issue 17).
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
            if not isinstance(data, Mapping):
                raise InvalidInput(f"expected a JSON object, got {type(data).__name__}")
            built = _flat(data) if type(data) is dict else None
            if built is None:
                tree = _freeze_tree(data)
                assert isinstance(tree, JsonObject)
                built = tree
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

_CONTAINER: Final = object()  # what ``_leaf`` answers for an array or an object


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


def _flat(data: dict[Any, Any]) -> JsonObject | None:
    """The common case fast: a dict of ASCII keys and strings, ints in range, None, bools.
    None when anything else is in it (``_freeze_tree`` then judges and freezes it all)."""
    size = 2
    for key, value in data.items():
        if type(key) is not str or not key.isascii():
            return None
        kind = type(value)
        if kind is str:
            if not value.isascii():
                return None
            size += len(key) + len(value) + 6
        elif kind is int and -_INT_LIMIT - 1 <= value <= _INT_LIMIT:
            size += len(key) + 4 + _INT_WIDTH
        elif value is None or kind is bool:
            size += len(key) + 9
        else:
            return None
    return JsonObject._built(dict(data), 1, size) if size <= limits.MAX_JSON_SIZE else None


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
