"""What ``PydanticAIHost`` says, as the step's live output and its ``host/output`` (R43).

A ``Speaker`` turns one request's pydantic-ai stream events (a plain request's parts
shown as start and end events) into the step's ``StepOutput`` calls: a text part as
text, a thinking part as reasoning, a tool call's start, argument deltas and end; and
the tool returns the step then ran as tool results. The host's own records stay what
they were (one model message each, what ``restore`` reads); ``host/output`` goes beside
them, with the reply's model and usage.

Output never costs the reply: a value no output holds (an id a provider made empty) or
output after the turn was aborted is passed over.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from typing import Any

from pydantic_ai.messages import (
    ModelRequestPart,
    ModelResponse,
    ModelResponseStreamEvent,
    PartDeltaEvent,
    PartEndEvent,
    PartStartEvent,
    TextPart,
    TextPartDelta,
    ThinkingPart,
    ThinkingPartDelta,
    ToolCallPart,
    ToolCallPartDelta,
    ToolReturnPart,
)

from inbox_core.errors import InboxCoreError
from inbox_core.events import HostRecord
from inbox_core.integrations._model_host import value_text
from inbox_core.output import Usage
from inbox_core.shell.output import StepOutput

__all__ = ["Speaker", "output_record"]


def _arguments(args: Any) -> str:
    """A tool call's arguments as the JSON text they stream as ("" for none)."""
    if isinstance(args, str):
        return args
    return value_text(args) if args else ""


class Speaker:
    """Publishes one request's stream to ``output``: each model part as one output part."""

    def __init__(self, output: StepOutput) -> None:
        self.output = output
        self.parts: dict[int, int] = {}  # model part index -> output part index
        self.calls: dict[int, str] = {}  # model part index -> its tool call id

    def event(self, event: ModelResponseStreamEvent) -> None:
        """Publish what ``event`` adds (nothing, once the turn was aborted)."""
        try:
            if isinstance(event, PartStartEvent):
                self._start(event.index, event.part)
            elif isinstance(event, PartDeltaEvent):
                self._delta(event.index, event.delta)
            elif isinstance(event, PartEndEvent) and event.index in self.calls:
                self.output.tool_call_end(self.calls[event.index])
        except InboxCoreError:  # OutputClosed, or what no output holds: the reply goes on
            pass

    def _start(self, index: int, part: Any) -> None:
        new = len(self.output.parts)
        if isinstance(part, TextPart):
            self.parts[index] = self.output.text(part.content, part=new)
        elif isinstance(part, ThinkingPart):
            self.parts[index] = self.output.reasoning(part.content, part=new)
        elif isinstance(part, ToolCallPart):
            at = self.output.tool_call(part.tool_call_id, part.tool_name, _arguments(part.args))
            self.parts[index], self.calls[index] = at, part.tool_call_id

    def _delta(self, index: int, delta: Any) -> None:
        at = self.parts.get(index)
        if at is None:
            return
        if isinstance(delta, TextPartDelta) and delta.content_delta:
            self.output.text(delta.content_delta, part=at)
        elif isinstance(delta, ThinkingPartDelta) and delta.content_delta:
            self.output.reasoning(delta.content_delta, part=at)
        elif (
            isinstance(delta, ToolCallPartDelta)
            and isinstance(delta.args_delta, str)
            and delta.args_delta
            and index in self.calls
        ):
            self.output.tool_call_arguments(self.calls[index], delta.args_delta)

    def results(self, parts: Sequence[ModelRequestPart]) -> None:
        """Publish the returns of the step's tool calls (one that is no success, a retry
        asked of the model included, as an error)."""
        for part in parts:
            if isinstance(part, ToolReturnPart):
                failed = part.outcome != "success"
                with contextlib.suppress(InboxCoreError):  # as in ``event``
                    self.output.tool_result(
                        part.tool_call_id, value_text(part.content), is_error=failed
                    )


def output_record(output: StepOutput, response: ModelResponse | None) -> HostRecord | None:
    """The step's ``host/output`` (None when it said nothing), with the reply's model and
    usage where they are ones an output holds."""
    if not output.parts:
        return None
    if response is not None:
        try:
            usage = Usage(response.usage.input_tokens, response.usage.output_tokens)
            return output.record(model=response.model_name, usage=usage)
        except InboxCoreError:  # no name, a name no output holds, a count past 2^53
            pass
    return output.record()
