"""R37 v4, R36: closing a log or a store while another thread still runs a statement on
its connection costs nothing but that statement's result; it never crashes the process.

The shell hands reads to worker threads (a post server's ``pending_posts``, ``watch``,
``wait``, a worker's ``candidates``) and closes a log from the event loop's thread when its
agent detaches or closes, so a close can meet a read still running. The connections' last
share closed every thread's connection, and closing an SQLite connection under a running
statement is a segmentation fault: a worker and every agent it served died at once
(found by the suite itself, a worker process gone in the middle of a hostile-rows test).
Each case runs in a child process, so that a crash is a failed test and not a dead run.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

# a statement that runs for about a second and touches no table: the close meets it running
LONG = (
    "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 3000000) "
    "SELECT count(*) FROM c"
)

CHILD = """
import threading, time
from inbox_core.shell import {imports}

{make}
started, outcome = threading.Event(), []

def read():
    conn = {connection}
    started.set()
    try:
        outcome.append(conn.execute({statement!r}).fetchall())
    except Exception as error:  # a typed or driver error is fine; a crash is not
        outcome.append(type(error).__name__)

thread = threading.Thread(target=read)
thread.start()
started.wait()
time.sleep(0.2)
target.close()
thread.join()
print("survived", outcome)
"""


def run_child(source: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(source)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=Path(__file__).resolve().parents[2],
    )


def survived(done: subprocess.CompletedProcess[str]) -> None:
    assert done.returncode == 0, (done.returncode, done.stderr[-2000:])
    assert "survived" in done.stdout, done.stdout


@pytest.mark.parametrize(
    ("imports", "make", "connection"),
    [
        (
            "SqliteLog",
            "target = SqliteLog(DB, agent_id='a')\ntarget.read()",
            "target.connection",
        ),
        (
            "SqliteStore",
            "target = SqliteStore(DB)\ntarget.prepare()",
            "target._reading().connection()",
        ),
    ],
    ids=["SqliteLog", "SqliteStore reader"],
)
def test_r37_closing_an_sqlite_log_or_store_under_another_thread_s_read_is_no_crash(
    tmp_path: Path, imports: str, make: str, connection: str
) -> None:
    make = f"DB = {str(tmp_path / 'agents.db')!r}\n{make}"
    done = run_child(
        CHILD.format(imports=imports, make=make, connection=connection, statement=LONG)
    )
    survived(done)
    assert "[[(3000000,)]]" in done.stdout  # the running read was let finish


def test_r37_closing_a_postgres_log_under_another_thread_s_query_is_no_crash(pg: str) -> None:
    make = f"target = PostgresLog({pg!r}, agent_id='close-under-read')\ntarget.read()"
    source = CHILD.format(
        imports="PostgresLog",
        make=make,
        connection="target._pool.connection()",
        statement="SELECT pg_sleep(1), 7",
    )
    done = run_child(source)
    survived(done)
    assert "7)]" in done.stdout  # the running query was let finish
