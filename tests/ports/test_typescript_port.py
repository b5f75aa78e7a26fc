"""R42: the TypeScript port (``ports/typescript``) builds, passes its own tests, and the kit.

The package is built once per session (``npm ci && npm run build`` in ports/typescript, so
README's test command covers it; under ``CI=true`` a machine without node or npm fails
instead of skipping). Then: its own ``npm test``; ``inbox-core conform`` with every vector
and a bounded random budget; malformed commands and corrupted logs, each answered as the
reference answers it (the typed error's name, a ``ReplayError``'s seq); and a fault put
into the built port, which the kit finds. Under ``-m slow``: 10,000 random sequences on
fixed seeds, and a larger budget of malformed commands.
"""

from __future__ import annotations

import copy
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st

from inbox_core import UserMessage, limits, queue
from inbox_core.codec import command_to_json, message_to_json
from inbox_core.port.client import PortProcess
from inbox_core.port.conformance import CRASH, ReferenceRun
from inbox_core.port.protocol import PARTS
from inbox_core.port.sequences import draw_run
from inbox_core.port.server import ReferencePort
from inbox_core.vectors import canonical

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
    return done.returncode, json.loads(done.stdout)


def test_r42_the_package_s_own_tests_pass_under_node_test(built: Path) -> None:
    """``npm test`` in ports/typescript: the package's tests under ``node --test``."""
    done = _run(_tool("npm"), "test", timeout=900)
    assert "# fail 0" in done.stdout
    assert "# pass " in done.stdout


def test_r42_r38_the_typescript_port_passes_every_vector_and_a_random_budget(built: Path) -> None:
    """Every vector and 100 random runs (about half a minute): the port declares every part
    and agrees with the reference on each step, projection and fold."""
    status, summary = conform("--examples", "100", "--seed", "42")
    assert status == 0, summary
    assert summary["port"]["parts"] == list(PARTS)
    assert summary["vectors"]["failed"] == []
    assert summary["vectors"]["passed"] == len(list((ROOT / "specs" / "vectors").glob("*.json")))
    assert summary["runs"]["played"] == 100


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


# ------------------------------------------------------ malformed commands, corrupted logs

_ODD: list[Any] = [
    None,
    True,
    0,
    -1,
    2**63,
    2**53 + 1,
    1.0,
    0.5,
    "",
    "x",
    "next-step",
    "host/",
    "\ud800",
    [],
    {},
    [1],
    {"a": 1},
]
"""Values a producer might write where another belongs: each JSON type, the edges of the
integer ranges, an empty id, a tag of the wrong kind, a lone surrogate."""


def _paths(document: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    yield prefix
    if isinstance(document, dict | list):
        items = document.items() if isinstance(document, dict) else enumerate(document)
        for key, value in items:
            yield from _paths(value, (*prefix, key))


@st.composite
def _malformed(draw: st.DrawFn, document: Any) -> Any:
    """``document`` with one to three places broken: a key dropped or added, an item
    repeated, a value of another type."""
    broken = copy.deepcopy(document)
    for _ in range(draw(st.integers(1, 3))):
        places = [p for p in _paths(broken) if p]
        if not places:  # every key dropped already
            break
        path = draw(st.sampled_from(places))
        parent = broken
        for key in path[:-1]:
            parent = parent[key]
        key = path[-1]
        how = draw(st.sampled_from(["drop", "add", "repeat", "replace", "replace"]))
        if how == "drop" and isinstance(parent, dict):
            del parent[key]
        elif how == "add" and isinstance(parent, dict):
            extra = draw(st.sampled_from(["extra", "kind", "type", "seq", "expect", "records"]))
            parent[extra] = draw(st.sampled_from(_ODD))
        elif how == "repeat" and isinstance(parent, list):
            parent.append(copy.deepcopy(parent[key]))
        else:
            parent[key] = copy.deepcopy(draw(st.sampled_from(_ODD)))
    return broken


@st.composite
def _corrupted(draw: st.DrawFn, log: list[Any]) -> list[Any]:
    """``log`` with an event dropped, duplicated, moved or changed."""
    broken = copy.deepcopy(log)
    index = draw(st.integers(0, len(broken) - 1))
    how = draw(st.sampled_from(["drop", "duplicate", "swap", "change", "change"]))
    if how == "drop":
        del broken[index]
    elif how == "duplicate":
        broken.insert(index, copy.deepcopy(broken[index]))
    elif how == "swap":
        other = draw(st.integers(0, len(broken) - 1))
        broken[index], broken[other] = broken[other], broken[index]
    else:
        broken[index] = draw(_malformed(broken[index]))
    return broken


def _answer(response: dict[str, Any], keys: tuple[str, ...]) -> str:
    return canonical({key: response.get(key) for key in keys})


def _agree_on_malformed_input(examples: int, run_seed: int) -> None:
    """Random runs in which every step is first sent malformed, and whose log is then loaded
    corrupted: the port answers each as the reference port does (ok, or the error's name;
    a ``ReplayError``'s seq), and a malformed step changes nothing the next step sees."""
    reference = ReferencePort()
    with PortProcess(f"node {PACKAGE / 'dist' / 'port.js'}") as port:
        port.handshake()

        @seed(run_seed)
        @settings(
            max_examples=examples,
            database=None,
            deadline=None,
            suppress_health_check=list(HealthCheck),
        )
        @given(st.data())
        def play(data: st.DataObject) -> None:
            run = ReferenceRun()
            reference.handle({"op": "load", "log": []})
            port.call("load", log=[])
            for drawn in draw_run(data, PARTS, 12):
                step = {"type": "resume"} if drawn == CRASH else drawn
                if drawn == CRASH:
                    run = ReferenceRun(run.log)
                    reference.handle({"op": "load", "log": run.log_json()})
                    port.call("load", log=run.log_json())
                broken = data.draw(_malformed(step), label="malformed step")
                keys = ("ok", "error", "durable", "notifications")
                expected = reference.handle({"op": "apply", "command": broken})
                actual = port.call("apply", command=broken)
                assert _answer(actual, keys) == _answer(expected, keys), json.dumps(broken)
                if expected["ok"]:
                    run.apply(broken)
                expected = reference.handle({"op": "apply", "command": step})
                actual = port.call("apply", command=step)
                assert _answer(actual, keys) == _answer(expected, keys), json.dumps(step)
                run.apply(step)
            log = run.log_json()
            if log:
                corrupted = data.draw(_corrupted(log), label="corrupted log")
                expected = reference.handle({"op": "load", "log": corrupted})
                actual = port.call("load", log=corrupted)
                keys = ("ok", "error", "seq")
                assert _answer(actual, keys) == _answer(expected, keys), json.dumps(corrupted)

        play()


def test_r38_r42_malformed_commands_and_corrupted_logs_get_the_reference_s_answers(
    built: Path,
) -> None:
    """The kinds of malformed input the kit's random phase sends (R38 v4), 40 runs."""
    _agree_on_malformed_input(40, 33)


# ------------------------------------------------------------------------------- slow


@pytest.fixture
def slow_only(request: pytest.FixtureRequest) -> None:
    """Slow tests run only when asked for (``-m slow`` or ``INBOX_CORE_SLOW=1``): the
    default run (README's test command) does not deselect the marker."""
    asked = "slow" in (request.config.getoption("markexpr", "") or "")
    if not asked and not os.environ.get("INBOX_CORE_SLOW"):
        pytest.skip("slow: run with -m slow or INBOX_CORE_SLOW=1")


@pytest.mark.slow
@pytest.mark.parametrize("run_seed", [1, 2, 3, 4])
def test_r42_the_typescript_port_passes_ten_thousand_random_sequences(
    slow_only: None, built: Path, run_seed: int
) -> None:
    """4 fixed seeds x 2,500 runs of up to 20 steps: 10,000 sequences."""
    status, summary = conform("--examples", "2500", "--seed", str(run_seed), timeout=7200)
    assert status == 0, summary
    assert summary["runs"]["played"] == 2500


@pytest.mark.slow
def test_r38_r42_a_large_budget_of_malformed_commands_and_corrupted_logs(
    slow_only: None, built: Path
) -> None:
    _agree_on_malformed_input(1000, 7)
