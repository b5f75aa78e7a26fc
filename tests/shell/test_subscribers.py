"""Notification delivery: commit order, never nested, reentrant commands, failing subscribers."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from inbox_core import (
    InboxInserted,
    Notification,
    StatusChanged,
    SteerUnavailable,
    notification_to_json,
)
from inbox_core.shell import EchoHost, LoopAgent

from .support import (
    Recorder,
    ScriptedHost,
    capture_loop_errors,
    check_invariants,
    msg,
    run_async,
    settle,
    text_of,
    turn_ends,
)


def describe(note: Notification) -> str:
    data: dict[str, Any] = notification_to_json(note)["data"]
    if "message" in data:
        return f"{note.type}:{data['message']['content'][0]['text']}"
    if "status" in data:
        return f"{note.type}:{data['status']}"
    return note.type


@run_async
async def test_reentrant_command_applies_at_once_and_its_notifications_queue_after() -> None:
    """SH2: commit order, never nested: a callback's command applies at once; notices follow."""
    agent = LoopAgent(EchoHost())
    seen_a: list[str] = []
    seen_b: list[str] = []
    depth = 0
    max_depth = 0
    second = msg("second")

    def a(note: Notification) -> None:
        nonlocal depth, max_depth
        depth += 1
        max_depth = max(max_depth, depth)
        seen_a.append(describe(note))
        if isinstance(note, InboxInserted) and text_of(note.message) == "first":
            agent.queue(second)
            # applied immediately: the state already holds it, its notice is queued
            assert [e.message for e in agent.inbox.next_turn][-1] == second
            assert seen_b == []  # b has not even seen "first" yet: no nesting
        depth -= 1

    def b(note: Notification) -> None:
        nonlocal depth, max_depth
        depth += 1
        max_depth = max(max_depth, depth)
        seen_b.append(describe(note))
        depth -= 1

    agent.subscribe(a)
    agent.subscribe(b)
    agent.queue(msg("first"))
    expected = ["agent/inbox/inserted:first", "agent/inbox/inserted:second"]
    assert seen_a == expected
    assert seen_b == expected
    assert max_depth == 1
    check_invariants(agent)


@run_async
async def test_R26_a_subscriber_command_error_reaches_that_subscriber_only() -> None:
    """SH2, R26, R8: a rejected reentrant command raises inside the subscriber; nothing changes."""
    agent = LoopAgent(EchoHost())
    errors = capture_loop_errors()
    caught: list[Exception] = []
    rec = Recorder()
    target = msg("t")

    def mover(note: Notification) -> None:
        if isinstance(note, InboxInserted) and note.message == target:
            before = agent.state
            try:
                agent.move(target.id, "next-step")  # idle: no live turn
            except SteerUnavailable as error:
                caught.append(error)
            assert agent.state is before

    agent.subscribe(mover)
    agent.subscribe(rec)
    agent.queue(target)
    assert len(caught) == 1
    assert rec.types == ["agent/inbox/inserted"]
    assert errors == []
    check_invariants(agent)


@run_async
async def test_R14_a_subscriber_send_starts_the_driver() -> None:
    """SH3, R14: a waking send from inside a callback (outside the driver) starts the driver."""
    host = EchoHost()
    agent = LoopAgent(host)
    woken = msg("woken")

    def waker(note: Notification) -> None:
        if isinstance(note, InboxInserted) and text_of(note.message) == "parked":
            agent.followup(woken)

    agent.subscribe(waker)
    agent.queue(msg("parked"))
    assert agent.status == "running"
    await agent.when_idle()
    assert [text_of(m) for m in host.admitted] == ["parked", "woken"]
    check_invariants(agent)


@run_async
async def test_R19_a_subscriber_followup_on_idle_keeps_one_driver_running() -> None:
    """SH3, R19: a followup sent on `agent/status idle` reopens a turn; still one driver task."""
    host = ScriptedHost()
    agent = LoopAgent(host)
    sent = False

    def again(note: Notification) -> None:
        nonlocal sent
        if note == StatusChanged("idle") and not sent:
            sent = True
            agent.followup(msg("again"))

    agent.subscribe(again)
    agent.followup(msg("first"))
    await host.complete_turn()
    assert await host.complete_turn() == ["again"]
    await agent.when_idle()
    assert host.max_active == 1
    assert {c.task for c in host.history} == {host.history[0].task}
    check_invariants(agent)


@run_async
async def test_R23_a_subscriber_cancel_on_claim_closes_the_turn_without_asking_the_host() -> None:
    """SH3, R23, D6: an abort committed before the host was asked: the driver reports at once."""
    host = ScriptedHost()
    agent = LoopAgent(host)

    def canceller(note: Notification) -> None:
        if note.type == "agent/inbox/claimed":
            agent.cancel(keep_inbox=True)

    agent.subscribe(canceller)
    agent.followup(msg("f1"))
    await agent.when_idle()
    assert host.history == []
    assert turn_ends(agent) == [(1, {"kind": "aborted", "reason": {"kind": "user"}})]
    check_invariants(agent)


@run_async
async def test_R23_R24_a_subscriber_cancel_inside_the_drivers_report() -> None:
    """SH2, R23, R24: cancel from a callback run by the driver's own report (turn 2 claimed)."""
    host = ScriptedHost()
    agent = LoopAgent(host)
    rec = Recorder()

    def canceller(note: Notification) -> None:
        if note.type == "agent/inbox/claimed" and getattr(note, "turn", 0) == 2:
            agent.cancel()

    agent.subscribe(canceller)
    agent.subscribe(rec)
    agent.followup(msg("f1"))
    agent.followup(msg("f2"))
    agent.followup(msg("f3"))
    await host.complete_turn()
    await agent.when_idle()
    assert [c.hook for c in host.history] == ["pre_step", "run_step", "turn_stopping"]
    assert turn_ends(agent) == [
        (1, {"kind": "completed"}),
        (2, {"kind": "aborted", "reason": {"kind": "user"}}),
    ]
    # f3 was cleared by the cancel; its discard comes after the claim that triggered it
    types = [describe(n) for n in rec.notes]
    assert types.index("agent/inbox/claimed:f2") < types.index("agent/inbox/discarded:f3")
    check_invariants(agent)


@run_async
async def test_a_raising_subscriber_is_reported_and_does_not_break_others() -> None:
    """SH2: a subscriber exception goes to the loop's exception handler; delivery goes on."""
    errors = capture_loop_errors()
    agent = LoopAgent(EchoHost())
    rec = Recorder()

    def broken(note: Notification) -> None:
        raise ValueError(f"boom {note.type}")

    agent.subscribe(broken)
    agent.subscribe(rec)
    agent.followup(msg("f1"))
    await agent.when_idle()
    assert rec.types == [
        "agent/inbox/inserted",
        "agent/status",
        "agent/inbox/claimed",
        "agent/status",
    ]
    assert len(errors) == 4
    assert all(isinstance(e["exception"], ValueError) for e in errors)
    assert [e["notification"] for e in errors] == rec.notes
    assert turn_ends(agent) == [(1, {"kind": "completed"})]
    check_invariants(agent)


def test_a_raising_subscriber_outside_a_loop_is_logged(caplog: pytest.LogCaptureFixture) -> None:
    """SH2: without a running loop the subscriber error is logged (never silently swallowed)."""
    agent = LoopAgent(EchoHost())

    def broken(note: Notification) -> None:
        raise ValueError("no loop")

    agent.subscribe(broken)
    with caplog.at_level(logging.ERROR, logger="inbox_core.shell"):
        agent.queue(msg("q"))
    [record] = [r for r in caplog.records if r.name == "inbox_core.shell"]
    assert record.exc_info is not None
    assert isinstance(record.exc_info[1], ValueError)


@run_async
async def test_unsubscribe_stops_delivery_at_once_and_subscribe_sees_only_later_commits() -> None:
    """SH2: unsubscribe: nothing more, even queued; a new subscriber: later commits only."""
    agent = LoopAgent(EchoHost())
    late = Recorder()
    b = Recorder()
    unsubscribe_b: list[Any] = []

    def a(note: Notification) -> None:
        if isinstance(note, InboxInserted) and text_of(note.message) == "x":
            unsubscribe_b[0]()
            unsubscribe_b[0]()  # idempotent
            agent.subscribe(late)
            agent.queue(msg("y"))

    agent.subscribe(a)
    unsubscribe_b.append(agent.subscribe(b))
    agent.queue(msg("x"), contexts=(msg("ctx"),))
    # contexts are announced first: b saw "ctx", then was unsubscribed during "x" before its turn
    assert [describe(n) for n in b.notes] == ["agent/inbox/inserted:ctx"]
    # late subscribed while "x"'s notices were queued: it sees "y" (committed after) only
    assert [describe(n) for n in late.notes] == ["agent/inbox/inserted:y"]
    await settle()
    check_invariants(agent)
