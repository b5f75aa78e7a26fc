"""Smoke test of benchmark B8 (issue 19: R35 posts from any process, R36 watch).

The harness runs at its tiny size against the floor adapter on PostgreSQL and
SQLite, through its command line; only the shape of the result is checked (and
that the floor, the harness's own reference, lost, doubled or reordered no
post). No timing assertions: ``python -m benchmarks.mailbox`` is where numbers live.
"""

from __future__ import annotations

import json
import math
import sys
from typing import Any

import pytest

from benchmarks import mailbox
from benchmarks.mailbox_figures import cell_ratios, compared, percentile, table
from benchmarks.peers.base import Skipped, Target
from benchmarks.peers.dbos_mailbox import DbosMailbox, database_url
from benchmarks.peers.inbox_core_mailbox import InboxCoreMailbox

TINY = mailbox.TINY


def _positive(value: Any) -> bool:
    return isinstance(value, (int, float)) and math.isfinite(value) and value > 0


@pytest.fixture(scope="module")
def result(pg_server: str, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    out = tmp_path_factory.mktemp("b8") / "b8.json"
    argv = ["--config", "tiny", "--systems", "floor,inbox_core", "--pg", pg_server]
    assert mailbox.main([*argv, "--out", str(out)]) == 0
    written: dict[str, Any] = json.loads(out.read_text())
    return written


@pytest.mark.postgres
def test_B8_every_cell_of_the_matrix_reports_both_phases(result: dict[str, Any]) -> None:
    """R35: the (posters x agents) matrix on both backends, latency and burst per cell."""
    assert result["schema"] == mailbox.SCHEMA
    assert set(result["backends"]) == {"postgres", "sqlite"}
    json.dumps(result, allow_nan=False)  # plain, finite JSON
    for backend, measured in result["backends"].items():
        cells = measured["cells"]
        assert [(c["posters"], c["agents"]) for c in cells] == [
            (p, a) for a in TINY.agents for p in TINY.posters
        ], backend
        for cell in cells:
            assert set(cell["systems"]) == {"floor", "inbox_core"}
            for system, phase, total in (
                (system, phase, total)
                for system in cell["systems"]
                for phase, total in (("latency", TINY.latency_posts), ("burst", TINY.burst_posts))
            ):
                figures = cell["systems"][system][phase]
                posts = max(1, total // cell["posters"]) * cell["posters"]
                assert figures["posts"] == posts
                assert (figures["missing"], figures["duplicates"]) == (0, 0)
                assert figures["order_violations"] == 0
                lat = figures["latency_ms"]
                assert lat["n"] == posts
                assert 0 <= lat["p50"] <= lat["p99"] <= lat["max"]
                assert _positive(figures["applied_per_s"])
                assert _positive(figures["accepted_per_s"])
                assert figures["consumer_cpu_ms_per_post"] >= 0
                assert figures["poster_cpu_ms_per_post"] >= 0
                assert figures["load1"] is None or figures["load1"] >= 0
            assert set(cell["ratios"]) == {"inbox_core/floor"}  # DBOS did not run here


@pytest.mark.postgres
def test_B8_watch_sees_every_append(result: dict[str, Any]) -> None:
    """R36: a watcher in another process sees each append of the agent's log."""
    for measured in result["backends"].values():
        for system in ("floor", "inbox_core"):
            watch = measured["watch"][system]
            assert watch["seen"] == watch["appends"] == TINY.watch_appends
            assert 0 <= watch["latency_ms"]["p50"] <= watch["latency_ms"]["p99"]


@pytest.mark.postgres
def test_B8_the_table_shows_both_systems_on_both_backends(result: dict[str, Any]) -> None:
    assert result["skipped"] == []
    text = table(result)
    assert "### B8 on postgres" in text
    assert "### B8 on sqlite" in text
    assert "| floor | " in text  # the watch rows
    assert "| inbox_core | " in text
    server = result["backends"]["postgres"]["server"]
    assert server["fsync"] in ("on", "off")


def test_B8_dbos_peer_skips_in_one_line_without_the_package(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """DBOS is a benchmark-only dependency: absent, its peer is skipped, not an error."""
    monkeypatch.setitem(sys.modules, "dbos", None)  # import dbos raises ImportError
    with pytest.raises(Skipped, match=r"^dbos is not installed \(pip install dbos\)$"):
        DbosMailbox(Target("postgres", "host=h port=1 user=u dbname=d")).prepare()


def test_B8_inbox_core_describes_what_ran(tmp_path: Any) -> None:
    mailbox_ = InboxCoreMailbox(Target("sqlite", str(tmp_path / "x.db")))
    mailbox_.prepare()
    assert (tmp_path / "x.db").exists()
    assert "queue" in mailbox_.describe()["command"]


def test_B8_conninfo_becomes_the_dbos_url() -> None:
    url = database_url("host=127.0.0.1 port=5433 user=postgres dbname=inbox_core_b8_1_dbos")
    assert url == "postgresql://postgres@127.0.0.1:5433/inbox_core_b8_1_dbos"
    assert database_url("host=h user=u password=p@ss dbname=d") == "postgresql://u:p%40ss@h:5432/d"


def test_B8_ratios_and_percentiles() -> None:
    assert percentile([1.0, 2.0, 3.0, 4.0], 0.5) == 2.0  # nearest rank
    assert percentile([float(i) for i in range(1, 101)], 0.99) == 99.0
    assert compared("inbox_core", ["inbox_core", "dbos", "floor"]) == ["dbos", "floor"]
    assert compared("floor", ["dbos", "floor"]) == ["dbos"]
    assert compared("dbos", ["dbos", "floor"]) == []

    def figures(p50: float, p99: float, rate: float) -> dict[str, Any]:
        return {
            "latency": {"latency_ms": {"p50": p50, "p99": p99}},
            "burst": {"applied_per_s": rate},
        }

    ratios = cell_ratios({"floor": figures(1.0, 2.0, 500.0), "dbos": figures(8.0, 16.0, 50.0)})
    assert ratios == {"floor/dbos": {"p50": 0.125, "p99": 0.125, "applied_per_s": 10.0}}


def test_B8_plans_share_posts_round_robin() -> None:
    planned = mailbox.plans(2, ["a", "b", "c"], 6)
    assert planned == [["a", "c", "b"], ["b", "a", "c"]]
    assert sorted(x for plan in planned for x in plan) == ["a", "a", "b", "b", "c", "c"]
