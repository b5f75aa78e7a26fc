"""Inbox edits through the reducer: splice, replace, remove, clear, move (R5-R8, D1-D4,
D10, D14, D18, D19)."""

from __future__ import annotations

import pytest

from inbox_core import (
    AbortedReason,
    AwaitPreStep,
    AwaitStep,
    AwaitTurnStopping,
    Cancel,
    Clear,
    CompletedReason,
    Entry,
    InboxClaimed,
    InboxDiscarded,
    InboxInserted,
    InboxMoved,
    InboxSpliced,
    Move,
    Remove,
    Replace,
    Splice,
    StatusChanged,
    SteerUnavailable,
    TurnEnded,
    TurnStarted,
    UserCause,
)
from tests.core.helpers import (
    Run,
    canceled,
    claimed,
    followup,
    inject,
    inserted,
    msg,
    queue,
    steer,
)


def quiet(mid: str, *contexts: str) -> Entry:
    return Entry(msg(mid), tuple(msg(c) for c in contexts), False)


def parked(*ids: str) -> Run:
    """An idle agent with quiet next-turn entries ``ids`` (no turn opened)."""
    run = Run()
    for mid in ids:
        run(queue(msg(mid)))
    return run


def ids(entries: tuple[Entry, ...]) -> list[str]:
    return [e.message.id for e in entries]


# ----------------------------------------------------------------------- R5


def test_r5_splice_negative_start_counts_from_the_end():
    """R5: Splice(start=-1, delete=1) removes the last entry; the record is normalized."""
    run = parked("a", "b", "c")
    t = run(Splice("next-turn", -1, 1, ()))
    assert t.durable == (canceled("next-turn", 2, 1),)
    assert t.notifications == (InboxDiscarded(msg("c")),)
    assert ids(t.state.next_turn) == ["a", "b"]


def test_r5_splice_negative_start_beyond_the_length_clamps_to_zero():
    """R5: a start before the head clamps to 0."""
    run = parked("a", "b")
    t = run(Splice("next-turn", -10, 1, (quiet("x"),)))
    assert t.durable == (canceled("next-turn", 0, 1, quiet("x")),)
    assert ids(t.state.next_turn) == ["x", "b"]


def test_r5_splice_start_and_delete_count_are_clamped():
    """R5: start past the end clamps to len; delete_count clamps to [0, len - start]."""
    run = parked("a", "b", "c")
    t = run(Splice("next-turn", 99, 5, (quiet("x"),)))
    assert t.durable == (inserted("next-turn", 3, quiet("x")),)
    t = run(Splice("next-turn", 1, -3, (quiet("y"),)))
    assert t.durable == (inserted("next-turn", 1, quiet("y")),)
    t = run(Splice("next-turn", 3, 100, ()))
    assert t.durable == (canceled("next-turn", 3, 2),)
    assert ids(t.state.next_turn) == ["a", "y", "b"]


@pytest.mark.parametrize(
    "command",
    [
        Splice("next-turn", 0, 0, ()),
        Splice("next-turn", 5, 3, ()),
        Splice("next-turn", -1, 0, ()),
        Splice("next-step", 0, 4, ()),
        Splice("next-turn", 1, -1, ()),
    ],
)
def test_r5_noop_splice_records_and_announces_nothing(command):
    """R5: a splice that removes nothing and inserts nothing changes nothing."""
    run = parked("a", "b")
    state = run.state
    t = run(command)
    assert t.durable == ()
    assert t.notifications == ()
    assert t.state is state


def test_r5_r6_d18_splice_announces_discarded_first_then_inserted():
    """R5, R6, D18: removed entries discarded (contexts first), then inserted ones."""
    run = Run()
    run(queue(msg("a"), [msg("ac")]))
    run(queue(msg("b")))
    run(queue(msg("c")))
    new = (quiet("x", "xc"), quiet("y"))
    t = run(Splice("next-turn", 0, 2, new))
    assert t.durable == (InboxSpliced("next-turn", 0, 2, new, "canceled"),)
    assert t.notifications == (
        InboxDiscarded(msg("ac")),
        InboxDiscarded(msg("a")),
        InboxDiscarded(msg("b")),
        InboxInserted(msg("xc")),
        InboxInserted(msg("x")),
        InboxInserted(msg("y")),
    )
    assert ids(t.state.next_turn) == ["x", "y", "c"]


def test_r7_append_and_prepend_are_splices_at_the_ends():
    """R7: append = splice at len, prepend = splice at 0; both pure insertions."""
    run = parked("a")
    t = run(Splice("next-turn", 0, 0, (quiet("p"),)))
    assert t.durable == (inserted("next-turn", 0, quiet("p")),)
    t = run(Splice("next-turn", run.state.inbox.size("next-turn"), 0, (quiet("z"),)))
    assert t.durable == (inserted("next-turn", 2, quiet("z")),)
    assert ids(run.state.next_turn) == ["p", "a", "z"]


def test_d14_splice_accepts_any_entry_in_either_list():
    """D14: a quiet entry with contexts may be spliced into next-step (unlike inject)."""
    run = Run()
    e = quiet("x", "xc")
    t = run(Splice("next-step", 0, 0, (e,)))
    assert t.durable == (inserted("next-step", 0, e),)
    assert t.state.next_step == (e,)
    assert t.state.status == "idle"


# ----------------------------------------------------------------------- R7


def test_r7_replace_changing_identity_is_one_canceled_splice_discarded_then_inserted():
    """R7, D4: one splice removes the old entry (canceled) and inserts the new one in place
    with the old contexts and wakeup; old discarded, new inserted; contexts not announced."""
    run = Run()
    run(queue(msg("a")))
    run(queue(msg("b"), [msg("bc")]))
    run(queue(msg("c")))
    new = msg("b2", "replacement")
    t = run(Replace("b", new))
    expected = Entry(new, (msg("bc"),), False)
    assert t.durable == (InboxSpliced("next-turn", 1, 1, (expected,), "canceled"),)
    assert t.notifications == (InboxDiscarded(msg("b")), InboxInserted(new))
    assert ids(t.state.next_turn) == ["a", "b2", "c"]
    assert t.state.next_turn[1] == expected
    assert "b" not in t.state.inbox
    assert "bc" in t.state.inbox
    assert t.state.inbox.find("b2").position == 1


def test_r7_replace_keeping_the_id_still_announces_discarded_then_inserted():
    """R7, I6: replacing with the same id is allowed and announced as a pair."""
    run = Run()
    run(followup(msg("run")))
    run(steer(msg("s")))
    new = msg("s", "edited")
    t = run(Replace("s", new))
    assert t.durable == (InboxSpliced("next-step", 0, 1, (Entry(new, (), True),), "canceled"),)
    assert t.notifications == (InboxDiscarded(msg("s")), InboxInserted(new))
    assert t.state.next_step == (Entry(new, (), True),)


@pytest.mark.parametrize("target_id", ["missing", "bc"])
def test_r7_d3_replace_of_an_id_that_is_not_a_pending_entry_is_a_noop(target_id):
    """R7, D3: unknown ids and context ids are not entries: no event, no notification."""
    run = Run()
    run(queue(msg("b"), [msg("bc")]))
    state = run.state
    t = run(Replace(target_id, msg("new")))
    assert (t.durable, t.notifications) == ((), ())
    assert t.state is state


def test_r7_remove_cancels_one_entry_with_its_contexts():
    """R3, R6, R7: remove records a canceled splice at the entry's position; the contexts
    are discarded with their message, each announced (contexts first)."""
    run = Run()
    run(queue(msg("a")))
    run(queue(msg("b"), [msg("bc")]))
    t = run(Remove("b"))
    assert t.durable == (canceled("next-turn", 1, 1),)
    assert t.notifications == (InboxDiscarded(msg("bc")), InboxDiscarded(msg("b")))
    assert ids(t.state.next_turn) == ["a"]
    assert "bc" not in t.state.inbox


@pytest.mark.parametrize("target_id", ["missing", "bc"])
def test_r7_d3_remove_of_an_id_that_is_not_a_pending_entry_is_a_noop(target_id):
    """R7, D3: remove of an unknown id or a context id changes nothing."""
    run = Run()
    run(queue(msg("b"), [msg("bc")]))
    state = run.state
    t = run(Remove(target_id))
    assert (t.durable, t.notifications) == ((), ())
    assert t.state is state


def test_r7_remove_running_entry_of_next_step():
    """R7: remove works in next-step too, while a turn runs."""
    run = Run()
    run(followup(msg("run")))
    run(inject(msg("i")))
    run(steer(msg("s")))
    t = run(Remove("s"))
    assert t.durable == (canceled("next-step", 1, 1),)
    assert t.notifications == (InboxDiscarded(msg("s")),)
    assert t.state.next_step == (quiet("i"),)


def test_r7_d10_clear_cancels_next_step_then_next_turn_without_cancel_requested():
    """R7, D10: Clear records next-step then next-turn canceled splices; no abort."""
    run = Run()
    run(followup(msg("run")))
    run(queue(msg("q1"), [msg("qc")]))
    run(followup(msg("q2")))
    run(inject(msg("i")))
    t = run(Clear())
    assert t.durable == (canceled("next-step", 0, 1), canceled("next-turn", 0, 2))
    assert t.notifications == (
        InboxDiscarded(msg("i")),
        InboxDiscarded(msg("qc")),
        InboxDiscarded(msg("q1")),
        InboxDiscarded(msg("q2")),
    )
    assert t.state.abort_cause is None
    assert t.state.awaiting == AwaitPreStep(1, 1, (msg("run"),))
    state = t.state
    t = run(Clear())
    assert (t.durable, t.notifications) == ((), ())
    assert t.state is state


# ----------------------------------------------------------------------- R8


def test_r8_d19_promotion_moves_the_entry_to_next_step_and_makes_it_waking():
    """R6, R8, D19: removal (moved) + insertion at the end of next-step; per-message moved
    notices (contexts first); the entry becomes waking and a completed step claims it."""
    run = Run()
    run(followup(msg("run")))
    run.enter()
    run(inject(msg("i")))
    run(queue(msg("q"), [msg("qc")]))
    run(queue(msg("q2")))
    t = run(Move("q", "next-step"))
    moved = Entry(msg("q"), (msg("qc"),), True)
    assert t.durable == (
        InboxSpliced("next-turn", 0, 1, (), "moved"),
        inserted("next-step", 1, moved),
    )
    assert t.notifications == (
        InboxMoved(msg("qc"), "next-step"),
        InboxMoved(msg("q"), "next-step"),
    )
    assert t.state.next_step == (quiet("i"), moved)
    assert ids(t.state.next_turn) == ["q2"]
    assert t.state.awaiting == AwaitStep(1, 1)
    t = run.finish()
    assert t.state.awaiting == AwaitPreStep(1, 2, (msg("i"), msg("qc"), msg("q")))
    assert t.notifications == (
        InboxClaimed(msg("i"), 1),
        InboxClaimed(msg("qc"), 1),
        InboxClaimed(msg("q"), 1),
    )


def test_r8_promotion_while_turn_stopping_is_allowed():
    """R8: AwaitTurnStopping can still reach a boundary, so promotion succeeds."""
    run = Run()
    run(followup(msg("run")))
    run.step_through()
    run(queue(msg("q")))
    assert run.state.awaiting == AwaitTurnStopping(1)
    run(Move("q", "next-step"))
    t = run.stop()
    assert t.durable == (claimed("next-step", 1),)
    assert t.state.awaiting == AwaitPreStep(1, 2, (msg("q"),))


def test_r8_move_to_next_turn_keeps_the_wakeup_flag():
    """R8, D19: next-step -> next-turn keeps id and wakeup; appended at the end."""
    run = Run()
    run(followup(msg("run")))
    run(queue(msg("q")))
    run(steer(msg("s")))
    t = run(Move("s", "next-turn"))
    assert t.durable == (
        InboxSpliced("next-step", 0, 1, (), "moved"),
        inserted("next-turn", 1, Entry(msg("s"), (), True)),
    )
    assert t.notifications == (InboxMoved(msg("s"), "next-turn"),)
    assert t.state.next_turn == (quiet("q"), Entry(msg("s"), (), True))
    assert t.state.next_step == ()


def test_r8_demotion_while_idle_of_a_quiet_injection_stays_idle():
    """R8: a quiet entry moved to next-turn while idle wakes nothing."""
    run = Run()
    run(inject(msg("i")))
    t = run(Move("i", "next-turn"))
    assert t.durable == (
        InboxSpliced("next-step", 0, 1, (), "moved"),
        inserted("next-turn", 0, quiet("i")),
    )
    assert t.state.status == "idle"


def test_r8_steer_unavailable_while_idle_changes_nothing():
    """R8, R26: promotion needs a live turn; idle -> SteerUnavailable, nothing changes."""
    run = parked("q")
    run.rejects(Move("q", "next-step"), SteerUnavailable)
    assert run.state.next_turn == (quiet("q"),)


def test_r8_steer_unavailable_in_an_aborted_turn_changes_nothing():
    """R8, R23: an aborted turn cannot reach a step boundary -> SteerUnavailable."""
    run = Run()
    run(followup(msg("run")))
    run.enter()
    run(Cancel(UserCause(), keep_inbox=True))
    run(queue(msg("q")))
    run.rejects(Move("q", "next-step"), SteerUnavailable)
    t = run.finish()
    assert t.durable[-1] == TurnEnded(1, AbortedReason(UserCause()))
    assert t.state.next_turn == (quiet("q"),)


@pytest.mark.parametrize(
    ("message_id", "target"),
    [("missing", "next-step"), ("q", "next-turn"), ("qc", "next-step"), ("missing", "next-turn")],
)
def test_r8_d1_d2_move_noops_come_before_steer_unavailable(message_id, target):
    """D1, D2, D3: unknown id, same list, or context id -> no-op, even while idle."""
    run = Run()
    run(queue(msg("q"), [msg("qc")]))
    state = run.state
    t = run(Move(message_id, target))
    assert (t.durable, t.notifications) == ((), ())
    assert t.state is state


def test_r13_replace_while_idle_keeps_a_quiet_entry_quiet():
    """R13: replace keeps wakeup, so a parked entry stays parked."""
    run = parked("q")
    t = run(Replace("q", msg("q2")))
    assert not any(isinstance(e, TurnStarted) for e in t.durable)
    assert StatusChanged("running") not in t.notifications
    assert t.state.next_turn == (quiet("q2"),)


def test_r7_edits_on_a_running_turn_leave_the_turn_alone():
    """R7: edits never touch awaiting or the claimed batch; the turn ends normally."""
    run = Run()
    run(followup(msg("run")))
    run(queue(msg("q")))
    run(Replace("q", msg("r")))
    run(Remove("r"))
    assert run.state.awaiting == AwaitPreStep(1, 1, (msg("run"),))
    run.run_turn_to_end()
    assert run.log[-1] == TurnEnded(1, CompletedReason())
