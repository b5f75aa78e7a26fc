"""R38: ``inbox-core conform`` holds a port to the reference, and its proof (issue 22).

The reference port passes its own kit; every seeded fault of ``mutant_port`` is
found by the random runs alone (no vectors) within the default budget and shrunk
to a handful of steps, written as a vector that the reference passes and the
mutant fails; a port that exits, hangs or writes garbage is exit 2 with a
one-line reason and no traceback.
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
from tests.ports.mutant_port import BROKEN, MUTANTS, VECTORS_ONLY

ROOT = Path(__file__).resolve().parents[2]
REFERENCE = f"{sys.executable} -m inbox_core.port"


def mutant(name: str) -> str:
    return f"{sys.executable} -m tests.ports.mutant_port {name}"


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
    assert summary["vectors"]["passed"] == len(list((ROOT / "specs" / "vectors").glob("*.json")))
    assert summary["runs"]["played"] == 60


@pytest.mark.slow
def test_r38_the_reference_passes_a_large_random_budget() -> None:
    status, summary, _ = conform("--port", REFERENCE, "--examples", "1000", "--seed", "2")
    assert status == 0, summary


@pytest.mark.parametrize("name", sorted(MUTANTS))
def test_r38_random_runs_find_each_seeded_fault_and_shrink_it(name: str, tmp_path: Path) -> None:
    """The default budget (200 runs), no vectors: found, shrunk, saved as a vector the
    reference passes and the mutant fails."""
    empty = tmp_path / "none"
    empty.mkdir()
    saved = tmp_path / "saved"
    args = ("--vectors", str(empty), "--save", str(saved))
    status, summary, _ = conform("--port", mutant(name), *args)
    assert status == 1, summary
    assert 1 <= len(summary["steps"]) <= 4, summary["steps"]
    assert "differs" in summary["divergence"]
    vector = Path(summary["vector"])
    assert vector.parent == saved
    assert conform("--port", REFERENCE, "--vectors", str(vector), "--examples", "0")[0] == 0
    again = conform("--port", mutant(name), "--vectors", str(vector), "--examples", "0")
    assert again[0] == 1


@pytest.mark.parametrize("name", sorted(VECTORS_ONLY))
def test_r38_the_vectors_find_a_fault_the_random_runs_may_miss(name: str) -> None:
    status, summary, _ = conform("--port", mutant(name), "--examples", "0")
    assert status == 1
    assert summary["vectors"]["failed"]


@pytest.mark.parametrize("name", BROKEN)
def test_r38_a_broken_port_is_exit_2_with_a_one_line_reason(name: str) -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "inbox_core",
            "conform",
            "--port",
            mutant(name),
            "--timeout",
            "2",
        ],
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
    and a random budget agree with the reference (int64 and float literals included)."""
    status, summary, _ = conform("--port", f"{_node()} {JS_PORT}", "--examples", "200")
    assert status == 0, summary
    assert summary["port"]["parts"] == ["inbox"]
    assert summary["vectors"]["failed"] == []
    assert summary["vectors"]["passed"] >= 15
    assert summary["runs"]["played"] == 200


def test_r38_the_kit_finds_a_fault_put_into_the_javascript_port(tmp_path: Path) -> None:
    """The example is held to the reference, not to itself: the same port with contexts
    announced after their message (R6) is caught and shrunk."""
    broken = tmp_path / "port.js"
    text = JS_PORT.read_text(encoding="utf-8")
    faulty = text.replace("[...e.contexts, e.message]", "[e.message, ...e.contexts]")
    assert faulty != text
    broken.write_text(faulty, encoding="utf-8")
    empty = tmp_path / "none"
    empty.mkdir()
    args = ("--vectors", str(empty), "--save", str(tmp_path / "saved"), "--examples", "300")
    status, summary, _ = conform("--port", f"{_node()} {broken}", *args)
    assert status == 1, summary
    assert len(summary["steps"]) <= 4
