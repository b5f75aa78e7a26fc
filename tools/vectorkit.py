"""A small language for conformance scenarios (``tools/scenarios.py``).

A scenario is a function that drives a ``Script`` with intent-named helpers::

    @scenario("delivery-followup-idle", "R12", "R14")
    def _(s: Script) -> None:
        '''A followup while idle opens turn 1 at once.'''
        s.followup("a")
        s.enter()
        s.complete()
        s.stop()

Every helper builds one command, encodes it with the codec's JSON command form
and runs it through ``inbox_core.vectors.apply_step``, the very function the
vector runner uses: the expected outputs are whatever the reference reducer
produces. Reports default their turn/step to what the reference awaits, and
take ``records=[rec("name", data), ...]`` (host records, R30).

``raises="ErrorName"`` states that a step must be rejected, and a step
without it must succeed: a scenario that no longer does what it says fails
generation instead of silently writing a different vector.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, TypeAlias

import attrs

from inbox_core import (
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
    Expectation,
    Failed,
    HookCause,
    HostRecord,
    MaxTokens,
    Move,
    ParentCause,
    PreStepDecided,
    PreStepFailed,
    Reject,
    Remove,
    Replace,
    ReplayError,
    Resume,
    Source,
    Splice,
    StepFinished,
    TurnStoppingDone,
    UserCause,
    UserMessage,
    UserSource,
    command_to_json,
    event_to_json,
    followup,
    inject,
    message_to_json,
    queue,
    replay,
    steer,
)
from inbox_core.commands import Clear
from inbox_core.state import AgentState
from inbox_core.vectors import (
    FOLD_KEYS,
    apply_step,
    canonical,
    folds_to_json,
    projection_to_json,
)

Msg: TypeAlias = "str | UserMessage"
Guard: TypeAlias = "Expectation | None"
Json: TypeAlias = Any
RULE_ID = re.compile(r"^[RDI]\d{1,2}$")


class ScenarioError(Exception):
    """A scenario does not do what it says (generation stops)."""


def m(
    id: str,
    text: str | None = None,
    *,
    source: Source = UserSource(),
    metadata: Mapping[str, object] | None = None,
    content: Sequence[Mapping[str, object]] | None = None,
) -> UserMessage:
    """A message with an explicit id; its text defaults to the id."""
    return UserMessage(id, content if content is not None else (text or id), source, metadata)


def msg(value: Msg) -> UserMessage:
    return value if isinstance(value, UserMessage) else m(value)


def msgs(values: Iterable[Msg]) -> tuple[UserMessage, ...]:
    return tuple(msg(v) for v in values)


def entry(message: Msg, *contexts: Msg, wakeup: bool = False) -> Entry:
    return Entry(msg(message), msgs(contexts), wakeup)


def rec(name: str, data: Json = None) -> HostRecord:
    """A host record ``{"type": "host/<name>", "data": data}`` (R30)."""
    return HostRecord(f"host/{name}", data)


Records: TypeAlias = "Sequence[HostRecord]"


def mj(value: Msg, **changes: Json) -> dict[str, Json]:
    """A message's JSON form, with top-level keys replaced (to build invalid documents)."""
    data: dict[str, Json] = message_to_json(msg(value))
    data.update(changes)
    return data


class Script:
    """Builds one vector: runs every command on the reference and records it."""

    def __init__(
        self, name: str, description: str, rules: Sequence[str], folds: Sequence[str] = ()
    ) -> None:
        unknown = sorted(set(folds) - set(FOLD_KEYS))
        if unknown:
            raise ScenarioError(f"{name}: unknown folds {unknown}; known: {FOLD_KEYS}")
        self.name = name
        self.description = description
        self.rules = list(rules)
        self.folds = tuple(key for key in FOLD_KEYS if key in folds)
        self.seed: list[DurableEvent] = []
        self.seeded = False
        self.replay_error: int | None = None
        self.state = AgentState.initial()
        self.log: list[DurableEvent] = []
        self.steps: list[dict[str, Json]] = []

    # ------------------------------------------------------------------ core

    def run(self, command: Command | Json, *, raises: str | None = None, note: str = "") -> None:
        """Run one command (a value, or its JSON form for documents no value can make)."""
        if self.replay_error is not None:
            raise ScenarioError(f"{self.name}: no commands after a failing seed")
        data = command if isinstance(command, dict) else command_to_json(command)
        data = copy.deepcopy(data)
        result = apply_step(self.state, data)
        got = result.output.get("error")
        if got != raises:
            raise ScenarioError(
                f"{self.name}: step {len(self.steps)} {data.get('type')}: "
                f"expected {raises or 'success'}, the reference gave {got or 'success'}"
            )
        step: dict[str, Json] = {"command": data}
        if note:
            step["note"] = note
        step.update(result.output)
        self.steps.append(step)
        self.state = result.state
        self.log.extend(result.events)

    # --------------------------------------------------------------- seeding

    def crash(self, *, drop: int = 0) -> None:
        """The process dies here: the durable log so far (minus ``drop`` events) becomes the seed.

        Steps recorded so far are not part of the vector: it starts from the seed.
        """
        if self.seeded and not self.steps and drop == 0:
            raise ScenarioError(f"{self.name}: crash() twice in a row")
        events = self.log[: len(self.log) - drop] if drop else list(self.log)
        self.seed = events
        self.seeded = True
        self.steps = []
        self.log = list(events)
        self.state = replay(events)

    def seed_events(self, *events: DurableEvent, replay_error: int | None = None) -> None:
        """Start from hand-written durable events; ``replay_error`` = seq replay must reject."""
        self.seed = list(events)
        self.seeded = True
        self.log = list(events)
        try:
            self.state = replay(events)
        except ReplayError as error:
            if replay_error != error.seq:
                raise ScenarioError(
                    f"{self.name}: seed fails at seq {error.seq}: {error}"
                ) from None
            self.replay_error = error.seq
            return
        if replay_error is not None:
            raise ScenarioError(f"{self.name}: seed replays, expected an error at {replay_error}")

    # ---------------------------------------------------- caller commands

    # ``expect=`` guards ``Send``, ``Move`` and ``Cancel`` (R34): ``ExpectIdle()`` or
    # ``ExpectTurn(n)``.

    def followup(
        self, message: Msg, contexts: Sequence[Msg] = (), *, expect: Guard = None, **kw: Any
    ) -> None:
        self.run(followup(msg(message), msgs(contexts), expect=expect), **kw)

    def queue(
        self, message: Msg, contexts: Sequence[Msg] = (), *, expect: Guard = None, **kw: Any
    ) -> None:
        self.run(queue(msg(message), msgs(contexts), expect=expect), **kw)

    def steer(
        self, message: Msg, contexts: Sequence[Msg] = (), *, expect: Guard = None, **kw: Any
    ) -> None:
        self.run(steer(msg(message), msgs(contexts), expect=expect), **kw)

    def inject(self, message: Msg, *, expect: Guard = None, **kw: Any) -> None:
        self.run(inject(msg(message), expect=expect), **kw)

    def splice(
        self, target: str, start: int, delete_count: int, inserted: Sequence[Entry] = (), **kw: Any
    ) -> None:
        self.run(Splice(target, start, delete_count, tuple(inserted)), **kw)  # type: ignore[arg-type]

    def replace(self, message_id: str, message: Msg, **kw: Any) -> None:
        self.run(Replace(message_id, msg(message)), **kw)

    def remove(self, message_id: str, **kw: Any) -> None:
        self.run(Remove(message_id), **kw)

    def move(self, message_id: str, target: str, *, expect: Guard = None, **kw: Any) -> None:
        self.run(Move(message_id, target, expect), **kw)  # type: ignore[arg-type]

    def clear(self, **kw: Any) -> None:
        self.run(Clear(), **kw)

    def cancel(
        self,
        cause: UserCause | ParentCause | HookCause = UserCause(),
        *,
        keep_inbox: bool = False,
        expect: Guard = None,
        **kw: Any,
    ) -> None:
        self.run(Cancel(cause, keep_inbox, expect), **kw)

    def dispose(self, **kw: Any) -> None:
        self.run(Dispose(), **kw)

    def resume(self, **kw: Any) -> None:
        self.run(Resume(), **kw)

    def begin_maintenance(self, **kw: Any) -> None:
        self.run(BeginMaintenance(), **kw)

    def end_maintenance(self, records: Records = (), **kw: Any) -> None:
        self.run(EndMaintenance(tuple(records)), **kw)

    # ------------------------------------------------------- host reports

    def _awaited(self, kind: type, turn: int | None, step: int | None) -> tuple[int, int]:
        awaiting = self.state.awaiting
        if isinstance(awaiting, kind):
            turn = awaiting.turn if turn is None else turn
            if step is None:
                step = getattr(awaiting, "step", 1)
        if turn is None or step is None:
            raise ScenarioError(
                f"{self.name}: the reference awaits {awaiting!r}; give turn/step explicitly"
            )
        return turn, step

    def enter(
        self,
        messages: Sequence[Msg] | None = None,
        *,
        turn: int | None = None,
        step: int | None = None,
        records: Records = (),
        **kw: Any,
    ) -> None:
        """Answer the pre-step decision with ``Enter``; by default the claimed batch as is."""
        turn, step = self._awaited(AwaitPreStep, turn, step)
        if messages is None:
            awaiting = self.state.awaiting
            if not isinstance(awaiting, AwaitPreStep):
                raise ScenarioError(f"{self.name}: enter() needs messages when nothing is claimed")
            batch = awaiting.batch
        else:
            batch = msgs(messages)
        self.run(PreStepDecided(turn, step, Enter(batch), tuple(records)), **kw)

    def reject(
        self,
        *,
        turn: int | None = None,
        step: int | None = None,
        records: Records = (),
        **kw: Any,
    ) -> None:
        turn, step = self._awaited(AwaitPreStep, turn, step)
        self.run(PreStepDecided(turn, step, Reject(), tuple(records)), **kw)

    def pre_step_failed(
        self,
        message: str = "hook failed",
        code: str = "hook_error",
        *,
        turn: int | None = None,
        step: int | None = None,
        records: Records = (),
        **kw: Any,
    ) -> None:
        turn, step = self._awaited(AwaitPreStep, turn, step)
        self.run(PreStepFailed(turn, step, message, code, tuple(records)), **kw)

    def _finish(self, outcome: Any, turn: int | None, step: int | None, kw: Any) -> None:
        records = tuple(kw.pop("records", ()))
        turn, step = self._awaited(AwaitStep, turn, step)
        self.run(StepFinished(turn, step, outcome, records), **kw)

    def complete(self, *, turn: int | None = None, step: int | None = None, **kw: Any) -> None:
        """The step is done and asks for no other: ``Completed`` (``records=`` allowed)."""
        self._finish(Completed(), turn, step, kw)

    def cont(self, *, turn: int | None = None, step: int | None = None, **kw: Any) -> None:
        """The step asks for another (tool results): ``Continue``."""
        self._finish(Continue(), turn, step, kw)

    def max_tokens(self, *, turn: int | None = None, step: int | None = None, **kw: Any) -> None:
        self._finish(MaxTokens(), turn, step, kw)

    def fail(
        self,
        message: str = "model error",
        code: str = "model_error",
        *,
        turn: int | None = None,
        step: int | None = None,
        **kw: Any,
    ) -> None:
        self._finish(Failed(message, code), turn, step, kw)

    def stop(self, *, turn: int | None = None, records: Records = (), **kw: Any) -> None:
        """Turn-stopping listeners are done: ``TurnStoppingDone``."""
        turn, _ = self._awaited(AwaitTurnStopping, turn, 1)
        self.run(TurnStoppingDone(turn, tuple(records)), **kw)

    def turn(self, *messages: Msg) -> None:
        """A one-step turn for the open claim: enter (batch or ``messages``), complete, stop."""
        self.enter(list(messages) if messages else None)
        self.complete()
        self.stop()

    def final(self) -> dict[str, Json]:
        """The ``final`` object now: the projection, plus the folds this scenario pins."""
        final = projection_to_json(self.state, self.log)
        if self.folds:
            folded = folds_to_json(self.log)
            final.update((key, folded[key]) for key in self.folds)
        return final

    def expect(self, **projection: Json) -> None:
        """Assert parts of the current projection (keys of a vector's ``final``, folds too)."""
        actual = projection_to_json(self.state, self.log) | folds_to_json(self.log)
        for key, value in projection.items():
            if canonical(actual[key]) != canonical(value):
                raise ScenarioError(
                    f"{self.name}: after step {len(self.steps) - 1} {key} is "
                    f"{actual[key]!r}, the scenario expects {value!r}"
                )

    # ---------------------------------------------------------------- output

    def document(self) -> dict[str, Json]:
        bad = [r for r in self.rules if not RULE_ID.match(r)]
        if bad or not self.rules:
            raise ScenarioError(f"{self.name}: rule ids {bad or 'missing'}")
        if not self.steps and self.replay_error is None and not self.seeded:
            raise ScenarioError(f"{self.name}: no commands")
        doc: dict[str, Json] = {
            "name": self.name,
            "description": self.description,
            "rules": self.rules,
        }
        if self.seeded:
            doc["seed"] = [event_to_json(e) for e in self.seed]
        if self.replay_error is not None:
            doc["replayError"] = {"seq": self.replay_error}
            doc["commands"] = []
            return doc
        doc["commands"] = self.steps
        doc["final"] = self.final()
        return doc


ScenarioFn: TypeAlias = Callable[[Script], None]


@attrs.frozen
class Scenario:
    """One registered scenario; ``blocked_by`` names a reference bug that keeps it out."""

    name: str
    rules: tuple[str, ...]
    fn: ScenarioFn
    blocked_by: str | None = None
    folds: tuple[str, ...] = ()

    def build(self) -> dict[str, Json]:
        description = " ".join((self.fn.__doc__ or "").split())
        script = Script(self.name, description, self.rules, self.folds)
        self.fn(script)
        return script.document()


REGISTRY: list[Scenario] = []


def scenario(
    name: str, *rules: str, blocked_by: str | None = None, folds: Sequence[str] = ()
) -> Callable[[ScenarioFn], ScenarioFn]:
    """Register a scenario; its docstring becomes the vector's description.

    ``folds`` names the folds of the log (``"fates"``, ``"transcript"``) the
    vector's ``final`` states besides the projection (R30, R32).

    ``blocked_by`` keeps a scenario out of ``specs/vectors`` while the reference
    does not yet do what it states (the test suite expects it to fail, strictly,
    so fixing the reference shows up as a test to update).
    """

    def register(fn: ScenarioFn) -> ScenarioFn:
        if any(existing.name == name for existing in REGISTRY):
            raise ScenarioError(f"duplicate scenario name {name!r}")
        REGISTRY.append(Scenario(name, rules, fn, blocked_by, tuple(folds)))
        return fn

    return register
