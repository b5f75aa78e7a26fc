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


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Skip the ``slow`` tests unless asked for."""
    if "slow" in (config.getoption("markexpr", "") or "") or os.environ.get("INBOX_CORE_SLOW"):
        return
    skip = pytest.mark.skip(reason="slow: run with -m slow or INBOX_CORE_SLOW=1")
    for item in items:
        if item.get_closest_marker("slow"):
            item.add_marker(skip)


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
