"""Delivery: send, the idle reservation, quiet input, one send one turn (R11-R15, R20, I2, I7)."""

from __future__ import annotations

from inbox_core import (
    AgentState,
    AwaitPreStep,
    AwaitStep,
    AwaitTurnStopping,
    CompletedReason,
    Continue,
    Entry,
    InboxClaimed,
    InboxInserted,
    Splice,
    StatusChanged,
    StepEnded,
    StepStarted,
    TurnEnded,
    TurnStarted,
)
from tests.core.helpers import Run, claimed, followup, inject, inserted, msg, queue, steer


def test_r14_waking_followup_while_idle_reserves_in_same_command():
    """R13, R14: splice + inserted, then status running, turn/start 1, claim, at once."""
    c, m = msg("c"), msg("m")
    run = Run()
    t = run(followup(m, [c]))
    e = Entry(m, (c,), True)
    assert t.durable == (inserted("next-turn", 0, e), TurnStarted(1), claimed("next-turn", 1))
    assert t.notifications == (
        InboxInserted(c),
        InboxInserted(m),
        StatusChanged("running"),
        InboxClaimed(c, 1),
        InboxClaimed(m, 1),
    )
    s = t.state
    assert s.status == "running"
    assert s.last_turn == 1
    assert s.awaiting == AwaitPreStep(1, 1, (c, m))
    assert s.next_turn == ()
    assert s.next_step == ()
    assert s.abort_cause is None


def test_r14_waking_steer_while_idle_reserves_and_claims_at_turn_boundary():
    """R14: a steer while idle opens turn 1 and is claimed by its first boundary."""
    s = msg("s")
    run = Run()
    t = run(steer(s))
    assert t.durable == (
        inserted("next-step", 0, Entry(s, (), True)),
        TurnStarted(1),
        claimed("next-step", 1),
    )
    assert t.notifications == (InboxInserted(s), StatusChanged("running"), InboxClaimed(s, 1))
    assert t.state.awaiting == AwaitPreStep(1, 1, (s,))


def test_r13_send_appends_at_end_of_its_list():
    """R13: each send appends one entry at the end of its list (start = old length)."""
    run = Run()
    a, b, c = msg("a"), msg("b"), msg("c")
    assert run(queue(a)).durable == (inserted("next-turn", 0, Entry(a, (), False)),)
    assert run(queue(b)).durable == (inserted("next-turn", 1, Entry(b, (), False)),)
    assert run(inject(c)).durable == (inserted("next-step", 0, Entry(c, (), False)),)
    assert run.state.next_turn == (Entry(a, (), False), Entry(b, (), False))
    assert run.state.next_step == (Entry(c, (), False),)


def test_r14_waking_send_while_running_gets_no_second_reservation():
    """R14: while running a waking send only appends; it waits for a later boundary."""
    run = Run()
    run(followup(msg("a")))
    awaiting = run.state.awaiting
    b = msg("b")
    t = run(followup(b))
    assert t.durable == (inserted("next-turn", 0, Entry(b, (), True)),)
    assert t.notifications == (InboxInserted(b),)
    assert t.state.awaiting == awaiting
    assert t.state.last_turn == 1
    assert t.state.next_turn == (Entry(b, (), True),)
    s = msg("s")
    t = run(steer(s))
    assert t.durable == (inserted("next-step", 0, Entry(s, (), True)),)
    assert t.notifications == (InboxInserted(s),)
    assert t.state.awaiting == awaiting


def test_r15_quiet_input_while_idle_stays_parked():
    """R15, I2: queue and inject while idle never open a turn."""
    run = Run()
    q, i = msg("q"), msg("i")
    t1 = run(queue(q, [msg("qc")]))
    t2 = run(inject(i))
    for t in (t1, t2):
        assert not any(isinstance(e, TurnStarted) for e in t.durable)
        assert StatusChanged("running") not in t.notifications
    assert run.state.status == "idle"
    assert run.state.last_turn == 0
    assert run.state.awaiting is None
    assert run.state.next_turn == (Entry(q, (msg("qc"),), False),)
    assert run.state.next_step == (Entry(i, (), False),)


def test_r15_parked_inject_rides_along_with_the_next_waking_followup():
    """R15, R9: a parked injection is claimed with the next waking delivery, before it."""
    run = Run()
    i, f = msg("i"), msg("f")
    run(inject(i))
    t = run(followup(f))
    assert t.durable == (
        inserted("next-turn", 0, Entry(f, (), True)),
        TurnStarted(1),
        claimed("next-step", 1),
        claimed("next-turn", 1),
    )
    assert t.notifications == (
        InboxInserted(f),
        StatusChanged("running"),
        InboxClaimed(i, 1),
        InboxClaimed(f, 1),
    )
    assert t.state.awaiting == AwaitPreStep(1, 1, (i, f))
    assert t.state.next_step == ()
    assert t.state.next_turn == ()


def test_r15_r20_parked_queue_rides_the_turn_its_waking_successor_opens():
    """R15, R20, I7: a parked queued prompt is the first next-turn entry, so the turn the
    waking followup opens claims it; the followup gets the next turn of its own."""
    run = Run()
    q, f = msg("q"), msg("f")
    run(queue(q))
    t = run(followup(f))
    assert t.durable == (
        inserted("next-turn", 1, Entry(f, (), True)),
        TurnStarted(1),
        claimed("next-turn", 1),
    )
    assert t.notifications == (InboxInserted(f), StatusChanged("running"), InboxClaimed(q, 1))
    assert t.state.awaiting == AwaitPreStep(1, 1, (q,))
    assert t.state.next_turn == (Entry(f, (), True),)
    run.step_through()
    t = run.stop()
    assert t.durable == (TurnEnded(1, CompletedReason()), TurnStarted(2), claimed("next-turn", 1))
    assert t.notifications == (InboxClaimed(f, 2),)
    assert t.state.awaiting == AwaitPreStep(2, 1, (f,))


def test_r15_idle_steer_claims_a_parked_queued_prompt_in_the_same_batch():
    """R15, R9: an idle steer opens a turn whose boundary also claims the parked queue."""
    run = Run()
    q, qc, s = msg("q"), msg("qc"), msg("s")
    run(queue(q, [qc]))
    t = run(steer(s))
    assert t.durable == (
        inserted("next-step", 0, Entry(s, (), True)),
        TurnStarted(1),
        claimed("next-step", 1),
        claimed("next-turn", 1),
    )
    assert t.notifications == (
        InboxInserted(s),
        StatusChanged("running"),
        InboxClaimed(s, 1),
        InboxClaimed(qc, 1),
        InboxClaimed(q, 1),
    )
    assert t.state.awaiting == AwaitPreStep(1, 1, (s, qc, q))
    assert t.state.next_turn == ()


def test_r15_injection_during_a_turn_never_forces_a_step():
    """R15, I2: an injection while a step runs does not make the turn step again."""
    run = Run()
    run(followup(msg("f")))
    run.enter()
    i = msg("i")
    run(inject(i))
    t = run.finish()
    assert t.durable == (StepEnded(1, 1),)
    assert t.state.awaiting == AwaitTurnStopping(1)
    t = run.stop()
    assert t.durable == (TurnEnded(1, CompletedReason()),)
    assert t.notifications == (StatusChanged("idle"),)
    assert t.state.status == "idle"
    assert t.state.next_step == (Entry(i, (), False),)
    assert not any(isinstance(e, StepStarted) and e.step == 2 for e in run.log)


def test_r15_injection_claimed_at_a_boundary_the_turn_reaches_anyway():
    """R15, R17: after Continue the turn reaches a boundary; the injection enters there."""
    run = Run()
    run(followup(msg("f")))
    run.enter()
    i = msg("i")
    run(inject(i))
    t = run.finish(Continue())
    assert t.durable == (StepEnded(1, 1), claimed("next-step", 1))
    assert t.notifications == (InboxClaimed(i, 1),)
    assert t.state.awaiting == AwaitPreStep(1, 2, (i,))
    t = run.enter()
    assert [e.type for e in t.durable] == ["step/start", "user/message"]
    assert t.durable[1].message == i


def test_r15_injection_rides_along_with_a_steer_forced_step():
    """R15, R17: a later steer forces a step; the earlier injection joins its batch first."""
    run = Run()
    run(followup(msg("f")))
    run.enter()
    i, s = msg("i"), msg("s")
    run(inject(i))
    run(steer(s))
    t = run.finish()
    assert t.durable == (StepEnded(1, 1), claimed("next-step", 2))
    assert t.notifications == (InboxClaimed(i, 1), InboxClaimed(s, 1))
    assert t.state.awaiting == AwaitPreStep(1, 2, (i, s))


def test_r13_waking_splice_while_idle_wakes_like_a_send():
    """R13, R14, D14: a Splice inserting a waking entry while idle opens a turn at once."""
    run = Run()
    quiet = Entry(msg("q"), (), False)
    t = run(Splice("next-step", 0, 0, (quiet,)))
    assert t.durable == (inserted("next-step", 0, quiet),)
    assert t.state.status == "idle"
    waking = Entry(msg("w"), (msg("wc"),), True)
    t = run(Splice("next-turn", 0, 0, (waking,)))
    assert t.durable == (
        inserted("next-turn", 0, waking),
        TurnStarted(1),
        claimed("next-step", 1),
        claimed("next-turn", 1),
    )
    assert t.state.awaiting == AwaitPreStep(1, 1, (msg("q"), msg("wc"), msg("w")))


def test_r20_i7_one_send_one_turn_in_fifo_order():
    """R20, I7: three followups make three turns, each claiming one entry, in list order."""
    run = Run()
    a, b, c = msg("a"), msg("b"), msg("c")
    run(followup(a))
    run(followup(b))
    run(followup(c))
    assert run.state.awaiting == AwaitPreStep(1, 1, (a,))
    assert run.state.next_turn == (Entry(b, (), True), Entry(c, (), True))
    claims_per_turn: dict[int, list[str]] = {}
    while run.state.status == "running":
        run.run_turn_to_end()
    for note in run.notes:
        if isinstance(note, InboxClaimed):
            claims_per_turn.setdefault(note.turn, []).append(note.message.id)
    assert claims_per_turn == {1: ["a"], 2: ["b"], 3: ["c"]}
    turn_starts = [e.turn for e in run.log if isinstance(e, TurnStarted)]
    assert turn_starts == [1, 2, 3]
    next_turn_claims = [e for e in run.log if e == claimed("next-turn", 1)]
    assert len(next_turn_claims) == 3
    assert run.state.status == "idle"
    assert run.state.last_turn == 3


def test_r20_two_sends_are_never_merged_even_at_one_boundary():
    """R20: two waking next-turn entries pending at turn end open two separate turns."""
    run = Run()
    run(followup(msg("a")))
    run.enter()
    run(followup(msg("b")))
    run(followup(msg("c")))
    run.finish()
    t = run.stop()
    assert t.durable == (TurnEnded(1, CompletedReason()), TurnStarted(2), claimed("next-turn", 1))
    assert t.state.awaiting == AwaitPreStep(2, 1, (msg("b"),))
    assert t.state.next_turn == (Entry(msg("c"), (), True),)


def test_r14_state_after_reservation_is_a_plain_value():
    """R14: reduce never changes its input state (the initial state stays initial)."""
    initial = AgentState.initial()
    run = Run(initial)
    run(followup(msg("a")))
    assert initial == AgentState()
    assert initial.status == "idle"
    assert initial.next_turn == ()
    assert isinstance(run.state.awaiting, AwaitPreStep)
    assert not isinstance(run.state.awaiting, AwaitStep)


def test_r12_each_intent_lands_in_its_list_with_its_wakeup_flag():
    """R11, R12: followup/queue -> next-turn (waking/quiet), steer/inject -> next-step."""
    run = Run()
    run(followup(msg("run")))
    c = msg("c")
    sends = [
        (followup(msg("f"), [c]), "next-turn", 0, Entry(msg("f"), (c,), True)),
        (queue(msg("q")), "next-turn", 1, Entry(msg("q"), (), False)),
        (steer(msg("s"), [msg("sc")]), "next-step", 0, Entry(msg("s"), (msg("sc"),), True)),
        (inject(msg("i")), "next-step", 1, Entry(msg("i"), (), False)),
    ]
    for command, target, start, entry in sends:
        t = run(command)
        assert t.durable == (inserted(target, start, entry),)
        assert t.notifications == tuple(InboxInserted(m) for m in entry.messages)
    assert [e.wakeup for e in run.state.next_turn] == [True, False]
    assert [e.wakeup for e in run.state.next_step] == [True, False]


def test_r3_contexts_are_admitted_right_before_their_message():
    """R3, R9, R16: the batch and the user/message order put each entry's contexts first."""
    from inbox_core import MessageAdmitted, StepStarted

    run = Run()
    run(steer(msg("s"), [msg("s1"), msg("s2")]))
    t = run.enter()
    assert t.durable == (
        StepStarted(1, 1),
        MessageAdmitted(msg("s1")),
        MessageAdmitted(msg("s2")),
        MessageAdmitted(msg("s")),
    )
