"""Guarded commands through LoopAgent (R34): the three races of a real UI, with a host whose
steps take their time (a ``ScriptedHost`` answered by the test)."""

from __future__ import annotations

import inspect

import pytest

from inbox_core import AgentBusy, Completed, ExpectIdle, ExpectTurn, TurnMismatch
from inbox_core.protocol import Agent
from inbox_core.shell import LoopAgent

from .support import (
    Recorder,
    ScriptedHost,
    admitted_texts,
    check_invariants,
    log_json,
    msg,
    run_async,
    text_of,
    turn_ends,
)


@run_async
async def test_R34_stop_button_stops_the_turn_on_screen_never_the_next() -> None:
    """R34: stop is pressed for turn 1 while it finishes; when the cancel is applied turn 2
    (a queued followup) has started: the guarded cancel raises TurnMismatch, announces
    nothing and writes nothing; turn 2 completes."""
    host = ScriptedHost()
    agent = LoopAgent(host)
    agent.followup(msg("one"))
    agent.followup(msg("two"))
    await host.complete_turn()  # turn 1 ends; the core opens turn 2 in the same report
    pre = await host.next("pre_step")
    assert (pre.turn, agent.state.last_turn) == (2, 2)
    rec = Recorder()
    agent.subscribe(rec)
    before = len(agent.log.read())
    with pytest.raises(TurnMismatch) as error:
        agent.cancel(expect=ExpectTurn(1))
    assert (error.value.expected, error.value.found) == (1, 2)
    assert (len(agent.log.read()), rec.notes, pre.signal.aborted) == (before, [], False)
    pre.enter()
    (await host.next("run_step")).answer(Completed())
    (await host.next("turn_stopping")).answer()
    await agent.when_idle()
    assert [reason["kind"] for _, reason in turn_ends(agent)] == ["completed", "completed"]
    check_invariants(agent)


@run_async
async def test_R34_stop_button_for_the_live_turn_aborts_it() -> None:
    """R34: the same stop while turn 1 still runs aborts it (the signal trips)."""
    host = ScriptedHost()
    agent = LoopAgent(host)
    agent.followup(msg("one"))
    (await host.next("pre_step")).enter()
    step = await host.next("run_step")
    agent.cancel(keep_inbox=True, expect=ExpectTurn(1))
    assert step.signal.aborted
    step.answer(Completed())
    await agent.when_idle()
    assert turn_ends(agent) == [(1, {"kind": "aborted", "reason": {"kind": "user"}})]


@run_async
async def test_R34_a_steer_for_a_turn_that_ended_opens_no_turn() -> None:
    """R34: the user steers the answer on screen, but that turn ended a moment ago: the
    guarded steer raises instead of opening a turn that holds only the steer."""
    host = ScriptedHost()
    agent = LoopAgent(host)
    agent.followup(msg("one"))
    pre = await host.next("pre_step")
    pre.enter()
    step = await host.next("run_step")
    agent.steer(msg("while running"), expect=ExpectTurn(1))  # live: joins step 2
    step.answer(Completed())
    (await host.next("pre_step")).enter()
    (await host.next("run_step")).answer(Completed())
    (await host.next("turn_stopping")).answer()
    await agent.when_idle()
    with pytest.raises(TurnMismatch):
        agent.steer(msg("too late"), expect=ExpectTurn(1))
    assert agent.status == "idle"
    assert admitted_texts(agent) == ["one", "while running"]
    assert await host.nothing_pending()


@run_async
async def test_R34_reject_a_double_text_with_expect_idle() -> None:
    """R34: 'reject a double text': the first followup guarded by ExpectIdle starts a turn,
    the second raises AgentBusy (no check-then-act race), and nothing of it is written."""
    host = ScriptedHost()
    agent = LoopAgent(host)
    agent.followup(msg("first"), expect=ExpectIdle())
    length = len(log_json(agent))
    with pytest.raises(AgentBusy) as error:
        agent.followup(msg("second"), expect=ExpectIdle())
    assert error.value.status == "running"
    assert len(log_json(agent)) == length
    await host.complete_turn()
    await agent.when_idle()
    agent.queue(msg("later"), expect=ExpectIdle())
    agent.move(agent.inbox.next_turn[0].message.id, "next-turn", expect=ExpectIdle())
    agent.inject(msg("context"), expect=ExpectIdle())
    assert [text_of(e.message) for e in agent.inbox.next_turn] == ["later"]
    assert [text_of(e.message) for e in agent.inbox.next_step] == ["context"]


def test_R34_expect_is_keyword_only_in_every_helper() -> None:
    """R34: the shell's helpers (and the Agent protocol) take ``expect=`` as a keyword."""
    for owner in (LoopAgent, Agent):
        for name in ("followup", "queue", "steer", "inject", "send", "move", "cancel"):
            parameter = inspect.signature(getattr(owner, name)).parameters["expect"]
            assert parameter.kind is inspect.Parameter.KEYWORD_ONLY, (owner, name)
            assert parameter.default is None
