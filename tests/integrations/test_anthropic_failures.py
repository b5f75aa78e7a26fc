"""``AnthropicHost`` against bad input (R46, R33, R37; specs/shell.md section 11a): a provider
that errors, streams garbage, ends early, never ends or ignores its abort; a tool that
raises, returns what the log cannot hold, or hangs. Each ends only its own turn, with a
stable code; the event loop and the other agents go on."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest

pytest.importorskip("anthropic", reason="the anthropic extra is not installed")

from inbox_core import HostRecord, limits
from inbox_core.integrations._model_host import RECORD_BUDGET
from inbox_core.integrations.anthropic import MESSAGE, AnthropicHost
from inbox_core.json_values import json_size, thaw_json
from inbox_core.shell import LoopAgent
from tests.shell.support import msg

from .providers import (
    Provider,
    Reply,
    anthropic_reply,
    ends,
    outputs,
    run_async,
    said,
    text,
    tool_use,
)


def make(provider: Provider, **options: Any) -> AnthropicHost:
    options.setdefault("grace", 0.5)
    return AnthropicHost(provider.anthropic(), "claude-test", **options)


async def one_turn(host: AnthropicHost, *texts: str) -> LoopAgent:
    agent = LoopAgent(host)
    for each in texts or ("go",):
        agent.followup(msg(each))
    await agent.when_idle()
    return agent


def reason(agent: LoopAgent) -> Any:
    from inbox_core import TurnEnded

    return [e.reason for e in agent.log.read() if isinstance(e, TurnEnded)][-1]


@pytest.mark.parametrize(
    ("reply", "shown"),
    [
        (
            Reply(
                status=500,
                body={"type": "error", "error": {"type": "api_error", "message": "boom"}},
            ),
            "InternalServerError",
        ),
        (
            Reply(
                status=401,
                body={
                    "type": "error",
                    "error": {"type": "authentication_error", "message": "bad key"},
                },
            ),
            "AuthenticationError",
        ),
        (Reply(raw=b"event: message_start\ndata: {not json\n\n"), ""),
        (Reply(raw=b"\x00\xff garbage \xfe"), "UnicodeDecodeError"),
        (Reply(raw=b"hello world, no events here"), "the stream ended before the reply did"),
        (
            Reply(
                [
                    (
                        "error",
                        {"type": "error", "error": {"type": "overloaded_error", "message": "busy"}},
                    )
                ]
            ),
            "busy",
        ),
        (anthropic_reply(text("Half a rep"), stop=None), "the stream ended before the reply did"),
    ],
    ids=["500", "401", "bad-json", "garbage", "no-events", "error-event", "cut-short"],
)
@run_async
async def test_r33_r46_a_provider_that_errors_or_streams_garbage_is_a_model_error(
    reply: Reply, shown: str
) -> None:
    """R33, R46: an error status, an error event, a stream that is not JSON or not a reply, or
    one that ends before its message_stop: the turn ends error, code model-error, with a
    storable message; what streamed before is kept (the message, its host/output)."""
    agent = await one_turn(make(Provider.of(reply)))
    ended = reason(agent)
    assert (ended.kind, ended.code) == ("error", "model-error")
    assert shown in ended.message
    if reply.events and reply.events[-1][0] != "error":
        assert [said(o) for o in outputs(agent.log.read())] == [[("text", "Half a rep")]]


@run_async
async def test_r46_a_provider_that_never_ends_times_out_and_one_ignoring_its_abort_is_left() -> (
    None
):
    """R46: a stream that goes silent ends its turn error, code model-timeout, after the host's
    ``timeout`` (what it said kept); one that also ignores its cancellation costs the step the
    host's ``grace`` more, then is left running: the turn still ends."""
    for stubborn in (False, True):
        provider = Provider.of(
            Reply(
                anthropic_reply(text("Thinking about it"), stop=None).events,
                forever=True,
                stubborn=stubborn,
            )
        )
        agent = await one_turn(make(provider, timeout=0.3, grace=0.3))
        ended = reason(agent)
        assert (ended.kind, ended.code) == ("error", "model-timeout")
        assert [said(o) for o in outputs(agent.log.read())] == [[("text", "Thinking about it")]]
        assert provider.cancelled >= 1


@run_async
async def test_r23_r46_a_cancel_ends_the_turn_even_when_the_provider_ignores_its_abort() -> None:
    """R23, R46: cancel while a stubborn stream hangs: the turn ends aborted within the host's
    grace, the reply said so far recorded; the agent takes its next turn."""
    provider = Provider.of(
        Reply(
            anthropic_reply(text("Never ", "ending"), stop=None).events,
            forever=True,
            stubborn=True,
            hold=True,
        ),
        anthropic_reply(text("Next.")),
    )
    host = make(provider, grace=0.3)
    agent = LoopAgent(host)
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


class Opaque:
    def __repr__(self) -> str:
        raise RuntimeError("no repr")


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
        {"n": 2**70, "deep": _nested(200)},
        Opaque(),
        [{"type": "text", "text": "a block list"}],
    ],
    ids=["huge", "surrogate", "int-past-int64", "deep", "no-repr", "blocks"],
)
@run_async
async def test_r30_r46_a_tool_result_the_log_cannot_hold_is_kept_as_text(value: Any) -> None:
    """R30, R46: whatever a tool returns is recorded with its call and the turn goes on: a result
    the log cannot hold as it is (past a record's size, a lone surrogate, an integer past
    int64, nesting past maxDepth, a value nothing can serialize) is kept as text, cut with a
    marker where it must be; a list of content blocks goes back as blocks."""

    def tool() -> Any:
        """Returns the value."""
        return value

    provider = Provider.of(
        anthropic_reply(tool_use("tool", "{}"), stop="tool_use"), anthropic_reply(text("ok"))
    )
    host = make(provider, tools=[tool])
    agent = await one_turn(host)
    assert ends(agent.log.read()) == [(1, "completed")]
    results = [e for e in agent.log.read() if isinstance(e, HostRecord) and e.type == MESSAGE][2]
    assert json_size(results.data) <= RECORD_BUDGET
    content = thaw_json(results.data)["content"][0]["content"]
    if isinstance(value, str) and len(value) > RECORD_BUDGET:
        assert content.endswith("characters]")
        assert "[cut: " in content
    elif isinstance(value, list):
        assert content == value
    else:
        assert isinstance(content, str)
    sent = provider.requests[1]["messages"][-1]["content"][0]["content"]
    assert sent == content  # the model sees what the log holds


@pytest.mark.parametrize(
    "raised",
    [RuntimeError("tool broke"), asyncio.CancelledError(), SystemExit(3), KeyboardInterrupt()],
)
@run_async
async def test_r33_r37_r46_a_tool_that_raises_anything_ends_its_turn_with_tool_error(
    raised: BaseException,
) -> None:
    """R33, R37, R46: a tool raising anything (a CancelledError nobody asked for, SystemExit,
    KeyboardInterrupt too) ends its turn error, code tool-error; the event loop goes on and
    the agent takes its next turn."""

    async def broken() -> str:
        """Raises."""
        raise raised

    provider = Provider.of(
        anthropic_reply(tool_use("broken", "{}"), stop="tool_use"), anthropic_reply(text("fine"))
    )
    host = make(provider, tools=[broken])
    agent = await one_turn(host)
    ended = reason(agent)
    assert (ended.kind, ended.code) == ("error", "tool-error")
    assert type(raised).__name__ in ended.message
    agent.followup(msg("again"))
    await agent.when_idle()
    assert ends(agent.log.read())[-1] == (2, "completed")


@run_async
async def test_r46_a_tool_that_hangs_times_out_async_or_in_a_thread() -> None:
    """R46: a tool that runs past ``tool_timeout`` ends its turn error, code tool-timeout, an
    async one cancelled, a sync one (in its thread) left to finish on its own."""
    gate = threading.Event()

    async def stuck() -> str:
        """Never returns."""
        await asyncio.Event().wait()
        return "never"

    def blocking() -> str:
        """Blocks its thread."""
        gate.wait(10)
        return "late"

    try:
        for tool in (stuck, blocking):
            provider = Provider.of(anthropic_reply(tool_use(tool.__name__, "{}"), stop="tool_use"))
            agent = await one_turn(make(provider, tools=[tool], tool_timeout=0.2))
            ended = reason(agent)
            assert (ended.kind, ended.code) == ("error", "tool-timeout")
    finally:
        gate.set()


@run_async
async def test_r37_r46_a_failing_provider_costs_only_its_own_agent() -> None:
    """R37, R46: one agent's provider hangs, ignoring its abort; another agent in the same
    event loop meanwhile streams and completes its turns; the first ends model-timeout."""
    stuck = Provider.of(
        Reply(anthropic_reply(text("..."), stop=None).events, forever=True, stubborn=True)
    )
    fine = Provider.of(*(anthropic_reply(text(f"reply {n}")) for n in range(3)))
    slow = LoopAgent(make(stuck, timeout=1.0, grace=0.2))
    slow.followup(msg("go"))
    quick = LoopAgent(make(fine))
    for n in range(3):
        quick.followup(msg(f"q{n}"))
        await quick.when_idle()
    assert ends(quick.log.read()) == [(1, "completed"), (2, "completed"), (3, "completed")]
    assert ends(slow.log.read()) == []  # still waiting on its provider
    await slow.when_idle()
    assert ends(slow.log.read()) == [(1, "error", "model-timeout")]


def test_failure_messages_are_storable() -> None:
    """R33: a provider's error text with a lone surrogate or past maxJsonSize is made storable."""
    from inbox_core.integrations._model_host import describe

    assert describe(ValueError("a \ud800 b")) == "ValueError: a \\ud800 b"
    assert len(describe(ValueError("x" * (limits.MAX_JSON_SIZE + 10)))) <= limits.MAX_JSON_SIZE
