"""The command line's argument types: each checks one option's text and says what is wrong.

Standard library only, so that ``inbox-core --help`` and a usage error import nothing else:
a type that needs the package (``later``) or a default the shell defines (``Deferred``)
imports it when an argument is parsed or a command runs, never when the parser is built.
"""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Callable
from typing import Any, Final

__all__ = [
    "DEFAULT_BIND",
    "Bind",
    "Deferred",
    "count",
    "grace",
    "integer",
    "later",
    "parse_bind",
    "positive",
    "receipt",
    "resolve",
    "seconds",
    "store",
]

DEFAULT_BIND: Final = "127.0.0.1:8000"


def resolve(where: str) -> Any:
    """The object ``MODULE:NAME`` names (imported now)."""
    module, _, name = where.partition(":")
    return getattr(importlib.import_module(module), name)


class Deferred:
    """A default the parser shows and a command uses, imported only then: ``str()`` of it
    (a help text's ``%(default)s``) and ``value()`` import ``MODULE:NAME``."""

    def __init__(self, where: str) -> None:
        self.where = where

    def value(self) -> Any:
        return resolve(self.where)

    def __str__(self) -> str:
        return str(self.value())


def later(where: str) -> Callable[[str], Any]:
    """An argument type that lives in a module the parser does not import: ``MODULE:NAME``
    is imported when an argument of this type is parsed."""

    def convert(text: str) -> Any:
        return resolve(where)(text)

    convert.__name__ = where.rpartition(":")[2]
    return convert


def store(text: str) -> str:
    """``STORE``: ``sqlite:PATH``, a ``postgresql://`` URL or a libpq string (checked)."""
    from inbox_core.errors import InvalidInput  # noqa: PLC0415 - the shell, on demand
    from inbox_core.shell.stores.opening import parse_store  # noqa: PLC0415

    try:
        parse_store(text)
    except InvalidInput as error:
        raise argparse.ArgumentTypeError(str(error)) from None
    return text


def integer(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None


def positive(text: str) -> int:
    value = integer(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {value}")
    return value


def count(text: str) -> int:
    value = integer(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {value}")
    return value


def receipt(text: str) -> int:
    """A post's number: 1 to 2**53 - 1 (what a store returns)."""
    from inbox_core.limits import MAX_SAFE_INTEGER  # noqa: PLC0415

    value = integer(text)
    if not 1 <= value <= MAX_SAFE_INTEGER:
        raise argparse.ArgumentTypeError(f"a post's number is in [1, 2**53 - 1], got {text}")
    return value


def _number(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None


def seconds(text: str) -> float:
    value = _number(text)
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"must be a positive number of seconds, got {text}")
    return value


def grace(text: str) -> float:
    value = _number(text)
    if not 0 <= value < float("inf"):
        raise argparse.ArgumentTypeError(f"must be a number of seconds >= 0, got {text}")
    return value


class Bind:
    """A ``HOST:PORT`` to listen on (``[::1]:8000`` for IPv6)."""

    def __init__(self, host: str, port: int) -> None:
        self.host = host
        self.port = port

    @property
    def loopback(self) -> bool:
        import ipaddress  # noqa: PLC0415 - only a server asks

        if self.host == "localhost":
            return True
        try:
            return ipaddress.ip_address(self.host).is_loopback
        except ValueError:
            return False  # a name: it may resolve to anything

    def __str__(self) -> str:
        return f"[{self.host}]:{self.port}" if ":" in self.host else f"{self.host}:{self.port}"


def parse_bind(text: str) -> Bind:
    """argparse's type for ``--bind`` and ``--http``: ``HOST:PORT``."""
    host, sep, port = text.rpartition(":")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    if (
        not sep
        or not host
        or not (port.isascii() and port.isdigit())
        or not 0 <= int(port) <= 65535
    ):
        raise argparse.ArgumentTypeError(f"expected HOST:PORT (e.g. 127.0.0.1:8000), got {text!r}")
    return Bind(host, int(port))
