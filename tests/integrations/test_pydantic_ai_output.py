"""PydanticAIHost's voice (R43): it streams text, thinking and tool calls (and their results)
through ``signal.output`` and records each step's ``host/output`` beside its own records;
the history still restores from its own records alone. Offline: scripted FunctionModels."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

pytest.importorskip("pydantic_ai", reason="the pydantic-ai extra is not installed")

from pydantic_ai.messages import ModelMessage, ModelResponse
from pydantic_ai.messages import TextPart as AITextPart
from pydantic_ai.models.function import AgentInfo, DeltaThinkingPart, DeltaToolCall, FunctionModel

from inbox_core.history import transcript
from inbox_core.integrations.pydantic_ai import PydanticAIHost, model_messages
from inbox_core.output import (
    OUTPUT_RECORD,
    Output,
    OutputMessage,
    ReasoningPart,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    fold_output,
    read_output,
)
from inbox_core.shell import LoopAgent
from tests.shell.support import check_invariants, msg, run_async, turn_ends

from .support import Reply, Script, call, text


def _outputs(agent: LoopAgent) -> list[Output]:
    found = [read_output(event) for event in agent.log.read()]
    return [output for output in found if output is not None]


def weather(city: str) -> str:
    """Today's weather in a city."""
    return f"sunny in {city}"


@run_async
async def test_r43_a_tool_turn_streams_and_records_each_steps_output() -> None:
    script = Script.of(
        Reply(["Let me ", "check. ", call("weather", '{"city": "Paris"}')]),
        text("Sunny ", "in Paris."),
    )
    host = PydanticAIHost(script.model, tools=[weather])
    agent = LoopAgent(host)
    said: list[OutputMessage] = []
    agent.subscribe_output(said.append)
    agent.followup(msg("weather in Paris?"))
    await agent.when_idle()
    first, second = _outputs(agent)
    assert first.parts == (
        TextPart("Let me check. "),
        ToolCallPart("call-1", "weather", '{"city": "Paris"}'),
        ToolResultPart("call-1", "sunny in Paris"),
    )
    assert second.parts == (TextPart("Sunny in Paris."),)
    assert first.model == "scripted"  # the reply's model name, its usage
    assert first.usage is not None
    assert second.usage is not None
    assert first.usage.output_tokens > 0
    by_step = [
        fold_output(m for m in said if m.step == step) for step in (1, 2)
    ]  # what every watcher saw ends as what the log keeps
    assert by_step == [first.parts, second.parts]
    kinds = [m.kind for m in said if m.step == 1]
    assert kinds[-3:] == ["tool-call-delta", "tool-call-end", "tool-result"]
    assert model_messages(transcript(agent.log.read())) == host.history  # restore ignores it
    check_invariants(agent)


@run_async
async def test_r43_thinking_streams_as_reasoning() -> None:
    """A model name no output holds (past maxIdLength) leaves the record without it."""

    async def thinker(messages: list[ModelMessage], info: AgentInfo) -> Any:
        yield {0: DeltaThinkingPart(content="Hmm, ")}
        yield {0: DeltaThinkingPart(content="Paris.")}
        yield "It is sunny."

    host = PydanticAIHost(FunctionModel(stream_function=thinker, model_name="m" * 2000))
    agent = LoopAgent(host)
    agent.followup(msg("weather?"))
    await agent.when_idle()
    (output,) = _outputs(agent)
    assert output.parts == (ReasoningPart("Hmm, Paris."), TextPart("It is sunny."))
    assert output.model is None


@run_async
async def test_r43_a_tool_calls_arguments_stream_as_deltas_and_a_retry_is_an_error() -> None:
    """Arguments streamed in pieces reach watchers piece by piece; a call the model must
    retry (invalid arguments) is a tool result with isError."""
    script = Script.of(
        Reply([{0: DeltaToolCall("weather", '{"city": ', tool_call_id="c1")},
               {0: DeltaToolCall(json_args='"Paris"}')},
               {1: DeltaToolCall("weather", '{"town": 1}', tool_call_id="c2")}]),
        "done",
    )  # fmt: skip
    host = PydanticAIHost(script.model, tools=[weather])
    agent = LoopAgent(host)
    said: list[OutputMessage] = []
    agent.subscribe_output(said.append)
    agent.followup(msg("go"))
    await agent.when_idle()
    first, _ = _outputs(agent)
    call_1, call_2, sunny, retry = first.parts
    assert call_1 == ToolCallPart("c1", "weather", '{"city": "Paris"}')
    assert call_2 == ToolCallPart("c2", "weather", '{"town": 1}')
    assert sunny == ToolResultPart("c1", "sunny in Paris")
    assert isinstance(retry, ToolResultPart)
    assert (retry.id, retry.is_error) == ("c2", True)
    deltas = [m.arguments for m in said if m.kind == "tool-call-delta"]  # type: ignore[union-attr]
    assert deltas[:2] == ['{"city": ', '"Paris"}']


@run_async
async def test_r43_a_model_that_cannot_stream_publishes_each_part_whole() -> None:
    def answer(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        return ModelResponse(parts=[AITextPart("whole "), AITextPart("reply")])

    host = PydanticAIHost(FunctionModel(answer))
    agent = LoopAgent(host)
    said: list[OutputMessage] = []
    agent.subscribe_output(said.append)
    agent.followup(msg("hi"))
    await agent.when_idle()
    (output,) = _outputs(agent)
    assert output.parts == (TextPart("whole "), TextPart("reply"))
    assert fold_output(said) == output.parts


@run_async
async def test_r43_a_stopped_reply_records_what_it_said_before_the_stop() -> None:
    script = Script.of(text("Once upon ", "a time", hold=True))
    host = PydanticAIHost(script.model)
    agent = LoopAgent(host)
    said: list[OutputMessage] = []
    agent.subscribe_output(said.append)
    agent.followup(msg("tell me a story"))
    await asyncio.wait_for(script.streaming.wait(), 10)
    agent.cancel()
    script.release()
    await agent.when_idle()
    assert turn_ends(agent) == [(1, {"kind": "aborted", "reason": {"kind": "user"}})]
    (output,) = _outputs(agent)
    assert output.parts == (TextPart("Once upon "),)
    assert fold_output(said) == output.parts
    types = [event.type for event in agent.log.read()]
    assert types[types.index(OUTPUT_RECORD) + 1] == "step/end"


@run_async
async def test_r43_output_a_provider_makes_unholdable_is_passed_over() -> None:
    """A tool call id no output holds (past maxIdLength): not published, the turn goes on,
    and the host's own records keep the call whole."""
    long_id = "x" * 2000
    script = Script.of(Reply(["ok ", call("weather", '{"city": "Rome"}', long_id)]), "done")
    host = PydanticAIHost(script.model, tools=[weather])
    agent = LoopAgent(host)
    agent.followup(msg("go"))
    await agent.when_idle()
    assert turn_ends(agent) == [(1, {"kind": "completed"})]
    first, second = _outputs(agent)
    assert first.parts == (TextPart("ok "),)
    assert second.parts == (TextPart("done"),)
    assert host.history[1].parts[1].tool_call_id == long_id  # type: ignore[union-attr]
