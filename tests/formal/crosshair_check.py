"""Run ``crosshair check`` on the contracts of the pure core, with a time budget.

Used by ``nox -s crosshair``; run from the repository root::

    python tests/formal/crosshair_check.py [--per-condition S] [--overall S] [TARGET ...]

Exit status 0 when CrossHair finishes within the overall budget and reports no
counterexample; 1 on any counterexample, CrossHair error or timeout.
``tests/formal/contracts.py`` always comes first: importing it tells CrossHair
how to build core values (see its docstring).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time

REGISTRATIONS = "tests/formal/contracts.py"
TARGETS = [
    "inbox_core.inbox.normalize_splice",
    "inbox_core.sequence.keys_between",
    "inbox_core.inbox.Inbox.claim",
    "inbox_core.inbox.Inbox.find",
    "inbox_core.inbox.batch_of",
    "inbox_core.values.route",
]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--per-condition", type=float, default=8.0, help="CPU s per condition")
    parser.add_argument("--overall", type=float, default=900.0, help="wall-clock s for the run")
    parser.add_argument("targets", nargs="*", help="default: the contracts of the pure core")
    args = parser.parse_args(argv)
    command = [
        sys.executable,
        "-m",
        "crosshair",
        "check",
        "--analysis_kind=PEP316",
        f"--per_condition_timeout={args.per_condition}",
        "--report_all",
        REGISTRATIONS,
        *(args.targets or TARGETS),
    ]
    print(" ".join(command[1:]), flush=True)
    start = time.monotonic()
    try:
        done = subprocess.run(
            command, check=False, capture_output=True, text=True, timeout=args.overall
        )
    except subprocess.TimeoutExpired:
        print(f"crosshair: over the overall budget of {args.overall:.0f} s", file=sys.stderr)
        return 1
    output = done.stdout + done.stderr
    counterexamples = [line for line in output.splitlines() if ": error:" in line]
    confirmed = sum("Confirmed over all paths" in line for line in output.splitlines())
    unconfirmed = sum("Not confirmed" in line for line in output.splitlines())
    print(output, end="")
    print(
        f"crosshair: {confirmed} conditions confirmed over all paths, {unconfirmed} checked "
        f"without a counterexample (not exhaustive), {len(counterexamples)} counterexamples, "
        f"exit {done.returncode}, {time.monotonic() - start:.0f} s"
    )
    return 0 if done.returncode == 0 and not counterexamples else 1


if __name__ == "__main__":
    sys.exit(main())
