"""What ``SqliteLog`` opens, and how it fails (SH9, R29, R26): only an inbox-core log (v2, v1,
or a new empty file) is used; anything else is refused untouched; every SQLite failure is a
typed error; bad arguments are refused before anything is opened; the read-only readers
create nothing."""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from inbox_core import InvalidInput, StepEnded, TurnStarted, limits
from inbox_core.shell import CorruptLog, IncompatibleLog, LogUnavailable, SqliteLog
from inbox_core.shell.stores.sqlite.log import iter_sqlite_log, sqlite_agent_ids

from .support import as_unprivileged

ROOT = Path(__file__).resolve().parents[2]

V1_TABLE = "CREATE TABLE events (seq INTEGER PRIMARY KEY, event TEXT)"
TURN = '{"type":"turn/start","data":{"turn":1}}'


def make_db(path: Path, *statements: str) -> Path:
    conn = sqlite3.connect(path, isolation_level=None)
    for statement in statements:
        conn.execute(statement)
    conn.close()
    return path


def snapshot(folder: Path) -> dict[str, bytes]:
    """Every file of ``folder`` and its bytes: "untouched" means this is unchanged."""
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file()}


# ------------------------------------------------------------ what is refused

FOREIGN: dict[str, tuple[str, ...]] = {
    "another app's tables": ("CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT)",),
    "an events table of another shape": (
        "CREATE TABLE events (id INTEGER PRIMARY KEY, name TEXT, at REAL)",
        "INSERT INTO events (name, at) VALUES ('login', 1.5)",
    ),
    "events of another shape, user_version 1": (
        "CREATE TABLE events (id TEXT, payload BLOB)",
        "PRAGMA user_version=1",
    ),
    "events of another shape, user_version 2": (
        "CREATE TABLE events (agent TEXT, n INTEGER, body TEXT)",
        "PRAGMA user_version=2",
    ),
    "user_version 2 without events": ("CREATE TABLE t (x)", "PRAGMA user_version=2"),
    "a v1 events table beside other tables": (V1_TABLE, "CREATE TABLE users (id INTEGER)"),
    "a newer schema version": (
        "CREATE TABLE events (agent_id TEXT, seq INTEGER, event TEXT)",
        "PRAGMA user_version=3",
    ),
}


@pytest.mark.parametrize("statements", FOREIGN.values(), ids=FOREIGN.keys())
def test_SH9_another_applications_database_is_refused_untouched(
    tmp_path: Path, statements: tuple[str, ...]
) -> None:
    """SH9, R26: a database that is not an inbox-core log raises IncompatibleLog, and the file is
    byte for byte what it was: no WAL switch, no table, no user_version, no -wal file."""
    path = make_db(tmp_path / "app.db", *statements)
    before = snapshot(tmp_path)
    with pytest.raises(IncompatibleLog) as info:
        SqliteLog(path)
    assert "is not an inbox-core log" in str(info.value)
    assert snapshot(tmp_path) == before
    with pytest.raises(IncompatibleLog):
        list(iter_sqlite_log(path))  # the read-only reader refuses it the same way
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize(
    "content",
    [
        b"hello, I am a text file\n" * 100,
        b"x",
        b"SQLite",
        b"\x00" * 4096,
        b"SQLite format 3\x00" + b"\xff" * 200,
    ],
    ids=["text", "one-byte", "half-header", "zeros", "bad-header"],
)
def test_SH9_a_file_that_is_not_sqlite_is_refused_untouched(tmp_path: Path, content: bytes) -> None:
    """SH9, R26: a text file (or any non-SQLite bytes) raises IncompatibleLog, unchanged."""
    path = tmp_path / "notes.txt"
    path.write_bytes(content)
    before = snapshot(tmp_path)
    with pytest.raises(IncompatibleLog, match="not an SQLite database") as info:
        SqliteLog(path)
    assert path.name in str(info.value)
    assert snapshot(tmp_path) == before
    with pytest.raises(IncompatibleLog):
        list(iter_sqlite_log(path))


@pytest.mark.parametrize(
    ("rows", "seq", "reason"),
    [
        ([(0, TURN), (1, None)], 1, "NULL"),
        ([(-1, TURN), (0, TURN)], 0, "found -1"),
        ([(0, TURN), (2, TURN)], 1, "found 2"),
    ],
    ids=["null-event", "negative-seq", "gap"],
)
def test_R29_a_v1_file_whose_rows_v2_cannot_hold_is_corrupt_and_untouched(
    tmp_path: Path, rows: list[tuple[int, str | None]], seq: int, reason: str
) -> None:
    """R29, R10: a v1 file with a NULL event, a negative seq or a gap is not migrated: CorruptLog
    names the seq, and the v1 file stays as it was (no IntegrityError, no half migration)."""
    path = make_db(tmp_path / "v1.db", V1_TABLE, "PRAGMA user_version=1")
    with sqlite3.connect(path) as conn:
        conn.executemany("INSERT INTO events VALUES (?, ?)", rows)
    conn.close()
    before = snapshot(tmp_path)
    with pytest.raises(CorruptLog) as info:
        SqliteLog(path)
    assert info.value.seq == seq
    assert reason in info.value.reason
    assert snapshot(tmp_path) == before


# ------------------------------------------------------------ what is opened


def test_SH9_a_new_or_empty_file_becomes_a_v2_log(tmp_path: Path) -> None:
    """SH9: a path that does not exist yet, or an empty (0-byte) file, becomes a v2 log."""
    empty = tmp_path / "empty.db"
    empty.touch()
    for path in (tmp_path / "new.db", empty):
        with SqliteLog(path) as log:
            assert log.connection.execute("PRAGMA user_version").fetchone()[0] == 2
            assert log.connection.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
            assert log.read() == []


@pytest.mark.parametrize("version", [0, 1])
def test_R29_a_v1_table_is_migrated_whatever_its_not_null(tmp_path: Path, version: int) -> None:
    """R29: the v1 shape is (seq INTEGER PRIMARY KEY, event TEXT), with or without NOT NULL and
    CHECK, user_version 1 (or 0: a hand-made v1 file); it migrates to agent "default"."""
    path = make_db(tmp_path / "v1.db", V1_TABLE, f"PRAGMA user_version={version}")
    with sqlite3.connect(path) as conn:
        conn.execute("INSERT INTO events VALUES (0, ?)", (TURN,))
    conn.close()
    with SqliteLog(path) as log:
        assert log.read() == [TurnStarted(1)]
        assert log.agent_ids() == ["default"]


OPEN_AT = """
import sys, time
from inbox_core import TurnStarted
from inbox_core.shell import SqliteLog
path, agent, start = sys.argv[1], sys.argv[2], float(sys.argv[3])
while time.time() < start:
    pass
with SqliteLog(path, agent_id=agent) as log:
    log.acquire()
    log.append([TurnStarted(1)])
"""


def test_SH9_processes_creating_a_new_file_at_once_all_open_it(tmp_path: Path) -> None:
    """SH9: six processes open the same new file at the same instant: it is created once and
    every one of them opens it (each classifies what it sees in one snapshot: never a table
    without its user_version) and appends its agent's event."""
    path = tmp_path / "new.db"
    start = time.time() + 1.0
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    children = [
        subprocess.Popen(
            [sys.executable, "-c", OPEN_AT, str(path), f"agent-{n}", str(start)],
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        for n in range(6)
    ]
    errors = [child.communicate(timeout=60)[1] for child in children]
    assert [child.returncode for child in children] == [0] * 6, errors
    assert sqlite_agent_ids(path) == [f"agent-{n}" for n in range(6)]


# ----------------------------------------------------------- typed failures


def test_SH9_a_missing_directory_or_a_directory_is_log_unavailable(tmp_path: Path) -> None:
    """SH9, R26: a path SQLite cannot open raises LogUnavailable saying why."""
    with pytest.raises(LogUnavailable, match="does not exist"):
        SqliteLog(tmp_path / "missing" / "x.db")
    assert not (tmp_path / "missing").exists()
    with pytest.raises(LogUnavailable, match="is a directory"):
        SqliteLog(tmp_path)


HOLD = """
import sqlite3, sys, time
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute("BEGIN IMMEDIATE")
print("held", flush=True)
time.sleep(float(sys.argv[2]))
conn.execute("COMMIT")
"""


def hold_write_lock(path: Path, seconds: float) -> subprocess.Popen[str]:
    """Another process holding the database's write lock for ``seconds``."""
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(path), str(seconds)], stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "held"
    return proc


def test_SH9_opening_waits_for_another_processs_write_lock(tmp_path: Path) -> None:
    """SH9: a new file whose write lock another process holds (rollback journal, so the WAL
    switch is what waits) opens once the lock is released within the timeout; SQLite alone
    fails at once ("database is locked": no busy handler for the switch)."""
    path = tmp_path / "fresh.db"
    holder = hold_write_lock(path, 0.3)
    started = time.monotonic()
    with SqliteLog(path, timeout=5.0) as log:
        assert time.monotonic() - started >= 0.2
        log.acquire()
        log.append([TurnStarted(1)])
    holder.wait(10)


def test_SH9_a_lock_held_past_the_timeout_is_log_unavailable(tmp_path: Path) -> None:
    """SH9, R26: opening a locked new file, and appending to a log whose write lock another
    process holds, wait the timeout, then raise LogUnavailable; nothing was written."""
    fresh = tmp_path / "fresh.db"
    holder = hold_write_lock(fresh, 5)
    started = time.monotonic()
    with pytest.raises(LogUnavailable, match="locked"):
        SqliteLog(fresh, timeout=0.2)
    assert time.monotonic() - started >= 0.15
    holder.kill()
    holder.wait(10)
    path = tmp_path / "log.db"
    with SqliteLog(path, timeout=0.2) as log:
        log.acquire()
        log.append([TurnStarted(1)])
        holder = hold_write_lock(path, 5)
        started = time.monotonic()
        with pytest.raises(LogUnavailable, match="locked"):
            log.append([StepEnded(1, 1)])
        assert time.monotonic() - started >= 0.15
        holder.kill()
        holder.wait(10)
        assert log.read() == [TurnStarted(1)]


def test_SH9_a_path_under_a_file_is_log_unavailable_saying_so(tmp_path: Path) -> None:
    """SH9, R26: a path whose parent is a file names that, not "does not exist"."""
    (tmp_path / "file").write_text("x", encoding="utf-8")
    with pytest.raises(LogUnavailable, match="is not a directory"):
        SqliteLog(tmp_path / "file" / "x.db")


UNPRIVILEGED = """
import sys
from inbox_core import InboxCoreError
from inbox_core.shell import SqliteLog
from inbox_core.shell.stores.sqlite.log import iter_sqlite_log
path, how = sys.argv[1], sys.argv[2]
try:
    if how == "write":
        SqliteLog(path).close()
    else:
        print(len(list(iter_sqlite_log(path))), "events")
except InboxCoreError as error:
    print(type(error).__name__, error)
"""


def run_unprivileged(path: Path, how: str) -> str:
    """Open ``path`` (``how``: "write" with SqliteLog, "read" with iter_sqlite_log) as a user
    who cannot write its directory; what it printed."""
    result = subprocess.run(
        as_unprivileged([sys.executable, "-c", UNPRIVILEGED, str(path), how]),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        cwd="/",
        env={**os.environ, "PYTHONPATH": str(ROOT), "PYTHONDONTWRITEBYTECODE": "1"},
    )
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


@pytest.fixture
def read_only_dir() -> Iterator[Path]:
    """A directory (in a world-traversable parent) the unprivileged user cannot write."""
    top = Path(tempfile.mkdtemp(prefix="inbox-core-ro-"))
    folder = top / "logs"
    folder.mkdir()
    top.chmod(0o755)
    try:
        yield folder
    finally:
        folder.chmod(0o755)
        shutil.rmtree(top)


def seal(folder: Path) -> dict[str, bytes]:
    for file in folder.iterdir():
        file.chmod(0o644)
    folder.chmod(0o555)
    return snapshot(folder)


def test_SH9_a_writer_in_a_directory_it_cannot_write_gets_log_unavailable(
    read_only_dir: Path,
) -> None:
    """SH9, R26: SqliteLog needs to write beside the database (its -wal and -shm files): in a
    directory it cannot write, an existing log and a new one are LogUnavailable saying so."""
    path = read_only_dir / "log.db"
    SqliteLog(path).close()
    before = seal(read_only_dir)
    assert run_unprivileged(path, "write").startswith("LogUnavailable")
    assert "not writable" in run_unprivileged(path, "write")
    new = run_unprivileged(read_only_dir / "new.db", "write")
    assert new.startswith("LogUnavailable")
    assert "is not writable" in new
    assert snapshot(read_only_dir) == before


def test_SH9_a_crash_image_in_a_read_only_directory_says_what_is_wrong(
    read_only_dir: Path, tmp_path: Path
) -> None:
    """SH9, O1: a log whose last events are only in its -wal file (a writer died; its -shm is
    gone) cannot be read without creating a -shm file: the read-only reader says exactly
    that, in a directory the reader cannot write, and changes nothing."""
    live = tmp_path / "log.db"
    with SqliteLog(live) as log:
        log.acquire()
        log.append([TurnStarted(1)])
        for suffix in ("", "-wal"):  # the image a crash leaves, without the -shm
            shutil.copyfile(f"{live}{suffix}", f"{read_only_dir / 'log.db'}{suffix}")
    assert (read_only_dir / "log.db-wal").stat().st_size > 0
    before = seal(read_only_dir)
    said = run_unprivileged(read_only_dir / "log.db", "read")
    assert said.startswith("LogUnavailable")
    assert "has a -wal file" in said
    assert "-shm" in said
    assert snapshot(read_only_dir) == before


def test_SH9_the_read_only_readers_read_a_v1_file_without_migrating_it(tmp_path: Path) -> None:
    """SH9, R29: a v1 file reads as agent "default" (and no other), unmigrated, unchanged; an
    empty database holds no agent."""
    path = make_db(tmp_path / "v1.db", V1_TABLE, "PRAGMA user_version=1")
    with sqlite3.connect(path) as conn:
        conn.execute("INSERT INTO events VALUES (0, ?)", (TURN,))
    conn.close()
    before = snapshot(tmp_path)
    assert list(iter_sqlite_log(path)) == [TurnStarted(1)]
    assert list(iter_sqlite_log(path, "bob")) == []
    assert sqlite_agent_ids(path) == ["default"]
    assert snapshot(tmp_path) == before
    empty = make_db(tmp_path / "empty.db", "PRAGMA user_version=0")
    assert (sqlite_agent_ids(empty), list(iter_sqlite_log(empty))) == ([], [])


# --------------------------------------------------------- bad arguments

BAD_ARGUMENTS: dict[str, dict[str, Any]] = {
    "agent_id int": {"agent_id": 5},
    "agent_id empty": {"agent_id": ""},
    "agent_id NUL": {"agent_id": "a\x00b"},
    "agent_id too long": {"agent_id": "a" * (limits.MAX_AGENT_ID_LENGTH + 1)},
    "agent_id 10 MB": {"agent_id": "a" * 10_000_000},
    "agent_id surrogate": {"agent_id": "\ud800"},
    "synchronous": {"synchronous": "OFF"},
    "synchronous list": {"synchronous": ["FULL"]},
    "timeout negative": {"timeout": -1},
    "timeout inf": {"timeout": float("inf")},
    "timeout nan": {"timeout": float("nan")},
    "timeout str": {"timeout": "5"},
    "timeout bool": {"timeout": True},
    "path memory": {"path": ":memory:"},
    "path empty": {"path": ""},
    "path NUL": {"path": "a\x00b.db"},
    "path int": {"path": 5},
    "path bytes": {"path": b"x.db"},
}


@pytest.mark.parametrize("arguments", BAD_ARGUMENTS.values(), ids=BAD_ARGUMENTS.keys())
def test_R26_bad_arguments_are_invalid_input_before_anything_is_opened(
    tmp_path: Path, arguments: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """R26, SH9: every bad argument raises InvalidInput when the log object is built, and no
    file is created (the same agent id limits as every store: limits.agent_id)."""
    monkeypatch.chdir(tmp_path)
    arguments = {"path": tmp_path / "x.db", **arguments}
    with pytest.raises(InvalidInput):
        SqliteLog(**arguments)
    assert list(tmp_path.iterdir()) == []


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(agent_id=st.text(max_size=300) | st.integers() | st.none() | st.binary(max_size=8))
def test_R29_any_agent_id_is_refused_at_once_or_round_trips(tmp_path: Path, agent_id: Any) -> None:
    """R29, R26 (property): an agent id is refused with InvalidInput when the log object is
    built, or it works all the way: acquire, append, read back, listed by agent_ids()."""
    path = tmp_path / f"{uuid.uuid4().hex}.db"  # one file per example
    try:
        log = SqliteLog(path, agent_id=agent_id)
    except InvalidInput:
        return
    with log:
        log.acquire()
        log.append([TurnStarted(1)])
        log.release()
        assert log.read() == [TurnStarted(1)]
        assert agent_id in log.agent_ids()
        assert list(iter_sqlite_log(path, agent_id)) == [TurnStarted(1)]


# ----------------------------------------------------- the read-only readers


def test_SH9_the_read_only_readers_create_no_file(tmp_path: Path) -> None:
    """SH9, O1: reading a cleanly closed log (iter_sqlite_log, sqlite_agent_ids) creates no
    -wal, -shm or -owners file and changes no byte, even where it could."""
    path = tmp_path / "log.db"
    with SqliteLog(path, agent_id="bob") as log:
        log.acquire()
        log.append([TurnStarted(1)])
    (tmp_path / "log.db-owners").unlink()
    before = snapshot(tmp_path)
    assert sqlite_agent_ids(path) == ["bob"]
    assert list(iter_sqlite_log(path, "bob")) == [TurnStarted(1)]
    assert list(iter_sqlite_log(path)) == []
    assert snapshot(tmp_path) == before


def test_SH9_the_read_only_reader_sees_a_live_writers_uncheckpointed_events(
    tmp_path: Path,
) -> None:
    """SH9, O1: with a writer open (its events still in the -wal file) the reader goes
    through SQLite's read-only protocol and sees every committed event."""
    path = tmp_path / "live.db"
    with SqliteLog(path) as log:
        log.acquire()
        log.append([TurnStarted(1)])
        assert (tmp_path / "live.db-wal").stat().st_size > 0
        assert list(iter_sqlite_log(path)) == [TurnStarted(1)]
        log.append([StepEnded(1, 1)])  # hypothetical, decoding only
        assert len(list(iter_sqlite_log(path))) == 2


def test_SH9_the_read_only_reader_rereads_a_file_that_changed_meanwhile(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SH9: an immutable read of a file that changed during the read (a writer checkpointed)
    is read again, so it never returns a torn snapshot."""
    from inbox_core.shell.stores.sqlite import log as sqlite_module

    path = tmp_path / "log.db"
    with SqliteLog(path) as log:
        log.acquire()
        log.append([TurnStarted(1)])
    fingerprints = iter([(1, 1, 1), (2, 2, 2), (3, 3, 3), (3, 3, 3)])
    monkeypatch.setattr(sqlite_module, "_fingerprint", lambda _path: next(fingerprints))
    assert list(iter_sqlite_log(path)) == [TurnStarted(1)]  # read twice, the second held
    monkeypatch.setattr(sqlite_module, "_fingerprint", lambda _path: os.urandom(4))
    with pytest.raises(LogUnavailable, match="changed during"):
        list(iter_sqlite_log(path))


_WRITER = """
import sys
from inbox_core import create_user_message
from inbox_core.commands import queue
from inbox_core.reducer import reduce
from inbox_core.shell import SqliteLog
from inbox_core.state import AgentState

path = sys.argv[1]
log = SqliteLog(path, agent_id="a")
log.acquire()
state = AgentState()
for line in sys.stdin:  # one append per line; 'open' opens another log on the same file
    if line.strip() == "open":
        SqliteLog(path, agent_id="b")  # kept open, never owned
    else:
        transition = reduce(state, queue(create_user_message(line.strip())))
        log.append(transition.durable)
        state = transition.state
    print("ok", flush=True)
"""


def test_R27_opening_a_second_log_keeps_sqlite_locks_so_no_commit_is_lost(tmp_path: Path) -> None:
    """A process that opens one more SqliteLog on a file it writes must keep SQLite's POSIX
    locks on it: a closing connection in another process that saw no other user would
    checkpoint and delete the -wal file, and every later commit of the writer would go to
    the deleted file (invisible to all, lost at a kill -9)."""
    path = tmp_path / "agents.db"
    writer = subprocess.Popen(
        [sys.executable, "-c", _WRITER, str(path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert writer.stdin is not None
    assert writer.stdout is not None

    def send(line: str) -> None:
        writer.stdin.write(line + "\n")
        writer.stdin.flush()
        assert writer.stdout.readline() == "ok\n"

    def count() -> int:
        conn = sqlite3.connect(path)
        try:
            return int(conn.execute("SELECT COUNT(*) FROM events").fetchone()[0])
        finally:
            conn.close()  # a reader's close: the moment a lost lock would be fatal

    try:
        send("one")
        send("open")
        assert count() == 1
        send("two")
        assert count() == 2, "the writer's commit went to a deleted -wal file"
    finally:
        writer.kill()
        writer.wait()
    assert count() == 2
