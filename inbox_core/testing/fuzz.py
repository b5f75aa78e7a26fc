"""Running the machine: ``run_machine``, ``run_fuzz`` and their report."""

from __future__ import annotations

import re
import time
import traceback
from collections.abc import Callable
from typing import Final, cast

import attrs
import hypothesis
from hypothesis import HealthCheck, Phase, settings
from hypothesis.reporting import with_reporter
from hypothesis.stateful import (
    RuleBasedStateMachine,
    run_state_machine_as_test,
)

from inbox_core.testing.machine import InboxMachine

# typed here: some Hypothesis releases leave it unannotated (mypy --strict: no-untyped-call)
_run_as_test: Final = cast("Callable[..., None]", run_state_machine_as_test)


def run_machine(
    machine: Callable[[], RuleBasedStateMachine] = InboxMachine,
    *,
    config: settings | None = None,
    seed: int | None = None,
) -> None:
    """Run a state machine under ``config`` (default: the current profile), from ``seed``.

    Raises the (shrunk) failure, like any Hypothesis test.
    """

    def factory() -> RuleBasedStateMachine:
        return machine()

    if seed is not None:
        factory = hypothesis.seed(seed)(factory)
    _run_as_test(
        cast("type[RuleBasedStateMachine]", factory),
        settings=settings() if config is None else config,
    )


_INVARIANT_CALL: Final = re.compile(r"^[\s|]*state\.I\d+_\w+\(\)\s*$")


def describe_failure(error: BaseException) -> str:
    """A failure of the machine as text: the shrunk steps and the error, without the
    invariant calls Hypothesis prints after every step."""
    lines = "".join(traceback.format_exception(error)).splitlines()
    return "\n".join(line for line in lines if not _INVARIANT_CALL.match(line))


def fuzz_settings(examples: int, steps: int) -> settings:
    """The profile of a ``run_fuzz`` run: the budgets, no deadline, no example database,
    randomized (the seed comes from ``run_machine``), no health checks, no replay blob."""
    return settings(
        max_examples=examples,
        stateful_step_count=steps,
        deadline=None,
        database=None,
        derandomize=False,
        print_blob=False,
        phases=(Phase.generate, Phase.shrink),
        suppress_health_check=list(HealthCheck),
    )


@attrs.frozen
class FuzzSummary:
    """What ``run_fuzz`` did: examples run (at most the budget), steps per example,
    wall time, and the shrunk failure report (None when every example passed)."""

    examples: int
    steps: int
    elapsed_seconds: float
    failure: str | None


def run_fuzz(
    *,
    examples: int,
    steps: int,
    seed: int,
    progress: Callable[[int, int], None] | None = None,
    machine: Callable[[], InboxMachine] = InboxMachine,
) -> FuzzSummary:
    """Run the stateful machine with these budgets, deterministically from ``seed``.

    ``progress(done, total)`` is called as examples start (``total`` is
    ``examples``) and once at the end. A failure does not raise: its shrunk
    command sequence and error are returned in ``FuzzSummary.failure``.
    """
    done = 0

    def counted() -> InboxMachine:
        nonlocal done
        done += 1
        if progress is not None and done <= examples:
            progress(done, examples)
        return machine()

    config = fuzz_settings(examples, steps)
    lines: list[str] = []
    failure: str | None = None
    start = time.perf_counter()
    with with_reporter(lambda value: lines.append(str(value))):
        try:
            run_machine(counted, config=config, seed=seed)
        except Exception as error:
            failure = "\n".join([*lines, describe_failure(error)]).strip()
    elapsed = time.perf_counter() - start
    ran = min(done, examples)
    if progress is not None:
        progress(ran, examples)
    return FuzzSummary(ran, steps, elapsed, failure)
