"""tests/shell: PostgreSQL fixtures (slow tests are skipped by tests/conftest.py).

PostgreSQL (``pg_server``, ``pg``, ``pg_cluster``): ``$INBOX_CORE_TEST_PG``
if set (``.ci/run`` starts a server and sets it), else a throwaway cluster
started from the server binaries on PATH (``tests/shell/pg.py``). Without
either the tests skip with a one-line reason, except under ``CI=true``, where
a missing server fails the run.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from .posts_support import backend, store  # noqa: F401 - the store fixtures of the post tests

HERE = Path(__file__).resolve().parent


# ------------------------------------------------------------------ PostgreSQL


def _pg_unavailable(reason: str) -> None:
    """Skip with a one-line reason; under CI=true a missing server fails the run instead."""
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"PostgreSQL is required under CI=true: {reason}", pytrace=False)
    pytest.skip(reason)


def _need_psycopg() -> None:
    try:
        import psycopg  # noqa: F401
    except ImportError:
        _pg_unavailable("psycopg is not installed (pip install -e '.[dev]')")


@pytest.fixture(scope="session")
def pg_server() -> Iterator[str]:
    """A PostgreSQL server's conninfo: $INBOX_CORE_TEST_PG, else a throwaway cluster."""
    from .pg import ENV, Cluster, binaries_missing, wait_ready

    _need_psycopg()
    conninfo = os.environ.get(ENV)
    if conninfo:
        wait_ready(conninfo)
        yield conninfo
        return
    reason = binaries_missing()
    if reason:
        _pg_unavailable(reason)
    cluster = Cluster().start()
    try:
        wait_ready(cluster.conninfo)
        yield cluster.conninfo
    finally:
        cluster.destroy()


@pytest.fixture(scope="session")
def pg(pg_server: str) -> str:
    """A fresh database on that server for this session (tests use unique agent ids)."""
    from .pg import create_database

    return create_database(pg_server, f"inbox_core_test_{os.getpid()}")


@pytest.fixture
def pg_cluster() -> Iterator[Any]:
    """A private throwaway cluster (a test that restarts the server owns its own)."""
    from .pg import Cluster, binaries_missing, wait_ready

    _need_psycopg()
    reason = binaries_missing()
    if reason:
        _pg_unavailable(reason)
    cluster = Cluster().start()
    try:
        wait_ready(cluster.conninfo)
        yield cluster
    finally:
        cluster.destroy()
