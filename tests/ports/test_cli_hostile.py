"""The command line on hostile logs and vectors (issue 17 items 1, 3 and 6): a message
naming the seq or the file, an exit code, a summary; never a traceback."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from inbox_core import HostRecord, limits
from inbox_core.cli import main
from inbox_core.shell import SqliteLog
from inbox_core.shell.stores.jsonl import to_json_lines
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


# ----------------------------- printing hostile strings (audit of issue 17: G3, G4, G5, G7)

UNSAFE_RAW = ("\ud800", "\u2028", "\u2029", "\x85", "\x1b", "\u202e")


def _raw_unsafe(text: str) -> list[str]:
    return [char for char in UNSAFE_RAW if char in text]


def _cli(*argv: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[bytes]:
    """``inbox-core ARGV`` as a child process (its real stdout encoding), bytes captured."""
    return subprocess.run(
        [sys.executable, "-m", "inbox_core", *argv],
        capture_output=True,
        cwd=ROOT,
        env={**os.environ, **(env or {})},
        timeout=600,
        check=False,
    )


def test_g3_vectors_with_escaped_lone_surrogates_print_a_summary(
    capsys: Capture, tmp_path: Path
) -> None:
    """Issue 17 (audit G3): a vector whose name or expected values hold an escaped lone
    surrogate stopped `inbox-core vectors` with UnicodeEncodeError (no summary); now it is
    printed escaped, the run goes on and ends with its summary."""
    source = ROOT / "specs" / "vectors" / "cancel-first-cause-wins.json"
    document = json.loads(source.read_text(encoding="utf-8"))
    named = dict(document, name="bad-\ud800-name\n\x1b[2Jforged")
    expected = json.loads(json.dumps(document))
    expected["name"] = "bad-expected"
    inserted = expected["commands"][0]["durable"][0]["data"]["inserted"][0]
    inserted["message"]["content"][0]["text"] = "\ud800\u2028"
    shutil.copy(source, tmp_path / "0-good.json")
    (tmp_path / "1-named.json").write_text(json.dumps(named), encoding="utf-8")
    (tmp_path / "2-expected.json").write_text(json.dumps(expected), encoding="utf-8")
    code, out, err = run(capsys, "vectors", str(tmp_path))
    assert code == 1
    assert "Traceback" not in out + err
    assert "3 vectors: 2 passed, 1 failed" in out
    assert "PASS  bad-\\ud800-name\\u000a\\u001b[2Jforged" in out  # one line, escaped
    assert "FAIL  bad-expected" in out
    assert "\\ud800\\u2028" in out
    assert not _raw_unsafe(out + err)


def test_g3_a_vector_file_named_in_no_encoding_is_printed_escaped(tmp_path: Path) -> None:
    """Issue 17 (audit G3): a file name that is not UTF-8 (Python holds it with lone
    surrogates) is printed escaped, in a child process with its real stdout."""
    (tmp_path / os.fsdecode(b"\xff-broken.json")).write_bytes(b"not json")
    done = _cli("vectors", str(tmp_path))
    assert done.returncode == 1
    assert b"Traceback" not in done.stderr
    assert b"\\udcff-broken" in done.stdout
    assert b"1 vectors: 0 passed, 1 failed" in done.stdout


@pytest.mark.parametrize(
    "mode", ["surrogate-error", "line-separators", "controls", "badutf8", "huge", "huge-name"]
)
def test_g4_conform_prints_a_port_s_hostile_answers_escaped_and_bounded(mode: str) -> None:
    """Issue 17 (audit G4), R38: a port answering "\\ud800" crashed the kit with a traceback;
    now every hostile answer (lone surrogates, line separators, terminal escapes, bytes that
    are not UTF-8, a 5 MB error name) is a divergence (exit 1) printed escaped, each line
    clipped; --json stays one JSON document."""
    port = f"{sys.executable} -m tests.ports.hostile_port {mode}"
    done = _cli("conform", "--port", port, "--examples", "0", "--timeout", "20")
    out, err = done.stdout.decode(), done.stderr.decode()
    assert done.returncode == 1, err
    assert "Traceback" not in out + err
    assert "vectors: 0 passed" in out
    assert not _raw_unsafe(out + err)
    shown = {"surrogate-error": "\\ud800", "line-separators": "X\\u2028Y", "controls": "\\u001b[2J"}
    assert shown.get(mode, "") in out  # escaped where it stood: no line broken in two
    assert len(done.stdout) < 2_000_000  # each of its ~160 failing vectors clipped
    summary = _cli("conform", "--port", port, "--examples", "0", "--json", "--timeout", "20")
    assert summary.returncode == 1
    assert json.loads(summary.stdout)["vectors"]["failed"]
    assert len(summary.stdout) < 2_000_000


def test_g5_the_reference_port_answers_a_line_that_is_not_utf8_and_goes_on() -> None:
    """Issue 17 (audit G5), R38: one request line that is not UTF-8 stopped the reference
    port (UnicodeDecodeError, no answer to anything after it); now it gets a ProtocolError
    answer and the requests after it are served, in order; an escaped lone surrogate in a
    request gets an answer that is valid UTF-8."""
    requests = [
        b'{"op":"hello","protocol":1}',
        b'{"op":"load","log":[{"type":"host/\xff","data":1}]}',
        b'{"op":"load","log":[{"type":"host/\\ud800","data":"\\udc00"}]}',
        b'{"op":"apply","command":{"type":"remove","messageId":"\\ud83d"}}',
        b'{"op":"\\ud800"}',
        b'{"op":"projection"}',
        b'{"op":"bye"}',
    ]
    done = subprocess.run(
        [sys.executable, "-m", "inbox_core.port"],
        input=b"\n".join(requests) + b"\n",
        capture_output=True,
        cwd=ROOT,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr == b""
    answers = [json.loads(line.decode("utf-8")) for line in done.stdout.split(b"\n")[:-1]]
    assert len(answers) == len(requests)
    assert [a["ok"] for a in answers] == [True, False, False, False, False, True, True]
    assert answers[1]["error"] == "ProtocolError"
    assert "UTF-8" in answers[1]["message"]
    assert (answers[2]["error"], answers[2]["seq"]) == ("ReplayError", 0)  # ports.md: load
    assert answers[5]["projection"]["status"] == "idle"


def _sqlite_log_with_hostile_text(path: Path) -> None:
    from inbox_core import UserMessage, queue
    from inbox_core.shell import EchoHost, LoopAgent

    async def main() -> None:
        with SqliteLog(path, agent_id="a") as log:
            agent = LoopAgent(EchoHost(), log=log)
            agent.queue(UserMessage("id\n\x1b[2J\u202e", "x\u2028y\x85z é 😀"))
            agent.queue(UserMessage("plain", "ok"))
            await agent.detach()

    import asyncio

    asyncio.run(main())
    del queue


def test_g7_watch_json_writes_json_lines_every_reader_splits_alike(tmp_path: Path) -> None:
    """Issue 17 item 3 (audit G7): `watch --json` wrote U+2028, U+2029 and U+0085 raw
    (json.dumps), so a line-splitting reader saw one event as broken lines; now it writes
    limits.dump_json: one JSON document per line for str.splitlines too, read back by
    from_json_lines."""
    from inbox_core.shell import from_json_lines

    path = tmp_path / "a.db"
    _sqlite_log_with_hostile_text(path)
    done = _cli("watch", "--no-follow", "--json", f"sqlite:{path}", "a")
    assert done.returncode == 0, done.stderr
    text = done.stdout.decode("utf-8")
    assert not _raw_unsafe(text)
    assert len(text.splitlines()) == len(text.split("\n")) - 1 == 2
    assert [json.loads(line)["seq"] for line in text.splitlines()] == [0, 1]
    events = from_json_lines(text)
    assert events == SqliteLog(path, agent_id="a").read()


@pytest.mark.parametrize(
    "argv",
    [
        ("replay", "--events", "--transcript", "--agent-id", "a", "{db}"),
        ("replay", "--json", "--agent-id", "a", "{db}"),
        ("watch", "--no-follow", "sqlite:{db}", "a"),
        ("watch", "--no-follow", "--json", "sqlite:{db}", "a"),
        ("vectors", "{vector}"),
    ],
)
@pytest.mark.parametrize("encoding", ["utf-8", "ascii"])
def test_g7_every_printing_command_is_safe_for_any_stdout_encoding(
    tmp_path: Path, argv: tuple[str, ...], encoding: str
) -> None:
    """Issue 17 (audit G3, G7): no command prints a hostile string raw (a terminal escape,
    a line separator, a bidi override) or fails on what its stdout cannot encode (an ASCII
    locale): each is escaped, JSON output stays JSON, a plain-text line stays one line."""
    path = tmp_path / "a.db"
    _sqlite_log_with_hostile_text(path)
    vector = tmp_path / "v.json"
    vector.write_text(json.dumps({"name": "é\x1b\u2028", "rules": [], "commands": []}))
    filled = [part.format(db=path, vector=vector) for part in argv]
    done = _cli(*filled, env={"PYTHONIOENCODING": encoding})
    out, err = done.stdout.decode(encoding), done.stderr.decode(encoding)
    assert "Traceback" not in out + err
    assert done.returncode in (0, 1), err
    assert not _raw_unsafe(out + err)
    if "--json" in argv and argv[0] == "replay":
        assert json.loads(out)["events"] == 2
    if argv[0] == "watch" and "--json" in argv:
        assert [json.loads(line)["seq"] for line in out.splitlines()] == [0, 1]
    if argv[0] == "replay" and "--events" in argv:
        assert sum(line.startswith("  #") for line in out.split("\n")) == 2  # one line each


def test_g7_post_of_text_no_store_can_hold_is_a_typed_error(tmp_path: Path) -> None:
    """R26, issue 17: an argument that is not UTF-8 (Python holds it with a lone surrogate)
    is refused as InvalidInput with exit 1, printed escaped, nothing posted."""
    path = tmp_path / "a.db"
    done = _cli("post", f"sqlite:{path}", "a", "--followup", os.fsdecode(b"bad \xff"))
    assert done.returncode == 1
    assert b"Traceback" not in done.stderr
    assert b"InvalidInput" in done.stderr
