"""Node for the inspector's JavaScript tests: found on PATH, or the test is skipped, except
under CI=true, where a missing node fails the run (the page's logic must be tested there)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
UI = ROOT / "inbox_core" / "http" / "ui"
JS_TESTS = Path(__file__).resolve().parent / "js"


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() in ("true", "1", "yes")


def missing(what: str) -> None:
    """Skip for want of ``what``; under CI=true, fail instead."""
    if in_ci():
        pytest.fail(f"{what} is missing, and CI=true: the inspector's tests must run in CI")
    pytest.skip(f"{what} is missing")


def node() -> str:
    """The node executable (skips or, under CI, fails without one)."""
    found = shutil.which("node")
    if found is None:
        missing("node")
    assert found is not None
    return found
