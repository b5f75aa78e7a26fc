"""Reading never writes (R36 v4; issue 28, item 10): ``store.watch``, ``store.wait``,
``store.outcome``, ``store.events`` and ``inbox-core watch`` open the database read-only:
no migration, no journal mode change, no table, no file but SQLite's own -wal/-shm, none
at all next to a device or in a directory the reader cannot write; a user who may only
read can watch; ``post`` on a device is refused before anything is created."""

from __future__ import annotations

import asyncio
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from inbox_core import TurnStarted
from inbox_core.cli import main
from inbox_core.commands import followup
from inbox_core.shell import (
    IncompatibleLog,
    LogUnavailable,
    PostgresStore,
    Receipt,
    SqliteLog,
    SqliteStore,
    UnknownReceipt,
)
from inbox_core.shell.stores.posts import PostTimeout

from .posts_support import agent_name
from .support import as_unprivileged, msg, run_async

ROOT = Path(__file__).resolve().parents[2]
V1_TABLE = "CREATE TABLE events (seq INTEGER PRIMARY KEY, event TEXT)"
TURN = '{"type":"turn/start","data":{"turn":%d}}'


def snapshot(folder: Path) -> dict[str, bytes]:
    """Every file of ``folder`` and its bytes: "untouched" means this is unchanged."""
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file()}


def v1_file(path: Path, events: int = 2) -> Path:
    """A version 1 log (one agent, rollback journal): what a reader must not migrate."""
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute(V1_TABLE)
    conn.execute("PRAGMA user_version=1")
    for seq in range(events):
        conn.execute("INSERT INTO events VALUES (?, ?)", (seq, TURN % (seq + 1)))
    conn.close()
    return path


async def take(store: SqliteStore | PostgresStore, agent: str, count: int) -> list[int]:
    """The seqs of the first ``count`` events a watch yields."""
    seqs: list[int] = []
    async for seq, _event in store.watch(agent):
        seqs.append(seq)
        if len(seqs) == count:
            break
    return seqs


def test_r36_v4_reading_a_v1_file_leaves_it_exactly_as_it_was(tmp_path: Path) -> None:
    """R36 v4: watch, events, outcome, wait, pending and has_owner on a v1 file read agent
    "default" and change no byte: no migration, no switch to WAL, no table, no file beside
    it (pending migrated the file, has_owner created the lock file beside it)."""
    path = v1_file(tmp_path / "v1.db")
    before = snapshot(tmp_path)

    async def main_() -> None:
        store = SqliteStore(path)
        try:
            assert await take(store, "default", 2) == [0, 1]
            assert [seq for seq, _ in store.events("default")] == [0, 1]
            assert store.events("bob") == []
            with pytest.raises(UnknownReceipt):
                store.outcome(Receipt("default", 1))
            with pytest.raises(UnknownReceipt):
                await store.wait(Receipt("default", 1), timeout=1)
            assert store.pending("default") == []
            assert store.has_owner("default") is False
        finally:
            store.close()

    run_async(main_)()
    assert snapshot(tmp_path) == before


def test_r36_v4_reading_adds_no_table_to_a_log_without_posts(tmp_path: Path) -> None:
    """R36 v4: a v2 log nobody posted to keeps its tables: reading outcomes creates none."""
    path = tmp_path / "log.db"
    with SqliteLog(path, agent_id="a") as log:
        log.acquire()
        log.append([TurnStarted(1)])
    (tmp_path / "log.db-owners").unlink()
    before = snapshot(tmp_path)

    async def main_() -> None:
        with SqliteStore(path) as store:
            assert await take(store, "a", 1) == [0]
            with pytest.raises(UnknownReceipt):
                await store.wait(Receipt("a", 7), timeout=0)

    run_async(main_)()
    assert snapshot(tmp_path) == before


def test_r36_v4_a_store_of_a_missing_file_creates_nothing_until_it_writes(
    tmp_path: Path,
) -> None:
    """R36 v4: building a store, reading and waiting create no file; the first post does."""
    path = tmp_path / "new.db"

    async def main_() -> None:
        with SqliteStore(path) as store:
            assert store.events("a") == []
            with pytest.raises(UnknownReceipt):
                store.outcome(Receipt("a", 1))
            watch = asyncio.ensure_future(take(store, "a", 1))
            await asyncio.sleep(0.05)
            assert list(tmp_path.iterdir()) == []
            receipt = store.post("a", followup(msg("hi")))
            with pytest.raises(PostTimeout):
                await store.wait(receipt, timeout=0)
            watch.cancel()

    run_async(main_)()
    assert path.exists()


APPEND = """
import sys
from inbox_core import TurnStarted
from inbox_core.shell import SqliteLog
with SqliteLog(sys.argv[1], agent_id="a") as log:
    log.acquire()
    log.append([TurnStarted(1)])
    log.append([TurnStarted(2)])
"""


def test_r36_v4_a_watch_of_a_file_not_made_yet_sees_another_process_make_it(
    tmp_path: Path,
) -> None:
    """R36 v4: with no -wal file beside it (here: no file at all) the change poller watches
    the file itself, creating nothing, and wakes the watcher when another process writes."""
    path = tmp_path / "later.db"

    async def main_() -> None:
        with SqliteStore(path) as store:
            watch = asyncio.ensure_future(take(store, "a", 2))
            await asyncio.sleep(0.1)
            assert list(tmp_path.iterdir()) == []
            writer = await asyncio.create_subprocess_exec(
                sys.executable, "-c", APPEND, str(path), cwd=ROOT
            )
            assert await writer.wait() == 0
            assert await asyncio.wait_for(watch, 8) == [0, 1]  # before the 10 s slow poll

    run_async(main_)()


def test_r36_v4_an_incompatible_file_is_refused_untouched_when_the_store_is_built(
    tmp_path: Path,
) -> None:
    """R36 v4, SH9: a file that is no inbox-core log is IncompatibleLog, found reading only."""
    path = tmp_path / "other.db"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE mine (x)")
    conn.close()
    before = snapshot(tmp_path)
    with pytest.raises(IncompatibleLog):
        SqliteStore(path)
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize("kind", ["fifo", "directory", "device"])
def test_r36_v4_a_path_that_is_no_regular_file_is_refused_before_anything_is_made(
    tmp_path: Path, kind: str
) -> None:
    """R36 v4: a store or a log on a device, a FIFO or a directory is LogUnavailable naming
    what it is, and no journal or -wal file appears beside it (``/dev/null-journal``)."""
    folder = tmp_path / "d"
    folder.mkdir()
    if kind == "fifo":
        path = folder / "x.db"
        os.mkfifo(path)
    elif kind == "directory":
        path = folder / "x.db"
        path.mkdir()
    else:
        path = folder / "x.db"
        path.symlink_to("/dev/null")
    before = sorted(p.name for p in folder.iterdir())
    journal_before = os.path.exists("/dev/null-journal")
    for make in (SqliteStore, SqliteLog):
        with pytest.raises(LogUnavailable, match="not an SQLite log file"):
            make(path)
    with pytest.raises(LogUnavailable, match="character device"):
        SqliteStore("/dev/null")
    assert sorted(p.name for p in folder.iterdir()) == before
    assert os.path.exists("/dev/null-journal") == journal_before


@pytest.mark.parametrize(
    "argv",
    [
        ["post", "sqlite:{link}", "a", "--queue", "x"],
        ["watch", "sqlite:{link}", "a", "--no-follow"],
        ["watch", "sqlite:{link}", "a"],
        ["serve", "sqlite:{link}", "--host", "inbox_core.shell.echo:echo_host"],
    ],
)
def test_r36_v4_the_cli_on_a_device_is_one_line_and_creates_nothing(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, argv: list[str]
) -> None:
    """R36 v4: ``post``, ``watch`` and ``serve`` on ``sqlite:/dev/null`` (here a link to
    it) fail with one line, exit 1, and no journal appears beside it."""
    link = tmp_path / "null.db"
    link.symlink_to("/dev/null")
    journal_before = os.path.exists("/dev/null-journal")
    code = main([part.replace("{link}", str(link)) for part in argv])
    err = capsys.readouterr().err
    assert code == 1
    assert err.count("\n") == 1
    assert "LogUnavailable" in err
    assert "character device" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["null.db"]
    assert os.path.exists("/dev/null-journal") == journal_before


def test_r36_v4_inbox_core_watch_leaves_a_v1_file_as_it_was(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """R36 v4: ``inbox-core watch`` (``--no-follow``, then following in a child process)
    prints a v1 file's events and changes nothing."""
    path = v1_file(tmp_path / "v1.db", events=3)
    before = snapshot(tmp_path)
    assert main(["watch", f"sqlite:{path}", "default", "--no-follow"]) == 0
    assert [line.split()[0] for line in capsys.readouterr().out.splitlines()] == [
        "#0",
        "#1",
        "#2",
    ]
    child = subprocess.Popen(
        [sys.executable, "-m", "inbox_core", "watch", f"sqlite:{path}", "default"],
        stdout=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )
    try:
        assert child.stdout is not None
        assert [child.stdout.readline().split()[0] for _ in range(3)] == ["#0", "#1", "#2"]
    finally:
        child.terminate()
        child.wait(30)
    assert snapshot(tmp_path) == before


# ------------------------------------------------------------ a user who may only read

READER = """
import asyncio, sys
from inbox_core import InboxCoreError
from inbox_core.shell import Receipt, SqliteStore

path, agent, want = sys.argv[1], sys.argv[2], int(sys.argv[3])

async def main():
    store = SqliteStore(path)
    print("now", len(store.events(agent)), flush=True)
    try:
        print("outcome", type(store.outcome(Receipt(agent, 1))).__name__, flush=True)
    except InboxCoreError as error:
        print("outcome", type(error).__name__, flush=True)
    try:
        print("pending", len(store.pending(agent)), "served", store.has_owner(agent), flush=True)
    except InboxCoreError as error:
        print("pending", type(error).__name__, flush=True)
    seen = 0
    async for seq, event in store.watch(agent):
        seen += 1
        if seen == want:
            break
    print("watched", seen, flush=True)

try:
    asyncio.run(asyncio.wait_for(main(), 60))
except InboxCoreError as error:
    print(type(error).__name__, error, flush=True)
"""


@pytest.fixture
def readable_tree() -> Iterator[Path]:
    """A world-readable copy of the package (the clone's own directories may be private:
    issue 28, item 21), and beside it a folder the unprivileged user cannot write. Skipped,
    saying why, when that user cannot run this interpreter and its dependencies at all (a
    private virtualenv); under CI=true that fails instead."""
    probe = subprocess.run(
        as_unprivileged([sys.executable, "-c", "import attrs, immutables"]),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        cwd="/",
    )
    if probe.returncode != 0:
        why = f"an unprivileged user cannot run {sys.executable} with attrs and immutables"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"{why}: {probe.stderr.strip()[-300:]}")
        pytest.skip(why)
    top = Path(tempfile.mkdtemp(prefix="inbox-core-ro-"))
    try:
        shutil.copytree(
            ROOT / "inbox_core", top / "code" / "inbox_core", ignore=shutil.ignore_patterns("*.pyc")
        )
        (top / "logs").mkdir()
        for folder in (top, top / "code", top / "logs"):
            folder.chmod(0o755)
        yield top
    finally:
        (top / "logs").chmod(0o755)
        shutil.rmtree(top)


def run_reader(tree: Path, path: Path, agent: str, want: int) -> subprocess.Popen[str]:
    return subprocess.Popen(
        as_unprivileged([sys.executable, "-c", READER, str(path), agent, str(want)]),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd="/",
        env={**os.environ, "PYTHONPATH": str(tree / "code"), "PYTHONDONTWRITEBYTECODE": "1"},
    )


def seal(folder: Path) -> None:
    for file in folder.iterdir():
        file.chmod(0o644)
    folder.chmod(0o555)


def test_r36_v4_a_user_who_may_only_read_watches_a_closed_log(readable_tree: Path) -> None:
    """R36 v4: in a directory it cannot write, an unprivileged user reads, asks an outcome,
    lists the pending posts (LogUnavailable before: ``pending`` opened the file to write)
    and watches a cleanly closed log; nothing in the directory changes."""
    logs = readable_tree / "logs"
    path = logs / "agents.db"
    with SqliteLog(path, agent_id="a") as log:
        log.acquire()
        log.append([TurnStarted(1), TurnStarted(2)])
    SqliteStore(path).post("a", followup(msg("x")))  # so there is a posts table to read
    (logs / "agents.db-owners").unlink()
    seal(logs)
    before = snapshot(logs)
    reader = run_reader(readable_tree, path, "a", 2)
    out, err = reader.communicate(timeout=90)
    assert reader.returncode == 0, err
    assert out.splitlines() == [
        "now 2",
        "outcome PostPending",
        "pending 1 served False",
        "watched 2",
    ], err
    assert snapshot(logs) == before


def test_r36_v4_a_user_who_may_only_read_follows_a_live_writer(readable_tree: Path) -> None:
    """R36 v4: the same user follows a log while its writer appends (through the writer's
    -wal and -shm): it sees the new events and that the agent is served (``has_owner``
    said False: its lock test needed a writable lock file), and creates no file."""
    logs = readable_tree / "logs"
    path = logs / "agents.db"
    with SqliteLog(path, agent_id="a") as log:
        log.acquire()
        log.append([TurnStarted(1)])
        SqliteStore(path).post("a", followup(msg("x")))
        seal(logs)
        names = sorted(p.name for p in logs.iterdir())
        reader = run_reader(readable_tree, path, "a", 3)
        assert reader.stdout is not None
        assert reader.stdout.readline().strip() == "now 1", reader.stderr.read()
        assert reader.stdout.readline().strip() == "outcome PostPending"
        assert reader.stdout.readline().strip() == "pending 1 served True"
        log.append([TurnStarted(2)])
        log.append([TurnStarted(3)])
        out, err = reader.communicate(timeout=90)
        assert reader.returncode == 0, err
        assert out.splitlines() == ["watched 3"], err
        assert sorted(p.name for p in logs.iterdir()) == names


# ---------------------------------------------------------------------- PostgreSQL


def test_r36_v4_postgres_reads_create_no_table(pg_server: str) -> None:
    """R36 v4: on a database without the tables, events, outcome, wait and watch find
    nothing (UnknownReceipt, no events) and create no table; the first post creates them."""
    import psycopg

    from .pg import create_database

    conninfo = create_database(pg_server, f"inbox_core_ro_{uuid.uuid4().hex[:8]}")

    def tables() -> list[str]:
        with psycopg.connect(conninfo, autocommit=True) as conn:
            rows = conn.execute(
                "SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY 1"
            ).fetchall()
        return [str(name) for (name,) in rows]

    agent = agent_name()

    async def main_() -> None:
        with PostgresStore(conninfo) as store:
            assert store.events(agent) == []
            with pytest.raises(UnknownReceipt):
                store.outcome(Receipt(agent, 1))
            with pytest.raises(UnknownReceipt):
                await store.wait(Receipt(agent, 1), timeout=1)
            watch = asyncio.ensure_future(take(store, agent, 1))
            await asyncio.sleep(0.2)
            assert not watch.done()
            assert tables() == []
            store.post(agent, followup(msg("hi")))
            watch.cancel()

    run_async(main_)()
    assert "inbox_core_posts" in tables()
