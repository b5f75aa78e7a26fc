"""``fates(events)``: the one current fate of every accepted MessageId (R32, R27, R23).

Fates: pending (which list), claimed (turn, step) while the decision is awaited, admitted
(turn, step), canceled, dropped by a decision (turn, step), consumed by a turn that ended
before any decision (turn, reason). A random session checks ``fates`` against a live
oracle that knows which command decided what.
"""

from __future__ import annotations

import random
from collections import Counter
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from inbox_core import (
    AbortedReason,
    AdmittedFate,
    AgentState,
    Cancel,
    CanceledFate,
    ClaimedFate,
    Clear,
    ConsumedFate,
    Continue,
    Dispose,
    DroppedFate,
    Enter,
    Entry,
    ErrorReason,
    HookCause,
    InboxClaimed,
    InboxCoreError,
    InboxDiscarded,
    InboxInserted,
    InterruptedReason,
    MaxTokens,
    MessageAdmitted,
    Move,
    PendingFate,
    PreStepDecided,
    PreStepFailed,
    Reject,
    Remove,
    Replace,
    Resume,
    Splice,
    UserCause,
    UserMessage,
    fates,
    reduce,
    replay,
)
from inbox_core.state import Orphaned, PreStep
from tests.core.helpers import (
    Run,
    busy_session,
    followup,
    inject,
    msg,
    queue,
    steer,
)
from tests.core.test_transition_table import CRASH, next_command


def accepted_ids(log: list[Any]) -> set[str]:
    """Every id the log accepted: inserted into a list (contexts included) or admitted."""
    ids: set[str] = set()
    for event in log:
        for entry in getattr(event, "inserted", ()):
            ids.update(m.id for m in entry.messages)
        if isinstance(event, MessageAdmitted):
            ids.add(event.message.id)
    return ids


def pending_of(state: AgentState) -> dict[str, PendingFate]:
    return {
        m.id: PendingFate(target)
        for target, entries in (("next-turn", state.next_turn), ("next-step", state.next_step))
        for entry in entries
        for m in entry.messages
    }


def check_whole(log: list[Any]) -> dict[str, Any]:
    """R32: one fate per accepted id, no more; the pending ones are the replayed lists."""
    result = fates(log)
    assert set(result) == accepted_ids(log)
    pending = {k: v for k, v in result.items() if isinstance(v, PendingFate)}
    assert pending == pending_of(replay(log))
    return result


def crashed(run: Run) -> Run:
    return Run(replay(run.log), list(run.log))


# ------------------------------------------------------------------ pending


def test_r32_pending_names_its_list_contexts_included():
    """R32: pending (which list); an entry's contexts are pending with it."""
    run = Run()
    run(queue(msg("q"), [msg("qc")]))
    run(inject(msg("i")))
    result = check_whole(run.log)
    assert result == {
        "qc": PendingFate("next-turn"),
        "q": PendingFate("next-turn"),
        "i": PendingFate("next-step"),
    }


def test_r32_pending_after_a_move_is_in_the_target_list():
    """R32, R8: a moved message is still pending, in the list it moved to."""
    run = Run()
    run(followup(msg("a")))
    run(queue(msg("q")))
    run(Move("q", "next-step"))
    assert check_whole(run.log)["q"] == PendingFate("next-step")
    run(Move("q", "next-turn"))
    assert check_whole(run.log)["q"] == PendingFate("next-turn")


def test_r32_replace_keeping_the_id_is_still_pending_replace_to_a_new_id_cancels():
    """R32, R7: a replace under its own id keeps the id pending; to a new id the old one is
    canceled and the new one pending."""
    run = Run()
    run(queue(msg("q")))
    run(queue(msg("r")))
    run(Replace("q", msg("q", "rewritten")))
    run(Replace("r", msg("r2")))
    result = check_whole(run.log)
    assert result["q"] == PendingFate("next-turn")
    assert result["r"] == CanceledFate()
    assert result["r2"] == PendingFate("next-turn")


def test_r32_restored_by_resume_then_claimed_by_the_next_turn():
    """R32, R27, D23: an undecided claim restored by Resume goes back to its lists; the
    waking work among it opens turn 2 at once, whose claim takes it again."""
    live = Run()
    live(inject(msg("i")))
    live(queue(msg("q")))
    live(steer(msg("s")))  # turn 1 claims i, s and q
    run = crashed(live)
    assert fates(run.log)["q"] == ClaimedFate(1, 1)  # orphaned log: still awaited
    t = run(Resume())
    result = check_whole(run.log)
    assert run.state.status == "running"
    assert result["i"] == ClaimedFate(2, 1)
    assert result["s"] == ClaimedFate(2, 1)
    assert result["q"] == ClaimedFate(2, 1)
    assert any(isinstance(n, InboxClaimed) for n in t.notifications)


def test_r32_restored_quiet_claim_is_pending():
    """R32, R27: a restored quiet between-steps claim is pending (next-step)."""
    live = Run()
    live(followup(msg("a")))
    live.enter()
    live(inject(msg("i")))
    live.finish(Continue())
    run = crashed(live)
    assert fates(run.log)["i"] == ClaimedFate(1, 2)
    run(Resume())
    result = check_whole(run.log)
    assert result["i"] == PendingFate("next-step")
    assert result["a"] == AdmittedFate(1, 1)


# ------------------------------------------------------------------ claimed


def test_r32_claimed_while_the_decision_is_awaited_live():
    """R32: claimed (turn, step) while the pre-step decision is awaited; contexts too."""
    run = Run()
    run(inject(msg("i")))
    run(followup(msg("a"), [msg("ac")]))
    result = check_whole(run.log)
    assert result == {
        "i": ClaimedFate(1, 1),
        "ac": ClaimedFate(1, 1),
        "a": ClaimedFate(1, 1),
    }


def test_r32_claimed_at_a_later_boundary_names_that_step():
    run = Run()
    run(followup(msg("a")))
    run.enter()
    run(steer(msg("s")))
    run.finish(Continue())
    assert check_whole(run.log)["s"] == ClaimedFate(1, 2)


def test_r32_claimed_in_an_orphaned_log_before_resume():
    """R32: a crash-orphaned turn's undecided claim is claimed until Resume, also when the
    turn was aborted (the decision is still the awaited answer)."""
    live = Run()
    live(followup(msg("a")))
    assert fates(crashed(live).log)["a"] == ClaimedFate(1, 1)
    live(Cancel(UserCause(), keep_inbox=True))
    run = crashed(live)
    assert fates(run.log)["a"] == ClaimedFate(1, 1)
    run(Resume())
    assert check_whole(run.log)["a"] == ConsumedFate(1, AbortedReason(UserCause()))


# ----------------------------------------------------------------- admitted


def test_r32_admitted_names_turn_and_step_including_a_decision_addition():
    """R32, R16: admitted (turn, step); a message the decision added is accepted too."""
    run = Run()
    run(followup(msg("a")))
    run(PreStepDecided(1, 1, Enter((msg("a"), msg("added")))))
    run(steer(msg("s")))
    run.finish(Continue())
    run(PreStepDecided(1, 2, Enter((msg("s", "rewritten"),))))
    result = check_whole(run.log)
    assert result == {
        "a": AdmittedFate(1, 1),
        "added": AdmittedFate(1, 1),
        "s": AdmittedFate(1, 2),
    }


# ----------------------------------------------------------------- canceled


@pytest.mark.parametrize(
    "command",
    [Remove("q"), Clear(), Cancel(UserCause()), Dispose(), Splice("next-turn", 0, 1, ())],
    ids=["remove", "clear", "cancel", "dispose", "splice"],
)
def test_r32_canceled_by_every_kind_of_removal(command):
    """R32, R7, R22, R25: removed with outcome canceled."""
    run = Run()
    run(queue(msg("q")))
    run(command)
    assert check_whole(run.log)["q"] == CanceledFate()


def test_r32_canceled_during_a_turn_keeps_the_claimed_ones_claimed():
    """R32, R22, R23: a cancel clears pending input (canceled) but the claim awaiting its
    decision is not canceled: it is consumed when the aborted turn closes."""
    run = Run()
    run(followup(msg("a")))
    run(queue(msg("q")))
    run(Cancel(HookCause("h")))
    result = check_whole(run.log)
    assert result == {"a": ClaimedFate(1, 1), "q": CanceledFate()}
    run(PreStepDecided(1, 1, Enter((msg("a"),))))
    assert check_whole(run.log)["a"] == ConsumedFate(1, AbortedReason(HookCause("h")))


# ------------------------------------------------------------------ dropped


def test_r32_dropped_by_reject_names_the_step_it_was_asked_for():
    """R32: a Reject drops the claim (turn, step asked for), also at a later boundary."""
    run = Run()
    run(followup(msg("a")))
    run(PreStepDecided(1, 1, Reject()))
    assert check_whole(run.log)["a"] == DroppedFate(1, 1)
    run(followup(msg("b")))
    run.enter()
    run(inject(msg("i")))
    run.finish(Continue())
    run(PreStepDecided(2, 2, Reject()))
    result = check_whole(run.log)
    assert result["b"] == AdmittedFate(2, 1)
    assert result["i"] == DroppedFate(2, 2)


def test_r32_dropped_by_an_enter_that_leaves_it_out():
    """R32, R16: an Enter without a claimed message drops it at that step; an empty Enter
    at the first boundary drops the whole claim (the turn ends with no step)."""
    run = Run()
    run(inject(msg("i")))
    run(followup(msg("a"), [msg("ac")]))
    run(PreStepDecided(1, 1, Enter((msg("a"),))))
    result = check_whole(run.log)
    assert result == {"i": DroppedFate(1, 1), "ac": DroppedFate(1, 1), "a": AdmittedFate(1, 1)}
    run.finish()
    run.stop()
    run(followup(msg("b")))
    run(PreStepDecided(2, 1, Enter(())))
    assert check_whole(run.log)["b"] == DroppedFate(2, 1)


# ----------------------------------------------------------------- consumed


def test_r32_consumed_by_a_pre_step_failure():
    """R32, R23: consumed (turn, error reason) by a pre-step failure, at any boundary."""
    run = Run()
    run(followup(msg("a")))
    run(PreStepFailed(1, 1, "boom", "B"))
    assert check_whole(run.log)["a"] == ConsumedFate(1, ErrorReason("boom", "B"))
    run(followup(msg("b")))
    run.enter()
    run(steer(msg("s")))
    run.finish(MaxTokens())
    run(PreStepFailed(2, 2, "late", "L"))
    result = check_whole(run.log)
    assert result["b"] == AdmittedFate(2, 1)
    assert result["s"] == ConsumedFate(2, ErrorReason("late", "L"))


def test_r32_consumed_by_an_abort():
    """R32, R23: consumed (turn, aborted {cause}) by an abort while the decision was
    pending; the failure report of the aborted turn does not make it an error."""
    run = Run()
    run(followup(msg("a")))
    run(Cancel(UserCause(), keep_inbox=True))
    run(PreStepFailed(1, 1, "ignored", "I"))
    assert check_whole(run.log)["a"] == ConsumedFate(1, AbortedReason(UserCause()))


# -------------------------------------------------------------- busy session


def test_r32_busy_session_fates_and_counts():
    """R32: over ``busy_session()`` every accepted id has exactly one fate, and the counts
    per kind are those of the session."""
    run = busy_session()
    result = check_whole(run.log)
    assert Counter(f.kind for f in result.values()) == {
        "admitted": 5,
        "dropped": 2,
        "canceled": 4,
        "consumed": 2,
    }
    assert result["f2b"] == ConsumedFate(3, ErrorReason("hook", "H"))
    assert result["g"] == ConsumedFate(4, AbortedReason(UserCause()))
    assert result["f1"] == DroppedFate(2, 1)
    assert result["c1"] == DroppedFate(2, 1)
    assert result["q2"] == AdmittedFate(1, 2)


def test_r32_every_prefix_of_the_busy_session_has_one_fate_per_id():
    """R32, I12: every crash point of the busy session (appends are atomic per command, so
    a move is never cut between its two splices) has one fate per id."""
    log = busy_session().log
    for cut in range(len(log) + 1):
        if cut and getattr(log[cut - 1], "outcome", None) == "moved":
            continue  # inside one command's append
        check_whole(log[:cut])


# --------------------------------------------------------------- D9 and loss


def test_r27_r32_d9_a_clashing_context_stays_out_and_the_primary_is_restored():
    """R27 ("No accepted message is ever lost"), R32, D9: after a crash between claim and
    decision, a context whose id was sent again stays out of the restore (the newer one
    keeps the id) and the entry's primary message is restored; no fate says "claimed by
    turn 1" once Resume closed it."""
    live = Run()
    live(followup(msg("a"), [msg("c")]))  # turn 1 claims c, a
    live(queue(msg("c")))  # c is pending again
    run = crashed(live)
    run(Resume())
    result = fates(run.log)
    # a goes back to the head of next-turn without c; waking, it opens turn 2 at once
    assert run.state.awaiting.batch == (msg("a"),)
    assert run.state.next_turn == (Entry(msg("c"), (), False),)
    stale = {k: v for k, v in result.items() if isinstance(v, ClaimedFate) and v.turn == 1}
    assert stale == {}
    assert set(result) == {"a", "c"}


def test_r27_r32_d9_an_unrestorable_entry_is_consumed_by_the_interrupted_turn():
    """R32, D9: when the primary's id was sent again, the old entry is not restored; its
    context's fate is consumed by the interrupted turn, never "claimed"."""
    live = Run()
    live(followup(msg("a"), [msg("c")]))  # turn 1 claims c, a
    live(queue(msg("a")))  # a is pending again
    run = crashed(live)
    run(Resume())
    result = fates(run.log)
    assert result["c"] == ConsumedFate(1, InterruptedReason())
    assert isinstance(result["a"], (PendingFate, ClaimedFate))
    assert not (isinstance(result["a"], ClaimedFate) and result["a"].turn == 1)


# ------------------------------------------------------------- random oracle


class FateOracle:
    """The fates the brief predicts, kept live from the commands and their outcomes."""

    def __init__(self) -> None:
        self.fates: dict[str, Any] = {}
        self.unsupported = False
        self.superseded: set[str] = set()  # claimed ids sent again before the decision

    def observe(self, before: AgentState, command: Any, transition: Any) -> None:
        phase, after = before.phase, transition.state
        claim = self.claim_of(before)
        if isinstance(phase, PreStep) and isinstance(command, PreStepDecided | PreStepFailed):
            self.decided(before, phase, command)
            self.superseded.clear()
        if isinstance(phase, Orphaned) and isinstance(command, Resume):
            claimed = [m for m in claim if m.id not in self.superseded]
            self.superseded.clear()
            if before.abort_cause is not None:
                reason = AbortedReason(before.abort_cause)
                self.fates.update((m.id, ConsumedFate(phase.turn, reason)) for m in claimed)
            else:
                pending_after = {
                    m.id for e in after.next_turn + after.next_step for m in e.messages
                }
                if any(m.id not in pending_after for m in claimed):
                    # D9's partial restore (an id sent again stays out): not modelled
                    # here; the run stops, and the two D9 tests above pin its fates
                    self.unsupported = True
        claimed_ids = {m.id for m in claim}
        for note in transition.notifications:
            if isinstance(note, InboxInserted) and note.message.id in claimed_ids:
                self.superseded.add(note.message.id)  # R32 v3: the newer message owns it
            if isinstance(note, InboxDiscarded):
                self.fates[note.message.id] = CanceledFate()
            elif isinstance(note, InboxClaimed):
                awaiting = after.awaiting
                self.fates[note.message.id] = ClaimedFate(note.turn, awaiting.step)
        self.fates.update(pending_of(after))

    @staticmethod
    def claim_of(state: AgentState) -> list[UserMessage]:
        """The messages of the undecided claim: a pre-step batch, or an orphan's claim."""
        phase = state.phase
        if isinstance(phase, PreStep):
            return list(phase.awaiting.batch)
        if isinstance(phase, Orphaned):
            return [m for e in phase.claim.next_step + phase.claim.next_turn for m in e.messages]
        return []

    def decided(self, before: AgentState, phase: PreStep, command: Any) -> None:
        batch = [m.id for m in before.awaiting.batch if m.id not in self.superseded]
        turn, step = phase.turn, phase.step
        if before.abort_cause is not None:
            fate: Any = ConsumedFate(turn, AbortedReason(before.abort_cause))
            self.fates.update((i, fate) for i in batch)
        elif isinstance(command, PreStepFailed):
            fate = ConsumedFate(turn, ErrorReason(command.message, command.code))
            self.fates.update((i, fate) for i in batch)
        elif isinstance(command.decision, Reject):
            self.fates.update((i, DroppedFate(turn, step)) for i in batch)
        else:
            entering = command.decision.messages
            entered = {m.id for m in entering}
            self.fates.update((i, DroppedFate(turn, step)) for i in batch if i not in entered)
            self.fates.update(
                (m.id, AdmittedFate(turn, step)) for m in entering if m.id not in self.superseded
            )


@settings(max_examples=80, deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_r32_random_sessions_match_the_live_oracle(seed):
    """R32, R23, R27: over random sessions (with crashes and Resume), ``fates(log)`` equals
    the fates predicted live from each command, has exactly the accepted ids, and its
    pending ones are the replayed lists."""
    rng = random.Random(seed)
    state = AgentState.initial()
    log: list[Any] = []
    oracle = FateOracle()
    for _ in range(40):
        command = next_command(rng, state)
        if command == CRASH:
            state = replay(log)  # a crash at the end of the log: nothing is lost
            continue
        try:
            transition = reduce(state, command)
        except InboxCoreError:
            continue
        oracle.observe(state, command, transition)
        if oracle.unsupported:
            break
        state = transition.state
        log.extend(transition.durable)
        result = check_whole(log)
        assert result == oracle.fates, (command, log)
