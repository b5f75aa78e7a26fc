"""Shared helpers of the core suite: messages, intents, a recording driver, snapshots.

``Run`` applies commands with ``reduce``, keeps the durable log and every
notification, and checks after each accepted command that a fresh replay of
the log equals the live projection (I5). ``Run.rejects`` applies a command that
must be refused and checks that nothing changed (R26, I11).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import attrs
import pytest

from inbox_core import (
    AgentState,
    AwaitPreStep,
    AwaitStep,
    AwaitTurnStopping,
    Cancel,
    Clear,
    Completed,
    Continue,
    Dispose,
    Enter,
    Entry,
    Failed,
    InboxSpliced,
    MaxTokens,
    Move,
    PreStepDecided,
    PreStepFailed,
    Reject,
    Remove,
    Replace,
    StepFinished,
    Transition,
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
from inbox_core.errors import InboxCoreError
from inbox_core.json_values import JsonObject
from inbox_core.values import Source

# ------------------------------------------------------------------ messages


def msg(
    message_id: str,
    text: str | None = None,
    *,
    source: Source | None = None,
    metadata: dict[str, Any] | None = None,
) -> UserMessage:
    """A message with a chosen id (imported identity, R1)."""
    return UserMessage(
        message_id,
        text if text is not None else f"text of {message_id}",
        UserSource() if source is None else source,
        metadata,
    )


# ------------------------------------------------------------------- intents
# followup, queue, steer and inject are the package's own intent constructors (R12).

# ------------------------------------------------------------- event shapes


def inserted(target: str, start: int, *entries: Entry) -> InboxSpliced:
    """The durable record of a pure insertion (no removedCount, no outcome)."""
    return InboxSpliced(target, start, 0, tuple(entries), None)  # type: ignore[arg-type]


def claimed(target: str, count: int) -> InboxSpliced:
    """The durable record of a claim: a pure deletion from the head, no outcome (R9)."""
    return InboxSpliced(target, 0, count, (), None)  # type: ignore[arg-type]


def canceled(target: str, start: int, count: int, *entries: Entry) -> InboxSpliced:
    return InboxSpliced(target, start, count, tuple(entries), "canceled")  # type: ignore[arg-type]


# ---------------------------------------------------------------- snapshots


def snapshot(state: AgentState) -> tuple[Any, ...]:
    """Every observable field of a state, including the id index of the inbox."""
    inbox = state.inbox
    ids = sorted(inbox.message_ids())
    located = tuple(
        (mid, None if (f := inbox.find(mid)) is None else (f.target, f.position, f.entry))
        for mid in ids
    )
    return (
        state.status,
        state.disposed,
        state.last_turn,
        state.awaiting,
        state.abort_cause,
        state.next_turn,
        state.next_step,
        state.phase,
        state.max_tokens,
        tuple(ids),
        located,
    )


# ------------------------------------------------------------------ driver


class Run:
    """Drives ``reduce`` and records the durable log and the notifications."""

    def __init__(self, state: AgentState | None = None, log: Iterable[Any] = ()) -> None:
        self.state = AgentState.initial() if state is None else state
        self.log: list[Any] = list(log)
        self.notes: list[Any] = []
        self.last: Transition | None = None

    def __call__(self, command: Any) -> Transition:
        transition = reduce(self.state, command)
        self.state = transition.state
        self.log.extend(transition.durable)
        self.notes.extend(transition.notifications)
        self.last = transition
        assert replay(self.log).projection() == self.state.projection()  # I5
        return transition

    def many(self, *commands: Any) -> None:
        for command in commands:
            self(command)

    def rejects(self, command: Any, error: type[BaseException]) -> BaseException:
        """``command`` raises ``error`` and changes nothing (R26, I11)."""
        state, before, log_len = self.state, snapshot(self.state), len(self.log)
        with pytest.raises(error) as info:
            reduce(state, command)
        assert self.state is state
        assert snapshot(state) == before
        assert len(self.log) == log_len
        if not state.resume_required:
            assert replay(self.log).projection() == state.projection()
        return info.value

    # -------------------------------------------------------- host reports

    @property
    def awaiting(self) -> Any:
        return self.state.awaiting

    def enter(self, messages: Sequence[UserMessage] | None = None) -> Transition:
        """Answer the awaited pre-step with ``messages`` (default: the claimed batch)."""
        awaiting = self.state.awaiting
        assert isinstance(awaiting, AwaitPreStep), awaiting
        batch = awaiting.batch if messages is None else tuple(messages)
        return self(PreStepDecided(awaiting.turn, awaiting.step, Enter(batch)))

    def finish(self, outcome: Any = None) -> Transition:
        awaiting = self.state.awaiting
        assert isinstance(awaiting, AwaitStep), awaiting
        return self(
            StepFinished(awaiting.turn, awaiting.step, Completed() if outcome is None else outcome)
        )

    def stop(self) -> Transition:
        awaiting = self.state.awaiting
        assert isinstance(awaiting, AwaitTurnStopping), awaiting
        return self(TurnStoppingDone(awaiting.turn))

    def step_through(self, outcome: Any = None) -> None:
        """Enter the claimed batch and finish the step (default Completed)."""
        self.enter()
        self.finish(outcome)

    def run_turn_to_end(self) -> None:
        """Enter, complete, and stop until the open turn closes."""
        turn = self.state.last_turn
        while self.state.turn_open and self.state.last_turn == turn:
            awaiting = self.state.awaiting
            if isinstance(awaiting, AwaitPreStep):
                self.enter()
            elif isinstance(awaiting, AwaitStep):
                self.finish()
            else:
                self.stop()


def busy_session() -> Run:
    """A session that writes every kind of durable event and every turn-end reason."""
    run = Run()
    run(queue(msg("q1")))
    run(inject(msg("i1")))
    run(followup(msg("f1"), [msg("c1")]))  # turn 1 claims i1 and q1
    run.enter()
    run(steer(msg("s1")))
    run(followup(msg("f2")))
    run(queue(msg("q2")))
    run(Move("q2", "next-step"))
    run(Replace("f2", msg("f2b")))
    run.finish(MaxTokens())  # forced step: claims s1, q2
    run.enter()
    run.finish(Continue())
    run(PreStepDecided(1, 3, Enter(())))
    run.finish()
    run.stop()  # turn/end max-tokens; turn 2 claims f1
    run(PreStepDecided(2, 1, Reject()))  # blocked; turn 3 claims f2b
    run(PreStepFailed(3, 1, "hook", "H"))  # error; idle
    run(followup(msg("g")))  # turn 4
    run(Cancel(UserCause(), keep_inbox=True))
    run(followup(msg("h")))
    run.enter()  # aborted; turn 5 claims h
    run.enter()
    run.finish(Failed("model", "M"))
    run(queue(msg("z")))
    run(queue(msg("z2")))
    run(Remove("z2"))
    run(Clear())
    run(queue(msg("y")))
    run(Dispose())
    return run


def identical(a: Any, b: Any) -> bool:
    """``a == b``, and of the same classes all the way down: frozen JSON with the same
    sizes and depths (what later limits read), ``True`` never for ``1``."""
    if type(a) is not type(b):
        return False
    if isinstance(a, JsonObject):
        return (
            (a._size, a._depth) == (b._size, b._depth)
            and list(a) == list(b)
            and all(identical(a[key], b[key]) for key in a)
        )
    if isinstance(a, tuple | list):
        return len(a) == len(b) and all(map(identical, a, b))
    if isinstance(a, dict):
        return list(a) == list(b) and all(identical(a[key], b[key]) for key in a)
    if attrs.has(type(a)):
        return all(identical(getattr(a, f.name), getattr(b, f.name)) for f in attrs.fields(type(a)))
    if isinstance(a, float) and math.isnan(a):
        return math.isnan(b)
    return bool(a == b)


def outcome(read: Callable[[Any], Any], value: Any) -> tuple[str, Any]:
    """``("ok", read(value))``, or the name and text of the typed error it raises."""
    try:
        return "ok", read(value)
    except InboxCoreError as error:
        return type(error).__name__, str(error)
