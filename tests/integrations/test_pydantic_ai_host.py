"""PydanticAIHost under LoopAgent, offline (FunctionModel, TestModel): one request per step,
tools as steps, steering, abort, failures, the conversation in the log (R16-R18, R22-R24,
R27, R30, R31, R33)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import pytest

pytest.importorskip("pydantic_ai", reason="the pydantic-ai extra is not installed")

from pydantic_ai import ModelRetry, RunContext, Tool, ToolReturn
from pydantic_ai.exceptions import ModelHTTPError, ToolFailed
from pydantic_ai.messages import (
    ModelMessagesTypeAdapter,
    ModelRequest,
    ModelResponse,
    PartDeltaEvent,
    PartStartEvent,
    TextPart,
    TextPartDelta,
    UserPromptPart,
)
from pydantic_ai.models.test import TestModel

from inbox_core import (
    AgentError,
    CompletedReason,
    DurableEvent,
    HostRecord,
    InvalidInput,
    RecordsTranscript,
    TurnTranscript,
    UserSource,
    create_user_message,
    transcript,
)
from inbox_core.integrations.pydantic_ai import (
    CONTENT_FILTER,
    MODEL_ERROR,
    REQUEST,
    RESPONSE,
    SUMMARY,
    TOOL_DEFERRED,
    TOOL_ERROR,
    TOOL_RETRIES,
    PydanticAIHost,
    model_messages,
)
from inbox_core.output import OUTPUT_RECORD
from inbox_core.shell import LoopAgent, MemoryLog
from tests.shell.support import (
    Recorder,
    check_invariants,
    log_json,
    msg,
    run_async,
    steps_of,
    turn_ends,
)

from .support import FinishingModel, Reply, Script, call, calls, shape, states, text

COMPLETED = {"kind": "completed"}
ABORTED = {"kind": "aborted", "reason": {"kind": "user"}}


def weather(city: str) -> str:
    """Today's weather in a city.

    Args:
        city: the city's name
    """
    return f"sunny in {city}"


def host_for(script: Script, **options: Any) -> PydanticAIHost:
    options.setdefault("instructions", "Be brief.")
    return PydanticAIHost(script.model, **options)


def record_types(agent: LoopAgent) -> list[str]:
    return [e["type"] for e in log_json(agent) if e["type"].startswith("host/")]


def same_messages(left: list[Any], right: list[Any]) -> bool:
    return ModelMessagesTypeAdapter.dump_json(left) == ModelMessagesTypeAdapter.dump_json(right)


def assert_history_is_the_log(host: PydanticAIHost, agent: LoopAgent) -> None:
    """R30: the host's memory is exactly what the log rebuilds."""
    assert same_messages(host.history, model_messages(transcript(agent.log.read())))


# ----------------------------------------------------------------- one step


@run_async
async def test_r16_r30_a_streamed_reply_is_one_request_recorded_with_the_step() -> None:
    """R16, R30: one step, one request; the reply streams (with delays) to on_event and is
    recorded, with the request, in the model-message JSON form pydantic-ai serializes to."""
    script = Script.of(text("Hello", ", wor", "ld.", delay=0.005))
    events: list[tuple[int, int, Any]] = []
    host = host_for(script, on_event=lambda turn, step, event: events.append((turn, step, event)))
    agent = LoopAgent(host)
    agent.followup(msg("hi"))
    await agent.when_idle()

    (request,) = script.requests
    assert shape(request) == [("request", [("user", "hi")])]
    assert request[0].instructions == "Be brief."
    assert script.infos[0].instructions == "Be brief."
    streamed = [e.part.content for _, _, e in events if isinstance(e, PartStartEvent)]
    streamed += [
        e.delta.content_delta
        for _, _, e in events
        if isinstance(e, PartDeltaEvent) and isinstance(e.delta, TextPartDelta)
    ]
    assert "".join(streamed) == "Hello, world."
    assert {(turn, step) for turn, step, _ in events} == {(1, 1)}
    assert turn_ends(agent) == [(1, COMPLETED)]
    types = [e["type"] for e in log_json(agent)]
    assert types[types.index("turn/start") :] == [
        "turn/start",
        "agent/inbox/spliced",
        REQUEST,  # the admitted batch, in the same append as step/start and user/message
        "step/start",
        "user/message",
        RESPONSE,  # the reply, in the same append as step/end
        OUTPUT_RECORD,  # beside it, the step's host/output (R43)
        "step/end",
        "turn/end",
    ]
    assert shape(host.history) == [
        ("request", [("user", "hi")]),
        ("response", [("text", "Hello, world.")]),
    ]
    recorded = next(e for e in log_json(agent) if e["type"] == RESPONSE)["data"]
    assert recorded == ModelMessagesTypeAdapter.dump_python([host.history[1]], mode="json")[0]
    assert_history_is_the_log(host, agent)
    check_invariants(agent)


@run_async
async def test_r16_r9_contexts_injections_and_messages_enter_in_admission_order() -> None:
    """R9, R16: the request holds one user part per admitted message, in the order the core
    admitted them (next-step first, each entry's contexts before its message), with their ids."""
    script = Script.of("ok")
    host = host_for(script)
    agent = LoopAgent(host)
    agent.inject(msg("on a phone"))
    context = create_user_message("calendar: free", source=UserSource())
    agent.followup(msg("plan my day"), contexts=(context,))
    await agent.when_idle()

    admitted = [e["data"]["id"] for e in log_json(agent) if e["type"] == "user/message"]
    assert shape(script.requests[0]) == [
        ("request", [("user", "on a phone"), ("user", "calendar: free"), ("user", "plan my day")])
    ]
    first = host.history[0]
    assert isinstance(first, ModelRequest)
    assert first.metadata == {"inbox_core": {"turn": 1, "step": 1, "messages": admitted}}


@run_async
async def test_r16_non_text_blocks_reach_the_model_as_their_json_text() -> None:
    """R1, R16: content blocks are opaque to the core; the default user_part keeps text blocks
    as text and gives any other block to the model as its JSON text (nothing is dropped)."""
    script = Script.of("ok")
    agent = LoopAgent(host_for(script))
    image = {"type": "image", "url": "https://example.org/a.png"}
    agent.followup(create_user_message([{"type": "text", "text": "what is this?"}, image]))
    await agent.when_idle()
    assert shape(script.requests[0]) == [
        (
            "request",
            [("user", ["what is this?", '{"type": "image", "url": "https://example.org/a.png"}'])],
        )
    ]


def test_r26_bad_options_raise_invalid_input() -> None:
    """R26: a bad option is a typed error when the host is built."""
    for bad in (-1, 1.5, True, None):
        with pytest.raises(InvalidInput, match="tool_retries"):
            PydanticAIHost("test", tool_retries=bad)  # type: ignore[arg-type]
    for wrong in (-0.5, float("nan"), float("inf"), True, "5"):
        with pytest.raises(InvalidInput, match="grace"):
            PydanticAIHost("test", grace=wrong)  # type: ignore[arg-type]


@run_async
async def test_a_model_name_string_is_resolved_by_pydantic_ai() -> None:
    """R16: ``model`` may be a model name; "test" is pydantic-ai's TestModel."""
    host = PydanticAIHost("test")
    assert isinstance(host.model, TestModel)
    agent = LoopAgent(host)
    agent.followup(msg("hello"))
    await agent.when_idle()
    assert turn_ends(agent) == [(1, COMPLETED)]
    assert [m.kind for m in host.history] == ["request", "response"]


# ------------------------------------------------------------ tools as steps


@run_async
async def test_r16_a_tool_call_continues_and_its_result_feeds_the_second_step() -> None:
    """R16, R17: a reply with a tool call answers Continue; the tool runs in that step and its
    return is recorded; the second request holds the call and its result, message by message."""
    script = Script.of(Reply([call("weather", '{"city": "Paris"}')]), "Sunny, 21 C.")
    host = host_for(script, tools=[weather])
    agent = LoopAgent(host)
    agent.followup(msg("weather in Paris?"))
    await agent.when_idle()

    assert [shape(r) for r in script.requests] == [
        [("request", [("user", "weather in Paris?")])],
        [
            ("request", [("user", "weather in Paris?")]),
            ("response", [("call", "weather", {"city": "Paris"})]),
            ("request", [("return", "weather", "sunny in Paris", "success")]),
        ],
    ]
    (tool,) = script.infos[0].function_tools
    assert tool.name == "weather"
    assert tool.description == "Today's weather in a city."
    assert tool.parameters_json_schema["properties"] == {
        "city": {"type": "string", "description": "the city's name"}
    }
    assert steps_of(agent) == [(1, 1), (1, 2)]
    assert turn_ends(agent) == [(1, COMPLETED)]
    assert record_types(agent) == [
        REQUEST,
        RESPONSE,
        REQUEST,
        OUTPUT_RECORD,
        RESPONSE,
        OUTPUT_RECORD,
    ]
    assert_history_is_the_log(host, agent)


@run_async
async def test_r16_test_model_calls_every_tool_then_answers() -> None:
    """R16: pydantic-ai's TestModel calls each tool in step 1 and answers in step 2."""
    host = PydanticAIHost(TestModel(), tools=[weather])
    agent = LoopAgent(host)
    agent.followup(msg("go"))
    await agent.when_idle()
    assert steps_of(agent) == [(1, 1), (1, 2)]
    kinds = [(m.kind, [p.part_kind for p in m.parts]) for m in host.history]
    assert kinds == [
        ("request", ["user-prompt"]),
        ("response", ["tool-call"]),
        ("request", ["tool-return"]),
        ("response", ["text"]),
    ]
    assert host.history[2].parts[0].content == "sunny in a"  # type: ignore[union-attr]


@run_async
async def test_r16_tools_see_their_context_and_may_return_extra_content() -> None:
    """R16: a tool with a RunContext gets the host's deps; a ToolReturn's content goes to the
    model as a user part after the tool returns, its metadata stays in the record."""

    def note(ctx: RunContext[str], topic: str) -> ToolReturn[str]:
        return ToolReturn(f"{ctx.deps}: {topic}", content="see the attached", metadata={"k": 1})

    script = Script.of(Reply([call("note", '{"topic": "tea"}')]), "done")
    host = host_for(script, tools=[Tool(note)], deps="alice")
    agent = LoopAgent(host)
    agent.followup(msg("note tea"))
    await agent.when_idle()
    assert shape(script.requests[1])[-1] == (
        "request",
        [("return", "note", "alice: tea", "success"), ("user", "see the attached")],
    )
    assert host.history[2].parts[0].metadata == {"k": 1}  # type: ignore[union-attr]


@run_async
async def test_r16_invalid_arguments_and_model_retry_go_back_to_the_model() -> None:
    """R16: arguments that fail validation, and a ModelRetry, answer the call as a retry (the
    pydantic-ai way); a ToolFailed answers it as failed; the step continues."""
    attempts: list[str] = []

    def lookup(city: str) -> str:
        attempts.append(city)
        if city == "Atlantis":
            raise ModelRetry("no such city; try a real one")
        if city == "Nowhere":
            raise ToolFailed("the service is down")
        return f"found {city}"

    script = Script.of(
        Reply([call("lookup", '{"town": 1}', "c1")]),
        Reply([call("lookup", '{"city": "Atlantis"}', "c2")]),
        Reply([call("lookup", '{"city": "Nowhere"}', "c3")]),
        "giving up",
    )
    host = host_for(script, tools=[lookup], tool_retries=2)
    agent = LoopAgent(host)
    agent.followup(msg("find it"))
    await agent.when_idle()

    returns = [m for m in host.history if isinstance(m, ModelRequest)][1:]
    outcomes = [(p.tool_call_id, p.outcome) for m in returns for p in m.parts]  # type: ignore[union-attr]
    assert outcomes == [("c1", "retried"), ("c2", "retried"), ("c3", "failed")]
    assert "no such city" in str(returns[1].parts[0].content)  # type: ignore[union-attr]
    assert attempts == ["Atlantis", "Nowhere"]
    assert steps_of(agent) == [(1, 1), (1, 2), (1, 3), (1, 4)]
    assert turn_ends(agent) == [(1, COMPLETED)]


@run_async
async def test_r18_r33_tool_failures_end_the_turn_with_stable_codes() -> None:
    """R18, R33: a tool that raises ends the turn ``error`` with code "tool-error"; retries
    beyond the budget with "tool-retries"; an approval tool with "tool-deferred". Each is
    announced as agent/error, and the reply and settled returns are still recorded."""

    def broken(x: int) -> str:
        raise KeyError("missing")

    def stubborn(x: int) -> str:
        raise ModelRetry("again")

    def ok(x: int) -> str:
        return "fine"

    cases = [
        ("broken", TOOL_ERROR, "tool 'broken' raised KeyError: 'missing'"),
        ("stubborn", TOOL_RETRIES, "Tool 'stubborn' exceeded max retries"),
        ("ask", TOOL_DEFERRED, "tool 'ask' needs approval"),
    ]
    for name, code, message in cases:
        script = Script.of(Reply([calls((name, '{"x": 1}'), ("ok", '{"x": 2}'))]))
        tools = [broken, stubborn, ok, Tool(ok, name="ask", requires_approval=True)]
        host = host_for(script, tools=tools, tool_retries=0)
        agent = LoopAgent(host)
        rec = Recorder()
        agent.subscribe(rec)
        agent.followup(msg("go"))
        await agent.when_idle()
        ((_, reason),) = turn_ends(agent)
        assert reason["kind"] == "error"
        assert reason["error"]["code"] == code
        assert reason["error"]["message"].startswith(message)
        (error,) = rec.of("agent/error")
        assert isinstance(error, AgentError)
        assert (error.turn, error.step, error.code) == (1, 1, code)
        last = host.history[-1]
        assert isinstance(last, ModelRequest)
        assert last.state == "interrupted"
        assert [(p.tool_name, p.content) for p in last.parts] == [("ok", "fine")]  # type: ignore[union-attr]
        assert_history_is_the_log(host, agent)


# ----------------------------------------------------------------- steering


@run_async
async def test_r8_r17_a_steer_sent_mid_stream_enters_the_next_step() -> None:
    """R8, R17: a steer sent while the reply streams waits for the step boundary; the step
    completes, then a second step of the same turn sends the full reply and the steer. A
    followup sent meanwhile gets a turn of its own (R20)."""
    script = Script.of(text("Paris is ", "lovely.", hold=True), "Paris est belle.", "Lyon.")
    host = host_for(script)
    agent = LoopAgent(host)
    agent.followup(msg("tell me about Paris"))
    await script.streaming.wait()
    agent.steer(msg("in French"))
    agent.followup(msg("and Lyon?"))
    assert len(script.requests) == 1  # nothing enters the running request
    script.release()
    await agent.when_idle()

    assert [shape(r) for r in script.requests[1:]] == [
        [
            ("request", [("user", "tell me about Paris")]),
            ("response", [("text", "Paris is lovely.")]),
            ("request", [("user", "in French")]),
        ],
        [
            ("request", [("user", "tell me about Paris")]),
            ("response", [("text", "Paris is lovely.")]),
            ("request", [("user", "in French")]),
            ("response", [("text", "Paris est belle.")]),
            ("request", [("user", "and Lyon?")]),
        ],
    ]
    assert steps_of(agent) == [(1, 1), (1, 2), (2, 1)]
    assert turn_ends(agent) == [(1, COMPLETED), (2, COMPLETED)]
    assert_history_is_the_log(host, agent)


@run_async
async def test_r17_a_steer_during_a_tool_step_joins_the_tool_results() -> None:
    """R17: a steer sent while a tool-calling reply streams enters the next step together
    with the tool results (one request: tool returns first, then the steer)."""
    script = Script.of(Reply([call("weather", '{"city": "Oslo"}'), ""], hold=True), "Rain.")
    host = host_for(script, tools=[weather])
    agent = LoopAgent(host)
    agent.followup(msg("weather?"))
    await script.streaming.wait()
    agent.steer(msg("in Celsius"))
    script.release()
    await agent.when_idle()
    assert shape(script.requests[1])[-1] == (
        "request",
        [("return", "weather", "sunny in Oslo", "success"), ("user", "in Celsius")],
    )
    assert steps_of(agent) == [(1, 1), (1, 2)]


# -------------------------------------------------------------------- abort


@run_async
async def test_r22_r23_r24_cancel_keep_inbox_mid_stream_keeps_the_partial_reply() -> None:
    """R22-R24: cancel(keep_inbox=True) stops the stream at once (the model's stream is
    cancelled, not drained); the turn ends aborted; the partial reply is recorded with
    state "interrupted"; the queued followup runs next and its request shows the partial."""
    script = Script.of(text("Once upon ", "a time", hold=True), "Short one.")
    host = host_for(script)
    agent = LoopAgent(host)
    rec = Recorder()
    agent.subscribe(rec)
    agent.followup(msg("a long story"))
    await script.streaming.wait()
    agent.followup(msg("then a short one"))
    agent.cancel(keep_inbox=True)
    await agent.when_idle()

    assert script.cancelled == 1
    assert turn_ends(agent) == [(1, ABORTED), (2, COMPLETED)]
    assert not rec.of("agent/inbox/discarded")
    assert shape(script.requests[1]) == [
        ("request", [("user", "a long story")]),
        ("response", [("text", "Once upon ")]),
        ("request", [("user", "then a short one")]),
    ]
    assert states(host.history) == ["complete", "interrupted", "complete", "complete"]
    assert_history_is_the_log(host, agent)
    check_invariants(agent)


@run_async
async def test_r23_an_abort_before_anything_streamed_records_no_reply() -> None:
    """R23: aborted while the request is open and nothing was streamed: no reply record; the
    admitted message stays in the history for the next request."""
    opened = asyncio.Event()

    async def slow_start(messages: Any, info: Any) -> Any:
        opened.set()
        await asyncio.Event().wait()  # the provider never answers
        yield "never"

    from pydantic_ai.models.function import FunctionModel

    host = PydanticAIHost(FunctionModel(stream_function=slow_start))
    agent = LoopAgent(host)
    agent.followup(msg("hello"))
    await opened.wait()
    agent.cancel()
    await agent.when_idle()
    assert turn_ends(agent) == [(1, ABORTED)]
    assert record_types(agent) == [REQUEST]
    assert shape(host.history) == [("request", [("user", "hello")])]


@run_async
async def test_r23_cancel_during_tool_execution_cancels_the_tools() -> None:
    """R23: an abort while tools run cancels them; the reply is recorded, the calls stay
    unanswered, and the next request gets pydantic-ai's synthesized "interrupted" returns."""
    started = asyncio.Event()
    cancelled: list[bool] = []

    async def slow(x: int) -> str:
        started.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.append(True)
            raise
        return "never"

    script = Script.of(Reply([call("slow", '{"x": 1}')]), "ok", "ok")
    host = host_for(script, tools=[slow])
    agent = LoopAgent(host)
    agent.followup(msg("run it"))
    await started.wait()
    agent.queue(msg("next"))
    agent.cancel(keep_inbox=True)
    await agent.when_idle()
    assert cancelled == [True]
    assert turn_ends(agent) == [(1, ABORTED)]
    assert record_types(agent) == [REQUEST, RESPONSE, OUTPUT_RECORD]  # what it said (R43)
    agent.followup(msg("again"))  # the queued "next" is claimed first, by turn 2 (R14)
    await agent.when_idle()
    interrupted = "The tool call was interrupted before a result was produced."
    assert shape(script.requests[1]) == [
        ("request", [("user", "run it")]),
        ("response", [("call", "slow", {"x": 1})]),
        ("request", [("return", "slow", interrupted, "interrupted"), ("user", "next")]),
    ]


# ----------------------------------------------------------------- failures


@run_async
async def test_r18_r33_a_provider_error_fails_the_turn_and_is_announced() -> None:
    """R18, R33: the provider raising (at the start, or mid-stream) ends the turn ``error``
    with code "model-error", announced as agent/error; a partial reply is kept as interrupted."""
    down = ModelHTTPError(503, "scripted", body="overloaded")
    script = Script.of(Reply(error=down), Reply(["Half "], error=ConnectionError("reset")), "ok")
    host = host_for(script)
    agent = LoopAgent(host)
    rec = Recorder()
    agent.subscribe(rec)
    agent.followup(msg("one"))
    await agent.when_idle()
    agent.followup(msg("two"))
    await agent.when_idle()

    ends = turn_ends(agent)
    assert [reason["error"]["code"] for _, reason in ends] == [MODEL_ERROR, MODEL_ERROR]
    assert ends[0][1]["error"]["message"].startswith("ModelHTTPError: ")
    assert ends[1][1]["error"]["message"] == "ConnectionError: reset"
    assert [(n.turn, n.step, n.code) for n in rec.of("agent/error")] == [  # type: ignore[attr-defined]
        (1, 1, MODEL_ERROR),
        (2, 1, MODEL_ERROR),
    ]
    assert shape(host.history) == [
        ("request", [("user", "one")]),
        ("request", [("user", "two")]),
        ("response", [("text", "Half ")]),
    ]
    assert states(host.history)[-1] == "interrupted"
    agent.followup(msg("three"))
    await agent.when_idle()
    assert shape(script.requests[-1]) == [
        ("request", [("user", "one"), ("user", "two")]),
        ("response", [("text", "Half ")]),
        ("request", [("user", "three")]),
    ]


@run_async
async def test_r16_r18_finish_reasons_length_and_content_filter() -> None:
    """R16, R18: a length stop answers MaxTokens (turn ``max-tokens``); a content filter stop
    fails with code "content-filter"; either reply is recorded."""
    for reason, expected in (
        ("length", {"kind": "max-tokens"}),
        ("content_filter", {"kind": "error"}),
    ):
        script = Script.of("cut")
        host = PydanticAIHost(FinishingModel(script.model, reason))  # type: ignore[arg-type]
        agent = LoopAgent(host)
        agent.followup(msg("go"))
        await agent.when_idle()
        ((_, end),) = turn_ends(agent)
        assert end["kind"] == expected["kind"]
        if reason == "content_filter":
            assert end["error"]["code"] == CONTENT_FILTER
        assert record_types(agent) == [REQUEST, RESPONSE, OUTPUT_RECORD]


@run_async
async def test_r33_an_on_event_error_is_the_hooks_error() -> None:
    """R33: an exception raised by ``on_event`` ends the turn error with its class name."""

    def listener(turn: int, step: int, event: Any) -> None:
        raise LookupError("ui gone")

    agent = LoopAgent(host_for(Script.of("hello"), on_event=listener))
    agent.followup(msg("hi"))
    await agent.when_idle()
    ((_, end),) = turn_ends(agent)
    assert end["error"] == {"message": "ui gone", "code": "LookupError"}


# ---------------------------------------------------------------- the log


def test_r30_model_messages_folds_records_and_honours_summaries() -> None:
    """R30: the fold keeps this host's records in log order, starts again at a summary
    (also one written while no turn was open), ignores other hosts' records, and refuses a
    record that does not hold a pydantic-ai message of its kind."""

    def record(kind: str, message: Any) -> HostRecord:
        data = ModelMessagesTypeAdapter.dump_python([message], mode="json")[0]
        return HostRecord(kind, data)

    ask = ModelRequest(parts=[UserPromptPart("q")])
    answer = ModelResponse(parts=[TextPart("a")])
    summary = ModelRequest(parts=[UserPromptPart("summary")])
    blocks = (
        TurnTranscript(1, (record(REQUEST, ask), record(RESPONSE, answer)), CompletedReason()),
        RecordsTranscript((record(SUMMARY, summary), HostRecord("host/other", {"x": 1}))),
        TurnTranscript(2, (record(REQUEST, ask),), None),
    )
    assert shape(model_messages(blocks)) == [
        ("request", [("user", "summary")]),
        ("request", [("user", "q")]),
    ]
    for bad in (HostRecord(RESPONSE, {"kind": "nope"}), record(RESPONSE, ask)):
        with pytest.raises(InvalidInput, match=RESPONSE):
            model_messages([RecordsTranscript((bad,))])


@run_async
async def test_r31_compaction_summarizes_the_history_into_one_record() -> None:
    """R31, R30: ``run_maintenance(host.compact)`` asks the same model (the history plus the
    summary prompt, tools off) and records one summary while no turn is open; the next
    request starts from it, and a host restored from the log agrees."""
    script = Script.of("Paris is sunny.", "The user asked about Paris; it is sunny.", "Yes.")
    host = host_for(script, tools=[weather])
    log = MemoryLog()
    agent = LoopAgent(host, log=log)
    agent.followup(msg("weather in Paris?"))
    await agent.when_idle()
    await agent.run_maintenance(host.compact)

    ask = script.requests[1]
    assert shape(ask) == [
        ("request", [("user", "weather in Paris?")]),
        ("response", [("text", "Paris is sunny.")]),
        ("request", [("user", host.summary_prompt)]),
    ]
    assert script.infos[1].model_settings is not None
    assert script.infos[1].model_settings.get("tool_choice") == "none"
    last = transcript(log.read())[-1]
    assert isinstance(last, RecordsTranscript)
    assert [r.type for r in last.records] == [SUMMARY]
    summary_text = "The user asked about Paris; it is sunny."
    assert shape(host.history) == [("request", [("summary", summary_text)])]

    agent.followup(msg("still?"))
    await agent.when_idle()
    assert shape(script.requests[2]) == [
        ("request", [("summary", summary_text), ("user", "still?")])
    ]
    await agent.detach()
    restored = host_for(Script.of())
    LoopAgent(restored, log=log.handle())
    assert same_messages(restored.history, host.history)


class RefusingSummaries(MemoryLog):
    """A store that refuses, while ``refuse`` is set, every append holding a summary."""

    refuse = False

    def append(self, events: Sequence[DurableEvent]) -> None:
        if self.refuse and any(getattr(e, "type", None) == SUMMARY for e in events):
            raise OSError("the store refused the write")
        super().append(events)


@run_async
async def test_r30_r31_sh11_a_summary_the_log_refused_never_reaches_the_model() -> None:
    """R30, R31, SH11 (issue 21): when the maintenance end carrying the summary cannot be
    written, run_maintenance raises, the agent goes on without the records, and the shell
    restores the host from the log: its history is the log's at once, and the next request
    is built from the history without the summary (before the fix the host kept a summary
    the log never had, and sent it to the model)."""
    script = Script.of("Paris is sunny.", "The user asked about Paris.", "Still sunny.")
    log = RefusingSummaries()
    host = host_for(script)
    agent = LoopAgent(host, log=log)
    agent.followup(msg("weather in Paris?"))
    await agent.when_idle()
    log.refuse = True
    with pytest.raises(OSError, match="refused"):
        await agent.run_maintenance(host.compact)
    assert agent.status == "idle"  # the shell ended the job without its records
    assert not [e for e in log.read() if isinstance(e, HostRecord) and e.type == SUMMARY]
    assert_history_is_the_log(host, agent)
    log.refuse = False

    agent.followup(msg("still?"))
    await agent.when_idle()
    assert shape(script.requests[2]) == [
        ("request", [("user", "weather in Paris?")]),
        ("response", [("text", "Paris is sunny.")]),
        ("request", [("user", "still?")]),
    ]
    assert_history_is_the_log(host, agent)
    check_invariants(agent)


@run_async
async def test_r31_compaction_of_nothing_or_aborted_records_nothing() -> None:
    """R31: an empty history, or a job cancelled mid-request, records nothing."""
    script = Script.of("hi", text("sum", "mary", hold=True))
    host = host_for(script)
    agent = LoopAgent(host)
    await agent.run_maintenance(host.compact)
    assert agent.log.read() == []
    agent.followup(msg("hello"))
    await agent.when_idle()
    before = len(agent.log.read())
    job = asyncio.ensure_future(agent.run_maintenance(host.compact))
    await script.streaming.wait()
    agent.cancel()
    await job
    assert len(agent.log.read()) == before
    assert script.cancelled == 1
    assert [m.kind for m in host.history] == ["request", "response"]
