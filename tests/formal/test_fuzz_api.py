"""``run_fuzz`` (the entry point of ``inbox-core fuzz``) and the machine's extension points."""

from __future__ import annotations

from collections.abc import Sequence

import attrs
import pytest

from inbox_core import (
    AgentState,
    Command,
    DurableEvent,
    InboxCoreError,
    InboxDiscarded,
    Transition,
    reduce,
    replay,
)
from inbox_core.testing import FuzzSummary, InboxMachine, describe_failure, run_fuzz


def test_run_fuzz_is_deterministic_and_reports_progress() -> None:
    calls: list[tuple[int, int]] = []
    first = run_fuzz(examples=6, steps=10, seed=3, progress=lambda d, t: calls.append((d, t)))
    assert first.failure is None
    assert (first.examples, first.steps) == (6, 10)
    assert first.elapsed_seconds > 0
    assert calls[0] == (1, 6)
    assert calls[-1] == (6, 6)
    assert all(total == 6 and 0 < done <= 6 for done, total in calls)

    seen: list[list[str]] = []

    class Recording(InboxMachine):
        def __init__(self) -> None:
            super().__init__()
            seen.append([])

        def on_transition(self, command: Command, transition: Transition) -> None:
            seen[-1].append(type(command).__name__)

    run_fuzz(examples=4, steps=8, seed=11, machine=Recording)
    again, seen[:] = list(seen), []
    run_fuzz(examples=4, steps=8, seed=11, machine=Recording)
    assert seen == again


class DropsDiscards(InboxMachine):
    """A port that forgets to announce discarded messages (R6)."""

    def apply(self, command: Command) -> Transition:
        t = reduce(self.state, command)
        kept = tuple(n for n in t.notifications if not isinstance(n, InboxDiscarded))
        return Transition(t.state, t.durable, kept)


def test_run_fuzz_reports_a_shrunk_failure_instead_of_raising() -> None:
    summary = run_fuzz(examples=200, steps=20, seed=1, machine=DropsDiscards)
    assert isinstance(summary, FuzzSummary)
    assert summary.failure is not None
    assert "oracle disagrees" in summary.failure or "I6" in summary.failure
    assert "state = DropsDiscards()" in summary.failure
    assert "state.I1_unique_pending_ids()" not in summary.failure  # invariant calls filtered


class ForgetsAfterRejection(InboxMachine):
    """A port whose state moves on although the command was rejected (I11)."""

    check_every_prefix = False

    def current_state(self) -> AgentState:
        return attrs.evolve(self.state, last_turn=self.state.last_turn + 1)


class NoOracle(InboxMachine):
    """Extension points: no oracle, every prefix off, replay through a wrapper."""

    check_every_prefix = False
    replays = 0

    def make_oracle(self) -> None:
        return None

    def replay_log(self, events: Sequence[DurableEvent]) -> AgentState:
        NoOracle.replays += 1
        return replay(events)


def test_machine_catches_a_rejection_that_changes_state() -> None:
    summary = run_fuzz(examples=10, steps=10, seed=2, machine=ForgetsAfterRejection)
    assert summary.failure is not None
    assert "I11" in summary.failure


def test_machine_runs_without_oracle_and_prefix_checks() -> None:
    assert run_fuzz(examples=5, steps=15, seed=5, machine=NoOracle).failure is None
    assert NoOracle.replays > 0


def test_describe_failure_keeps_the_error() -> None:
    try:
        raise InboxCoreError("boom")
    except InboxCoreError as error:
        text = describe_failure(error)
    assert "InboxCoreError: boom" in text


@pytest.mark.parametrize("machine", [InboxMachine])
def test_machine_testcase_is_usable_by_ports(machine: type[InboxMachine]) -> None:
    assert hasattr(machine, "TestCase")
    rules = {name for name in dir(machine) if name.startswith("I") and name[1].isdigit()}
    assert {r.split("_")[0] for r in rules} == {f"I{i}" for i in range(1, 13)}
