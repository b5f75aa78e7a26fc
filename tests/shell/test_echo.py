"""The echo host as brief section 22 pins it (R43): ``echo: `` and the texts its step admitted,
joined by a newline (``echo: (nothing)`` for none), streamed word by word over its delay
through ``signal.output``, recorded as the step's ``host/output`` (one text part)."""

from __future__ import annotations

import asyncio

import pytest

from inbox_core import UserMessage, create_user_message
from inbox_core.output import OUTPUT_RECORD, OutputMessage, TextPart, fold_output, read_output
from inbox_core.shell import AbortSignal, EchoHost, LoopAgent
from inbox_core.shell.echo import MAX_DELTAS, echo_host, echo_reply
from inbox_core.shell.output import StepOutput

from .support import check_invariants, msg, run_async


def _replies(agent: LoopAgent) -> list[str]:
    outputs = [read_output(e) for e in agent.log.read() if e.type == OUTPUT_RECORD]
    texts = []
    for output in outputs:
        assert output is not None
        (part,) = output.parts  # one text part
        assert isinstance(part, TextPart)
        texts.append(part.text)
    return texts


def test_r43_the_echo_reply() -> None:
    two = (msg("hello"), msg("line\nbreak"))
    assert echo_reply(two) == "echo: hello\nline\nbreak"
    assert echo_reply(()) == "echo: (nothing)"
    blocks = UserMessage(
        "m", [{"type": "text", "text": "a"}, {"type": "image"}, {"type": "text", "text": "b"}]
    )
    assert echo_reply((blocks,)) == "echo: a\nb"
    assert echo_reply((UserMessage("m", [{"type": "image", "text": "x"}]),)) == "echo: "


@run_async
async def test_r43_each_step_replies_with_what_it_admitted() -> None:
    """A steer makes a second step: each step echoes its own batch."""
    host = EchoHost()
    agent = LoopAgent(host)
    said: list[OutputMessage] = []
    agent.subscribe_output(said.append)
    agent.followup(msg("What is the weather?"))
    agent.queue(msg("queued"))
    await agent.when_idle()
    agent.followup(msg("and tomorrow"))
    await agent.when_idle()
    assert _replies(agent) == ["echo: What is the weather?", "echo: queued", "echo: and tomorrow"]
    first = [m for m in said if (m.turn, m.step) == (1, 1)]
    assert [m.text for m in first] == ["echo: ", "What ", "is ", "the ", "weather?"]  # type: ignore[union-attr]
    assert fold_output(first) == (TextPart("echo: What is the weather?"),)
    types = [e.type for e in agent.log.read()]
    assert types.count(OUTPUT_RECORD) == 3
    check_invariants(agent)


@run_async
async def test_r43_the_reply_streams_over_the_delay_and_a_stop_keeps_what_was_said() -> None:
    """With a delay the words come one by one; cancel mid-reply: the step returns at once
    and its host/output holds the words said before the stop."""
    host = EchoHost(delay=60.0)  # never reached: the cancel comes first
    agent = LoopAgent(host)
    first_word = asyncio.Event()
    said: list[OutputMessage] = []

    def heard(message: OutputMessage) -> None:
        said.append(message)
        first_word.set()

    agent.subscribe_output(heard)
    agent.followup(msg("a long answer please"))
    await first_word.wait()
    assert [m.text for m in said] == ["echo: "]  # type: ignore[union-attr]
    assert agent.status == "running"
    agent.cancel()
    await agent.when_idle()
    assert _replies(agent) == ["echo: "]
    ends = [e for e in agent.log.read() if e.type == "turn/end"]
    assert ends[-1].reason.kind == "aborted"  # type: ignore[union-attr]


@run_async
async def test_r43_a_long_reply_streams_in_at_most_max_deltas_and_is_cut_at_the_limit() -> None:
    words = " ".join(["w"] * (3 * MAX_DELTAS))
    signal = AbortSignal(1)
    output = StepOutput(1, 1)
    signal.hand(output)
    host = EchoHost()
    await host.pre_step(1, 1, (msg(words),), signal)
    await host.run_step(1, 1, signal)
    assert output.parts == (TextPart("echo: " + words),)
    huge = create_user_message("x " * 3_000_000)  # 6 M characters: past maxOutputSize
    signal = AbortSignal(1)
    output = StepOutput(1, 2)
    signal.hand(output)
    await host.pre_step(1, 2, (huge,), signal)
    await host.run_step(1, 2, signal)
    assert len(output.parts) == 2  # what fits, then the marker
    assert output.parts[0].text.startswith("echo: x x")  # type: ignore[union-attr]


@run_async
async def test_r43_a_step_without_its_pre_step_echoes_nothing() -> None:
    signal = AbortSignal(3)
    output = StepOutput(3, 2)
    signal.hand(output)
    await EchoHost().run_step(3, 2, signal)
    assert output.parts == (TextPart("echo: (nothing)"),)


def test_r43_the_factory_reads_the_delay(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("INBOX_CORE_ECHO_DELAY", "2.5")
    assert echo_host("alice").delay == 2.5
    monkeypatch.delenv("INBOX_CORE_ECHO_DELAY")
    assert echo_host("alice").delay == 0.0
    with pytest.raises(ValueError, match="delay must be >= 0"):
        EchoHost(delay=-1)
