"""Smoke test of the benchmark suite: every benchmark runs at a tiny size.

Only the shape of the result is checked. There are no timing assertions:
the machines are shared and noisy; ``nox -s bench`` is where numbers live.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from benchmarks import report, suite, ts_port
from benchmarks.__main__ import main
from benchmarks.floor import FloorAgent
from benchmarks.workloads import build_log, event_mix, message
from inbox_core import replay


def _positive(value: Any) -> bool:
    return isinstance(value, (int, float)) and math.isfinite(value) and value > 0


@pytest.fixture(scope="module")
def result() -> dict[str, Any]:
    return suite.run(suite.TINY)


def test_every_benchmark_reports(result: dict[str, Any]) -> None:
    assert result["schema"] == suite.SCHEMA
    assert set(result["results"]) == {"B1", "B2", "B3", "B4", "B5", "B6", "B9"}
    json.dumps(result, allow_nan=False)  # plain, finite JSON all the way down
    machine = result["machine"]
    assert machine["python"]
    assert machine["cpu"]


def test_b1_and_b6(result: dict[str, Any]) -> None:
    b1, b6 = result["results"]["B1"], result["results"]["B6"]
    depths = {str(d) for d in suite.TINY.b1_depths}
    assert set(b1["us_per_message"]) == depths == set(b6["us_per_message"])
    for depth in depths:
        assert _positive(b1["us_per_message"][depth])
        assert _positive(b1["x_floor"][depth])
        summary = b1["depths"][depth]["cpu"]
        assert summary["batches"] == suite.TINY.rounds
        assert summary["units_per_batch"] == suite.TINY.b1_batch
        assert summary["min_us"] <= summary["median_us"] <= summary["max_us"]
    assert _positive(b1["ratio_high_low"])
    assert _positive(b6["unit_us"])


def test_b9_the_typescript_port_beside_the_reference(result: dict[str, Any]) -> None:
    """B9 (issue 33, R42): the port's µs per command at each depth beside the reference's,
    or, without node or the built package, why not."""
    b9 = result["results"]["B9"]
    if "skipped" in b9:
        assert b9["skipped"] in ("no node on PATH", ts_port.unavailable())
        return
    depths = {str(d) for d in suite.TINY.b1_depths}
    for key in ("port_us_per_command", "reference_us_per_command", "port_x_reference"):
        assert set(b9[key]) == depths
        assert all(_positive(value) for value in b9[key].values())
    assert _positive(b9["port_ratio_high_low"])
    assert b9["port_us_at_max_depth"] == b9["port_us_per_command"][str(max(suite.TINY.b1_depths))]
    for key in ("decode_port_us_per_command", "decode_reference_us_per_command"):
        assert _positive(b9[key])  # the four commands decoded from JSON, per command


def test_b2(result: dict[str, Any]) -> None:
    b2 = result["results"]["B2"]
    for op in ("replace", "remove"):
        assert _positive(b2[op]["ratio"])
        assert all(_positive(v) for v in b2[op]["us"].values())
        assert set(b2[op]["x_floor_unit"]) == {str(d) for d in suite.TINY.b2_depths}


def test_b3(result: dict[str, Any]) -> None:
    b3 = result["results"]["B3"]
    assert b3["events"] >= suite.TINY.b3_events
    assert _positive(b3["events_per_s"])
    assert _positive(b3["last_first"])
    (run,) = b3["runs"]
    assert len(run["tenths_events_per_s"]) == 10
    assert sum(b3["event_mix"].values()) == b3["events"]


def test_b4(result: dict[str, Any]) -> None:
    b4 = result["results"]["B4"]
    assert b4["depth"] == suite.TINY.b4_depth
    assert _positive(b4["bytes_per_entry"])
    assert _positive(b4["floor_bytes_per_entry"])


def test_b5(result: dict[str, Any]) -> None:
    b5 = result["results"]["B5"]
    if "skipped" in b5:
        pytest.skip(b5["skipped"])
    for log in ("memory", "sqlite"):
        for pattern in ("burst", "sequential"):
            assert _positive(b5[log][pattern]["messages_per_s"])


def test_targets_and_table(result: dict[str, Any]) -> None:
    rows = result["targets"]
    assert [(r["bench"], r["metric"]) for r in rows] == [(t[0], t[1]) for t in suite.TARGETS]
    for row in rows:
        assert row["pass"] in (True, False, None)
    text = report.table(result)
    assert "targets:" in text
    assert "B1" in text
    assert report.table(result, markdown=True).startswith("| figure |")
    assert "before" in report.compare(result, result)


def test_table_notes_name_the_targets_the_run_was_judged_by(result: dict[str, Any]) -> None:
    """The notes come from the result's own ``targets`` (suite.TARGETS when it ran)."""
    notes = {figure: note for figure, _value, note in report.rows(result)}
    limit = next(t[3] for t in suite.TARGETS if t[1].startswith("cost per message"))
    assert notes["B1 worst x floor"] == f"target <= {limit:g}"
    older = {**result, "targets": [{**row, "target": "<= 15"} for row in result["targets"]]}
    assert {f: n for f, _v, n in report.rows(older)}["B1 worst x floor"] == "target <= 15"


def test_log_is_realistic_and_replays() -> None:
    log, commands, state = build_log(2_000, seed=1)
    assert replay(log).projection() == state.projection()
    mix = event_mix(log)
    assert {"agent/inbox/spliced", "turn/start", "step/start", "user/message"} <= set(mix)
    assert {"followup", "steer", "inject", "replace", "remove", "cancel"} <= set(commands)


def test_floor_follows_the_same_steps() -> None:
    agent = FloorAgent()
    first, second = message("a"), message("b")
    agent.send("next-turn", first, (), True)
    agent.send("next-turn", second, (), True)
    assert agent.awaiting is not None
    assert agent.awaiting[3] == (first,)
    with pytest.raises(ValueError, match="duplicate"):
        agent.send("next-step", second, (), False)
    assert agent.replace("b", message("c"))
    assert not agent.replace("zz", first)
    _, turn, step, batch = agent.awaiting
    agent.pre_step_decided(turn, step, batch)
    agent.step_finished(turn, step)
    agent.turn_stopping_done(turn)
    assert agent.awaiting is not None
    assert agent.awaiting[3][0].id == "c"


def test_cli_writes_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "r.json"
    assert main(["--config", "tiny", "--only", "B2,B4", "--out", str(out)]) == 0
    written = json.loads(out.read_text())
    assert set(written["results"]) == {"B2", "B4"}
    assert "written:" in capsys.readouterr().out
