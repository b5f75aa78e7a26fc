"""``AnthropicHost`` (R46; specs/shell.md section 11a) against recorded Messages API streams
replayed offline through ``httpx2.MockTransport``: streaming through live output (R43), tools,
thinking, prompt caching, stop reasons, steer and cancel (R17, R22-R24), restart from the log
(R30, R41) and compaction (R31)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("anthropic", reason="the anthropic extra is not installed")

from inbox_core.integrations.anthropic import MESSAGE, SUMMARY, AnthropicHost
from inbox_core.shell import LoopAgent, SqliteLog
from tests.shell.support import msg

from .providers import (
    Heard,
    Provider,
    Reply,
    anthropic_reply,
    ends,
    outputs,
    records,
    run_async,
    said,
    text,
    thinking,
    tool_use,
)


def weather(city: str) -> str:
    """Today's weather in a city."""
    return f"sunny in {city}"


def make(provider: Provider, **options: Any) -> AnthropicHost:
    options.setdefault("tools", [weather])
    return AnthropicHost(
        provider.anthropic(), "claude-test", system="Be brief.", grace=0.5, **options
    )


async def run(host: AnthropicHost, *texts: str, log: Any = None) -> LoopAgent:
    agent = LoopAgent(host, log=log)
    for each in texts:
        agent.followup(msg(each))
    await agent.when_idle()
    return agent


def roles(request: dict[str, Any]) -> list[tuple[str, list[str]]]:
    return [(m["role"], [b["type"] for b in m["content"]]) for m in request["messages"]]


@run_async
async def test_r46_r43_a_reply_streams_as_live_output_and_is_recorded_beside_the_message() -> None:
    """R46, R43, R16: thinking streams as reasoning, text as text, the tool use's input as it is
    typed, the tool's result after it; each step's live output folds to its host/output, which
    is recorded beside the API's own message JSON (the reply as the API's Message); the tool's
    result goes back as the next request's user message (Continue)."""
    provider = Provider.of(
        anthropic_reply(
            thinking("Paris, ", "so weather."),
            text("Let me ", "check."),
            tool_use("weather", '{"city":', ' "Paris"}'),
            stop="tool_use",
        ),
        anthropic_reply(text("It is ", "sunny.")),
    )
    host = make(provider)
    agent = LoopAgent(host)
    heard = Heard(agent)
    agent.followup(msg("Weather in Paris?"))
    await agent.when_idle()
    events = agent.log.read()
    assert ends(events) == [(1, "completed")]
    assert records(events) == [MESSAGE, MESSAGE, MESSAGE, "host/output", MESSAGE, "host/output"]
    first, second = outputs(events)
    assert said(first) == [
        ("reasoning", "Paris, so weather."),
        ("text", "Let me check."),
        ("call", "toolu_1", "weather", '{"city": "Paris"}'),
        ("result", "toolu_1", "sunny in Paris", False),
    ]
    assert said(second) == [("text", "It is sunny.")]
    assert (first.model, first.usage.input_tokens, first.usage.output_tokens) == (
        "claude-test",
        10,
        5,
    )
    assert heard.steps() == {(1, 1): first.parts, (1, 2): second.parts}
    reply = host.messages[1]
    assert reply["stop_reason"] == "tool_use"
    assert reply["content"][0] == {
        "type": "thinking",
        "thinking": "Paris, so weather.",
        "signature": "sig",
    }
    assert reply["content"][2]["input"] == {"city": "Paris"}
    assert roles(provider.requests[1]) == [
        ("user", ["text"]),
        ("assistant", ["thinking", "text", "tool_use"]),
        ("user", ["tool_result"]),
    ]
    assert provider.requests[1]["messages"][2]["content"][0]["content"] == "sunny in Paris"


@run_async
async def test_r46_the_stable_prefix_is_marked_for_prompt_caching() -> None:
    """R46: the system prompt and the last block of the conversation so far carry
    ``cache_control`` (the next request reads that prefix from the cache); only the last
    one, and nothing with ``cache=False``."""
    provider = Provider.of(anthropic_reply(text("a1")), anthropic_reply(text("a2")))
    await run(make(provider), "q1", "q2")
    first, second = provider.requests
    marked = lambda request: [  # noqa: E731
        (i, j)
        for i, m in enumerate(request["messages"])
        for j, b in enumerate(m["content"])
        if "cache_control" in b
    ]
    assert marked(first) == [(0, 0)]
    assert marked(second) == [(2, 0)]
    assert second["system"] == [
        {"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral"}}
    ]
    plain = Provider.of(anthropic_reply(text("a1")))
    await run(make(plain, cache=False), "q1")
    assert marked(plain.requests[0]) == []
    assert "cache_control" not in plain.requests[0]["system"][0]


@pytest.mark.parametrize(
    ("stop", "end"),
    [
        ("end_turn", (1, "completed")),
        ("stop_sequence", (1, "completed")),
        ("max_tokens", (1, "max-tokens")),
        ("model_context_window_exceeded", (1, "max-tokens")),
        ("refusal", (1, "error", "content-filter")),
        ("something_new", (1, "error", "model-error")),
    ],
)
@run_async
async def test_r46_stop_reasons_end_the_turn_as_they_mean(stop: str, end: tuple[Any, ...]) -> None:
    """R46: ``max_tokens`` (and a full context window) is MaxTokens(), ``refusal`` an error
    with code content-filter, an unknown stop reason a model-error; the reply is recorded
    either way."""
    provider = Provider.of(anthropic_reply(text("Partial"), stop=stop))
    agent = await run(make(provider), "go")
    events = agent.log.read()
    assert ends(events) == [end]
    assert host_reply(events)["stop_reason"] == stop


def host_reply(events: Any) -> dict[str, Any]:
    from inbox_core.json_values import thaw_json

    return [thaw_json(e.data) for e in events if getattr(e, "type", "") == MESSAGE][-1]


@run_async
async def test_r46_pause_turn_continues_with_the_paused_reply() -> None:
    """R46: a ``pause_turn`` reply is recorded and the step answers Continue(): the next request
    ends with that reply, so the model resumes it; its continuation completes the turn."""
    provider = Provider.of(
        anthropic_reply(text("Searching"), stop="pause_turn"), anthropic_reply(text(" done."))
    )
    agent = await run(make(provider), "go")
    assert ends(agent.log.read()) == [(1, "completed")]
    assert roles(provider.requests[1]) == [("user", ["text"]), ("assistant", ["text"])]


@run_async
async def test_r17_r46_a_steer_joins_the_next_step_after_the_tool_results() -> None:
    """R17, R16, R46: a message steered while step 1 streams enters step 2: its text follows
    the tool result in the one user message the API requires (tool results first)."""
    provider = Provider.of(
        anthropic_reply(tool_use("weather", '{"city": "Oslo"}'), stop="tool_use", hold=True),
        anthropic_reply(text("Il fait beau.")),
    )
    host = make(provider)
    agent = LoopAgent(host)
    agent.followup(msg("Weather in Oslo?"))
    await provider.streaming.wait()
    agent.steer(msg("Say it in French."))
    provider.release()
    await agent.when_idle()
    assert ends(agent.log.read()) == [(1, "completed")]
    last = provider.requests[1]["messages"][-1]
    assert [b["type"] for b in last["content"]] == ["tool_result", "text"]
    assert last["content"][1]["text"] == "Say it in French."


@run_async
async def test_r22_r24_r46_a_cancel_keeps_what_was_said_and_the_queue() -> None:
    """R22-R24, R46, R43: cancelling mid-reply ends the turn aborted at once: the text said so
    far is recorded (the message with stop_reason null, its host/output), the followup that
    waited runs as turn 2, and its request shows the model what it had said."""
    provider = Provider.of(
        anthropic_reply(text("The history ", "of Rome is long"), hold=True),
        anthropic_reply(text("Rome: fine.")),
    )
    host = make(provider)
    agent = LoopAgent(host)
    agent.followup(msg("History of Rome?"))
    agent.followup(msg("And now?"))
    await provider.streaming.wait()
    agent.cancel(keep_inbox=True)
    await agent.when_idle()
    events = agent.log.read()
    assert ends(events) == [(1, "aborted"), (2, "completed")]
    assert said(outputs(events)[0]) == [("text", "The history ")]
    stopped = host.messages[1]
    assert (stopped["stop_reason"], stopped["content"]) == (
        None,
        [{"type": "text", "text": "The history "}],
    )
    assert roles(provider.requests[1]) == [
        ("user", ["text"]),
        ("assistant", ["text"]),
        ("user", ["text"]),
    ]
    assert provider.cancelled == 1  # the stream was closed, not read to its end


@run_async
async def test_r27_r30_r46_a_restarted_host_continues_the_conversation_from_the_log(
    tmp_path: Path,
) -> None:
    """R30, R41, R46: a new host over the same SQLite log restores the conversation (the
    messages, as recorded) and its next request carries it."""
    path = tmp_path / "a.db"
    first = Provider.of(
        anthropic_reply(tool_use("weather", '{"city": "Rome"}'), stop="tool_use"),
        anthropic_reply(text("Sunny.")),
    )
    host = make(first)
    agent = await run(host, "Rome?", log=SqliteLog(path, agent_id="a"))
    await agent.detach()
    second = Provider.of(anthropic_reply(text("Yes.")))
    again = make(second)
    agent = await run(again, "Sure?", log=SqliteLog(path, agent_id="a"))
    assert again.messages[:4] == host.messages
    assert roles(second.requests[0]) == [
        ("user", ["text"]),
        ("assistant", ["tool_use"]),
        ("user", ["tool_result"]),
        ("assistant", ["text"]),
        ("user", ["text"]),
    ]
    assert ends(agent.log.read()) == [(1, "completed"), (2, "completed")]
    await agent.detach()


@run_async
async def test_r31_r41_r46_compaction_replaces_the_history_and_restore_reads_back_to_it(
    tmp_path: Path,
) -> None:
    """R31, R41, R46: ``run_maintenance(host.compact)`` records one summary (asked with the
    tools declared, tool_choice none) that the next request starts from; a host opened over
    the log (from its checkpoint) restores from the summary on, equal to the whole log's."""
    path = tmp_path / "c.db"
    provider = Provider.of(
        anthropic_reply(text("a1")),
        anthropic_reply(text("a2")),
        anthropic_reply(text("The gist.")),
        anthropic_reply(text("a3")),
    )
    host = make(provider)
    agent = await run(host, "q1", "q2", log=SqliteLog(path, agent_id="c", checkpoint_every=3))
    await agent.run_maintenance(host.compact)
    assert provider.requests[2]["tool_choice"] == {"type": "none"}
    assert provider.requests[2]["messages"][-1]["content"][0]["text"].startswith("Summarize")
    agent.followup(msg("q3"))
    await agent.when_idle()
    assert roles(provider.requests[3]) == [("user", ["text", "text"])]  # the summary, then q3
    assert provider.requests[3]["messages"][0]["content"][0]["text"].endswith("The gist.")
    assert records(agent.log.read()).count(SUMMARY) == 1
    await agent.detach()
    again = make(Provider.of())
    reopened = LoopAgent(again, log=SqliteLog(path, agent_id="c"))
    assert again.messages == host.messages
    assert len(again.messages) == 3  # the summary, q3, a3
    await reopened.detach()


@run_async
async def test_r46_tools_answer_the_model_when_it_errs_until_the_retries_are_spent() -> None:
    """R46: an unknown tool and arguments the tool's schema refuses go back to the model as
    error results (``is_error``); a ``ToolError`` is the tool's own error answer; once a turn
    has used its retries the turn ends error, code tool-retries."""
    from anthropic.lib.tools import ToolError

    def picky(n: int) -> str:
        """Needs an int."""
        if n < 0:
            raise ToolError("n must be >= 0")
        return str(n)

    provider = Provider.of(
        anthropic_reply(tool_use("nope", "{}"), stop="tool_use"),
        anthropic_reply(tool_use("picky", '{"n": -1}'), stop="tool_use"),
        anthropic_reply(tool_use("picky", '{"n": "x"}'), stop="tool_use"),
    )
    agent = await run(make(provider, tools=[picky], tool_retries=1), "go")
    assert ends(agent.log.read()) == [(1, "error", "tool-retries")]
    results = [r["messages"][-1]["content"][0] for r in provider.requests[1:]]
    assert [(r["content"], r.get("is_error")) for r in results] == [
        ("Tool 'nope' not found.", True),
        ("n must be >= 0", True),
    ]


@run_async
async def test_r46_async_and_sync_tools_run_concurrently_and_keep_their_order() -> None:
    """R46: a reply's tool uses run concurrently (sync ones in a thread) and their results
    are recorded in call order, as one user message."""
    import asyncio

    started = asyncio.Event()

    async def slow(x: int) -> int:
        """Waits for the other."""
        await asyncio.wait_for(started.wait(), 5)
        return x * 2

    async def fast(x: int) -> dict[str, int]:
        """Starts the other."""
        started.set()
        return {"x": x}

    provider = Provider.of(
        Reply(
            anthropic_reply(
                tool_use("slow", '{"x": 2}', id="t1"),
                tool_use("fast", '{"x": 3}', id="t2"),
                stop="tool_use",
            ).events
        ),
        anthropic_reply(text("ok")),
    )
    agent = await run(make(provider, tools=[slow, fast, weather]), "go")
    assert ends(agent.log.read()) == [(1, "completed")]
    content = provider.requests[1]["messages"][-1]["content"]
    assert [(b["tool_use_id"], b["content"]) for b in content] == [
        ("t1", "4"),
        ("t2", json.dumps({"x": 3}, separators=(",", ":"))),
    ]
    first = outputs(agent.log.read())[0]
    assert [part.type for part in first.parts] == [
        "tool-call",
        "tool-call",
        "tool-result",
        "tool-result",
    ]
