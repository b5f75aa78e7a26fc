"""Field checks shared by values, commands and events (attrs ``validator=``/``converter=``).

A value that exists is well formed: every class checks its fields once, at
construction, with these, so neither the reducer nor ``replay`` re-checks a
shape (``replay`` checks only order and placement). The error class is a
parameter where the brief names one (``InvalidSplice`` for a splice's
arguments); it is ``InvalidInput`` otherwise.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs

from inbox_core.errors import InvalidInput

Validator = Callable[[object, "attrs.Attribute[Any]", Any], None]


def integer(minimum: int | None = None, error: type[Exception] = InvalidInput) -> Validator:
    """An int (never a bool), at least ``minimum`` when given."""
    low = minimum

    def check(_inst: object, attribute: attrs.Attribute[Any], value: object) -> None:
        if type(value) is not int and (isinstance(value, bool) or not isinstance(value, int)):
            raise error(f"{attribute.name} must be an int, got {value!r}")
        if low is not None and value < low:
            raise error(f"{attribute.name} must be >= {low}, got {value}")

    return check


def optional_integer(minimum: int) -> Validator:
    """``None`` or an int of at least ``minimum``."""
    check = integer(minimum)

    def optional(inst: object, attribute: attrs.Attribute[Any], value: object) -> None:
        if value is not None:
            check(inst, attribute, value)

    return optional


def text(_inst: object, attribute: attrs.Attribute[Any], value: object) -> None:
    """A str."""
    if not isinstance(value, str):
        raise InvalidInput(f"{attribute.name} must be a str, got {value!r}")


def non_empty_text(_inst: object, attribute: attrs.Attribute[Any], value: object) -> None:
    """A str with at least one character (ids, names)."""
    if not isinstance(value, str) or not value:
        raise InvalidInput(f"{attribute.name} must be a non-empty str, got {value!r}")


def strict_bool(_inst: object, attribute: attrs.Attribute[Any], value: object) -> None:
    """``True`` or ``False``, not merely truthy."""
    if not isinstance(value, bool):
        raise InvalidInput(f"{attribute.name} must be a bool, got {value!r}")


def one_of(choices: tuple[object, ...], error: type[Exception] = InvalidInput) -> Validator:
    """One of a few literals (a target, a status, an outcome), compared by type too."""
    types = frozenset(type(choice) for choice in choices)  # all hashable: checked first
    allowed = frozenset(choices)

    def check(_inst: object, attribute: attrs.Attribute[Any], value: object) -> None:
        if type(value) not in types or value not in allowed:
            raise error(f"{attribute.name} must be one of {choices!r}, got {value!r}")

    return check


def instance_of(*kinds: type, what: str) -> Validator:
    """An instance of one of ``kinds``; ``what`` names them in the error."""

    def check(_inst: object, attribute: attrs.Attribute[Any], value: object) -> None:
        if not isinstance(value, kinds):
            raise InvalidInput(f"{attribute.name} must be {what}, got {value!r}")

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
                raise error(f"expected {what}, got {item!r}")
        return value

    return convert
