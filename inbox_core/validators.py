"""Field checks shared by values, commands and events (attrs ``validator=``/``converter=``).

A value that exists is well formed: every class checks its fields once, at
construction, with these, so neither the reducer nor ``replay`` re-checks a
shape (``replay`` checks only order and placement). The error class is a
parameter where the brief names one (``InvalidSplice`` for a splice's
arguments); it is ``InvalidInput`` otherwise.

Checks sit at the boundary. What the core builds from values that already
passed them (an event from the state's own turn number, a phase, the next
state) it builds with ``trusted``: the same frozen instance, without the
checks (D31).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ParamSpec, TypeVar, cast

import attrs

from inbox_core import limits
from inbox_core.errors import InvalidInput, shown

Validator = Callable[[object, "attrs.Attribute[Any]", Any], None]
P = ParamSpec("P")
T = TypeVar("T")


def integer(minimum: int | None = None, error: type[Exception] = InvalidInput) -> Validator:
    """An int (never a bool), at least ``minimum`` when given, within +-``MAX_SAFE_INTEGER``
    (exact in every JSON reader, ``limits``)."""
    low = -limits.MAX_SAFE_INTEGER if minimum is None else minimum
    high = limits.MAX_SAFE_INTEGER

    def check(_inst: object, attribute: attrs.Attribute[Any], value: object) -> None:
        if type(value) is not int and (isinstance(value, bool) or not isinstance(value, int)):
            raise error(f"{attribute.name} must be an int, got {shown(value)}")
        if not low <= value <= high:
            if value < low and minimum is not None:
                raise error(f"{attribute.name} must be >= {low}, got {limits.short_int(value)}")
            limits.safe_integer(value, attribute.name, error)

    return check


def optional_integer(minimum: int) -> Validator:
    """``None`` or an int of at least ``minimum``."""
    check = integer(minimum)

    def optional(inst: object, attribute: attrs.Attribute[Any], value: object) -> None:
        if value is not None:
            check(inst, attribute, value)

    return optional


def text(_inst: object, attribute: attrs.Attribute[Any], value: object) -> None:
    """A str a store can hold (``limits.string``)."""
    if not isinstance(value, str):
        raise InvalidInput(f"{attribute.name} must be a str, got {shown(value)}")
    limits.string(value, attribute.name)


def identifier(_inst: object, attribute: attrs.Attribute[Any], value: object) -> None:
    """An id or a name: a non-empty str of at most ``MAX_ID_LENGTH`` characters (``limits``)."""
    if not isinstance(value, str) or not value:
        raise InvalidInput(f"{attribute.name} must be a non-empty str, got {shown(value)}")
    limits.identifier(value, attribute.name)


def strict_bool(_inst: object, attribute: attrs.Attribute[Any], value: object) -> None:
    """``True`` or ``False``, not merely truthy."""
    if not isinstance(value, bool):
        raise InvalidInput(f"{attribute.name} must be a bool, got {shown(value)}")


def one_of(choices: tuple[object, ...], error: type[Exception] = InvalidInput) -> Validator:
    """One of a few literals (a target, a status, an outcome), compared by type too."""
    types = frozenset(type(choice) for choice in choices)  # all hashable: checked first
    allowed = frozenset(choices)

    def check(_inst: object, attribute: attrs.Attribute[Any], value: object) -> None:
        if type(value) not in types or value not in allowed:
            raise error(f"{attribute.name} must be one of {choices!r}, got {shown(value)}")

    return check


def instance_of(*kinds: type, what: str) -> Validator:
    """An instance of one of ``kinds``; ``what`` names them in the error."""

    def check(_inst: object, attribute: attrs.Attribute[Any], value: object) -> None:
        if not isinstance(value, kinds):
            raise InvalidInput(f"{attribute.name} must be {what}, got {shown(value)}")

    return check


def tuple_of(
    kind: type, *, what: str, error: type[Exception] = InvalidInput
) -> Callable[[object], tuple[Any, ...]]:
    """A converter: a list or tuple whose items are all ``kind``, as a tuple."""

    def convert(value: object) -> tuple[Any, ...]:
        if type(value) is not tuple:
            if not isinstance(value, (list, tuple)):
                raise error(f"expected a sequence of {what}, got {type(value).__name__}")
            value = tuple(value)
        for item in value:
            if type(item) is not kind and not isinstance(item, kind):
                raise error(f"expected {what}, got {shown(item)}")
        return value

    return convert


def trusted(cls: Callable[P, T], *, cached_hash: bool = False) -> Callable[P, T]:
    """``cls``'s constructor without its validators and converters, for the core's own use.

    The result takes the same arguments (names, defaults, keyword-only) and
    returns the same frozen instance, equal and hashed alike, but stores each
    field straight into its slot: a frozen attrs class otherwise sets every
    field through ``object.__setattr__`` and runs its checks, which is most of
    what the reducer spends per command. Call it only with values of the
    field's declared type that passed their checks already (pydantic calls the
    same idea ``model_construct``); the test suite rebuilds every value the
    core emits through ``cls`` itself and compares (``testing.checks``).
    Classes whose construction does more than store fields are refused, but for
    ``cached_hash``: a class made with ``attrs.frozen(cache_hash=True)``, whose one hidden
    slot is the cache, which starts empty as attrs' own ``__init__`` leaves it.
    """
    if not (isinstance(cls, type) and attrs.has(cls)) or "__slots__" not in vars(cls):
        raise TypeError(f"trusted() needs a slotted attrs class, got {cls!r}")
    hidden = set(vars(cls)["__slots__"]) - {f.name for f in attrs.fields(cls)} - {"__weakref__"}
    cache = hidden.pop() if cached_hash and len(hidden) == 1 else None
    if hidden or hasattr(cls, "__attrs_post_init__") or hasattr(cls, "__attrs_pre_init__"):
        raise TypeError(f"{cls.__name__} does more than store its fields; trusted() would not")
    if cached_hash and cache is None:
        raise TypeError(f"{cls.__name__} has no hash cache; trusted() would not")
    scope: dict[str, Any] = {"new": object.__new__, "cls": cls}
    positional: list[str] = []
    keyword: list[str] = []
    body: list[str] = []
    if cache is not None:
        scope["set_cache"] = vars(cls)[cache].__set__
        body.append("    set_cache(self, None)\n")
    for field in attrs.fields(cls):
        if not field.init or isinstance(field.default, attrs.Factory):  # type: ignore[arg-type]
            raise TypeError(f"{cls.__name__}.{field.name}: trusted() needs plain init fields")
        param = field.alias
        if field.default is not attrs.NOTHING:
            scope[f"default_{param}"] = field.default
            param = f"{param}=default_{param}"
        (keyword if field.kw_only else positional).append(param)
        scope[f"set_{field.name}"] = vars(cls)[field.name].__set__
        body.append(f"    set_{field.name}(self, {field.alias})\n")
    params = ", ".join([*positional, *(["*", *keyword] if keyword else [])])
    source = f"def build({params}):\n    self = new(cls)\n{''.join(body)}    return self\n"
    exec(compile(source, f"<trusted {cls.__qualname__}>", "exec"), scope)
    build = scope["build"]
    build.__qualname__ = build.__name__ = f"trusted_{cls.__name__}"
    build.__doc__ = f"{cls.__name__}(...) without its checks (validators.trusted)."
    return cast(Callable[P, T], build)


def field_check(cls: type, name: str) -> Callable[[Any], Any]:
    """What ``cls``'s constructor does to field ``name``, as a function: convert, then check.

    For a ``trusted`` build whose other fields come from checked values: the
    caller's own part still goes through the very checks the class declares.
    """
    field = attrs.fields_dict(cls)[name]
    convert, validate = field.converter, field.validator
    if isinstance(convert, attrs.Converter):
        raise TypeError(f"{cls.__name__}.{name}: field_check() takes plain converters only")

    def check(value: Any) -> Any:
        if convert is not None:
            value = convert(value)
        if validate is not None:
            validate(None, field, value)
        return value

    return check
