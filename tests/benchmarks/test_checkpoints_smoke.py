"""Smoke test of ``benchmarks/checkpoints.py`` (issue 32): every part runs at a tiny size on
SQLite and reports its figures; no timing is asserted."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from benchmarks import checkpoints
from inbox_core.shell import SqliteStore


def _positive(value: Any) -> bool:
    return isinstance(value, (int, float)) and math.isfinite(value) and value > 0


def test_opening_keeping_gc_and_decode_report_their_figures(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "open.db")
    opening = checkpoints.opening(store, "sqlite", [300, 600], rounds=1, whole_rounds=1)
    store.close()
    for way in ("end", "behind", "none"):
        for size in (300, 600):
            assert _positive(opening["ways"][way][size]["open_ms"]), (way, size)
            assert size - 7 < opening["ways"][way][size]["events"] <= size  # ends a turn
    keeping = checkpoints.keeping(str(tmp_path), rounds=1, n=3)
    assert _positive(keeping["sqlite/default"]["x_none"])
    gc_figures = checkpoints.gc_cost(str(tmp_path), repeat=1, sizes=(100, 300))
    assert _positive(gc_figures["300/on"]["us_per_event"])
    decode = checkpoints.decode_costs(str(tmp_path), rounds=1, count=200)
    assert all(_positive(v) for v in decode["us_per_event"].values())
    assert sum(t["share_of_events"] for t in decode["event_from_json_by_type"].values()) > 0.99
