"""B9: what the port protocol costs, and what a ``conform`` budget buys (issue 22).

``python -m benchmarks.port_kit [--commands 2000] [--runs 1000] [--steps 50]``. Measured,
side by side in one run:

- *direct*: ``vectors.apply_step`` + ``projection_to_json`` per command in this process
  (what the reference does for one step);
- *through the port*: the same commands as ``apply`` + ``projection`` requests to
  ``python -m inbox_core.port`` over pipes (JSON encode, write, the child's work, read,
  decode, check); *overhead* = port / direct;
- *conform*: the wall time of ``inbox-core conform --examples RUNS --steps STEPS``
  against the reference port, vectors included, and its time per run.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

from inbox_core.codec import command_to_json, projection_to_json
from inbox_core.commands import queue
from inbox_core.port.client import PortProcess
from inbox_core.state import AgentState
from inbox_core.values import UserMessage
from inbox_core.vectors import apply_step

ROOT = Path(__file__).resolve().parents[1]


def _commands(count: int) -> list[dict[str, object]]:
    return [command_to_json(queue(UserMessage(f"m{i}", "hello"))) for i in range(count)]


def direct(commands: list[dict[str, object]]) -> float:
    state, started = AgentState.initial(), time.perf_counter()
    for command in commands:
        state = apply_step(state, command).state
        projection_to_json(state)
    return (time.perf_counter() - started) / len(commands)


def through_port(commands: list[dict[str, object]]) -> float:
    with PortProcess(f"{sys.executable} -m inbox_core.port") as port:
        port.handshake()
        port.call("load", log=[])
        started = time.perf_counter()
        for command in commands:
            port.call("apply", command=command)
            port.call("projection")
        return (time.perf_counter() - started) / len(commands)


def conform_wall(runs: int, steps: int) -> float:
    started = time.perf_counter()
    subprocess.run(
        [
            sys.executable,
            "-m",
            "inbox_core",
            "conform",
            "--json",
            "--port",
            f"{sys.executable} -m inbox_core.port",
            "--examples",
            str(runs),
            "--steps",
            str(steps),
        ],
        cwd=ROOT,
        check=True,
        capture_output=True,
    )
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--commands", type=int, default=2000)
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--steps", type=int, default=50)
    args = parser.parse_args()
    commands = _commands(args.commands)
    here, there = direct(commands), through_port(commands)
    wall = conform_wall(args.runs, args.steps)
    print(
        json.dumps(
            {
                "direct_us_per_command": round(here * 1e6, 1),
                "port_us_per_command": round(there * 1e6, 1),
                "overhead_ratio": round(there / here, 2),
                "conform_seconds": round(wall, 1),
                "conform_ms_per_run": round(wall / args.runs * 1e3, 1),
                "runs": args.runs,
                "steps": args.steps,
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
