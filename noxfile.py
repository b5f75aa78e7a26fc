"""Developer sessions. ``nox -s tests`` is the CI gate (README's test command)."""

from __future__ import annotations

import os

import nox

nox.options.default_venv_backend = "venv"
nox.options.reuse_existing_virtualenvs = True
nox.options.sessions = ["tests"]

# The pure core: 100% branch coverage is required of these modules.
PURE_CORE = [
    "inbox_core/values.py",
    "inbox_core/errors.py",
    "inbox_core/commands.py",
    "inbox_core/events.py",
    "inbox_core/inbox.py",
    "inbox_core/reducer.py",
    "inbox_core/replay.py",
    "inbox_core/codec.py",
]


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
        *session.posargs,
        env={"HYPOTHESIS_PROFILE": "ci"},
    )
    session.run("coverage", "report", "--show-missing", "--skip-covered")
    session.run(
        "coverage", "report", "--fail-under=100", "--include=" + ",".join(PURE_CORE)
    )


@nox.session
def lint(session: nox.Session) -> None:
    """ruff and mypy --strict only."""
    session.install("-e", ".[dev]")
    session.run("ruff", "check", "inbox_core", "tests", "benchmarks", "noxfile.py")
    session.run("ruff", "format", "--check", "inbox_core")
    session.run("mypy", "--strict", "inbox_core")


@nox.session
def fuzz(session: nox.Session) -> None:
    """Stateful invariant suite with large budgets.

    FUZZ_EXAMPLES / FUZZ_STEPS / FUZZ_SEED override the defaults.
    """
    session.install("-e", ".[dev]")
    env = {
        "HYPOTHESIS_PROFILE": "fuzz",
        "FUZZ_EXAMPLES": os.environ.get("FUZZ_EXAMPLES", "2000"),
        "FUZZ_STEPS": os.environ.get("FUZZ_STEPS", "200"),
    }
    if "FUZZ_SEED" in os.environ:
        env["FUZZ_SEED"] = os.environ["FUZZ_SEED"]
    session.run("pytest", "-m", "stateful", "-p", "no:cacheprovider", *session.posargs, env=env)
