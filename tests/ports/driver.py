"""A seeded-random driver of the reducer: random commands, mostly valid, some stale.

It needs no Hypothesis: ``run(seed, steps)`` yields one ``Step`` per command
(the command, and what the reducer emitted or the error it raised), with an
occasional crash (replay of the log so far, then the commands go on from the
replayed state, which usually needs ``Resume``). Used to feed the JSON Schema
checks with outputs nobody wrote by hand. Version 2 commands are drawn too:
maintenance jobs, host records on every report, goal round 0.
"""

from __future__ import annotations

import random
from collections.abc import Iterator

import attrs

from inbox_core import (
    AgentSource,
    AgentState,
    AwaitPreStep,
    AwaitStep,
    AwaitTurnStopping,
    BeginMaintenance,
    Cancel,
    Command,
    Completed,
    Continue,
    Dispose,
    DurableEvent,
    EndMaintenance,
    Enter,
    Entry,
    ExtensionSource,
    Failed,
    GoalSource,
    HookCause,
    HostRecord,
    InboxCoreError,
    MaxTokens,
    Move,
    Notification,
    ParentCause,
    PluginSource,
    PreStepDecided,
    PreStepFailed,
    Reject,
    Remove,
    Replace,
    Resume,
    Source,
    Splice,
    StepFinished,
    ToolSource,
    TurnStoppingDone,
    UserCause,
    UserMessage,
    UserSource,
    followup,
    inject,
    queue,
    reduce,
    replay,
    steer,
)
from inbox_core.commands import Clear

IDS = [f"m{n}" for n in range(10)]
TARGETS = ("next-turn", "next-step")


@attrs.frozen
class Step:
    command: Command
    durable: tuple[DurableEvent, ...]
    notifications: tuple[Notification, ...]
    error: str | None


def _source(rng: random.Random) -> Source:
    pick = rng.randrange(9)
    if pick == 0:
        return PluginSource("p", rng.choice(["instructions", "catalog", "relay", "recall", None]))
    if pick == 1:
        return PluginSource("files", "snapshot", [{"name": "a.py", "text": "x = 1"}])
    if pick == 2:
        return PluginSource("ci", "notice", summary="n" * rng.randrange(121))
    if pick == 3:
        return GoalSource(rng.choice(["g", "h"]), rng.randrange(0, 4))
    if pick == 4:
        return ToolSource(f"call-{rng.randrange(5)}")
    if pick == 5:
        return ExtensionSource("webhook", {"url": "https://example.test", "n": [1, None, 2.5]})
    if pick == 6:  # R2 v5
        return AgentSource(rng.choice(["planner", "a/b", "x" * 256]), rng.randrange(1, 4))
    return UserSource()


def _message(rng: random.Random) -> UserMessage:
    content: object = rng.choice(
        ["hello", [], [{"type": "image", "url": "u"}, {"type": "text", "text": "t"}]]
    )
    metadata = rng.choice([None, None, {"k": [True, {"n": None}]}])
    return UserMessage(rng.choice(IDS), content, _source(rng), metadata)  # type: ignore[arg-type]


def _contexts(rng: random.Random) -> tuple[UserMessage, ...]:
    return tuple(_message(rng) for _ in range(rng.choice([0, 0, 0, 1, 2])))


def _entry(rng: random.Random) -> Entry:
    return Entry(_message(rng), _contexts(rng), rng.random() < 0.5)


RECORD_DATA: tuple[object, ...] = (None, "text", 3, 2.5, [1, None], {"k": {"n": [True]}})


def _records(rng: random.Random) -> tuple[HostRecord, ...]:
    """Host records (R30): none most of the time, else one or two with any JSON data."""
    if rng.random() < 0.6:
        return ()
    return tuple(
        HostRecord(f"host/{rng.choice(['reply', 'tool', 'usage'])}", rng.choice(RECORD_DATA))
        for _ in range(rng.randrange(1, 3))
    )


def _report(rng: random.Random, state: AgentState) -> Command:
    if (state.status == "maintenance" or rng.random() < 0.03) and rng.random() < 0.6:
        return EndMaintenance(_records(rng))
    awaiting = state.awaiting
    stale = awaiting is None or rng.random() < 0.1
    turn = rng.randrange(1, 4) if stale or awaiting is None else awaiting.turn
    step = rng.randrange(1, 4)
    if not stale and isinstance(awaiting, AwaitPreStep | AwaitStep):
        step = awaiting.step
    if isinstance(awaiting, AwaitPreStep) and not stale:
        roll = rng.random()
        if roll < 0.1:
            return PreStepDecided(turn, step, Reject(), _records(rng))
        if roll < 0.15:
            return PreStepFailed(turn, step, "hook failed", "hook", _records(rng))
        batch = awaiting.batch if roll < 0.85 else (_message(rng),)
        return PreStepDecided(turn, step, Enter(batch), _records(rng))
    if isinstance(awaiting, AwaitStep) and not stale:
        outcome = rng.choice(
            [Completed(), Completed(), Continue(), MaxTokens(), Failed("boom", "E1")]
        )
        return StepFinished(turn, step, outcome, _records(rng))
    if isinstance(awaiting, AwaitTurnStopping) and not stale:
        return TurnStoppingDone(turn, _records(rng))
    return rng.choice(
        [
            TurnStoppingDone(turn),
            StepFinished(turn, step, Completed()),
            PreStepDecided(turn, step, Enter(())),
        ]
    )


def random_command(rng: random.Random, state: AgentState) -> Command:
    if state.resume_required and rng.random() < 0.8:
        return Resume()
    roll = rng.random()
    if roll < 0.45:
        return _report(rng, state)
    kind = rng.randrange(12)
    message = _message(rng)
    if kind == 0:
        return followup(message, _contexts(rng))
    if kind == 1:
        return queue(message, _contexts(rng))
    if kind == 2:
        return steer(message, _contexts(rng))
    if kind == 3:
        return inject(message)
    if kind == 4:
        inserted = tuple(_entry(rng) for _ in range(rng.randrange(3)))
        return Splice(rng.choice(TARGETS), rng.randrange(-3, 5), rng.randrange(-1, 3), inserted)
    if kind == 5:
        return Replace(rng.choice(IDS), message)
    if kind == 6:
        return Remove(rng.choice(IDS))
    if kind == 7:
        return Move(rng.choice(IDS), rng.choice(TARGETS))
    if kind == 8:
        cause = rng.choice([UserCause(), ParentCause(), HookCause("budget")])
        return Cancel(cause, rng.random() < 0.5)
    if kind == 9:
        return Clear()
    if kind == 10 and rng.random() < 0.3:
        return Dispose()
    if kind == 11 and rng.random() < 0.5:
        return BeginMaintenance()
    return Resume()


def run(seed: int, steps: int) -> Iterator[Step]:
    """``steps`` random commands from the initial state; about one in 40 is a crash point.

    A disposed agent that has converged is replaced by a fresh one (a new session).
    """
    rng = random.Random(seed)
    state = AgentState.initial()
    log: list[DurableEvent] = []
    for _ in range(steps):
        if state.disposed and state.awaiting is None:  # converged: a new session starts
            state, log = AgentState.initial(), []
        elif rng.random() < 0.025 and not state.disposed:
            state = replay(log)  # crash: restart from the durable log
        command = random_command(rng, state)
        try:
            transition = reduce(state, command)
        except InboxCoreError as error:
            yield Step(command, (), (), type(error).__name__)
            continue
        state = transition.state
        log.extend(transition.durable)
        yield Step(command, transition.durable, transition.notifications, None)
