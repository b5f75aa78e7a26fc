"""Workloads the benchmarks drive: message pools, the B1 steady state, the B3 log.

Everything here is deterministic (fixed ids, a seeded ``random.Random``) so that
two runs, or a run against a patched core, do the same work.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, Final

from benchmarks.floor import FloorAgent
from inbox_core import (
    AgentState,
    AwaitPreStep,
    AwaitStep,
    AwaitTurnStopping,
    Cancel,
    Completed,
    Continue,
    DurableEvent,
    Enter,
    Failed,
    HookCause,
    MaxTokens,
    Move,
    ParentCause,
    PluginSource,
    Reject,
    Remove,
    Replace,
    Send,
    ToolSource,
    UserCause,
    UserMessage,
    followup,
    inject,
    queue,
    reduce,
    steer,
)
from inbox_core.json_values import JsonObject

COMPLETED: Final = Completed()
TEXT: Final = (JsonObject({"type": "text", "text": "please summarise the build log"}),)
"""One shared content tuple: message payloads are not what these benchmarks measure."""


def message(message_id: str) -> UserMessage:
    return UserMessage(message_id, TEXT)


def followups(prefix: str, count: int) -> list[Send]:
    """``count`` prebuilt ``followup`` commands (next-turn, waking) with ids ``prefix0``..."""
    return [followup(message(f"{prefix}{i}")) for i in range(count)]


def queued(prefix: str, count: int) -> list[Send]:
    """``count`` prebuilt ``queue`` commands (next-turn, not waking)."""
    return [queue(message(f"{prefix}{i}")) for i in range(count)]


# ------------------------------------------------------------------ B1 / B6


def steady_state(sends: Iterator[Send], depth: int) -> AgentState:
    """A running turn awaiting its pre-step decision, with ``depth`` waking followups queued.

    The first followup opens turn 1 and is claimed at once; the next ``depth``
    wait in next-turn. Each B1 message (one more followup, then one complete
    turn) leaves the depth at ``depth`` again.
    """
    state = AgentState.initial()
    for _ in range(depth + 1):
        state = reduce(state, next(sends)).state
    check_steady(state, depth)
    return state


def check_steady(state: AgentState, depth: int) -> None:
    if state.status != "running" or not isinstance(state.awaiting, AwaitPreStep):
        raise AssertionError(f"not in the B1 steady state: {state.awaiting!r}")
    if state.inbox.size("next-turn") != depth or state.inbox.size("next-step") != 0:
        raise AssertionError(f"depth drifted: {state.inbox.size('next-turn')} != {depth}")


def core_messages(state: AgentState, sends: Sequence[Send]) -> AgentState:
    """B1 work through ``reduce``: per message a followup and one full turn.

    The turn completed is the one already open (it claimed the head of
    next-turn): enter its batch, complete the step, finish turn-stopping; the
    turn ends and the next one opens and claims the new head (R19), so the
    depth is unchanged. Reports are built from ``state.awaiting`` like a host
    driver would.
    """
    for send in sends:
        state = reduce(state, send).state
        pre_step: Any = state.awaiting  # AwaitPreStep (check_steady holds the shape)
        state = reduce(state, pre_step.answer(Enter(pre_step.batch))).state
        step: Any = state.awaiting  # AwaitStep
        state = reduce(state, step.answer(COMPLETED)).state
        stopping: Any = state.awaiting  # AwaitTurnStopping
        state = reduce(state, stopping.answer()).state
    return state


def floor_steady_state(messages: Iterator[UserMessage], depth: int) -> FloorAgent:
    agent = FloorAgent()
    for _ in range(depth + 1):
        agent.send("next-turn", next(messages), (), True)
    check_floor(agent, depth)
    return agent


def check_floor(agent: FloorAgent, depth: int) -> None:
    if agent.awaiting is None or agent.awaiting[0] != "pre-step" or len(agent.next_turn) != depth:
        raise AssertionError("floor not in the B1 steady state")


def floor_messages(agent: FloorAgent, messages: Sequence[UserMessage]) -> FloorAgent:
    """The same B1 work on the mutable floor."""
    for m in messages:
        agent.send("next-turn", m, (), True)
        awaiting = agent.awaiting
        assert awaiting is not None
        turn, step = awaiting[1], awaiting[2]
        agent.pre_step_decided(turn, step, awaiting[3])
        agent.step_finished(turn, step)
        agent.turn_stopping_done(turn)
    return agent


# ----------------------------------------------------------------------- B3

_SOURCES: Final = (None, None, None, PluginSource("memory"), ToolSource("call-1"))


class _LogBuilder:
    """Drives ``reduce`` with a seeded mix of producer commands and host reports."""

    def __init__(self, seed: int, cap: int) -> None:
        self.rng = random.Random(seed)
        self.cap = cap
        self.state = AgentState.initial()
        self.log: list[DurableEvent] = []
        self.serial = 0
        self.commands: dict[str, int] = {}

    def fresh(self) -> UserMessage:
        self.serial += 1
        source = self.rng.choice(_SOURCES)
        if source is None:
            return message(f"e{self.serial}")
        return UserMessage(f"e{self.serial}", TEXT, source)

    def apply(self, command: object, label: str) -> None:
        transition = reduce(self.state, command)  # type: ignore[arg-type]
        self.state = transition.state
        self.log.extend(transition.durable)
        self.commands[label] = self.commands.get(label, 0) + 1

    def pending_ids(self) -> list[tuple[str, str]]:
        inbox = self.state.inbox
        return [(e.message.id, "next-turn") for e in inbox.next_turn] + [
            (e.message.id, "next-step") for e in inbox.next_step
        ]

    def step(self) -> None:
        state, rng = self.state, self.rng
        pending = state.inbox.size("next-turn") + state.inbox.size("next-step")
        if state.awaiting is not None and (pending > self.cap or rng.random() < 0.55):
            self.report(state.awaiting)
            return
        if pending > self.cap:
            self.apply(Cancel(UserCause()), "cancel")
            return
        self.produce(pending)

    def report(self, awaiting: object) -> None:
        roll = self.rng.random()
        if isinstance(awaiting, AwaitPreStep):
            if roll < 0.03:
                self.apply(awaiting.answer(Reject()), "reject")
            elif roll < 0.05:
                self.apply(awaiting.fail("hook", "E_HOOK"), "prefail")
            else:
                self.apply(awaiting.answer(Enter(awaiting.batch)), "enter")
        elif isinstance(awaiting, AwaitStep):
            if roll < 0.65:
                outcome: object = COMPLETED
            elif roll < 0.90:
                outcome = Continue()
            elif roll < 0.96:
                outcome = MaxTokens()
            else:
                outcome = Failed("model error", "E_MODEL")
            self.apply(awaiting.answer(outcome), "step")  # type: ignore[arg-type]
        else:
            assert isinstance(awaiting, AwaitTurnStopping)
            self.apply(awaiting.answer(), "stopping")

    def produce(self, pending: int) -> None:
        rng = self.rng
        roll = rng.random()
        live = self.state.status == "running" and self.state.abort_cause is None
        if roll < 0.38:
            contexts = (self.fresh(),) if rng.random() < 0.15 else ()
            self.apply(followup(self.fresh(), contexts), "followup")
        elif roll < 0.50:
            self.apply(queue(self.fresh()), "queue")
        elif roll < 0.64:
            self.apply(steer(self.fresh()), "steer")
        elif roll < 0.76:
            self.apply(inject(self.fresh()), "inject")
        elif roll < 0.97 and pending:
            message_id, target = rng.choice(self.pending_ids())
            if roll < 0.85:
                self.apply(Replace(message_id, self.fresh()), "replace")
            elif roll < 0.92:
                self.apply(Remove(message_id), "remove")
            elif target == "next-turn" and live:
                self.apply(Move(message_id, "next-step"), "move")
            else:
                self.apply(Move(message_id, "next-turn"), "move")
        elif roll >= 0.97:
            cause = rng.choice((UserCause(), ParentCause(), HookCause("budget")))
            self.apply(Cancel(cause, keep_inbox=rng.random() < 0.3), "cancel")
        else:
            self.apply(followup(self.fresh()), "followup")


def build_log(
    events: int, *, seed: int = 6, cap: int = 40
) -> tuple[list[DurableEvent], dict[str, int], AgentState]:
    """A durable log of at least ``events`` events from a realistic command mix.

    Producers send (followup, queue, steer, inject, a few with contexts),
    edit (replace, remove, move) and cancel; the host answers pre-step
    decisions (some rejects and failures), finishes steps (continue, completed,
    max-tokens, failed) and turn-stopping. The pending depth wanders between 0
    and ``cap``, so the mix is the same from the first event to the last.
    Returns the log (whole commands only), the command counts and the live state.
    """
    builder = _LogBuilder(seed, cap)
    while len(builder.log) < events:
        builder.step()
    return builder.log, builder.commands, builder.state


def event_mix(log: Iterable[DurableEvent]) -> dict[str, int]:
    mix: dict[str, int] = {}
    for event in log:
        mix[event.type] = mix.get(event.type, 0) + 1
    return dict(sorted(mix.items()))
