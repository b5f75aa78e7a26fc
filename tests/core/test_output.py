"""The agent's voice as values (R43, inbox_core/output.py): parts, ``Output``, the live messages
and their fold, the limits (cut with a marker, never an error) and the JSON forms (D40).

The shell's publisher (tests/shell/test_output.py) is held to the same fold; here the pure
rules, each branch, and hostile documents.
"""

from __future__ import annotations

import json
from typing import Any

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from inbox_core import limits
from inbox_core.errors import DecodeError, InboxCoreError, InvalidInput
from inbox_core.events import HostRecord, TurnStarted, records_size
from inbox_core.json_values import json_size
from inbox_core.output import (
    CONTENT_PARTS,
    CONTENT_SIZE,
    MARKER,
    OUTPUT_RECORD,
    PART_RESERVE,
    RECORD_SIZE,
    TIME_LENGTH,
    Output,
    OutputMessage,
    OutputPart,
    OutputSnapshot,
    ReasoningDelta,
    ReasoningPart,
    TextDelta,
    TextPart,
    ToolCallDelta,
    ToolCallEnd,
    ToolCallPart,
    ToolCallStart,
    ToolResult,
    ToolResultPart,
    Usage,
    appended,
    apply_output,
    check_message,
    fitted,
    fold_output,
    output_from_json,
    output_message_from_json,
    output_message_to_json,
    output_record,
    output_size,
    output_to_json,
    part_size,
    read_output,
    snapshot_from_json,
    snapshot_to_json,
)

STEP = (3, 2)  # the turn and step of every message below


def _messages() -> list[OutputMessage]:
    """One step that says everything: text, reasoning, a streamed tool call and its result."""
    t, s = STEP
    return [
        ReasoningDelta(t, s, 0, "The user "),
        ReasoningDelta(t, s, 0, "wants weather."),
        TextDelta(t, s, 1, "Let me "),
        TextDelta(t, s, 1, "check."),
        ToolCallStart(t, s, 2, "call-1", "weather"),
        ToolCallDelta(t, s, 2, "call-1", '{"city": '),
        ToolCallDelta(t, s, 2, "call-1", '"Paris"}'),
        ToolCallEnd(t, s, 2, "call-1"),
        ToolResult(t, s, 3, "call-1", "sunny", is_error=False),
        ToolResult(t, s, 4, "call-0", "no such city", is_error=True),
        TextDelta(t, s, 5, "Sunny."),
    ]


PARTS: tuple[OutputPart, ...] = (
    ReasoningPart("The user wants weather."),
    TextPart("Let me check."),
    ToolCallPart("call-1", "weather", '{"city": "Paris"}'),
    ToolResultPart("call-1", "sunny"),
    ToolResultPart("call-0", "no such city", is_error=True),
    TextPart("Sunny."),
)


# ------------------------------------------------------------------ the fold


def test_r43_the_fold_of_a_steps_messages_is_its_output() -> None:
    """Every prefix folds to a snapshot; the last is the host/output's parts."""
    messages = _messages()
    assert fold_output(messages) == PARTS
    parts: tuple[OutputPart, ...] = ()
    for message in messages:
        parts = apply_output(parts, message)
    assert parts == PARTS
    assert apply_output(PARTS[:3], ToolCallEnd(*STEP, 2, "call-1")) == PARTS[:3]
    assert fold_output([]) == ()


def test_r43_appending_to_an_earlier_part_of_its_type() -> None:
    """A text part stays open: a delta may continue any existing text part, not only the
    last (providers interleave blocks)."""
    parts = fold_output([TextDelta(1, 1, 0, "a"), ReasoningDelta(1, 1, 1, "r")])
    assert apply_output(parts, TextDelta(1, 1, 0, "b")) == (TextPart("ab"), ReasoningPart("r"))
    assert apply_output(parts, ReasoningDelta(1, 1, 1, "")) == parts
    assert appended(ToolCallPart("c", "n"), "") == ToolCallPart("c", "n")
    assert appended(ToolCallPart("c", "n", "{"), "}") == ToolCallPart("c", "n", "{}")


def test_r43_a_fold_past_a_strings_limit_is_invalid_input() -> None:
    """A watcher folding hostile deltas: a part never holds more than maxJsonSize."""
    full = fold_output([TextDelta(1, 1, 0, "x" * limits.MAX_JSON_SIZE)])
    with pytest.raises(InvalidInput, match="at most"):
        apply_output(full, TextDelta(1, 1, 0, "y"))
    call = (ToolCallPart("c", "n", "x" * limits.MAX_JSON_SIZE),)
    with pytest.raises(InvalidInput, match="at most"):
        apply_output(call, ToolCallDelta(1, 1, 0, "c", "y"))


@pytest.mark.parametrize(
    ("before", "message", "says"),
    [
        ((), TextDelta(1, 1, 1, "x"), "names part 1; the output has 0"),
        ((), ToolCallDelta(1, 1, 0, "c", "{"), "names part 0; the output has 0"),
        ((), ToolCallEnd(1, 1, 0, "c"), "names part 0"),
        ((TextPart("a"),), ToolCallStart(1, 1, 0, "c", "n"), r"opens the next part \(1\)"),
        ((TextPart("a"),), ToolResult(1, 1, 0, "c", "r"), r"opens the next part \(1\)"),
        ((TextPart("a"),), ReasoningDelta(1, 1, 0, "r"), "does not fit part 0, a text part"),
        ((ReasoningPart("a"),), TextDelta(1, 1, 0, "t"), "a reasoning part"),
        ((ToolCallPart("c", "n"),), TextDelta(1, 1, 0, "t"), "a tool-call part"),
        ((TextPart("a"),), ToolCallDelta(1, 1, 0, "c", "{"), "a text part"),
        ((ToolResultPart("c", "r"),), ToolCallEnd(1, 1, 0, "c"), "a tool-result part"),
        ((ToolCallPart("c", "n"),), ToolCallDelta(1, 1, 0, "d", "{"), "tool call 'c', not 'd'"),
        ((ToolCallPart("c", "n"),), ToolCallStart(1, 1, 1, "c", "m"), "started twice"),
        ((), "text-delta", "not an output message"),
        ((), TextPart("x"), "not an output message"),
    ],
)
def test_r43_a_message_that_does_not_fit_is_invalid_input(
    before: tuple[OutputPart, ...], message: Any, says: str
) -> None:
    with pytest.raises(InvalidInput, match=says):
        apply_output(before, message)


def test_r43_a_delta_or_an_end_after_its_tool_calls_end_is_refused() -> None:
    start = [ToolCallStart(1, 1, 0, "c", "n"), ToolCallEnd(1, 1, 0, "c")]
    for late in (ToolCallDelta(1, 1, 0, "c", "x"), ToolCallEnd(1, 1, 0, "c")):
        with pytest.raises(InvalidInput, match="tool call 'c' ended"):
            fold_output([*start, late])
    parts = fold_output(start)
    assert not check_message(parts, ToolCallDelta(1, 1, 0, "c", "x"), ended={"d"})
    assert check_message(parts, ToolResult(1, 1, 1, "c", "ok"), ended={"c"})


# ---------------------------------------------------------------- the values


@pytest.mark.parametrize(
    "build",
    [
        lambda: TextPart(7),
        lambda: TextPart("\ud800"),
        lambda: ReasoningPart(None),
        lambda: ToolCallPart("", "n"),
        lambda: ToolCallPart("c", "x" * (limits.MAX_ID_LENGTH + 1)),
        lambda: ToolCallPart("c", "n", None),
        lambda: ToolResultPart("c", b"bytes"),
        lambda: ToolResultPart("c", "r", is_error=1),
        lambda: Usage(-1, 0),
        lambda: Usage(0, True),
        lambda: Usage(0, 2**53),
        lambda: Output("text"),
        lambda: Output(b"ab"),
        lambda: Output({"type": "text"}),
        lambda: Output(7),
        lambda: Output([{"type": "text", "text": "x"}]),
        lambda: Output([], model=""),
        lambda: Output([], model=5),
        lambda: Output([], usage={"inputTokens": 1}),
        lambda: Output([], started_at="2026-12-06"),
        lambda: Output([], started_at="2026-13-06T10:00:00Z"),
        lambda: Output([], ended_at="2026-12-06T24:00:00Z"),
        lambda: Output([], ended_at="2026-12-06T10:00:00"),
        lambda: Output([], ended_at="2026-12-06T10:00:00.1234567890Z"),
        lambda: Output([], ended_at=1765015200),
        lambda: TextDelta(0, 1, 0, "x"),
        lambda: TextDelta(1, 0, 0, "x"),
        lambda: TextDelta(1, 1, -1, "x"),
        lambda: TextDelta(1, 1, 2**53, "x"),
        lambda: ReasoningDelta(1, 1, 0, 3),
        lambda: ToolCallStart(1, 1, 0, "", "n"),
        lambda: ToolCallDelta(1, 1, 0, "c", None),
        lambda: ToolCallEnd(1, 1, 0, "\ud800"),
        lambda: ToolResult(1, 1, 0, "c", "r", is_error="no"),
        lambda: OutputSnapshot(1, 1, [TextPart("a"), "b"]),
        lambda: OutputSnapshot(0, 1, []),
    ],
)
def test_r43_a_malformed_value_is_invalid_input(build: Any) -> None:
    with pytest.raises(InvalidInput):
        build()


def test_r43_times_are_rfc_3339() -> None:
    for time in (
        "2026-12-06T10:00:00Z",
        "2026-12-06t10:00:00z",
        "2026-02-29T23:59:60.123456789+14:00",
        "0001-01-01T00:00:00-23:59",
    ):
        assert Output((), started_at=time, ended_at=time).started_at == time
    assert len("2026-02-29T23:59:60.123456789+14:00") == TIME_LENGTH


def test_r43_the_output_is_bounded() -> None:
    """limits.MAX_OUTPUT_PARTS and MAX_OUTPUT_SIZE: an Output past either is InvalidInput."""
    Output([TextPart("")] * limits.MAX_OUTPUT_PARTS)
    with pytest.raises(InvalidInput, match="at most 1024 parts"):
        Output([TextPart("")] * (limits.MAX_OUTPUT_PARTS + 1))
    full = limits.MAX_OUTPUT_SIZE - PART_RESERVE
    assert output_size([TextPart("x" * full)]) == limits.MAX_OUTPUT_SIZE
    Output([TextPart("x" * full)])
    with pytest.raises(InvalidInput, match="size of at most"):
        Output([TextPart("x" * (full + 1))])
    with pytest.raises(InvalidInput, match="size of at most"):
        OutputSnapshot(1, 1, [ToolResultPart("c", "x" * full)])


def test_r43_a_part_measures_at_least_its_json_text() -> None:
    """The size measure bounds each part's JSON text (limits' measure, an array's comma
    included), so the record of an output within the bounds is within RECORD_SIZE."""
    widest = (
        TextPart("é"),
        ReasoningPart(""),
        ToolCallPart("i" * 1024, "n" * 1024, "{}"),
        ToolResultPart("i", "c", is_error=False),
        ToolResultPart("i", "c", is_error=True),
    )
    for part in widest:
        data = output_to_json(Output((part,)))["parts"][0]
        assert json_size(data) + 1 <= part_size(part), part


def test_r43_the_largest_output_record_fits_record_size() -> None:
    """Every field at its widest: a host that keeps RECORD_SIZE free always has room."""
    ids = "i" * limits.MAX_ID_LENGTH
    parts = [ToolResultPart(ids, "")] * (limits.MAX_OUTPUT_PARTS - 1)
    room = limits.MAX_OUTPUT_SIZE - output_size(parts) - PART_RESERVE - len(ids)
    parts.append(ToolResultPart(ids, "x" * room, is_error=True))
    time = "2026-02-29T23:59:60.123456789+14:00"
    output = Output(parts, "m" * limits.MAX_ID_LENGTH, Usage(2**53 - 1, 2**53 - 1), time, time)
    assert output_size(output.parts) == limits.MAX_OUTPUT_SIZE
    record = output_record(output)
    assert records_size((record,)) <= RECORD_SIZE
    assert RECORD_SIZE * 4 <= limits.MAX_VALUE_SIZE


# ---------------------------------------------------------------- the limits


def _publish(messages: list[OutputMessage]) -> tuple[tuple[OutputPart, ...], list[OutputMessage]]:
    """What a publisher does: each message checked, fitted, applied; nothing after a cut."""
    parts: tuple[OutputPart, ...] = ()
    sent: list[OutputMessage] = []
    for message in messages:
        check_message(parts, message)
        kept, cut = fitted(message, output_size(parts), len(parts))
        for each in kept:
            parts = apply_output(parts, each)
        sent.extend(kept)
        if cut:
            break
    return parts, sent


def test_r43_output_past_its_size_is_cut_with_a_marker() -> None:
    big = CONTENT_SIZE - PART_RESERVE
    parts, sent = _publish([TextDelta(1, 1, 0, "x" * (big - 3)), TextDelta(1, 1, 0, "y" * 10)])
    assert parts == (TextPart("x" * (big - 3) + "yyy"), TextPart(MARKER))
    assert sent[-1] == TextDelta(1, 1, 1, MARKER)
    assert fold_output(sent) == parts
    assert output_size(parts) == limits.MAX_OUTPUT_SIZE
    Output(parts)


@pytest.mark.parametrize(
    ("message", "kept"),
    [
        (TextDelta(1, 1, 1, "abc"), TextDelta(1, 1, 1, "a")),
        (ReasoningDelta(1, 1, 1, "abc"), ReasoningDelta(1, 1, 1, "a")),
        (ToolResult(1, 1, 1, "cc", "abc"), None),  # its id leaves no room: nothing kept
        (ToolCallStart(1, 1, 1, "c", "n"), None),  # whole or nothing
    ],
)
def test_r43_a_part_opened_at_the_bound_keeps_what_fits(
    message: OutputMessage, kept: OutputMessage | None
) -> None:
    size = CONTENT_SIZE - PART_RESERVE - 1  # room for a new part with one character
    got, cut = fitted(message, size, 1)
    assert cut
    index = 2 if kept is not None else 1
    assert got == (*([kept] if kept else []), TextDelta(1, 1, index, MARKER))


def test_r43_cutting_a_tool_result_and_arguments() -> None:
    result = ToolResult(1, 1, 1, "c", "abcdef", is_error=True)
    got, cut = fitted(result, CONTENT_SIZE - PART_RESERVE - 1 - 2, 1)
    assert cut
    assert got == (attrs.evolve(result, content="ab"), TextDelta(1, 1, 2, MARKER))
    got, _ = fitted(result, CONTENT_SIZE - PART_RESERVE - 1, 1)
    assert got[0] == attrs.evolve(result, content="")  # a result keeps its place, empty
    arguments = ToolCallDelta(1, 1, 0, "c", "{}{}")
    got, cut = fitted(arguments, CONTENT_SIZE - 2, 1)
    assert cut
    assert got == (ToolCallDelta(1, 1, 0, "c", "{}"), TextDelta(1, 1, 1, MARKER))
    got, cut = fitted(TextDelta(1, 1, 0, "x"), CONTENT_SIZE, 1)  # no room at all
    assert cut
    assert got == (TextDelta(1, 1, 1, MARKER),)
    assert fitted(ToolCallEnd(1, 1, 0, "c"), CONTENT_SIZE, 1) == (
        (ToolCallEnd(1, 1, 0, "c"),),
        False,
    )


def test_r43_output_past_its_parts_is_cut_with_a_marker() -> None:
    messages: list[OutputMessage] = [
        ToolResult(1, 1, index, f"c{index}", "r") for index in range(limits.MAX_OUTPUT_PARTS + 5)
    ]
    parts, sent = _publish(messages)
    assert len(parts) == limits.MAX_OUTPUT_PARTS
    assert parts[-1] == TextPart(MARKER)
    assert parts[CONTENT_PARTS - 1] == ToolResultPart(f"c{CONTENT_PARTS - 1}", "r")
    # at the parts bound a delta to an existing part still fits
    full = fold_output([TextDelta(1, 1, index, "") for index in range(CONTENT_PARTS)])
    assert fitted(TextDelta(1, 1, 0, "more"), output_size(full), len(full)) == (
        (TextDelta(1, 1, 0, "more"),),
        False,
    )
    assert sent[-1] == TextDelta(1, 1, CONTENT_PARTS, MARKER)


_ID = st.sampled_from(["a", "b", "c"])
_TEXT = st.one_of(st.text(max_size=5), st.integers(0, 3).map(lambda k: "x" * (k * 2**20)))


@st.composite
def _step(draw: st.DrawFn) -> list[OutputMessage]:
    """A valid message sequence of one step (deltas as big as the whole output at times)."""
    parts: list[str] = []  # each part's type, or a tool call's "call:<id>:<open>"
    messages: list[OutputMessage] = []
    for _ in range(draw(st.integers(0, 12))):
        texts = [i for i, p in enumerate(parts) if p in ("text", "reasoning")]
        calls = [i for i, p in enumerate(parts) if p.startswith("call:") and p.endswith(":1")]
        choice = draw(st.sampled_from(["new", "new", "more", "call"]))
        if choice == "more" and texts:
            index = draw(st.sampled_from(texts))
            kind = TextDelta if parts[index] == "text" else ReasoningDelta
            messages.append(kind(1, 1, index, draw(_TEXT)))
        elif choice == "call" and calls:
            index = draw(st.sampled_from(calls))
            call = parts[index].split(":")[1]
            if draw(st.booleans()):
                messages.append(ToolCallDelta(1, 1, index, call, draw(_TEXT)))
            else:
                messages.append(ToolCallEnd(1, 1, index, call))
                parts[index] = parts[index][:-1] + "0"
        else:
            index = len(parts)
            new = draw(st.sampled_from(["text", "reasoning", "call", "result"]))
            used = {p.split(":")[1] for p in parts if p.startswith("call:")}
            if new == "call" and draw(_ID) not in used:
                call = draw(_ID.filter(lambda c, used=used: c not in used))
                messages.append(ToolCallStart(1, 1, index, call, "tool"))
                parts.append(f"call:{call}:1")
            elif new == "result":
                messages.append(
                    ToolResult(1, 1, index, draw(_ID), draw(_TEXT), draw(st.booleans()))
                )
                parts.append("result")
            else:
                kind = ReasoningDelta if new == "reasoning" else TextDelta
                messages.append(kind(1, 1, index, draw(_TEXT)))
                parts.append("reasoning" if new == "reasoning" else "text")
    return messages


@settings(max_examples=60, deadline=None)
@given(_step())
def test_r43_whatever_a_step_publishes_its_output_is_storable(
    messages: list[OutputMessage],
) -> None:
    """A publisher's output stays within the limits (cut with a marker), the fold of what it
    sent is its parts, and its record and every snapshot round-trip through JSON."""
    parts, sent = _publish(messages)
    assert fold_output(sent) == parts
    assert len(parts) <= limits.MAX_OUTPUT_PARTS
    assert output_size(parts) <= limits.MAX_OUTPUT_SIZE
    output = Output(parts)
    assert records_size((output_record(output),)) <= RECORD_SIZE
    if output_size(fold_output(messages)) <= CONTENT_SIZE:
        assert parts == fold_output(messages)  # nothing was cut
    snapshot = OutputSnapshot(1, 1, parts)
    assert snapshot_from_json(json.loads(json.dumps(snapshot_to_json(snapshot)))) == snapshot
    assert read_output(output_record(output)) == output


# ------------------------------------------------------------------ the JSON


def test_r43_the_json_forms() -> None:
    """formats.md, "The agent's voice": camelCase, optional keys left out, round trips."""
    output = Output(PARTS[3:5], "gpt-x", Usage(12, 34), "2026-12-06T10:00:00Z")
    assert output_to_json(output) == {
        "parts": [
            {"type": "tool-result", "id": "call-1", "content": "sunny", "isError": False},
            {"type": "tool-result", "id": "call-0", "content": "no such city", "isError": True},
        ],
        "model": "gpt-x",
        "usage": {"inputTokens": 12, "outputTokens": 34},
        "startedAt": "2026-12-06T10:00:00Z",
    }
    assert output_to_json(Output(())) == {"parts": []}
    assert output_from_json(output_to_json(output)) == output
    assert output_from_json({"parts": [], "model": None, "usage": None, "endedAt": None}) == Output(
        ()
    )
    assert output_message_to_json(ToolCallStart(3, 2, 2, "call-1", "weather")) == {
        "kind": "tool-call-start",
        "turn": 3,
        "step": 2,
        "part": 2,
        "id": "call-1",
        "name": "weather",
    }
    for message in _messages():
        assert output_message_from_json(output_message_to_json(message)) == message
    snapshot = OutputSnapshot(3, 2, PARTS)
    assert snapshot_to_json(snapshot)["parts"][0] == {"type": "reasoning", "text": PARTS[0].text}
    assert snapshot_from_json(snapshot_to_json(snapshot)) == snapshot


def _message(kind: str, **fields: Any) -> dict[str, Any]:
    return {"kind": kind, "turn": 1, "step": 1, "part": 0, **fields}


def _parts(*parts: dict[str, Any]) -> dict[str, Any]:
    return {"parts": list(parts)}


_TOOL_RESULT = {"id": "c", "content": "", "isError": False}


@pytest.mark.parametrize(
    ("decode", "document", "error"),
    [
        (output_from_json, [], DecodeError),
        (output_from_json, {}, DecodeError),
        (output_from_json, {"parts": [], "extra": 1}, DecodeError),
        (output_from_json, _parts({"type": "image", "url": "x"}), DecodeError),
        (output_from_json, _parts({"type": "text"}), DecodeError),
        (output_from_json, _parts({"type": "text", "text": 1}), DecodeError),
        (output_from_json, {"parts": [], "usage": {"inputTokens": 1.0}}, DecodeError),
        (output_from_json, {"parts": [], "model": ""}, InvalidInput),
        (output_from_json, {"parts": [], "startedAt": "now"}, InvalidInput),
        (output_from_json, {"parts": [], "usage": {"inputTokens": -1, "outputTokens": 1}},
         InvalidInput),
        (output_from_json, _parts({"type": "text", "text": "\ud800"}), InvalidInput),
        (output_from_json, _parts({"type": "tool-call", "id": "", "name": "n", "arguments": ""}),
         InvalidInput),
        (output_from_json, _parts(*[{"type": "text", "text": ""}] * 1025), InvalidInput),
        # a shape error anywhere beats a value error anywhere (D40)
        (output_from_json, {**_parts({"type": "text", "text": "\ud800"}), "model": 3}, DecodeError),
        (output_message_from_json, _message("audio-delta"), DecodeError),
        (output_message_from_json, {"turn": 1, "step": 1, "part": 0, "text": "x"}, DecodeError),
        (output_message_from_json, _message("text-delta"), DecodeError),
        (output_message_from_json, _message("text-delta", turn="1", text=""), DecodeError),
        (output_message_from_json, _message("tool-call-end", id="c", x=1), DecodeError),
        (output_message_from_json, _message("text-delta", turn=0, text=""), InvalidInput),
        (output_message_from_json, _message("tool-result", part=-1, **_TOOL_RESULT), InvalidInput),
        (output_message_from_json, "text-delta", DecodeError),
        (snapshot_from_json, {"turn": 1, "step": 1}, DecodeError),
        (snapshot_from_json, {"turn": 1, "step": 1, "parts": {}}, DecodeError),
        (snapshot_from_json, {"turn": 1, "step": 0, "parts": []}, InvalidInput),
    ],
)  # fmt: skip
def test_r43_d40_a_document_is_refused_by_shape_or_by_value(
    decode: Any, document: object, error: type[Exception]
) -> None:
    with pytest.raises(error) as raised:
        decode(document)
    assert type(raised.value) is error


def test_r43_encoders_refuse_what_is_not_theirs() -> None:
    with pytest.raises(InvalidInput):
        output_to_json({"parts": []})  # type: ignore[arg-type]
    with pytest.raises(InvalidInput):
        snapshot_to_json(Output(()))  # type: ignore[arg-type]
    with pytest.raises(InvalidInput):
        output_message_to_json(TextPart("x"))  # type: ignore[arg-type]


def test_r43_read_output_never_fails_on_what_a_log_holds() -> None:
    """A log holds whatever JSON a host wrote under host/output: a reader gets None."""
    output = Output(PARTS)
    assert read_output(output_record(output)) == output
    assert output_record(output).type == OUTPUT_RECORD
    for record in (
        HostRecord(OUTPUT_RECORD, None),
        HostRecord(OUTPUT_RECORD, "echo: hi"),
        HostRecord(OUTPUT_RECORD, {"parts": [{"type": "text", "text": "x"}], "extra": 1}),
        HostRecord(OUTPUT_RECORD, {"parts": [{"type": "text", "text": "x"}] * 2000}),
        HostRecord(OUTPUT_RECORD, {"parts": [[[[[[[[[[]]]]]]]]]]}),
        HostRecord(
            OUTPUT_RECORD, {"parts": [], "usage": {"inputTokens": 2**63 - 1, "outputTokens": 0}}
        ),
        HostRecord("host/pydantic-ai/response", output_to_json(output)),
        TurnStarted(1),
        "host/output",
    ):
        assert read_output(record) is None, record


def test_r43_hostile_documents_get_typed_errors() -> None:
    """Deep nesting, huge values and garbage: a typed error, never a traceback."""
    deep: Any = "x"
    for _ in range(200):
        deep = [deep]
    hostile = [
        {"parts": deep},
        {"parts": [{"type": "text", "text": "x" * (limits.MAX_JSON_SIZE + 1)}]},
        {"parts": [{"type": "tool-call", "id": "c", "name": "n" * 10**5, "arguments": ""}]},
        {"parts": [], "usage": {"inputTokens": 10**400, "outputTokens": 0}},
        {"parts": [], "startedAt": "2026-12-06T10:00:00Z" + "0" * 10**5},
        {"parts": [None, 1, "x", 1.5]},
        {"parts": [{"type": {"nested": True}}]},
        {7: "x"},
    ]
    for document in hostile:
        with pytest.raises(InboxCoreError):
            output_from_json(document)
        with pytest.raises(InboxCoreError):
            output_message_from_json(document)
        with pytest.raises(InboxCoreError):
            snapshot_from_json(document)
