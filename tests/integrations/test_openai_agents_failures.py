"""``OpenAIAgentsHost`` against bad input (R46, R33, R37; specs/shell.md section 11a): a provider
that errors, streams garbage, ends early, never ends or ignores its abort; a tool that
raises, returns what the log cannot hold, hangs, or needs approval. Each ends only its own
turn, with a stable code; the event loop and the other agents go on."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

pytest.importorskip("agents", reason="the openai-agents extra is not installed")

from agents import Agent, function_tool
from agents.testing import ScriptedModel, assistant_message
from agents.testing import function_call as scripted_call

from inbox_core import HostRecord, TurnEnded
from inbox_core.integrations._model_host import RECORD_BUDGET
from inbox_core.integrations.openai_agents import TOOLS, OpenAIAgentsHost
from inbox_core.json_values import json_size, thaw_json
from inbox_core.shell import LoopAgent
from tests.shell.support import msg

from .providers import Provider, Reply, ends, message, outputs, responses_reply, run_async, said


def make(model: Any, *, tools: Any = (), **options: Any) -> OpenAIAgentsHost:
    options.setdefault("grace", 0.5)
    agent = Agent(name="helper", instructions="Be brief.", model=model, tools=list(tools))
    return OpenAIAgentsHost(agent, **options)


async def one_turn(host: OpenAIAgentsHost) -> LoopAgent:
    agent = LoopAgent(host)
    agent.followup(msg("go"))
    await agent.when_idle()
    return agent


def reason(agent: LoopAgent) -> Any:
    return [e.reason for e in agent.log.read() if isinstance(e, TurnEnded)][-1]


FAILED_EVENT = (
    "response.failed",
    {
        "type": "response.failed",
        "sequence_number": 0,
        "response": {
            "id": "resp_1",
            "object": "response",
            "created_at": 0,
            "model": "gpt-test",
            "status": "failed",
            "output": [],
            "parallel_tool_calls": True,
            "tool_choice": "auto",
            "tools": [],
            "error": {"code": "server_error", "message": "it broke"},
        },
    },
)


@pytest.mark.parametrize(
    ("reply", "shown"),
    [
        (Reply(status=500, body={"error": {"message": "boom"}}), "InternalServerError"),
        (Reply(status=401, body={"error": {"message": "bad key"}}), "AuthenticationError"),
        (Reply(raw=b"event: response.created\ndata: {not json\n\n"), ""),
        (Reply(raw=b"\x00\xff garbage \xfe"), ""),
        (Reply(raw=b"hello world, no events here"), "ended before the reply did"),
        (Reply([FAILED_EVENT]), "it broke"),
        (responses_reply(message("Half a rep"), status=None), "ended before the reply did"),
    ],
    ids=["500", "401", "bad-json", "garbage", "no-events", "failed-event", "cut-short"],
)
@run_async
async def test_r33_r46_a_provider_that_errors_or_streams_garbage_is_a_model_error(
    reply: Reply, shown: str
) -> None:
    """R33, R46: an error status, a failed response, a stream that is not JSON or not a reply,
    or one that ends before the response did: the turn ends error, code model-error, with a
    storable message; what streamed before is kept (the items, their host/output)."""
    provider = Provider.of(reply)
    agent = await one_turn(make(provider.openai_model()))
    ended = reason(agent)
    assert (ended.kind, ended.code) == ("error", "model-error")
    assert shown in ended.message
    if reply.events and reply.events[0][0] == "response.created":
        assert [said(o) for o in outputs(agent.log.read())] == [[("text", "Half a rep")]]


@run_async
async def test_r46_a_provider_that_never_ends_times_out_and_one_ignoring_its_abort_is_left() -> (
    None
):
    """R46: a stream that goes silent ends its turn error, code model-timeout, after the host's
    ``timeout`` (what it said kept); one that also ignores its cancellation costs the step the
    host's ``grace`` more, then is left running: the turn still ends."""
    for stubborn in (False, True):
        reply = responses_reply(message("Thinking about it"), status=None)
        provider = Provider.of(Reply(reply.events, forever=True, stubborn=stubborn))
        agent = await one_turn(make(provider.openai_model(), timeout=0.3, grace=0.3))
        ended = reason(agent)
        assert (ended.kind, ended.code) == ("error", "model-timeout")
        assert [said(o) for o in outputs(agent.log.read())] == [[("text", "Thinking about it")]]


@run_async
async def test_r23_r46_a_cancel_ends_the_turn_even_when_the_provider_ignores_its_abort() -> None:
    """R23, R46: cancel while a stubborn stream hangs: the turn ends aborted within the host's
    grace, what it said recorded; the agent takes its next turn."""
    hanging = responses_reply(message("Never ", "ending"), status=None)
    provider = Provider.of(
        Reply(hanging.events, forever=True, stubborn=True, hold=True),
        responses_reply(message("Next.")),
    )
    agent = LoopAgent(make(provider.openai_model(), grace=0.3))
    agent.followup(msg("go"))
    await provider.streaming.wait()
    provider.release()
    await asyncio.sleep(0.05)
    agent.cancel()
    await asyncio.wait_for(agent.when_idle(), 5)
    agent.followup(msg("again"))
    await agent.when_idle()
    assert ends(agent.log.read()) == [(1, "aborted"), (2, "completed")]
    assert said(outputs(agent.log.read())[0]) == [("text", "Never ending")]


def _calling(name: str, then: str = "ok") -> ScriptedModel:
    return ScriptedModel([[scripted_call(name, {}, call_id="c1")], [assistant_message(then)]])


@pytest.mark.parametrize(
    "raised",
    [RuntimeError("tool broke"), asyncio.CancelledError(), SystemExit(3), KeyboardInterrupt()],
)
@run_async
async def test_r33_r37_r46_a_tool_that_raises_ends_its_turn_with_tool_error(
    raised: BaseException,
) -> None:
    """R33, R37, R46: a tool without a failure function (``failure_error_function=None``)
    raising anything (a CancelledError nobody asked for, SystemExit, KeyboardInterrupt too)
    ends its turn error, code tool-error; the agent takes its next turn."""

    @function_tool(failure_error_function=None)
    async def broken() -> str:
        """Raises."""
        raise raised

    model = _calling("broken")
    model.extend([[assistant_message("fine")]])
    agent = await one_turn(make(model, tools=[broken]))
    ended = reason(agent)
    assert (ended.kind, ended.code) == ("error", "tool-error")
    assert type(raised).__name__ in ended.message
    agent.followup(msg("again"))
    await agent.when_idle()
    assert ends(agent.log.read())[-1] == (2, "completed")


@run_async
async def test_r46_a_tool_error_the_sdk_reports_to_the_model_goes_on() -> None:
    """R46: with the SDK's default failure function a raising tool answers the model with the
    SDK's error text, and the turn goes on."""

    @function_tool
    def broken() -> str:
        """Raises."""
        raise RuntimeError("no")

    model = _calling("broken")
    agent = await one_turn(make(model, tools=[broken]))
    assert ends(agent.log.read()) == [(1, "completed")]
    assert "error occurred" in model.calls[1].input[-1]["output"]


class Opaque:
    def __repr__(self) -> str:
        raise RuntimeError("no repr")

    def __str__(self) -> str:
        raise RuntimeError("no str")


def _nested(depth: int) -> Any:
    value: Any = "bottom"
    for _ in range(depth):
        value = [value]
    return value


@pytest.mark.parametrize(
    "value",
    [
        "x" * (RECORD_BUDGET + 1000),
        "lone \ud800 surrogate",
        2**70,
        {"deep": _nested(200)},
        Opaque(),
    ],
    ids=["huge", "surrogate", "int-past-int64", "deep", "no-str"],
)
@run_async
async def test_r30_r46_a_tool_result_the_log_cannot_hold_is_kept_as_text(value: Any) -> None:
    """R30, R46: whatever a tool returns is recorded with its call and the turn goes on: what the
    log cannot hold as it is is kept as text, cut with a marker where it must be; the model
    is sent what the log holds."""

    @function_tool
    def tool() -> Any:
        """Returns the value."""
        return value

    model = _calling("tool")
    agent = await one_turn(make(model, tools=[tool]))
    assert ends(agent.log.read()) == [(1, "completed")]
    record = next(e for e in agent.log.read() if isinstance(e, HostRecord) and e.type == TOOLS)
    assert json_size(record.data) <= RECORD_BUDGET
    kept = thaw_json(record.data)["items"][0]["output"]
    assert isinstance(kept, str)
    if isinstance(value, str) and len(value) > RECORD_BUDGET:
        assert "[cut: " in kept
    assert model.calls[1].input[-1]["output"] == kept


@run_async
async def test_r46_a_tool_that_hangs_times_out() -> None:
    """R46: a tool that runs past ``tool_timeout`` ends its turn error, code tool-timeout."""

    @function_tool
    async def stuck() -> str:
        """Never returns."""
        await asyncio.Event().wait()
        return "never"

    agent = await one_turn(make(_calling("stuck"), tools=[stuck], tool_timeout=0.2))
    ended = reason(agent)
    assert (ended.kind, ended.code) == ("error", "tool-timeout")


@run_async
async def test_r46_an_unknown_tool_is_told_until_the_retries_are_spent() -> None:
    """R46: a call to a tool that does not exist answers the model (``Tool 'x' not found.``);
    past ``tool_retries`` in one turn the turn ends error, code tool-retries."""
    model = ScriptedModel(
        [[scripted_call("nope", {}, call_id="c1")], [scripted_call("nope", {}, call_id="c2")]]
    )
    agent = await one_turn(make(model, tools=[], tool_retries=1))
    assert ends(agent.log.read()) == [(1, "error", "tool-retries")]
    assert model.calls[1].input[-1]["output"] == "Tool 'nope' not found."


@run_async
async def test_r46_a_tool_that_needs_approval_is_deferred() -> None:
    """R46: a tool that may need approval is not run: the turn ends error, code tool-deferred."""

    @function_tool(needs_approval=True)
    def delete() -> str:
        """Deletes."""
        raise AssertionError("never run")

    agent = await one_turn(make(_calling("delete"), tools=[delete]))
    assert (reason(agent).kind, reason(agent).code) == ("error", "tool-deferred")


@run_async
async def test_r37_r46_a_failing_provider_costs_only_its_own_agent() -> None:
    """R37, R46: one agent's provider hangs, ignoring its abort; another agent in the same event
    loop meanwhile completes its turns; the first ends model-timeout."""
    hanging = responses_reply(message("..."), status=None)
    stuck = Provider.of(Reply(hanging.events, forever=True, stubborn=True))
    slow = LoopAgent(make(stuck.openai_model(), timeout=1.0, grace=0.2))
    slow.followup(msg("go"))
    quick = LoopAgent(make(ScriptedModel([[assistant_message(f"r{n}")] for n in range(3)])))
    for n in range(3):
        quick.followup(msg(f"q{n}"))
        await quick.when_idle()
    assert ends(quick.log.read()) == [(1, "completed"), (2, "completed"), (3, "completed")]
    assert ends(slow.log.read()) == []
    await slow.when_idle()
    assert ends(slow.log.read()) == [(1, "error", "model-timeout")]


@run_async
async def test_r46_a_guardrail_that_hangs_or_raises_fails_closed() -> None:
    """R46: an input guardrail that runs past ``tool_timeout`` and an output guardrail that
    raises each end their turn error, code guardrail: a guardrail that cannot answer lets
    nothing pass (the model is never sent the input it was to look at)."""
    from agents import GuardrailFunctionOutput, input_guardrail, output_guardrail

    @input_guardrail
    async def slow(ctx: Any, agent: Any, items: Any) -> GuardrailFunctionOutput:
        await asyncio.Event().wait()
        return GuardrailFunctionOutput(None, False)

    @output_guardrail
    def broken(ctx: Any, agent: Any, output: Any) -> GuardrailFunctionOutput:
        raise ValueError("cannot judge")

    model = ScriptedModel([[assistant_message("fine")]])
    agent = Agent(name="a", model=model, input_guardrails=[slow])
    loop = await one_turn(OpenAIAgentsHost(agent, tool_timeout=0.2, grace=0.2))
    assert ends(loop.log.read()) == [(1, "error", "guardrail")]
    assert "ran out of time" in reason(loop).message
    assert model.calls == ()
    agent = Agent(name="b", model=model, output_guardrails=[broken])
    loop = await one_turn(OpenAIAgentsHost(agent))
    assert ends(loop.log.read()) == [(1, "error", "guardrail")]
    assert "ValueError: cannot judge" in reason(loop).message
