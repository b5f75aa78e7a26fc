"""Smoke test of the decoding benchmark (issue 32, ``python -m benchmarks.decode``).

It runs at a tiny size with this tree's own core as the base (no git needed), and only
checks that every event kind and the whole log get both figures and a ratio; no timing
is asserted (the machines are shared: the benchmark is where numbers live).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from benchmarks import decode
from inbox_core.events import HostRecord

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("log", sorted(decode.LOGS))
def test_the_decode_benchmark_reports_a_ratio_per_event_kind(tmp_path: Path, log: str) -> None:
    out = tmp_path / "decode.json"
    argv = ["--quick", "--events", "200", "--rounds", "1", "--base", str(ROOT), "--log", log]
    assert decode.main([*argv, "--out", str(out)]) == 0
    rows = json.loads(out.read_text())["decode"]
    assert {"all", "user/message", "agent/inbox/spliced"} <= set(rows)
    assert rows["all"]["events"] == sum(row["events"] for k, row in rows.items() if k != "all")
    for row in rows.values():
        for key in ("base_events_per_s", "events_per_s", "json_loads_events_per_s", "ratio"):
            assert math.isfinite(row[key]), (key, row)
            assert row[key] > 0, (key, row)


def test_the_log_is_an_agents_log() -> None:
    """Every kind of durable event, host records among them, and messages of many sizes."""
    log = decode.agent_log(2_000)
    assert {decode.kind(e) for e in log} >= {
        "agent/inbox/spliced", "turn/start", "step/start", "user/message", "step/end",
        "turn/end", "host/*",
    }  # fmt: skip
    assert any(isinstance(e, HostRecord) for e in log)
    sizes = [m.message.size for m in log if m.type == "user/message"]
    assert min(sizes) * 20 < max(sizes)
