"""Fixtures of the inspector's browser tests: Debian's Chromium driven by Playwright for
Python (one browser per module, a fresh tab per test), and a served store per test.

The browser is the system's (``/usr/bin/chromium``, or ``INBOX_CORE_CHROMIUM``): nothing
downloads a browser build (never ``playwright install``). Without it, or without
Playwright, the browser tests are skipped, except under CI=true, where they fail."""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.http_ui.node import ROOT, missing
from tests.http_ui.served import ECHO_HOST, Served

CHROMIUM = os.environ.get("INBOX_CORE_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


@contextlib.contextmanager
def chromium(**options: Any) -> Iterator[Any]:
    """Debian's Chromium under Playwright: a persistent context over a fresh user-data-dir
    (``options`` go to ``launch_persistent_context``: a proxy, say)."""
    if not Path(CHROMIUM).exists():
        missing(f"Chromium ({CHROMIUM}; apt-get install chromium)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        missing("Playwright for Python (pip install -e '.[dev]')")
        raise
    with (
        tempfile.TemporaryDirectory(prefix="inbox-core-chromium-") as profile,
        sync_playwright() as playwright,
    ):
        context = playwright.chromium.launch_persistent_context(
            profile,
            executable_path=CHROMIUM,
            headless=True,
            args=CHROMIUM_ARGS,
            viewport={"width": 1280, "height": 900},
            **options,
        )
        context.set_default_timeout(20_000)
        try:
            yield context
        finally:
            context.close()


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """One Chromium for the module."""
    with chromium() as context:
        yield context


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    """A fresh tab (its own sessionStorage); a script or console error on it fails the test
    (a 4xx the page asked for and showed is no error)."""
    from playwright.sync_api import expect

    expect.set_options(timeout=20_000)  # a loaded 2-core machine; never a timing assertion
    tab = browser.new_page()
    errors: list[str] = []
    tab.on("pageerror", lambda error: errors.append(str(error)))

    def console(message: Any) -> None:  # a CSP refusal, a failed module: not a refused request
        if message.type == "error" and not message.text.startswith("Failed to load resource"):
            errors.append(message.text)

    tab.on("console", console)
    try:
        yield tab
    finally:
        tab.close()
    assert errors == [], errors


@pytest.fixture
def serve(tmp_path: Path) -> Iterator[Any]:
    """``serve(delay=..., host=...)`` starts ``inbox-core serve --http`` over a fresh store
    (``before(served)`` runs first); stopped (SIGTERM) at the end of the test."""
    if not (ROOT / "inbox_core" / "http" / "__init__.py").exists():
        pytest.skip("the HTTP front door (R39) is not in this tree")
    started: list[Served] = []

    def start(*, delay: float = 0.0, host: str = ECHO_HOST, before: Any = None) -> Served:
        served = Served(tmp_path, delay=delay, host=host)
        if before is not None:
            before(served)
        started.append(served)
        return served.start()

    yield start
    for served in started:
        served.stop()
