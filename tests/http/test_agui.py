"""AG-UI's side of R44, pure (``inbox_core.http.agui``): reading ``RunAgentInput`` (422s
naming AG-UI's field, other roles passed over, held ids never posted again) and
``RunFeed`` on recorded feeds: logs recorded from a real ``inbox-core serve`` with the test
hosts (``agui_feeds.json``: the speaking host's reasoning, text, tool call and an error
end; a followup, a steer, queued messages, a stop and a stop-and-clear with the echo host),
every conformance vector's log, and live output (R43) interleaved with them. Every event
validates against AG-UI's Python models and keeps AG-UI's order (``agui_support``)."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest

from inbox_core.commands import Send
from inbox_core.http.agui import FieldError, RunFeed, held_ids, run_input
from inbox_core.output import output_to_json, read_output
from inbox_core.vectors import read_vector, vector_files
from tests.http.agui_support import check_sequence, texts, validate

FEEDS: dict[str, list[Any]] = json.loads(
    (Path(__file__).resolve().parent / "agui_feeds.json").read_text(encoding="utf-8")
)


def run(agent: str = "ann", *messages: Any, **fields: Any) -> dict[str, Any]:
    return {"threadId": agent, "runId": "r1", "messages": list(messages), **fields}


def user(ident: str, content: Any = "hi") -> dict[str, Any]:
    return {"id": ident, "role": "user", "content": content}


def fed(feed: RunFeed, events: list[Any]) -> list[Any]:
    out: list[Any] = []
    for event in events:
        out += feed.durable(event)
    return out


def follow(name: str, message: str) -> list[Any]:
    events = fed(RunFeed("ann", message), FEEDS[name])
    validate(events)
    check_sequence(events)
    return events


# ------------------------------------------------------------------------ the input


def test_r44_user_messages_become_sends_of_the_intent_other_roles_are_passed_over() -> None:
    document = run(
        "ann",
        {"id": "s", "role": "system", "content": "be brief"},
        user("u1", "plain text"),
        {"id": "a1", "role": "assistant", "content": "sure"},
        {"id": "t1", "role": "tool", "content": "42", "toolCallId": "c"},
        user("u2", [{"type": "text", "text": "one"}, {"type": "image", "source": {"x": 1}}]),
        forwardedProps={"intent": "steer", "other": True},
        tools=[],
        context=None,
        state={"anything": 1},
        extra="AG-UI keeps unknown fields",
    )
    read = run_input(document, "ann")
    assert read.run_id == "r1"
    assert read.follow == "u2"
    assert [s.input.message.id for s in read.sends] == ["u1", "u2"]
    assert all(isinstance(s, Send) and s.input.target == "next-step" for s in read.sends)
    assert all(s.input.wakeup and s.input.message.source.kind == "user" for s in read.sends)
    assert read.sends[0].input.message.content == ({"type": "text", "text": "plain text"},)
    assert read.sends[1].input.message.content[1] == {"type": "image", "source": {"x": 1}}
    again = run_input(document, "ann", held={"u1"})  # the log holds u1: posted once only
    assert [s.input.message.id for s in again.sends] == ["u2"]
    assert run_input(document, "ann", held={"u1", "u2"}).sends == ()


@pytest.mark.parametrize(
    ("intent", "target", "wakeup"),
    [
        (None, "next-turn", True),
        ("followup", "next-turn", True),
        ("queue", "next-turn", False),
        ("steer", "next-step", True),
        ("inject", "next-step", False),
    ],
)
def test_r44_forwarded_props_intent_names_the_intent(
    intent: str | None, target: str, wakeup: bool
) -> None:
    props = {} if intent is None else {"forwardedProps": {"intent": intent}}
    (send,) = run_input(run("ann", user("u1"), **props), "ann").sends
    assert (send.input.target, send.input.wakeup) == (target, wakeup)


INTENT = "forwardedProps.intent"


@pytest.mark.parametrize(
    ("document", "field", "error"),
    [
        ([], "(root)", "DecodeError"),
        ({"runId": "r", "messages": []}, "threadId", "DecodeError"),
        ({"threadId": "ann", "messages": []}, "runId", "DecodeError"),
        ({"threadId": "ann", "runId": "r"}, "messages", "DecodeError"),
        (run("ann", runId=7), "runId", "DecodeError"),
        ({"threadId": "ann", "runId": "r", "messages": {}}, "messages", "DecodeError"),
        (run("bob", user("u1")), "threadId", "InvalidInput"),
        (run("ann", "not a message"), "messages[0]", "DecodeError"),
        (run("ann", user("u1"), {"role": "user", "content": "x"}), "messages[1].id", "DecodeError"),
        (run("ann", {"id": "x", "role": "robot"}), "messages[0].role", "DecodeError"),
        (run("ann", {"id": "x", "role": 3}), "messages[0].role", "DecodeError"),
        (run("ann", {"id": "x", "role": "user"}), "messages[0].content", "DecodeError"),
        (run("ann", user("x", 5)), "messages[0].content", "DecodeError"),
        (run("ann", user("x", ["text"])), "messages[0].content[0]", "DecodeError"),
        (run("ann", user("x", [{"text": "t"}])), "messages[0].content[0].type", "DecodeError"),
        (run("ann", user("x", [{"type": "text"}])), "messages[0].content[0].text", "InvalidInput"),
        (run("ann", user("")), "messages[0]", "InvalidInput"),
        (run("ann", user("x" * 300)), "messages[0]", "InvalidInput"),
        (run("ann", user("a\x00b")), "messages[0]", "InvalidInput"),
        (run("ann", user("x"), tools={}), "tools", "DecodeError"),
        (run("ann", user("x"), parentRunId=1), "parentRunId", "DecodeError"),
        (run("ann", user("x"), forwardedProps={"intent": "shout"}), INTENT, "InvalidInput"),
        (run("ann", user("x"), forwardedProps={"intent": None}), INTENT, "InvalidInput"),
    ],
)
def test_r44_a_run_agent_input_that_does_not_validate_names_agui_s_field(
    document: Any, field: str, error: str
) -> None:
    with pytest.raises(FieldError) as raised:
        run_input(document, "ann")
    assert (raised.value.field, raised.value.error) == (field, error)
    assert str(raised.value).startswith(f"RunAgentInput.{field}: ")


def test_r44_forwarded_props_of_another_shape_mean_the_default_intent() -> None:
    for props in (None, "text", [], {"other": 1}):
        (send,) = run_input(run("ann", user("u1"), forwardedProps=props), "ann").sends
        assert send.input.target == "next-turn"
        assert send.input.wakeup


def test_r44_the_ids_a_log_holds_are_every_message_it_accepted() -> None:
    assert held_ids(FEEDS["queue"]) == {"u1", "u2", "u3", "u4", "u5"}
    assert held_ids([]) == set()


# ------------------------------------------------------------------ recorded feeds


def test_r44_a_followup_s_run_is_its_turn_from_its_start() -> None:
    events = follow("speaking", "u1")
    step = "turn-1-step-1-part"
    assert events == [
        {"type": "RUN_STARTED", "threadId": "ann", "runId": "1"},
        state("running", 1, 1, None),
        {"type": "STEP_STARTED", "stepName": "step 1"},
        state("running", 1, 1, 1),
        {"type": "REASONING_START", "messageId": f"{step}-0-reasoning"},
        {"type": "REASONING_MESSAGE_START", "messageId": f"{step}-0", "role": "reasoning"},
        {
            "type": "REASONING_MESSAGE_CONTENT",
            "messageId": f"{step}-0",
            "delta": "The user wants an answer; the weather tool can help.",
        },
        {"type": "REASONING_MESSAGE_END", "messageId": f"{step}-0"},
        {"type": "REASONING_END", "messageId": f"{step}-0-reasoning"},
        {"type": "TEXT_MESSAGE_START", "messageId": f"{step}-1", "role": "assistant"},
        {
            "type": "TEXT_MESSAGE_CONTENT",
            "messageId": f"{step}-1",
            "delta": "Let me check the weather.",
        },
        {"type": "TEXT_MESSAGE_END", "messageId": f"{step}-1"},
        {"type": "TOOL_CALL_START", "toolCallId": "call-1-1", "toolCallName": "weather"},
        {"type": "TOOL_CALL_ARGS", "toolCallId": "call-1-1", "delta": '{"city": "Paris"}'},
        {"type": "TOOL_CALL_END", "toolCallId": "call-1-1"},
        {
            "type": "TOOL_CALL_RESULT",
            "messageId": f"{step}-3",
            "toolCallId": "call-1-1",
            "content": "sunny",
            "role": "tool",
        },
        {"type": "TEXT_MESSAGE_START", "messageId": f"{step}-4", "role": "assistant"},
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": f"{step}-4", "delta": "echo: weather?"},
        {"type": "TEXT_MESSAGE_END", "messageId": f"{step}-4"},
        {"type": "STEP_FINISHED", "stepName": "step 1"},
        state("running", 1, 1, None),
        {
            "type": "RUN_FINISHED",
            "threadId": "ann",
            "runId": "1",
            "result": {"turn": 1, "reason": {"kind": "completed"}},
        },
    ]


def state(status: str, last: int, open_turn: int | None, step: int | None, **lists: Any) -> Any:
    snapshot = {
        "status": status,
        "lastTurn": last,
        "openTurn": open_turn,
        "openStep": step,
        "abortCause": lists.get("abortCause"),
        "nextTurn": lists.get("nextTurn", []),
        "nextStep": lists.get("nextStep", []),
    }
    return {"type": "STATE_SNAPSHOT", "snapshot": snapshot}


def test_r44_r18_an_error_end_is_run_error_with_its_code_and_message() -> None:
    events = follow("speaking", "u2")
    assert events[0] == {"type": "RUN_STARTED", "threadId": "ann", "runId": "2"}
    assert events[-3] == {"type": "STEP_FINISHED", "stepName": "step 1"}
    assert events[-2]["type"] == "STATE_SNAPSHOT"
    failed = {"type": "RUN_ERROR", "message": "the model refused", "code": "model-error"}
    assert events[-1] == failed
    assert texts(events)["turn-2-step-1-part-4"] == "echo: fail"


def test_r44_r22_a_stopped_turn_finishes_its_run_with_the_end_in_its_result() -> None:
    events = follow("queue", "u1")
    assert events[-1]["result"] == {
        "turn": 1,
        "reason": {"kind": "aborted", "reason": {"kind": "user"}},
    }
    assert texts(events) == {"turn-1-step-1-part-0": "echo: "}  # what it said before
    snapshots = [e["snapshot"] for e in events if e["type"] == "STATE_SNAPSHOT"]
    queued = max(snapshots, key=lambda s: len(s["nextTurn"]))  # the queue is AG-UI state
    assert [e["message"]["id"] for e in queued["nextTurn"]] == ["u3", "u4", "u5"]
    assert [e["message"]["id"] for e in queued["nextStep"]] == ["u2"]
    assert {"abortCause": {"kind": "user"}}.items() <= snapshots[-1].items()
    assert len(snapshots) == len({json.dumps(s, sort_keys=True) for s in snapshots})


def test_r44_a_steer_and_a_queued_message_s_run_is_the_turn_that_took_them() -> None:
    for message in ("u2", "u3"):
        events = follow("queue", message)
        assert events[0] == {"type": "RUN_STARTED", "threadId": "ann", "runId": "2"}
        assert events[-1]["result"]["turn"] == 2
        assert texts(events) == {"turn-2-step-1-part-0": "echo: "}


def test_r44_a_message_canceled_before_a_turn_took_it_fails_its_run_at_once() -> None:
    for message in ("u4", "u5"):
        events = follow("queue", message)
        assert events == [
            {
                "type": "RUN_ERROR",
                "message": "the message was canceled before a turn took it",
                "code": "canceled",
            }
        ]


def test_r44_a_message_not_taken_yet_waits_and_a_rejected_post_fails_the_run() -> None:
    feed = RunFeed("ann", "u9")
    assert fed(feed, FEEDS["queue"]) == []  # nothing before its turn: not even state
    assert not feed.done
    text = "a pending message has that id"
    assert feed.rejected("DuplicateMessageId", text) == [
        {"type": "RUN_ERROR", "message": text, "code": "DuplicateMessageId"}
    ]
    assert feed.done
    assert feed.durable(FEEDS["queue"][0]) == []
    assert feed.rejected("X", "y") == []


VECTORS = Path(__file__).resolve().parents[2] / "specs" / "vectors"


def vector_logs() -> list[tuple[str, list[Any]]]:
    """Each conformance vector's log: its seed, then what its commands appended."""
    logs = []
    for path in vector_files(VECTORS):
        vector = read_vector(path)
        seed = [{"type": e["type"], "data": e["data"]} for e in vector.get("seed", [])]
        log = seed + [event for step in vector["commands"] for event in step.get("durable", [])]
        logs.append((vector["name"], log))
    return logs


def test_r44_every_vector_s_log_gives_valid_runs_for_every_message_it_accepted() -> None:
    """Each vector's log (R38), following each message it accepted: valid AG-UI events in
    AG-UI's order; a run that started ends exactly when its turn does; each text message
    is the text part of a ``host/output`` the run's turn recorded."""
    runs = 0
    for name, log in vector_logs():
        outputs = [e for e in log if e["type"] == "host/output"]
        said = {
            p["text"]
            for e in outputs
            if (o := read_output_json(e["data"])) is not None
            for p in o["parts"]
            if p["type"] == "text"
        }
        for message in sorted(held_ids(log)):
            feed = RunFeed("ann", message)
            events = fed(feed, log)
            if not events:
                continue
            runs += 1
            validate(events)
            check_sequence(events)
            assert feed.done == (events[-1]["type"] in ("RUN_FINISHED", "RUN_ERROR")), name
            assert set(texts(events).values()) <= said, name
    assert runs > 150


def read_output_json(data: Any) -> Any:
    from inbox_core.events import HostRecord

    try:
        output = read_output(HostRecord("host/output", data))
    except Exception:
        return None
    return None if output is None else output_to_json(output)


# ------------------------------------------------------------ live output (R43)


def live_messages(turn: int, step: int, parts: list[Any], rng: random.Random) -> list[Any]:
    """The output messages a host could have published to say ``parts`` (texts and
    arguments cut at random)."""
    out: list[Any] = []

    def cuts(text: str) -> list[str]:
        marks = sorted(rng.sample(range(1, len(text)), min(3, len(text) - 1))) if text else []
        return [text[a:b] for a, b in zip([0, *marks], [*marks, len(text)], strict=True)]

    for index, part in enumerate(parts):
        at = {"turn": turn, "step": step, "part": index}
        if part["type"] in ("text", "reasoning"):
            kind = f"{part['type']}-delta"
            out += [{"kind": kind, **at, "text": piece} for piece in cuts(part["text"]) or [""]]
        elif part["type"] == "tool-call":
            out.append({"kind": "tool-call-start", **at, "id": part["id"], "name": part["name"]})
            for piece in cuts(part["arguments"]):
                out.append({"kind": "tool-call-delta", **at, "id": part["id"], "arguments": piece})
            out.append({"kind": "tool-call-end", **at, "id": part["id"]})
        else:
            fields = {"id": part["id"], "content": part["content"], "isError": part["isError"]}
            out.append({"kind": "tool-result", **at, **fields})
    return out


@pytest.mark.parametrize("seed", range(8))
def test_r44_r43_live_output_streams_the_reply_and_the_record_settles_it(seed: int) -> None:
    """The speaking host's step said live (cut at random), with a watcher joining mid-step
    (a snapshot of what was said, then the rest), noise that does not fit, and output of
    another step: the same texts, arguments and order as from the record alone."""
    rng = random.Random(seed)
    log = FEEDS["speaking"][:8]
    record = log[5]["data"]
    said = live_messages(1, 1, record["parts"], rng)
    join = rng.randrange(len(said) + 1)
    feed = RunFeed("ann", "u1")
    events = fed(feed, log[:5])
    from inbox_core.output import fold_output, output_message_from_json

    snapshot = {"turn": 1, "step": 1, "parts": []}
    if join:
        parts = fold_output([output_message_from_json(m) for m in said[:join]])
        snapshot["parts"] = output_to_json_parts(parts)
    events += feed.snapshot(snapshot)
    for message in said[join:]:
        events += feed.output(message)
        if rng.random() < 0.3:  # a message that does not fit, another step's: passed over
            events += feed.output({**message, "part": message["part"] + 5})
            events += feed.output({**message, "step": 2})
    live_texts = texts(events)
    events += fed(feed, log[5:])
    validate(events)
    check_sequence(events)
    plain = follow("speaking", "u1")
    assert texts(events) == texts(plain)
    assert kinds(events) == kinds(plain)
    assert arguments(events) == arguments(plain)
    if join == len(said):  # every word was said live: the record adds none
        assert live_texts == texts(plain)
        assert feed.output(said[0]) == []  # and output after it changes nothing


def output_to_json_parts(parts: Any) -> list[Any]:
    from inbox_core.output import Output

    return list(output_to_json(Output(parts))["parts"])


def kinds(events: list[Any]) -> list[str]:
    """The events' types, each run of deltas as one (how they were cut is the host's)."""
    out: list[str] = []
    for event in events:
        kind = event["type"]
        if not (kind.endswith(("_CONTENT", "_ARGS")) and out and out[-1] == kind):
            out.append(kind)
    return out


def arguments(events: list[Any]) -> dict[str, str]:
    joined: dict[str, str] = {}
    for event in events:
        if event["type"] == "TOOL_CALL_ARGS":
            joined[event["toolCallId"]] = joined.get(event["toolCallId"], "") + event["delta"]
    return joined


def test_r44_a_record_that_contradicts_what_was_said_live_takes_nothing_back() -> None:
    log = FEEDS["speaking"][:8]
    feed = RunFeed("ann", "u1")
    events = fed(feed, log[:5])
    events += feed.output({"kind": "text-delta", "turn": 1, "step": 1, "part": 0, "text": "Hm"})
    events += fed(feed, log[5:])  # part 0 is reasoning in the record: passed over
    validate(events)
    check_sequence(events)
    assert texts(events)["turn-1-step-1-part-0"] == "Hm"
    assert texts(events)["turn-1-step-1-part-4"] == "echo: weather?"
    assert not any(e["type"].startswith("REASONING") for e in events)
