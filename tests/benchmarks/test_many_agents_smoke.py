"""Smoke test of benchmark B7 for issue 20 (``python -m benchmarks.many_agents``).

The whole harness runs through its command line at tiny sizes (a few agents, short
logs, a short idle time): the ThreadWriter and inline paths with both floors, the
failover with two ``inbox-core serve`` processes, and the memory of a real ``Worker``.
Only that it runs and that every figure is there is checked; no timing is asserted
(the machines are shared: ``python -m benchmarks.many_agents`` is where numbers live).
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from benchmarks import many_agents
from benchmarks.many_agents_report import tables

TINY = [
    *("--agents", "3", "--followups", "2", "--rounds", "2", "--paced-seconds", "0.2"),
    *("--failover-agents", "3", "--failover-events", "40", "--lease", "1"),
    *("--memory-agents", "4", "--memory-idle", "0.5"),
]


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _positive(value: Any) -> bool:
    return _number(value) and value > 0


def _run(tmp: Path, *argv: str) -> dict[str, Any]:
    out = tmp / "b7.json"
    assert many_agents.main([*TINY, *argv, "--out", str(out)]) == 0
    result: dict[str, Any] = json.loads(out.read_text())
    json.dumps(result, allow_nan=False)  # plain, finite JSON
    assert result["schema"] == many_agents.SCHEMA
    assert tables(result, markdown=True)
    return result


def _check_b7(store: dict[str, Any], rounds: int = 2) -> None:
    assert len(store["rounds"]) == rounds
    for r in store["rounds"]:
        assert r["same_rows"]  # both store paths wrote the same rows in the burst
        for path in many_agents.PATHS:
            run = r[path]
            assert run["turns"] == 3 * 2
            assert (run["rows"] > 0) == (path != "memory")
            assert _positive(run["turns_per_s"])
            assert _positive(run["serve_s"])
            for loop in (run["loop_open"], run["loop_serve"], run["paced"]["loop"]):
                assert 0 <= loop["p50_ms"] <= loop["p99_ms"] <= loop["max_ms"]
                assert _number(loop["gc_max_ms"])
            assert run["paced"]["turns"] == 3
            assert 0 < run["paced"]["turn_p50_ms"] <= run["paced"]["turn_max_ms"]
            assert all(_number(v) for v in run["serve_cpu"].values())
        writer = r["thread"]["writer"]
        assert writer["parts"] >= r["thread"]["commands"] > 0
        assert writer["failed"] == 0
        assert _positive(writer["latency_max_ms"])
        for key in ("floor_per_command_s", "floor_batched_s"):
            assert _positive(r[key])
        assert all(_positive(v) for v in r["ratio"].values())
    for key in (
        "thread",
        "inline",
        "thread_to_batched",
        "thread_over_inline",
        "thread_over_memory",
    ):
        assert store["ratio"][key]["min"] <= store["ratio"][key]["median"]
    for path in many_agents.PATHS:
        assert set(store["paths"][path]) >= {"turns_per_s", "serve_p99_ms", "serve_max_ms", "paced"}
    assert set(store["targets"]) == {
        "serve_p99_ms<=20",
        "serve_max_ms<=100",
        "ratio>=0.8",
        "paced_p99_ms<=20",
        "paced_max_ms<=100",
    }


def _check_failover(f: dict[str, Any], agents: int = 3) -> None:
    assert f["agents"] == agents
    assert f["events_per_log"] >= 40
    assert f["verified_agents"] >= 1
    assert _positive(f["failover_s"])
    assert _positive(f["target_s"])
    assert isinstance(f["target_met"], bool)
    assert set(f["timeline"]) == {
        "lease_wait_s",
        "b_startup_s",
        "placement_s",
        "opening_s",
        "rest_s",
    }
    assert all(_number(v) for v in f["timeline"].values())
    since = f["since_kill"]
    assert since["first_open_s"] <= since["last_open_s"] <= since["all_durable_s"]
    assert f["b_exit"] == 0  # SIGTERM: every agent detached, exit 0
    assert _positive(f["opening_events_per_s"])
    costs = f["open_costs"]
    for key in ("fetch_ms", "decode_ms", "replay_ms", "open_ms"):
        assert _positive(costs[key])
    assert costs["decode_profile"]
    assert costs["decode_profile"][0]["function"]


def _check_memory(m: dict[str, Any]) -> None:
    assert m["agents"] == 4
    assert [c["cycle"] for c in m["cycles"]] == [1, 2, 3]
    for key in (
        "rss_per_served_agent_kb",
        "rss_per_detached_agent_kb",
        "rss_growth_per_agent_per_cycle_kb",
        "traced_per_served_agent_kb",
        "traced_per_detached_agent_b",
        "idle_cpu_share",
        "idle_cpu_share_no_agents",
    ):
        assert _number(m[key]), key
    assert m["traced_per_served_agent_kb"] > 0
    assert set(m["live_objects_after_detach"]) >= {"LoopAgent", "EchoHost", "PostServer"}
    assert isinstance(m["held_by"], list)


def test_B7_harness_on_sqlite(tmp_path: Path) -> None:
    result = _run(tmp_path, "--stores", "sqlite_full,sqlite_normal")
    assert set(result["B7"]) == {"sqlite_full", "sqlite_normal"}
    for store in result["B7"].values():
        _check_b7(store)
    assert set(result["failover"]) == {"sqlite"}
    _check_failover(result["failover"]["sqlite"])
    assert result["failover"]["sqlite"]["timeline"]["lease_wait_s"] == 0.0  # no lease
    assert set(result["memory"]) == {"sqlite"}
    _check_memory(result["memory"]["sqlite"])


@pytest.mark.postgres
def test_B7_harness_on_postgres(tmp_path: Path, pg_server: str) -> None:
    result = _run(tmp_path, "--stores", "postgres", "--pg", pg_server)
    _check_b7(result["B7"]["postgres"])
    failover = result["failover"]["postgres"]
    _check_failover(failover)
    assert failover["lease_seconds"] == 1.0
    assert failover["timeline"]["lease_wait_s"] <= 1.0
    _check_memory(result["memory"]["postgres"])
