"""R38: ``inbox-core conform`` holds a port to the reference, and its proof (issues 22, 33).

The reference port passes its own kit; a seeded fault (``--mutant``) is found by the
random runs, shrunk, and written as a vector the reference passes and the mutant
fails; ``--keep-going`` reports every failing vector and still plays the random runs;
a directory without vectors fails; a port that exits, hangs or writes garbage is exit
2 with a one-line reason and no traceback. The JavaScript example passes and a fault
put into it is caught.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from inbox_core.port.client import PortFailure, PortProcess
from inbox_core.port.protocol import PARTS, ProtocolError, check_request, decode
from inbox_core.port.server import ReferencePort
from tests.ports.hostile_port import BROKEN

ROOT = Path(__file__).resolve().parents[2]
REFERENCE = f"{sys.executable} -m inbox_core.port"
VECTORS = ROOT / "specs" / "vectors"


def mutant(name: str) -> str:
    return f"{REFERENCE} --mutant {name}"


def hostile(mode: str) -> str:
    return f"{sys.executable} -m tests.ports.hostile_port {mode}"


def conform(*args: str, timeout: float = 600) -> tuple[int, dict[str, Any], str]:
    """Run the CLI with ``--json``; its exit status, its summary and its stderr."""
    done = subprocess.run(
        [sys.executable, "-m", "inbox_core", "conform", "--json", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=timeout,
        check=False,
    )
    return done.returncode, json.loads(done.stdout), done.stderr


def test_r38_the_reference_passes_every_vector_and_a_random_budget() -> None:
    status, summary, _ = conform("--port", REFERENCE, "--examples", "60", "--seed", "1")
    assert status == 0, summary
    assert summary["port"]["parts"] == list(PARTS)
    assert summary["vectors"]["failed"] == []
    assert summary["vectors"]["passed"] == len(list(VECTORS.glob("*.json")))
    assert summary["runs"]["played"] == 60


@pytest.mark.slow
def test_r38_the_reference_passes_a_large_random_budget() -> None:
    status, summary, _ = conform("--port", REFERENCE, "--examples", "2000", "--seed", "2")
    assert status == 0, summary


@pytest.mark.parametrize(
    "name", ["keep-inbox-discards", "replay-error-seq-off-by-one", "first-error-wins"]
)
def test_r38_a_seeded_fault_is_found_shrunk_and_saved_as_a_vector(
    name: str, tmp_path: Path
) -> None:
    """Through the command line (``--mutant``, ``--no-vectors``): exit 1, a run of at most
    three steps, saved as a vector the reference passes and the mutant fails (a load the
    reference refuses becomes a ``replayError`` vector)."""
    saved = tmp_path / "saved"
    args = ("--no-vectors", "--save", str(saved), "--examples", "50")
    status, summary, _ = conform("--port", mutant(name), *args)
    assert status == 1, summary
    assert 1 <= len(summary["steps"]) <= 3, summary["steps"]
    assert "differs" in summary["divergence"]
    vector = Path(summary["vector"])
    assert vector.parent == saved
    assert conform("--port", REFERENCE, "--vectors", str(vector), "--examples", "0")[0] == 0
    again = conform("--port", mutant(name), "--vectors", str(vector), "--examples", "0")
    assert again[0] == 1


def test_r38_v4_keep_going_reports_every_failing_vector_and_still_plays_runs(
    tmp_path: Path,
) -> None:
    """Without --keep-going a failing vector skips the random runs (and says so); with it,
    every failing vector is listed and the random runs are played and can fail too."""
    port = mutant("shape-error-is-invalid-input")
    status, summary, _ = conform("--port", port, "--examples", "20")
    assert status == 1
    failed = summary["vectors"]["failed"]
    assert len(failed) >= 5  # every vector of a shape error, not the first one only
    assert "runs" not in summary
    save = ("--save", str(tmp_path))
    status, going, _ = conform("--port", port, "--examples", "20", "--keep-going", *save)
    assert status == 1
    assert going["vectors"]["failed"] == failed
    assert going["runs"]["played"] >= 1
    assert going["steps"]


def test_r38_v4_keep_going_restarts_a_port_that_breaks_on_a_vector(tmp_path: Path) -> None:
    """A port that crashes on a vector is restarted: the vectors after it still run, and the
    run ends with exit 2 (it broke the protocol) and every failure listed."""
    vectors = sorted(VECTORS.glob("inbox-*.json"))[:4]
    for vector in vectors:
        shutil.copy(vector, tmp_path / vector.name)
    args = ("--vectors", str(tmp_path), "--examples", "0", "--timeout", "5")
    status, summary, _ = conform("--port", hostile("crash"), *args)
    assert status == 2
    assert len(summary["vectors"]["failed"]) == 1  # stopped at the first
    status, summary, _ = conform("--port", hostile("crash"), *args, "--keep-going")
    assert status == 2
    failed = summary["vectors"]["failed"]
    assert len(failed) + summary["vectors"]["passed"] == len(vectors)
    assert len(failed) >= 2
    assert all("broke the protocol" in f["divergence"] for f in failed)
    assert "exited" in summary["protocolError"]


def test_r38_v4_a_directory_without_vectors_is_a_failure_not_a_pass(tmp_path: Path) -> None:
    status, summary, err = conform("--port", REFERENCE, "--vectors", str(tmp_path))
    assert status == 1
    assert summary["vectors"]["missing"] is True
    assert "holds no *.json vector" in err
    status, _, err = conform("--port", REFERENCE, "--vectors", str(tmp_path / "nowhere"))
    assert status == 1
    assert "does not exist" in err
    status, summary, _ = conform("--port", REFERENCE, "--no-vectors", "--examples", "3")
    assert status == 0
    assert "vectors" not in summary


def test_r38_v4_the_random_runs_need_no_hypothesis() -> None:
    """The kit works after ``pip install -e .``: the random phase imports no Hypothesis."""
    code = (
        "import sys; sys.modules['hypothesis'] = None\n"
        "from inbox_core.cli import main\n"
        f"sys.exit(main(['conform', '--port', {REFERENCE!r}, '--no-vectors', '--examples', '5']))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=False
    )
    assert done.returncode == 0, done.stderr
    assert "agrees" in done.stdout


@pytest.mark.parametrize("name", BROKEN)
def test_r38_a_broken_port_is_exit_2_with_a_one_line_reason(name: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "inbox_core", "conform", "--port", hostile(name), "--timeout", "2"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
        check=False,
    )
    assert done.returncode == 2
    first = done.stderr.splitlines()[0]
    expected = {"crash": "exited", "hang": "within 2 s", "garbage": "malformed"}[name]
    assert expected in first, done.stderr
    assert "Traceback" not in done.stderr.split("its standard error")[0]
    if name == "crash":
        assert "giving up" in done.stderr  # the end of its standard error


def test_r38_a_port_that_cannot_start_is_exit_2() -> None:
    status, summary, _ = conform("--port", "/nonexistent/port")
    assert status == 2
    assert "cannot start" in summary["protocolError"]


def test_r38_the_handshake_declares_parts_and_a_version() -> None:
    with PortProcess(REFERENCE) as port:
        assert port.handshake() == PARTS
        assert port.call("projection")["projection"]["status"] == "idle"
        refused = port.call("load", log=[{"type": "turn/start", "data": {"turn": 1}}])
        assert refused["ok"] is False
        assert refused["error"] == "ReplayError"
        assert refused["seq"] == 0


def test_r38_requests_outside_the_protocol_get_typed_errors_not_crashes() -> None:
    port = ReferencePort()
    for bad in ({}, {"op": "nope"}, {"op": "apply"}, {"op": "load", "log": 3}, [1]):
        answer = port.handle(bad)
        assert answer["ok"] is False
        assert answer["error"] == "ProtocolError"
    with pytest.raises(ProtocolError):
        decode("{not json")
    with pytest.raises(ProtocolError):
        check_request({"op": "hello"})
    rejected = port.handle({"op": "apply", "command": {"type": "warp"}})
    assert rejected["error"] == "DecodeError"


def test_r38_a_missing_port_command_is_a_port_failure() -> None:
    with pytest.raises(PortFailure, match="empty"):
        PortProcess("   ")


# ------------------------------------------------------------ the JavaScript example


JS_PORT = ROOT / "examples" / "port_js" / "port.js"


def _node() -> str:
    node = shutil.which("node")
    if node is None:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail("node is required under CI=true (the JavaScript port example)")
        pytest.skip("no node on PATH")
    return node


def test_r38_the_javascript_example_port_passes_its_vectors_and_random_runs() -> None:
    """examples/port_js/port.js declares the inbox part only: every vector that part covers
    and a random budget (malformed commands and corrupted logs included) agree with the
    reference (D40's rule, int64 and float literals included)."""
    status, summary, _ = conform("--port", f"{_node()} {JS_PORT}", "--examples", "200")
    assert status == 0, summary
    assert summary["port"]["parts"] == ["inbox"]
    assert summary["vectors"]["failed"] == []
    assert summary["vectors"]["passed"] >= 18
    assert summary["runs"]["played"] == 200


@pytest.mark.parametrize(
    ("fault", "replacement"),
    [
        ("[...e.contexts, e.message]", "[e.message, ...e.contexts]"),  # R6: contexts first
        ('decodeError = fail("DecodeError")', 'decodeError = fail("InvalidInput")'),  # D40
    ],
)
def test_r38_the_kit_finds_a_fault_put_into_the_javascript_port(
    fault: str, replacement: str, tmp_path: Path
) -> None:
    """The example is held to the reference, not to itself: the same port with contexts
    announced after their message (R6), or naming shape errors InvalidInput (D40), is
    caught by the random runs alone and shrunk."""
    broken = tmp_path / "port.js"
    text = JS_PORT.read_text(encoding="utf-8")
    faulty = text.replace(fault, replacement)
    assert faulty != text
    broken.write_text(faulty, encoding="utf-8")
    args = ("--no-vectors", "--save", str(tmp_path / "saved"), "--examples", "100")
    status, summary, _ = conform("--port", f"{_node()} {broken}", *args)
    assert status == 1, summary
    assert len(summary["steps"]) <= 3
