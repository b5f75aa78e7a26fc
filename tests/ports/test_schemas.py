"""The JSON Schemas of specs/schema accept what the reference writes and reject what it may not.

Every durable event, notification and command of the vectors, of a seeded
random driver and of the Hypothesis state machine is validated; a command
document validates exactly when the codec decodes it. Negative cases pin the
format rules the schemas encode (R1, R2, R5, R6, R11, D12, D17, D22).
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from inbox_core import (
    Command,
    InboxCoreError,
    command_from_json,
    command_to_json,
    event_from_json,
    event_to_json,
    notification_to_json,
)
from inbox_core.vectors import read_vector, vector_files
from tests.ports import driver
from tests.ports.schemas import NAMES, SCHEMA_DIR, documents, errors, is_valid

ROOT = Path(__file__).resolve().parents[2]
VECTORS = [read_vector(path) for path in vector_files(ROOT / "specs" / "vectors")]


def test_schema_files_are_valid_draft_2020_12() -> None:
    docs = documents()
    assert sorted(docs) == sorted(NAMES)
    for name, doc in docs.items():
        Draft202012Validator.check_schema(doc)
        assert doc["$schema"] == "https://json-schema.org/draft/2020-12/schema"
        assert doc["$id"].endswith(f"/schema/{name}.schema.json")
        assert (SCHEMA_DIR / f"{name}.schema.json").is_file()


def test_every_vector_file_matches_the_vector_schema() -> None:
    bad = {doc["name"]: errors("vector", doc)[:3] for doc in VECTORS if errors("vector", doc)}
    assert bad == {}


def test_every_vector_log_is_valid_as_log_records() -> None:
    """R5, R10: the seed and the emitted events of every vector, numbered, are log records.

    (The vector schema above already checks each event and notification on its own.)
    """
    count = 0
    for doc in VECTORS:
        seeds = [] if "replayError" in doc else doc.get("seed", [])
        events = [*seeds, *(e for s in doc["commands"] for e in s.get("durable", []))]
        for seq, event in enumerate(events):
            assert errors("log-record", {"seq": seq, **event}) == [], (doc["name"], seq)
            count += 1
    assert count > 500


def test_command_schema_agrees_with_the_decoder() -> None:
    """D17: a vector's command validates exactly when ``command_from_json`` decodes it."""
    disagree = []
    for doc in VECTORS:
        for index, step in enumerate(doc["commands"]):
            try:
                command_from_json(step["command"])
                decodes = True
            except InboxCoreError:
                decodes = False
            if decodes != is_valid("command", step["command"]):
                disagree.append((doc["name"], index, decodes))
    assert disagree == []


def _check_outputs(command: Command, durable: Any, notifications: Any) -> None:
    data = command_to_json(command)
    assert errors("command", data) == [], data
    assert command_from_json(data) == command
    for event in durable:
        encoded = event_to_json(event)
        assert errors("durable-event", encoded) == [], encoded
        assert event_from_json(encoded) == event
    for note in notifications:
        encoded = notification_to_json(note)
        assert errors("notification", encoded) == [], encoded


@pytest.mark.parametrize("seed", range(4))
def test_random_sequences_emit_valid_json(seed: int) -> None:
    """R5, R6: random command sequences (with crashes) only ever emit schema-valid documents."""
    accepted = 0
    log: list[dict[str, Any]] = []
    for step in driver.run(seed, 200):
        _check_outputs(step.command, step.durable, step.notifications)
        log.extend(event_to_json(e) for e in step.durable)
        accepted += step.error is None
    assert accepted > 100
    for seq, event in enumerate(log):
        assert is_valid("log-record", {"seq": seq, **event})


def test_state_machine_outputs_are_valid_json() -> None:
    """The Hypothesis machine of inbox_core.testing, with schema validation hooked in."""
    testing = pytest.importorskip("inbox_core.testing")
    from hypothesis import HealthCheck, settings

    class SchemaMachine(testing.InboxMachine):  # type: ignore[misc, name-defined]
        check_every_prefix = False

        def on_transition(self, command: Command, transition: Any) -> None:
            super().on_transition(command, transition)
            _check_outputs(command, transition.durable, transition.notifications)

    config = settings(
        max_examples=6,
        stateful_step_count=25,
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    testing.run_machine(SchemaMachine, config=config, seed=5)


# ------------------------------------------------------------ negative cases

MESSAGE = {"id": "a", "role": "user", "content": [{"type": "text", "text": "hi"}],
           "source": {"kind": "user"}}  # fmt: skip
ENTRY = {"message": MESSAGE, "contexts": [], "wakeup": True}


def _with(base: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    """A copy of ``base`` with ``value`` at ``a.b.c`` (``...`` deletes the key)."""
    doc = copy.deepcopy(base)
    *parents, last = path.split(".")
    target = doc
    for key in parents:
        target = target[key]
    if value is ...:
        del target[last]
    else:
        target[last] = value
    return doc


def _plugin(**fields: Any) -> dict[str, Any]:
    return _with(MESSAGE, "source", {"kind": "plugin", "plugin": "p", **fields})


REJECTED_MESSAGES = {
    "role is always user (R1)": _with(MESSAGE, "role", "assistant"),
    "ids are non-empty (R1)": _with(MESSAGE, "id", ""),
    "content is an array": _with(MESSAGE, "content", "hi"),
    "blocks are objects": _with(MESSAGE, "content", ["hi"]),
    "source is required": _with(MESSAGE, "source", ...),
    "no unknown keys": _with(MESSAGE, "extra", 1),
    "metadata is an object": _with(MESSAGE, "metadata", []),
    "notice summary <= 120 chars (R2)": _plugin(form="notice", summary="n" * 121),
    "notice summary is one line (R2)": _plugin(form="notice", summary="a\nb"),
    "notice summary is one line, even at the end": _plugin(form="notice", summary="ab\n"),
    "notice needs a summary": _plugin(form="notice"),
    "snapshot needs sections": _plugin(form="snapshot"),
    "sections only with snapshot": _plugin(form="relay", sections=[]),
    "summary only with notice": _plugin(summary="s"),
    "unknown plugin form": _plugin(form="banner"),
    "sections are {name,text}": _plugin(form="snapshot", sections=[{"name": "a"}]),
    "plugin name non-empty": _plugin(plugin=""),
    "goal round >= 1 (R28)": _with(MESSAGE, "source", {"kind": "goal", "goalId": "g", "round": 0}),
    "goal round is an integer": _with(
        MESSAGE, "source", {"kind": "goal", "goalId": "g", "round": 1.5}
    ),
    "goal id non-empty": _with(MESSAGE, "source", {"kind": "goal", "goalId": "", "round": 1}),
    "tool needs a call id": _with(MESSAGE, "source", {"kind": "tool"}),
    "built-in kinds are not extensions": _with(MESSAGE, "source", {"kind": "user", "x": 1}),
    "extension kind non-empty": _with(MESSAGE, "source", {"kind": ""}),
}


@pytest.mark.parametrize("doc", REJECTED_MESSAGES.values(), ids=REJECTED_MESSAGES.keys())
def test_message_schema_rejects(doc: dict[str, Any]) -> None:
    assert not is_valid("message", doc)


def test_message_schema_accepts_the_variants() -> None:
    """R2: every source variant, null metadata (D12), empty content, extension fields."""
    accepted = [
        MESSAGE,
        _with(MESSAGE, "metadata", None),
        _with(MESSAGE, "metadata", {"a": [1]}),
        _with(MESSAGE, "content", []),
        _plugin(),
        _plugin(form="notice", summary="n" * 120),
        _plugin(form="snapshot", sections=[{"name": "a", "text": "b"}]),
        _with(MESSAGE, "source", {"kind": "goal", "goalId": "g", "round": 3}),
        _with(MESSAGE, "source", {"kind": "tool", "callId": "c"}),
        _with(MESSAGE, "source", {"kind": "webhook", "url": "u", "nested": {"x": None}}),
    ]
    assert [errors("message", doc) for doc in accepted] == [[]] * len(accepted)


SPLICE = {"type": "agent/inbox/spliced", "data": {"target": "next-turn", "start": 0,
          "removedCount": 1, "inserted": [], "outcome": "canceled"}}  # fmt: skip
REJECTED_EVENTS = {
    "removedCount is absent when 0 (D12)": _with(SPLICE, "data.removedCount", 0),
    "an outcome needs a removal (D22)": _with(SPLICE, "data.removedCount", ...),
    "a splice changes something (R5, D22)": {
        "type": "agent/inbox/spliced",
        "data": {"target": "next-step", "start": 0, "inserted": []},
    },
    "unknown outcome": _with(SPLICE, "data.outcome", "dropped"),
    "unknown target": _with(SPLICE, "data.target", "later"),
    "start >= 0 once normalized (R5)": _with(SPLICE, "data.start", -1),
    "entries are complete (R3)": _with(SPLICE, "data.inserted", [{"message": MESSAGE}]),
    "unknown type": {"type": "turn/paused", "data": {"turn": 1}},
    "turns count from 1": {"type": "turn/start", "data": {"turn": 0}},
    "step/start names its step": {"type": "step/start", "data": {"turn": 1}},
    "step/end names its turn": {"type": "step/end", "data": {"step": 1}},
    "user/message holds a message": {"type": "user/message", "data": {"id": "a"}},
    "unknown turn/end reason (R18)": {
        "type": "turn/end",
        "data": {"turn": 1, "reason": {"kind": "stopped"}},
    },
    "error reason has message and code": {
        "type": "turn/end",
        "data": {"turn": 1, "reason": {"kind": "error", "error": {"message": "m"}}},
    },
    "aborted reason names a cause (R23)": {
        "type": "turn/end",
        "data": {"turn": 1, "reason": {"kind": "aborted", "reason": {"kind": "boss"}}},
    },
    "a hook cause has a reason": {
        "type": "turn/end",
        "data": {"turn": 1, "reason": {"kind": "aborted", "reason": {"kind": "hook"}}},
    },
    "a bare event has no seq": {"seq": 0, "type": "turn/start", "data": {"turn": 1}},
    "no unknown data keys": {"type": "turn/start", "data": {"turn": 1, "at": "now"}},
    "data is required": {"type": "turn/start"},
}


@pytest.mark.parametrize("doc", REJECTED_EVENTS.values(), ids=REJECTED_EVENTS.keys())
def test_durable_event_schema_rejects(doc: dict[str, Any]) -> None:
    assert not is_valid("durable-event", doc)


@pytest.mark.parametrize(
    "doc",
    [
        {"type": "turn/start", "data": {"turn": 1}},
        {"seq": -1, "type": "turn/start", "data": {"turn": 1}},
        {"seq": "0", "type": "turn/start", "data": {"turn": 1}},
        {"seq": 0, "type": "turn/start", "data": {"turn": 1}, "at": 5},
        {"seq": 0, "type": "turn/start", "data": {"turn": 0}},
    ],
)
def test_log_record_schema_rejects(doc: dict[str, Any]) -> None:
    assert not is_valid("log-record", doc)


def test_log_record_schema_accepts_a_record() -> None:
    assert errors("log-record", {"seq": 3, "type": "turn/start", "data": {"turn": 2}}) == []
    assert errors("log-record", {"seq": 0, **SPLICE}) == []


REJECTED_NOTIFICATIONS = {
    "claimed carries its turn (R6, R9)": {
        "type": "agent/inbox/claimed",
        "data": {"message": MESSAGE},
    },
    "no placement on inserted (R6)": {
        "type": "agent/inbox/inserted",
        "data": {"message": MESSAGE, "start": 0},
    },
    "no outcome on discarded (R6)": {
        "type": "agent/inbox/discarded",
        "data": {"message": MESSAGE, "outcome": "canceled"},
    },
    "moved names a list": {
        "type": "agent/inbox/moved",
        "data": {"message": MESSAGE, "target": "later"},
    },
    "status is idle or running": {"type": "agent/status", "data": {"status": "busy"}},
    "cancel-requested names a cause": {"type": "agent/cancel-requested", "data": {}},
    "disposed carries nothing": {"type": "agent/disposed", "data": {"why": "x"}},
    "unknown type": {"type": "agent/paused", "data": {}},
}


@pytest.mark.parametrize("doc", REJECTED_NOTIFICATIONS.values(), ids=REJECTED_NOTIFICATIONS.keys())
def test_notification_schema_rejects(doc: dict[str, Any]) -> None:
    assert not is_valid("notification", doc)


def _send(target: str, wakeup: Any, contexts: list[Any] | None = None) -> dict[str, Any]:
    return {"type": "send", "input": {"message": MESSAGE, "contexts": contexts or [],
                                      "target": target, "wakeup": wakeup}}  # fmt: skip


REJECTED_COMMANDS = {
    "an injection has no contexts (R11)": _send("next-step", False, [MESSAGE]),
    "a steer wakes: wakeup is a boolean (R11)": _send("next-step", 1),
    "every input field is mandatory (R11)": _with(_send("next-turn", True), "input.wakeup", ...),
    "unknown target": _send("now", True),
    "cancel never takes the disposed cause (D17)": {
        "type": "cancel",
        "cause": {"kind": "disposed"},
        "keepInbox": False,
    },
    "keepInbox is a boolean": {"type": "cancel", "cause": {"kind": "user"}, "keepInbox": 0},
    "splice coordinates are integers (D17)": {
        "type": "splice",
        "target": "next-turn",
        "start": "0",
        "deleteCount": 0,
        "inserted": [],
    },
    "splice needs all fields": {"type": "splice", "target": "next-turn", "start": 0},
    "move to a known list": {"type": "move", "messageId": "a", "target": "later"},
    "ids are non-empty": {"type": "remove", "messageId": ""},
    "reports count from 1": {"type": "turn-stopping-done", "turn": 0},
    "unknown decision": {
        "type": "pre-step-decided",
        "turn": 1,
        "step": 1,
        "decision": {"kind": "maybe"},
    },
    "unknown outcome": {
        "type": "step-finished",
        "turn": 1,
        "step": 1,
        "outcome": {"kind": "done"},
    },
    "a failure has a code": {
        "type": "step-finished",
        "turn": 1,
        "step": 1,
        "outcome": {"kind": "failed", "message": "m"},
    },
    "no unknown keys": {"type": "dispose", "now": True},
    "unknown command": {"type": "pause"},
    "a type is required": {"messageId": "a"},
}


@pytest.mark.parametrize("doc", REJECTED_COMMANDS.values(), ids=REJECTED_COMMANDS.keys())
def test_command_schema_rejects(doc: dict[str, Any]) -> None:
    assert not is_valid("command", doc)
    with pytest.raises(InboxCoreError):  # the decoder agrees
        command_from_json(doc)


def test_entry_schema() -> None:
    """R3: an entry is a message, its contexts and a wakeup flag, nothing else."""
    assert errors("entry", ENTRY) == []
    assert not is_valid("entry", _with(ENTRY, "contexts", ...))
    assert not is_valid("entry", _with(ENTRY, "wakeup", "true"))
    assert not is_valid("entry", _with(ENTRY, "at", 0))
    assert not is_valid("entry", _with(ENTRY, "contexts", [{"id": "c"}]))


def test_vector_schema_rejects_malformed_vectors() -> None:
    base = json.loads(json.dumps(VECTORS[0]))
    step = base["commands"][0]
    cases = [
        _with(base, "final", ...),
        _with(base, "commands", [{**step, "error": "DuplicateMessageId"}]),
        _with(base, "commands", [{"command": step["command"], "error": "Boom"}]),
        _with(base, "commands", [{"command": step["command"]}]),
        _with(base, "rules", ["rule one"]),
        _with(base, "replayError", {"seq": 0}),
        _with(base, "final", {"status": "idle"}),
        # a well-shaped rejection must still hold a valid command
        _with(base, "commands", [{"command": {"type": "pause"}, "error": "UnexpectedReport"}]),
    ]
    assert [is_valid("vector", doc) for doc in cases] == [False] * len(cases)
