"""Run the suite: ``python -m benchmarks [--quick] [--only B1,B3] [--out PATH]``.

``BENCH_QUICK=1`` in the environment is the same as ``--quick``. The JSON
result goes to ``benchmarks/results/latest.json`` unless ``--out`` says
otherwise; a summary table is printed (``--markdown`` prints it as Markdown).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
from pathlib import Path

from benchmarks.report import table
from benchmarks.suite import CONFIGS, run

DEFAULT_OUT = Path(__file__).resolve().parent / "results" / "latest.json"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="smaller sizes (smoke run)")
    parser.add_argument("--config", choices=sorted(CONFIGS), help="sizes by name")
    parser.add_argument("--only", default="", help="comma-separated subset, e.g. B1,B3")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="JSON result file")
    parser.add_argument("--markdown", action="store_true", help="print the table as Markdown")
    args = parser.parse_args(argv)

    quick = args.quick or os.environ.get("BENCH_QUICK", "") not in ("", "0")
    config = CONFIGS[args.config or ("quick" if quick else "full")]
    if args.only:
        only = tuple(part.strip().upper() for part in args.only.split(",") if part.strip())
        config = dataclasses.replace(config, only=only)

    result = run(config, log=lambda line: print(f"... {line}", file=sys.stderr, flush=True))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(table(result, markdown=args.markdown))
    print(f"\nwritten: {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
