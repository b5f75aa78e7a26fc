"""The ``inbox-core`` command line, run in-process through ``main([...])``."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest

from inbox_core import DurableEvent, event_from_json, event_to_json
from inbox_core.cli import main
from inbox_core.vectors import read_vector
from tests.shell.support import as_unprivileged

ROOT = Path(__file__).resolve().parents[2]
VECTORS = ROOT / "specs" / "vectors"
Capture = pytest.CaptureFixture[str]


def run(capsys: Capture, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def vector_log(name: str) -> list[DurableEvent]:
    """The whole durable log of a vector: its seed, then every event its commands emitted."""
    doc = read_vector(VECTORS / f"{name}.json")
    events = [*doc.get("seed", []), *(e for s in doc["commands"] for e in s.get("durable", []))]
    return [event_from_json(e) for e in events]


def write_jsonl(path: Path, events: list[DurableEvent]) -> Path:
    lines = [json.dumps({"seq": seq, **event_to_json(e)}) for seq, e in enumerate(events)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def write_sqlite(path: Path, events: list[DurableEvent]) -> Path:
    shell = pytest.importorskip("inbox_core.shell")
    with shell.SqliteLog(path) as log:
        log.acquire()  # R29: appending needs ownership of the log
        log.append(events)
    return path


# ----------------------------------------------------------------------- help


def test_help_explains_every_command_and_the_exit_codes(capsys: Capture) -> None:
    code, out, _ = run(capsys, "--help")
    assert code == 0
    for command in ("demo", "replay", "vectors", "fuzz"):
        assert command in out
    assert "0  success" in out
    assert "1  failure" in out
    assert "2  usage error" in out
    assert "inbox-core fuzz --examples 200 --seed 7" in out


@pytest.mark.parametrize("command", ["demo", "replay", "vectors", "fuzz"])
def test_each_command_has_help_with_examples(capsys: Capture, command: str) -> None:
    code, out, _ = run(capsys, command, "--help")
    assert code == 0
    assert f"usage: inbox-core {command}" in out
    assert "examples:" in out
    assert f"inbox-core {command}" in out.split("examples:")[1]


@pytest.mark.parametrize(
    "argv",
    [[], ["frobnicate"], ["replay"], ["fuzz", "--examples", "0"], ["fuzz", "--seed", "x"],
     ["vectors", "a", "b"]],
)  # fmt: skip
def test_usage_errors_exit_2(capsys: Capture, argv: list[str]) -> None:
    code, _, err = run(capsys, *argv)
    assert code == 2
    assert "usage: inbox-core" in err


def test_python_m_inbox_core_help() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "inbox_core", "--help"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("usage: inbox-core")
    assert "replay" in result.stdout


# -------------------------------------------------------------------- vectors


def test_vectors_pass(capsys: Capture) -> None:
    code, out, _ = run(capsys, "vectors", str(VECTORS))
    count = len(list(VECTORS.glob("*.json")))
    assert code == 0
    assert out.count("PASS  ") == count
    assert out.splitlines()[-1] == f"{count} vectors: {count} passed, 0 failed"


def test_vectors_default_directory(capsys: Capture, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    code, out, _ = run(capsys, "vectors", "-q")
    assert code == 0
    assert "PASS" not in out
    assert out.strip().endswith("0 failed")


def test_broken_vector_fails_with_a_diff(capsys: Capture, tmp_path: Path) -> None:
    """R22, I9: a vector claiming that a keep_inbox cancel discards fails, with the diff."""
    doc = read_vector(VECTORS / "cancel-keep-inbox.json")
    step = next(s for s in doc["commands"] if s["command"]["type"] == "cancel")
    step["notifications"].append(
        {"type": "agent/inbox/discarded", "data": {"message": doc["commands"][2]["command"]
                                                   ["input"]["message"]}}
    )  # fmt: skip
    (tmp_path / "broken.json").write_text(json.dumps(doc), encoding="utf-8")
    shutil.copy(VECTORS / "inbox-clear.json", tmp_path)
    code, out, _ = run(capsys, "vectors", str(tmp_path))
    assert code == 1
    assert "PASS  inbox-clear" in out
    assert "FAIL  cancel-keep-inbox (broken.json): step 4 (cancel) differs" in out
    assert "      --- expected (vector)" in out
    assert '-      "type": "agent/inbox/discarded"' in out
    assert out.splitlines()[-1] == "2 vectors: 1 passed, 1 failed"


def test_vectors_single_file_and_errors(capsys: Capture, tmp_path: Path) -> None:
    assert run(capsys, "vectors", str(VECTORS / "inbox-clear.json"))[0] == 0
    code, _, err = run(capsys, "vectors", str(tmp_path / "nope"))
    assert code == 1
    assert "no such file or directory" in err
    code, _, err = run(capsys, "vectors", str(tmp_path))
    assert code == 1
    assert "no *.json vectors" in err
    (tmp_path / "bad.json").write_text("[", encoding="utf-8")
    code, out, _ = run(capsys, "vectors", str(tmp_path))
    assert code == 1
    assert "FAIL  bad" in out


# --------------------------------------------------------------------- replay


def test_replay_sqlite_log_prints_the_projection(capsys: Capture, tmp_path: Path) -> None:
    """R10, R28: replay prints the pending lists, last turn and goal rounds."""
    path = write_sqlite(tmp_path / "log.db", vector_log("replay-full-session"))
    before = path.read_bytes()
    code, out, err = run(capsys, "replay", str(path))
    assert code == 0, err
    assert f"log: {path} (SQLite, " in out
    assert "last turn: 2" in out
    assert "open turn: none" in out
    assert '[0] q [user] "q" (not waking +contexts cq)' in out
    assert '[0] i [user] "i" (not waking)' in out
    assert "goal rounds: g=1" in out
    assert path.read_bytes() == before, "replay opens the log read-only"


def test_replay_json_lines_json_output(capsys: Capture, tmp_path: Path) -> None:
    """R10: the --json projection equals the vector's final projection."""
    doc = read_vector(VECTORS / "claims-between-steps-next-step-only.json")
    path = write_jsonl(tmp_path / "log.jsonl", vector_log(doc["name"]))
    code, out, _ = run(capsys, "replay", str(path), "--json")
    assert code == 0
    shown = json.loads(out)
    assert shown["format"] == "JSON Lines"
    projection = shown["projection"]
    for key in ("lastTurn", "openTurn", "openStep", "nextTurn", "nextStep", "goalRounds"):
        assert projection[key] == doc["final"][key], key


V2_LOGS = [
    "records-on-every-report",
    "replay-host-records-verbatim",
    "resume-aborted-orphan-consumes-claim",
    "replay-open-aborted-turn",
    "maintenance-dispose-converges-at-end",
]


@pytest.mark.parametrize("name", V2_LOGS)
def test_replay_v2_logs(capsys: Capture, tmp_path: Path, name: str) -> None:
    """R10, R23, R30: logs with turn/abort and host records replay, as JSON Lines and as
    SQLite, to the vector's final projection; SQLite keeps the records verbatim."""
    doc = read_vector(VECTORS / f"{name}.json")
    events = vector_log(name)
    assert any(e.type == "turn/abort" or e.type.startswith("host/") for e in events)
    for path in (
        write_jsonl(tmp_path / "log.jsonl", events),
        write_sqlite(tmp_path / "log.db", events),
    ):
        code, out, err = run(capsys, "replay", str(path), "--json")
        assert code == 0, err
        projection = json.loads(out)["projection"]
        for key in ("lastTurn", "openTurn", "openStep", "nextTurn", "nextStep", "goalRounds"):
            assert projection[key] == doc["final"][key], (path.name, key)
    shell = pytest.importorskip("inbox_core.shell")
    with shell.SqliteLog(tmp_path / "log.db") as log:
        assert [event_to_json(e) for e in log.read()] == [event_to_json(e) for e in events]


def test_replay_open_turn_and_events(capsys: Capture, tmp_path: Path) -> None:
    """R27: a crash-orphaned turn is reported open; --events lists the log."""
    path = write_jsonl(tmp_path / "log.jsonl", vector_log("resume-crash-mid-step")[:5])
    code, out, _ = run(capsys, "replay", str(path), "--events")
    assert code == 0
    assert "open turn: 1, step 1 open" in out
    assert "#1    turn/start             turn 1" in out
    assert '#4    user/message           a [user] "a"' in out


def test_replay_jsonl_without_seq(capsys: Capture, tmp_path: Path) -> None:
    path = tmp_path / "plain.jsonl"
    lines = [json.dumps(event_to_json(e)) for e in vector_log("delivery-followup-idle")]
    path.write_text("\n".join(lines) + "\n\n", encoding="utf-8")
    assert run(capsys, "replay", str(path))[0] == 0


def _corrupt_row(path: Path, seq: int, text: str) -> None:
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE events SET event = ? WHERE seq = ?", (text, seq))
    conn.close()


@pytest.mark.parametrize(
    ("corruption", "reason"),
    [
        ("{not json", "not JSON"),
        ('{"type": "turn/start", "data": {"turn": "x"}}', "DecodeError"),
        ('{"type": "turn/start", "data": {"turn": 9}}', "turn/start 9"),
        ('{"type": "agent/inbox/spliced", "data": {"target": "next-turn", "start": 0,'
         ' "removedCount": 0, "inserted": []}}', "removedCount is absent when 0"),
    ],
)  # fmt: skip
def test_replay_corrupted_sqlite_event_names_its_seq(
    capsys: Capture, tmp_path: Path, corruption: str, reason: str
) -> None:
    """R10, D12: one corrupted event in an SQLite log: exit 1 naming its seq."""
    events = vector_log("turn-long-session")
    path = write_sqlite(tmp_path / "log.db", events)
    seq = next(i for i, e in enumerate(events) if e.type == "turn/start" and i > 10)
    _corrupt_row(path, seq, corruption)
    code, _, err = run(capsys, "replay", str(path))
    assert code == 1
    assert f"invalid log: seq {seq}: " in err
    assert reason in err
    assert f"the first bad event is seq {seq}" in err


def test_replay_sqlite_seq_gap(capsys: Capture, tmp_path: Path) -> None:
    path = write_sqlite(tmp_path / "log.db", vector_log("turn-long-session"))
    with sqlite3.connect(path) as conn:
        conn.execute("DELETE FROM events WHERE seq = 7")
    conn.close()
    code, _, err = run(capsys, "replay", str(path))
    assert code == 1
    assert "invalid log: seq 7: expected seq 7, found 8" in err


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        ("{oops", "line 4 is not JSON"),
        ('{"seq": 3, "type": "step/start", "data": {"turn": 1}}', "DecodeError"),
        ('{"seq": 9, "type": "turn/start", "data": {"turn": 1}}', "has seq 9, expected 3"),
        ('{"seq": 3, "type": "step/start", "data": {"turn": 5, "step": 1}}', "turn 5"),
        ('{"seq": 3, "type": ["step/start"], "data": {}}', "type must be a string"),
    ],
)
def test_replay_corrupted_json_lines_event_names_its_seq(
    capsys: Capture, tmp_path: Path, line: str, reason: str
) -> None:
    """R10: one corrupted record of a JSON Lines log: exit 1 naming seq 3."""
    path = write_jsonl(tmp_path / "log.jsonl", vector_log("turn-long-session"))
    lines = path.read_text(encoding="utf-8").splitlines()
    lines[3] = line
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    code, out, err = run(capsys, "replay", str(path))
    assert code == 1
    assert "(JSON Lines)" in out
    assert err.startswith("invalid log: seq 3: ")
    assert reason in err


def test_replay_reports_the_earliest_bad_event(capsys: Capture, tmp_path: Path) -> None:
    """A replay error before an undecodable record is the one reported."""
    events = vector_log("turn-long-session")
    path = write_jsonl(tmp_path / "log.jsonl", events)
    lines = path.read_text(encoding="utf-8").splitlines()
    lines[2] = json.dumps({"seq": 2, "type": "turn/start", "data": {"turn": 4}})
    lines[6] = "garbage"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    code, _, err = run(capsys, "replay", str(path))
    assert code == 1
    assert err.startswith("invalid log: seq 2: ")


def test_replay_rejects_what_is_not_a_log(capsys: Capture, tmp_path: Path) -> None:
    code, _, err = run(capsys, "replay", str(tmp_path / "missing.db"))
    assert code == 1
    assert "no such file" in err
    binary = tmp_path / "blob.bin"
    binary.write_bytes(b"\xff\xfe\x00junk")
    code, _, err = run(capsys, "replay", str(binary))
    assert code == 1
    assert "neither an SQLite database nor UTF-8 JSON Lines" in err
    other = tmp_path / "other.db"
    with sqlite3.connect(other) as conn:
        conn.execute("CREATE TABLE t (x)")
    conn.close()
    code, _, err = run(capsys, "replay", str(other))
    assert code == 1
    assert "not an inbox-core SQLite log" in err
    empty = tmp_path / "empty.jsonl"
    empty.write_text("", encoding="utf-8")
    code, out, _ = run(capsys, "replay", str(empty))
    assert code == 0
    assert "0 events" in out


# ------------------------------------------------ replay: what a path holds


def test_replay_names_what_a_path_is_when_it_is_no_log_file(
    capsys: Capture, tmp_path: Path
) -> None:
    """A directory, a FIFO or a device is named for what it is (never "no such file"), exit 1,
    and a FIFO is not opened (no hang waiting for a writer)."""
    fifo = tmp_path / "some.fifo"
    os.mkfifo(fifo)
    for path, kind in [(tmp_path, "a directory"), (fifo, "a FIFO"), ("/dev/null", "a character")]:
        code, _, err = run(capsys, "replay", str(path))
        assert code == 1
        assert kind in err
        assert "no such file" not in err
    code, _, err = run(capsys, "replay", ".")
    assert (code, "a directory" in err) == (1, True)
    code, _, err = run(capsys, "replay", str(tmp_path / "missing.jsonl"))
    assert (code, "no such file or directory" in err) == (1, True)


def _agents_db(path: Path, *agents: str) -> Path:
    shell = pytest.importorskip("inbox_core.shell")
    events = vector_log("delivery-followup-idle")
    for agent in agents:
        with shell.SqliteLog(path, agent_id=agent) as log:
            log.acquire()
            log.append(events)
    return path


def test_replay_a_file_of_other_agents_names_them_and_exits_2(
    capsys: Capture, tmp_path: Path
) -> None:
    """R29: without --agent-id, a file holding agents but no "default" is a usage error that
    names them (never "ok: all 0 events"); an agent it does not hold is exit 1, naming them."""
    db = _agents_db(tmp_path / "agents.db", "alice", "bob")
    code, out, err = run(capsys, "replay", str(db))
    assert code == 2
    assert "'alice', 'bob'" in err
    assert "--agent-id" in err
    assert "ok: all" not in out
    code, _, err = run(capsys, "replay", str(db), "--agent-id", "carol")
    assert code == 1
    assert "no agent 'carol'" in err
    assert "'alice', 'bob'" in err
    code, out, _ = run(capsys, "replay", str(db), "--agent-id", "bob")
    assert code == 0
    assert "ok: all" in out


def test_replay_reads_default_beside_other_agents_and_an_empty_database(
    capsys: Capture, tmp_path: Path
) -> None:
    """A file holding "default" (and others) reads it without --agent-id; a new, empty log
    file is an empty log (exit 0), and holds no agent one could name."""
    db = _agents_db(tmp_path / "agents.db", "default", "bob")
    code, out, _ = run(capsys, "replay", str(db))
    assert (code, "ok: all" in out) == (0, True)
    shell = pytest.importorskip("inbox_core.shell")
    shell.SqliteLog(tmp_path / "empty.db").close()
    code, out, _ = run(capsys, "replay", str(tmp_path / "empty.db"))
    assert (code, "0 events" in out) == (0, True)
    code, _, err = run(capsys, "replay", str(tmp_path / "empty.db"), "--agent-id", "bob")
    assert (code, "no agent 'bob' in this database; it holds none" in err) == (1, True)


@pytest.mark.parametrize("agent_id", ["bob", "default"])
def test_replay_agent_id_with_json_lines_is_a_usage_error(
    capsys: Capture, tmp_path: Path, agent_id: str
) -> None:
    """--agent-id selects an agent of an SQLite file; with JSON Lines (one agent) it is a usage
    error (exit 2), never silently ignored."""
    path = write_jsonl(tmp_path / "log.jsonl", vector_log("delivery-followup-idle"))
    code, out, err = run(capsys, "replay", str(path), "--agent-id", agent_id)
    assert code == 2
    assert "JSON Lines" in err
    assert out == ""


@pytest.mark.parametrize("agent_id", ["", "a\x00b", "x" * 300])
def test_replay_a_bad_agent_id_is_a_usage_error(
    capsys: Capture, tmp_path: Path, agent_id: str
) -> None:
    """R26: an agent id no store accepts (empty, NUL, too long) is a usage error, exit 2."""
    db = _agents_db(tmp_path / "agents.db", "bob")
    code, _, err = run(capsys, "replay", str(db), "--agent-id", agent_id)
    assert code == 2
    assert "agent_id" in err


def test_replay_another_applications_database_is_not_a_log(capsys: Capture, tmp_path: Path) -> None:
    """SH9: an SQLite file with an unrelated table named events is refused by name, exit 1."""
    other = tmp_path / "other.db"
    with sqlite3.connect(other) as conn:
        conn.execute("CREATE TABLE events (id INTEGER PRIMARY KEY, name TEXT)")
        conn.execute("INSERT INTO events (name) VALUES ('login')")
    conn.close()
    code, _, err = run(capsys, "replay", str(other))
    assert code == 1
    assert "not an inbox-core SQLite log" in err
    assert "events table" in err


# ------------------------------------------------------- replay: read-only


def _closed_log(folder: Path, events: list[DurableEvent] | None = None) -> Path:
    shell = pytest.importorskip("inbox_core.shell")
    path = folder / "session.db"
    with shell.SqliteLog(path) as log:
        log.acquire()
        log.append(vector_log("turn-long-session") if events is None else events)
    return path


def test_replay_creates_no_file_next_to_the_log(capsys: Capture, tmp_path: Path) -> None:
    """Read-only: replaying a cleanly closed SQLite log creates no -wal/-shm file and changes
    no byte (SQLite's mode=ro alone would create both)."""
    path = _closed_log(tmp_path)
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    code, out, _ = run(capsys, "replay", str(path))
    assert (code, "ok: all" in out) == (0, True)
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before


@pytest.mark.parametrize("live", [False, True], ids=["closed", "open-writer"])
def test_replay_works_in_a_directory_the_user_cannot_write(live: bool) -> None:
    """Read-only (SH9, O1): a user who cannot write the log's directory replays a cleanly
    closed log (immutable read) and one a writer holds open (SQLite's read-only protocol
    over the writer's -shm); nothing in the directory changes."""
    shell = pytest.importorskip("inbox_core.shell")
    top = Path(tempfile.mkdtemp(prefix="inbox-core-ro-"))
    folder = top / "logs"
    folder.mkdir()
    writer = None
    events = vector_log("turn-long-session")
    try:
        path = _closed_log(folder, events[:-1] if live else events)
        if live:  # a writer holds it open; its last event is only in the -wal file
            writer = shell.SqliteLog(path)
            writer.acquire()
            writer.append(events[-1:])
            assert (folder / "session.db-wal").stat().st_size > 0
        top.chmod(0o755)
        folder.chmod(0o555)
        for file in folder.iterdir():
            file.chmod(0o644)
        before = sorted(p.name for p in folder.iterdir())
        result = subprocess.run(
            as_unprivileged([sys.executable, "-m", "inbox_core", "replay", str(path)]),
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
            cwd="/",
            env={**os.environ, "PYTHONPATH": str(ROOT), "PYTHONDONTWRITEBYTECODE": "1"},
        )
        assert result.returncode == 0, result.stderr
        assert f"ok: all {len(events)} events replay" in result.stdout
        assert sorted(p.name for p in folder.iterdir()) == before
    finally:
        if writer is not None:
            writer.close()
        folder.chmod(0o755)
        shutil.rmtree(top)


# ----------------------------------------------------------------------- demo


def _demo(capsys: Capture, path: Path) -> str:
    pytest.importorskip("inbox_core.shell")
    code, out, err = run(capsys, "demo", "--log", str(path))
    assert code == 0, err
    return out


def test_demo_runs_the_scripted_session(capsys: Capture, tmp_path: Path) -> None:
    """R12, R17, R22, R27: followup, queue, inject, steer, keep_inbox cancel, crash and resume."""
    out = _demo(capsys, tmp_path / "demo.db")
    for line in [
        '> followup(m1 "What is the weather in Paris?")',
        '> queue(q1 "Also book a table for two")',
        "> inject(i1, a calendar notice)",
        '> (during turn 4, step 1) steer(s1 "Use Celsius")',
        "> (during turn 5, step 1) cancel(keep_inbox=True)",
        "  ~     agent/cancel-requested user",
        "turn/end               turn 5: aborted (user)",
        "> LoopAgent(EchoHost(), log=SqliteLog(path))",
        "turn/end               turn 7: interrupted",
        "turn/end               turn 8: completed",
        "  ~     agent/disposed",
        'host/output            "echo: What is the weather in Paris?"',  # R43
    ]:
        assert line in out, line
    assert "#0    agent/inbox/spliced" in out
    assert f"inspect it: inbox-core replay {tmp_path / 'demo.db'}" in out
    code, replayed, _ = run(capsys, "replay", str(tmp_path / "demo.db"))
    assert code == 0
    assert "last turn: 8" in replayed


def test_r43_a_host_output_is_shown_as_what_was_said() -> None:
    """A step's reply in a timeline line: its text, other parts by kind, shortened; a
    host/output record of another form is shown as its JSON, like any record."""
    from inbox_core.cli.render import describe_event
    from inbox_core.events import HostRecord
    from inbox_core.output import (
        Output,
        ReasoningPart,
        TextPart,
        ToolCallPart,
        ToolResultPart,
        output_record,
    )

    parts = [
        ReasoningPart("hm"),
        ToolCallPart("c", "weather", "{}"),
        ToolResultPart("c", "sunny"),
        TextPart("It is\nsunny."),
    ]
    shown = describe_event(output_record(Output(parts)))
    assert shown == '"<reasoning> <call weather> <result> It is sunny."'
    assert describe_event(HostRecord("host/output", {"text": "x"})) == '{"text": "x"}'


def test_demo_output_is_deterministic(capsys: Capture, tmp_path: Path) -> None:
    first = _demo(capsys, tmp_path / "a.db").replace(str(tmp_path / "a.db"), "PATH")
    second = _demo(capsys, tmp_path / "b.db").replace(str(tmp_path / "b.db"), "PATH")
    assert first == second


def test_demo_refuses_an_existing_log(capsys: Capture, tmp_path: Path) -> None:
    path = tmp_path / "demo.db"
    path.write_text("x", encoding="utf-8")
    code, _, err = run(capsys, "demo", "--log", str(path))
    assert code == 1
    assert "already exists" in err


@pytest.mark.parametrize("where", ["missing-dir", "directory", "text-file"])
def test_demo_reports_a_log_path_it_cannot_use(capsys: Capture, tmp_path: Path, where: str) -> None:
    """SH9: a log path SQLite cannot use is one line on stderr and exit 1, never a traceback."""
    path = {
        "missing-dir": tmp_path / "missing" / "x.db",
        "directory": tmp_path,
        "text-file": tmp_path / "notes.txt",
    }[where]
    if where == "text-file":
        path.write_text("not a log\n", encoding="utf-8")
    code, out, err = run(capsys, "demo", "--log", str(path))
    assert code == 1
    assert "Traceback" not in err
    assert err.startswith("inbox-core demo: ")
    assert "==" not in out  # no scene ran


def test_demo_defaults_to_a_temporary_log(capsys: Capture) -> None:
    pytest.importorskip("inbox_core.shell")
    code, out, _ = run(capsys, "demo")
    assert code == 0
    path = Path(out.splitlines()[0].rsplit(" ", 1)[1])
    try:
        assert path.name == "demo.db"
        assert path.is_file()
    finally:
        shutil.rmtree(path.parent)


# ----------------------------------------------------------------------- fuzz


def test_fuzz_runs_the_state_machine(capsys: Capture) -> None:
    pytest.importorskip("hypothesis")
    pytest.importorskip("inbox_core.testing")
    code, out, _ = run(capsys, "fuzz", "--examples", "3", "--seed", "1", "--steps", "8")
    assert code == 0
    assert out.splitlines()[0] == (
        "fuzz: 3 examples of up to 8 steps, seed 1 (invariants I1-I12 after every step)"
    )
    assert "  3/3 examples" in out
    assert "fuzz: passed: 3 examples of up to 8 steps in " in out


def test_fuzz_reports_a_failure(capsys: Capture, monkeypatch: pytest.MonkeyPatch) -> None:
    testing = pytest.importorskip("inbox_core.testing")

    def failing(**kwargs: Any) -> Any:
        kwargs["progress"](1, kwargs["examples"])
        return testing.FuzzSummary(1, kwargs["steps"], 0.25, "I3: idle with waking work")

    monkeypatch.setattr(testing, "run_fuzz", failing)
    code, out, _ = run(capsys, "fuzz", "--examples", "5", "--seed", "9")
    assert code == 1
    assert "fuzz: FAILED after 1 examples" in out
    assert "I3: idle with waking work" in out
    assert "reproduce: inbox-core fuzz --examples 5 --seed 9 --steps 50" in out


def test_fuzz_without_hypothesis(capsys: Capture, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without the development extras, fuzz explains what to install and exits 1."""
    import sys

    monkeypatch.setitem(sys.modules, "inbox_core.testing", None)  # import raises ImportError
    code, _, err = run(capsys, "fuzz", "--examples", "1", "--seed", "0")
    assert code == 1
    assert "the invariant suite cannot load" in err
    assert "pip install -e '.[dev]'" in err


def test_r32_replay_prints_fate_counts_and_json_fates(capsys: Capture, tmp_path: Path) -> None:
    """R32: `inbox-core replay` prints how many accepted ids have each fate; --json has them."""
    from inbox_core import fates

    events = vector_log("fates-every-kind")
    path = write_jsonl(tmp_path / "log.jsonl", events)
    code, out, _ = run(capsys, "replay", str(path))
    assert code == 0
    counts: dict[str, int] = {}
    for fate in fates(events).values():
        counts[fate.kind] = counts.get(fate.kind, 0) + 1
    line = next(line for line in out.splitlines() if line.startswith("fates of "))
    assert line.startswith(f"fates of {sum(counts.values())} accepted message ids: ")
    for kind, count in counts.items():
        assert f"{kind} {count}" in line
    code, out, _ = run(capsys, "replay", str(path), "--json")
    document = json.loads(out)
    assert {k: v for k, v in document["fates"].items() if v} == counts


def test_r30_replay_transcript_and_agent_id(capsys: Capture, tmp_path: Path) -> None:
    """R29, R30: --transcript prints turns, steps, messages and host records; --agent-id reads
    one agent of a multi-agent SQLite file without changing it."""
    from inbox_core import AgentState, Completed, Enter, HostRecord, followup, reduce
    from inbox_core import create_user_message as message
    from inbox_core.shell import SqliteLog

    events: list[DurableEvent] = []
    t = reduce(AgentState.initial(), followup(message("hi")))
    events += t.durable
    for answer in (
        lambda a: a.answer(Enter(a.batch)),
        lambda a: a.answer(Completed(), (HostRecord("host/reply", {"text": "hello"}),)),
        lambda a: a.answer(),
    ):
        t = reduce(t.state, answer(t.state.awaiting))
        events += t.durable
    db = tmp_path / "agents.db"
    with SqliteLog(db, agent_id="bob") as bob:
        bob.acquire()
        bob.append(events)
    before = db.read_bytes()
    code, out, _ = run(capsys, "replay", str(db), "--agent-id", "bob", "--transcript")
    assert code == 0
    assert "host/reply" in out
    assert '"hello"' in out
    assert "turn 1 (completed)" in out
    assert db.read_bytes() == before  # read-only
    code, _, err = run(capsys, "replay", str(db), "--agent-id", "nobody")
    assert code == 1
    assert "nobody" in err
