"""Developer sessions. ``nox -s tests`` is the CI gate (README's test command)."""

from __future__ import annotations

import os
import random
import tomllib

import nox

nox.options.default_venv_backend = "venv"
nox.options.reuse_existing_virtualenvs = True
nox.options.sessions = ["tests"]

# The pure core: 100% branch coverage is required of these modules, and they are the
# ones mutation testing mutates (one list: pyproject's [tool.mutmut] only_mutate).
with open("pyproject.toml", "rb") as _f:
    PURE_CORE: list[str] = tomllib.load(_f)["tool"]["mutmut"]["only_mutate"]


@nox.session
def tests(session: nox.Session) -> None:
    """Static checks, then the whole test suite (Hypothesis 'ci' profile) with coverage."""
    session.install("-e", ".[dev]")
    session.run("ruff", "check", "inbox_core", "tests", "benchmarks", "noxfile.py")
    session.run("mypy", "--strict", "inbox_core")
    session.run("coverage", "erase")
    session.run(
        "pytest",
        "--cov=inbox_core",
        "--cov-branch",
        "--cov-report=",
        # every core, test by test, but the files whose tests share a fixture each on one
        # worker (tests/conftest.py groups them); INBOX_CORE_WORKERS=0 runs in-process
        "--numprocesses",
        os.environ.get("INBOX_CORE_WORKERS", "auto"),
        "--dist",
        "loadgroup",
        *session.posargs,
        env={"HYPOTHESIS_PROFILE": "ci"},
    )
    session.run("coverage", "report", "--show-missing", "--skip-covered")
    session.run("coverage", "report", "--fail-under=100", "--include=" + ",".join(PURE_CORE))


@nox.session
def lint(session: nox.Session) -> None:
    """ruff and mypy --strict only."""
    session.install("-e", ".[dev]")
    session.run("ruff", "check", "inbox_core", "tests", "benchmarks", "noxfile.py")
    session.run("ruff", "format", "--check", "inbox_core")
    session.run("mypy", "--strict", "inbox_core")


@nox.session
def fuzz(session: nox.Session) -> None:
    """Stateful invariant suite (I1-I12 and the oracle) with large budgets.

    FUZZ_EXAMPLES (default 1000) examples of FUZZ_STEPS (default 100) steps,
    from FUZZ_SEED (default: a fresh random seed, logged so a failure can be
    replayed with FUZZ_SEED=<seed>). Wall time grows with examples x steps^2.
    """
    session.install("-e", ".[dev]")
    seed = os.environ.get("FUZZ_SEED") or str(random.SystemRandom().randrange(2**32))
    env = {
        "HYPOTHESIS_PROFILE": "fuzz",
        "FUZZ_EXAMPLES": os.environ.get("FUZZ_EXAMPLES", "1000"),
        "FUZZ_STEPS": os.environ.get("FUZZ_STEPS", "100"),
        "FUZZ_SEED": seed,
    }
    session.log(
        f"fuzz: {env['FUZZ_EXAMPLES']} examples x {env['FUZZ_STEPS']} steps, FUZZ_SEED={seed}"
    )
    session.run(
        "pytest",
        "-m",
        "stateful",
        "-p",
        "no:cacheprovider",
        "--durations=1",
        "--timeout=0",  # a fuzz budget may run far past the per-test timeout
        *session.posargs,
        env=env,
    )


@nox.session
def crosshair(session: nox.Session) -> None:
    """CrossHair on the PEP 316 contracts of the pure core (tests/formal/crosshair_check.py).

    CROSSHAIR_CONDITION_TIMEOUT: CPU seconds per condition (default 8);
    CROSSHAIR_TIMEOUT: wall-clock budget of the whole run (default 900).
    Fails on any counterexample, CrossHair error or an exceeded budget.
    """
    session.install("-e", ".[dev]")
    session.run(
        "python",
        "tests/formal/crosshair_check.py",
        "--per-condition",
        os.environ.get("CROSSHAIR_CONDITION_TIMEOUT", "8"),
        "--overall",
        os.environ.get("CROSSHAIR_TIMEOUT", "900"),
        *session.posargs,
    )


@nox.session
def mutation(session: nox.Session) -> None:
    """mutmut 3 on the pure core ([tool.mutmut] in pyproject.toml); prints the score.

    MUTMUT_CHILDREN: parallel workers (default 2). Results stay in mutants/
    (``mutmut browse``, ``mutmut show NAME``); specs/testing.md records the score.
    """
    session.install("-e", ".[dev]")
    session.run("mutmut", "run", "--max-children", os.environ.get("MUTMUT_CHILDREN", "2"))
    session.run("mutmut", "results", "--all", "true", silent=True, success_codes=[0, 1])
    session.run("python", "tests/formal/mutation_score.py")


@nox.session
def bench(session: nox.Session) -> None:
    """Benchmarks B1-B6 (benchmarks/README.md); writes benchmarks/results/latest.json.

    ``BENCH_QUICK=1 nox -s bench`` (or ``nox -s bench -- --quick``) runs the
    small smoke sizes; other arguments go to ``python -m benchmarks``
    (``--only B1,B3``, ``--out PATH``, ``--markdown``).
    """
    session.install("-e", ".")
    session.run("python", "-m", "benchmarks", *session.posargs)
