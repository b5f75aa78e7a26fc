"""Hypothesis profiles for the whole suite (specs/testing.md), and the slow tests.

``@pytest.mark.slow`` tests run with ``-m slow`` (or any ``-m`` expression naming
``slow``) or with ``INBOX_CORE_SLOW=1``; otherwise they are skipped, so that the
default run stays within CI's budget.

``HYPOTHESIS_PROFILE`` selects the profile, ``ci`` by default:

* ``ci``: derandomized (the same examples on every run), no example database,
  no deadline, budgets bounded so that the default test run stays well under
  ten minutes on two cores. The stateful machine runs ``STATEFUL_CI_EXAMPLES``
  examples of ``STATEFUL_CI_STEPS`` steps.
* ``fuzz``: large budgets for ``nox -s fuzz``: ``FUZZ_EXAMPLES`` examples
  (default 1000) of ``FUZZ_STEPS`` steps (default 100); ``FUZZ_SEED`` fixes
  the seed (otherwise a random one, printed on failure).
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, Phase, settings

STATEFUL_CI_EXAMPLES = 400
STATEFUL_CI_STEPS = 50

settings.register_profile(
    "ci",
    derandomize=True,
    database=None,
    deadline=None,
    max_examples=100,
    stateful_step_count=STATEFUL_CI_STEPS,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile(
    "fuzz",
    database=None,
    deadline=None,
    max_examples=int(os.environ.get("FUZZ_EXAMPLES", "1000")),
    stateful_step_count=int(os.environ.get("FUZZ_STEPS", "100")),
    print_blob=True,
    phases=(Phase.explicit, Phase.generate, Phase.shrink),
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
PROFILE = os.environ.get("HYPOTHESIS_PROFILE", "ci")
settings.load_profile(PROFILE)


HEAVY_FIRST = (
    "tests/formal/test_stateful.py::test_inbox_machine",
    "tests/ports/test_schemas.py::test_command_schema_agrees_with_the_decoder",
    "tests/core/test_hostile_input.py::test_decoders_refuse_a_hostile_leaf",
    "tests/ports/test_cli_hostile.py::test_g4_conform_prints_a_port_s_hostile_answers",
    "tests/formal/test_fuzz_api.py::test_run_fuzz_reports_a_shrunk_failure",
    "tests/shell/test_crash.py::test_I12_R27_crash_at_random_points_then_resume",
    "tests/shell/test_hostile_values.py::test_storable_values_round_trip",
    "tests/benchmarks/",
    "tests/ports/test_typescript_port.py",
    "tests/core/test_hostile_input.py::test_the_iterative_",
)
"""Tests of tens of seconds each (``--durations``), longest first: they start first, since
pytest-xdist deals tests out in order and one dealt last keeps a worker busy while the
other waits."""


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist's own reads the groups
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Skip the ``slow`` tests unless asked for; the heavy ones first; keep each file whose
    tests share a fixture beyond one test on one pytest-xdist worker."""
    items.sort(key=_heaviness)  # stable: the rest keep their order
    for item in items:
        if _shares_fixtures(item):
            item.add_marker(pytest.mark.xdist_group(item.nodeid.partition("::")[0]))
    if "slow" in (config.getoption("markexpr", "") or "") or os.environ.get("INBOX_CORE_SLOW"):
        return
    skip = pytest.mark.skip(reason="slow: run with -m slow or INBOX_CORE_SLOW=1")
    for item in items:
        if item.get_closest_marker("slow"):
            item.add_marker(skip)


def _heaviness(item: pytest.Item) -> int:
    """The place of ``item``'s entry in ``HEAVY_FIRST`` (longest first); the rest after."""
    for place, prefix in enumerate(HEAVY_FIRST):
        if item.nodeid.startswith(prefix):
            return place
    return len(HEAVY_FIRST)


def _shares_fixtures(item: pytest.Item) -> bool:
    """Whether ``item`` uses a module-scoped fixture (a browser, a mypy run, a benchmark's
    tiny run: made once per worker that runs the file's tests) or a session-scoped one of
    its own file (the TypeScript port's build, which two workers must not run at once in
    one directory). Everything else is dealt out test by test (``--dist loadgroup``)."""
    module = item.nodeid.partition("::")[0]
    info = getattr(item, "_fixtureinfo", None)
    for defs in getattr(info, "name2fixturedefs", {}).values():
        fixture = defs[-1]
        if fixture.scope == "module" or (fixture.scope == "session" and fixture.baseid == module):
            return True
    return False


def _encodable(text: str) -> str:
    """``text`` with lone surrogates written as escapes (``\\ud83d``)."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    """A report whose captured output or failure holds hostile text (a lone surrogate
    that a test put into a log line on purpose) is kept as escapes: pytest-xdist sends
    reports between processes as UTF-8 and stops the whole run on one it cannot encode."""
    report = yield
    report.sections = [(name, _encodable(text)) for name, text in report.sections]
    if report.longrepr is not None:
        text = report.longreprtext
        if _encodable(text) != text:
            report.longrepr = _encodable(text)
    return report


@pytest.fixture
def stateful_settings() -> settings:
    """Settings of the stateful machine test under the loaded profile."""
    if PROFILE == "ci":
        return settings(max_examples=STATEFUL_CI_EXAMPLES, stateful_step_count=STATEFUL_CI_STEPS)
    return settings()


@pytest.fixture
def fuzz_seed() -> int | None:
    """``FUZZ_SEED`` as an int, or None."""
    value = os.environ.get("FUZZ_SEED")
    return None if value in (None, "") else int(value)
