"""The store a ``STORE`` text names, wherever one is taken (the command line, ``Worker``):
``sqlite:PATH`` or a PostgreSQL URL or connection string."""

from __future__ import annotations

import re
from typing import Final

from inbox_core.errors import InvalidInput
from inbox_core.shell.stores.base import Store
from inbox_core.shell.stores.sqlite.store import SqliteStore

__all__ = ["open_store", "parse_store"]


_CONNINFO: Final = re.compile(r"\s*[A-Za-z_]+\s*=")
"""A libpq keyword/value connection string starts with a keyword and ``=``."""


def parse_store(spec: object) -> tuple[str, str]:
    """``("sqlite", path)`` for ``sqlite:PATH``, ``("postgresql", conninfo)`` for a
    ``postgresql://`` (or ``postgres://``) URL or a libpq keyword/value string
    (``host=db dbname=agents``: both forms ``PostgresStore`` takes); anything else is
    ``InvalidInput``. The one form of ``STORE`` wherever a store is named (``inbox-core
    post``, ``watch``, ``serve``, ``http``, ``token``, ``Worker``); the store checks the rest."""
    if isinstance(spec, str):
        if spec.startswith("sqlite:"):
            path = spec[len("sqlite:") :]
            if path.startswith("//"):  # sqlite:///abs/path, the URL form
                path = path[2:]
            if not path:
                raise InvalidInput("sqlite: needs a path, e.g. sqlite:agents.db")
            return "sqlite", path
        if spec.startswith(("postgresql://", "postgres://")) or _CONNINFO.match(spec):
            return "postgresql", spec
    shown = f"{spec!r:.80}" if isinstance(spec, str) else type(spec).__name__
    raise InvalidInput(
        "a store is sqlite:PATH, a postgresql://... URL or a libpq connection string"
        f" (host=... dbname=...), got {shown}"
    )


def open_store(spec: str) -> Store:
    """The store ``spec`` names (``parse_store``): a ``SqliteStore`` or a ``PostgresStore``."""
    kind, target = parse_store(spec)
    if kind == "sqlite":
        return SqliteStore(target)
    from inbox_core.shell.stores.postgres.store import PostgresStore  # noqa: PLC0415 - psycopg

    return PostgresStore(target)
