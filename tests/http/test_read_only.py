"""R39 over R36 v4: the front door's reads never write. Every GET (the agent, its events as
a page and as a stream, its folds, a post, the list, ``/healthz``, ``/metrics``) and every
token lookup reads through read-only connections: no file, table, migration or journal
mode change on SQLite, no table on PostgreSQL, and a server whose role may only read the
database serves, tokens included."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any
from urllib.parse import quote

from inbox_core import TurnStarted
from inbox_core.commands import queue
from inbox_core.shell import PostgresStore, SqliteLog, SqliteStore
from tests.shell.support import as_unprivileged, msg, run_async
from tests.shell.test_read_only import readable_tree, seal, snapshot, v1_file  # noqa: F401

from .support import client_of, front, problem, stream

GETS = (
    "/v1/agents/{a}",
    "/v1/agents/{a}/events",
    "/v1/agents/{a}/fates",
    "/v1/agents/{a}/transcript",
    "/v1/agents/{a}/posts/1",
    "/v1/agents",
    "/v1/agents?after=a&limit=5",
    "/healthz",
    "/metrics",
)


async def read_everything(store: Any, agent: str, headers: dict[str, str]) -> dict[str, Any]:
    """Every GET of the front door for ``agent``, and a stream opened and left; the answers
    by path."""
    from inbox_core.http import create_app

    app = create_app(store)
    segment = quote(agent, safe="")
    answers: dict[str, Any] = {}
    async with client_of(app) as client:
        for path in GETS:
            answers[path] = await client.get(path.format(a=segment), headers=headers)
    events = await stream(app, f"/v1/agents/{segment}/events", *headers.items())
    await events.until(lambda frames: bool(frames.comments))
    await events.leave()
    return answers


def read_untouched(path: Path, agent: str, headers: dict[str, str] | None = None) -> Any:
    """``read_everything`` over a ``SqliteStore`` of ``path``, checking that no file of its
    folder changed a byte (none was made, none removed)."""
    before = snapshot(path.parent)
    store = SqliteStore(path)
    try:
        answers = run_async(read_everything)(store, agent, headers or {})
    finally:
        store.close()
    assert snapshot(path.parent) == before
    return answers


def test_r39_r36_v4_reading_a_file_not_made_yet_creates_nothing(tmp_path: Path) -> None:
    answers = read_untouched(tmp_path / "new.db", "alice")
    assert list(tmp_path.iterdir()) == []
    assert answers["/v1/agents/{a}"].json()["seq"] == 0
    assert answers["/v1/agents"].json() == {"agents": [], "next": None}
    assert answers["/healthz"].status_code == 200
    problem(answers["/v1/agents/{a}/posts/1"], 404, "Not Found")


def test_r39_r36_v4_reading_a_v1_file_lists_default_and_leaves_every_byte(
    tmp_path: Path,
) -> None:
    """A v1 file is read as agent "default" (work not known yet, as its migration says),
    never migrated by a GET."""
    answers = read_untouched(v1_file(tmp_path / "v1.db"), "default")
    assert answers["/v1/agents"].json() == {
        "agents": [{"id": "default", "work": True, "pendingPosts": 0}],
        "next": None,
    }
    assert answers["/v1/agents/{a}/events"].json()["next"] == 2


def test_r39_r36_v4_reading_a_log_without_posts_or_owners_adds_no_table(tmp_path: Path) -> None:
    """A v2 file a ``SqliteLog`` wrote (no posts table) whose ``agents`` table is gone (a
    file of before R37) keeps its tables; its agent is listed with work not known yet."""
    path = tmp_path / "log.db"
    with SqliteLog(path, agent_id="a") as log:
        log.acquire()
        log.append([TurnStarted(1)])
    (tmp_path / "log.db-owners").unlink(missing_ok=True)
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("DROP TABLE agents")
    conn.close()
    answers = read_untouched(path, "a")
    assert answers["/v1/agents"].json()["agents"] == [{"id": "a", "work": True, "pendingPosts": 0}]
    assert answers["/v1/agents/{a}/events"].json()["next"] == 1


def test_r39_r36_v4_token_lookups_of_a_closed_store_change_no_byte(tmp_path: Path) -> None:
    path = tmp_path / "agents.db"
    with SqliteStore(path) as writer:
        writer.post("team-a/x", queue(msg("hi")))
        secret = writer.tokens.add("reader", ["read"], "team-a/*")
    answers = read_untouched(path, "team-a/x", {"Authorization": f"Bearer {secret}"})
    assert answers["/v1/agents"].json()["agents"] == [
        {"id": "team-a/x", "work": True, "pendingPosts": 1}
    ]
    assert answers["/v1/agents/{a}/posts/1"].json()["outcome"] == {"kind": "pending"}


UNPRIVILEGED_READER = """
import sys
from inbox_core.shell import SqliteStore
from inbox_core.shell.stores.posts import Receipt
store = SqliteStore(sys.argv[1])
info = store.tokens.find(sys.argv[2])
print(info.name, info.pattern, store.tokens.count())
print([(a.id, a.pending_posts) for a in store.agents()])
print(store.pending_count("team-a/x"), store.posted_command(Receipt("team-a/x", 1))[:15])
"""


def test_r39_r36_v4_a_user_who_may_only_read_sees_tokens_and_agents(
    readable_tree: Path,  # noqa: F811 - the fixture
) -> None:
    """What the front door reads of a store (tokens, the list, pending posts, a post's
    command) works for a process that may only read the file, in a folder it cannot write."""
    logs = readable_tree / "logs"
    path = logs / "agents.db"
    with SqliteStore(path) as writer:
        writer.post("team-a/x", queue(msg("hi")))
        secret = writer.tokens.add("reader", ["read"], "team-a/*")
    seal(logs)
    before = snapshot(logs)
    done = subprocess.run(
        as_unprivileged([sys.executable, "-c", UNPRIVILEGED_READER, str(path), secret]),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd="/",
        env={"PYTHONPATH": str(readable_tree / "code"), "PYTHONDONTWRITEBYTECODE": "1"},
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.splitlines() == [
        "reader team-a/* 1",
        "[('team-a/x', 1)]",
        '1 {"type":"send",',
    ]
    assert snapshot(logs) == before


def test_r39_r35_v4_stored_ids_that_are_no_agent_ids_are_skipped_in_the_list(
    tmp_path: Path,
) -> None:
    """A producer's posts row whose agent id is a BLOB, text that is not UTF-8, or empty is
    no agent: the list pages past it (it is never an error, never listed)."""
    path = tmp_path / "agents.db"
    with SqliteStore(path) as writer:
        for agent in ("a", "c", "e"):
            writer.post(agent, queue(msg("hi")))
    conn = sqlite3.connect(path, isolation_level=None)
    for stored in (b"b\xff", "", "d" * 300):
        conn.execute("INSERT INTO posts (agent_id, command) VALUES (?, '{}')", (stored,))
    conn.execute(
        "INSERT INTO posts (agent_id, command) VALUES (CAST(? AS TEXT), '{}')", (b"b\xfe",)
    )
    conn.close()
    store = SqliteStore(path)
    try:
        pages = [store.agents(None, 1)]
        while len(pages[-1]) == 1:
            pages.append(store.agents(pages[-1][0].id, 1))
        everything = store.agents()
    finally:
        store.close()
    assert [agent.id for page in pages for agent in page] == ["a", "c", "e"]
    assert [agent.id for agent in everything] == ["a", "c", "e"]


# ---------------------------------------------------------------------- PostgreSQL


def test_r39_r36_v4_postgres_reads_create_no_table_and_a_read_only_role_serves(
    pg_server: str,
) -> None:
    import psycopg

    from tests.shell.pg import create_database

    conninfo = create_database(pg_server, f"inbox_core_http_ro_{uuid.uuid4().hex[:8]}")

    def tables() -> list[str]:
        with psycopg.connect(conninfo, autocommit=True) as conn:
            rows = conn.execute(
                "SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY 1"
            ).fetchall()
        return [str(name) for (name,) in rows]

    with PostgresStore(conninfo) as store:
        answers = run_async(read_everything)(store, "alice", {})
    assert tables() == []
    assert answers["/v1/agents"].json() == {"agents": [], "next": None}

    with PostgresStore(conninfo) as writer:
        writer.post("team-a/x", queue(msg("hi")))
        secret = writer.tokens.add("reader", ["read"], "team-a/*")
    role = f"reader_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(conninfo, autocommit=True) as conn:
        conn.execute(f"CREATE ROLE {role} LOGIN")
        conn.execute(f"GRANT SELECT ON ALL TABLES IN SCHEMA public TO {role}")
    made = tables()
    with PostgresStore(f"{conninfo} user={role}") as reader:
        answers = run_async(read_everything)(
            reader, "team-a/x", {"Authorization": f"Bearer {secret}"}
        )
        refused = run_async(_get)(reader, "/v1/agents/team-a%2Fx")
    assert tables() == made
    assert answers["/v1/agents"].json()["agents"] == [
        {"id": "team-a/x", "work": True, "pendingPosts": 1}
    ]
    assert answers["/v1/agents/{a}"].json()["pendingPosts"] == 1
    assert answers["/metrics"].status_code == 200
    problem(refused, 401, "Unauthorized")


async def _get(store: Any, path: str) -> Any:
    async with front(store) as client:
        return await client.get(path)
