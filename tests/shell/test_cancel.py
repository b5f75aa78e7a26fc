"""Cancellation and dispose through LoopAgent (R21-R25, D5, D6, I9, I10)."""

from __future__ import annotations

import asyncio

import pytest

from inbox_core import (
    AgentDisposed,
    Completed,
    DisposedCause,
    Enter,
    Failed,
    HookCause,
    InboxDiscarded,
    MaxTokens,
    ParentCause,
    SteerUnavailable,
    UserCause,
)
from inbox_core.shell import EchoHost, LoopAgent

from .support import (
    Recorder,
    ScriptedHost,
    admitted_texts,
    check_invariants,
    log_json,
    log_types,
    msg,
    run_async,
    settle,
    steps_of,
    text_of,
    turn_ends,
)

ABORTED_USER = {"kind": "aborted", "reason": {"kind": "user"}}


def discarded_texts(rec: Recorder) -> list[str]:
    return [text_of(n.message) for n in rec.notes if isinstance(n, InboxDiscarded)]


async def start_with_pending(host: ScriptedHost, agent: LoopAgent) -> None:
    """Turn 1 claims f1; f2 (next-turn, waking) and s (steer) stay pending."""
    agent.followup(msg("f1"))
    agent.followup(msg("f2"))
    agent.steer(msg("s"))


@run_async
async def test_R22_R23_I10_cancel_during_pre_step_clears_and_aborts_without_a_step() -> None:
    """R22, R23, I10: cancel clears both lists, trips the signal; the report closes the turn."""
    host = ScriptedHost()
    agent = LoopAgent(host)
    rec = Recorder()
    agent.subscribe(rec)
    await start_with_pending(host, agent)
    pre = await host.next("pre_step")
    agent.cancel()
    assert pre.signal.aborted
    assert pre.signal.cause == UserCause()
    assert rec.types[-3:] == [
        "agent/cancel-requested",
        "agent/inbox/discarded",
        "agent/inbox/discarded",
    ]
    assert discarded_texts(rec) == ["s", "f2"]  # next-step first (R22)
    await settle()
    assert "turn/end" not in log_types(agent)  # cooperative: waits for the host (R23)
    assert agent.status == "running"
    pre.enter()  # any report closes it; the decision is ignored (D6)
    await agent.when_idle()
    assert turn_ends(agent) == [(1, ABORTED_USER)]
    assert steps_of(agent) == []  # I10
    assert agent.inbox.next_turn == ()
    assert agent.inbox.next_step == ()
    assert not pre.cancelled
    check_invariants(agent)


@run_async
async def test_R22_I9_R24_cancel_keep_inbox_during_pre_step_keeps_entries_for_the_next_turn() -> (
    None
):
    """R22, I9, R24: keep_inbox aborts only; the kept waking work opens turn 2 after turn/end 1."""
    host = ScriptedHost()
    agent = LoopAgent(host)
    rec = Recorder()
    agent.subscribe(rec)
    await start_with_pending(host, agent)
    pre = await host.next("pre_step")
    spliced_before = log_types(agent).count("agent/inbox/spliced")
    agent.cancel(ParentCause(), keep_inbox=True)
    assert rec.types[-1] == "agent/cancel-requested"
    assert rec.of("agent/inbox/discarded") == []  # I9
    assert log_types(agent).count("agent/inbox/spliced") == spliced_before
    pre.answer(Enter(()))
    pre2 = await host.next("pre_step")
    assert (pre2.turn, pre2.step, pre2.texts) == (2, 1, ["s", "f2"])
    types = log_types(agent)
    assert types.index("turn/end") < types.index("turn/start", types.index("turn/start") + 1)
    assert not pre2.signal.aborted  # a fresh signal for the new turn
    pre2.enter()
    (await host.next("run_step")).answer(Completed())
    (await host.next("turn_stopping")).answer()
    await agent.when_idle()
    assert turn_ends(agent) == [
        (1, {"kind": "aborted", "reason": {"kind": "parent"}}),
        (2, {"kind": "completed"}),
    ]
    check_invariants(agent)


@run_async
async def test_R23_cancel_during_a_step_closes_step_then_turn_after_the_host_returns() -> None:
    """R23: step/end then turn/end aborted, only after run_step settles (never cancelled)."""
    host = ScriptedHost()
    agent = LoopAgent(host)
    agent.followup(msg("f1"))
    (await host.next("pre_step")).enter()
    step = await host.next("run_step")
    waiter = asyncio.ensure_future(step.signal.wait())
    agent.cancel()
    assert await asyncio.wait_for(waiter, 1) == UserCause()
    await settle()
    assert log_types(agent)[-2:] == ["user/message", "turn/abort"]  # R23 v2: the abort only
    step.answer(Failed("ignored", "X"))  # content ignored for an aborted turn (D6)
    await agent.when_idle()
    assert log_types(agent)[-4:] == ["user/message", "turn/abort", "step/end", "turn/end"]
    assert turn_ends(agent) == [(1, ABORTED_USER)]
    assert not step.cancelled
    assert step.settled
    check_invariants(agent)


@run_async
async def test_R22_R24_cancel_keep_inbox_during_a_step_then_the_kept_steer_opens_turn_2() -> None:
    """R22, R24, I10: a kept steer does not join the aborted turn; it opens turn 2."""
    host = ScriptedHost()
    agent = LoopAgent(host)
    agent.followup(msg("f1"))
    (await host.next("pre_step")).enter()
    step = await host.next("run_step")
    agent.steer(msg("s"))
    agent.cancel(keep_inbox=True)
    assert [e.message.content[0]["text"] for e in agent.inbox.next_step] == ["s"]
    step.answer(Completed())
    pre2 = await host.next("pre_step")
    assert (pre2.turn, pre2.step, pre2.texts) == (2, 1, ["s"])
    pre2.enter()
    (await host.next("run_step")).answer(Completed())
    (await host.next("turn_stopping")).answer()
    await agent.when_idle()
    assert steps_of(agent) == [(1, 1), (2, 1)]  # no step 2 in the aborted turn (I10)
    check_invariants(agent)


@pytest.mark.parametrize("keep_inbox", [False, True])
@run_async
async def test_R22_R23_cancel_during_turn_stopping(keep_inbox: bool) -> None:
    """R22, R23: cancel at turn-stopping closes the turn aborted (no open step); R24 after it."""
    host = ScriptedHost()
    agent = LoopAgent(host)
    agent.followup(msg("f1"))
    (await host.next("pre_step")).enter()
    (await host.next("run_step")).answer(Completed())
    stopping = await host.next("turn_stopping")
    agent.followup(msg("f2"))
    agent.cancel(HookCause("stop"), keep_inbox=keep_inbox)
    assert stopping.signal.cause == HookCause("stop")
    stopping.answer()
    if keep_inbox:
        assert await host.complete_turn() == ["f2"]
    await agent.when_idle()
    ends = turn_ends(agent)
    assert ends[0] == (1, {"kind": "aborted", "reason": {"kind": "hook", "reason": "stop"}})
    assert len(ends) == (2 if keep_inbox else 1)
    assert log_types(agent).count("step/end") == len(ends)  # no extra step/end at stopping
    check_invariants(agent)


@run_async
async def test_R24_sends_after_an_abort_wait_for_its_turn_end() -> None:
    """R24, R8: input sent after an abort opens the next turn only after that turn/end."""
    host = ScriptedHost()
    agent = LoopAgent(host)
    agent.followup(msg("f1"))
    (await host.next("pre_step")).enter()
    step = await host.next("run_step")
    agent.cancel()
    agent.followup(msg("after"))
    agent.steer(msg("steer after"))
    agent.queue(q := msg("queued"))
    with pytest.raises(SteerUnavailable):  # the turn is aborted: not live (R8)
        agent.move(q.id, "next-step")
    await settle()
    assert log_types(agent).count("turn/start") == 1
    assert await host.nothing_pending()
    step.answer(Completed())
    pre2 = await host.next("pre_step")
    assert pre2.turn == 2
    assert pre2.texts == ["steer after", "after"]
    types = log_types(agent)
    assert types.index("turn/end") < len(types) - types[::-1].index("turn/start") - 1
    pre2.enter()
    (await host.next("run_step")).answer(Completed())
    (await host.next("turn_stopping")).answer()
    await agent.when_idle()
    assert admitted_texts(agent) == ["f1", "steer after", "after"]
    assert [e.message for e in agent.inbox.next_turn] == [q]  # parked, not waking (R15)
    check_invariants(agent)


@run_async
async def test_R23_first_cause_wins_and_later_cancels_still_clear() -> None:
    """R23: a second cancel keeps the first cause but still clears input sent after the first."""
    host = ScriptedHost()
    agent = LoopAgent(host)
    rec = Recorder()
    agent.subscribe(rec)
    agent.followup(msg("f1"))
    pre = await host.next("pre_step")
    agent.cancel(HookCause("first"), keep_inbox=True)
    agent.followup(msg("late"))
    agent.cancel(ParentCause())
    assert pre.signal.cause == HookCause("first")
    assert discarded_texts(rec) == ["late"]
    pre.answer(Enter(()))
    await agent.when_idle()
    assert turn_ends(agent) == [
        (1, {"kind": "aborted", "reason": {"kind": "hook", "reason": "first"}})
    ]
    check_invariants(agent)


@run_async
async def test_R21_cancel_with_nothing_to_do_announces_nothing() -> None:
    """R21: idle and empty: a cancel records and announces nothing."""
    agent = LoopAgent(EchoHost())
    rec = Recorder()
    agent.subscribe(rec)
    agent.cancel()
    agent.cancel(keep_inbox=True)
    assert rec.notes == []
    assert log_json(agent) == []


@run_async
async def test_R25_D5_dispose_while_running() -> None:
    """R25, D5: aclose clears, aborts (disposed), refuses commands, waits for the host's report."""
    host = ScriptedHost()
    agent = LoopAgent(host)
    rec = Recorder()
    agent.subscribe(rec)
    agent.followup(msg("f1"))
    agent.followup(msg("f2"))
    (await host.next("pre_step")).enter()
    step = await host.next("run_step")
    closing = asyncio.ensure_future(agent.aclose())
    await settle()
    assert not closing.done()  # waits for convergence
    assert step.signal.cause == DisposedCause()
    assert agent.inbox.next_turn == ()
    for command in (
        lambda: agent.followup(msg("x")),
        agent.cancel,
        lambda: agent.remove("f2"),
        agent.dispose,
    ):
        with pytest.raises(AgentDisposed):
            command()
    second = asyncio.ensure_future(agent.aclose())  # concurrent aclose: no raise
    step.answer(MaxTokens())
    await closing
    await second
    await agent.aclose()  # once more, after convergence: no raise
    assert turn_ends(agent) == [(1, {"kind": "aborted", "reason": {"kind": "disposed"}})]
    assert agent.status == "idle"
    assert agent.state.disposed
    assert rec.types[-2:] == ["agent/status", "agent/disposed"]  # D5
    assert rec.of("agent/disposed") == rec.notes[-1:]
    assert await host.nothing_pending()
    check_invariants(agent)


@run_async
async def test_R25_D5_dispose_while_idle_converges_at_once() -> None:
    """R25, D5: idle dispose clears pending entries and announces agent/disposed immediately."""
    agent = LoopAgent(EchoHost())
    rec = Recorder()
    agent.subscribe(rec)
    agent.queue(msg("q"))
    agent.dispose()
    assert rec.types == [
        "agent/inbox/inserted",
        "agent/cancel-requested",
        "agent/inbox/discarded",
        "agent/disposed",
    ]
    await agent.aclose()  # already disposed: waits (nothing to wait for), does not raise
    with pytest.raises(AgentDisposed):
        agent.queue(msg("no"))
    check_invariants(agent)
