"""The command line on hostile logs and vectors (issue 17 items 1, 3 and 6): a message
naming the seq or the file, an exit code, a summary; never a traceback."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest

from inbox_core import HostRecord, limits
from inbox_core.cli import main
from inbox_core.shell import SqliteLog
from inbox_core.shell.logs import to_json_lines
from inbox_core.testing.hostile import _deep_document

ROOT = Path(__file__).resolve().parents[2]
Capture = pytest.CaptureFixture[str]
DEEP = 5_000


def run(capsys: Capture, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_replay_of_json_lines_with_a_5000_deep_line_names_its_seq(
    capsys: Capture, tmp_path: Path
) -> None:
    """Issue 17 item 6: `inbox-core replay` reports the deep line as invalid at its seq."""
    good = to_json_lines([HostRecord("host/a", 1)])
    path = tmp_path / "deep.jsonl"
    path.write_text(good + '{"seq":1,' + _deep_document(DEEP, arrays=False)[1:] + "\n")
    code, out, err = run(capsys, "replay", str(path))
    assert code == 1
    assert "seq 1" in out + err
    assert "Traceback" not in out + err
    assert f"deeper than {limits.MAX_DOCUMENT_DEPTH}" in out + err


def test_replay_of_a_sqlite_row_5000_deep_names_its_seq(capsys: Capture, tmp_path: Path) -> None:
    """Issue 17 items 1 and 6: a forged stored row is reported with its seq, exit 1."""
    path = tmp_path / "deep.db"
    with SqliteLog(path) as log:
        log.acquire()
        log.append([HostRecord("host/a", 1)])
    with sqlite3.connect(path) as conn:
        conn.execute(
            "INSERT INTO events (agent_id, seq, event) VALUES ('default', 1, ?)",
            (_deep_document(DEEP, arrays=True),),
        )
    code, out, err = run(capsys, "replay", str(path))
    assert code == 1
    assert "seq 1" in out + err
    assert "Traceback" not in out + err


def test_replay_keeps_every_event_after_a_line_separator(capsys: Capture, tmp_path: Path) -> None:
    """Issue 17 item 3: U+2028, U+2029 and U+0085 in a message lose nothing after them."""
    events = [HostRecord("host/t", "a\u2028b\u2029c\x85d"), HostRecord("host/u", 2)]
    path = tmp_path / "breaks.jsonl"
    path.write_text(to_json_lines(events), encoding="utf-8")
    code, out, _ = run(capsys, "replay", "--json", str(path))
    assert code == 0, out
    assert json.loads(out)["events"] == len(events)
    code, out, _ = run(capsys, "replay", "--events", str(path))
    assert code == 0, out
    assert "#1    host/u" in out


def test_vectors_go_on_past_a_deep_file_and_print_a_summary(
    capsys: Capture, tmp_path: Path
) -> None:
    """Issue 17 item 6: one 5,000-deep vector file fails alone; the others still run."""
    vectors = sorted((ROOT / "specs" / "vectors").glob("*.json"))[:3]
    for vector in vectors:
        shutil.copy(vector, tmp_path / vector.name)
    (tmp_path / "0-deep.json").write_text('{"name":' + "[" * DEEP + "]" * DEEP + "}")
    (tmp_path / "1-garbage.json").write_bytes(b"\xff\xfe not json")
    code, out, err = run(capsys, "vectors", str(tmp_path))
    assert code == 1
    assert "Traceback" not in out + err
    assert "FAIL  0-deep" in out
    assert "FAIL  1-garbage" in out
    assert out.count("PASS") == len(vectors)
    assert f"{len(vectors) + 2} vectors: {len(vectors)} passed, 2 failed" in out
