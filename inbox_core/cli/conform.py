"""``inbox-core conform --port CMD``: a port against the reference (R38, specs/ports.md).

Two phases on one port process: every vector the port's parts cover, then random
runs (``port.sequences``). Exit 0 when the port agrees throughout, 1 on the first
divergence (printed as a diff, and written as a vector file), 2 when the port breaks
the protocol (it exits, hangs past ``--timeout`` or answers malformed JSON).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

from inbox_core.cli.render import EXIT_FAILURE, EXIT_OK, clip, err, lines, out, printable
from inbox_core.port.client import PortFailure, PortProcess
from inbox_core.port.conformance import run_vector, vector_of
from inbox_core.vectors import VectorFormatError, dump_vector, read_vector, vector_files

EXIT_PROTOCOL = 2
"""The port broke the protocol (``PortFailure``); also argparse's usage error."""


class _Report:
    """What the run prints: lines as it goes, or one JSON summary at the end (``--json``)."""

    def __init__(self, as_json: bool) -> None:
        self.as_json = as_json
        self.summary: dict[str, Any] = {}

    def say(self, line: str) -> None:
        if not self.as_json:
            out(line)

    def finish(self, status: int) -> int:
        if self.as_json:
            out(json.dumps({"status": status, **self.summary}, indent=2))
        return status


def _run_vectors(port: PortProcess, path: Path, report: _Report) -> int:
    """Every vector file under ``path`` through the port; the number that failed."""
    passed, skipped, failed = 0, 0, []
    for file in vector_files(path):
        outcome = run_vector(port, read_vector(file))
        if outcome.skipped:
            skipped += 1
        elif outcome.passed:
            passed += 1
        else:
            described = outcome.divergence.describe() if outcome.divergence else outcome.problem
            described = "\n".join(lines(described))  # each line clipped
            failed.append({"vector": outcome.name, "file": str(file), "divergence": described})
            name, where = printable(outcome.name), printable(file.name)
            report.say(clip(f"FAIL  vector {name} ({where})"))
            for line in described.split("\n"):
                report.say(f"      {line}")
    report.summary["vectors"] = {"passed": passed, "skipped": skipped, "failed": failed}
    report.say(
        f"vectors: {passed} passed, {len(failed)} failed, {skipped} skipped"
        " (they need parts the port does not declare)"
    )
    return len(failed)


def _save(steps: list[Any], directory: Path, seed: int) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    name = f"conform-seed-{seed}"
    doc = vector_of(
        steps,
        name=name,
        description=f"A run on which a port differed from the reference (conform --seed {seed}).",
    )
    path = directory / f"{name}.json"
    path.write_text(dump_vector(doc), encoding="utf-8")
    return path


def run_conform(args: argparse.Namespace, vectors: Path) -> int:
    report = _Report(args.json)
    try:
        with PortProcess(args.port, timeout=args.timeout) as port:
            parts = port.handshake()
            report.summary["port"] = {"name": clip(port.name), "parts": list(parts)}
            report.say(clip(f"conform: port {port.name!r}, parts {', '.join(parts)}"))
            status = _phases(port, args, vectors, report)
    except PortFailure as error:
        report.summary["protocolError"] = str(error)
        if not args.json:
            err(f"inbox-core conform: {error}")
        return report.finish(EXIT_PROTOCOL)
    return report.finish(status)


def _phases(port: PortProcess, args: argparse.Namespace, vectors: Path, report: _Report) -> int:
    try:
        if _run_vectors(port, vectors, report):
            return EXIT_FAILURE  # random runs would only find the same faults again
    except VectorFormatError as error:
        err(f"inbox-core conform: a vector under {vectors} is malformed: {error}")
        return EXIT_FAILURE
    if args.examples == 0:
        return EXIT_OK
    try:
        from inbox_core.port.sequences import search  # noqa: PLC0415 - needs Hypothesis
    except ImportError as error:
        err(
            f"inbox-core conform: random runs need Hypothesis ({error}); install it with"
            " pip install hypothesis (from the checkout: pip install -e '.[conform]'), or pass"
            " --examples 0 for the vectors alone"
        )
        return EXIT_FAILURE
    report.say(
        f"random runs: {args.examples} of up to {args.steps} steps, seed {args.seed}"
        " (each step compared: events, notifications, error names, projection; then the folds)"
    )
    started, tenth = time.monotonic(), max(args.examples // 10, 1)

    def progress(runs: int) -> None:
        if runs <= args.examples and (runs % tenth == 0 or runs == args.examples):
            report.say(f"  {runs}/{args.examples} runs")

    result = search(
        port, examples=args.examples, seed=args.seed, max_steps=args.steps, progress=progress
    )
    elapsed = time.monotonic() - started
    report.summary["runs"] = {"played": result.runs, "seconds": round(elapsed, 2)}
    if result.divergence is None or result.steps is None:
        report.say(f"conform: the port agrees with the reference ({elapsed:.1f} s)")
        return EXIT_OK
    described = "\n".join(lines(result.divergence.describe(result.steps)))
    report.say(f"FAIL  a run of {len(result.steps)} steps (shrunk after {result.runs} runs):")
    for index, step in enumerate(result.steps):
        report.say(f"  {index}: {json.dumps(step, sort_keys=True)}")
    for line in described.split("\n"):
        report.say(line)
    path = _save(result.steps, Path(args.save), args.seed)
    report.summary |= {"steps": result.steps, "divergence": described, "vector": str(path)}
    report.say(f"the run as a vector: {path}")
    return EXIT_FAILURE
