"""The JSON types of a field: the ``Wire`` protocol and its scalars and combinators.

A *wire* is the JSON form of one value: ``Int``, ``Str``, ``Bool``, ``Enum`` (all
``Scalar``), ``Const``, ``Opaque`` (JSON kept verbatim) and the combinators
``Array``, ``Nullable`` and ``Map``; ``inbox_core.wire`` builds the objects
(``Record``, ``Tagged``) from them. Each wire encodes, builds (``decoder``) and checks
a document's shape (``check_shape``: ``DecodeError`` only), as ``inbox_core.wire``'s
theory of operation says.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any, Final, TypeVar

import attrs

from inbox_core.errors import DecodeError, InboxCoreError, shown
from inbox_core.json_values import thaw_json

T = TypeVar("T")
Json = Any
SELF: Final = ""
"""``Field.attr`` for "the value itself" (a transcript item wraps a message or record)."""


def camel(name: str) -> str:
    """``removed_count`` -> ``removedCount``; also ``pre-step`` -> ``preStep``."""
    head, *rest = name.replace("-", "_").replace("/", "_").split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def closed_object(
    data: object, what: str, required: frozenset[str], allowed: frozenset[str]
) -> Mapping[str, Any]:
    """``data`` as an object holding every ``required`` key and no key outside ``allowed``."""
    if type(data) is not dict and not isinstance(data, Mapping):
        raise DecodeError(f"{what}: expected a JSON object, got {type(data).__name__}")
    keys = data.keys()
    if not required <= keys:
        raise DecodeError(f"{what}: missing {', '.join(sorted(required - keys))}")
    if not keys <= allowed:
        raise DecodeError(f"{what}: unknown keys {_keys(keys - allowed)}")
    return data


def _keys(keys: Iterable[object]) -> str:
    """Keys for an error message: each shown escaped (a key may hold a lone surrogate or a
    NUL: the message must be storable text), the first few of many."""
    ordered = sorted(keys, key=str)
    shown_keys = ", ".join(shown(key) for key in ordered[:_KEYS_SHOWN])
    more = len(ordered) - _KEYS_SHOWN
    return f"{shown_keys} and {more} more" if more > 0 else shown_keys


_KEYS_SHOWN: Final = 8


# ---------------------------------------------------------------------- scalars


class Wire:
    """The JSON form of one value: ``encoder`` and ``decoder``, None where the value and
    its JSON are the same (the generated functions then skip the call)."""

    name: str | None = None
    """A named wire (records, unions) gets its own definition in the schemas."""

    @property
    def encoder(self) -> Callable[[Any], Json] | None:
        return None

    @property
    def decoder(self) -> Callable[[Any, str], Any] | None:
        return None

    def encode(self, value: Any) -> Json:
        encode = self.encoder
        return value if encode is None else encode(value)

    def decode(self, data: object, what: str = "value") -> Any:
        """The value of a whole document: built, or ``DecodeError`` if its shape is wrong
        anywhere, or else the error of the first value that refuses to be built."""
        build = self.decoder
        if build is None:
            self.check_shape(data, what)
            return data
        try:
            return build(data, what)
        except DecodeError:
            raise
        except InboxCoreError:  # a value refused: unless the shape is wrong elsewhere
            self.check_shape(data, what)
            raise

    def check_shape(self, data: object, what: str) -> None:
        """``DecodeError`` unless ``data`` has this wire's shape; builds nothing."""


@attrs.frozen
class Scalar(Wire):
    """A JSON scalar. ``check``: building checks its JSON type (``DecodeError``); without,
    the JSON value goes to the constructor as is and its validator refuses a wrong type
    too (the shape check then says ``DecodeError``). The shape check always checks it."""

    check: bool = attrs.field(default=True, kw_only=True)

    @property
    def decoder(self) -> Callable[[Any, str], Any] | None:
        return self.checked if self.check else None

    def check_shape(self, data: object, what: str) -> None:
        self.checked(data, what)

    def checked(self, data: Any, what: str) -> Any:
        return data


@attrs.frozen
class Int(Scalar):
    """A JSON integer (never a bool, never ``1.0``); ``minimum`` is a value rule (the
    constructor's), written into the schemas as a comment."""

    minimum: int | None = None

    def checked(self, data: Any, what: str) -> Any:
        if type(data) is not int and (isinstance(data, bool) or not isinstance(data, int)):
            raise DecodeError(f"{what}: expected an integer, got {shown(data)}")
        return data


@attrs.frozen
class Str(Scalar):
    """A JSON string; ``prefix`` is part of the shape (a host record's tag), the lengths
    and ``one_line`` are value rules (the constructor's), written into the schemas as
    comments."""

    min_length: int = 0
    max_length: int | None = None
    one_line: bool = False
    prefix: str = ""

    def checked(self, data: Any, what: str) -> Any:
        if not isinstance(data, str):
            raise DecodeError(f"{what}: expected a string, got {shown(data)}")
        if not data.startswith(self.prefix):
            raise DecodeError(f"{what}: {shown(data)} does not start with {self.prefix!r}")
        return data


@attrs.frozen
class Bool(Scalar):
    def checked(self, data: Any, what: str) -> Any:
        if not isinstance(data, bool):
            raise DecodeError(f"{what}: expected a boolean, got {shown(data)}")
        return data


@attrs.frozen
class Enum(Scalar):
    """One of a closed set of strings."""

    values: tuple[str, ...]

    def checked(self, data: Any, what: str) -> Any:
        if data not in self.values:
            raise DecodeError(
                f"{what}: expected one of {', '.join(self.values)}, got {shown(data)}"
            )
        return data


@attrs.frozen
class Const(Scalar):
    """Always this value (a message's ``role``)."""

    value: str

    def checked(self, data: Any, what: str) -> Any:
        if data != self.value:
            raise DecodeError(f"{what}: must be {self.value!r}, got {shown(data)}")
        return data


@attrs.frozen
class Opaque(Wire):
    """JSON the core never looks into, kept verbatim: any value, or (``object_only``) an object.

    The value's constructor freezes (and checks) it.
    """

    object_only: bool = False

    @property
    def encoder(self) -> Callable[[Any], Json] | None:
        return thaw_json

    def check_shape(self, data: object, what: str) -> None:
        if self.object_only and not isinstance(data, Mapping):
            raise DecodeError(f"{what}: expected a JSON object, got {type(data).__name__}")


@attrs.frozen
class Array(Wire):
    """A JSON array of ``item``; decodes to a tuple (``check=False``: passed on unchecked)."""

    item: Wire
    check: bool = True
    min_items: int | None = None

    @property
    def encoder(self) -> Callable[[Any], Json] | None:
        return self._encode

    @property
    def decoder(self) -> Callable[[Any, str], Any] | None:
        return self._decode if self.check else None

    def _encode(self, value: Any) -> Json:
        encode = self.item.encoder
        return list(value) if encode is None else [encode(element) for element in value]

    def _decode(self, data: Any, what: str) -> Any:
        if type(data) is not list and not isinstance(data, list | tuple):
            raise DecodeError(f"{what}: expected an array, got {type(data).__name__}")
        decode = self.item.decoder
        if decode is None:
            return tuple(data)
        return tuple([decode(element, what) for element in data])

    def check_shape(self, data: object, what: str) -> None:
        if not isinstance(data, list | tuple):
            raise DecodeError(f"{what}: expected an array, got {type(data).__name__}")
        check = self.item.check_shape
        for element in data:
            check(element, what)


@attrs.frozen
class Nullable(Wire):
    """``inner`` or ``null`` (None)."""

    inner: Wire

    @property
    def encoder(self) -> Callable[[Any], Json] | None:
        encode = self.inner.encoder
        return None if encode is None else lambda value: None if value is None else encode(value)

    @property
    def decoder(self) -> Callable[[Any, str], Any] | None:
        decode = self.inner.decoder
        if decode is None:
            return None
        return lambda data, what: None if data is None else decode(data, what)

    def check_shape(self, data: object, what: str) -> None:
        if data is not None:
            self.inner.check_shape(data, what)


@attrs.frozen
class Map(Wire):
    """A JSON object from strings to ``value`` (goal rounds, fates)."""

    value: Wire

    @property
    def encoder(self) -> Callable[[Any], Json] | None:
        encode = self.value.encode
        return lambda value: {key: encode(item) for key, item in value.items()}

    @property
    def decoder(self) -> Callable[[Any, str], Any] | None:
        return self._decode

    def _decode(self, data: Any, what: str) -> Any:
        if not isinstance(data, Mapping):
            raise DecodeError(f"{what}: expected a JSON object, got {type(data).__name__}")
        decode = self.value.decoder
        if decode is None:
            return dict(data)
        return {key: decode(item, f"{what} {key}") for key, item in data.items()}

    def check_shape(self, data: object, what: str) -> None:
        if not isinstance(data, Mapping):
            raise DecodeError(f"{what}: expected a JSON object, got {type(data).__name__}")
        for key, item in data.items():
            self.value.check_shape(item, f"{what} {key}")
