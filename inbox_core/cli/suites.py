"""``inbox-core vectors`` and ``inbox-core fuzz``: the reference held to its conformance
vectors and to the invariants of the stateful machine (``conform``'s vectors directory too)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Final, Protocol, cast

from inbox_core.cli.output import EXIT_FAILURE, EXIT_OK, clip, err, lines, out, printable
from inbox_core.vectors import run_vector_file, vector_files

__all__ = ["run_conform", "run_fuzz", "run_vectors", "vectors_dir"]

PACKAGE_ROOT: Final = Path(__file__).resolve().parents[2]
DEFAULT_VECTORS: Final = Path("specs") / "vectors"


# --------------------------------------------------------------------- vectors


def _default_vectors() -> Path:
    if DEFAULT_VECTORS.is_dir():
        return DEFAULT_VECTORS
    return PACKAGE_ROOT / DEFAULT_VECTORS


def vectors_dir(given: str | None) -> Path:
    return Path(given) if given is not None else _default_vectors()


def run_vectors(args: argparse.Namespace) -> int:
    path = vectors_dir(args.dir)
    if not path.exists():
        err(f"inbox-core vectors: no such file or directory: {path}")
        return EXIT_FAILURE
    files = vector_files(path)
    if not files:
        err(f"inbox-core vectors: no *.json vectors in {path}")
        return EXIT_FAILURE
    failed = 0
    for file in files:
        result = run_vector_file(file)
        if result.passed:
            if not args.quiet:
                out(f"PASS  {printable(result.name)}")
            continue
        failed += 1
        name, where = printable(result.name), printable(file.name)
        out(clip(f"FAIL  {name} ({where}): {printable(result.problem)}"))
        for line in lines(result.detail):
            out(f"      {line}")
    passed = len(files) - failed
    out(f"{len(files)} vectors: {passed} passed, {failed} failed")
    return EXIT_FAILURE if failed else EXIT_OK


# ------------------------------------------------------------------------ fuzz


class FuzzSummaryLike(Protocol):
    """What ``inbox_core.testing.run_fuzz`` returns (``FuzzSummary``)."""

    examples: int
    steps: int
    elapsed_seconds: float
    failure: str | None


class _Progress:
    """Prints ``done/total`` at every tenth of the run (and at its end)."""

    def __init__(self) -> None:
        self.shown = 0
        self.last = -1

    def __call__(self, done: int, total: int) -> None:
        tenth = done * 10 // max(total, 1)
        if done != self.last and (tenth > self.shown or done == total):
            self.shown, self.last = tenth, done
            out(f"  {done}/{total} examples")


def run_fuzz(args: argparse.Namespace) -> int:
    try:
        from inbox_core.testing import run_fuzz as fuzz  # noqa: PLC0415 - needs Hypothesis (dev only)
    except ImportError as error:
        err(
            f"inbox-core fuzz: the invariant suite cannot load ({error}).\n"
            "Install the development extras from the checkout: pip install -e '.[dev]' (or"
            " pip install hypothesis)."
        )
        return EXIT_FAILURE
    out(
        f"fuzz: {args.examples} examples of up to {args.steps} steps, seed {args.seed}"
        " (invariants I1-I12 after every step)"
    )
    summary = cast(
        FuzzSummaryLike,
        fuzz(examples=args.examples, steps=args.steps, seed=args.seed, progress=_Progress()),
    )
    rerun = f"inbox-core fuzz --examples {args.examples} --seed {args.seed} --steps {args.steps}"
    if summary.failure is not None:
        out(f"fuzz: FAILED after {summary.examples} examples ({summary.elapsed_seconds:.1f} s)")
        out(summary.failure)
        out(f"reproduce: {rerun}")
        return EXIT_FAILURE
    out(
        f"fuzz: passed: {summary.examples} examples of up to {summary.steps} steps"
        f" in {summary.elapsed_seconds:.1f} s (seed {args.seed})"
    )
    return EXIT_OK


def run_conform(args: argparse.Namespace) -> int:
    """``conform``: the port against the vectors (``--vectors``, the default, or none)."""
    from inbox_core.cli import conform  # noqa: PLC0415 - the port kit, on demand

    return conform.run_conform(args, None if args.no_vectors else vectors_dir(args.vectors))
