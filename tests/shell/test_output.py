"""The agent's voice in the shell (R43): ``signal.output``, the driver's ``host/output``,
``OutputClosed``, ``subscribe_output`` and the fan-out, bad input and the limits.

Live output is ephemeral: it reaches subscribers as it is published and never the log but
through the step's one ``host/output`` record, written in the step's own report.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from inbox_core import Completed, Enter, Failed, InvalidInput, UserMessage, limits
from inbox_core.commands import Decision, StepOutcome
from inbox_core.events import DurableEvent, HostRecord
from inbox_core.output import (
    MARKER,
    OUTPUT_RECORD,
    Output,
    OutputMessage,
    ReasoningPart,
    TextDelta,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    Usage,
    fold_output,
    output_record,
    output_size,
    read_output,
)
from inbox_core.shell import AbortSignal, LoopAgent, MemoryLog, OutputClosed, Recorded, SqliteLog
from inbox_core.shell.output import CLOSED, OutputFanout, StepOutput, rfc3339, with_output

from .support import (
    Call,
    ScriptedHost,
    capture_loop_errors,
    check_invariants,
    msg,
    run_async,
    settle,
)


def _outputs(agent: LoopAgent) -> list[Output]:
    outputs = [read_output(event) for event in agent.log.read()]
    return [output for output in outputs if output is not None]


def _types(events: Sequence[DurableEvent]) -> list[str]:
    return [event.type for event in events]


async def _step(host: ScriptedHost, agent: LoopAgent, text: str = "hi") -> Call:
    """A followup's turn up to its running step 1: the pending run_step call."""
    agent.followup(msg(text))
    (await host.next("pre_step")).enter()
    return await host.next("run_step")


async def _finish(host: ScriptedHost, agent: LoopAgent, call: Call) -> None:
    """The step completes, the turn stops, the agent is idle."""
    call.answer(Completed())
    (await host.next("turn_stopping")).answer()
    await agent.when_idle()


class Voice:
    """A subscriber keeping every message."""

    def __init__(self) -> None:
        self.messages: list[OutputMessage] = []

    def __call__(self, message: OutputMessage) -> None:
        self.messages.append(message)


# --------------------------------------------------------------------- basics


@run_async
async def test_r43_a_host_that_publishes_gets_its_host_output_recorded() -> None:
    """The driver records what the step said, in the step's own append (before its
    step/end); subscribers saw each message in order, and their fold is the record's parts."""
    host = ScriptedHost()
    agent = LoopAgent(host)
    voice = Voice()
    agent.subscribe_output(voice)
    call = await _step(host, agent, "weather?")
    out = call.signal.output
    assert isinstance(out, StepOutput)
    assert (out.turn, out.step) == (1, 1)
    assert out.reasoning("Paris, ") == 0
    assert out.reasoning("they said.") == 0
    assert out.text("Let me ") == 1
    assert out.text("check.") == 1
    assert out.tool_call("c1", "weather", '{"city":') == 2
    assert out.tool_call_arguments("c1", '"Paris"}') == 2
    assert out.tool_call_end("c1") == 2
    assert out.tool_result("c1", "sunny") == 3
    assert out.tool_result("c0", "boom", is_error=True) == 4
    assert out.text("Sunny.") == 5
    assert out.text(" Warm.", part=1) == 1  # an earlier text part stays open
    parts = (
        ReasoningPart("Paris, they said."),
        TextPart("Let me check. Warm."),
        ToolCallPart("c1", "weather", '{"city":"Paris"}'),
        ToolResultPart("c1", "sunny"),
        ToolResultPart("c0", "boom", is_error=True),
        TextPart("Sunny."),
    )
    assert out.parts == parts
    assert fold_output(voice.messages) == parts
    assert [m.kind for m in voice.messages][:6] == [
        "reasoning-delta",
        "reasoning-delta",
        "text-delta",
        "text-delta",
        "tool-call-start",
        "tool-call-delta",
    ]
    assert OUTPUT_RECORD not in _types(agent.log.read())  # nothing live reached the log
    await _finish(host, agent, call)
    events = agent.log.read()
    at = _types(events).index(OUTPUT_RECORD)
    assert _types(events)[at : at + 2] == [OUTPUT_RECORD, "step/end"]
    (output,) = _outputs(agent)
    assert output.parts == parts
    assert output.started_at is not None
    assert output.ended_at is not None
    assert output.started_at <= output.ended_at
    assert out.closed
    assert call.signal.output is CLOSED
    check_invariants(agent)


@run_async
async def test_r43_a_host_that_records_its_own_host_output_gets_no_second() -> None:
    host = ScriptedHost()
    agent = LoopAgent(host)
    call = await _step(host, agent)
    call.signal.output.text("hello")
    own = call.signal.output.record(model="echo-1", usage=Usage(3, 1))
    call.answer(Recorded(Completed(), [HostRecord("host/mine", {"x": 1}), own]))
    (await host.next("turn_stopping")).answer()
    await agent.when_idle()
    (output,) = _outputs(agent)
    assert output.model == "echo-1"
    assert output.usage == Usage(3, 1)
    assert output.parts == (TextPart("hello"),)
    types = _types(agent.log.read())
    assert types.index("host/mine") < types.index(OUTPUT_RECORD) < types.index("step/end")


@run_async
async def test_r43_a_step_that_says_nothing_records_nothing() -> None:
    host = ScriptedHost()
    agent = LoopAgent(host)
    agent.followup(msg("hi"))
    await host.complete_turn()
    await agent.when_idle()
    assert OUTPUT_RECORD not in _types(agent.log.read())


@run_async
async def test_r43_a_failed_step_records_what_it_said() -> None:
    """The host published, then raised: the turn ends error, its host/output is in the log."""
    host = ScriptedHost()
    agent = LoopAgent(host)
    call = await _step(host, agent)
    call.signal.output.text("half a")
    call.fail(RuntimeError("provider down"))
    await agent.when_idle()
    (output,) = _outputs(agent)
    assert output.parts == (TextPart("half a"),)
    ends = [e for e in agent.log.read() if e.type == "turn/end"]
    assert ends[-1].reason.kind == "error"  # type: ignore[union-attr]
    check_invariants(agent)


# --------------------------------------------------------------- closed output


@run_async
async def test_r43_publishing_when_no_step_runs_is_output_closed() -> None:
    """pre_step, turn_stopping, a maintenance job, a kept reference after the step: the
    step (if any) goes on."""
    seen: list[str] = []

    class Host:
        kept: StepOutput | None = None

        async def pre_step(
            self, turn: int, step: int, messages: tuple[UserMessage, ...], signal: AbortSignal
        ) -> Decision:
            with pytest.raises(OutputClosed, match="no step is running"):
                signal.output.text("too early")
            seen.append("pre_step")
            return Enter(messages)

        async def run_step(self, turn: int, step: int, signal: AbortSignal) -> StepOutcome:
            self.kept = signal.output
            signal.output.text("said")
            return Completed()

        async def turn_stopping(self, turn: int, signal: AbortSignal) -> None:
            with pytest.raises(OutputClosed):
                signal.output.tool_result("c", "late")
            assert self.kept is not None
            for late in (
                lambda: self.kept.text("late"),  # type: ignore[union-attr]
                lambda: self.kept.publish(TextDelta(1, 1, 0, "x")),  # type: ignore[union-attr]
                lambda: self.kept.tool_call("c", "n"),  # type: ignore[union-attr]
            ):
                with pytest.raises(OutputClosed, match="step 1 of turn 1 is not running"):
                    late()
            seen.append("turn_stopping")

    host = Host()
    agent = LoopAgent(host)
    agent.followup(msg("hi"))
    await agent.when_idle()
    assert seen == ["pre_step", "turn_stopping"]
    (output,) = _outputs(agent)
    assert output.parts == (TextPart("said"),)

    async def job(signal: AbortSignal) -> None:
        with pytest.raises(OutputClosed):
            signal.output.text("maintenance")

    await agent.run_maintenance(job)
    assert len(_outputs(agent)) == 1


@run_async
async def test_r43_an_aborted_step_records_what_it_said_before_the_abort() -> None:
    """cancel() mid-step: the output closes with the signal; what was said is recorded,
    the turn ends aborted."""
    host = ScriptedHost()
    agent = LoopAgent(host)
    voice = Voice()
    agent.subscribe_output(voice)
    call = await _step(host, agent, "write an essay")
    out = call.signal.output
    out.text("Once upon")
    agent.cancel()
    assert out.closed
    with pytest.raises(OutputClosed):
        out.text(" a time")
    assert out.parts == (TextPart("Once upon"),)
    call.answer(Completed())
    await agent.when_idle()
    (output,) = _outputs(agent)
    assert output.parts == (TextPart("Once upon"),)
    types = _types(agent.log.read())
    assert types[types.index(OUTPUT_RECORD) :] == [OUTPUT_RECORD, "step/end", "turn/end"]
    assert fold_output(voice.messages) == output.parts
    check_invariants(agent)


@run_async
async def test_r43_a_detached_agent_records_nothing_of_its_step() -> None:
    """R29: detach discards the in-flight report; its partial output is lost with it."""
    host = ScriptedHost()
    log = MemoryLog()
    agent = LoopAgent(host, log=log)
    call = await _step(host, agent)
    call.signal.output.text("partial")
    detaching = asyncio.ensure_future(agent.detach())
    await settle()
    with pytest.raises(OutputClosed):
        call.signal.output.text("more")
    call.answer(Completed())
    await detaching
    assert OUTPUT_RECORD not in _types(log.read())


# ----------------------------------------------------------------- bad input


@run_async
async def test_r43_an_invalid_message_is_invalid_input_and_the_step_goes_on() -> None:
    host = ScriptedHost()
    agent = LoopAgent(host)
    call = await _step(host, agent)
    out = call.signal.output
    out.text("ok")
    bad: list[Any] = [
        lambda: out.text(5),
        lambda: out.text("x", part=7),
        lambda: out.text("x", part=-1),
        lambda: out.text("x", part="0"),
        lambda: out.reasoning("x", part=0),  # part 0 is text
        lambda: out.tool_call("", "n"),
        lambda: out.tool_call("c", "n", arguments=b"{}"),
        lambda: out.tool_call_arguments("nope", "{}"),
        lambda: out.tool_call_arguments(["unhashable"], "{}"),
        lambda: out.tool_call_end("nope"),
        lambda: out.tool_result("c", None),
        lambda: out.tool_result("c", "r", is_error="yes"),
        lambda: out.publish("text-delta"),
        lambda: out.publish(TextDelta(1, 2, 1, "another step")),
        lambda: out.publish(TextDelta(2, 1, 1, "another turn")),
        lambda: out.text("\ud800"),
        lambda: out.record(model=""),
        lambda: out.output(usage={"inputTokens": 1}),
    ]
    for call_it in bad:
        with pytest.raises(InvalidInput):
            call_it()
    out.tool_call("c", "n")
    out.tool_call_end("c")
    with pytest.raises(InvalidInput, match="ended"):
        out.tool_call_arguments("c", "late")
    with pytest.raises(InvalidInput, match="started twice"):
        out.tool_call("c", "again")
    assert out.parts == (TextPart("ok"), ToolCallPart("c", "n"))
    await _finish(host, agent, call)
    (output,) = _outputs(agent)
    assert output.parts == (TextPart("ok"), ToolCallPart("c", "n"))
    with pytest.raises(InvalidInput):
        agent.subscribe_output("not callable")  # type: ignore[arg-type]


@run_async
async def test_r43_output_past_the_limits_is_cut_with_a_marker_never_an_error(
    tmp_path: Path,
) -> None:
    """A delta bigger than a step may say, then more: what fits, the marker, nothing after;
    the record is written to SQLite."""
    host = ScriptedHost()
    with SqliteLog(tmp_path / "agent.db") as log:
        agent = LoopAgent(host, log=log)
        voice = Voice()
        agent.subscribe_output(voice)
        call = await _step(host, agent)
        out = call.signal.output
        assert out.text("x" * (limits.MAX_JSON_SIZE + 10)) == 0  # more than a message holds
        assert out.parts[-1] == TextPart(MARKER)
        assert out.tool_call("c", "n", "{}") == 1  # the marker's index: nothing more is said
        assert out.tool_call_arguments("c", "{}") == 1
        assert out.reasoning("more") == 1
        assert out.publish(TextDelta(1, 1, 0, "more")) == 1
        assert len(out.parts) == 2
        await _finish(host, agent, call)
        (output,) = _outputs(agent)
        assert output.parts[1] == TextPart(MARKER)
        assert len(output.parts[0].text) < limits.MAX_OUTPUT_SIZE  # type: ignore[union-attr]
        assert fold_output(voice.messages) == output.parts
        check_invariants(agent)


@run_async
async def test_r43_a_step_of_many_parts_is_cut_at_max_output_parts() -> None:
    host = ScriptedHost()
    agent = LoopAgent(host)
    call = await _step(host, agent)
    out = call.signal.output
    for index in range(limits.MAX_OUTPUT_PARTS + 10):
        out.tool_result(f"c{index}", "r")
    await _finish(host, agent, call)
    (output,) = _outputs(agent)
    assert len(output.parts) == limits.MAX_OUTPUT_PARTS
    assert output.parts[-1] == TextPart(MARKER)


@run_async
async def test_r43_records_leaving_no_room_keep_their_place_without_the_output(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A host's own records near maxValueSize: the driver leaves its host/output out (a
    warning), rather than make the report invalid."""
    host = ScriptedHost()
    agent = LoopAgent(host)
    call = await _step(host, agent)
    call.signal.output.text("said")
    big = "x" * (limits.MAX_JSON_SIZE - 100)
    records = [HostRecord("host/a", big), HostRecord("host/b", big)]
    with caplog.at_level(logging.WARNING, logger="inbox_core.shell"):
        call.answer(Recorded(Completed(), records))
        (await host.next("turn_stopping")).answer()
        await agent.when_idle()
    assert "leave no room for its host/output" in caplog.text
    types = _types(agent.log.read())
    assert "host/a" in types
    assert OUTPUT_RECORD not in types


# ---------------------------------------------------------------- the fan-out


@run_async
async def test_r43_subscribers_get_messages_in_order_never_nested_and_failures_are_reported() -> (
    None
):
    host = ScriptedHost()
    agent = LoopAgent(host)
    errors = capture_loop_errors()
    first: list[str] = []
    second: list[str] = []
    out: StepOutput | None = None

    def a(message: OutputMessage) -> None:
        first.append(message.text)  # type: ignore[union-attr]
        if message.text == "one" and out is not None:  # type: ignore[union-attr]
            out.text(" two")  # delivered after "one" reached everyone

    def b(message: OutputMessage) -> None:
        second.append(message.text)  # type: ignore[union-attr]

    def broken(message: OutputMessage) -> None:
        raise RuntimeError("a subscriber's bug")

    agent.subscribe_output(a)
    agent.subscribe_output(broken)
    unsubscribe = agent.subscribe_output(b)
    call = await _step(host, agent)
    out = call.signal.output
    out.text("one")
    assert first == ["one", " two"]
    assert second == ["one", " two"]
    assert len(errors) == 2
    assert "output sink" in errors[0]["message"]
    assert isinstance(errors[0]["exception"], RuntimeError)
    assert errors[0]["agent"] is agent
    unsubscribe()
    unsubscribe()
    out.text(" three")
    assert second == ["one", " two"]
    assert out.parts == (TextPart("one two three"),)
    await _finish(host, agent, call)


def test_r43_a_sink_gets_each_step_end_with_its_final_parts() -> None:
    """What a store-side sink (stage 2) plugs into: messages, then the step's end."""
    reported: list[tuple[str, BaseException]] = []
    fanout = OutputFanout(lambda text, error: reported.append((text, error)), clock=lambda: 0.0)
    seen: list[Any] = []

    class Sink:
        def on_output(self, message: OutputMessage) -> None:
            seen.append(message.kind)

        def on_step_end(self, output: StepOutput) -> None:
            seen.append(("end", output.parts))

    remove = fanout.add(Sink())
    out = fanout.open(2, 3)
    out.text("a")
    out.close()
    out.close()  # once
    assert seen == ["text-delta", ("end", (TextPart("a"),))]
    assert out.started_at == "1970-01-01T00:00:00.000Z"
    remove()
    fanout.open(2, 4).text("unseen")
    assert seen == ["text-delta", ("end", (TextPart("a"),))]
    assert reported == []
    assert repr(out) == "StepOutput(turn=2, step=3, 1 parts, closed)"


def test_r43_with_output_and_the_times() -> None:
    out = StepOutput(1, 1, clock=lambda: 1796551200.25)
    assert with_output((), out) == ()
    out.text("hi")
    (record,) = with_output((), out)
    assert read_output(record) == Output(
        (TextPart("hi"),), None, None, "2026-12-06T10:00:00.250Z", "2026-12-06T10:00:00.250Z"
    )
    own = (output_record(Output(())),)
    assert with_output(own, out) == own
    assert out.snapshot().parts == (TextPart("hi"),)
    assert Output((), started_at=rfc3339(time.time())).started_at  # RFC 3339 as Output reads it
    with pytest.raises(InvalidInput, match="turn is an int >= 1"):
        StepOutput(0, 1)
    assert out.said


@run_async
async def test_r43_publishing_costs_the_commit_path_nothing() -> None:
    """10,000 deltas during a step: not one append (live output never reaches the log)."""

    class Counting(MemoryLog):
        appends = 0

        def append(self, events: Sequence[DurableEvent], **kwargs: Any) -> None:
            Counting.appends += 1
            super().append(events, **kwargs)

    host = ScriptedHost()
    agent = LoopAgent(host, log=Counting())
    call = await _step(host, agent)
    before = Counting.appends
    for index in range(10_000):
        call.signal.output.text(f"{index} ")
    assert Counting.appends == before
    call.answer(Failed("done", "x"))
    await agent.when_idle()
    (output,) = _outputs(agent)
    assert output.parts[0].text.startswith("0 1 2 ")  # type: ignore[union-attr]


# ------------------------------------------------------------------ property

_IDS = ("a", "b", "c")
_TEXTS = st.one_of(
    st.text(max_size=4), st.integers(1, 3).map(lambda k: "x" * (k * 2**20 + 7)), st.just("\ud800")
)
_CALLS = st.one_of(
    st.tuples(st.just("text"), _TEXTS, st.one_of(st.none(), st.integers(-1, 6))),
    st.tuples(st.just("reasoning"), _TEXTS, st.one_of(st.none(), st.integers(0, 6))),
    st.tuples(st.just("tool_call"), st.sampled_from(_IDS), st.text(max_size=3)),
    st.tuples(st.just("tool_call_arguments"), st.sampled_from((*_IDS, "zz")), _TEXTS),
    st.tuples(st.just("tool_call_end"), st.sampled_from((*_IDS, "zz"))),
    st.tuples(st.just("tool_result"), st.sampled_from(_IDS), _TEXTS, st.booleans()),
    st.tuples(st.just("publish"), st.integers(0, 6), _TEXTS),
)


@settings(max_examples=80, deadline=None)
@given(st.lists(_CALLS, max_size=25))
def test_r43_whatever_a_host_calls_watchers_fold_to_the_steps_output(calls: list[Any]) -> None:
    """Any sequence of calls, valid or not: each returns a part index or raises InvalidInput
    (changing nothing); the fold of what reached the subscriber is the step's parts, within
    the limits, and its host/output reads back as them."""
    delivered: list[OutputMessage] = []
    fanout = OutputFanout(lambda text, error: None)
    fanout.subscribe(delivered.append)
    out = fanout.open(1, 1)
    for name, *args in calls:
        before = out.parts
        try:
            if name == "text":
                index = out.text(args[0], part=args[1])
            elif name == "reasoning":
                index = out.reasoning(args[0], part=args[1])
            elif name == "publish":
                index = out.publish(TextDelta(1, 1, args[0], args[1]))
            elif name == "tool_result":
                index = out.tool_result(args[0], args[1], is_error=args[2])
            else:
                index = getattr(out, name)(*args)
        except InvalidInput:
            assert out.parts == before
            continue
        assert 0 <= index < max(len(out.parts), 1)
    assert fold_output(delivered) == out.parts
    assert len(out.parts) <= limits.MAX_OUTPUT_PARTS
    assert output_size(out.parts) <= limits.MAX_OUTPUT_SIZE
    if out.said:
        assert read_output(out.record()).parts == out.parts  # type: ignore[union-attr]
