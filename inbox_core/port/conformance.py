"""Comparing a port with the reference, step by step (R38, specs/ports.md).

A *run* is a list of steps played on a fresh agent: a caller command or a host
report (as its command JSON, well formed or not), a crash (``CRASH``: the port
reloads the log the reference wrote so far, then both apply ``Resume``), or a
load (``{"load": [...]}``: both load a log, often a corrupted one; the answer, a
``ReplayError``'s seq included, is compared, and an accepted log becomes the
agent's). ``compare_run`` plays a run on the reference and on the port at once and
returns the first ``Divergence``: the step, what the reference did and what the
port did. A run may also be given as *specs* that a ``resolve`` function turns into
steps as they are played (``generate``). ``run_vector`` plays a vector file the
same way, against the vector's own expectations. Which parts of an answer are
compared follows the parts the port declared (``protocol.PARTS``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Final

import attrs

from inbox_core.codec import PROJECTION_KEYS, event_to_json, folds_to_json, projection_to_json
from inbox_core.errors import ReplayError
from inbox_core.events import DurableEvent
from inbox_core.port.client import Port
from inbox_core.port.protocol import FOLD_PARTS
from inbox_core.port.server import reference_folds
from inbox_core.replay import replay
from inbox_core.state import AgentState
from inbox_core.vectors import apply_step, canonical, check_vector, json_diff, load_log

Json = Any
CRASH: Final = "crash"
"""The step of a run that throws the port's process state away (reload, then Resume)."""

INBOX_KEYS: Final = ("nextTurn", "nextStep")
INBOX_COMMANDS: Final = frozenset({"splice", "clear", "replace", "remove"})
RESUME: Final = {"type": "resume"}


def projection_keys(parts: Sequence[str]) -> tuple[str, ...]:
    """The projection keys a port with these parts must get right."""
    return PROJECTION_KEYS if "core" in parts else INBOX_KEYS


def fold_keys(parts: Sequence[str]) -> tuple[str, ...]:
    return tuple(part for part in FOLD_PARTS if part in parts)


def is_inbox_step(step: Json) -> bool:
    """Whether an ``inbox``-only port implements this step, well formed or not: a send that
    is quiet (``wakeup`` false) and unguarded, an edit whose entries do not wake (nothing can
    wake, so no turn ever opens), a load of a log of splices."""
    if isinstance(step, dict) and "load" in step:
        events = step["load"]
        return all(isinstance(e, dict) and e.get("type") == "agent/inbox/spliced" for e in events)
    if not isinstance(step, dict):
        return False
    kind = step.get("type")
    if kind == "send":
        data = step.get("input")
        return isinstance(data, dict) and data.get("wakeup") is False and step.get("expect") is None
    if kind == "splice":
        inserted = step.get("inserted")
        entries = inserted if isinstance(inserted, list) else []
        return not any(isinstance(entry, dict) and entry.get("wakeup") is True for entry in entries)
    return isinstance(kind, str) and kind in INBOX_COMMANDS


def needs(steps: Sequence[Json], seed: Sequence[Json]) -> str:
    """The part a run needs: ``inbox`` when every step is an inbox step and the seed holds
    splices only, else ``core``."""
    quiet_seed = is_inbox_step({"load": list(seed)})
    return "inbox" if quiet_seed and all(is_inbox_step(s) for s in steps) else "core"


@attrs.frozen
class Divergence:
    """Where a port first differs from the reference: ``step`` (None: the seed's load or
    the final folds), what was compared (``what``), and both sides as JSON."""

    step: int | None
    what: str
    reference: Json
    port: Json

    def describe(self, steps: Sequence[Json] = ()) -> str:
        where = "the seed" if self.step is None else f"step {self.step}"
        if self.step is not None and self.step < len(steps):
            where += f" ({step_name(steps[self.step])})"
        diff = json_diff(self.reference, self.port, labels=("reference", "port"))
        return f"{where}: {self.what} differs\n{diff}"


def step_name(step: Json) -> str:
    if step == CRASH:
        return CRASH
    if isinstance(step, dict) and "load" in step:
        return f"load of {len(step['load'])} events"
    return str(step.get("type")) if isinstance(step, dict) else "?"


def _answer(response: dict[str, Any]) -> Json:
    """A port's ``apply`` response in the vector step form (``error`` or the two lists)."""
    if not response["ok"]:
        return {"error": response["error"]}
    return {"durable": response["durable"], "notifications": response["notifications"]}


def _refusal(response: dict[str, Any]) -> Json:
    """A ``load`` or ``fold`` answer as compared: accepted, or the error name and seq."""
    return (
        {"ok": True} if response["ok"] else {"error": response["error"], "seq": response.get("seq")}
    )


def _same(left: Json, right: Json) -> bool:
    return canonical(left) == canonical(right)


class ReferenceRun:
    """The reference side of a run: its state and its durable log."""

    def __init__(self, seed: Sequence[DurableEvent] = (), state: AgentState | None = None) -> None:
        self.log: list[DurableEvent] = list(seed)
        if state is None:
            state = replay(self.log) if seed else AgentState.initial()
        self.state = state

    def apply(self, command: Json) -> Json:
        run = apply_step(self.state, command)
        self.state = run.state
        self.log.extend(run.events)
        return run.output

    def loaded(self, documents: Sequence[Json]) -> ReferenceRun | None:
        """The reference after ``load`` of ``documents``; None if it refuses them."""
        return reference_load(documents)[0]

    def log_json(self) -> list[Json]:
        return [event_to_json(event) for event in self.log]

    def projection(self, keys: Sequence[str]) -> dict[str, Json]:
        full = projection_to_json(self.state, self.log)
        return {key: full[key] for key in keys}


def reference_load(documents: Sequence[Json]) -> tuple[ReferenceRun | None, Json]:
    """The reference after ``load`` of ``documents`` (None: refused), and what ``load`` (or
    ``fold``) of them answers, as ``_refusal`` puts it."""
    try:
        return ReferenceRun(*load_log(documents)), {"ok": True}
    except ReplayError as error:
        return None, {"error": "ReplayError", "seq": error.seq}


def _port_projection(port: Port, keys: Sequence[str], answer: Json = None) -> Json:
    answer = answer or port.call("projection")
    if not answer["ok"]:
        return {"error": answer["error"]}
    return {key: answer["projection"].get(key) for key in keys}


Resolve = Callable[[Json, ReferenceRun], Json]


def _as_is(step: Json, _reference: ReferenceRun) -> Json:
    return step


def compare_run(
    port: Port, steps: Sequence[Json], resolve: Resolve = _as_is
) -> tuple[list[Json], Divergence | None]:
    """Play ``steps`` (or specs that ``resolve`` turns into steps against the reference as
    it is) on a fresh reference and a freshly loaded port: the steps played, up to the
    first divergence, and that divergence (None: none)."""
    keys, folds = projection_keys(port.parts), fold_keys(port.parts)
    reference = ReferenceRun()
    played: list[Json] = []
    loaded = port.call("load", log=[])
    if not loaded["ok"]:
        return played, Divergence(None, "load of an empty log", {"ok": True}, loaded)
    for index, spec in enumerate(steps):
        step = resolve(spec, reference)
        played.append(step)
        if _load(step):
            after, expected = reference_load(step["load"])
            reference = after or reference  # a refused log changes nothing
            divergence = _load_step(port, reference, expected, step["load"], index, folds)
            if divergence is not None:
                return played, divergence
            continue
        command = step
        if step == CRASH:  # both sides forget their state and replay the log
            reference = ReferenceRun(reference.log)
            answer = port.call("load", log=reference.log_json())
            if not answer["ok"]:
                return played, Divergence(index, "reload of the log", {"ok": True}, answer)
            command = RESUME
        expected = reference.apply(command)
        actual = _answer(port.call("apply", command=command))
        if not _same(expected, actual):
            return played, Divergence(index, "the answer", expected, actual)
        want, got = reference.projection(keys), _port_projection(port, keys)
        if not _same(want, got):
            return played, Divergence(index, "the projection after it", want, got)
    log = reference.log_json()
    return played, _folds(port, log, reference_folds(reference.log), folds)


def _load_step(
    port: Port,
    reference: ReferenceRun,
    expected: Json,
    documents: list[Json],
    index: int,
    folds: Sequence[str],
) -> Divergence | None:
    """``load`` of ``documents`` on both sides (``reference``: after it; ``expected``: its
    answer): the answer (a ``ReplayError``'s seq), then the projection (of the loaded log,
    or unchanged after a refusal), then the folds of the same log."""
    answer = port.call("load", log=documents)
    if not _same(expected, _refusal(answer)):
        return Divergence(index, "the answer to load", expected, _refusal(answer))
    keys = projection_keys(port.parts)
    want = reference.projection(keys)
    got = _port_projection(port, keys, answer if answer["ok"] else None)
    if not _same(want, got):
        return Divergence(index, "the projection after load", want, got)
    if not folds:
        return None
    if "error" in expected:
        got = _refusal(port.call("fold", log=documents))
        return None if _same(expected, got) else Divergence(index, "fold", expected, got)
    return _folds(port, documents, reference_folds(reference.log), folds, index)


def _folds(
    port: Port,
    log: list[Json],
    expected: dict[str, Json],
    keys: Sequence[str],
    step: int | None = None,
) -> Divergence | None:
    """The port's folds of ``log`` against ``expected``, for ``keys`` (none: nothing to do)."""
    if not keys:
        return None
    answer = port.call("fold", log=log)
    got = {key: answer.get(key) for key in keys} if answer["ok"] else _refusal(answer)
    wanted = {key: expected[key] for key in keys}
    return None if _same(wanted, got) else Divergence(step, "the folds of the log", wanted, got)


@attrs.frozen
class VectorOutcome:
    """A vector through a port: passed, skipped (it needs a part the port lacks), or the
    divergence."""

    name: str
    skipped: bool = False
    divergence: Divergence | None = None
    problem: str = ""

    @property
    def passed(self) -> bool:
        return not self.skipped and self.divergence is None and not self.problem


def run_vector(port: Port, doc: Json) -> VectorOutcome:
    """Run one vector document through ``port`` against the vector's expectations."""
    check_vector(doc)
    name, seed, steps = doc["name"], doc.get("seed", []), [s["command"] for s in doc["commands"]]
    if "core" not in port.parts and (needs(steps, seed) != "inbox" or "replayError" in doc):
        return VectorOutcome(name, skipped=True)
    loaded = port.call("load", log=seed)
    if "replayError" in doc:
        wanted = {"error": "ReplayError", "seq": doc["replayError"]["seq"]}
        got = _refusal(loaded)
        return _outcome(name, None if _same(wanted, got) else Divergence(None, "load", wanted, got))
    if not loaded["ok"]:
        return _outcome(name, Divergence(None, "the load of the seed", {"ok": True}, loaded))
    for index, step in enumerate(doc["commands"]):
        expected = {key: step[key] for key in ("durable", "notifications", "error") if key in step}
        actual = _answer(port.call("apply", command=step["command"]))
        if not _same(expected, actual):
            return _outcome(name, Divergence(index, "the answer", expected, actual))
    final = doc["final"]
    keys = [key for key in projection_keys(port.parts) if key in final]
    wanted, got = {key: final[key] for key in keys}, _port_projection(port, keys)
    if not _same(wanted, got):
        return _outcome(name, Divergence(len(steps), "the final projection", wanted, got))
    log = [*seed, *(event for step in doc["commands"] for event in step.get("durable", []))]
    pinned = [key for key in fold_keys(port.parts) if key in final]
    return _outcome(name, _folds(port, log, final, pinned))


def _outcome(name: str, divergence: Divergence | None) -> VectorOutcome:
    return VectorOutcome(name, divergence=divergence)


def vector_of(steps: Sequence[Json], *, name: str, description: str) -> dict[str, Json]:
    """A replayable vector of a run, its expectations from the reference. The last crash or
    accepted load becomes the seed (the log the reference held then; a crash adds
    ``Resume``); a run that ends with a load the reference refuses becomes a vector of that
    log and its ``replayError``."""
    head: dict[str, Json] = {"name": name, "description": description, "rules": ["R38"]}
    if steps and _load(steps[-1]):
        _, answer = reference_load(steps[-1]["load"])
        if "error" in answer:
            refused = {"replayError": {"seq": answer["seq"]}, "commands": []}
            return head | {"seed": steps[-1]["load"]} | refused
    start, resume = 0, False
    for index, step in enumerate(steps):
        if step == CRASH:
            start, resume = index + 1, True
        elif _load(step) and "ok" in reference_load(step["load"])[1]:
            start, resume = index + 1, False
    seed = _seed_before(steps, start, resume)
    tail = ([RESUME] if resume else []) + [s for s in steps[start:] if not _load(s)]
    fresh = ReferenceRun(*load_log(seed))
    commands = [{"command": step, **fresh.apply(step)} for step in tail]
    final = projection_to_json(fresh.state, fresh.log) | folds_to_json(fresh.log)
    return head | ({"seed": seed} if seed else {}) | {"commands": commands, "final": final}


def _load(step: Json) -> bool:
    return isinstance(step, dict) and "load" in step


def _seed_before(steps: Sequence[Json], start: int, resume: bool) -> list[Json]:
    """The log the reference holds just before step ``start`` (after the crash's reload but
    before its ``Resume``, or the log a load accepted)."""
    reference = ReferenceRun()
    for step in steps[: start - 1 if resume else start]:
        if step == CRASH:
            reference = ReferenceRun(reference.log)
            reference.apply(RESUME)
        elif _load(step):
            reference = reference.loaded(step["load"]) or reference
        else:
            reference.apply(step)
    return reference.log_json()
