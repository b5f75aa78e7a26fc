"""tests/http: the front door (R39) in process (an ASGI client) and as server processes.

The store fixtures are those of the post tests (``backend``, ``store``: SQLite and
PostgreSQL); ``fresh_store`` gives a store of its own (tokens are store-wide, so a test that
adds one never shares its database). ``@pytest.mark.slow`` tests run only when asked for, as
in tests/shell.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.shell.conftest import pg, pg_server  # noqa: F401 - PostgreSQL fixtures
from tests.shell.posts_support import AnyStore, backend, pg_url, store  # noqa: F401

from .support import prepared

HERE = Path(__file__).resolve().parent


@pytest.fixture(params=["sqlite", "postgres"])
def fresh(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[AnyStore, str]]:
    """``(store, spec)`` of a database of its own (a new SQLite file, a new PostgreSQL
    database), for tests that add tokens."""
    from inbox_core.shell import PostgresStore, SqliteStore

    if request.param == "sqlite":
        path = tmp_path / "own.db"
        made: AnyStore = SqliteStore(path)
        spec = f"sqlite:{path}"
    else:
        from tests.shell.pg import create_database

        server = request.getfixturevalue("pg_server")
        conninfo = create_database(server, f"inbox_core_http_{uuid.uuid4().hex[:12]}")
        made = PostgresStore(conninfo)
        spec = pg_url(conninfo)
    try:
        yield prepared(made), spec
    finally:
        made.close()


@pytest.fixture
def fresh_store(fresh: tuple[AnyStore, str]) -> AnyStore:
    return fresh[0]
