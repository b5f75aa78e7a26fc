"""Tables from result files: ``python -m benchmarks.report RESULT.json [AFTER.json]``.

With one file it prints the results table; with two it prints a before/after
comparison (used for the core changes recorded in ``benchmarks/proposals/``).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any


def _fmt(value: Any, digits: int = 2) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "NO"
    if isinstance(value, float):
        if abs(value) >= 1000:
            return f"{value:,.0f}"
        return f"{value:.{digits}f}"
    return str(value)


def rows(result: dict[str, Any]) -> list[tuple[str, str, str]]:
    """(figure, value, note) for every headline number of a result."""
    r = result["results"]
    out: list[tuple[str, str, str]] = []
    judged = {(row["bench"], row["metric"]): row["target"] for row in result.get("targets", ())}

    def goal(bench: str, metric: str) -> str:
        """The target this run was judged against (``suite.TARGETS`` when it ran)."""
        return f"target {judged.get((bench, metric), '-')}"

    b6 = r.get("B6")
    if "B1" in r:
        b1 = r["B1"]
        for depth, us in b1["us_per_message"].items():
            spread = b1["depths"][depth]["cpu"]["spread"]
            out.append(
                (
                    f"B1 µs/message, D={int(depth):,}",
                    _fmt(us),
                    f"{_fmt(b1['x_floor'][depth], 1)}x floor; spread {spread:.0%}",
                )
            )
        ratio = _fmt(b1["ratio_high_low"])
        out.append(("B1 ratio D=max / D=min", ratio, goal("B1", "ratio D=10,000 / D=10")))
        out.append(
            (
                "B1 worst x floor",
                _fmt(b1["x_floor_max"], 1),
                goal("B1", "cost per message vs B6 floor (worst depth)"),
            )
        )
    if b6:
        for depth, us in b6["us_per_message"].items():
            out.append((f"B6 floor µs/message, D={int(depth):,}", _fmt(us), "yardstick"))
    if "B2" in r:
        b2 = r["B2"]
        low, high = b2["depths"]
        for op in ("replace", "remove"):
            x = b2[op].get("x_floor_unit", {})
            for depth in (low, high):
                out.append(
                    (
                        f"B2 {op} µs, D={depth:,}",
                        _fmt(b2[op]["us"][str(depth)]),
                        f"{_fmt(x.get(str(depth)), 1)}x floor unit",
                    )
                )
            target = goal("B2", f"{op} ratio depth 10,000 / 10")
            out.append((f"B2 {op} ratio", _fmt(b2[op]["ratio"]), target))
        out.append(
            (
                "B2 floor replace ratio (deque scan)",
                _fmt(b2["floor_replace_ratio"], 1),
                "for contrast",
            )
        )
    if "B3" in r:
        b3 = r["B3"]
        out.append(
            (
                f"B3 replay events/s ({b3['events']:,} events)",
                _fmt(b3["events_per_s"]),
                f"{goal('B3', 'events per second')}; "
                f"{_fmt(b3.get('x_floor_unit'), 2)}x floor unit per event",
            )
        )
        out.append(
            (
                "B3 last 10% / first 10%",
                _fmt(b3["last_first"]),
                f"{goal('B3', 'last 10% / first 10% cost')} (median of 1% buckets; plain sums "
                f"{_fmt(b3.get('last_first_sum'))})",
            )
        )
    if "B4" in r:
        b4 = r["B4"]
        out.append(
            (
                f"B4 bytes/entry, D={b4['depth']:,}",
                _fmt(b4["bytes_per_entry"], 1),
                f"{goal('B4', 'bytes per pending entry beyond the message')}; "
                f"floor {b4['floor_bytes_per_entry']:.1f} B ({b4['x_floor']:.1f}x)",
            )
        )
    if "B5" in r:
        b5 = r["B5"]
        if "skipped" in b5:
            out.append(("B5 shell", "skipped", b5["skipped"]))
        else:
            for log in ("memory", "sqlite", "sqlite_normal"):
                for pattern in ("burst", "sequential"):
                    fig = b5.get(log, {}).get(pattern)
                    if fig is None:
                        continue
                    if "skipped" in fig:
                        out.append((f"B5 {log} {pattern} msg/s", "skipped", fig["skipped"]))
                        continue
                    note = f"{_fmt(fig.get('x_floor_unit'), 1)}x floor unit"
                    if log == "memory" and pattern == "burst":
                        note += "; " + goal("B5", "messages per second, MemoryLog (burst)")
                    out.append((f"B5 {log} {pattern} msg/s", _fmt(fig["messages_per_s"]), note))
    if "B9" in r:
        b9 = r["B9"]
        if "skipped" in b9:
            out.append(("B9 TypeScript port", "skipped", b9["skipped"]))
        else:
            deepest = max(b9["port_us_per_command"], key=int)
            for depth, us in b9["port_us_per_command"].items():
                note = (
                    f"reference {_fmt(b9['reference_us_per_command'][depth])} µs/command; "
                    f"port/reference {_fmt(b9['port_x_reference'][depth], 3)}"
                )
                if depth == deepest:
                    note += "; " + goal("B9", "TypeScript port µs per command at the deepest D")
                out.append((f"B9 TypeScript µs/command, D={int(depth):,}", _fmt(us), note))
            ratio = _fmt(b9["port_ratio_high_low"])
            flat = goal("B9", "TypeScript port ratio D=10,000 / D=10")
            out.append(("B9 TypeScript ratio D=max / D=min", ratio, flat))
    return out


def table(result: dict[str, Any], *, markdown: bool = False) -> str:
    lines = []
    body = rows(result)
    if markdown:
        lines += ["| figure | value | note |", "|---|---:|---|"]
        lines += [f"| {a} | {b} | {c} |" for a, b, c in body]
    else:
        width = max((len(a) for a, _, _ in body), default=10)
        lines += [f"{a:<{width}}  {b:>12}  {c}" for a, b, c in body]
    lines.append("")
    lines.append("targets:")
    for row in result["targets"]:
        status = {True: "pass", False: "MISS", None: "n/a"}[row["pass"]]
        lines.append(
            f"  [{status}] {row['bench']} {row['metric']}: {_fmt(row['value'])} "
            f"(target {row['target']})"
        )
    m = result["machine"]
    lines.append("")
    lines.append(
        f"machine: {m['cpu']}, {m['cores']} cores, Python {m['python']}; "
        f"config {result['config']['name']}; {result['duration_s']:.0f} s"
    )
    return "\n".join(lines)


def compare(before: dict[str, Any], after: dict[str, Any]) -> str:
    """Side-by-side headline figures of two results (same config)."""
    a = {k: v for k, v, _ in rows(before)}
    b = {k: v for k, v, _ in rows(after)}
    width = max((len(k) for k in a), default=10)
    lines = [f"{'figure':<{width}}  {'before':>12}  {'after':>12}"]
    lines += [f"{k:<{width}}  {v:>12}  {b.get(k, '-'):>12}" for k, v in a.items()]
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    if len(argv) == 1:
        print(table(json.loads(Path(argv[0]).read_text())))
    elif len(argv) == 2:
        before, after = (json.loads(Path(p).read_text()) for p in argv)
        print(compare(before, after))
    else:
        print(__doc__)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
