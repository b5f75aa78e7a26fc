"""B8's figures: latency percentiles, rates, ratios to the peers, and the Markdown table.

``python -m benchmarks.mailbox_figures RESULT.json`` prints the table of a result file.
"""

from __future__ import annotations

import json
import math
import sys
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

PEERS = ("dbos", "floor")  # every figure is also a ratio to these, when they ran


def compared(name: str, names: Sequence[str]) -> list[str]:
    """The peers ``name`` is given as a ratio to, among ``names``: floor/dbos, not dbos/floor."""
    before = PEERS[: PEERS.index(name)] if name in PEERS else PEERS
    return [peer for peer in before if peer in names]


# ------------------------------------------------------------------ statistics


def percentile(sorted_values: Sequence[float], q: float) -> float:
    """Nearest rank (no interpolation: a p99 of 100 samples is the 99th)."""
    return float(sorted_values[max(1, math.ceil(len(sorted_values) * q)) - 1])


def latency_ms(pairs: Sequence[tuple[int, int]]) -> dict[str, float | int]:
    """(sent_ns, seen_ns) pairs as p50 / p99 / max / mean milliseconds."""
    values = sorted((seen - sent) / 1e6 for sent, seen in pairs)
    if not values:
        return {"n": 0}
    return {
        "n": len(values),
        "p50": round(percentile(values, 0.50), 3),
        "p99": round(percentile(values, 0.99), 3),
        "max": round(values[-1], 3),
        "mean": round(sum(values) / len(values), 3),
    }


def summarize(
    records: Sequence[tuple[str, int, int, int, int]],
    posted: Sequence[dict[str, int]],
    expected: int,
) -> dict[str, Any]:
    """One measurement: latency, rates, and what the consumer saw wrong (lost, twice, out of
    each poster's order to one agent)."""
    seen = Counter((poster, seq) for _agent, poster, seq, _sent, _applied in records)
    last: dict[tuple[int, str], int] = {}
    disorder = 0
    for agent, poster, seq, _sent, _applied in records:  # in apply order
        if last.get((poster, agent), -1) > seq:
            disorder += 1
        last[(poster, agent)] = seq
    out: dict[str, Any] = {
        "posts": expected,
        "missing": expected - len(seen),
        "duplicates": sum(n - 1 for n in seen.values()),
        "order_violations": disorder,
        "latency_ms": latency_ms([(r[3], r[4]) for r in records]),
    }
    if records:
        first = min(p["first_sent_ns"] for p in posted)
        out["applied_per_s"] = round(len(seen) / ((max(r[4] for r in records) - first) / 1e9), 1)
        span = max(p["last_posted_ns"] for p in posted) - first
        out["accepted_per_s"] = round(expected / (span / 1e9), 1)
    return out


# ------------------------------------------------------------------ ratios


def _ratio(a: float | None, b: float | None) -> float | None:
    return round(a / b, 3) if a is not None and b else None


def cell_ratios(systems: Mapping[str, Any]) -> dict[str, dict[str, float | None]]:
    """``"S/peer"``: latency p50 and p99 (lower is better) and applied/s (higher is better)."""
    out: dict[str, dict[str, float | None]] = {}
    for name, figures in systems.items():
        for peer in compared(name, list(systems)):
            theirs = systems[peer]
            mine_lat, their_lat = figures["latency"]["latency_ms"], theirs["latency"]["latency_ms"]
            out[f"{name}/{peer}"] = {
                "p50": _ratio(mine_lat.get("p50"), their_lat.get("p50")),
                "p99": _ratio(mine_lat.get("p99"), their_lat.get("p99")),
                "applied_per_s": _ratio(
                    figures["burst"].get("applied_per_s"), theirs["burst"].get("applied_per_s")
                ),
            }
    return out


def watch_ratios(watch: Mapping[str, Any]) -> dict[str, dict[str, float | None]]:
    out: dict[str, dict[str, float | None]] = {}
    for name, figures in watch.items():
        for peer in compared(name, list(watch)):
            mine, theirs = figures["latency_ms"], watch[peer]["latency_ms"]
            out[f"{name}/{peer}"] = {q: _ratio(mine.get(q), theirs.get(q)) for q in ("p50", "p99")}
    return out


# ------------------------------------------------------------------ table


def _lat(figures: Mapping[str, Any] | None) -> str:
    lat = (figures or {}).get("latency_ms", {})
    return f"{lat['p50']:.1f} / {lat['p99']:.1f}" if "p50" in lat else "-"


def _rate(figures: Mapping[str, Any] | None) -> str:
    """Applied/s, and the consumer process's CPU milliseconds per post in brackets."""
    value = (figures or {}).get("applied_per_s")
    if value is None:
        return "-"
    cpu = (figures or {}).get("consumer_cpu_ms_per_post")
    return f"{value:,.0f}" + (f" ({cpu:.2f})" if cpu is not None else "")


def _x(value: float | None) -> str:
    return f"{value:.2f}" if value is not None else "-"


def table(result: Mapping[str, Any]) -> str:
    """Markdown: per backend, one row per cell; latency from the latency phase, applied/s
    (and the consumer's CPU ms per post) from the burst phase; ratios "S/peer" as
    p50 · p99 · applied/s; the range of the 1-minute load average over the row."""
    lines: list[str] = []
    for backend, measured in result["backends"].items():
        names = list(measured["systems"])
        pairs = [f"{n}/{p}" for n in names for p in compared(n, names)]
        server = measured.get("server") or {}
        where = (
            f"PostgreSQL {server.get('server_version')}, fsync={server.get('fsync')}"
            if server
            else "SQLite"
        )
        lines += [f"### B8 on {backend} ({where})", ""]
        head = ["posters", "agents"]
        head += [f"{n} {what}" for n in names for what in ("p50 / p99 ms", "applied/s (cpu ms)")]
        head += [f"{pair} (p50 · p99 · /s)" for pair in pairs] + ["load"]
        lines += ["| " + " | ".join(head) + " |", "|" + "---:|" * len(head)]
        for cell in measured["cells"]:
            systems = cell["systems"]
            row = [str(cell["posters"]), str(cell["agents"])]
            for n in names:
                row += [_lat(systems[n].get("latency")), _rate(systems[n].get("burst"))]
            for pair in pairs:
                r = cell["ratios"].get(pair, {})
                row.append(" · ".join(_x(r.get(k)) for k in ("p50", "p99", "applied_per_s")))
            loads = [f["load1"] for s in systems.values() for f in s.values() if f.get("load1")]
            low, high = (f"{min(loads):.1f}", f"{max(loads):.1f}") if loads else ("-", "-")
            row.append(low if low == high else f"{low}-{high}")
            lines.append("| " + " | ".join(row) + " |")
        watch = measured.get("watch") or {}
        if watch:
            lines += ["", "| watch | p50 / p99 ms | seen | load |", "|---|---:|---:|---:|"]
            for name, figures in watch.items():
                lines.append(
                    f"| {name} | {_lat(figures)} | {figures['seen']}/{figures['appends']} "
                    f"| {figures['load1']} |"
                )
            for pair, r in measured.get("watch_ratios", {}).items():
                lines.append(f"| {pair} | {_x(r.get('p50'))} / {_x(r.get('p99'))} | | |")
        lines.append("")
    for skipped in result["skipped"]:
        lines.append(f"skipped: {skipped['system']} on {skipped['backend']}: {skipped['reason']}")
    return "\n".join(lines).rstrip() + "\n"


def main(argv: list[str] | None = None) -> int:
    for path in argv if argv is not None else sys.argv[1:]:
        print(table(json.loads(Path(path).read_text())))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
