"""Bad input through the shell: every typed error reaches the caller, nothing changes (R26, I11)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from inbox_core import (
    AgentDisposed,
    Completed,
    DisposedCause,
    DuplicateMessageId,
    Entry,
    InboxCoreError,
    InjectInput,
    InvalidInput,
    InvalidSplice,
    SteerUnavailable,
    UserMessage,
)
from inbox_core.shell import EchoHost, LoopAgent, MemoryLog

from .support import Recorder, ScriptedHost, check_invariants, msg, run_async

Bad = Callable[[LoopAgent, UserMessage], object]
SELF = msg("self")  # a message used as its own context

ANY_STATE: list[tuple[str, Bad, type[InboxCoreError]]] = [
    ("followup non-message", lambda a, p: a.followup("text"), InvalidInput),  # type: ignore[arg-type]
    ("followup bad contexts", lambda a, p: a.followup(msg("m"), contexts=("x",)), InvalidInput),  # type: ignore[arg-type]
    ("steer str contexts", lambda a, p: a.steer(msg("m"), contexts="abc"), InvalidInput),  # type: ignore[arg-type]
    ("queue None", lambda a, p: a.queue(None), InvalidInput),  # type: ignore[arg-type]
    ("inject non-message", lambda a, p: a.inject({"id": "x"}), InvalidInput),  # type: ignore[arg-type]
    ("send non-input", lambda a, p: a.send(p), InvalidInput),  # type: ignore[arg-type]
    ("send None", lambda a, p: a.send(None), InvalidInput),  # type: ignore[arg-type]
    (
        "inject input with contexts",
        lambda a, p: a.send(InjectInput(msg("m"), (msg("c"),), "next-step", False)),
        InvalidInput,
    ),
    ("replace empty id", lambda a, p: a.replace("", msg("m")), InvalidInput),
    ("replace non-message", lambda a, p: a.replace(p.id, "m"), InvalidInput),  # type: ignore[arg-type]
    ("remove non-str", lambda a, p: a.remove(7), InvalidInput),  # type: ignore[arg-type]
    ("move bad target", lambda a, p: a.move(p.id, "elsewhere"), InvalidInput),  # type: ignore[arg-type]
    ("cancel disposed cause", lambda a, p: a.cancel(DisposedCause()), InvalidInput),  # type: ignore[arg-type]
    ("cancel non-bool", lambda a, p: a.cancel(keep_inbox="yes"), InvalidInput),  # type: ignore[arg-type]
    ("splice bad target", lambda a, p: a.splice("nowhere", 0, 0), InvalidSplice),  # type: ignore[arg-type]
    ("splice str start", lambda a, p: a.splice("next-turn", "0", 0), InvalidSplice),  # type: ignore[arg-type]
    ("splice non-entry", lambda a, p: a.splice("next-turn", 0, 0, [p]), InvalidSplice),  # type: ignore[list-item]
    ("splice int entries", lambda a, p: a.splice("next-turn", 0, 0, 5), InvalidSplice),  # type: ignore[arg-type]
    ("splice None entries", lambda a, p: a.splice("next-turn", 0, 0, None), InvalidSplice),  # type: ignore[arg-type]
    ("splice str entries", lambda a, p: a.splice("next-turn", 0, 0, "ab"), InvalidSplice),  # type: ignore[arg-type]
    ("followup None contexts", lambda a, p: a.followup(msg("m"), contexts=None), InvalidInput),  # type: ignore[arg-type]
    ("queue int contexts", lambda a, p: a.queue(msg("m"), contexts=5), InvalidInput),  # type: ignore[arg-type]
    ("steer set contexts", lambda a, p: a.steer(msg("m"), contexts={msg("c")}), InvalidInput),  # type: ignore[arg-type]
    ("duplicate followup", lambda a, p: a.followup(p), DuplicateMessageId),
    ("duplicate steer", lambda a, p: a.steer(p), DuplicateMessageId),
    ("duplicate as context", lambda a, p: a.queue(msg("m"), contexts=(p,)), DuplicateMessageId),
    (
        "context equals message",
        lambda a, p: a.followup(SELF, contexts=(SELF,)),
        DuplicateMessageId,
    ),
    (
        "replace onto its own context's id",
        lambda a, p: a.replace(p.id, a.inbox.next_turn[0].contexts[0]),
        DuplicateMessageId,
    ),
    (
        "splice duplicate",
        lambda a, p: a.splice("next-step", 0, 0, [Entry(p, (), False)]),
        DuplicateMessageId,
    ),
]


def assert_rejected(
    agent: LoopAgent, bad: Bad, pending: UserMessage, error: type[Exception]
) -> None:
    rec = Recorder()
    unsubscribe = agent.subscribe(rec)
    log_before = agent.log.read()
    state_before = agent.state
    with pytest.raises(error):
        bad(agent, pending)
    unsubscribe()
    assert agent.state is state_before  # I11: state unchanged
    assert agent.log.read() == log_before  # I11: no events
    assert rec.notes == []  # I11: no notifications
    check_invariants(agent)


@pytest.mark.parametrize(("name", "bad", "error"), ANY_STATE, ids=[c[0] for c in ANY_STATE])
def test_R26_I11_rejected_commands_while_idle(
    name: str, bad: Bad, error: type[InboxCoreError]
) -> None:
    """R26, I11: the typed error reaches the caller; state, log and subscribers untouched."""
    agent = LoopAgent(EchoHost(), log=MemoryLog())
    pending = msg("pending")
    agent.queue(pending, contexts=(msg("ctx"),))
    assert_rejected(agent, bad, pending, error)


@pytest.mark.parametrize(("name", "bad", "error"), ANY_STATE, ids=[c[0] for c in ANY_STATE])
@run_async
async def test_R26_I11_rejected_commands_while_running(
    name: str, bad: Bad, error: type[InboxCoreError]
) -> None:
    """R26, I11: the same while a step is in flight; the turn then finishes normally."""
    host = ScriptedHost()
    agent = LoopAgent(host)
    agent.followup(msg("run"))
    (await host.next("pre_step")).enter()
    step = await host.next("run_step")
    pending = msg("pending")
    agent.queue(pending, contexts=(msg("ctx"),))
    assert_rejected(agent, bad, pending, error)
    step.answer(Completed())
    (await host.next("turn_stopping")).answer()
    await agent.when_idle()
    check_invariants(agent)


def test_R8_D2_promotion_while_idle_raises_steer_unavailable() -> None:
    """R8, D2: move to next-step needs a live turn."""
    agent = LoopAgent(EchoHost())
    pending = msg("pending")
    agent.queue(pending)
    assert_rejected(agent, lambda a, p: a.move(p.id, "next-step"), pending, SteerUnavailable)


@run_async
async def test_R25_every_command_after_dispose_raises_agent_disposed() -> None:
    """R25, D16: after dispose every command raises AgentDisposed (bad shapes: InvalidInput)."""
    agent = LoopAgent(EchoHost())
    pending = msg("pending")
    await agent.aclose()
    commands: list[Bad] = [
        lambda a, p: a.followup(msg("x")),
        lambda a, p: a.queue(msg("x")),
        lambda a, p: a.steer(msg("x")),
        lambda a, p: a.inject(msg("x")),
        lambda a, p: a.replace(p.id, msg("x")),
        lambda a, p: a.remove(p.id),
        lambda a, p: a.move(p.id, "next-step"),
        lambda a, p: a.splice("next-turn", 0, 0),
        lambda a, p: a.clear(),
        lambda a, p: a.cancel(),
        lambda a, p: a.dispose(),
    ]
    for bad in commands:
        assert_rejected(agent, bad, pending, AgentDisposed)
    # shapes are checked when the command is built, before the disposed gate (D16, D17)
    assert_rejected(agent, lambda a, p: a.followup("x"), pending, InvalidInput)  # type: ignore[arg-type]
    await agent.aclose()  # still fine


def _shown(value: object) -> str:
    """A case's id, the same in every run (pytest-xdist's workers compare them)."""
    return "object()" if type(value) is object else repr(value)


@pytest.mark.parametrize("callback", [None, 5, "print", object()], ids=_shown)
def test_R26_subscribe_refuses_what_cannot_be_called(callback: object) -> None:
    """R26, SH2: subscribe(non-callable) raises InvalidInput at once and subscribes nothing: the
    next notifications reach the other subscribers, and nothing is reported as an error."""
    agent = LoopAgent(EchoHost())
    rec = Recorder()
    agent.subscribe(rec)
    with pytest.raises(InvalidInput, match="callable"):
        agent.subscribe(callback)  # type: ignore[arg-type]
    agent.queue(msg("q"))
    assert rec.types == ["agent/inbox/inserted"]


@pytest.mark.parametrize("log", [5, "agent.db", object()], ids=_shown)
def test_R26_a_loop_agent_refuses_a_log_that_is_no_event_log(log: object) -> None:
    """R26, SH9: LoopAgent(host, log=<not an EventLog>) raises InvalidInput naming the four
    methods, instead of an AttributeError."""
    with pytest.raises(InvalidInput, match="acquire, release, append, read"):
        LoopAgent(EchoHost(), log=log)  # type: ignore[arg-type]


@pytest.mark.parametrize("host", [None, 5, object()], ids=_shown)
def test_R26_a_loop_agent_refuses_a_host_without_the_hooks(host: object) -> None:
    """R26, SH4: LoopAgent(<no pre_step/run_step/turn_stopping>) raises InvalidInput at once,
    instead of failing every turn later."""
    with pytest.raises(InvalidInput, match="pre_step, run_step, turn_stopping"):
        LoopAgent(host)  # type: ignore[arg-type]
