"""What the model hosts share (``inbox_core.integrations._model_host``; specs/shell.md section
11a, R46, R43, R41): racing work against the abort signal and a clock, live output that
never fails a step, records of whatever a provider or a tool said, the log's tail, and
both SDK hosts reading back only as far as their newest summary."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

pytest.importorskip("pydantic_core", reason="no SDK extra is installed")

from inbox_core import DurableEvent, HostRecord, InvalidInput
from inbox_core.commands import Failed
from inbox_core.integrations._model_host import (
    FAILURE_CODES,
    RECORD_BUDGET,
    Progress,
    Voice,
    failed,
    fit_record,
    settle,
    usage,
    value_text,
)
from inbox_core.json_values import json_size, thaw_json
from inbox_core.output import Usage
from inbox_core.shell import MemoryLog
from inbox_core.shell.host import AbortSignal
from inbox_core.shell.output import StepOutput
from inbox_core.shell.stores.checkpoints import LogHistory
from inbox_core.values import UserCause

from .providers import run_async


def test_r46_the_codes_are_one_list_without_repeats() -> None:
    """R46: every model host's codes, each named once, pydantic-ai's five among them."""
    assert len(set(FAILURE_CODES)) == len(FAILURE_CODES) == 8
    for code in ("model-error", "content-filter", "tool-error", "tool-retries", "tool-deferred"):
        assert code in FAILURE_CODES
    assert failed("a \ud800", "tool-error") == Failed("a \\ud800", "tool-error")


def test_r46_the_pydantic_ai_host_ends_turns_with_the_shared_codes_as_it_always_wrote_them() -> (
    None
):
    """R46: pydantic-ai's codes are the shared constants, their strings unchanged (logs and
    users depend on them)."""
    pytest.importorskip("pydantic_ai")
    from inbox_core.integrations import _model_host, pydantic_ai

    codes = ("model-error", "content-filter", "tool-error", "tool-retries", "tool-deferred")
    assert codes == pydantic_ai.FAILURE_CODES
    assert all(code in _model_host.FAILURE_CODES for code in pydantic_ai.FAILURE_CODES)
    assert pydantic_ai.MODEL_ERROR is _model_host.MODEL_ERROR


@run_async
async def test_r46_settle_gives_the_value_the_error_or_how_it_was_stopped() -> None:
    """R46: work's value; its error (a CancelledError it raises by itself and a SystemExit are
    its errors, never an abort); a trip of the signal (aborted); a silence past the
    progress clock (timed out), the clock reset by each touch."""
    signal = AbortSignal(1)

    async def value() -> int:
        return 7

    async def cancels() -> None:
        raise asyncio.CancelledError

    async def exits() -> None:
        raise SystemExit(2)

    assert (await settle(value(), signal)).value == 7
    assert isinstance((await settle(cancels(), signal)).error, asyncio.CancelledError)
    assert isinstance((await settle(exits(), signal)).error, SystemExit)

    progress = Progress(0.2)

    async def talks() -> str:
        for _ in range(6):
            await asyncio.sleep(0.1)
            progress.touch()
        return "done"

    assert (await settle(talks(), signal, progress=progress)).value == "done"

    async def silent() -> None:
        await asyncio.sleep(3600)

    timed = await settle(silent(), signal, progress=Progress(0.1))
    assert (timed.timed_out, timed.aborted, timed.abandoned) == (True, False, False)

    pending = asyncio.ensure_future(settle(silent(), signal))
    await asyncio.sleep(0.05)
    signal.trip(UserCause())
    aborted = await pending
    assert (aborted.aborted, aborted.timed_out, aborted.stopped) == (True, False, True)


@run_async
async def test_r46_work_that_ignores_its_cancellation_is_left_after_the_grace() -> None:
    """R46: stopped work that swallows its cancellation is given ``grace``, then runs on
    unawaited (abandoned) and the race returns; a second cancellation ends it."""
    ignored: list[int] = []
    running: list[asyncio.Task[Any]] = []

    async def stubborn() -> None:
        running.append(asyncio.current_task())  # type: ignore[arg-type]
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            ignored.append(1)
        await asyncio.sleep(3600)

    settled = await settle(stubborn(), AbortSignal(1), progress=Progress(0.05), grace=0.1)
    assert (settled.timed_out, settled.abandoned) == (True, True)
    assert ignored == [1]
    (task,) = running
    assert not task.done()  # left running
    task.cancel()
    await asyncio.wait({task})
    assert task.done()


def test_r43_a_voice_never_fails_its_step() -> None:
    """R43, R46: each provider block is a part of its own; a tool call's id no part holds, a
    second start, and anything after the output closed publish nothing and raise nothing."""
    output = StepOutput(1, 1)
    voice = Voice(output)
    voice.text(0, "Hel")
    voice.reasoning(1, "hm")
    voice.text(0, "lo")
    voice.text(2, "again")
    voice.text(3, "")  # nothing
    voice.tool_call("", "bad")  # not an id
    voice.tool_arguments("", "{}")
    voice.tool_call("c1", "weather", '{"a"')
    voice.tool_call("c1", "weather")  # a second start
    voice.tool_arguments("c1", ": 1}")
    voice.tool_end("c1")
    voice.tool_end("c1")  # ended already
    voice.tool_result("c1", "ok", is_error=True)
    output.close()
    voice.text(0, "late")
    assert [(p.type, getattr(p, "text", None)) for p in output.parts] == [
        ("text", "Hello"),
        ("reasoning", "hm"),
        ("text", "again"),
        ("tool-call", None),
        ("tool-result", None),
    ]
    assert output.parts[3].arguments == '{"a": 1}'
    record = voice.record("m" * 2000, usage(1, 2))  # a name the form does not hold: left out
    assert record is not None
    assert "model" not in thaw_json(record.data)
    assert thaw_json(record.data)["usage"] == {"inputTokens": 1, "outputTokens": 2}
    assert Voice(StepOutput(1, 2)).record("m") is None  # said nothing
    assert usage(None, 3) is None
    assert usage(True, 3) is None
    assert usage(4, 3) == Usage(4, 3)
    assert usage(2**53 - 1, 0) == Usage(2**53 - 1, 0)
    assert usage(2**53, 3) is None  # past what a Usage holds: it raised InvalidInput
    assert usage(-1, 3) is None


@pytest.mark.parametrize(
    "data",
    [
        {"items": [{"output": "x" * (RECORD_BUDGET + 10)}]},
        {"items": [{"output": "a \ud800 b", "n": 2**80}]},
        {"items": [{"content": [{"text": "deep", "value": [[[[[[[[1]]]]]]]]}]}]},
        {"items": [{f"{i}" + "k" * 2**16: i} for i in range(RECORD_BUDGET // 2**16 + 1)]},
    ],
    ids=["huge", "surrogate-and-wide-int", "deep", "structure-too-big"],
)
def test_r30_r46_fit_record_keeps_what_fits_and_never_raises(data: dict[str, Any]) -> None:
    """R30, R46: a record of whatever a provider or tool gave is made, within RECORD_BUDGET: as
    it is, fitted (cut with a marker, represented as text), or the placeholder saying why."""
    record = fit_record("host/test", data, lambda note: {"items": [{"note": note}]})
    assert json_size(record.data) <= RECORD_BUDGET
    items = thaw_json(record.data)["items"]
    if len(data["items"]) > 1:
        assert items[0]["note"].startswith("[this host/test record could not be recorded")
    else:
        assert len(items) == 1


def test_r46_value_text_never_raises() -> None:
    """R46: a tool's value as the text the model is sent: a str as it is (surrogates escaped),
    JSON for the rest, a repr, or its type's name."""

    class Bad:
        def __repr__(self) -> str:
            raise RuntimeError

    assert value_text("plain") == "plain"
    assert value_text({"a": [1, 2**70]}) == '{"a":[1,1180591620717411303424]}'
    assert value_text(Bad()) == '"<Bad>"'
    assert value_text("\udfff") == "\\udfff"


class SpyLog:
    """A log whose reads are recorded as ``since``."""

    def __init__(self, events: list[DurableEvent]) -> None:
        self.events = events
        self.reads: list[int] = []

    def read(self, since: int = 0, until: int | None = None) -> list[DurableEvent]:
        self.reads.append(since)
        return self.events[since:until]


async def _compacted(host: Any) -> list[DurableEvent]:
    from inbox_core.shell import LoopAgent
    from tests.shell.support import msg

    log = MemoryLog(checkpoint_every=None)
    agent = LoopAgent(host, log=log)
    for n in range(3):
        agent.followup(msg(f"q{n}"))
        await agent.when_idle()
    await agent.run_maintenance(host.compact)
    for n in range(3):
        agent.followup(msg(f"r{n}"))
        await agent.when_idle()
    await agent.detach()
    return list(log.read())


def _hosts() -> list[Any]:
    return ["openai-agents", "anthropic"]


def _make(kind: str, replies: int) -> tuple[Any, Any]:
    """A host of ``kind`` answering ``replies`` calls, and a factory of fresh ones."""
    if kind == "openai-agents":
        pytest.importorskip("agents")
        from agents import Agent
        from agents.testing import ScriptedModel, assistant_message

        from inbox_core.integrations.openai_agents import OpenAIAgentsHost

        def openai(n: int) -> Any:
            model = ScriptedModel([[assistant_message(f"a{i}")] for i in range(n)])
            return OpenAIAgentsHost(Agent(name="a", model=model))

        return openai(replies), openai
    pytest.importorskip("anthropic")
    from inbox_core.integrations.anthropic import AnthropicHost

    from .providers import Provider, anthropic_reply, text

    def anthropic(n: int) -> Any:
        provider = Provider.of(*(anthropic_reply(text(f"a{i}")) for i in range(n)))
        return AnthropicHost(provider.anthropic(), "claude-test")

    return anthropic(replies), anthropic


def _memory(host: Any) -> Any:
    return host.items if hasattr(host, "items") else host.messages


@pytest.mark.parametrize("kind", _hosts())
def test_r41_sh11_r46_restore_reads_back_only_to_the_newest_summary(kind: str) -> None:
    """R41, SH11, R46: each SDK host restores from the events its agent's opening read and pages
    read backwards until one holds its summary; pages before it are never read, and the
    conversation equals the whole log's (``restore``)."""
    host, fresh = _make(kind, 7)
    events = asyncio.run(asyncio.wait_for(_compacted(host), 120))
    summary = next(
        i for i, e in enumerate(events) if isinstance(e, HostRecord) and e.type.endswith("summary")
    )
    whole = fresh(0)
    whole.restore(events)
    log = SpyLog(events)
    start = len(events) - 2
    tail = fresh(0)
    tail.restore_tail(LogHistory(log, start, events[start:], page=4))
    assert _memory(tail) == _memory(whole) == _memory(host)
    assert summary - 4 < min(log.reads) <= summary
    bad = HostRecord(events[summary].type, {"not": "a message"})
    with pytest.raises(InvalidInput):
        fresh(0).restore([*events, bad])


@pytest.mark.parametrize("kind", _hosts())
@run_async
async def test_r43_r46_a_usage_past_what_an_output_holds_is_left_out(kind: str) -> None:
    """R43, R46: a provider reporting more tokens than a ``Usage`` holds (2^60): the turn
    completes, the reply is recorded, and its host/output leaves the usage out (the step
    raised InvalidInput: its turn ended error, code InvalidInput, its records lost)."""
    from inbox_core.shell import LoopAgent
    from tests.shell.support import msg

    from .providers import (
        Provider,
        Reply,
        anthropic_events,
        ends,
        message,
        outputs,
        responses_reply,
        said,
        text,
    )

    huge = (10, 2**60)
    if kind == "anthropic":
        pytest.importorskip("anthropic")
        from inbox_core.integrations.anthropic import AnthropicHost

        provider = Provider.of(Reply(anthropic_events(text("Hi."), usage=huge)))
        host: Any = AnthropicHost(provider.anthropic(), "claude-test")
    else:
        pytest.importorskip("agents")
        from agents import Agent

        from inbox_core.integrations.openai_agents import OpenAIAgentsHost

        provider = Provider.of(responses_reply(message("Hi."), usage=huge))
        host = OpenAIAgentsHost(Agent(name="a", model=provider.openai_model()))
    agent = LoopAgent(host)
    agent.followup(msg("hello"))
    await agent.when_idle()
    events = agent.log.read()
    assert ends(events) == [(1, "completed")]
    (output,) = outputs(events)
    assert said(output) == [("text", "Hi.")]
    assert output.usage is None
    assert output.model is not None  # the rest of what it said is kept


def _build(kind: str, **options: Any) -> Any:
    """A host of ``kind`` built with ``options`` (nothing is called)."""
    if kind == "openai-agents":
        pytest.importorskip("agents")
        from agents import Agent
        from agents.testing import ScriptedModel

        from inbox_core.integrations.openai_agents import OpenAIAgentsHost

        return OpenAIAgentsHost(Agent(name="a", model=ScriptedModel([])), **options)
    pytest.importorskip("anthropic")
    from inbox_core.integrations.anthropic import AnthropicHost

    from .providers import Provider

    return AnthropicHost(Provider.of().anthropic(), "claude-test", **options)


@pytest.mark.parametrize("kind", _hosts())
def test_r26_r46_bad_options_of_the_sdk_hosts_raise_invalid_input(kind: str) -> None:
    """R26, R46: a timeout, tool timeout, grace or retry count that is not one is a typed
    error when the host is built (it used to fail later, inside a step's asyncio wait)."""
    for name in ("timeout", "tool_timeout", "grace"):
        for wrong in (-0.5, float("nan"), float("inf"), 2**1100, True, "5"):
            with pytest.raises(InvalidInput, match=name):
                _build(kind, **{name: wrong})
    for wrong in (-1, 1.5, True, None):
        with pytest.raises(InvalidInput, match="tool_retries"):
            _build(kind, tool_retries=wrong)
    host = _build(kind, timeout=None, tool_timeout=None, grace=0, tool_retries=0)
    assert (host.timeout, host.tool_timeout, host.grace) == (None, None, 0.0)
    assert _build(kind, timeout=2**10).timeout == 1024.0


def test_r26_r46_anthropic_max_tokens_is_a_positive_count() -> None:
    """R26: ``max_tokens`` is the API's own bound, an int >= 1."""
    for wrong in (0, -1, 1.5, True, "4096"):
        with pytest.raises(InvalidInput, match="max_tokens"):
            _build("anthropic", max_tokens=wrong)
