"""The inspector's fold (inbox_core/http/ui/fold.js) against the reference on random logs.

Runs are drawn as the conformance kit draws them (``inbox_core.port.generate.draw_run``,
one seeded run each: every intent, edits, cancels both ways, dispose, maintenance, host
reports with records, malformed commands, crashes and Resume, loads of corrupted logs) and
played on the reference; node folds each run's log and must give
the projection (R10), the fates (R32, first-seen order) and the transcript (R30) the
reference gives. Numbers are compared as JavaScript holds them (doubles): the page parses
JSON with ``JSON.parse``.
"""

from __future__ import annotations

import json
import random
import subprocess
from collections.abc import Iterator
from typing import Any

import pytest

from inbox_core.codec import projection_to_json
from inbox_core.port.conformance import CRASH, ReferenceRun
from inbox_core.port.generate import draw_run, resolve
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


PARTS = ("inbox", "core", "fates", "transcript")


def played(seed: int) -> ReferenceRun:
    """The reference after the kit's run of ``seed``, played as the kit plays it."""
    reference = ReferenceRun()
    for spec in draw_run(random.Random(seed), PARTS, 30):
        step = resolve(spec, reference, PARTS)
        if step == CRASH:
            reference = ReferenceRun(reference.log)
            reference.apply({"type": "resume"})
        elif isinstance(step, dict) and "load" in step:
            reference = reference.loaded(step["load"]) or reference
        else:
            reference.apply(step)
    return reference


@pytest.mark.parametrize("seed", range(50))
def test_r10_r30_r32_fold_matches_the_reference_on_random_logs(
    fold_port: subprocess.Popen[str], seed: int
) -> None:
    reference = played(seed)
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
