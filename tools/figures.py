"""Write README's "Figures" from the committed benchmark run, so the two cannot drift.

The one source is ``benchmarks/baseline.json`` (the run benchmarks/README.md
describes; ``nox -s bench`` then ``cp benchmarks/results/latest.json
benchmarks/baseline.json`` refreshes it). This tool renders its headline
figures between the markers ``<!-- figures:start -->`` and ``<!-- figures:end
-->`` of README.md::

    python tools/figures.py          # rewrite README's figures
    python tools/figures.py --check  # exit 1 if they are stale (tests/test_project.py)
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
BASELINE = ROOT / "benchmarks" / "baseline.json"
VECTORS = ROOT / "specs" / "vectors"
START, END = "<!-- figures:start -->", "<!-- figures:end -->"


def _n(value: float, digits: int = 2) -> str:
    return f"{value:,.0f}" if abs(value) >= 1000 else f"{value:.{digits}f}"


def render(result: dict[str, Any]) -> str:
    """The bullet list of a result file's headline figures (benchmarks.suite's keys)."""
    r = result["results"]
    machine = result["machine"]
    lines = [
        f"Measured on the development VM ({machine['cores']} cores, Python "
        f"{machine['python']}) on {result['started'][:10]}, core at commit "
        f"`{str(machine.get('git_commit') or '?')[:7]}`; generated from "
        "[benchmarks/baseline.json](benchmarks/baseline.json) by `tools/figures.py` "
        "(details and how to reproduce: [benchmarks/README.md](benchmarks/README.md)):",
        "",
    ]
    if "B1" in r:
        b1 = r["B1"]
        depths = sorted(b1["x_floor"], key=int)
        floors = " / ".join(_n(b1["x_floor"][d], 1) for d in depths)
        shown = " / ".join(f"{int(d):,}" for d in depths)
        lines.append(
            f"- one followup plus its whole turn through `reduce`: flat in the inbox depth "
            f"(D = {int(depths[-1]):,} / D = {int(depths[0]):,}: {_n(b1['ratio_high_low'])}); "
            f"{floors}x a mutable deque-and-dict floor at D = {shown};"
        )
    if "B2" in r:
        b2 = r["B2"]
        lines.append(
            "- `replace`/`remove` in the middle of the deepest inbox: "
            f"{_n(b2['replace']['ratio'])}/{_n(b2['remove']['ratio'])}x their cost at the "
            "shallowest;"
        )
    if "B3" in r:
        b3 = r["B3"]
        lines.append(
            f"- `replay`: {_n(b3['events_per_s'])} events/s over a {b3['events']:,}-event log, "
            f"flat (last 10% / first 10%: {_n(b3['last_first'])});"
        )
    if "B4" in r:
        lines.append(f"- {_n(r['B4']['bytes_per_entry'], 0)} bytes per pending entry;")
    if "B5" in r:
        memory = r["B5"]["memory"]["burst"]["messages_per_s"]
        lines.append(f"- the asyncio shell over a `MemoryLog`: {_n(memory)} messages/s (burst);")
    vectors = len(list(VECTORS.glob("*.json")))
    lines.append(f"- {vectors} conformance vectors in `specs/vectors/`.")
    misses = [t for t in result.get("targets", ()) if t["pass"] is False]
    verdict = (
        "every target of `benchmarks.suite.TARGETS` passed in this run"
        if not misses
        else "missed in this run: " + "; ".join(f"{t['bench']} {t['metric']}" for t in misses)
    )
    lines += ["", f"Targets: {verdict}."]
    return "\n".join(lines)


def updated(readme: str, result: dict[str, Any]) -> str:
    head, found, rest = readme.partition(START)
    _old, found_end, tail = rest.partition(END)
    if not (found and found_end):
        raise SystemExit(f"README.md lacks the {START} ... {END} markers")
    return f"{head}{START}\n{render(result)}\n{END}{tail}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if README is stale")
    args = parser.parse_args(argv)
    readme = README.read_text(encoding="utf-8")
    text = updated(readme, json.loads(BASELINE.read_text(encoding="utf-8")))
    if text == readme:
        return 0
    if args.check:
        print("README.md figures are stale: run python tools/figures.py", file=sys.stderr)
        return 1
    README.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
