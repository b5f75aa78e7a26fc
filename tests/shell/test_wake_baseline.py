"""A SQLite waiter whose poller starts after the commit it waits for (R36): the poller's
first reading (``PRAGMA data_version``, or the files' ``stat`` while no ``-wal`` exists) is
its baseline, so a commit by another process between a waiter's first look and that
reading changed nothing the poller could see, and the waiter slept through its slow poll
(10 to 20 s; ``Prefer: wait`` of the front door answered 202 for a post applied in
milliseconds). Both baselines ring every waiter once."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

import pytest

from inbox_core.shell import SqliteStore
from inbox_core.shell.stores.sqlite.wake import SqliteWake

from .support import run_async


@pytest.mark.parametrize("writer_open", [True, False], ids=["wal", "no-wal"])
@run_async
async def test_r36_a_commit_before_the_pollers_baseline_still_wakes_the_waiter(
    tmp_path: Path, writer_open: bool
) -> None:
    path = tmp_path / "agents.db"
    store = SqliteStore(path)
    store.prepare()  # the file and its tables
    writer = sqlite3.connect(path, isolation_level=None)  # a live writer keeps the -wal
    writer.execute("SELECT 1 FROM posts").fetchall()
    if not writer_open:
        writer.close()
        store.close()
    wake = SqliteWake(str(path), "outcome:a")  # the poller task exists, it has not run yet
    try:
        other = sqlite3.connect(path, isolation_level=None)  # another process's commit
        other.execute("INSERT INTO posts (agent_id, command) VALUES ('a', '{}')")
        other.close()
        await asyncio.wait_for(wake.wait(), 2)  # not the slow poll
    finally:
        wake.close()
        if writer_open:
            writer.close()
            store.close()
