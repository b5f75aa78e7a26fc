"""Goal rounds as a fold over admitted goal messages (R28, D13)."""

from __future__ import annotations

from inbox_core import (
    Enter,
    GoalSource,
    PluginSource,
    PreStepDecided,
    Reject,
    Remove,
    ToolSource,
    goal_rounds,
)
from tests.core.helpers import Run, followup, inject, msg, queue, steer


def goal(mid: str, goal_id: str = "g", round_: int = 1):
    return msg(mid, source=GoalSource(goal_id, round_))


def test_r28_admitted_goal_messages_count_per_goal_id():
    """R28: each admitted goal continuation counts one round for its goal."""
    run = Run()
    run(followup(goal("g1", "g", 1)))
    run(followup(goal("h1", "h", 1)))
    run.run_turn_to_end()
    run(followup(goal("g2", "g", 2)))
    while run.state.status == "running":
        run.run_turn_to_end()
    assert goal_rounds(run.log) == {"g": 2, "h": 1}


def test_r28_pending_queued_injected_goal_messages_never_count():
    """R28: queued, injected or steered goal messages still pending do not count."""
    run = Run()
    run(queue(goal("q", "g", 1)))
    run(inject(goal("i", "g", 2)))
    run(followup(msg("run")))  # claims i and q: not yet admitted
    run(steer(goal("s", "g", 3)))
    assert goal_rounds(run.log) == {}
    run.enter()
    assert goal_rounds(run.log) == {"g": 2}


def test_r28_discarded_goal_messages_never_count():
    """R28: a goal message removed from the inbox never counts."""
    run = Run()
    run(followup(msg("run")))
    run(queue(goal("q", "g", 1)))
    run(Remove("q"))
    run.run_turn_to_end()
    assert goal_rounds(run.log) == {}


def test_r28_rejected_goal_messages_never_count():
    """R28: a goal message claimed by a turn that the pre-step decision rejects."""
    run = Run()
    run(followup(goal("g1", "g", 1)))
    run(PreStepDecided(1, 1, Reject()))
    assert goal_rounds(run.log) == {}


def test_r28_a_goal_message_dropped_by_the_decision_does_not_count():
    """R28: the final batch decides; a dropped goal message is not admitted."""
    run = Run()
    run(followup(goal("g1", "g", 1), [goal("ctx", "other", 1)]))
    run(PreStepDecided(1, 1, Enter((msg("rewritten"), goal("ctx", "other", 1)))))
    assert goal_rounds(run.log) == {"other": 1}


def test_r28_d13_counts_admissions_not_the_highest_round():
    """D13: a single admitted round-5 message counts one round."""
    run = Run()
    run(followup(goal("g5", "g", 5)))
    run.enter()
    assert goal_rounds(run.log) == {"g": 1}


def test_r28_inbox_events_and_other_sources_never_change_goal_state():
    """R28: only user/message events with a goal source count."""
    run = Run()
    run(queue(goal("q", "g", 1)))
    run(followup(msg("u", source=PluginSource("p"))))
    run(
        PreStepDecided(
            1, 1, Enter((msg("u", source=PluginSource("p")), msg("t", source=ToolSource("c"))))
        )
    )
    spliced = [e for e in run.log if e.type == "agent/inbox/spliced"]
    assert spliced
    assert goal_rounds(spliced) == {}
    assert goal_rounds(run.log) == {}
    assert goal_rounds([]) == {}
