"""B9 (issue 33): the TypeScript port's cost per command beside the reference's, in one run.

``python -m benchmarks --only B9`` (or ``python -m benchmarks.ts_port [--config quick]``).
The workload is B1's at each depth D of the config (10, 1,000 and 10,000 in full and
quick): a running turn with D waking followups queued behind it; one *message* is a
followup and the whole turn it waits for (``reduce`` of the send, ``PreStepDecided(Enter)``,
``StepFinished(Completed)``, ``TurnStoppingDone``), so four commands, and the depth stays D.

Both sides run in every round, one batch each per depth, in an order that rotates from
round to round (the suite's method): the reference in this process (CPU time, a
``gc.collect()`` before each batch, as B1), the port in one ``node`` child process
(``ports/typescript/dist/bench.js``: the same workload through the package's
``reduce``, after an untimed warm-up, the process's CPU time, V8's collector left to
itself). Figures are medians over rounds, per command; ratios are paired within rounds.
The same rounds also time decoding the workload's four commands from their JSON (what a
host or the conformance port does first with a command that crossed a process boundary:
``command_from_json`` against the package's ``commandFromJson``, which checks the whole
document's shape before it builds a value, formats.md §1). Needs ``node`` and the built
package (``npm ci && npm run build`` in ports/typescript); without them the figure says
why.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
from pathlib import Path
from typing import IO, Any, Final

from benchmarks import workloads
from benchmarks.suite import CONFIGS, Config, Samples, paired, timed
from inbox_core import (
    AgentState,
    Completed,
    Enter,
    PreStepDecided,
    StepFinished,
    TurnStoppingDone,
    followup,
)
from inbox_core.codec import command_from_json, command_to_json

ROOT: Final = Path(__file__).resolve().parents[1]
DRIVER: Final = ROOT / "ports" / "typescript" / "dist" / "bench.js"
COMMANDS_PER_MESSAGE: Final = 4
WARMUP_MESSAGES: Final = 20_000
"""Messages the port runs untimed first, on a state of their own: V8 compiles the path."""


def workload_commands() -> list[dict[str, Any]]:
    """The JSON of one B1 message's four commands: a followup, the pre-step decision that
    enters the batch, the step's completion, the end of turn-stopping."""
    commands = (
        followup(workloads.message("m1")),
        PreStepDecided(1, 1, Enter((workloads.message("m0"),))),
        StepFinished(1, 1, Completed()),
        TurnStoppingDone(1),
    )
    return [command_to_json(command) for command in commands]


def unavailable() -> str | None:
    """None if node and the built port are there, else why not."""
    if shutil.which("node") is None:
        return "no node on PATH"
    if not DRIVER.is_file():
        built_by = "npm ci && npm run build in ports/typescript"
        return f"{DRIVER.relative_to(ROOT)} is not built ({built_by})"
    return None


class _Driver:
    """The port's side: ``dist/bench.js``, one JSON request and answer per line."""

    def __init__(self) -> None:
        self.process = subprocess.Popen(
            ["node", str(DRIVER)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            bufsize=1,
        )

    def call(self, **request: Any) -> dict[str, Any]:
        stdin: IO[str] | None = self.process.stdin
        stdout: IO[str] | None = self.process.stdout
        assert stdin is not None
        assert stdout is not None
        stdin.write(json.dumps(request) + "\n")
        stdin.flush()
        answer: dict[str, Any] = json.loads(stdout.readline())
        return answer

    def close(self) -> None:
        if self.process.poll() is None:
            self.call(op="bye")
        self.process.wait(timeout=30)


def bench(config: Config) -> dict[str, Any]:
    """B9: µs per command of the B1 workload, reference and TypeScript port, per depth."""
    reason = unavailable()
    if reason is not None:
        return {"skipped": reason}
    depths, batch = config.b1_depths, config.b1_batch
    total = max(depths) + 1 + (config.rounds + 1) * batch
    sends = workloads.followups("m", total)
    python: dict[int, AgentState] = {d: workloads.steady_state(iter(sends), d) for d in depths}
    next_message = {d: d + 1 for d in depths}
    reference = {d: Samples(batch * COMMANDS_PER_MESSAGE) for d in depths}
    port = {d: Samples(batch * COMMANDS_PER_MESSAGE) for d in depths}
    documents = workload_commands()
    decoded = {side: Samples(batch * len(documents)) for side in ("reference", "port")}
    driver = _Driver()
    try:
        driver.call(op="setup", depths=list(depths), messages=total, documents=documents)
        driver.call(op="warmup", messages=WARMUP_MESSAGES)

        def run_reference(depth: int, timed_run: bool = True) -> None:
            start = next_message[depth]
            state, chunk = python[depth], sends[start : start + batch]
            cpu, wall, python[depth] = timed(lambda: workloads.core_messages(state, chunk))
            next_message[depth] += batch
            if timed_run:
                reference[depth].add(cpu, wall)

        def run_port(depth: int, timed_run: bool = True) -> None:
            answer = driver.call(op="run", depth=depth, batch=batch)
            if answer.get("depth") != depth:
                raise AssertionError(f"B9: the port's depth drifted: {answer}")
            if timed_run:
                port[depth].add(int(answer["cpuNs"]), int(answer["wallNs"]))

        def decode_reference(depth: int, timed_run: bool = True) -> None:  # any depth
            cpu, wall, _decoded = timed(
                lambda: [command_from_json(doc) for _ in range(batch) for doc in documents]
            )
            if timed_run:
                decoded["reference"].add(cpu, wall)

        def decode_port(depth: int, timed_run: bool = True) -> None:  # any depth
            answer = driver.call(op="decode", repeat=batch)
            if timed_run:
                decoded["port"].add(int(answer["cpuNs"]), int(answer["wallNs"]))

        for depth in depths:  # one untimed batch each: imports, caches, the JIT
            run_reference(depth, timed_run=False)
            run_port(depth, timed_run=False)
        decode_reference(0, timed_run=False)
        decode_port(0, timed_run=False)
        variants = [(run_reference, d) for d in depths] + [(run_port, d) for d in depths]
        variants += [(decode_reference, 0), (decode_port, 0)]
        for r in range(config.rounds):
            shift = r % len(variants)
            for run, depth in variants[shift:] + variants[:shift]:
                run(depth)
    finally:
        driver.close()
    for depth in depths:
        workloads.check_steady(python[depth], depth)
    low, high = min(depths), max(depths)
    return {
        "what": "B1's workload per command (a followup and its whole turn = 4 commands), "
        "the reference and the TypeScript port (ports/typescript) in the same rounds",
        "commands_per_message": COMMANDS_PER_MESSAGE,
        "reference_us_per_command": {str(d): reference[d].per_unit_us() for d in depths},
        "port_us_per_command": {str(d): port[d].per_unit_us() for d in depths},
        "port_wall_us_per_command": {str(d): port[d].per_unit_us("wall") for d in depths},
        "port_x_reference": {str(d): paired(port[d], reference[d]) for d in depths},
        "port_ratio_high_low": paired(port[high], port[low]),
        "reference_ratio_high_low": paired(reference[high], reference[low]),
        "port_spread": {str(d): port[d].summary()["spread"] for d in depths},
        "port_us_at_max_depth": port[high].per_unit_us(),
        "decode_reference_us_per_command": decoded["reference"].per_unit_us(),
        "decode_port_us_per_command": decoded["port"].per_unit_us(),
        "decode_port_x_reference": paired(decoded["port"], decoded["reference"]),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.ts_port", description=__doc__)
    parser.add_argument("--config", choices=sorted(CONFIGS), default="quick")
    args = parser.parse_args(argv)
    result = bench(CONFIGS[args.config])
    print(json.dumps(result, indent=2))
    if "skipped" not in result:
        for depth, us in result["port_us_per_command"].items():
            ref = result["reference_us_per_command"][depth]
            print(f"D={int(depth):>6,}: port {us:.2f} us/command, reference {ref:.2f} us/command")
        port_decode = result["decode_port_us_per_command"]
        reference_decode = result["decode_reference_us_per_command"]
        print(f"decode: port {port_decode:.2f} us/command, reference {reference_decode:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
