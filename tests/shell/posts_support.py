"""Helpers of the post tests (R35, R36): one store per backend, children, checks."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from inbox_core import fates
from inbox_core.shell import LoopAgent, PostgresStore, SqliteStore
from inbox_core.shell.stores.sqlite.schema import SQLITE_POSTS

HERE = Path(__file__).resolve().parent
AnyStore = SqliteStore | PostgresStore
BACKENDS = ["sqlite", "postgres"]


def pg_url(conninfo: str) -> str:
    """The ``postgresql://`` URL of a key=value conninfo (what the CLI's STORE takes)."""
    import psycopg

    parts = psycopg.conninfo.conninfo_to_dict(conninfo)
    user = parts.get("user", "postgres")
    return (
        f"postgresql://{user}@{parts.get('host', '127.0.0.1')}:{parts.get('port', 5432)}/"
        f"{parts.get('dbname', 'postgres')}"
    )


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[AnyStore, str]]:
    """``(store, spec)``: a store and its STORE form (``sqlite:PATH`` or a URL)."""
    if request.param == "sqlite":
        path = tmp_path / "agents.db"
        store: AnyStore = SqliteStore(path)
        spec = f"sqlite:{path}"
    else:
        conninfo = request.getfixturevalue("pg")
        store = PostgresStore(conninfo)
        spec = pg_url(conninfo)
    try:
        yield ready(store), spec
    finally:
        store.close()


def ready(store: AnyStore) -> AnyStore:
    """``store`` once its tables exist (``prepare``): building a store writes nothing (R36
    v4); its first write makes them, before a foreign producer inserts rows."""
    store.prepare()
    return store


@pytest.fixture
def store(backend: tuple[AnyStore, str]) -> AnyStore:
    return backend[0]


def agent_name() -> str:
    return f"agent-{uuid.uuid4().hex[:12]}"


def execute(store: AnyStore, sql: str, *args: Any) -> list[Any]:
    """Run one statement on a fresh connection of the store's database (a foreign producer)."""
    if isinstance(store, SqliteStore):
        import sqlite3

        conn = sqlite3.connect(store.path, isolation_level=None)
        try:
            return conn.execute(sql.replace("%s", "?"), args).fetchall()
        finally:
            conn.close()
    import psycopg

    with psycopg.connect(store.conninfo, autocommit=True) as pg_conn:
        cursor = pg_conn.execute(sql, args)
        return cursor.fetchall() if cursor.description else []


def posts_table(store: AnyStore) -> str:
    return SQLITE_POSTS if isinstance(store, SqliteStore) else "inbox_core_posts"


def post_rows(store: AnyStore, agent: str) -> int:
    rows = execute(store, f"SELECT COUNT(*) FROM {posts_table(store)} WHERE agent_id = %s", agent)
    return int(rows[0][0])


def fate_kinds(agent_or_log: Any) -> dict[str, str]:
    """``{message id: fate kind}`` of a log (R32)."""
    log = agent_or_log.log if isinstance(agent_or_log, LoopAgent) else agent_or_log
    return {str(mid): type(fate).__name__ for mid, fate in fates(log.read()).items()}


def child(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, str(HERE / "post_child.py"), *args],
        stdout=subprocess.PIPE,
        text=True,
        cwd=HERE.parents[1],
    )


def expect_line(proc: subprocess.Popen[str], word: str, timeout: float = 30.0) -> str:
    assert proc.stdout is not None
    line = proc.stdout.readline()
    assert line.startswith(word), f"expected {word}, got {line!r} (exit {proc.poll()})"
    return line


async def until(check: Any, timeout: float = 10.0, what: str = "condition") -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not check():
        if loop.time() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.01)
