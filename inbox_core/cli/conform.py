"""``inbox-core conform --port CMD``: a port against the reference (R38, specs/ports.md).

Two phases on one port process: every vector the port's parts cover, then random
runs (``port.sequences``). Exit 0 when the port agrees throughout, 1 on a divergence
(printed as a diff, and the shrunk run written as a vector file), 2 when the port
breaks the protocol (it exits, hangs or stops reading past ``--timeout``, answers
malformed JSON or a line past ``maxDocumentSize``). A failing vector skips the random
runs unless ``--keep-going``, which also restarts a port that broke the protocol on a
vector and goes on; a directory without vectors is a failure, not a silent pass.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

from inbox_core.cli.output import EXIT_FAILURE, EXIT_OK, clip, err, lines, out, printable
from inbox_core.errors import InboxCoreError
from inbox_core.port.client import PortFailure, PortProcess
from inbox_core.port.conformance import run_vector, vector_of
from inbox_core.port.sequences import search
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

    def fail(self, line: str) -> None:
        """A line that says why the run fails: on standard error, also with ``--json``."""
        err(f"inbox-core conform: {line}")

    def finish(self, status: int) -> int:
        if self.as_json:
            out(json.dumps({"status": status, **self.summary}, indent=2))
        return status


class _Session:
    """The port process of a run; with ``--keep-going`` a new one after a protocol break."""

    def __init__(self, args: argparse.Namespace, report: _Report) -> None:
        self.args, self.report = args, report
        self.port = self._start()
        self.broke: list[str] = []

    def _start(self) -> PortProcess:
        port = PortProcess(self.args.port, timeout=self.args.timeout)
        try:
            parts = port.handshake()
        except PortFailure:
            port.close()
            raise
        self.report.summary["port"] = {"name": clip(port.name), "parts": list(parts)}
        return port

    def restart(self, failure: PortFailure) -> None:
        self.broke.append(str(failure))
        self.port.close()
        self.port = self._start()

    def close(self) -> None:
        self.port.close()


def _run_vectors(session: _Session, path: Path, report: _Report) -> int:
    """Every vector file under ``path`` through the port; the number that failed (a file
    that does not read or is not a vector is a failure too). ``PortFailure`` unless
    ``--keep-going``, which records it as the vector's failure and restarts the port."""
    passed, skipped = 0, 0
    failed: list[dict[str, str]] = []
    report.summary["vectors"] = {"passed": passed, "skipped": skipped, "failed": failed}
    for file in vector_files(path):
        broke: PortFailure | None = None
        name = file.stem
        try:
            outcome = run_vector(session.port, read_vector(file))
            name = outcome.name
        except PortFailure as failure:
            described, broke = f"the port broke the protocol: {failure}", failure
        except (OSError, ValueError, InboxCoreError, VectorFormatError) as error:
            described = f"not a readable vector: {error}"
        else:
            if outcome.skipped or outcome.passed:
                skipped, passed = skipped + outcome.skipped, passed + outcome.passed
                report.summary["vectors"] |= {"passed": passed, "skipped": skipped}
                continue
            described = outcome.divergence.describe() if outcome.divergence else outcome.problem
        described = "\n".join(lines(described))  # each line clipped
        failed.append({"vector": name, "file": str(file), "divergence": described})
        report.say(clip(f"FAIL  vector {printable(name)} ({printable(file.name)})"))
        for line in described.split("\n"):
            report.say(f"      {line}")
        if broke is not None:
            if not session.args.keep_going:
                raise broke
            session.restart(broke)
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


def run_conform(args: argparse.Namespace, vectors: Path | None) -> int:
    """The whole command: the exit status (``vectors`` None: ``--no-vectors``)."""
    report = _Report(args.json)
    if vectors is not None and not (vectors.exists() and vector_files(vectors)):
        what = "does not exist" if not vectors.exists() else "holds no *.json vector"
        report.fail(f"{printable(str(vectors))} {what}; pass --no-vectors for random runs alone")
        report.summary["vectors"] = {"passed": 0, "skipped": 0, "failed": [], "missing": True}
        return report.finish(EXIT_FAILURE)
    try:
        session = _Session(args, report)
    except PortFailure as error:
        return _broke(report, args, error)
    try:
        name, parts = session.port.name, session.port.parts
        report.say(clip(f"conform: port {name!r}, parts {', '.join(parts)}"))
        status = _phases(session, args, vectors, report)
    except PortFailure as error:
        return _broke(report, args, error)
    finally:
        session.close()
    if session.broke:  # --keep-going went on after the port broke the protocol
        report.summary["protocolError"] = session.broke[0]
        return report.finish(EXIT_PROTOCOL)
    return report.finish(status)


def _broke(report: _Report, args: argparse.Namespace, error: PortFailure) -> int:
    report.summary["protocolError"] = str(error)
    if not args.json:
        report.fail(str(error))
    return report.finish(EXIT_PROTOCOL)


def _phases(
    session: _Session, args: argparse.Namespace, vectors: Path | None, report: _Report
) -> int:
    failed = 0 if vectors is None else _run_vectors(session, vectors, report)
    if failed and not args.keep_going:
        report.say(f"random runs skipped: {failed} vectors failed (--keep-going runs them too)")
        return EXIT_FAILURE
    if args.examples == 0:
        return EXIT_FAILURE if failed else EXIT_OK
    report.say(
        f"random runs: {args.examples} of up to {args.steps} steps, seed {args.seed}"
        " (each step compared: events, notifications, error names, projection, loads of"
        " corrupted logs; then the folds)"
    )
    started, tenth = time.monotonic(), max(args.examples // 10, 1)

    def progress(runs: int) -> None:
        if runs % tenth == 0 or runs == args.examples:
            report.say(f"  {runs}/{args.examples} runs")

    port = session.port
    result = search(
        port, examples=args.examples, seed=args.seed, max_steps=args.steps, progress=progress
    )
    elapsed = time.monotonic() - started
    report.summary["runs"] = {"played": result.runs, "seconds": round(elapsed, 2)}
    if result.divergence is None or result.steps is None:
        report.say(f"random runs: the port agrees with the reference ({elapsed:.1f} s)")
        return EXIT_FAILURE if failed else EXIT_OK
    described = "\n".join(lines(result.divergence.describe(result.steps)))
    report.say(f"FAIL  run {result.runs}, shrunk to {len(result.steps)} steps:")
    for index, step in enumerate(result.steps):
        report.say(clip(f"  {index}: {json.dumps(step, sort_keys=True)}"))
    for line in described.split("\n"):
        report.say(line)
    path = _save(result.steps, Path(args.save), args.seed)
    report.summary |= {"steps": result.steps, "divergence": described, "vector": str(path)}
    report.say(f"the run as a vector: {path}")
    return EXIT_FAILURE
