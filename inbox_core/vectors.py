"""Conformance vectors: the file format and a runner against the reference.

A vector (``specs/vectors/*.json``, format in ``specs/formats.md``) is one
scripted session: an optional ``seed`` of durable events replayed first, then
``commands``, each with the output the reference produces for it (durable
events and notifications, or the name of the typed error it raises), then the
``final`` projection. A port proves conformance by running every vector
through its own reducer and comparing canonical JSON; ``run_vector`` is the
reference runner (``inbox-core vectors`` and ``tools/gen_vectors.py`` use it).

A ``final`` may also hold the two folds of the log a port must reproduce from
the durable events alone: ``fates`` (R32) and ``transcript`` (R30). They are
optional keys (``FOLD_KEYS``): a vector states them when it pins a fold. The
JSON of the projection and of the folds is the codec's (``projection_to_json``,
``folds_to_json`` in ``inbox_core.codec``, re-exported here).

Everything here works on JSON data (``dict``/``list``), exactly as stored, so
the reference and a port see the same documents. Comparisons are on canonical
JSON text, so ``true`` never equals ``1`` and ``1`` never equals ``1.0``.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Final

import attrs

from inbox_core import limits
from inbox_core.codec import (
    FOLD_KEYS,
    PROJECTION_KEYS,
    command_from_json,
    event_from_json,
    event_to_json,
    folds_to_json,
    notification_to_json,
    projection_to_json,
)
from inbox_core.errors import InboxCoreError, ReplayError
from inbox_core.events import DurableEvent
from inbox_core.reducer import reduce
from inbox_core.replay import replay
from inbox_core.state import AgentState

Json = Any
"""A parsed JSON value (``dict``/``list``/``str``/``int``/``float``/``bool``/``None``)."""

VECTOR_KEYS: Final = ("name", "description", "rules", "seed", "replayError", "commands", "final")
STEP_KEYS: Final = ("command", "note", "durable", "notifications", "error")
FINAL_KEYS: Final = (*PROJECTION_KEYS, *FOLD_KEYS)
"""The projection's keys (``codec.PROJECTION``), then the folds of the whole log (seed and
emitted events, ``codec.FOLDS``): ``FOLD_KEYS`` are stated only when a vector pins them."""
REQUIRED_FINAL_KEYS: Final = ("status", "lastTurn", "nextTurn", "nextStep")


class VectorFormatError(Exception):
    """A vector document does not have the shape of the vector format."""


# ----------------------------------------------------------------- comparisons


def canonical(value: Json) -> str:
    """The canonical JSON text used for every comparison (sorted keys, no spaces)."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


# ----------------------------------------------------------------- one command


@attrs.frozen
class StepRun:
    """What one command did: the new state, its expected-output JSON and its durable events."""

    state: AgentState
    output: dict[str, Json]
    events: tuple[DurableEvent, ...]
    message: str = ""
    """The typed error's message when the command was rejected."""


def apply_step(state: AgentState, command: Json) -> StepRun:
    """Decode ``command`` and reduce it; a typed error becomes ``{"error": <class name>}``.

    A command whose JSON decodes into an invalid value raises that value's own
    error (``InvalidInput``, ``InvalidSplice``) while decoding: that is the
    step's result too, exactly like a rejection by ``reduce``. The state is
    unchanged after an error (R26, I11).
    """
    try:
        transition = reduce(state, command_from_json(command))
    except InboxCoreError as error:
        return StepRun(state, {"error": type(error).__name__}, (), str(error))
    return StepRun(
        transition.state,
        {
            "durable": [event_to_json(e) for e in transition.durable],
            "notifications": [notification_to_json(n) for n in transition.notifications],
        },
        transition.durable,
    )


def load_log(documents: Sequence[Json]) -> tuple[list[DurableEvent], AgentState]:
    """A log given as JSON, decoded and replayed: its events and the state they fold into.

    The documents are durable events, or log records that carry their ``seq``
    (formats.md section 5), which must then be their position. ``ReplayError``
    names the first event that does not decode (a shape or a value error alike),
    whose seq is not its position, or that ``replay`` refuses: what a port's
    ``load`` and ``fold`` answer for a log they cannot take (specs/ports.md).
    """
    events: list[DurableEvent] = []
    refused: ReplayError | None = None
    for index, document in enumerate(documents):
        try:
            event = event_from_json(document)
        except InboxCoreError as error:
            refused = ReplayError(index, f"the event does not decode: {error}")
            break
        seq = document.get("seq", index)
        if seq != index:
            refused = ReplayError(index, f"a log record with seq {seq} at position {index}")
            break
        events.append(event)
    state = replay(events)  # an earlier event replay refuses comes first
    if refused is not None:
        raise refused
    return events, state


# ------------------------------------------------------------------ the format


def _expect(condition: bool, message: str) -> None:
    if not condition:
        raise VectorFormatError(message)


def check_vector(doc: Json) -> None:
    """Raise ``VectorFormatError`` unless ``doc`` has the shape of a vector (not its content)."""
    _expect(isinstance(doc, dict), "a vector is a JSON object")
    unknown = sorted(set(doc) - set(VECTOR_KEYS))
    _expect(not unknown, f"unknown keys {unknown}")
    _expect(isinstance(doc.get("name"), str) and bool(doc["name"]), "name: a non-empty string")
    _expect(isinstance(doc.get("description", ""), str), "description: a string when present")
    rules = doc.get("rules")
    _expect(
        isinstance(rules, list) and all(isinstance(r, str) for r in rules),
        "rules: a list of rule ids",
    )
    _expect(isinstance(doc.get("seed", []), list), "seed: a list of durable events")
    commands = doc.get("commands")
    _expect(isinstance(commands, list), "commands: a list of steps")
    for index, step in enumerate(commands):
        where = f"commands[{index}]"
        _expect(isinstance(step, dict), f"{where}: a JSON object")
        unknown = sorted(set(step) - set(STEP_KEYS))
        _expect(not unknown, f"{where}: unknown keys {unknown}")
        _expect(isinstance(step.get("command"), dict), f"{where}: command must be an object")
        if "error" in step:
            _expect(isinstance(step["error"], str), f"{where}: error must be a class name")
            _expect(
                "durable" not in step and "notifications" not in step,
                f"{where}: an error step has no durable/notifications",
            )
        else:
            _expect(
                isinstance(step.get("durable"), list)
                and isinstance(step.get("notifications"), list),
                f"{where}: durable and notifications lists (or error) are required",
            )
    if "replayError" in doc:
        expected = doc["replayError"]
        _expect(
            isinstance(expected, dict)
            and set(expected) == {"seq"}
            and isinstance(expected["seq"], int)
            and not isinstance(expected["seq"], bool),
            'replayError: {"seq": <int>}',
        )
        _expect("seed" in doc and not commands, "replayError: needs a seed and no commands")
        _expect("final" not in doc, "replayError: a seed that fails has no final projection")
        return
    final = doc.get("final")
    _expect(isinstance(final, dict), "final: the expected projection object")
    unknown = sorted(set(final) - set(FINAL_KEYS))
    _expect(not unknown, f"final: unknown keys {unknown}")
    missing = [key for key in REQUIRED_FINAL_KEYS if key not in final]
    _expect(not missing, f"final: missing {missing}")


# ------------------------------------------------------------------ the runner


@attrs.frozen
class VectorResult:
    """Pass or fail of one vector; ``problem`` is one line, ``detail`` a readable diff."""

    name: str
    passed: bool
    problem: str = ""
    detail: str = ""
    steps: int = 0


def json_diff(
    expected: Json,
    actual: Json,
    labels: tuple[str, str] = ("expected (vector)", "actual (reference)"),
) -> str:
    """A unified diff of two JSON values, pretty-printed with sorted keys."""
    left = json.dumps(expected, indent=2, sort_keys=True, ensure_ascii=False).split("\n")
    right = json.dumps(actual, indent=2, sort_keys=True, ensure_ascii=False).split("\n")
    lines = difflib.unified_diff(left, right, *labels, lineterm="", n=3)
    return "\n".join(lines)


def first_difference(expected: Json, actual: Json, path: str = "") -> str:
    """The JSON path (``durable[0].data.start``) of the first place two values differ."""
    if isinstance(expected, dict) and isinstance(actual, dict):
        for key in [*expected, *(k for k in actual if k not in expected)]:
            if key not in expected or key not in actual:
                return f"{path}.{key}" if path else key
            if canonical(expected[key]) != canonical(actual[key]):
                return first_difference(
                    expected[key], actual[key], f"{path}.{key}" if path else key
                )
        return path
    if isinstance(expected, list) and isinstance(actual, list):
        for index, (left, right) in enumerate(zip(expected, actual, strict=False)):
            if canonical(left) != canonical(right):
                return first_difference(left, right, f"{path}[{index}]")
        return f"{path}[{min(len(expected), len(actual))}]"
    return path or "<root>"


def _summary(command: Json) -> str:
    text = json.dumps(command, separators=(",", ":"), ensure_ascii=False)
    return text if len(text) <= 160 else text[:157] + "..."


def run_vector(doc: Json) -> VectorResult:
    """Run one vector document against the reference; stop at the first difference."""
    name = doc.get("name", "?") if isinstance(doc, dict) else "?"
    try:
        check_vector(doc)
    except VectorFormatError as error:
        return VectorResult(str(name), False, f"not a vector: {error}")
    expected_error = doc.get("replayError")
    try:
        log, state = load_log(doc.get("seed", []))
    except ReplayError as error:
        if expected_error is not None and expected_error["seq"] == error.seq:
            return VectorResult(name, True)
        wanted = (
            "" if expected_error is None else f" (the vector expects seq {expected_error['seq']})"
        )
        return VectorResult(name, False, f"seed does not replay: {error}{wanted}")
    if expected_error is not None:
        return VectorResult(
            name,
            False,
            f"seed replays, but the vector expects ReplayError at seq {expected_error['seq']}",
        )
    for index, step in enumerate(doc["commands"]):
        try:
            run = apply_step(state, step["command"])
        except Exception as error:  # not a typed rejection: a bug in the reference
            return VectorResult(
                name,
                False,
                f"step {index}: the reference raised {type(error).__name__}: {error}",
                f"command: {_summary(step['command'])}",
                index,
            )
        expected = {key: step[key] for key in ("durable", "notifications", "error") if key in step}
        if canonical(expected) != canonical(run.output):
            return VectorResult(
                name,
                False,
                f"step {index} ({step['command'].get('type')}) differs from the reference"
                f" at {first_difference(expected, run.output)}",
                f"command: {_summary(step['command'])}\n{json_diff(expected, run.output)}",
                index,
            )
        state = run.state
        log.extend(run.events)
    actual = projection_to_json(state, log)
    expected_final = doc["final"]
    if any(key in expected_final for key in FOLD_KEYS):
        actual |= folds_to_json(log)
    differing = [
        key for key in expected_final if canonical(expected_final[key]) != canonical(actual[key])
    ]
    if differing:
        return VectorResult(
            name,
            False,
            f"final projection differs in {', '.join(differing)}",
            json_diff(
                {key: expected_final[key] for key in differing},
                {key: actual[key] for key in differing},
            ),
            len(doc["commands"]),
        )
    replayed = replay(log)
    if replayed.projection() != state.projection():  # I5: the reference checks itself too
        return VectorResult(
            name, False, "replay of the resulting log disagrees with the state (I5)"
        )
    return VectorResult(name, True, steps=len(doc["commands"]))


def vector_files(path: Path) -> list[Path]:
    """``path`` itself if it is a file, else the ``*.json`` files under it, sorted."""
    if path.is_dir():
        return sorted(path.glob("*.json"))
    return [path]


def read_vector(path: Path) -> Json:
    """Parse one vector file (``OSError``, ``ValueError`` and, past ``limits``, ``InvalidInput``
    propagate)."""
    return limits.parse_json(path.read_text(encoding="utf-8"))


def run_vector_file(path: Path) -> VectorResult:
    """Read and run one vector file; unreadable files fail with the reason."""
    try:
        doc = read_vector(path)
    except (OSError, ValueError, InboxCoreError) as error:
        return VectorResult(path.stem, False, f"cannot read {path}: {error}")
    return run_vector(doc)


def compact_json(value: Json, indent: int = 0, width: int = 100) -> str:
    """Readable JSON: a value stays on one line when it fits in ``width`` columns."""
    flat = json.dumps(value, ensure_ascii=False)
    if indent + len(flat) <= width or not isinstance(value, dict | list) or not value:
        return flat
    inner = " " * (indent + 2)
    if isinstance(value, dict):
        items = [
            f"{inner}{json.dumps(key, ensure_ascii=False)}: {compact_json(item, indent + 2, width)}"
            for key, item in value.items()
        ]
        return "{\n" + ",\n".join(items) + "\n" + " " * indent + "}"
    items = [inner + compact_json(item, indent + 2, width) for item in value]
    return "[\n" + ",\n".join(items) + "\n" + " " * indent + "]"


def dump_vector(doc: Mapping[str, Json]) -> str:
    """The stored text of a vector: ``compact_json`` and a final newline."""
    return compact_json(dict(doc)) + "\n"
