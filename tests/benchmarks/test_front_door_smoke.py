"""Smoke test of benchmark B10 (issue 30: R39, the front door against the store it fronts).

The harness runs at its tiny size on SQLite through its command line; only the shape of
the result is checked, and that every event reached every stream. No timing assertions:
``python -m benchmarks.front_door`` is where numbers live.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from benchmarks import front_door


def _positive(value: Any) -> bool:
    return isinstance(value, (int, float)) and math.isfinite(value) and value > 0


def test_B10_posting_and_fan_out_report_every_figure(tmp_path: Path) -> None:
    """R39: HTTP against store.post for each client count; SSE against store.watch."""
    out = tmp_path / "b10.json"
    assert front_door.main(["--config", "tiny", "--backends", "sqlite", "--out", str(out)]) == 0
    result = json.loads(out.read_text())
    assert result["schema"] == front_door.SCHEMA
    measured = result["backends"]["sqlite"]
    assert sorted(measured["posting"]) == sorted(str(c) for c in front_door.TINY.clients)
    for paths in measured["posting"].values():
        for path in ("http", "direct"):
            assert paths[path]["n"] > 0
            assert all(_positive(paths[path][k]) for k in ("p50", "p99", "per_second"))
    sse, watch = measured["fan_out"]["sse"], measured["fan_out"]["watch"]
    assert sse["n"] == sse["expected"] == watch["n"] == watch["expected"] > 0  # nothing lost
    assert _positive(sse["p99"])
    assert _positive(watch["p99"])
    assert _positive(sse["reads_per_commit"])
    assert "| sqlite |" in front_door.table(result)
