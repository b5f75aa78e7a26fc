"""What the random phase plays (R38): runs drawn from a seeded ``random.Random``, swarmed.

A run is a list of *specs*, each resolved into a concrete step against the
reference at the moment it is played (``resolve``), so that a run stays meaningful
when the shrinker drops a step before it:

- ``caller``: a caller command (every intent with contexts and expectations, edits,
  moves, cancels both ways, dispose, Resume, maintenance); an edit by id may name
  the ``pick``-th pending id of the moment;
- ``answer``: the host's answer to what the reference awaits (a pre-step's batch
  entered, part of it, more, a rejection or a failure; a step's outcome; the
  turn-stopping listeners; a maintenance job's end), chosen by ``pick`` among the
  answers of the moment, with host records; while nothing is awaited, a stale report;
- ``malformed``: a command or report broken one to three ways (a key dropped or
  added, a value swapped for another JSON type, tag or enum value, or for one that
  breaks a value rule; an injection given contexts): the typed error is compared;
- ``crash``: the port forgets its state, reloads the reference's log, then Resume;
- ``load``: the reference's log corrupted (events dropped, duplicated, swapped, a
  field changed; records numbered, some wrongly) and loaded: a ``ReplayError``'s seq
  is compared, or the state it loads.

Each run favours a few of these at random (*swarm testing*: a weight per kind, some
kinds off, contexts, guards and records on or off, a smaller or larger id pool), so
that across runs rare combinations come up often (a keep-inbox cancel with pending
input, a failing pre-step, a corrupt log that still replays) without longer runs. A
run of an ``inbox``-only port draws only the steps that part declares.
"""

from __future__ import annotations

import copy
import random
from collections.abc import Sequence
from typing import Any, Final

import attrs

from inbox_core.codec import command_to_json, event_to_json
from inbox_core.commands import (
    BeginMaintenance,
    Cancel,
    Clear,
    Command,
    Completed,
    Continue,
    Dispose,
    EndMaintenance,
    Enter,
    Expectation,
    ExpectIdle,
    ExpectTurn,
    Failed,
    MaxTokens,
    Move,
    PreStepDecided,
    PreStepFailed,
    Reject,
    Remove,
    Replace,
    Resume,
    Send,
    Splice,
    StepFinished,
    TurnStoppingDone,
)
from inbox_core.events import HostRecord
from inbox_core.port.conformance import CRASH, ReferenceRun, is_inbox_step
from inbox_core.state import AwaitPreStep, AwaitStep, AwaitTurnStopping
from inbox_core.values import (
    AgentSource,
    Entry,
    ExtensionSource,
    GoalSource,
    HookCause,
    InjectInput,
    NextTurnInput,
    ParentCause,
    PluginForm,
    PluginSource,
    SnapshotSection,
    Source,
    SteerInput,
    ToolSource,
    UserCause,
    UserMessage,
    UserSource,
)

Json = Any
Spec = dict[str, Any]

CALLERS: Final = (
    "followup", "queue", "steer", "inject", "splice", "clear", "replace", "remove", "move",
    "cancel", "cancel-keep", "dispose", "resume", "maintenance",
)  # fmt: skip
INBOX_CALLERS: Final = ("queue", "inject", "splice", "clear", "replace", "remove")
IDS: Final = tuple(f"m{i}" for i in range(24))
TARGETS: Final = ("next-turn", "next-step")

TEXTS: Final = ("", "a", "hi", "ok?", "é", "a\u2028b", "\x85", "😀", "n\x00l", "\r\n")
"""Storable text that naive line readers and encoders mishandle (issue 17)."""
AGENT_IDS: Final = ("planner", "..", "a/b", "é", "x" * 256)
"""Agent ids at the edges of ``limits.agent_id`` (dot segments, a slash, the longest)."""
SCALARS: Final = (None, True, False, 0, -3, 2**63 - 1, -(2**63), 1.5, 1e-05, 1e16, 0.0, "x")
"""JSON a port in another language reads wrong when careless: int64 bounds, float forms."""
OTHERS: Final[tuple[Json, ...]] = (
    None, 0, -1, 1.0, 2**53, True, "", "x", "later", "host/", "disposed", [], [1], {},
    {"kind": "user"}, {"kind": "disposed"}, {"type": "host/x", "data": 1}, "n" * 121, "agent",
)  # fmt: skip
"""What a malformed document's value is swapped for: other JSON types, tags and enum values
(``agent``: a built-in source kind since v5, D52), and values that break a value's rule (an
empty id, turn 0, 2^53, a 121-character summary)."""


@attrs.frozen
class Swarm:
    """What one run favours: a weight per step kind and per caller command (0: never),
    and whether inputs carry contexts, commands guards, reports records."""

    core: bool
    kinds: dict[str, int]
    callers: dict[str, int]
    pace: int
    contexts: bool
    guards: bool
    records: bool
    ids: int

    @classmethod
    def draw(cls, rng: random.Random, core: bool) -> Swarm:
        """Caller commands (and, for a core port, the host's answers) in every run; each
        other kind of step in some runs, each other caller command in about a third."""
        kinds = {"caller": 8, "answer": 4 if core else 0}
        for kind in ("stale", "malformed", "crash", "load") if core else ("malformed", "load"):
            kinds[kind] = rng.choice(_OTHER_WEIGHTS[kind])
        names = CALLERS if core else INBOX_CALLERS
        callers = {name: rng.choice((1, 3, 9)) if rng.random() < 0.3 else 0 for name in names}
        for favourite in ("followup", "queue") if core else ("queue",):
            callers[favourite] = max(callers[favourite], rng.choice((3, 9)))  # lists fill
        if callers.get("dispose"):
            callers["dispose"] = 1  # the end of a run: nothing but reports is accepted after
        return cls(
            core,
            kinds,
            callers,
            rng.choice((1, 2, 4, 8)),  # how fast the host answers, against the callers
            rng.random() < 0.5,
            core and rng.random() < 0.5,
            core and rng.random() < 0.5,
            rng.choice((4, 8, 16, len(IDS))),
        )


_OTHER_WEIGHTS: Final = {
    "stale": (0, 1, 2),
    "crash": (0, 1, 2),
    "load": (0, 1, 2, 4),
    "malformed": (0, 1, 3, 6),
}
"""The weights a run may give each kind of step besides callers and answers (0: none)."""


def _weighted(rng: random.Random, weights: dict[str, int]) -> str:
    names = [name for name, weight in weights.items() if weight]
    return rng.choices(names, [weights[name] for name in names])[0]


# ---------------------------------------------------------------------- values


def _json(rng: random.Random, depth: int = 0) -> Json:
    roll = rng.random()
    if depth < 2 and roll < 0.15:
        return [_json(rng, depth + 1) for _ in range(rng.randrange(3))]
    if depth < 2 and roll < 0.3:
        return {rng.choice(TEXTS): _json(rng, depth + 1) for _ in range(rng.randrange(3))}
    return rng.choice(SCALARS) if roll < 0.7 else rng.choice(TEXTS)


def _source(rng: random.Random) -> Source:
    roll = rng.randrange(12)
    if roll < 6:
        return UserSource()
    if roll == 6:
        form: PluginForm | None = rng.choice((None, "instructions", "snapshot", "notice", "relay"))
        sections = [SnapshotSection("s", rng.choice(TEXTS))] if form == "snapshot" else None
        summary = rng.choice(("build is green", "é")) if form == "notice" else None
        return PluginSource("p", form, sections, summary)
    if roll in (7, 8):
        return GoalSource(rng.choice(("g", "h")), rng.randrange(3))
    if roll == 9:
        return ToolSource(rng.choice(("c1", "c2")))
    if roll == 10:  # R2 v5
        return AgentSource(rng.choice(AGENT_IDS), rng.choice((1, 2, 2**53 - 1)))
    return ExtensionSource("webhook", {"n": _json(rng), rng.choice(TEXTS): _json(rng)})


def _message(rng: random.Random, ids: int, name: str | None = None) -> UserMessage:
    content: Any = rng.choice(TEXTS)
    if rng.random() < 0.3:
        content = [{"type": "text", "text": rng.choice(TEXTS)}, {"type": "x", "v": _json(rng)}]
    metadata = {"k": _json(rng)} if rng.random() < 0.2 else None
    return UserMessage(name or rng.choice(IDS[:ids]), content, _source(rng), metadata)


def _contexts(rng: random.Random, swarm: Swarm, message: UserMessage) -> tuple[UserMessage, ...]:
    """Contexts for ``message``: ids of their own, mostly (a duplicate id is rejected, R4)."""
    count = rng.choice((0, 0, 1, 2)) if swarm.contexts else 0
    names = [rng.choice(IDS[: swarm.ids]) if rng.random() < 0.2 else None for _ in range(count)]
    return tuple(_message(rng, 0, name or f"{message.id}.{n}") for n, name in enumerate(names))


def _records(rng: random.Random, swarm: Swarm) -> tuple[HostRecord, ...]:
    count = rng.choice((0, 1, 2)) if swarm.records else 0
    names = ("host/reply", "host/tool", "host/compaction")
    return tuple(HostRecord(rng.choice(names), _json(rng)) for _ in range(count))


def _expectation(rng: random.Random, swarm: Swarm, reference: ReferenceRun) -> Expectation | None:
    """Mostly one that holds (idle while idle, the live turn while one is), else any."""
    if not swarm.guards or rng.random() < 0.6:
        return None
    state = reference.state
    if rng.random() < 0.7:
        return ExpectIdle() if state.status == "idle" else ExpectTurn(max(1, state.last_turn))
    if rng.random() < 0.4:
        return ExpectIdle()
    return ExpectTurn(max(1, state.last_turn + rng.choice((-1, 1))))


# ------------------------------------------------------------------ the steps


_SENDS: Final = frozenset({"followup", "queue", "steer", "inject"})
_EDITS: Final = frozenset({"splice", "clear", "replace", "remove", "move", "cancel", "cancel-keep"})
_STOPS: Final = frozenset({"cancel", "cancel-keep", "dispose", "steer", "move"})


def _caller(rng: random.Random, swarm: Swarm, reference: ReferenceRun) -> Command:
    """A caller command of the kinds the run favours; sends more often while nothing is
    pending, edits while something is, cancels and steers while a turn is live (then they
    have something to act on)."""
    state = reference.state
    pending = next(state.inbox.message_ids(), None) is not None
    boost = (_EDITS if pending else _SENDS) | (_STOPS if state.awaiting else frozenset())
    weights = {kind: w * 5 if kind in boost else w for kind, w in swarm.callers.items()}
    kind = _weighted(rng, weights)
    message = _message(rng, swarm.ids)
    contexts = _contexts(rng, swarm, message)
    expect = _expectation(rng, swarm, reference)
    if kind in ("followup", "queue"):
        return Send(NextTurnInput(message, contexts, "next-turn", kind == "followup"), expect)
    if kind == "steer":
        return Send(SteerInput(message, contexts, "next-step", True), expect)
    if kind == "inject":
        return Send(InjectInput(message, (), "next-step", False), expect)
    if kind == "splice":
        entries = [_message(rng, swarm.ids) for _ in range(rng.randrange(3))]
        wakes = [swarm.core and rng.random() < 0.3 for _ in entries]
        inserted = tuple(
            Entry(m, _contexts(rng, swarm, m), wake) for m, wake in zip(entries, wakes, strict=True)
        )
        return Splice(rng.choice(TARGETS), rng.randrange(-4, 6), rng.randrange(-1, 5), inserted)
    if kind == "replace":
        return Replace(message.id, _message(rng, swarm.ids))
    if kind == "remove":
        return Remove(message.id)
    if kind == "move":
        return Move(message.id, rng.choice(TARGETS), expect)
    if kind in ("cancel", "cancel-keep"):
        cause = rng.choice((UserCause(), ParentCause(), HookCause(rng.choice(TEXTS))))
        return Cancel(cause, kind == "cancel-keep", expect)
    others: dict[str, Command] = {
        "clear": Clear(),
        "dispose": Dispose(),
        "resume": Resume(),
        "maintenance": BeginMaintenance(),
    }
    return others[kind]


def _answers(reference: ReferenceRun, records: tuple[HostRecord, ...]) -> list[Command]:
    """The host answers to what the reference awaits now (stale reports when nothing is)."""
    state = reference.state
    awaiting = state.awaiting
    if isinstance(awaiting, AwaitPreStep):
        batch, turn, step = awaiting.batch, awaiting.turn, awaiting.step
        extra = UserMessage(f"g{turn}.{step}", "go on", GoalSource("goal", turn))
        return [
            awaiting.answer(Enter(batch), records),
            awaiting.answer(Enter(batch[:1]), records),
            awaiting.answer(Enter((*batch, extra)), records),
            awaiting.answer(Reject(), records),
            awaiting.fail("pre-step failed", "E1", records),
        ]
    if isinstance(awaiting, AwaitStep):
        outcomes = (Continue(), Completed(), MaxTokens(), Failed("step failed", "E2"))
        return [awaiting.answer(outcome, records) for outcome in outcomes]
    if isinstance(awaiting, AwaitTurnStopping):
        return [awaiting.answer(records)]
    if state.status == "maintenance":
        return [EndMaintenance(records)]
    turn = max(state.last_turn, 1)
    return [
        StepFinished(turn, 1, Continue(), records),
        PreStepDecided(turn, 1, Reject(), records),
        PreStepFailed(turn, 2, "late", "E3", records),
        TurnStoppingDone(turn, records),
        EndMaintenance(records),
    ]


_ANSWER_BIAS: Final = (4, 1, 1, 1, 1)
"""How often each answer of ``_answers`` is drawn: the batch entered whole most."""


def _corrupt(rng: random.Random, document: Json, inbox: bool) -> Json:
    """``document`` broken (a copy): its shape, a value's rule, or both, in either order, so
    that a shape error comes after a value error in a document as often as before it."""
    doc = copy.deepcopy(document)
    faults = rng.choice(
        (("shape",), ("value",), ("shape", "value"), ("value", "shape"), ("shape", "shape"))
    )
    for fault in faults:
        if fault == "value" and not inbox and rng.random() < 0.2:
            doc = _value_rule(doc)
        else:
            doc = _change(rng, doc, inbox, fault)
    return doc


def _value_rule(doc: Json) -> Json:
    """A whole-command value fault: an injection with contexts, a cancel's disposed cause."""
    if doc.get("type") == "send" and isinstance(doc.get("input"), dict):
        context = copy.deepcopy(doc["input"].get("message"))
        doc["input"] |= {"target": "next-step", "wakeup": False, "contexts": [context]}
    elif doc.get("type") == "cancel":
        doc["cause"] = {"kind": "disposed"}
    return doc


def _paths(doc: Json, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [path]
    items = (
        doc.items() if isinstance(doc, dict) else enumerate(doc) if isinstance(doc, list) else ()
    )
    for key, value in items:
        found += _paths(value, (*path, key))
    return found


_VALUE_FAULTS: Final[dict[type, tuple[Any, ...]]] = {
    str: ("", "n" * 121, "host/", "a\nb", "n\x00l", "n" * 257),
    int: (0, -1, 2**53, -(2**53)),
}
"""A value of the same JSON type that breaks a rule where it stands (an empty id or name, a
long or two-line summary, a nameless record type, an agent id with a NUL or past 256
characters, turn 0, a coordinate past 2^53)."""


def _change(rng: random.Random, doc: Json, inbox: bool, fault: str = "shape") -> Json:
    """One change at a random place. ``shape``: a value swapped for another JSON type, tag or
    enum value, a key dropped or one added; ``value``: a string or an integer swapped for one
    of the same type that breaks a value rule. For an ``inbox`` port no value becomes
    ``true`` (a waking entry is no inbox step)."""
    paths = _paths(doc)[1:]
    if fault == "value":
        paths = [p for p in paths if _has_value_rule(doc, p)] or paths
    if not paths:
        return doc
    *parents, last = path = rng.choice(paths)
    parent = _at(doc, tuple(parents))
    if fault == "value" and _has_value_rule(doc, path):
        parent[last] = rng.choice(_VALUE_FAULTS[type(_at(doc, path))])
        return doc
    how = rng.choice(("swap", "swap", "swap", "drop", "add"))
    others = [other for other in OTHERS if not (inbox and other is True)]
    if how == "swap" or (how == "drop" and not isinstance(parent, dict)):
        parent[last] = copy.deepcopy(rng.choice(others))
    elif how == "drop":
        del parent[last]
    elif isinstance(parent, dict):
        # a copy, like a swap's: the document is changed further (a later fault could write
        # into a shared {} or [1]: OTHERS itself, or a cycle no JSON writer takes)
        parent[rng.choice(("extra", "seq", "kind", "data"))] = copy.deepcopy(rng.choice(others))
    return doc


_RULED: Final = frozenset(
    {"id", "messageId", "goalId", "callId", "agentId", "plugin", "summary", "type"}
)
_OPAQUE: Final = frozenset({"content", "metadata", "data"})


def _has_value_rule(doc: Json, path: tuple[Any, ...]) -> bool:
    """Whether the value at ``path`` is an integer or a ruled string (an id, a name, a
    summary, a host record's type), outside opaque JSON, which has no rule of its own."""
    value, key = _at(doc, path), path[-1]
    if _OPAQUE & {*path[:-1]} or type(value) not in _VALUE_FAULTS:
        return False
    return type(value) is int or (key in _RULED and (key != "type" or value.startswith("host/")))


def _at(doc: Json, path: tuple[Any, ...]) -> Json:
    for key in path:
        doc = doc[key]
    return doc


def _malformed(
    rng: random.Random, swarm: Swarm, reference: ReferenceRun, core: bool
) -> Json | None:
    """A broken command or report; for an ``inbox`` port one that is still an inbox step."""
    for _ in range(4):
        if core and rng.random() < 0.3:
            base = command_to_json(rng.choice(_answers(reference, _records(rng, swarm))))
        else:
            base = command_to_json(_caller(rng, swarm, reference))
        if not core and not is_inbox_step(base):
            continue
        broken = _corrupt(rng, base, not core)
        if core or is_inbox_step(broken):
            return broken
    return None


def _load_ops(rng: random.Random) -> list[list[Any]]:
    """How a log is corrupted, by position (resolved against the log of the moment): no
    change, an event dropped, duplicated, swapped with the next, or changed; then the
    records numbered or not, and if numbered, one seq off by one or not."""
    change = rng.choice(("none", "drop", "dup", "swap", "change", "change"))
    numbering = rng.choice(("none", "seq", "seq-off"))
    return [[op, rng.randrange(1 << 16), rng.randrange(1 << 16)] for op in (change, numbering)]


def draw_run(rng: random.Random, parts: Sequence[str], max_steps: int) -> list[Spec]:
    """One run for a port with ``parts``: at most ``max_steps`` specs, swarmed."""
    core = "core" in parts
    swarm = Swarm.draw(rng, core)
    reference, specs = ReferenceRun(), []
    for _ in range(rng.randint(max(1, max_steps // 2), max_steps)):
        state = reference.state
        busy = state.awaiting is not None or state.status == "maintenance"
        # a host mostly answers what the core awaits; while nothing is, a report is stale
        kinds = swarm.kinds | {"answer": swarm.kinds["answer"] * swarm.pace if busy else 0}
        kind = _weighted(rng, kinds)
        spec: Spec
        if state.resume_required and rng.random() < 0.8:  # a host resumes what it loaded
            spec = {"kind": "caller", "command": {"type": "resume"}}
        elif kind == "answer":
            bias = _ANSWER_BIAS[: len(_answers(reference, ()))]
            pick = rng.choices(range(len(bias)), bias)[0]
            spec = {"kind": "answer", "pick": pick, "records": _records_json(rng, swarm)}
        elif kind == "stale":
            spec = {"kind": "answer", "pick": rng.randrange(5), "records": [], "stale": True}
        elif kind == "malformed" and (broken := _malformed(rng, swarm, reference, core)):
            spec = {"kind": "malformed", "command": broken}
        elif kind == "crash":
            spec = {"kind": "crash"}
        elif kind == "load":
            spec = {"kind": "load", "ops": _load_ops(rng)}
        else:
            command = command_to_json(_caller(rng, swarm, reference))
            spec = {"kind": "caller", "command": command}
            if command["type"] in ("replace", "remove", "move") and rng.random() < 0.7:
                spec["pick"] = rng.randrange(1 << 16)  # a pending id, when there is one
        specs.append(spec)
        step = resolve(spec, reference, parts)
        if step == CRASH:
            reference = ReferenceRun(reference.log)
            reference.apply({"type": "resume"})
        elif isinstance(step, dict) and "load" in step:
            reference = reference.loaded(step["load"]) or reference
        else:
            reference.apply(step)
    return specs


def _records_json(rng: random.Random, swarm: Swarm) -> list[Json]:
    return [event_to_json(record) for record in _records(rng, swarm)]


# ------------------------------------------------------------------ resolution


def resolve(spec: Spec, reference: ReferenceRun, parts: Sequence[str]) -> Json:
    """The concrete step ``spec`` stands for when the reference is at ``reference``:
    a command, ``CRASH``, or ``{"load": [log records]}``."""
    kind = spec["kind"]
    if kind == "crash":
        return CRASH
    if kind == "load":
        return {"load": corrupt_log(reference.log_json(), spec["ops"], "core" not in parts)}
    if kind == "answer":
        records = tuple(HostRecord(r["type"], r["data"]) for r in spec["records"])
        answers = _answers(reference, records)
        if spec.get("stale") and (reference.state.awaiting or reference.state.status != "idle"):
            turn = max(reference.state.last_turn, 1)
            answers = [StepFinished(turn + 1, 1, Continue()), TurnStoppingDone(turn + 1)]
        return command_to_json(answers[spec["pick"] % len(answers)])
    command = copy.deepcopy(spec["command"])
    inbox = reference.state.inbox
    pending = [entry.message.id for entry in (*inbox.next_turn, *inbox.next_step)]
    if "pick" in spec and pending:  # an entry's id: a context's names no entry (D3)
        command["messageId"] = pending[spec["pick"] % len(pending)]
    return command


def corrupt_log(log: list[Json], ops: list[list[Any]], inbox: bool) -> list[Json]:
    """``log`` (event documents) with each of ``ops`` applied, by position modulo its length
    (an op that needs an event does nothing to an empty log)."""
    log = copy.deepcopy(log)
    for name, where, what in ops:
        if name in ("seq", "seq-off"):
            log = [{"seq": seq, **event} for seq, event in enumerate(log)]
            if name == "seq-off" and log:
                log[where % len(log)]["seq"] += 1 if what % 2 else -1
        elif log:
            index = where % len(log)
            if name == "drop":
                del log[index]
            elif name == "dup":
                log.insert(index, copy.deepcopy(log[index]))
            elif name == "swap" and len(log) > 1:
                index = min(index, len(log) - 2)
                log[index], log[index + 1] = log[index + 1], log[index]
            elif name == "change":
                changed = _change(random.Random(what), {"data": log[index]["data"]}, inbox)
                if "data" in changed:  # the type stays: a port of a part reads its own events
                    log[index]["data"] = changed["data"]
    return log
