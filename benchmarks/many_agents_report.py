"""Tables of a ``python -m benchmarks.many_agents`` result (B7 of issue 20).

``python -m benchmarks.many_agents_report RESULT.json [--markdown]``.
"""

from __future__ import annotations

import argparse
import json
import statistics
from collections.abc import Sequence
from pathlib import Path
from typing import Any


def _table(head: Sequence[str], rows: list[Sequence[str]], markdown: bool) -> str:
    if markdown:
        lines = ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
        lines += ["| " + " | ".join(row) + " |" for row in rows]
        return "\n".join(lines)
    widths = [max(len(str(c)) for c in col) for col in zip(head, *rows, strict=True)]
    fmt = "  ".join(f"{{:<{w}}}" for w in widths)
    return "\n".join(fmt.format(*row) for row in [head, *rows])


def _range(figure: dict[str, float], digits: int = 0, unit: str = "") -> str:
    med, lo, hi = figure["median"], figure["min"], figure["max"]
    text = f"{med:,.{digits}f}{unit}"
    if hi - lo > 10**-digits:
        text += f" ({lo:,.{digits}f}-{hi:,.{digits}f})"
    return text


def _yes(ok: bool) -> str:
    return "pass" if ok else "MISS"


def b7_table(b7: dict[str, Any], markdown: bool) -> str:
    head = [
        "store",
        "path",
        "turns/s",
        "ratio to per-command floor",
        "loop p99 ms",
        "loop max ms",
        "GC max ms",
        "open s",
        "open p99 / max ms",
        "txns (parts/txn)",
    ]
    rows: list[Sequence[str]] = []
    for name, store in b7.items():
        last = store["rounds"][-1]
        for path, label in LABELS.items():
            p = store["paths"][path]
            run = last[path]
            ratio = store["ratio"].get(path)
            per_txn = run["commands"] / max(1, run["transactions"])
            rows.append(
                [
                    name,
                    label,
                    _range(p["turns_per_s"]),
                    "" if ratio is None else _range(ratio, 2),
                    _range(p["serve_p99_ms"], 1),
                    _range(p["serve_max_ms"], 0),
                    _range(p["gc_max_ms"], 0),
                    _range(p["open_s"], 2),
                    f"{p['open_p99_ms']['median']:.0f} / {p['open_max_ms']['median']:.0f}",
                    f"{run['transactions']:,} ({per_txn:.1f})" if run["transactions"] else "",
                ]
            )
        rows.append(
            [
                name,
                "floor: per command",
                _range(store["floor_per_command_turns_per_s"]),
                "1",
                "",
                "",
                "",
                "",
                "",
                f"{last['thread']['commands']:,} (1)",
            ]
        )
        rows.append(
            [
                name,
                "floor: batched as the writer",
                _range(store["floor_batched_turns_per_s"]),
                _range(store["ratio"]["thread_to_batched"], 2) + " (thread / batched)",
                "",
                "",
                "",
                "",
                "",
                f"{last['thread']['transactions']:,}",
            ]
        )
    targets = [
        f"{name}: " + ", ".join(f"{key} {_yes(ok)}" for key, ok in s["targets"].items())
        for name, s in b7.items()
    ]
    return _table(head, rows, markdown) + "\n\ntargets (ThreadWriter): " + "; ".join(targets)


LABELS = {
    "thread": "ThreadWriter",
    "thread_nogc": "ThreadWriter, GC off",
    "thread_frozen": "ThreadWriter, gc.freeze()",
    "inline": "inline (before)",
    "memory": "MemoryLog (no I/O)",
}


def _median(values: list[float]) -> float:
    return statistics.median(values) if values else 0.0


def paced_table(b7: dict[str, Any], markdown: bool) -> str:
    head = [
        "store",
        "path",
        "offered turns/s",
        "loop p99 ms",
        "loop max ms",
        "GC max ms",
        "turn p50 ms",
        "turn p99 ms",
    ]
    rows: list[Sequence[str]] = []
    for name, store in b7.items():
        for path, label in LABELS.items():
            paced = store["paths"][path].get("paced")
            if paced is None:
                continue
            offered = store["rounds"][0][path]["paced"]["offered_turns_per_s"]
            rows.append(
                [
                    name,
                    label,
                    f"{offered:,.0f}",
                    _range(paced["loop_p99_ms"], 1),
                    _range(paced["loop_max_ms"], 0),
                    _range(paced["gc_max_ms"], 0),
                    _range(paced["turn_p50_ms"], 0),
                    _range(paced["turn_p99_ms"], 0),
                ]
            )
    return _table(head, rows, markdown)


def time_table(b7: dict[str, Any], markdown: bool) -> str:
    """Where the burst's wall time went, medians over rounds (seconds)."""
    head = [
        "store",
        "path",
        "serve wall s",
        "loop thread CPU s",
        "process CPU s",
        "in write_group: wall / CPU s",
        "GC s",
    ]
    rows: list[Sequence[str]] = []
    for name, store in b7.items():
        for path, label in LABELS.items():
            runs = [r[path] for r in store["rounds"]]

            def med(key: str, runs: list[dict[str, Any]] = runs) -> float:
                return _median([run["serve_cpu"][key] for run in runs])

            rows.append(
                [
                    name,
                    label,
                    f"{_median([run['serve_s'] for run in runs]):.2f}",
                    f"{med('loop_thread_cpu_s'):.2f}",
                    f"{med('process_cpu_s'):.2f}",
                    f"{med('write_group_wall_s'):.2f} / {med('write_group_cpu_s'):.2f}",
                    f"{med('gc_s'):.2f}",
                ]
            )
    return _table(head, rows, markdown)


def failover_table(failover: dict[str, Any], markdown: bool) -> str:
    head = [
        "store",
        "agents x events",
        "failover s",
        "target s",
        "lease wait",
        "B startup",
        "placement",
        "opening",
        "rest",
        "opening events/s",
        "one open p50 ms",
        "B CPU / wall",
    ]
    rows: list[Sequence[str]] = []
    for name, f in failover.items():
        t = f["timeline"]
        rows.append(
            [
                name,
                f"{f['agents']} x {f['events_per_log']:,}",
                f"{f['failover_s']:.2f}",
                f"{f['target_s']:g} ({_yes(f['target_met'])})",
                f"{t['lease_wait_s']:.2f}",
                f"{t['b_startup_s']:.2f}",
                f"{t['placement_s']:.2f}",
                f"{t['opening_s']:.2f}",
                f"{t['rest_s']:.2f}",
                f"{f['opening_events_per_s']:,.0f}",
                f"{f['per_open_ms']['p50']:.0f}",
                "" if f["b_cpu_share"] is None else f"{f['b_cpu_share']:.2f}",
            ]
        )
    text = _table(head, rows, markdown)
    cost_head = [
        "store",
        "one log, events",
        "fetch ms",
        "decode ms (json.loads)",
        "replay ms",
        "acquire+release ms",
        "LoopAgent.open ms",
        "decode events/s",
        "replay events/s",
    ]
    cost_rows: list[Sequence[str]] = []
    for name, f in failover.items():
        c = f["open_costs"]
        cost_rows.append(
            [
                name,
                f"{c['events']:,}",
                f"{c['fetch_ms']:.1f}",
                f"{c['decode_ms']:.1f} ({c['json_loads_ms']:.1f})",
                f"{c['replay_ms']:.1f}",
                f"{c['acquire_release_ms']:.1f}",
                f"{c['open_ms']:.1f}",
                f"{c['decode_events_per_s']:,.0f}",
                f"{c['replay_events_per_s']:,.0f}",
            ]
        )
    return (
        text
        + "\n\nwhere one opening goes (measured alone):\n"
        + _table(cost_head, cost_rows, markdown)
    )


def memory_table(memory: dict[str, Any], markdown: bool) -> str:
    head = [
        "store",
        "agents",
        "RSS / idle served agent",
        "RSS kept / detached agent",
        "RSS growth / agent / cycle",
        "traced / served agent",
        "traced kept / detached agent",
        "live after detach",
        "idle CPU",
    ]
    rows: list[Sequence[str]] = []
    for name, m in memory.items():
        live = m["live_objects_after_detach"]
        rows.append(
            [
                name,
                f"{m['agents']:,}",
                f"{m['rss_per_served_agent_kb']:.1f} KB",
                f"{m['rss_per_detached_agent_kb']:.1f} KB",
                f"{m['rss_growth_per_agent_per_cycle_kb']:.2f} KB",
                f"{m['traced_per_served_agent_kb']:.1f} KB",
                f"{m['traced_per_detached_agent_b']:.0f} B",
                f"{live.get('LoopAgent', 0)} LoopAgent",
                f"{m['idle_cpu_share'] * 100:.1f}% of a core "
                f"({m['idle_cpu_share_no_agents'] * 100:.1f}% with none)",
            ]
        )
    return _table(head, rows, markdown)


def tables(result: dict[str, Any], markdown: bool = False) -> str:
    parts = []
    loads = f"load average {result.get('load1_start')} at start, {result.get('load1_end')} at end"
    parts.append(f"B7 (issue 20), {result.get('seconds', 0):.0f} s, {loads}")
    if result.get("B7"):
        b7 = result["B7"]
        parts.append("### B7 burst: 1 ms ticker and throughput\n" + b7_table(b7, markdown))
        parts.append("### B7 burst: where the time went\n" + time_table(b7, markdown))
        if any("paced" in s["paths"]["thread"] for s in b7.values()):
            parts.append("### B7 paced\n" + paced_table(b7, markdown))
    if result.get("failover"):
        parts.append("### failover\n" + failover_table(result["failover"], markdown))
    if result.get("memory"):
        parts.append("### memory\n" + memory_table(result["memory"], markdown))
    return "\n\n".join(parts)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.many_agents_report")
    parser.add_argument("result", type=Path)
    parser.add_argument("--markdown", action="store_true")
    args = parser.parse_args(argv)
    print(tables(json.loads(args.result.read_text()), markdown=args.markdown))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
