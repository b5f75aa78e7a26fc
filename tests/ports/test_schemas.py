"""The JSON Schemas of specs/schema accept what the reference writes and reject what it may not.

Every durable event, notification and command of the vectors, of a seeded
random driver and of the Hypothesis state machine is validated; a command
document validates exactly when the codec decodes it, also after small changes
(both come from the codec's tables). Negative cases pin the format rules the
schemas encode (R1, R2, R5, R6, R11, R23, R30, R31, R33, D12, D17, D22). The
schemas are generated (``tools/gen_schemas.py``): the stored files must equal
what the generator writes from the code now.
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
    DecodeError,
    InboxCoreError,
    InvalidInput,
    InvalidSplice,
    command_from_json,
    command_to_json,
    event_from_json,
    event_to_json,
    message_from_json,
    notification_to_json,
)
from inbox_core.vectors import read_vector, vector_files
from tests.ports import driver
from tests.ports.schemas import (
    NAMES,
    SCHEMA_DIR,
    documents,
    errors,
    integral_float,
    is_valid,
    past_the_values,
)
from tools import gen_schemas

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


def test_stored_schemas_equal_the_generator(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Drift check: specs/schema is what tools/gen_schemas.py derives from the code now."""
    assert gen_schemas.main(["--check"]) == 0, (
        "re-run `python tools/gen_schemas.py` and review the diff of specs/schema"
    )
    assert gen_schemas.main(["--out", str(tmp_path)]) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        f"{name}.schema.json" for name in NAMES
    )
    (tmp_path / "entry.schema.json").write_text("{}\n", encoding="utf-8")
    assert gen_schemas.main(["--check", "--out", str(tmp_path)]) == 1
    assert "entry.schema.json" in capsys.readouterr().out


def test_schema_vocabulary_comes_from_the_code() -> None:
    """The closed sets of the schemas are the reference's: statuses (R31), event and
    notification types (R23, R30, R33), command tags (R31), error names."""
    docs = documents()
    notes = docs["notification"]["$defs"]
    status = notes["agentStatusNotification"]["properties"]["data"]["properties"]
    assert status["status"]["enum"] == ["idle", "running", "maintenance"]
    assert (
        "turn/abort"
        in docs["durable-event"]["$defs"]["event"]["properties"]["type"]["anyOf"][0]["enum"]
    )
    assert "agent/error" in notes["notification"]["properties"]["type"]["enum"]
    tags = docs["command"]["properties"]["type"]["enum"]
    assert {"begin-maintenance", "end-maintenance"} <= set(tags)
    names = set(docs["vector"]["$defs"]["errorName"]["enum"])
    assert "MaintenanceUnavailable" in names
    assert names.isdisjoint({"ReplayError", "LogOwned", "LogFenced", "InboxCoreError"})


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


def _decode_error(document: Any) -> bool:
    try:
        command_from_json(document)
    except DecodeError:
        return True
    except InboxCoreError:
        pass
    return False



def test_command_schema_agrees_with_the_decoder() -> None:
    """D40: a vector's command validates exactly when ``command_from_json`` raises no
    ``DecodeError`` (it decodes, or a value's rule refuses it); D47: but for one past
    ``maxCommandValues``, ``InvalidInput`` whatever its shape."""
    disagree = []
    for doc in VECTORS:
        for index, step in enumerate(doc["commands"]):
            command = step["command"]
            # the exceptions of formats.md section 10: 1.0 for an integer, too many values
            if _decode_error(command) == is_valid("command", command) and not (
                integral_float(command) or past_the_values(command)
            ):
                disagree.append((doc["name"], index))
    assert disagree == []


def _variants(doc: Any) -> Any:
    """``doc`` with one change each: a key dropped or added, a value swapped for another."""
    if isinstance(doc, dict):
        for key, value in doc.items():
            yield {k: v for k, v in doc.items() if k != key}
            for other in _variants(value):
                yield {**doc, key: other}
        yield {**doc, "extra": 1}
    elif isinstance(doc, list):
        for index, value in enumerate(doc):
            for other in _variants(value):
                yield [*doc[:index], other, *doc[index + 1 :]]
    for other in (0, -1, 1.5, "", "host/", True, None, [], {}, {"kind": "user"}):
        if other != doc or type(other) is not type(doc):
            yield other


def test_command_schema_agrees_with_the_decoder_on_changed_documents() -> None:
    """D40, one table writes both: a changed command validates exactly when it decodes
    without a ``DecodeError`` (``null`` included: it reads as absent in optional keys).
    Commands of thousands of values (the values limit's, D47) are left out: one change of
    each of their values would be as many documents."""
    seen: set[str] = set()
    disagree = []
    for doc in VECTORS[::4]:
        for step in doc["commands"][:6]:
            if past_the_values(step["command"], 1000):
                continue
            for changed in _variants(step["command"]):
                text = json.dumps(changed, sort_keys=True)
                if text in seen:
                    continue
                seen.add(text)
                if _decode_error(changed) == is_valid("command", changed):
                    disagree.append(text)
    assert len(seen) > 5000
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
    "content is an array": _with(MESSAGE, "content", "hi"),
    "blocks are objects": _with(MESSAGE, "content", ["hi"]),
    "source is required": _with(MESSAGE, "source", ...),
    "no unknown keys": _with(MESSAGE, "extra", 1),
    "metadata is an object": _with(MESSAGE, "metadata", []),
    "unknown plugin form": _plugin(form="banner"),
    "sections are {name,text}": _plugin(form="snapshot", sections=[{"name": "a"}]),
    "goal round is an integer": _with(
        MESSAGE, "source", {"kind": "goal", "goalId": "g", "round": 1.5}
    ),
    "tool needs a call id": _with(MESSAGE, "source", {"kind": "tool"}),
    "built-in kinds are not extensions": _with(MESSAGE, "source", {"kind": "user", "x": 1}),
}
"""Shape errors: the schema refuses them and the decoder says ``DecodeError`` (D40)."""

MESSAGE_VALUE_RULES = {
    "ids are non-empty (R1)": _with(MESSAGE, "id", ""),
    "notice summary <= 120 chars (R2)": _plugin(form="notice", summary="n" * 121),
    "notice summary is one line (R2)": _plugin(form="notice", summary="a\nb"),
    "notice summary is one line, even at the end": _plugin(form="notice", summary="ab\n"),
    "notice needs a summary": _plugin(form="notice"),
    "snapshot needs sections": _plugin(form="snapshot"),
    "sections only with snapshot": _plugin(form="relay", sections=[]),
    "summary only with notice": _plugin(summary="s"),
    "plugin name non-empty": _plugin(plugin=""),
    "goal round >= 0 (R2)": _with(MESSAGE, "source", {"kind": "goal", "goalId": "g", "round": -1}),
    "goal id non-empty": _with(MESSAGE, "source", {"kind": "goal", "goalId": "", "round": 1}),
    "extension kind non-empty": _with(MESSAGE, "source", {"kind": ""}),
}
"""Value rules: the schema accepts the shape, the value refuses with ``InvalidInput`` (D40)."""


@pytest.mark.parametrize("doc", REJECTED_MESSAGES.values(), ids=REJECTED_MESSAGES.keys())
def test_message_schema_rejects(doc: dict[str, Any]) -> None:
    assert not is_valid("message", doc)
    with pytest.raises(DecodeError):
        message_from_json(doc)


@pytest.mark.parametrize("doc", MESSAGE_VALUE_RULES.values(), ids=MESSAGE_VALUE_RULES.keys())
def test_message_value_rules_are_left_to_the_values(doc: dict[str, Any]) -> None:
    assert errors("message", doc) == []
    with pytest.raises(InvalidInput):
        message_from_json(doc)


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
        _with(MESSAGE, "source", {"kind": "goal", "goalId": "g", "round": 0}),  # v2: context
        _with(MESSAGE, "source", {"kind": "tool", "callId": "c"}),
        _with(MESSAGE, "source", {"kind": "webhook", "url": "u", "nested": {"x": None}}),
    ]
    assert [errors("message", doc) for doc in accepted] == [[]] * len(accepted)


SPLICE = {"type": "agent/inbox/spliced", "data": {"target": "next-turn", "start": 0,
          "removedCount": 1, "inserted": [], "outcome": "canceled"}}  # fmt: skip
REJECTED_EVENTS = {
    "unknown outcome": _with(SPLICE, "data.outcome", "dropped"),
    "unknown target": _with(SPLICE, "data.target", "later"),
    "entries are complete (R3)": _with(SPLICE, "data.inserted", [{"message": MESSAGE}]),
    "unknown type": {"type": "turn/paused", "data": {"turn": 1}},
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
    "no unknown data keys": {"type": "turn/start", "data": {"turn": 1, "at": "now"}},
    "data is required": {"type": "turn/start"},
    "turn/abort names its cause (R23)": {"type": "turn/abort", "data": {"turn": 1}},
    "turn/abort names its turn": {"type": "turn/abort", "data": {"cause": {"kind": "user"}}},
    "turn/abort causes are causes": {
        "type": "turn/abort",
        "data": {"turn": 1, "cause": {"kind": "boss"}},
    },
    "a host record has data": {"type": "host/reply"},
    "a host record is {type, data}": {"type": "host/reply", "data": 1, "at": 0},
    "host is a prefix, not a type": {"type": "hosts/reply", "data": 1},
}


EVENT_VALUE_RULES = {
    "removedCount is absent when 0 (D12)": _with(SPLICE, "data.removedCount", 0),
    "turns count from 1": {"type": "turn/start", "data": {"turn": 0}},
    "a host record has a name (R30)": {"type": "host/", "data": {}},
}
"""Value rules: the schema accepts the shape, the value refuses with ``InvalidInput`` (D40).
The splice rules of D22 (an outcome needs a removal, a splice changes something, a start
within the list) are replay's: the event decodes."""


@pytest.mark.parametrize("doc", REJECTED_EVENTS.values(), ids=REJECTED_EVENTS.keys())
def test_durable_event_schema_rejects(doc: dict[str, Any]) -> None:
    assert not is_valid("durable-event", doc)
    with pytest.raises(DecodeError):
        event_from_json(doc)


@pytest.mark.parametrize("doc", EVENT_VALUE_RULES.values(), ids=EVENT_VALUE_RULES.keys())
def test_event_value_rules_are_left_to_the_values(doc: dict[str, Any]) -> None:
    assert errors("durable-event", doc) == []
    with pytest.raises(InvalidInput):
        event_from_json(doc)


@pytest.mark.parametrize(
    "doc",
    [
        {"type": "turn/start", "data": {"turn": 1}},
        {"seq": "0", "type": "turn/start", "data": {"turn": 1}},
        {"seq": 0, "type": "turn/start", "data": {"turn": 1}, "at": 5},
    ],
)
def test_log_record_schema_rejects(doc: dict[str, Any]) -> None:
    assert not is_valid("log-record", doc)


@pytest.mark.parametrize(
    "doc",
    [
        {"type": "turn/abort", "data": {"turn": 2, "cause": {"kind": "disposed"}}},
        {"type": "turn/abort", "data": {"turn": 1, "cause": {"kind": "hook", "reason": "r"}}},
        {"type": "host/reply", "data": {"text": "hi", "calls": [{"id": 1}]}},
        {"type": "host/x", "data": None},
        {"type": "host/usage", "data": [1, 2.5, "three", False]},
        {"type": "host/a/b c", "data": "any string"},
    ],
)
def test_durable_event_schema_accepts_v2_events(doc: dict[str, Any]) -> None:
    """R23: turn/abort {turn, cause}; R30: host records with any JSON data, verbatim."""
    assert errors("durable-event", doc) == []
    assert event_to_json(event_from_json(doc)) == doc


def test_log_record_schema_accepts_a_record() -> None:
    record = {"seq": 0, "type": "turn/start", "data": {"turn": 1}}
    assert not is_valid("durable-event", record)  # a bare event has no seq
    assert event_from_json(record) == event_from_json(
        {k: v for k, v in record.items() if k != "seq"}
    )
    assert errors("log-record", {"seq": 3, "type": "turn/start", "data": {"turn": 2}}) == []
    assert errors("log-record", {"seq": 0, **SPLICE}) == []
    assert errors("log-record", {"seq": 4, "type": "host/reply", "data": [1]}) == []
    turn_abort = {"type": "turn/abort", "data": {"turn": 1, "cause": {"kind": "user"}}}
    assert errors("log-record", {"seq": 5, **turn_abort}) == []
    assert not is_valid("log-record", {"seq": 5, "type": "hosts/x", "data": 1})
    # value rules, not shapes (D40): a seq is its position (load checks it), a name
    assert is_valid("log-record", {"seq": -1, "type": "turn/start", "data": {"turn": 1}})
    assert is_valid("log-record", {"seq": 5, "type": "host/", "data": 1})


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
    "status is idle, running or maintenance": {"type": "agent/status", "data": {"status": "busy"}},
    "cancel-requested names a cause": {"type": "agent/cancel-requested", "data": {}},
    "disposed carries nothing": {"type": "agent/disposed", "data": {"why": "x"}},
    "unknown type": {"type": "agent/paused", "data": {}},
    "agent/error names its step, null or not (R33)": {
        "type": "agent/error",
        "data": {"turn": 1, "error": {"message": "m", "code": "c"}},
    },
    "agent/error has message and code": {
        "type": "agent/error",
        "data": {"turn": 1, "step": None, "error": {"message": "m"}},
    },
}


@pytest.mark.parametrize("doc", REJECTED_NOTIFICATIONS.values(), ids=REJECTED_NOTIFICATIONS.keys())
def test_notification_schema_rejects(doc: dict[str, Any]) -> None:
    assert not is_valid("notification", doc)


def test_notification_schema_accepts_v2_notifications() -> None:
    """R31: status maintenance; R33: agent/error, step null for a pre-step failure (D30)."""
    error = {"message": "rate limited", "code": "429"}
    accepted = [
        {"type": "agent/status", "data": {"status": "maintenance"}},
        {"type": "agent/error", "data": {"turn": 1, "step": None, "error": error}},
        {"type": "agent/error", "data": {"turn": 3, "step": 2, "error": error}},
    ]
    assert [errors("notification", doc) for doc in accepted] == [[]] * len(accepted)


def _send(target: str, wakeup: Any, contexts: list[Any] | None = None) -> dict[str, Any]:
    return {"type": "send", "input": {"message": MESSAGE, "contexts": contexts or [],
                                      "target": target, "wakeup": wakeup}}  # fmt: skip


REJECTED_COMMANDS = {
    "a steer wakes: wakeup is a boolean (R11)": _send("next-step", 1),
    "every input field is mandatory (R11)": _with(_send("next-turn", True), "input.wakeup", ...),
    "unknown target": _send("now", True),
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
    "begin-maintenance takes nothing (R31)": {"type": "begin-maintenance", "records": []},
    "only reports and end-maintenance take records (R30)": {
        "type": "cancel",
        "cause": {"kind": "user"},
        "keepInbox": False,
        "records": [],
    },
    "records is an array": {"type": "turn-stopping-done", "turn": 1, "records": {}},
    "records are host records, not other events": {
        "type": "end-maintenance",
        "records": [{"type": "turn/start", "data": {"turn": 1}}],
    },
    "a record has data": {"type": "end-maintenance", "records": [{"type": "host/x"}]},
    "a record is {type, data}": {
        "type": "end-maintenance",
        "records": [{"type": "host/x", "data": 1, "at": 0}],
    },
}


COMMAND_VALUE_RULES = {
    "an injection has no contexts (R11)": (_send("next-step", False, [MESSAGE]), InvalidInput),
    "cancel never takes the disposed cause (D17)": (
        {"type": "cancel", "cause": {"kind": "disposed"}, "keepInbox": False},
        InvalidInput,
    ),
    "ids are non-empty": ({"type": "remove", "messageId": ""}, InvalidInput),
    "reports count from 1": ({"type": "turn-stopping-done", "turn": 0}, InvalidInput),
    "a record has a name": (
        {"type": "end-maintenance", "records": [{"type": "host/", "data": 1}]},
        InvalidInput,
    ),
    "splice coordinates within 2^53": (
        {"type": "splice", "target": "next-turn", "start": 2**53, "deleteCount": 0,
         "inserted": []},
        InvalidSplice,
    ),
}  # fmt: skip
"""Value rules: the schema accepts the shape, the value refuses with its own error (D40)."""


@pytest.mark.parametrize("doc", REJECTED_COMMANDS.values(), ids=REJECTED_COMMANDS.keys())
def test_command_schema_rejects(doc: dict[str, Any]) -> None:
    assert not is_valid("command", doc)
    with pytest.raises(DecodeError):  # the decoder agrees (D40)
        command_from_json(doc)


@pytest.mark.parametrize(
    ("doc", "error"), COMMAND_VALUE_RULES.values(), ids=COMMAND_VALUE_RULES.keys()
)
def test_command_value_rules_are_left_to_the_values(
    doc: dict[str, Any], error: type[Exception]
) -> None:
    assert errors("command", doc) == []
    with pytest.raises(error):
        command_from_json(doc)


def test_command_schema_accepts_v2_commands() -> None:
    """R30, R31: maintenance commands, records on every report (empty or not)."""
    records = [{"type": "host/reply", "data": {"text": "hi"}}, {"type": "host/x", "data": None}]
    accepted = [
        {"type": "begin-maintenance"},
        {"type": "end-maintenance"},
        {"type": "end-maintenance", "records": []},
        {"type": "end-maintenance", "records": records},
        {"type": "turn-stopping-done", "turn": 1, "records": records},
        {"type": "pre-step-failed", "turn": 1, "step": 2, "message": "m", "code": "c",
         "records": records},
        {"type": "pre-step-decided", "turn": 1, "step": 1, "decision": {"kind": "reject"},
         "records": records},
        {"type": "step-finished", "turn": 1, "step": 1, "outcome": {"kind": "continue"},
         "records": []},
    ]  # fmt: skip
    assert [errors("command", doc) for doc in accepted] == [[]] * len(accepted)
    for doc in accepted:  # the encoder leaves an empty records array out
        expected = {k: v for k, v in doc.items() if not (k == "records" and v == [])}
        assert command_to_json(command_from_json(doc)) == expected


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
        _with(base, "final.status", "paused"),
    ]
    assert [is_valid("vector", doc) for doc in cases] == [False] * len(cases)


def test_vector_schema_checks_the_folds() -> None:
    """R32, R30: fates and transcript in a final have the shapes of specs/formats.md."""
    fates = read_vector(ROOT / "specs" / "vectors" / "fates-every-kind.json")
    assert errors("vector", fates) == []
    records = read_vector(ROOT / "specs" / "vectors" / "records-on-every-report.json")
    assert errors("vector", records) == []
    bad = [
        _with(fates, "final.fates.a", {"kind": "lost"}),
        _with(fates, "final.fates.a", {"kind": "admitted", "turn": 1}),
        _with(fates, "final.fates.r", {"kind": "canceled", "turn": 1}),
        _with(fates, "final.fates.c.reason", {"kind": "stopped"}),
        _with(fates, "final.fates.w", {"kind": "pending", "target": "later"}),
        _with(records, "final.transcript", [{"kind": "turn", "turn": 1, "items": []}]),
        _with(
            records,
            "final.transcript",
            [{"kind": "records", "records": [{"type": "turn/start", "data": {"turn": 1}}]}],
        ),
        _with(
            records,
            "final.transcript",
            [{"kind": "turn", "turn": 1, "reason": None, "items": [{"kind": "message"}]}],
        ),
    ]
    assert [is_valid("vector", doc) for doc in bad] == [False] * len(bad)
