"""The inspector's fold (inbox_core/http/ui/fold.js) against the reference on random logs.

Runs are drawn as the conformance kit draws them (``inbox_core.port.sequences.draw_run``:
every intent, edits, cancels both ways, dispose, maintenance, host reports with records,
crashes and Resume) and played on the reference; node folds each run's log and must give
the projection (R10), the fates (R32, first-seen order) and the transcript (R30) the
reference gives. Numbers are compared as JavaScript holds them (doubles): the page parses
JSON with ``JSON.parse``.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from inbox_core.codec import projection_to_json
from inbox_core.port.conformance import CRASH, RESUME, ReferenceRun
from inbox_core.port.sequences import draw_run
from inbox_core.port.server import reference_folds
from tests.http_ui.node import JS_TESTS, ROOT, node


@pytest.fixture(scope="module")
def fold_port() -> Iterator[subprocess.Popen[str]]:
    process = subprocess.Popen(
        [node(), str(JS_TESTS / "fold_port.mjs")],
        cwd=ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        encoding="utf-8",
    )
    yield process
    assert process.stdin is not None
    process.stdin.close()
    process.wait(timeout=10)


def as_javascript(value: Any) -> Any:
    """``value`` as JSON.parse would hold it: every number a double."""
    return json.loads(json.dumps(value), parse_int=float, parse_float=float)


def folded(port: subprocess.Popen[str], log: list[Any]) -> Any:
    assert port.stdin is not None
    assert port.stdout is not None
    port.stdin.write(json.dumps({"log": log}) + "\n")
    port.stdin.flush()
    answer = json.loads(port.stdout.readline(), parse_int=float, parse_float=float)
    assert "error" not in answer, answer.get("error")
    return answer


@settings(max_examples=50)
@given(st.data())
def test_r10_r30_r32_fold_matches_the_reference_on_random_logs(
    fold_port: subprocess.Popen[str], data: st.DataObject
) -> None:
    steps = draw_run(data, ("inbox", "core", "fates", "transcript"), 30)
    reference = ReferenceRun()
    for step in steps:
        if step == CRASH:
            reference = ReferenceRun(reference.log)
        reference.apply(RESUME if step == CRASH else step)
    log = [{"seq": seq, **event} for seq, event in enumerate(reference.log_json())]
    got = folded(fold_port, log)
    want = as_javascript(projection_to_json(reference.state, reference.log))
    folds = as_javascript(reference_folds(reference.log))
    projection = got["projection"]
    for key in ("nextTurn", "nextStep", "lastTurn", "openTurn", "openStep"):
        assert projection[key] == want[key], key
    if want["status"] != "maintenance":  # not in the log (R31): the owner alone knows it
        assert projection["status"] == want["status"]
        assert projection["abortCause"] == want["abortCause"]
    assert got["fates"] == [list(item) for item in folds["fates"].items()]
    assert got["transcript"] == folds["transcript"]
