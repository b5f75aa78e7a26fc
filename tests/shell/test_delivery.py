"""Delivery through LoopAgent: turns, steps, steer, inject, followups (R12-R20)."""

from __future__ import annotations

from inbox_core import (
    Agent,
    Continue,
    Entry,
    MaxTokens,
    NextTurnInput,
    SteerInput,
    event_to_json,
)
from inbox_core.shell import EchoHost, LoopAgent, MemoryLog

from .support import (
    Recorder,
    ScriptedHost,
    admitted_texts,
    check_invariants,
    log_json,
    log_types,
    msg,
    run_async,
    steps_of,
    text_of,
    turn_ends,
)


@run_async
async def test_R14_waking_send_while_idle_opens_turn_inside_the_command() -> None:
    """R14: status running, turn/start and the claim are committed before followup returns."""
    host = ScriptedHost()
    agent = LoopAgent(host)
    rec = Recorder()
    agent.subscribe(rec)
    m = msg("hello")
    agent.followup(m)
    # synchronous: no await between the call and these checks
    assert agent.status == "running"
    assert log_types(agent) == ["agent/inbox/spliced", "turn/start", "agent/inbox/spliced"]
    assert rec.types == ["agent/inbox/inserted", "agent/status", "agent/inbox/claimed"]
    assert agent.inbox.next_turn == ()
    call = await host.next("pre_step")
    assert (call.turn, call.step, call.messages) == (1, 1, (m,))
    call.enter()
    (await host.next("run_step")).answer(MaxTokens())
    (await host.next("turn_stopping")).answer()
    await agent.when_idle()
    assert turn_ends(agent) == [(1, {"kind": "max-tokens"})]
    assert rec.types[-1] == "agent/status"
    assert agent.state.status == "idle"
    check_invariants(agent)


@run_async
async def test_R16_echo_host_runs_a_followup_to_completion() -> None:
    """R16, R43: turn/start, claim, step/start, user/message, the echo's host/output,
    step/end, turn/end completed."""
    host = EchoHost()
    agent = LoopAgent(host)
    m = msg("ping")
    agent.followup(m)
    await agent.when_idle()
    assert log_types(agent) == [
        "agent/inbox/spliced",
        "turn/start",
        "agent/inbox/spliced",
        "step/start",
        "user/message",
        "host/output",
        "step/end",
        "turn/end",
    ]
    assert turn_ends(agent) == [(1, {"kind": "completed"})]
    assert host.admitted == [m]
    assert log_json(agent)[5]["data"]["parts"] == [{"type": "text", "text": "echo: ping"}]
    assert host.calls == [("pre_step", 1, 1), ("run_step", 1, 1), ("turn_stopping", 1, 0)]
    check_invariants(agent)


@run_async
async def test_R17_steer_during_a_step_joins_the_next_step_of_the_same_turn() -> None:
    """R17: a steer sent while step 1 runs forces step 2 in turn 1 (no second reservation, R14)."""
    host = ScriptedHost()
    agent = LoopAgent(host)
    agent.followup(msg("task"))
    (await host.next("pre_step")).enter()
    step1 = await host.next("run_step")
    agent.steer(msg("also this"))
    assert [text_of(e.message) for e in agent.inbox.next_step] == ["also this"]
    assert log_types(agent).count("turn/start") == 1
    step1.answer(MaxTokens())
    pre2 = await host.next("pre_step")  # no turn_stopping: waking next-step input is pending
    assert (pre2.turn, pre2.step, pre2.texts) == (1, 2, ["also this"])
    pre2.enter()
    (await host.next("run_step")).answer(MaxTokens())
    (await host.next("turn_stopping")).answer()
    await agent.when_idle()
    assert steps_of(agent) == [(1, 1), (1, 2)]
    assert admitted_texts(agent) == ["task", "also this"]
    assert turn_ends(agent) == [(1, {"kind": "max-tokens"})]  # sticky (R18)
    check_invariants(agent)


@run_async
async def test_R17_steer_from_turn_stopping_keeps_the_turn_going() -> None:
    """R17: listeners may steer during turn-stopping; the core steps again in the same turn."""
    host = ScriptedHost()
    agent = LoopAgent(host)
    agent.followup(msg("task"))
    (await host.next("pre_step")).enter()
    (await host.next("run_step")).answer(Continue())
    pre2 = await host.next("pre_step")  # Continue: claim between steps, empty batch proceeds
    assert pre2.messages == ()
    pre2.enter()
    (await host.next("run_step")).answer(MaxTokens())
    stopping = await host.next("turn_stopping")
    agent.steer(msg("one more thing"))
    stopping.answer()
    pre3 = await host.next("pre_step")
    assert (pre3.turn, pre3.step, pre3.texts) == (1, 3, ["one more thing"])
    pre3.enter()
    (await host.next("run_step")).answer(MaxTokens())
    (await host.next("turn_stopping")).answer()
    await agent.when_idle()
    assert steps_of(agent) == [(1, 1), (1, 2), (1, 3)]
    assert turn_ends(agent) == [(1, {"kind": "max-tokens"})]
    check_invariants(agent)


@run_async
async def test_R15_inject_during_a_step_forces_no_step_and_waits_parked() -> None:
    """R15: an injection while a step runs does not force a step; the turn ends; it stays parked."""
    host = ScriptedHost()
    agent = LoopAgent(host)
    agent.followup(msg("task"))
    (await host.next("pre_step")).enter()
    step = await host.next("run_step")
    agent.inject(msg("fyi"))
    step.answer(MaxTokens())
    (await host.next("turn_stopping")).answer()
    await agent.when_idle()
    assert steps_of(agent) == [(1, 1)]
    assert [e.message.content[0]["text"] for e in agent.inbox.next_step] == ["fyi"]
    assert agent.inbox.next_step[0].wakeup is False
    # I2: the parked injection never opens a turn; the next waking delivery carries it (R15)
    assert await host.nothing_pending()
    agent.followup(msg("next"))
    pre = await host.next("pre_step")
    assert pre.texts == ["fyi", "next"]  # next-step before next-turn (R9)
    pre.enter()
    (await host.next("run_step")).answer(MaxTokens())
    (await host.next("turn_stopping")).answer()
    await agent.when_idle()
    check_invariants(agent)


@run_async
async def test_R15_inject_during_a_step_rides_the_boundary_the_driver_reaches_anyway() -> None:
    """R15: with Continue the driver reaches a boundary anyway; the injection is claimed there."""
    host = ScriptedHost()
    agent = LoopAgent(host)
    agent.followup(msg("task"))
    (await host.next("pre_step")).enter()
    step = await host.next("run_step")
    agent.inject(msg("tool result context"))
    step.answer(Continue())
    pre2 = await host.next("pre_step")
    assert (pre2.step, pre2.texts) == (2, ["tool result context"])
    pre2.enter()
    (await host.next("run_step")).answer(MaxTokens())
    (await host.next("turn_stopping")).answer()
    await agent.when_idle()
    assert admitted_texts(agent) == ["task", "tool result context"]
    check_invariants(agent)


@run_async
async def test_R20_I7_followups_while_running_get_one_turn_each_in_fifo_order() -> None:
    """R20, I7, R19: three followups sent during turn 1 open turns 2, 3, 4 in order, one each."""
    host = ScriptedHost()
    agent = LoopAgent(host)
    agent.followup(msg("f0"))
    pre = await host.next("pre_step")
    for i in (1, 2, 3):
        agent.followup(msg(f"f{i}"))
    pre.enter()
    (await host.next("run_step")).answer(MaxTokens())
    (await host.next("turn_stopping")).answer()
    seen = [["f0"]]
    for _ in range(3):
        seen.append(await host.complete_turn(MaxTokens()))
    await agent.when_idle()
    assert seen == [["f0"], ["f1"], ["f2"], ["f3"]]
    assert [t for t, _ in turn_ends(agent)] == [1, 2, 3, 4]
    # R19: consecutive turns in one running interval, no idle in between
    statuses = [e for e in log_types(agent) if e in ("turn/start", "turn/end")]
    assert statuses == ["turn/start", "turn/end"] * 4
    check_invariants(agent)


@run_async
async def test_R15_queue_is_parked_until_a_waking_delivery() -> None:
    """R15, I2: queue() while idle opens no turn; a later followup claims only its own entry."""
    host = EchoHost()
    agent = LoopAgent(host)
    agent.queue(msg("parked"))
    assert agent.status == "idle"
    assert "turn/start" not in log_types(agent)
    agent.followup(msg("go"))
    await agent.when_idle()
    # R20: the parked next-turn entry is the first next-turn entry: it is claimed first
    assert [text_of(m) for m in host.admitted] == ["parked", "go"]
    assert [t for t, _ in turn_ends(agent)] == [1, 2]
    check_invariants(agent)


@run_async
async def test_R11_send_with_resolved_inputs_and_contexts() -> None:
    """R11, R3: send() of resolved inputs; contexts are admitted right before their message."""
    host = EchoHost()
    agent = LoopAgent(host)
    ctx = msg("context")
    m = msg("main")
    agent.send(NextTurnInput(m, (ctx,), "next-turn", True))
    await agent.when_idle()
    assert admitted_texts(agent) == ["context", "main"]
    agent.send(SteerInput(msg("s"), (), "next-step", True))  # steer while idle opens a turn
    await agent.when_idle()
    assert admitted_texts(agent) == ["context", "main", "s"]
    check_invariants(agent)


@run_async
async def test_R7_edits_replace_remove_move_splice_clear_through_the_shell() -> None:
    """R7, R8, D1, D3: replace/remove return whether the id was pending; move keeps the id."""
    host = ScriptedHost()
    agent = LoopAgent(host)
    rec = Recorder()
    agent.subscribe(rec)
    ctx = msg("ctx")
    a, b, c = msg("a"), msg("b"), msg("c")
    agent.queue(a, contexts=(ctx,))
    agent.queue(b)
    assert agent.replace(a.id, c) is True
    assert agent.replace(a.id, msg("x")) is False  # no longer pending
    assert agent.replace(ctx.id, msg("y")) is False  # D3: a context is not an entry
    assert agent.inbox.next_turn[0] == Entry(c, (ctx,), False)
    assert agent.remove(b.id) is True
    assert agent.remove(b.id) is False
    before = len(log_json(agent))
    agent.move("missing", "next-turn")  # D1: no-op
    assert len(log_json(agent)) == before
    agent.followup(msg("run"))  # turn 1 claims c (with ctx): the first next-turn entry
    pre = await host.next("pre_step")
    assert pre.texts == ["ctx", "c"]
    agent.queue(b)
    agent.move(b.id, "next-step")  # promotion during a live turn: waking (R8)
    assert agent.inbox.next_step == (Entry(b, (), True),)
    assert rec.types[-1] == "agent/inbox/moved"
    agent.splice("next-turn", 0, 0, [Entry(msg("spliced"), (), False)])
    agent.clear()  # D10: cancels next-step then next-turn; the turn goes on
    assert agent.state.next_step == ()
    assert agent.state.next_turn == ()
    assert agent.status == "running"
    pre.enter()
    (await host.next("run_step")).answer(MaxTokens())
    (await host.next("turn_stopping")).answer()
    await agent.when_idle()
    outcomes = [
        e["data"].get("outcome") for e in log_json(agent) if e["type"] == "agent/inbox/spliced"
    ]
    assert "moved" in outcomes
    assert "canceled" in outcomes
    check_invariants(agent)


def test_loop_agent_satisfies_the_agent_protocol() -> None:
    """Section 9: LoopAgent is structurally an Agent (mypy checks it in the shell module too)."""
    agent: Agent = LoopAgent(EchoHost())
    names = "followup queue steer inject send replace remove move cancel subscribe when_idle aclose"
    for name in names.split():
        assert callable(getattr(agent, name))
    assert agent.status == "idle"
    assert agent.inbox.next_turn == ()
    assert agent.inbox.next_step == ()


def test_R10_memory_log_holds_exactly_the_durable_events() -> None:
    """R10, I5: the MemoryLog given to the agent is the durable output of every command."""
    log = MemoryLog()
    agent = LoopAgent(EchoHost(), log=log)
    agent.queue(msg("a"))
    agent.inject(msg("b"))
    assert [event_to_json(e)["type"] for e in log.read()] == ["agent/inbox/spliced"] * 2
    assert len(log) == 2
    check_invariants(agent)
