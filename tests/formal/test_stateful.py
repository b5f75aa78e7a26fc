"""The stateful invariant suite: I1-I12 and R23, R30-R33 after every step, against the oracle.

``pytest -m stateful`` selects it; ``nox -s fuzz`` runs it with the ``fuzz``
profile. The budget comes from the Hypothesis profile (tests/conftest.py).
"""

from __future__ import annotations

import pytest
from hypothesis import settings

from inbox_core.testing import InboxMachine, run_machine


@pytest.mark.stateful
def test_inbox_machine(stateful_settings: settings, fuzz_seed: int | None) -> None:
    """Every caller command, host report (with records, R30) and maintenance job (R31);
    I1-I12, R23, R30-R33 and the oracle after every step."""
    run_machine(InboxMachine, config=stateful_settings, seed=fuzz_seed)


SMOKE = settings(
    max_examples=30, stateful_step_count=30, derandomize=True, database=None, deadline=None
)


def test_inbox_machine_smoke() -> None:
    """A small, fixed run of the same machine in every profile (mutation testing relies on it)."""
    run_machine(InboxMachine, config=SMOKE)
