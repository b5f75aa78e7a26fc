"""``OpenAIAgentsHost`` (R46; specs/shell.md section 11a): an Agents SDK ``Agent`` whose model is
the SDK's own test double (``agents.testing.ScriptedModel``) or its ``OpenAIResponsesModel``
over recorded Responses API streams replayed through ``httpx2.MockTransport``: streaming
through live output (R43), tools, handoffs, guardrails, steer and cancel (R17, R22-R24),
restart from the log (R30, R41) and compaction (R31)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("agents", reason="the openai-agents extra is not installed")

from agents import (
    Agent,
    GuardrailFunctionOutput,
    StopAtTools,
    ToolGuardrailFunctionOutput,
    function_tool,
    input_guardrail,
    output_guardrail,
    tool_input_guardrail,
)
from agents.testing import ScriptedModel, assistant_message
from agents.testing import function_call as scripted_call

from inbox_core.integrations.openai_agents import INPUT, RESPONSE, SUMMARY, TOOLS, OpenAIAgentsHost
from inbox_core.json_values import thaw_json
from inbox_core.shell import LoopAgent, SqliteLog
from tests.shell.support import msg

from .providers import (
    Heard,
    Provider,
    ends,
    function_call,
    message,
    outputs,
    reasoning,
    records,
    responses_reply,
    run_async,
    said,
)


@function_tool
def weather(city: str) -> str:
    """Today's weather in a city."""
    return f"sunny in {city}"


def agent_of(model: Any, **options: Any) -> Agent[Any]:
    options.setdefault("tools", [weather])
    return Agent(name="helper", instructions="Be brief.", model=model, **options)


async def run(host: OpenAIAgentsHost, *texts: str, log: Any = None) -> LoopAgent:
    agent = LoopAgent(host, log=log)
    for each in texts:
        agent.followup(msg(each))
    await agent.when_idle()
    return agent


def kinds(request: dict[str, Any]) -> list[str]:
    return [item.get("type") or item["role"] for item in request["input"]]


@run_async
async def test_r46_r43_a_reply_streams_as_live_output_and_is_recorded_beside_the_items() -> None:
    """R46, R43, R16: the reasoning summary streams as reasoning, the function call's arguments
    as they are typed, the tool's result after them; each step's live output folds to its
    host/output, recorded beside the SDK's own items; the tool's output goes back with the
    next call (Continue)."""
    provider = Provider.of(
        responses_reply(
            reasoning("Paris, ", "so weather."), function_call("weather", '{"city":', ' "Paris"}')
        ),
        responses_reply(message("It is ", "sunny."), usage=(20, 3)),
    )
    host = OpenAIAgentsHost(agent_of(provider.openai_model()))
    agent = LoopAgent(host)
    heard = Heard(agent)
    agent.followup(msg("Weather in Paris?"))
    await agent.when_idle()
    events = agent.log.read()
    assert ends(events) == [(1, "completed")]
    assert records(events) == [INPUT, RESPONSE, TOOLS, "host/output", RESPONSE, "host/output"]
    first, second = outputs(events)
    assert said(first) == [
        ("reasoning", "Paris, so weather."),
        ("call", "call_1", "weather", '{"city": "Paris"}'),
        ("result", "call_1", "sunny in Paris", False),
    ]
    assert said(second) == [("text", "It is sunny.")]
    assert (second.model, second.usage.input_tokens, second.usage.output_tokens) == (
        "gpt-test",
        20,
        3,
    )
    assert heard.steps() == {(1, 1): first.parts, (1, 2): second.parts}
    assert kinds(provider.requests[1]) == [
        "user",
        "reasoning",
        "function_call",
        "function_call_output",
    ]
    assert provider.requests[1]["instructions"] == "Be brief."
    assert [t["name"] for t in provider.requests[1]["tools"]] == ["weather"]


@run_async
async def test_r46_the_sdks_scripted_model_drives_the_host() -> None:
    """R46: the SDK's own test double (``ScriptedModel``) drives a turn: a tool call, then the
    answer; the second call is sent the conversation as the SDK's items."""
    model = ScriptedModel(
        [[scripted_call("weather", {"city": "Oslo"}, call_id="c1")], [assistant_message("Sunny.")]]
    )
    host = OpenAIAgentsHost(agent_of(model))
    agent = await run(host, "Oslo?")
    assert ends(agent.log.read()) == [(1, "completed")]
    assert [i.get("type", "user") for i in model.calls[1].input] == [
        "user",
        "function_call",
        "function_call_output",
    ]
    assert model.calls[1].system_instructions == "Be brief."
    model.assert_complete()


@run_async
async def test_r46_a_handoff_switches_the_agent_for_the_next_step_and_restart_keeps_it(
    tmp_path: Path,
) -> None:
    """R46, R30: a handoff's call is answered with the SDK's transfer message and the next step
    is the new agent's (its instructions, its tools); the tools record names it, so a host
    rebuilt over the log goes on with it."""
    provider = Provider.of(
        responses_reply(function_call("transfer_to_spanish", "{}")),
        responses_reply(message("Hola.")),
        responses_reply(message("Sí.")),
    )
    model = provider.openai_model()
    spanish = Agent(name="spanish", instructions="Habla español.", model=model)
    triage = Agent(
        name="triage", instructions="Route.", model=model, handoffs=[spanish], tools=[weather]
    )
    path = tmp_path / "h.db"
    host = OpenAIAgentsHost(triage)
    agent = await run(host, "Hola!", log=SqliteLog(path, agent_id="h"))
    assert ends(agent.log.read()) == [(1, "completed")]
    assert host.agent is spanish
    assert [r["instructions"] for r in provider.requests] == ["Route.", "Habla español."]
    assert "tools" not in provider.requests[1] or not provider.requests[1]["tools"]
    transfer = host.items[2]
    assert (transfer["type"], transfer["output"]) == (
        "function_call_output",
        '{"assistant": "spanish"}',
    )
    await agent.detach()
    again = OpenAIAgentsHost(triage)
    agent = await run(again, "¿Seguro?", log=SqliteLog(path, agent_id="h"))
    assert again.agent is spanish
    assert provider.requests[2]["instructions"] == "Habla español."
    await agent.detach()


@run_async
async def test_r46_a_tripped_input_guardrail_ends_the_turn_and_keeps_its_input_out() -> None:
    """R46: the current agent's input guardrail trips on a batch: the turn ends error, code
    guardrail, without a model call; the batch is recorded (tripped) but stays out of the
    conversation the next turn sends."""

    @input_guardrail
    def no_secrets(ctx: Any, agent: Any, items: Any) -> GuardrailFunctionOutput:
        return GuardrailFunctionOutput(None, "secret" in str(items))

    model = ScriptedModel([[assistant_message("Hello.")]])
    host = OpenAIAgentsHost(agent_of(model, input_guardrails=[no_secrets]))
    agent = await run(host, "the secret is 42")
    agent.followup(msg("hi"))
    await agent.when_idle()
    assert ends(agent.log.read()) == [(1, "error", "guardrail"), (2, "completed")]
    assert [i["content"] for i in model.calls[0].input] == ["hi"]
    tripped = thaw_json(next(e for e in agent.log.read() if getattr(e, "type", "") == INPUT).data)
    assert tripped["tripped"] == "input guardrail 'no_secrets' tripped"


@run_async
async def test_r46_a_tripped_output_guardrail_ends_the_turn_with_the_reply_kept() -> None:
    """R46: an output guardrail tripping on the final output ends the turn error, code
    guardrail; what the model said is recorded (it was said)."""

    @output_guardrail
    def polite(ctx: Any, agent: Any, output: Any) -> GuardrailFunctionOutput:
        return GuardrailFunctionOutput(None, "rude" in output)

    model = ScriptedModel([[assistant_message("a rude reply")]])
    agent = await run(OpenAIAgentsHost(agent_of(model, output_guardrails=[polite])), "hi")
    assert ends(agent.log.read()) == [(1, "error", "guardrail")]
    assert said(outputs(agent.log.read())[0]) == [("text", "a rude reply")]


@run_async
async def test_r46_tool_guardrails_reject_content_or_end_the_turn() -> None:
    """R46: a tool input guardrail that rejects the content answers the model with its message
    (the tool not run); one that raises ends the turn error, code guardrail."""
    ran: list[str] = []

    @tool_input_guardrail
    def no_mars(data: Any) -> ToolGuardrailFunctionOutput:
        arguments = data.context.tool_arguments
        if "Venus" in arguments:
            return ToolGuardrailFunctionOutput.raise_exception()
        if "Mars" in arguments:
            return ToolGuardrailFunctionOutput.reject_content("No weather on Mars.")
        return ToolGuardrailFunctionOutput.allow()

    @function_tool(tool_input_guardrails=[no_mars])
    def planet(name: str) -> str:
        """A planet's weather."""
        ran.append(name)
        return "clear"

    model = ScriptedModel(
        [
            [scripted_call("planet", {"name": "Mars"}, call_id="c1")],
            [assistant_message("ok")],
            [scripted_call("planet", {"name": "Venus"}, call_id="c2")],
        ]
    )
    host = OpenAIAgentsHost(agent_of(model, tools=[planet]))
    agent = await run(host, "Mars?", "Venus?")
    assert ends(agent.log.read()) == [(1, "completed"), (2, "error", "guardrail")]
    assert model.calls[1].input[-1]["output"] == "No weather on Mars."
    assert ran == []


@run_async
async def test_r46_stop_on_first_tool_completes_the_turn_with_the_tools_output() -> None:
    """R46: ``tool_use_behavior`` stop_on_first_tool (or StopAtTools naming the tool) makes the
    tool's output the final output: the turn completes without another call."""
    for behavior in ("stop_on_first_tool", StopAtTools(stop_at_tool_names=["weather"])):
        model = ScriptedModel([[scripted_call("weather", {"city": "Rome"}, call_id="c1")]])
        agent = await run(OpenAIAgentsHost(agent_of(model, tool_use_behavior=behavior)), "Rome?")
        assert ends(agent.log.read()) == [(1, "completed")]
        model.assert_complete()


@pytest.mark.parametrize(
    ("incomplete", "end"),
    [("max_output_tokens", (1, "max-tokens")), ("content_filter", (1, "error", "content-filter"))],
)
@run_async
async def test_r46_an_incomplete_response_ends_the_turn_as_it_means(
    incomplete: str, end: tuple[Any, ...]
) -> None:
    """R46: a response incomplete at its token limit is MaxTokens(); one stopped by the content
    filter is an error, code content-filter; what it said is recorded."""
    provider = Provider.of(responses_reply(message("Part"), incomplete=incomplete))
    agent = await run(OpenAIAgentsHost(agent_of(provider.openai_model())), "go")
    events = agent.log.read()
    assert ends(events) == [end]
    assert said(outputs(events)[0]) == [("text", "Part")]


@run_async
async def test_r17_r46_a_steer_joins_the_next_step_after_the_tool_outputs() -> None:
    """R17, R16, R46: a message steered while step 1 streams is admitted at step 2, after the
    tool's output."""
    provider = Provider.of(
        responses_reply(function_call("weather", '{"city": "Oslo"}'), hold=True),
        responses_reply(message("Il fait beau.")),
    )
    host = OpenAIAgentsHost(agent_of(provider.openai_model()))
    agent = LoopAgent(host)
    agent.followup(msg("Weather in Oslo?"))
    await provider.streaming.wait()
    agent.steer(msg("Say it in French."))
    provider.release()
    await agent.when_idle()
    assert ends(agent.log.read()) == [(1, "completed")]
    assert kinds(provider.requests[1]) == ["user", "function_call", "function_call_output", "user"]
    assert provider.requests[1]["input"][-1]["content"] == "Say it in French."


@run_async
async def test_r22_r24_r46_a_cancel_keeps_what_was_said_and_the_queue() -> None:
    """R22-R24, R46, R43: cancelling mid-reply ends the turn aborted at once: the text said so far
    is recorded (interrupted) with its host/output; the followup that waited runs as turn 2
    and its call shows the model what it had said."""
    provider = Provider.of(
        responses_reply(message("The history ", "of Rome is long"), hold=True),
        responses_reply(message("Rome: fine.")),
    )
    host = OpenAIAgentsHost(agent_of(provider.openai_model()))
    agent = LoopAgent(host)
    agent.followup(msg("History of Rome?"))
    agent.followup(msg("And now?"))
    await provider.streaming.wait()
    agent.cancel(keep_inbox=True)
    await agent.when_idle()
    events = agent.log.read()
    assert ends(events) == [(1, "aborted"), (2, "completed")]
    assert said(outputs(events)[0]) == [("text", "The history ")]
    response = thaw_json(next(e for e in events if getattr(e, "type", "") == RESPONSE).data)
    assert response["state"] == "interrupted"
    assert kinds(provider.requests[1]) == ["user", "message", "user"]
    assert provider.requests[1]["input"][1]["content"][0]["text"] == "The history "
    assert provider.cancelled == 1


@run_async
async def test_r27_r30_r46_a_call_left_without_its_output_is_answered_as_not_run() -> None:
    """R30, R46: a tool call recorded without its output (its turn was stopped while the tool
    ran) goes out with the next call answered as not run, as the Responses API requires."""
    import asyncio

    running = asyncio.Event()

    @function_tool
    async def slow(city: str) -> str:
        """Never answers."""
        running.set()
        await asyncio.Event().wait()
        return "never"

    provider = Provider.of(
        responses_reply(message("Checking"), function_call("slow", '{"city": "Oslo"}')),
        responses_reply(message("Ok.")),
    )
    host = OpenAIAgentsHost(agent_of(provider.openai_model(), tools=[slow]))
    agent = LoopAgent(host)
    agent.followup(msg("Oslo?"))
    agent.followup(msg("Never mind."))
    await running.wait()
    agent.cancel(keep_inbox=True)
    await agent.when_idle()
    assert ends(agent.log.read()) == [(1, "aborted"), (2, "completed")]
    assert kinds(provider.requests[1]) == [
        "user",
        "message",
        "function_call",
        "function_call_output",
        "user",
    ]
    assert provider.requests[1]["input"][3]["output"].startswith("[this tool call was not run")
    assert records(agent.log.read()).count(TOOLS) == 0


@run_async
async def test_r31_r41_r46_compaction_replaces_the_history_and_restore_reads_back_to_it(
    tmp_path: Path,
) -> None:
    """R31, R41, R46: ``run_maintenance(host.compact)`` records one summary (asked with
    tool_choice none) that the next call starts from; a host opened over the log (from its
    checkpoint) restores the same conversation from the summary on."""
    path = tmp_path / "c.db"
    model = ScriptedModel(
        [
            [assistant_message("a1")],
            [assistant_message("a2")],
            [assistant_message("The gist.")],
            [assistant_message("a3")],
        ]
    )
    host = OpenAIAgentsHost(agent_of(model))
    agent = await run(host, "q1", "q2", log=SqliteLog(path, agent_id="c", checkpoint_every=3))
    await agent.run_maintenance(host.compact)
    assert model.calls[2].model_settings.tool_choice == "none"
    agent.followup(msg("q3"))
    await agent.when_idle()
    assert [i["content"] for i in model.calls[3].input] == [
        "[A summary of the conversation so far]\nThe gist.",
        "q3",
    ]
    assert records(agent.log.read()).count(SUMMARY) == 1
    await agent.detach()
    again = OpenAIAgentsHost(agent_of(ScriptedModel([])))
    reopened = LoopAgent(again, log=SqliteLog(path, agent_id="c"))
    assert again.items == host.items
    assert len(again.items) == 3  # the summary, q3, a3
    await reopened.detach()
