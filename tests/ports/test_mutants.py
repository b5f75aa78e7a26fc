"""R38 v4: the kit finds each seeded fault of its mutant set within 50 random runs, whatever
the seed, and shrinks it to at most three steps (issue 33).

The mutants (``inbox_core.port.mutants``, ``python -m inbox_core.port --mutant NAME``)
are played in this process (``InProcessPort``: every message still through its JSON
line), so a few seeds of every mutant cost seconds; more seeds run under the slow
marker. The shrunk run, saved as a vector, passes on the reference and fails on the
mutant.
"""

from __future__ import annotations

import pytest

from inbox_core.port.client import InProcessPort
from inbox_core.port.conformance import run_vector, vector_of
from inbox_core.port.mutants import MUTANTS, MutantPort
from inbox_core.port.sequences import search
from inbox_core.port.server import ReferencePort

BUDGET = 50
MAX_STEPS = 3


def _port(handler: ReferencePort) -> InProcessPort:
    port = InProcessPort(handler.handle, handler.name)
    port.handshake()
    return port


def _found(name: str, seed: int) -> None:
    port = _port(MutantPort(name))
    result = search(port, examples=BUDGET, seed=seed, max_steps=20)
    assert result.divergence is not None, f"{name} not found in {BUDGET} runs, seed {seed}"
    assert result.steps is not None
    assert 1 <= len(result.steps) <= MAX_STEPS, (name, seed, result.steps)
    vector = vector_of(result.steps, name=f"{name}-{seed}", description="found")
    assert run_vector(_port(ReferencePort()), vector).passed
    assert not run_vector(_port(MutantPort(name)), vector).passed


def test_r38_v4_the_mutant_set_has_at_least_eight_faults_of_every_kind() -> None:
    assert len(MUTANTS) >= 8
    kinds = {"no-turn-abort", "keep-inbox-discards", "open-step-at-pre-step", "fate-dropped"}
    kinds |= {"load-ignores-seq", "replay-error-seq-off-by-one", "first-error-wins"}
    assert kinds <= set(MUTANTS)  # events, commands, projection, folds, loads, D40


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("name", sorted(MUTANTS))
def test_r38_v4_each_seeded_fault_is_found_within_50_runs_and_shrunk(name: str, seed: int) -> None:
    _found(name, seed)


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(3, 25))
@pytest.mark.parametrize("name", sorted(MUTANTS))
def test_r38_v4_each_seeded_fault_is_found_on_many_seeds(name: str, seed: int) -> None:
    _found(name, seed)


def test_r38_v4_the_reference_itself_agrees_with_the_budget() -> None:
    """The same search on the reference finds nothing: a mutant's divergence is its fault."""
    for seed in (0, 1, 2):
        assert search(_port(ReferencePort()), examples=BUDGET, seed=seed, max_steps=20).runs == (
            BUDGET
        )
