"""Declarative JSON shapes: one table per union drives encoding, decoding and the schemas.

``inbox_core.codec`` states the wire format once, as data built from the
pieces here; ``tools/gen_schemas.py`` reads the same data to write
``specs/schema``. A *wire* is the JSON form of one value:

- scalars: ``Int``, ``Str``, ``Bool``, ``Enum`` (all ``Scalar``), ``Const``,
  ``Opaque`` (JSON kept verbatim), and the combinators ``Array``, ``Nullable``, ``Map``
  (``inbox_core.wire_types``, re-exported here: the one place tables import from);
- ``Record``: an object whose keys are fields of one class (entries,
  messages), or of several classes told apart by ``build``;
- ``Tagged``: a union tagged by ``"kind"`` or ``"type"``, flat
  (``{"kind": tag, ...fields}``) or an envelope (``{"type": tag, "data":
  {...fields}}``), with an optional ``Open`` fallback for tags outside the
  table (extension sources, host records).

A ``Field`` maps one attrs attribute to one camelCase key. The irregular
shapes are field options: ``optional`` (absent when equal to ``default``),
``reject_default`` (writing the default is an error: ``removedCount``),
``Nest`` (several attributes under one key: ``error: {message, code}``),
``SELF`` (the value itself under a key) and ``Variant(unwrap=True)`` (an
envelope whose ``data`` is the one field's JSON: ``user/message``).

Decoding follows one rule (specs/formats.md section 1, *Shapes and values*): a
document that does not have the shape of its table (a JSON type, a missing or
unknown key, an unknown tag or enum value; what the JSON Schemas of
``specs/schema`` check) is a ``DecodeError``, wherever that is in the document;
a well-shaped document whose values break a value's own rule raises that
value's error (``InvalidInput``, ``InvalidSplice``). Three functions per table
do it. *The direct reading* (``Wire.direct_function``) is the one a valid
document takes: one pass that checks every key, JSON type, tag and the value
rules its rows state (the ``Int`` minimums, ``Str`` lengths and prefixes, and the
limits of every string and opaque value, frozen in the same pass), and builds
each value with its table's ``trusted`` builder (the class's constructor
without the checks the pass has made, D31; a class with no trusted builder
goes through its constructor). It raises no error of its own: whatever is not
plainly allowed stops it (``Declined``, or a constructor's error), and the two
other functions judge the document. *Building* (``Wire.decoder``) reads the
fields in table order and calls the constructors, checking the JSON types it
must look at (``check=True``) and leaving the others to the constructor's
validator (``check=False``), which refuses a wrong type too. *The shape check*
(``Wire.check_shape``) walks the whole document, builds nothing and raises
``DecodeError`` only. ``Wire.decode`` reads directly; when that stops it builds,
and when building fails with a value's error it runs the shape check over the
whole document before it lets that error go: a shape error anywhere beats a
value error anywhere, and the errors are the same whichever way a document
goes. An optional key holding ``null`` reads as absent (D12).

Like attrs' own ``__init__``, the per-class encoders and decoders are
generated source, compiled once at import: encoding ``TurnStarted(3)`` runs
``{"type": "turn/start", "data": {"turn": value.turn}}`` and nothing else.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from typing import Any, Generic, get_args

import attrs

from inbox_core.errors import DecodeError, InvalidInput, shown
from inbox_core.wire_types import (
    DECLINED,
    SELF,
    Array,
    Bool,
    Code,
    Const,
    Declined,
    Enum,
    Int,
    Json,
    Map,
    Nullable,
    Opaque,
    Scalar,
    Str,
    T,
    Wire,
    camel,
    closed_object,
    indented,
)

__all__ = [
    "SELF",
    "Array",
    "Bool",
    "Const",
    "Enum",
    "Field",
    "Int",
    "Map",
    "Nest",
    "Nullable",
    "Opaque",
    "Open",
    "Record",
    "Scalar",
    "Slot",
    "Str",
    "Tagged",
    "Trusted",
    "Variant",
    "Wire",
    "camel",
    "closed_object",
]

# ----------------------------------------------------------------------- fields


@attrs.frozen
class Field:
    """Attribute ``attr`` of the value as key ``key`` (camelCase of ``attr`` by default).

    ``optional``: the key is left out when the value equals ``default``, and an
    absent key (or ``null``, D12) reads as ``default``. ``reject_default``: writing
    the default explicitly breaks a value rule, ``InvalidInput`` (``removedCount`` is
    absent when 0, D12).
    """

    attr: str
    wire: Wire
    key: str = attrs.field()
    optional: bool = False
    default: Any = None
    reject_default: bool = False

    @key.default
    def _key(self) -> str:
        return camel(self.attr)


@attrs.frozen
class Nest:
    """Several attributes written as one object under ``key`` (``error: {message, code}``)."""

    key: str
    fields: tuple[Field, ...]
    optional = False


Slot = Field | Nest
Encoder = Callable[[Any], dict[str, Json]]


def _key_sets(slots: tuple[Slot, ...], *fixed: str) -> tuple[frozenset[str], frozenset[str]]:
    required = frozenset((*fixed, *(s.key for s in slots if not s.optional)))
    return required, frozenset((*fixed, *(s.key for s in slots)))


def _encoder(
    slots: tuple[Slot, ...], head: Mapping[str, str] | None = None, wrap: str = ""
) -> Encoder:
    """The function writing ``slots`` of a value after ``head`` (a flat union's tag), or
    as the ``data`` of ``{"type": wrap, "data": ...}``."""
    src = Code()

    def write(slot: Slot, value: str) -> str:
        if isinstance(slot, Nest):
            inner = (f"{f.key!r}: {write(f, f'{value}.{f.attr}')}" for f in slot.fields)
            return "{" + ", ".join(inner) + "}"
        wire = slot.wire
        if isinstance(wire, Array) and wire.item.encoder is not None:  # one call less
            return f"[{src.bind(wire.item.encoder)}(item) for item in {value}]"
        return value if wire.encoder is None else f"{src.bind(wire.encoder)}({value})"

    items = [f"{key!r}: {tag!r}" for key, tag in (head or {}).items()]
    for slot in slots:
        value = "value" if isinstance(slot, Nest) or slot.attr == SELF else f"value.{slot.attr}"
        if not slot.optional and not src.lines:
            items.append(f"{slot.key!r}: {write(slot, value)}")
            continue
        if not src.lines:
            src.lines.append("out = {" + ", ".join(items) + "}")
        if isinstance(slot, Field) and slot.optional:
            test = "is not" if slot.default is None else "!="
            src.lines += [f"item = {value}", f"if item {test} {src.bind(slot.default)}:"]
            src.lines.append(f"    out[{slot.key!r}] = {write(slot, 'item')}")
        else:
            src.lines.append(f"out[{slot.key!r}] = {write(slot, value)}")
    out = "out" if src.lines else "{" + ", ".join(items) + "}"
    src.lines.append(f"return {{'type': {wrap!r}, 'data': {out}}}" if wrap else f"return {out}")
    encoder: Encoder = src.compile("encode(value)")
    return encoder


def _decoder(
    slots: tuple[Slot, ...],
    what: str,
    make: Callable[..., Any] | None,
    fixed: tuple[str, ...] = (),
) -> Callable[[Any], Any]:
    """The function checking an object's keys (``fixed``: its tag), reading ``slots`` in
    order and returning ``make(**fields)``, or the fields' dict (``make`` None)."""
    required, allowed = _key_sets(slots, *fixed)
    src = Code(_closed=closed_object, InvalidInput=InvalidInput)
    src.lines.append(f"obj = _closed(data, {what!r}, {src.bind(required)}, {src.bind(allowed)})")
    names: list[tuple[str, str]] = []  # (attribute, local)

    def read(field: Field, data: str, where: str) -> str:
        decode = field.wire.decoder
        return data if decode is None else f"{src.bind(decode)}({data}, {where!r})"

    for slot in slots:
        where = f"{what} {slot.key}"
        local = f"v{len(names)}"
        if isinstance(slot, Nest):
            nest = _decoder(slot.fields, where, None)
            src.lines.append(f"{local} = {src.bind(nest)}(obj[{slot.key!r}])")
            names += [(f.attr, f"{local}[{f.attr!r}]") for f in slot.fields]
            continue
        names.append((slot.attr, local))
        if not slot.optional:
            src.lines.append(f"{local} = {read(slot, f'obj[{slot.key!r}]', where)}")
            continue
        default = src.bind(slot.default)
        src.lines += [f"{local} = obj.get({slot.key!r})", f"if {local} is None:"]
        src.lines.append(f"    {local} = {default}")
        if slot.reject_default:
            message = f"{what}: {slot.key} is absent when {slot.default!r}"
            src.lines += [f"elif {local} == {default}:", f"    raise InvalidInput({message!r})"]
        src.lines += ["else:", f"    {local} = {read(slot, local, where)}"]
    if make is not None and [attr for attr, _ in names] == [SELF]:
        src.lines.append(f"return {names[0][1]}")
    else:
        fields = "{" + ", ".join(f"{attr!r}: {local}" for attr, local in names) + "}"
        call = fields if make is None else f"{src.bind(make)}(**{fields})"
        src.lines.append(f"return {call}")
    decoder: Callable[[Any], Any] = src.compile("decode(data)")
    return decoder


Trusted = Mapping[type, Callable[..., Any]]
"""Per class, its builder for the direct reading: the constructor without the checks the
reading makes itself (``validators.trusted``), or one that checks only what the whole value
knows (a message's size)."""


def _read_slots(
    code: Code, slots: tuple[Slot, ...], data: str, fixed: int, fields: list[tuple[str, str]]
) -> list[str]:
    """The direct reading of the object in local ``data``: exactly ``slots``' keys (and
    ``fixed`` tag keys), each field read into a local of its own, named in ``fields``
    beside its attribute."""
    count = "".join(f" + ({s.key!r} in {data})" for s in slots if s.optional)
    required = fixed + sum(not s.optional for s in slots)
    dict_check = "" if fixed else f"type({data}) is not dict or "  # a union checked it
    lines = [f"if {dict_check}len({data}) != {required}{count}:", "    raise _Declined"]
    for slot in slots:
        local = f"{data}_{len(fields)}"
        if isinstance(slot, Nest):
            lines.append(f"{local} = {data}[{slot.key!r}]")
            lines += _read_slots(code, slot.fields, local, 0, fields)
            continue
        fields.append((slot.attr, local))
        if not slot.optional:
            lines.append(f"{local} = {data}[{slot.key!r}]")
            lines += slot.wire.direct_lines(code, local)
            continue
        default = code.bind(slot.default)
        lines += [f"{local} = {data}.get({slot.key!r})", f"if {local} is None:"]
        lines += [f"    {local} = {default}", "else:"]
        if slot.reject_default:
            lines += [f"    if {local} == {default}:", "        raise _Declined"]
        wire = slot.wire.inner if isinstance(slot.wire, Nullable) else slot.wire  # not None
        lines += indented(wire.direct_lines(code, local))
    return lines


def _direct_lines(
    code: Code,
    slots: tuple[Slot, ...],
    make: Callable[..., Any],
    var: str,
    fixed: int = 0,
    unwrap: bool = False,
) -> list[str]:
    """The direct reading of an object of ``slots`` in local ``var`` (``fixed``: its tag
    keys), leaving ``make(**fields)`` in it; ``unwrap``: ``var`` holds the one field's
    JSON. Records nest inline: a record in a record costs no call."""
    fields: list[tuple[str, str]] = []
    if unwrap:
        (field,) = slots
        assert isinstance(field, Field)
        fields.append((field.attr, var))
        lines = field.wire.direct_lines(code, var)
    else:
        lines = _read_slots(code, slots, var, fixed, fields)
    if [attr for attr, _ in fields] == [SELF]:
        return [*lines, f"{var} = {fields[0][1]}"]
    return [*lines, f"{var} = {code.bind(make)}({_arguments(make, dict(fields))})"]


def _direct(
    slots: tuple[Slot, ...],
    what: str,
    make: Callable[..., Any],
    fixed: int = 0,
    unwrap: bool = False,
) -> Callable[[Any], Any]:
    """``_direct_lines`` as the function reading a ``what``."""
    code = Code()
    code.lines = [*_direct_lines(code, slots, make, "data", fixed, unwrap), "return data"]
    function: Callable[[Any], Any] = code.compile("direct(data)", f"direct {what}")
    return function


def _arguments(make: Callable[..., Any], fields: dict[str, str]) -> str:
    """The arguments of a call of ``make`` with ``fields`` (attribute: local): positional
    as far as its parameters allow (a call with keywords costs more), then keywords."""
    positional = []
    for parameter in inspect.signature(make).parameters.values():
        if parameter.kind is not parameter.POSITIONAL_OR_KEYWORD or parameter.name not in fields:
            break
        positional.append(fields.pop(parameter.name))
    return ", ".join([*positional, *(f"{attr}={local}" for attr, local in fields.items())])


def _direct_first(
    read: Callable[[Any], T], checked: Callable[[Any, str], T], data: object, what: str
) -> T:
    """The direct reading of ``data``; where it stops, the checked reading."""
    try:
        return read(data)
    except DECLINED:
        pass  # judged below, outside this handler: its errors chain to nothing
    return checked(data, what)


class _ShapeOf:
    """The shape check of an object of ``slots`` (``fixed``: its tag key): its keys, then
    each field's own shape. ``null`` in an optional key is absent (D12)."""

    def __init__(self, slots: tuple[Slot, ...], what: str, fixed: tuple[str, ...] = ()) -> None:
        self.slots, self.what = slots, what
        self.required, self.allowed = _key_sets(slots, *fixed)
        self.nests = {
            s.key: _ShapeOf(s.fields, f"{what} {s.key}") for s in slots if isinstance(s, Nest)
        }

    def __call__(self, data: object) -> None:
        obj = closed_object(data, self.what, self.required, self.allowed)
        for slot in self.slots:
            value = obj.get(slot.key)
            if isinstance(slot, Nest):
                self.nests[slot.key](value)
            elif value is not None or not slot.optional:
                slot.wire.check_shape(value, f"{self.what} {slot.key}")


# ---------------------------------------------------------------------- records


class Record(Wire, Generic[T]):
    """An object of ``fields``; decoding builds ``cls(**fields)``, or ``build(fields)``.

    ``classes``: the classes a ``build`` chooses between (a send's input), for
    the schemas.
    """

    def __init__(
        self,
        name: str,
        cls: type[T],
        fields: tuple[Slot, ...],
        *,
        build: Callable[[dict[str, Any]], T] | None = None,
        classes: tuple[type, ...] = (),
        trusted: Trusted | None = None,
    ) -> None:
        self.name = name
        self.cls = cls
        self.fields = fields
        self.classes = classes or (cls,)
        self._encode = _encoder(fields)
        make = cls if build is None else (lambda **fields: build(fields))
        self._build: Callable[[Any], T] = _decoder(fields, name, make)
        self._shape = _ShapeOf(fields, name)
        self._builder = make if build is not None or trusted is None else trusted.get(cls, make)
        self._direct: Callable[[Any], T] = _direct(fields, name, self._builder)

    @property
    def encoder(self) -> Callable[[Any], Json] | None:
        return self._encode

    @property
    def decoder(self) -> Callable[[Any, str], Any] | None:
        return self.build

    def encode(self, value: Any) -> dict[str, Json]:
        return self._encode(value)

    def decode(self, data: object, what: str = "") -> T:
        value: T = _direct_first(self._direct, self.checked_decode, data, what)
        return value

    def direct_lines(self, code: Code, var: str) -> list[str]:
        return _direct_lines(code, self.fields, self._builder, var)

    def direct_function(self) -> Callable[[Any], T]:
        return self._direct

    def build(self, data: object, what: str = "") -> T:
        return self._build(data)

    def check_shape(self, data: object, what: str = "") -> None:
        self._shape(data)


# ----------------------------------------------------------------------- unions


@attrs.frozen
class Variant:
    """One member of a ``Tagged`` union: class, tag and fields.

    ``tag`` defaults to the class's own ``kind`` or ``type`` constant (the
    union's key). ``unwrap``: an envelope whose ``data`` is the JSON of its one
    field (``user/message``: the message itself). A variant whose one field is
    ``SELF`` decodes to that field's value (a transcript item). ``what``: what the
    errors of a flat union's member call it (by default its tag and the union's word).
    """

    cls: type
    fields: tuple[Slot, ...] = ()
    tag: str = ""
    unwrap: bool = False
    what: str = ""


@attrs.frozen
class Open:
    """The fallback of a union: tags outside its table that start with ``tag.prefix``.

    ``tag`` is the fallback's tag shape (its other rules, like a minimum length,
    are the class's to check). ``decode(tag, data)``: a flat union passes the
    whole object, an envelope its ``data``. ``encode(value)`` returns the whole
    JSON document.
    """

    cls: type
    tag: Str
    encode: Callable[[Any], dict[str, Json]]
    decode: Callable[[str, Any], Any]
    direct: Callable[[str, Any], Any] | None = None
    """The direct reading's builder from a tag that keeps ``tag``'s rules (``decode`` if
    None)."""


class Tagged(Wire, Generic[T]):
    """The union ``members`` (a type alias), tagged by ``key``.

    Its members are the alias's, in order: a member without fields needs no row;
    one with fields has its row in ``rows``, its fields or a whole ``Variant``.
    ``envelope``: ``{"type", "data"}`` (``extra``: keys tolerated next to them, with
    their shape; the value ignores them). ``fallback``: the member that takes the tags
    outside the table. ``trusted``: the builders of the direct reading, per class.
    """

    def __init__(
        self,
        name: str,
        what: str,
        key: str,
        members: object,
        rows: Mapping[type, tuple[Slot, ...] | Variant] | None = None,
        *,
        envelope: bool = False,
        extra: Mapping[str, Scalar] | None = None,
        fallback: Open | None = None,
        trusted: Trusted | None = None,
    ) -> None:
        self.name, self.what, self.key = name, what, key
        self.envelope, self.fallback = envelope, fallback
        rows = dict(rows or {})
        variants = []
        for cls in get_args(members):
            if fallback is not None and cls is fallback.cls:
                continue
            row = rows.pop(cls, ())
            if not row and attrs.has(cls) and attrs.fields(cls):
                raise TypeError(f"codec table {name}: {cls.__name__} has fields but no row")
            variant = row if isinstance(row, Variant) else Variant(cls, row)
            if not variant.tag:
                variant = attrs.evolve(variant, tag=getattr(cls, key))
            variants.append(variant)
        if rows:
            raise TypeError(f"codec table {name}: rows for non-members {list(rows)}")
        self.variants = tuple(variants)
        self.tags = tuple(v.tag for v in self.variants)
        if len(set(self.tags)) != len(self.tags):
            raise TypeError(f"codec table {name}: duplicate tags {self.tags}")
        self.classes = tuple(v.cls for v in self.variants)
        self.extra = dict(extra or {})
        self._envelope_keys = (
            frozenset({"type", "data"}),
            frozenset({"type", "data", *self.extra}),
        )
        self._encoders = {v.cls: self._encoder(v) for v in self.variants}
        self._decoders = {v.tag: self._decoder(v) for v in self.variants}
        self._shapes = {v.tag: self._shape(v) for v in self.variants}
        self._builders = {v.tag: (trusted or {}).get(v.cls, v.cls) for v in self.variants}
        self._extra_reads = {key: wire.direct_function() for key, wire in self.extra.items()}
        code = Code()
        code.lines = [*self.direct_lines(code, "data"), "return data"]
        self._read: Callable[[Any], T] = code.compile("direct(data)", f"direct {name}")

    def _encoder(self, variant: Variant) -> Encoder:
        if not self.envelope:
            return _encoder(variant.fields, {self.key: variant.tag})
        if variant.unwrap:
            (field,) = variant.fields
            assert isinstance(field, Field)
            tag, attr, encode = variant.tag, field.attr, field.wire.encoder
            assert encode is not None
            return lambda value: {"type": tag, "data": encode(getattr(value, attr))}
        return _encoder(variant.fields, wrap=variant.tag)

    def _decoder(self, variant: Variant) -> Callable[[Any], Any]:
        cls = variant.cls
        if variant.unwrap:
            (field,) = variant.fields
            assert isinstance(field, Field)
            attr, decode, what = field.attr, field.wire.decoder, variant.tag
            assert decode is not None
            return lambda data: cls(**{attr: decode(data, what)})
        if self.envelope:
            return _decoder(variant.fields, variant.tag, cls)
        return _decoder(variant.fields, self._what(variant), cls, (self.key,))

    def _shape(self, variant: Variant) -> Callable[[Any], None]:
        if variant.unwrap:
            (field,) = variant.fields
            assert isinstance(field, Field)
            check, what = field.wire.check_shape, variant.tag
            return lambda data: check(data, what)
        if self.envelope:
            return _ShapeOf(variant.fields, variant.tag)
        return _ShapeOf(variant.fields, self._what(variant), (self.key,))

    def _what(self, variant: Variant) -> str:
        return variant.what or f"{variant.tag} {self.what}"

    def encode(self, value: Any) -> dict[str, Json]:
        encoder = self._encoders.get(type(value))
        if encoder is not None:
            return encoder(value)
        if self.fallback is not None and isinstance(value, self.fallback.cls):
            return self.fallback.encode(value)
        raise InvalidInput(f"not a {self.what}: {shown(value)}")

    def decode(self, data: object, what: str = "") -> T:
        value: T = _direct_first(self._read, self.checked_decode, data, what)
        return value

    def direct_lines(self, code: Code, var: str) -> list[str]:
        """The tag, then the reading of its member (or of the fallback), chosen in a chain
        of comparisons: a union inside a record costs no call either."""
        tag, body = f"{var}_tag", f"{var}_body" if self.envelope else var
        lines = [f"if type({var}) is not dict:", "    raise _Declined"]
        if self.envelope:
            lines += [f"if len({var}) != 2:", f"    {code.bind(self._read_extra)}({var})"]
            lines += [f"{tag} = {var}['type']", f"{body} = {var}['data']"]
        else:
            lines.append(f"{tag} = {var}.get({self.key!r})")
        lines += [f"if type({tag}) is not str:", "    raise _Declined"]
        fixed = 0 if self.envelope else 1
        branches = [
            (f"{tag} == {v.tag!r}", _direct_lines(code, v.fields, make, body, fixed, v.unwrap))
            for v, make in zip(self.variants, self._builders.values(), strict=True)
        ]
        otherwise = ["raise _Declined"]
        if self.fallback is not None:  # a tag outside the table (its tag's rules say which)
            build = code.bind(self.fallback.direct or self.fallback.decode)
            otherwise = self.fallback.tag.direct_lines(code, tag)
            otherwise.append(f"{body} = {build}({tag}, {body})")
        for index, (test, branch) in enumerate(branches):
            lines += [f"{'elif' if index else 'if'} {test}:", *indented(branch)]
        lines += ["else:", *indented(otherwise)]
        return [*lines, f"{var} = {body}"] if self.envelope else lines

    def _read_extra(self, data: dict[str, Any]) -> None:
        """An envelope's keys beside ``type`` and ``data``: each one of ``extra``, read."""
        count = 2
        for key, read in self._extra_reads.items():
            if key in data:
                read(data[key])
                count += 1
        if len(data) != count:
            raise Declined

    def direct_function(self) -> Callable[[Any], T]:
        return self._read

    def _tag(self, data: object, what: str) -> tuple[str, Any]:
        """The tag of a document and the body its variant reads (``DecodeError`` if the
        envelope or the tag is malformed)."""
        if self.envelope:
            required, allowed = self._envelope_keys
            obj = closed_object(data, what, required, allowed)
            tag = obj["type"]
            if not isinstance(tag, str):
                raise DecodeError(f"{what}: type must be a string, got {shown(tag)}")
            if len(obj) > 2:
                for key in obj.keys() - required:
                    self.extra[key].checked(obj[key], f"{what} {key}")
            return tag, obj["data"]
        if (type(data) is not dict and not isinstance(data, Mapping)) or not isinstance(
            data.get(self.key), str
        ):
            raise DecodeError(f"{what}: expected an object with a string {self.key!r}")
        return data[self.key], data

    def build(self, data: object, what: str = "") -> T:
        if type(data) is dict and (  # the common case in a few checks, else all of them
            len(data) == 2 and "data" in data if self.envelope else True
        ):
            tag = data.get(self.key)
            body = data["data"] if self.envelope else data
        else:
            tag = None
        if type(tag) is not str:
            tag, body = self._tag(data, what or self.what)
        decoder = self._decoders.get(tag)
        if decoder is not None:
            value: T = decoder(body)
            return value
        if self.fallback is not None and tag.startswith(self.fallback.tag.prefix):
            fallback: T = self.fallback.decode(tag, body)
            return fallback
        raise DecodeError(f"{what or self.what}: unknown {self.key} {shown(tag)}")

    def check_shape(self, data: object, what: str = "") -> None:
        what = what or self.what
        tag, body = self._tag(data, what)
        shape = self._shapes.get(tag)
        if shape is not None:
            shape(body)
        elif self.fallback is None or not tag.startswith(self.fallback.tag.prefix):
            raise DecodeError(f"{what}: unknown {self.key} {shown(tag)}")

    @property
    def encoder(self) -> Callable[[Any], Json] | None:
        return self.encode

    @property
    def decoder(self) -> Callable[[Any, str], Any] | None:
        return self.build
