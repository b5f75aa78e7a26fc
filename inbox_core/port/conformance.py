"""Comparing a port with the reference, step by step (R38, specs/ports.md).

A *run* is a list of steps played on a fresh agent: a caller command or a host
report (as its command JSON), or a crash (``CRASH``: the port reloads the log the
reference wrote so far, then both apply ``Resume``). ``compare_run`` plays a run
on the reference and on the port at once and returns the first ``Divergence``:
the step, what the reference did and what the port did. ``run_vector`` plays a
vector file the same way, against the vector's own expectations. Which parts of
an answer are compared follows the parts the port declared (``protocol.PARTS``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

import attrs

from inbox_core.codec import PROJECTION_KEYS, event_to_json, folds_to_json, projection_to_json
from inbox_core.events import DurableEvent
from inbox_core.port.client import PortProcess
from inbox_core.port.protocol import FOLD_PARTS
from inbox_core.port.server import reference_folds
from inbox_core.replay import replay
from inbox_core.state import AgentState
from inbox_core.vectors import (
    apply_step,
    canonical,
    check_vector,
    decode_seed,
    json_diff,
)

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
    """Whether an ``inbox``-only port implements this step: a quiet, unguarded send, or an
    edit whose entries are quiet (nothing can wake, so no turn ever opens)."""
    if step == CRASH or not isinstance(step, dict):
        return False
    kind = step.get("type")
    if kind == "send":
        return step.get("input", {}).get("wakeup") is False and "expect" not in step
    if kind == "splice":
        return all(entry.get("wakeup") is False for entry in step.get("inserted", []))
    if kind == "replace":
        return True
    return kind in INBOX_COMMANDS


def needs(steps: Sequence[Json], seed: Sequence[Json]) -> str:
    """The part a run needs: ``inbox`` when every step is an inbox step and the seed holds
    splices only, else ``core``."""
    quiet_seed = all(event.get("type") == "agent/inbox/spliced" for event in seed)
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
            shown = steps[self.step]
            where += f" ({shown if shown == CRASH else shown.get('type')})"
        diff = json_diff(self.reference, self.port, labels=("reference", "port"))
        return f"{where}: {self.what} differs\n{diff}"


def _answer(response: dict[str, Any]) -> Json:
    """A port's ``apply`` response in the vector step form (``error`` or the two lists)."""
    if not response["ok"]:
        return {"error": response["error"]}
    return {"durable": response["durable"], "notifications": response["notifications"]}


def _same(left: Json, right: Json) -> bool:
    return canonical(left) == canonical(right)


class ReferenceRun:
    """The reference side of a run: its state and its durable log as JSON."""

    def __init__(self, seed: Sequence[DurableEvent] = ()) -> None:
        self.log: list[DurableEvent] = list(seed)
        self.state = replay(self.log) if seed else AgentState.initial()

    def apply(self, command: Json) -> Json:
        run = apply_step(self.state, command)
        self.state = run.state
        self.log.extend(run.events)
        return run.output

    def log_json(self) -> list[Json]:
        return [event_to_json(event) for event in self.log]

    def projection(self, keys: Sequence[str]) -> dict[str, Json]:
        full = projection_to_json(self.state, self.log)
        return {key: full[key] for key in keys}


def _port_projection(port: PortProcess, keys: Sequence[str]) -> Json:
    answer = port.call("projection")
    if not answer["ok"]:
        return {"error": answer["error"]}
    return {key: answer["projection"].get(key) for key in keys}


def compare_run(port: PortProcess, steps: Sequence[Json]) -> Divergence | None:
    """Play ``steps`` on a fresh reference and a freshly loaded port; the first divergence."""
    keys = projection_keys(port.parts)
    reference = ReferenceRun()
    loaded = port.call("load", log=[])
    if not loaded["ok"]:
        return Divergence(None, "load of an empty log", {"ok": True}, loaded)
    for index, step in enumerate(steps):
        command = RESUME if step == CRASH else step
        if step == CRASH:  # both sides forget their state and replay the log
            reference = ReferenceRun(reference.log)
            answer = port.call("load", log=reference.log_json())
            if not answer["ok"]:
                return Divergence(index, "reload of the log", {"ok": True}, answer)
        expected = reference.apply(command)
        actual = _answer(port.call("apply", command=command))
        if not _same(expected, actual):
            return Divergence(index, "the answer", expected, actual)
        want, got = reference.projection(keys), _port_projection(port, keys)
        if not _same(want, got):
            return Divergence(index, "the projection after it", want, got)
    expected_folds = reference_folds(reference.log)
    return _folds(port, reference.log_json(), expected_folds, fold_keys(port.parts))


def _folds(
    port: PortProcess, log: list[Json], expected: dict[str, Json], keys: Sequence[str]
) -> Divergence | None:
    """The port's folds of ``log`` against ``expected``, for ``keys`` (none: nothing to do)."""
    if not keys:
        return None
    answer = port.call("fold", log=log)
    got = {key: answer.get(key) for key in keys} if answer["ok"] else {"error": answer["error"]}
    wanted = {key: expected[key] for key in keys}
    return None if _same(wanted, got) else Divergence(None, "the folds of the log", wanted, got)


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


def run_vector(port: PortProcess, doc: Json) -> VectorOutcome:
    """Run one vector document through ``port`` against the vector's expectations."""
    check_vector(doc)
    name, seed, steps = doc["name"], doc.get("seed", []), [s["command"] for s in doc["commands"]]
    if "core" not in port.parts and (needs(steps, seed) != "inbox" or "replayError" in doc):
        return VectorOutcome(name, skipped=True)
    loaded = port.call("load", log=seed)
    if "replayError" in doc:
        wanted = {"error": "ReplayError", "seq": doc["replayError"]["seq"]}
        got = {"error": loaded.get("error"), "seq": loaded.get("seq")}
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
    """A replayable vector of a run, its expectations from the reference. A crash becomes
    the seed: the log the reference wrote up to the last crash, then ``Resume``."""
    last = max((i for i, step in enumerate(steps) if step == CRASH), default=-1)
    reference = ReferenceRun()
    for step in steps[: max(last, 0)]:  # earlier crashes: a reload changes nothing, Resume
        reference.apply(RESUME if step == CRASH else step)
    seed = reference.log_json()
    tail = ([RESUME] if last >= 0 else []) + list(steps[last + 1 :])
    fresh = ReferenceRun(decode_seed(seed))
    commands = [{"command": step, **fresh.apply(step)} for step in tail]
    final = projection_to_json(fresh.state, fresh.log) | folds_to_json(fresh.log)
    doc: dict[str, Json] = {"name": name, "description": description, "rules": ["R38"]}
    if seed:
        doc["seed"] = seed
    return doc | {"commands": commands, "final": final}
