"""R42: the TypeScript port (``ports/typescript``) builds, passes its own tests, and the kit.

The package is built once per session (``npm ci && npm run build`` in ports/typescript, so
README's test command covers it; under ``CI=true`` a machine without node or npm fails
instead of skipping). Then: its own ``npm test``; ``inbox-core conform --keep-going`` with
every vector and a bounded random budget, whose runs also send malformed commands and
load corrupted logs (R38 v4: the kit compares the error names and a ``ReplayError``'s seq
itself); the protocol's pins the kit does not send (a ``hello`` whose protocol is not an
integer, ``NaN`` on a request line, log records whose seq is not an integer), each
answered as the reference port answers it; a message at the size limit; and a fault put
into the built port, which the kit finds. Under ``-m slow``: 10,000 random sequences on
fixed seeds.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from inbox_core import UserMessage, limits, queue
from inbox_core.codec import command_to_json, message_to_json
from inbox_core.port.client import PortProcess
from inbox_core.port.protocol import PARTS
from inbox_core.port.server import ReferencePort, serve

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "ports" / "typescript"
PORT = "node ports/typescript/dist/port.js"
"""The pinned command (brief §21), run from the repository root."""


def _tool(name: str) -> str:
    found = shutil.which(name)
    if found is None:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"{name} is required under CI=true (the TypeScript port, R42)")
        pytest.skip(f"no {name} on PATH")
    return found


def _run(*argv: str, timeout: float) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        argv, cwd=PACKAGE, capture_output=True, text=True, timeout=timeout, check=False
    )
    assert done.returncode == 0, f"{' '.join(argv)}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done


@pytest.fixture(scope="session")
def built() -> Path:
    """ports/typescript built as CI builds it from a clean clone: its lockfile, then tsc."""
    _tool("node")
    npm = _tool("npm")
    _run(npm, "ci", "--no-audit", "--no-fund", timeout=600)
    _run(npm, "run", "build", timeout=600)
    port = PACKAGE / "dist" / "port.js"
    assert port.is_file()
    return port


def conform(*args: str, port: str = PORT, timeout: float = 3600) -> tuple[int, dict[str, Any]]:
    """``inbox-core conform --json`` from the repository root: its status and summary."""
    done = subprocess.run(
        [sys.executable, "-m", "inbox_core", "conform", "--json", "--port", port, *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=timeout,
        check=False,
    )
    assert done.stdout, done.stderr[-3000:]
    return done.returncode, json.loads(done.stdout)


def test_r42_the_package_s_own_tests_pass_under_node_test(built: Path) -> None:
    """``npm test`` in ports/typescript: the package's tests under ``node --test``."""
    done = _run(_tool("npm"), "test", timeout=900)
    assert "# fail 0" in done.stdout
    assert "# pass " in done.stdout


def test_r42_issue37_the_package_ships_what_its_maps_name_a_license_and_no_build_state(
    built: Path,
) -> None:
    """Issue 37 (tried as a new user would): ``npm pack`` holds no ``.tsbuildinfo``, every
    source map's sources, the MIT ``LICENSE`` and no test; ``require()`` of the ES module
    loads it where node can, and says how to import it where node cannot (on c46a0f0: the
    build state and maps to absent sources shipped, no LICENSE, node's generic error)."""
    done = _run(_tool("npm"), "pack", "--dry-run", "--json", "--ignore-scripts", timeout=300)
    files = {entry["path"] for entry in json.loads(done.stdout)[0]["files"]}
    assert {"LICENSE", "README.md", "package.json", "dist/index.js", "require.cjs"} <= files
    assert not [f for f in files if f.endswith(".tsbuildinfo") or "/test/" in f], files
    maps = sorted(f for f in files if f.endswith(".map"))
    assert maps
    for name in maps:
        sources = json.loads((PACKAGE / name).read_text())["sources"]
        for source in sources:
            shipped = (PACKAGE / name).parent.joinpath(source).resolve().relative_to(PACKAGE)
            assert shipped.as_posix() in files, (name, source)
    assert "MIT License" in (PACKAGE / "LICENSE").read_text()
    node = _tool("node")
    loads = subprocess.run(
        [node, "-e", "process.stdout.write(typeof require('inbox-core').cancel)"],
        cwd=PACKAGE,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    older = subprocess.run(
        [node, "--no-experimental-require-module", "-e", "require('inbox-core')"],
        cwd=PACKAGE,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    if "bad option" in older.stderr:  # a node from before the flag: require() fails alone
        older = loads
    if loads.returncode == 0:  # node 20.19, 22.12 and later require() an ES module
        assert loads.stdout == "function"
    assert older.returncode != 0
    assert 'await import("inbox-core")' in older.stderr, older.stderr[-2000:]


def test_r42_r38_the_typescript_port_passes_every_vector_and_a_random_budget(built: Path) -> None:
    """Every vector and 600 random runs (about twenty seconds), malformed commands and
    corrupted logs among their steps: the port declares every part and agrees with the
    reference on each answer, error name, ``ReplayError`` seq, projection and fold.
    ``--keep-going``: a failing vector is reported and the runs still play."""
    status, summary = conform("--keep-going", "--examples", "600", "--seed", "42")
    assert status == 0, summary
    assert summary["port"]["parts"] == list(PARTS)
    assert summary["vectors"]["failed"] == []
    assert summary["vectors"]["passed"] == len(list((ROOT / "specs" / "vectors").glob("*.json")))
    assert summary["runs"]["played"] == 600


_RECORD = {"type": "host/x", "data": None}
_PINS: list[str] = [
    *(f'{{"op":"hello","protocol":{p}}}' for p in ("1", "2", "1.0", "1e0", "true", '"1"', "null")),
    *(f'{{"op":"projection","x":{c}}}' for c in ("NaN", "Infinity", "-Infinity")),
    '{"op":"projection","x":"NaN, Infinity"}',
    *(
        json.dumps({"op": op, "log": [{"seq": 0, **_RECORD}, {"seq": seq, **_RECORD}]})
        for op in ("load", "fold")
        for seq in (1, 2, 0, None, True, "1", 1.5, 2**64)
    ),
]
"""Request lines whose answers specs/ports.md pins but the kit never sends: ``hello``
takes only the integer 1; ``NaN`` and ``Infinity`` are not JSON; a record's seq is an
integer equal to its position."""


def test_r38_r42_the_protocol_pins_the_kit_does_not_send_are_answered_as_the_reference_does(
    built: Path,
) -> None:
    """Both programs get the same lines; each answer agrees on ``ok``, the error's name
    and a ``ReplayError``'s seq."""
    lines = "".join(f"{line}\n" for line in _PINS).encode()
    output = io.StringIO()
    serve(ReferencePort(), io.BytesIO(lines), output)
    expected = [json.loads(line) for line in output.getvalue().splitlines()]
    done = subprocess.run(
        ["node", str(built)], input=lines, capture_output=True, timeout=60, check=True
    )
    actual = [json.loads(line) for line in done.stdout.decode().splitlines()]
    assert len(actual) == len(expected) == len(_PINS), done.stderr[-3000:]
    keys = ("ok", "error", "seq")
    for line, want, got in zip(_PINS, expected, actual, strict=True):
        assert {k: got.get(k) for k in keys} == {k: want.get(k) for k in keys}, line
    assert {answer.get("error") for answer in expected} == {None, "ProtocolError", "ReplayError"}


def test_d34_a_message_at_the_size_limit_is_taken_and_one_unit_more_refused_by_both(
    built: Path,
) -> None:
    """D34, formats.md §1: the port measures a message as the reference does (code points,
    the reserves), so at ``maxValueSize`` both accept it and one unit more both refuse."""
    block = limits.MAX_JSON_SIZE - 26  # the largest text block: 26 units of keys and quotes
    base = UserMessage("m", [{"type": "text", "text": "é" * block}, {"type": "text", "text": ""}])
    room = limits.MAX_VALUE_SIZE - base.size  # what the second block's text may still hold
    reference = ReferencePort()
    with PortProcess(f"node {built}", timeout=120) as port:
        port.handshake()
        for extra, expected in ((0, None), (1, "InvalidInput")):
            text = "😀" * (room + extra)
            message = message_to_json(UserMessage("m", [{"type": "text", "text": "é" * block}]))
            message["content"].append({"type": "text", "text": text})
            command = command_to_json(queue(UserMessage("q", "q")))
            command["input"]["message"] = message
            want = reference.handle({"op": "apply", "command": command})
            got = port.call("apply", command=command)
            assert want.get("error") == got.get("error") == expected


def test_r38_the_kit_finds_a_fault_put_into_the_typescript_port(
    built: Path, tmp_path: Path
) -> None:
    """The port is held to the reference, not to itself: the built port with a send's
    contexts announced after its message (R6) fails the vectors."""
    faulty = tmp_path / "dist"
    shutil.copytree(built.parent, faulty)
    reducer = faulty / "reducer.js"
    text = reducer.read_text(encoding="utf-8")
    announce = (
        "for (const context of entry.contexts)\n"
        "        tx.notes.push(new InboxInserted(context));\n"
        "    tx.notes.push(new InboxInserted(entry.message));"
    )
    swapped = (
        "tx.notes.push(new InboxInserted(entry.message));\n"
        "    for (const context of entry.contexts)\n"
        "        tx.notes.push(new InboxInserted(context));"
    )
    assert announce in text
    reducer.write_text(text.replace(announce, swapped), encoding="utf-8")
    status, summary = conform("--examples", "0", port=f"node {faulty / 'port.js'}")
    assert status == 1, summary
    assert summary["vectors"]["failed"]


# ------------------------------------------------------------------------------- slow


@pytest.mark.slow
@pytest.mark.parametrize("run_seed", [2, 3, 4, 5])
def test_r42_the_typescript_port_passes_ten_thousand_random_sequences(
    built: Path, run_seed: int
) -> None:
    """4 fixed seeds x 2,500 runs of up to 20 steps: 10,000 sequences, malformed commands
    and corrupted logs among them."""
    status, summary = conform(
        "--no-vectors", "--examples", "2500", "--seed", str(run_seed), timeout=7200
    )
    assert status == 0, summary
    assert summary["runs"]["played"] == 2500
