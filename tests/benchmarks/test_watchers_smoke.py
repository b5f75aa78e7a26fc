"""Smoke test of benchmark B10 (issue 28, item 11: many watchers of one agent, R36 v4).

The harness runs at a tiny size on SQLite through its command line; only the shape of the
result is checked, and that every phase counted its reads and commits. No timing is
asserted: ``python -m benchmarks.watchers`` is where the numbers live.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from benchmarks import watchers


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def test_b10_runs_and_reports_every_figure(tmp_path: Path) -> None:
    out = tmp_path / "b10.json"
    argv = ["--watchers", "1,3", "--messages", "2", "--stores", "sqlite", "--out", str(out)]
    assert watchers.main(argv) == 0
    result: dict[str, Any] = json.loads(out.read_text())
    json.dumps(result, allow_nan=False)
    assert result["schema"] == watchers.SCHEMA
    rows = result["stores"]["sqlite"]
    assert [row["watchers"] for row in rows] == [0, 1, 3]
    for row in rows:
        for key in ("stall_max_ms", "stall_p99_ms", "owner_ms_per_message", "owner_slowdown"):
            assert _number(row[key]), key
        assert row["commits"] > 0
    assert rows[0]["reads"] == 0  # nobody watches: nothing read
    assert all(row["reads"] > 0 for row in rows[1:])
    assert watchers.table(result, markdown=True).count("\n") == 4
