"""The JSON types of a field: the ``Wire`` protocol and its scalars and combinators.

A *wire* is the JSON form of one value: ``Int``, ``Str``, ``Bool``, ``Enum`` (all
``Scalar``), ``Const``, ``Opaque`` (JSON kept verbatim) and the combinators
``Array``, ``Nullable`` and ``Map``; ``inbox_core.wire`` builds the objects
(``Record``, ``Tagged``) from them. Each wire encodes, builds (``decoder``), checks
a document's shape (``check_shape``: ``DecodeError`` only) and reads it in one pass
(``direct_lines``, ``direct_function``: ``Declined`` unless every rule plainly holds), as
``inbox_core.wire``'s theory of operation says.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any, Final, TypeVar

import attrs

from inbox_core import limits
from inbox_core.errors import DecodeError, InboxCoreError, shown
from inbox_core.json_values import freeze_json, frozen_object, thaw_json

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

# ----------------------------------------------------------- generated functions


class Code:
    """The text and the namespace of one generated function; ``_Declined`` is in scope."""

    def __init__(self, **names: Any) -> None:
        self.env: dict[str, Any] = {"_Declined": Declined, **names}
        self.lines: list[str] = []

    def bind(self, obj: Any) -> str:
        name = f"_{len(self.env)}"
        self.env[name] = obj
        return name

    def compile(self, signature: str, what: str = "") -> Any:
        """The function ``signature`` of these lines, named by ``what`` in tracebacks."""
        code = f"def {signature}:\n" + "".join(f"    {line}\n" for line in self.lines)
        exec(compile(code, f"<inbox_core.wire {what or signature}>", "exec"), self.env)
        return self.env[signature.split("(", maxsplit=1)[0]]


class Declined(Exception):
    """The one-pass reading stopped: a document is not plainly what its table allows (its
    JSON types, keys, tags, the rules a row states). The checked reading then judges it."""


DECLINED: Final = (Declined, LookupError, InboxCoreError)
"""What stops a one-pass reading: ``Declined``, a required key missing (``KeyError``), a
value's own check (``InvalidInput`` from freezing JSON, or a constructor's)."""


def indented(lines: list[str]) -> list[str]:
    """``lines`` one block deeper."""
    return [f"    {line}" for line in lines]


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
        """The value of a whole document (``checked_decode``; a record or a union reads it
        directly first)."""
        return self.checked_decode(data, what)

    def checked_decode(self, data: object, what: str = "") -> Any:
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

    def direct_lines(self, code: Code, var: str) -> list[str]:
        """Statements reading the JSON value in local ``var`` in one pass: they raise
        ``Declined`` (or another of ``DECLINED``) unless it has this wire's shape and keeps
        the rules its table states, and leave the value built from it in ``var``."""
        return [f"{var} = {code.bind(self.direct_function())}({var})"]

    def direct_function(self) -> Callable[[Any], Any]:
        """``direct_lines`` as a function of the JSON value."""
        code = Code()
        code.lines = [*self.direct_lines(code, "data"), "return data"]
        function: Callable[[Any], Any] = code.compile("direct(data)")
        return function


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

    def test(self, code: Code, var: str) -> str:
        """An expression true when ``var`` has this scalar's JSON type and keeps its value
        rules (the constructor's, which the direct reading then does not run again); any
        value for a scalar that checks nothing."""
        return "True"

    def direct_lines(self, code: Code, var: str) -> list[str]:
        return [f"if not ({self.test(code, var)}):", "    raise _Declined"]


@attrs.frozen
class Int(Scalar):
    """A JSON integer (never a bool, never ``1.0``); ``minimum`` is a value rule (the
    constructor's), written into the schemas as a comment."""

    minimum: int | None = None

    def checked(self, data: Any, what: str) -> Any:
        if type(data) is not int and (isinstance(data, bool) or not isinstance(data, int)):
            raise DecodeError(f"{what}: expected an integer, got {shown(data)}")
        return data

    def test(self, code: Code, var: str) -> str:
        low = -limits.MAX_SAFE_INTEGER if self.minimum is None else self.minimum
        return f"type({var}) is int and {low} <= {var} <= {limits.MAX_SAFE_INTEGER}"


@attrs.frozen
class Str(Scalar):
    """A JSON string; ``prefix`` is part of the shape (a host record's tag), the lengths,
    ``one_line`` and ``no_nul`` (an agent id's) are value rules (the constructor's),
    written into the schemas as comments."""

    min_length: int = 0
    max_length: int | None = None
    one_line: bool = False
    no_nul: bool = False
    prefix: str = ""

    def checked(self, data: Any, what: str) -> Any:
        if not isinstance(data, str):
            raise DecodeError(f"{what}: expected a string, got {shown(data)}")
        if not data.startswith(self.prefix):
            raise DecodeError(f"{what}: {shown(data)} does not start with {self.prefix!r}")
        return data

    def test(self, code: Code, var: str) -> str:
        """Also the rules of every string: at most ``MAX_JSON_SIZE`` characters, no lone
        surrogate (``limits``). ``one_line`` is tested plainly: printable characters only."""
        high = limits.MAX_JSON_SIZE if self.max_length is None else self.max_length
        tests = [f"type({var}) is str", f"{self.min_length} <= len({var}) <= {high}"]
        if self.prefix:
            tests.append(f"{var}.startswith({self.prefix!r})")
        if self.one_line:
            tests.append(f"{var}.isprintable()")
        if self.no_nul:
            tests.append(f"'\\x00' not in {var}")
        tests.append(f"({var}.isascii() or {code.bind(limits.scalar_values)}({var}))")
        return " and ".join(tests)


@attrs.frozen
class Bool(Scalar):
    def checked(self, data: Any, what: str) -> Any:
        if not isinstance(data, bool):
            raise DecodeError(f"{what}: expected a boolean, got {shown(data)}")
        return data

    def test(self, code: Code, var: str) -> str:
        return f"type({var}) is bool"


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

    def test(self, code: Code, var: str) -> str:
        return f"type({var}) is str and {var} in {code.bind(frozenset(self.values))}"


@attrs.frozen
class Const(Scalar):
    """Always this value (a message's ``role``)."""

    value: str

    def checked(self, data: Any, what: str) -> Any:
        if data != self.value:
            raise DecodeError(f"{what}: must be {self.value!r}, got {shown(data)}")
        return data

    def test(self, code: Code, var: str) -> str:
        return f"type({var}) is str and {var} == {self.value!r}"


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

    def direct_lines(self, code: Code, var: str) -> list[str]:
        """Frozen (``json_values``), as the value's constructor would freeze it."""
        return [f"{var} = {code.bind(frozen_object if self.object_only else freeze_json)}({var})"]


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

    def direct_lines(self, code: Code, var: str) -> list[str]:
        """A loop over the items, each read inline."""
        items, item = f"{var}_items", f"{var}_item"
        lines = [f"if type({var}) is not list:", "    raise _Declined", f"{items} = []"]
        lines += [f"for {item} in {var}:", *indented(self.item.direct_lines(code, item))]
        lines += [f"    {items}.append({item})", f"{var} = tuple({items})"]
        if self.min_items:
            lines += [f"if len({var}) < {self.min_items}:", "    raise _Declined"]
        return lines


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

    def direct_lines(self, code: Code, var: str) -> list[str]:
        return [f"if {var} is not None:", *indented(self.inner.direct_lines(code, var))]


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

    def direct_lines(self, code: Code, var: str) -> list[str]:
        value = code.bind(self.value.direct_function())
        return [
            f"if type({var}) is not dict:",
            "    raise _Declined",
            f"{var} = {{key: {value}(item) for key, item in {var}.items()}}",
        ]
