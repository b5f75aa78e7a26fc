"""Offline stand-ins for a provider: a scripted pydantic-ai ``FunctionModel`` that keeps
every request it receives, and a compact view of model messages for assertions.

Import this only after ``pytest.importorskip("pydantic_ai")``.
"""

from __future__ import annotations

import asyncio
import copy
from collections import deque
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

from pydantic_ai.messages import (
    CompactionPart,
    FinishReason,
    ModelMessage,
    ModelRequest,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models import ModelRequestParameters, StreamedResponse
from pydantic_ai.models.function import AgentInfo, DeltaToolCall, FunctionModel
from pydantic_ai.models.wrapper import WrapperModel
from pydantic_ai.settings import ModelSettings
from pydantic_ai.tools import RunContext

Chunk = str | dict[int, DeltaToolCall]


def call(tool: str, args: str, call_id: str = "call-1") -> dict[int, DeltaToolCall]:
    """One streamed chunk holding a whole tool call."""
    return {0: DeltaToolCall(tool, args, tool_call_id=call_id)}


def calls(*named: tuple[str, str]) -> dict[int, DeltaToolCall]:
    """One streamed chunk holding several whole tool calls (``call-1``, ``call-2``, ...)."""
    return {
        index: DeltaToolCall(tool, args, tool_call_id=f"call-{index + 1}")
        for index, (tool, args) in enumerate(named)
    }


@dataclass
class Reply:
    """One scripted model reply: ``chunks`` streamed ``delay`` seconds apart.

    ``hold``: after the first chunk the stream waits for ``Script.release()``
    (``Script.streaming`` is set then), so a test acts mid-stream without timing.
    ``error``: raised after the chunks (before any chunk when there are none).
    ``stubborn``: after the chunks the stream never ends (``Script.streaming`` is set then)
    and ignores its first cancellation (a provider that ignores its abort; the next one,
    the event loop's at its end, ends it); each cancellation counts in ``Script.cancelled``.
    """

    chunks: Sequence[Chunk] = ()
    delay: float = 0.0
    hold: bool = False
    error: BaseException | None = None
    stubborn: bool = False


def text(*chunks: str, delay: float = 0.0, hold: bool = False) -> Reply:
    return Reply(chunks, delay=delay, hold=hold)


@dataclass
class Script:
    """A ``FunctionModel`` answering request *n* with ``replies[n]``; ``requests`` keeps a copy
    of each request's messages and ``infos`` what the model layer passed (tools, settings)."""

    replies: deque[Reply]
    requests: list[list[ModelMessage]] = field(default_factory=list)
    infos: list[AgentInfo] = field(default_factory=list)
    cancelled: int = 0
    streaming: asyncio.Event = field(default_factory=asyncio.Event)
    _release: asyncio.Event = field(default_factory=asyncio.Event)
    model: FunctionModel = field(init=False)

    def __post_init__(self) -> None:
        self.model = FunctionModel(stream_function=self._stream, model_name="scripted")

    @classmethod
    def of(cls, *replies: Reply | str) -> Script:
        return cls(deque(text(r) if isinstance(r, str) else r for r in replies))

    def release(self) -> None:
        self.streaming.clear()
        self._release.set()

    async def _stream(self, messages: list[ModelMessage], info: AgentInfo) -> AsyncIterator[Chunk]:
        self.requests.append(copy.deepcopy(messages))
        self.infos.append(info)
        reply = self.replies.popleft()
        try:
            for index, chunk in enumerate(reply.chunks):
                if reply.delay:
                    await asyncio.sleep(reply.delay)
                yield chunk
                if reply.hold and index == 0:
                    self._release.clear()
                    self.streaming.set()
                    await self._release.wait()
            if reply.stubborn:
                self.streaming.set()
                await _ignoring_a_cancellation(self)
        except asyncio.CancelledError:
            self.cancelled += 1
            raise
        if reply.error is not None:
            raise reply.error


async def _ignoring_a_cancellation(script: Script) -> None:
    """Wait forever, swallowing the first cancellation (counted) and not the second."""
    try:
        await asyncio.Event().wait()
    except asyncio.CancelledError:
        script.cancelled += 1
    await asyncio.Event().wait()


class FinishingModel(WrapperModel):
    """Wraps a model so that every streamed reply ends with ``finish_reason``."""

    def __init__(self, wrapped: FunctionModel, finish_reason: FinishReason) -> None:
        super().__init__(wrapped)
        self.finish_reason: FinishReason = finish_reason

    @asynccontextmanager
    async def request_stream(
        self,
        messages: list[ModelMessage],
        model_settings: ModelSettings | None,
        model_request_parameters: ModelRequestParameters,
        run_context: RunContext[Any] | None = None,
    ) -> AsyncIterator[StreamedResponse]:
        async with super().request_stream(
            messages, model_settings, model_request_parameters, run_context
        ) as stream:
            stream.finish_reason = self.finish_reason
            yield stream


def parts(message: ModelMessage) -> list[tuple[Any, ...]]:
    """A message's parts, compactly: ``("user", content)``, ``("text", content)``,
    ``("call", tool, args)``, ``("return", tool, content, outcome)``, ``("summary", text)``."""
    shown: list[tuple[Any, ...]] = []
    for part in message.parts:
        if isinstance(part, UserPromptPart):
            shown.append(("user", part.content))
        elif isinstance(part, TextPart):
            shown.append(("text", part.content))
        elif isinstance(part, ToolCallPart):
            shown.append(("call", part.tool_name, part.args_as_dict()))
        elif isinstance(part, ToolReturnPart):
            shown.append(("return", part.tool_name, part.content, part.outcome))
        elif isinstance(part, CompactionPart):
            shown.append(("summary", part.content))
        else:
            shown.append((part.part_kind,))
    return shown


def shape(messages: Sequence[ModelMessage]) -> list[tuple[str, list[tuple[Any, ...]]]]:
    """Each message as ``(kind, parts)``: what a test asserts message by message."""
    return [(message.kind, parts(message)) for message in messages]


def states(messages: Sequence[ModelMessage]) -> list[str]:
    return [message.state for message in messages]


def request_instructions(messages: Sequence[ModelMessage]) -> list[str | None]:
    return [m.instructions for m in messages if isinstance(m, ModelRequest)]
