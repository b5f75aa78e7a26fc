"""Smoke test of benchmark B12 (issue 37, item 3: R39, R35, D47; ``python -m
benchmarks.amplify``).

It runs at its tiny size (a real ``serve --http`` process, two tenants, two small hostile
bodies) and checks the shape of the result only: every phase has its probes' figures,
every hostile body its answer, an accepted one its apply and its stream, and the table
prints. No timing is asserted: the benchmark is where numbers live.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from benchmarks import amplify


def _positive(value: Any) -> bool:
    return isinstance(value, (int, float)) and math.isfinite(value) and value > 0


def test_B12_every_phase_reports_both_tenants_figures(tmp_path: Path) -> None:
    """R39, D47: a quiet phase before each hostile one, side by side in one run."""
    out = tmp_path / "b11.json"
    assert amplify.main(["--config", "tiny", "--out", str(out)]) == 0
    result = json.loads(out.read_text())
    assert result["schema"] == amplify.SCHEMA
    assert result["probe_failures"] == []
    phases = result["phases"]
    cfg = amplify.config("tiny")
    assert len(phases) == 2 * len(cfg.bodies)
    for quiet, hostile in zip(phases[::2], phases[1::2], strict=True):
        assert quiet["phase"] == f"quiet before {hostile['phase']}"
        for row in (quiet, hostile):
            for probe in ("healthz", "post"):
                assert row[probe]["n"] > 0
                assert all(_positive(row[probe][k]) for k in ("p50", "p99", "max"))
        assert len(hostile["rounds"]) == cfg.rounds
        for done in hostile["rounds"]:
            assert done["status"] == 202  # the tiny bodies are within the limit
            assert done["stream_bytes"] > hostile["bytes"]  # the body came back on its stream
            assert _positive(done["applied_s"])
        assert set(hostile["stalls"]) == {"answer", "apply", "stream"}
        assert math.isfinite(hostile["healthz"]["extra_p99"])
    assert all(f"| {body} |" in amplify.table(result) for body, _, _ in cfg.bodies)
