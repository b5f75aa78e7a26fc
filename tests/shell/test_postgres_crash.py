"""Crash safety of PostgresLog + LoopAgent: kill -9 a writer at random points (I12, R27, R29).

The SQLite crash loop of test_crash.py, on PostgreSQL: each round a child
process acquires the agent's lease, resumes the log, drives random traffic and
is killed (SIGKILL from a timer, SIGKILL armed around a random append's
statement, or ``os._exit`` in a hook or subscriber). The same checks follow
every death: the log reads and replays, grew by whole appends only, the child
resumed first, every accepted message is durable and none is lost, and Resume
closes the orphaned turn. A dead worker's lease outlives it: before each round
the test fast-forwards the lease clock (what waiting ``lease_seconds`` does),
so the next child takes the log over with a new epoch. Default 6 kills;
``-m slow`` runs 60; ``CRASH_SEED`` reproduces.
"""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from inbox_core.shell import PostgresLog
from inbox_core.shell.stores.postgres.log import create_tables

from .test_crash import base_seed, crash_rounds


def postgres_store(pg: str) -> tuple[str, object, object]:
    import psycopg

    agent_id = f"crash-{uuid.uuid4().hex}"

    def lapse() -> None:
        with psycopg.connect(pg, autocommit=True) as conn:
            create_tables(conn)
            conn.execute(
                "UPDATE inbox_core_owners SET expires_at = clock_timestamp() WHERE agent_id = %s",
                (agent_id,),
            )

    return f"pg:{pg}#{agent_id}", lambda: PostgresLog(pg, agent_id), lapse


def run(pg: str, tmp_path: Path, rounds: int) -> None:
    seed = base_seed()
    stats = crash_rounds(tmp_path, rounds, seed, postgres_store(pg))  # type: ignore[arg-type]
    print(f"postgres crash seed {seed}: {dict(stats)}")
    assert sum(v for k, v in stats.items() if k.startswith("exit:")) == rounds
    assert stats["accepted"] > 0


def test_I12_R27_R29_kill_a_postgres_writer_at_random_points(pg: str, tmp_path: Path) -> None:
    """I12, R27, R29: 6 kills; every reopen replays, loses nothing, resumes."""
    run(pg, tmp_path, 6)


@pytest.mark.slow
def test_I12_R27_R29_postgres_crash_loop_slow(pg: str, tmp_path: Path) -> None:
    """I12, R27, R29: the same with 60 kills (``-m slow``)."""
    run(pg, tmp_path, 60)
