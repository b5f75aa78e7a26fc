"""PydanticAIHost when the provider, the model or a tool misbehaves (issue 28, items 17-20):
what was said is recorded whatever it holds, every failure has a stable code with a storable
text, a provider's own CancelledError is an error, and models that cannot stream still run
(R16, R18, R30, R33, SH4)."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Sequence
from typing import Any

import pytest

pytest.importorskip("pydantic_ai", reason="the pydantic-ai extra is not installed")

from hypothesis import HealthCheck, given, settings
from pydantic_ai import Tool
from pydantic_ai.messages import (
    BinaryContent,
    FilePart,
    ModelMessage,
    ModelResponse,
    PartEndEvent,
    PartStartEvent,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
)
from pydantic_ai.models import Model, ModelRequestParameters
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.settings import ModelSettings
from pydantic_ai.tools import RunContext, ToolDefinition

from inbox_core import DurableEvent, event_from_json, event_to_json, limits, transcript
from inbox_core.integrations._model_host import RECORD_BUDGET
from inbox_core.integrations._pydantic_ai_log import stored
from inbox_core.integrations.pydantic_ai import (
    MODEL_ERROR,
    REQUEST,
    RESPONSE,
    TOOL_ERROR,
    PydanticAIHost,
    model_messages,
)
from inbox_core.output import OUTPUT_RECORD, read_output
from inbox_core.output import TextPart as Said
from inbox_core.shell import LoopAgent
from tests.shell.support import check_invariants, log_json, msg, run_async, steps_of, turn_ends

from .strategies import json_ish, nested
from .support import Reply, Script, call, shape, states

COMPLETED = {"kind": "completed"}
BIG = 17 * 2**20  # characters: more than one record holds (maxJsonSize is 2**24)


def stored_and_read_back(events: Sequence[DurableEvent]) -> list[DurableEvent]:
    """Each event through the codec as a store keeps it: UTF-8 JSON text, parsed back."""
    texts = [limits.dump_json(event_to_json(event)).encode("utf-8") for event in events]
    return [event_from_json(limits.parse_json(text.decode("utf-8"))) for text in texts]


def restored(events: Sequence[DurableEvent]) -> list[ModelMessage]:
    """The history a new host over these events holds (R30)."""
    host = PydanticAIHost(Script.of().model)
    host.restore(events)
    return host.history


def tool_returning(value: Any) -> Tool[Any]:
    def fetch() -> Any:
        """Fetch the thing."""
        return value

    return Tool(fetch)


async def one_tool_turn(value: Any) -> Any:
    """A turn whose step 1 calls a tool returning ``value`` and whose step 2 answers; the
    tool return as the host recorded it, after checking that the turn went on with it."""
    script = Script.of(Reply([call("fetch", "{}")]), "thanks")
    host = PydanticAIHost(script.model, tools=[tool_returning(value)])
    agent = LoopAgent(host)
    agent.followup(msg("fetch it"))
    await agent.when_idle()
    assert turn_ends(agent) == [(1, COMPLETED)]
    assert steps_of(agent) == [(1, 1), (1, 2)]
    assert [e["type"] for e in log_json(agent) if e["type"].startswith("host/")] == [
        REQUEST,
        RESPONSE,  # the model's tool call is kept...
        REQUEST,  # ...and so is the tool's result
        OUTPUT_RECORD,  # the step's host/output (R43), passed over by restore
        RESPONSE,
        OUTPUT_RECORD,
    ]
    returned = host.history[2].parts[0]
    assert isinstance(returned, ToolReturnPart)
    assert (returned.tool_call_id, returned.outcome) == ("call-1", "success")
    sent = script.requests[1][-1].parts[0]  # what the model was sent in step 2: the same
    assert isinstance(sent, ToolReturnPart)
    assert sent.content == returned.content
    events = agent.log.read()
    assert model_messages(transcript(stored_and_read_back(events))) == host.history
    assert restored(events) == host.history
    check_invariants(agent)
    await agent.aclose()
    return returned.content


# ------------------------------------------------------- what the log cannot hold (17)


@pytest.mark.parametrize(
    ("value", "kept"),
    [
        (2**70, "1180591620717411303424"),  # past int64: its digits
        (-(2**63) - 1, "-9223372036854775809"),
        ({"n": 2**64, "ok": "yes"}, '{"n":18446744073709551616,"ok":"yes"}'),
        (nested(80), json.dumps(nested(80), separators=(",", ":"))),  # past maxDepth: its text
        ("half an emoji \ud83d", "half an emoji \\ud83d"),  # a lone surrogate: its escape
        ({"key": ["\ud800", 1]}, {"key": ["\\ud800", 1]}),  # the structure kept
    ],
    ids=["int-2**70", "int-below-int64", "int-in-object", "80-deep", "surrogate", "in-a-list"],
)
@run_async
async def test_r30_i17_a_tool_result_the_log_cannot_hold_is_kept_as_text(
    value: Any, kept: Any
) -> None:
    """R30, issue 28 item 17: a tool result a record cannot hold as it is (an integer past
    int64, nesting past maxDepth, a lone surrogate) no longer ends the turn InvalidInput
    (or PydanticSerializationError) with the tool call and its result lost: both are
    recorded, the result as its JSON text, and the model gets that text in step 2."""
    assert await one_tool_turn(value) == kept


@run_async
async def test_r30_i17_a_tool_result_past_a_records_size_is_cut_with_a_marker() -> None:
    """R30, item 17: 17 M characters (more than one record holds) are kept up to the
    record's size, cut with a marker that says how long the result was; the records go
    through the codec as a store writes and reads them, and a restored host agrees."""
    content = await one_tool_turn("x" * BIG)
    assert isinstance(content, str)
    assert content.endswith(f"… [cut: {BIG} characters]")
    assert content.startswith("x" * (RECORD_BUDGET - 2**11))  # a record's size, less its keys
    assert len(content) < RECORD_BUDGET


class Unshowable:
    def __repr__(self) -> str:
        raise RuntimeError("no repr")


def cyclic() -> list[Any]:
    loop: list[Any] = [1]
    loop.append(loop)
    return loop


@pytest.mark.parametrize(
    ("value", "starts"),
    [
        (nested(400), "[" * 400 + "1"),  # deeper than pydantic serializes
        (2**20000, "an integer of about 6021 digits"),  # more digits than str(int) gives
        (object(), '"<object object at'),  # not JSON at all: its repr
        (Unshowable(), '"<Unshowable>"'),  # not even a repr: its type
        (cyclic(), "[a list no JSON can hold: ValueError: Circular reference detected]"),
    ],
    ids=["400-deep", "6021-digits", "object", "no-repr", "cyclic"],
)
@pytest.mark.filterwarnings("ignore:Pydantic serializer warnings")  # pydantic's, on the cycle
@run_async
async def test_r30_i17_a_result_pydantic_cannot_serialize_is_kept_as_text(
    value: Any, starts: str
) -> None:
    """R30, item 17: results pydantic-ai cannot serialize either are recorded as the best
    text there is, and the turn goes on."""
    content = await one_tool_turn(value)
    assert isinstance(content, str)
    assert content.startswith(starts)


@run_async
async def test_r30_i17_several_big_results_share_the_record_and_small_ones_stay_whole() -> None:
    """R30, item 17: results of one step that together exceed a record are cut to one
    common length; the small one is kept exactly, structure and all."""
    script = Script.of(
        Reply([{i: call(name, "{}", f"call-{i}")[0] for i, name in enumerate("abc")}]), "ok"
    )
    results = {"a": "a" * 10_000_000, "b": "b" * 12_000_000, "c": {"small": [1, 2]}}
    tools = [Tool(lambda name=name: results[name], name=name) for name in "abc"]
    host = PydanticAIHost(script.model, tools=tools)
    agent = LoopAgent(host)
    agent.followup(msg("go"))
    await agent.when_idle()
    assert turn_ends(agent) == [(1, COMPLETED)]
    a, b, c = (part.content for part in host.history[2].parts)  # type: ignore[union-attr]
    assert c == {"small": [1, 2]}
    assert a.endswith("… [cut: 10000000 characters]")
    assert b.endswith("… [cut: 12000000 characters]")
    assert len(a) == len(b)
    assert restored(agent.log.read()) == host.history


@run_async
async def test_r16_r30_an_admitted_batch_past_a_record_is_recorded_cut() -> None:
    """R16, R30, item 17: a batch the core admits whole (an entry and its context of 10 M
    characters each) is more than one request record holds: the record keeps both
    messages cut to one length with a marker (the log's user/message events keep them
    whole), the turn runs, and the model is sent what was recorded."""
    script = Script.of("read it")
    host = PydanticAIHost(script.model)
    agent = LoopAgent(host)
    context = msg("c" * 10_000_000)
    agent.followup(msg("m" * 10_000_000), contexts=(context,))
    await agent.when_idle()
    assert turn_ends(agent) == [(1, COMPLETED)]
    first, second = host.history[0].parts
    assert first.content.endswith("… [cut: 10000000 characters]")  # type: ignore[union-attr]
    assert second.content.endswith("… [cut: 10000000 characters]")  # type: ignore[union-attr]
    assert script.requests[0][0].parts == host.history[0].parts
    admitted = [e["data"] for e in log_json(agent) if e["type"] == "user/message"]
    assert [len(m["content"][0]["text"]) for m in admitted] == [10_000_000, 10_000_000]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(value=json_ish())
def test_r30_i17_property_any_json_ish_tool_result_is_stored_and_the_turn_goes_on(
    value: Any,
) -> None:
    """R30, item 17, as a property: whatever JSON-ish value a tool returns, the turn
    completes in two steps, the call and its result are recorded in records a store can
    encode and decode, and a host restored from them holds the same history."""
    asyncio.run(one_tool_turn(value))


# ------------------------------------------------- storable failure texts (18)


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("bad \ud800 byte", "RuntimeError: bad \\ud800 byte"),
        ("x" * BIG, None),
    ],
    ids=["surrogate", "17M"],
)
@run_async
async def test_r18_r33_a_provider_error_text_is_kept_storable(text: str, shown: str | None) -> None:
    """R18, R33, item 18: a provider error whose text holds a lone surrogate or exceeds
    16 MiB ends the turn model-error (not InvalidInput) with its text escaped or cut, and
    the reply streamed before it is kept as interrupted."""
    script = Script.of(Reply(["Half "], error=RuntimeError(text)))
    host = PydanticAIHost(script.model)
    agent = LoopAgent(host)
    agent.followup(msg("go"))
    await agent.when_idle()
    ((_, end),) = turn_ends(agent)
    assert end["kind"] == "error"
    assert end["error"]["code"] == MODEL_ERROR
    message = end["error"]["message"]
    if shown is not None:
        assert message == shown
    else:
        assert message.startswith("RuntimeError: xxx")
        assert message.endswith(f"… [cut: {BIG + len('RuntimeError: ')} characters]")
        assert len(message) <= limits.MAX_JSON_SIZE
    assert shape(host.history)[-1] == ("response", [("text", "Half ")])
    assert states(host.history)[-1] == "interrupted"
    stored_and_read_back(agent.log.read())


@run_async
async def test_r30_i18_a_reply_and_tool_texts_with_lone_surrogates_are_recorded() -> None:
    """R30, item 18: a reply whose text holds a lone surrogate, a tool call to an unknown
    tool whose name holds one, and a tool error whose text holds one are recorded escaped
    (no PydanticSerializationError); the failure is tool-error with a storable message."""

    def broken() -> str:
        raise ValueError("no \udfff here")

    script = Script.of(
        Reply([call("nope\ud800", "{}")]),  # an unknown tool: a retry goes back
        Reply([call("broken", "{}", "call-2")]),
        "never",
    )
    host = PydanticAIHost(script.model, tools=[broken])
    agent = LoopAgent(host)
    agent.followup(msg("go"))
    await agent.when_idle()
    ((_, end),) = turn_ends(agent)
    assert end["error"] == {
        "message": "tool 'broken' raised ValueError: no \\udfff here",
        "code": TOOL_ERROR,
    }
    call_part = host.history[1].parts[0]
    assert isinstance(call_part, ToolCallPart)
    assert call_part.tool_name == "nope\\ud800"

    surrogate = Script.of("half an emoji \ud83d")
    host = PydanticAIHost(surrogate.model)
    agent = LoopAgent(host)
    agent.followup(msg("go"))
    await agent.when_idle()
    assert turn_ends(agent) == [(1, COMPLETED)]
    assert shape(host.history)[-1] == ("response", [("text", "half an emoji \\ud83d")])
    stored_and_read_back(agent.log.read())


@run_async
async def test_r33_i18_a_tools_prepare_that_raises_is_a_tool_error() -> None:
    """R33, item 18: a tool's ``prepare`` raising ends the turn tool-error (a stable code),
    not with the exception's class name."""

    async def prepare(ctx: RunContext[Any], definition: ToolDefinition) -> ToolDefinition:
        raise LookupError("no definition today")

    def tool() -> str:
        return "never"

    agent = LoopAgent(PydanticAIHost(Script.of("x").model, tools=[Tool(tool, prepare=prepare)]))
    agent.followup(msg("go"))
    await agent.when_idle()
    ((_, end),) = turn_ends(agent)
    assert end["error"]["code"] == TOOL_ERROR
    assert end["error"]["message"] == "preparing the tools raised LookupError: no definition today"


# ----------------------------------------------- a provider's own CancelledError (19)


@pytest.mark.parametrize("chunks", [(), ("Half ",)], ids=["at-once", "mid-stream"])
@run_async
async def test_r18_r33_a_cancelled_error_the_provider_raises_is_a_model_error(
    chunks: tuple[str, ...],
) -> None:
    """R18, R33, item 19: a CancelledError raised by the provider while nobody cancelled
    the turn ends it error with code model-error (it used to end ``completed``, as if
    stopped); what was streamed is kept as interrupted. The agent goes on."""
    script = Script.of(Reply(chunks, error=asyncio.CancelledError()), "fine")
    host = PydanticAIHost(script.model)
    agent = LoopAgent(host)
    agent.followup(msg("go"))
    await agent.when_idle()
    ((_, end),) = turn_ends(agent)
    assert end == {"kind": "error", "error": {"message": "CancelledError", "code": MODEL_ERROR}}
    kinds = [(m.kind, m.state) for m in host.history]
    assert kinds == [("request", "complete")] + [("response", "interrupted")] * len(chunks)
    agent.followup(msg("again"))
    await agent.when_idle()
    assert turn_ends(agent)[-1] == (2, COMPLETED)


@run_async
async def test_r33_a_cancelled_error_a_tool_raises_is_a_tool_error() -> None:
    """R33, item 19: a tool raising CancelledError by itself is a tool-error, not a stop."""

    async def flaky() -> str:
        raise asyncio.CancelledError()

    script = Script.of(Reply([call("flaky", "{}")]))
    agent = LoopAgent(PydanticAIHost(script.model, tools=[flaky]))
    agent.followup(msg("go"))
    await agent.when_idle()
    ((_, end),) = turn_ends(agent)
    assert end["error"] == {"message": "tool 'flaky' raised CancelledError", "code": TOOL_ERROR}


class Unusual(BaseException):
    """Neither an Exception nor SystemExit, KeyboardInterrupt or GeneratorExit."""


ESCAPING = {
    "SystemExit": SystemExit(3),
    "KeyboardInterrupt": KeyboardInterrupt(),
    "GeneratorExit": GeneratorExit(),
    "Unusual": Unusual("odd"),
}
"""What a provider, a tool or a listener may raise that is no ``Exception``: asyncio re-raises
the first two out of the event loop from any task (every agent of a worker stopped, the
process ended), the last two ended a task the host then ignored."""


@pytest.mark.parametrize("name", list(ESCAPING))
@run_async
async def test_r37_r33_a_provider_raising_any_base_exception_is_a_model_error(name: str) -> None:
    """R37 v4, R33: whatever the provider raises costs only the turn, code model-error
    (SystemExit and KeyboardInterrupt ended the event loop, and with it the process)."""
    script = Script.of(Reply(("Half ",), error=ESCAPING[name]), "fine")
    agent = LoopAgent(PydanticAIHost(script.model))
    agent.followup(msg("go"))
    await asyncio.wait_for(agent.when_idle(), 30)
    ((_, end),) = turn_ends(agent)
    assert end["error"]["code"] == MODEL_ERROR
    assert end["error"]["message"].startswith(name)
    agent.followup(msg("again"))
    await asyncio.wait_for(agent.when_idle(), 30)
    assert turn_ends(agent)[-1] == (2, COMPLETED)


@pytest.mark.parametrize("name", list(ESCAPING))
@run_async
async def test_r37_r33_a_tool_raising_any_base_exception_is_a_tool_error(name: str) -> None:
    """R37 v4, R33: whatever a tool raises is a tool-error that ends the turn (SystemExit and
    KeyboardInterrupt ended the process; GeneratorExit and other BaseExceptions were lost:
    the turn went on ``completed`` as if the tool had never been called)."""

    async def flaky() -> str:
        raise ESCAPING[name]

    script = Script.of(Reply([call("flaky", "{}")]), "never asked")
    agent = LoopAgent(PydanticAIHost(script.model, tools=[flaky]))
    agent.followup(msg("go"))
    await asyncio.wait_for(agent.when_idle(), 30)
    ((_, end),) = turn_ends(agent)
    assert end["error"]["code"] == TOOL_ERROR
    assert end["error"]["message"].startswith(f"tool 'flaky' raised {name}")


@pytest.mark.parametrize("name", list(ESCAPING))
@run_async
async def test_r33_a_listener_raising_any_base_exception_ends_the_turn_with_its_name(
    name: str,
) -> None:
    """R33: ``on_event`` raising anything ends the turn error with the exception's class name
    as code, like a hook (SystemExit and KeyboardInterrupt ended the process)."""

    def listener(turn: int, step: int, event: Any) -> None:
        raise ESCAPING[name]

    script = Script.of("hello", "fine")
    agent = LoopAgent(PydanticAIHost(script.model, on_event=listener))
    agent.followup(msg("go"))
    await asyncio.wait_for(agent.when_idle(), 30)
    ((_, end),) = turn_ends(agent)
    assert end["error"]["code"] == name


# ------------------------------------------------ work that ignores its abort (R46)

ABORTED = {"kind": "aborted", "reason": {"kind": "user"}}


@run_async
async def test_r23_r46_a_cancel_ends_the_turn_even_when_the_provider_ignores_its_abort() -> None:
    """R23, R46: cancel while the provider hangs, swallowing its cancellation: the turn ends
    aborted once the host's ``grace`` has passed (the stream left running, unawaited), the
    reply said so far recorded as interrupted and as its host/output; the next turn runs.
    (The host used to await the stream for ever: the agent never went idle again.)"""
    script = Script.of(Reply(["Never ", "ending"], stubborn=True), "Next.")
    host = PydanticAIHost(script.model, grace=0.2)
    agent = LoopAgent(host)
    agent.followup(msg("go"))
    await script.streaming.wait()
    agent.cancel()
    await asyncio.wait_for(agent.when_idle(), 30)
    assert script.cancelled == 1  # and ignored
    agent.followup(msg("again"))
    await asyncio.wait_for(agent.when_idle(), 30)
    assert turn_ends(agent) == [(1, ABORTED), (2, COMPLETED)]
    assert shape(host.history) == [
        ("request", [("user", "go")]),
        ("response", [("text", "Never ending")]),
        ("request", [("user", "again")]),
        ("response", [("text", "Next.")]),
    ]
    assert states(host.history) == ["complete", "interrupted", "complete", "complete"]
    said = [read_output(event) for event in agent.log.read()]
    assert [o.parts for o in said if o is not None] == [(Said("Never ending"),), (Said("Next."),)]
    assert restored(agent.log.read()) == host.history


@run_async
async def test_r23_r46_a_cancel_ends_the_turn_even_when_a_tool_ignores_its_abort() -> None:
    """R23, R46: a tool that swallows its cancellation: the turn ends aborted once ``grace``
    has passed (the tool left running); its call stays unanswered, and the next request
    gets pydantic-ai's "interrupted" return for it."""
    started = asyncio.Event()
    ignored: list[bool] = []

    async def stuck() -> str:
        started.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            ignored.append(True)
        await asyncio.Event().wait()
        return "never"

    script = Script.of(Reply([call("stuck", "{}")]), "ok")
    agent = LoopAgent(PydanticAIHost(script.model, tools=[stuck], grace=0.2))
    agent.followup(msg("go"))
    await started.wait()
    agent.cancel()
    await asyncio.wait_for(agent.when_idle(), 30)
    assert ignored == [True]
    agent.followup(msg("again"))
    await asyncio.wait_for(agent.when_idle(), 30)
    assert turn_ends(agent) == [(1, ABORTED), (2, COMPLETED)]
    interrupted = "The tool call was interrupted before a result was produced."
    assert shape(script.requests[1]) == [
        ("request", [("user", "go")]),
        ("response", [("call", "stuck", {})]),
        ("request", [("return", "stuck", interrupted, "interrupted"), ("user", "again")]),
    ]


@run_async
async def test_r37_records_are_made_off_the_event_loop(monkeypatch: pytest.MonkeyPatch) -> None:
    """R37 (nothing blocks the event loop longer than a command's CPU work): a reply of 10^5
    parts took 11 s of the loop to serialize, fit and read back as records, stalling every
    agent of a worker. Each record is now made in a worker thread."""
    from inbox_core.integrations import pydantic_ai

    loop_thread = threading.get_ident()
    threads: list[int] = []

    def watched(record_type: str, message: ModelMessage) -> Any:
        threads.append(threading.get_ident())
        return stored(record_type, message)

    monkeypatch.setattr(pydantic_ai, "stored", watched)
    script = Script.of(Reply([call("fetch", "{}")]), "thanks")
    agent = LoopAgent(PydanticAIHost(script.model, tools=[tool_returning("x")]))
    agent.followup(msg("go"))
    await asyncio.wait_for(agent.when_idle(), 30)
    assert len(threads) == 4  # the admitted batch, the reply, the tool's return, the answer
    assert loop_thread not in threads


# ------------------------------------------------------- models that cannot stream (20)


class RequestOnly(Model):
    """A model implementing only ``request()``: it answers with a tool call first, then
    with the text it was given; ``gate`` (when set) holds each answer until released."""

    def __init__(self, *replies: ModelResponse, gate: asyncio.Event | None = None) -> None:
        super().__init__()
        self.replies = list(replies)
        self.gate = gate
        self.requests: list[list[ModelMessage]] = []

    async def request(
        self,
        messages: list[ModelMessage],
        model_settings: ModelSettings | None,
        model_request_parameters: ModelRequestParameters,
    ) -> ModelResponse:
        self.requests.append(list(messages))
        if self.gate is not None:
            await self.gate.wait()
        return self.replies.pop(0)

    @property
    def model_name(self) -> str:
        return "request-only"

    @property
    def system(self) -> str:
        return "test"


class StreamRefusing(RequestOnly):
    """Overrides ``request_stream`` only to say it does not stream (NotImplementedError)."""

    def request_stream(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError("no streaming here")


def weather(city: str) -> str:
    """Today's weather in a city."""
    return f"sunny in {city}"


def tool_then_text() -> tuple[ModelResponse, ModelResponse]:
    return (
        ModelResponse(parts=[ToolCallPart("weather", {"city": "Oslo"}, "call-1")]),
        ModelResponse(parts=[TextPart("Sunny.")]),
    )


@pytest.mark.parametrize("kind", ["function", "request-only", "stream-refusing"])
@run_async
async def test_r16_i20_a_model_that_cannot_stream_makes_plain_requests(kind: str) -> None:
    """R16, item 20: ``FunctionModel(function=...)`` (no stream_function), a Model with only
    ``request()``, and one whose ``request_stream`` raises NotImplementedError make plain
    requests (they used to fail every turn model-error); tools still run as steps, and
    ``on_event`` sees each part of the reply as a start and an end event."""
    replies = list(tool_then_text())
    model: Model
    if kind == "function":

        async def answer(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
            return replies.pop(0)

        model = FunctionModel(function=answer)
    else:
        model = (RequestOnly if kind == "request-only" else StreamRefusing)(*replies)
    seen: list[tuple[int, int, str, int]] = []

    def on_event(turn: int, step: int, event: Any) -> None:
        assert isinstance(event, (PartStartEvent, PartEndEvent))
        seen.append((turn, step, event.event_kind, event.index))

    host = PydanticAIHost(model, tools=[weather], on_event=on_event)
    agent = LoopAgent(host)
    agent.followup(msg("weather in Oslo?"))
    await agent.when_idle()
    assert turn_ends(agent) == [(1, COMPLETED)]
    assert shape(host.history) == [
        ("request", [("user", "weather in Oslo?")]),
        ("response", [("call", "weather", {"city": "Oslo"})]),
        ("request", [("return", "weather", "sunny in Oslo", "success")]),
        ("response", [("text", "Sunny.")]),
    ]
    assert seen == [
        (1, 1, "part_start", 0),
        (1, 1, "part_end", 0),
        (1, 2, "part_start", 0),
        (1, 2, "part_end", 0),
    ]


@run_async
async def test_r23_r31_a_plain_request_is_aborted_at_once_and_compaction_works() -> None:
    """R23, R31, item 20: a stop while a plain request waits ends the turn aborted with no
    reply recorded; compaction with a model that cannot stream records its summary."""
    gate = asyncio.Event()
    model = RequestOnly(
        ModelResponse(parts=[TextPart("never")]),
        ModelResponse(parts=[TextPart("The user said go.")]),
        gate=gate,
    )
    host = PydanticAIHost(model)
    agent = LoopAgent(host)
    agent.followup(msg("go"))
    while not model.requests:
        await asyncio.sleep(0)
    agent.cancel()
    await agent.when_idle()
    assert turn_ends(agent) == [(1, {"kind": "aborted", "reason": {"kind": "user"}})]
    assert [m.kind for m in host.history] == ["request"]
    gate.set()
    model.replies.pop(0)
    await agent.run_maintenance(host.compact)
    assert shape(host.history) == [("request", [("summary", "The user said go.")])]


@run_async
async def test_r30_a_reply_past_what_any_representation_holds_is_noted() -> None:
    """R30, item 17: a reply whose part cannot become text (a 13 MB file: its base64
    exceeds a record, and a file part holds no text) is recorded as one text part saying
    so; the turn completes and the conversation goes on."""
    image = FilePart(BinaryContent(data=b"\x89PNG" * (13 * 2**18), media_type="image/png"))
    model = RequestOnly(ModelResponse(parts=[image]), ModelResponse(parts=[TextPart("ok")]))
    host = PydanticAIHost(model)
    agent = LoopAgent(host)
    agent.followup(msg("draw"))
    await agent.when_idle()
    assert turn_ends(agent) == [(1, COMPLETED)]
    (note,) = host.history[1].parts
    assert isinstance(note, TextPart)
    assert note.content.startswith("[this response could not be recorded: ")
    agent.followup(msg("again"))
    await agent.when_idle()
    assert turn_ends(agent)[-1] == (2, COMPLETED)
    assert isinstance(model.requests[1][1], ModelResponse)
    assert restored(agent.log.read()) == host.history


def test_records_fit_one_report() -> None:
    """The record budget the model hosts share leaves room for a step's two records in one
    report, beside its host/output (R43)."""
    from inbox_core.events import RECORD_RESERVE
    from inbox_core.output import RECORD_SIZE as OUTPUT_SIZE

    longest = max(len(REQUEST), len(RESPONSE))
    assert 2 * (RECORD_BUDGET + RECORD_RESERVE + longest) + OUTPUT_SIZE <= limits.MAX_VALUE_SIZE
