"""``PydanticAIHost``: any pydantic-ai model behind ``LoopAgent``, its conversation in the log.

``pip install -e '.[pydantic-ai]'`` from a checkout (``pydantic-ai-slim``; a provider needs
its own extra too, e.g. ``pydantic-ai-slim[openai]``). specs/shell.md section 11.

One step is one model request, made through pydantic-ai's model layer
(``pydantic_ai.direct.model_request_stream``, a thin wrapper of
``Model.request_stream``; ``model_request`` for a model that cannot stream), never
its ``Agent`` graph:

- ``pre_step`` enters the claimed batch unchanged and records it as one
  ``ModelRequest`` (a ``UserPromptPart`` per message, in the order the core
  admitted them, with the instructions), in the same append as the admissions.
- ``run_step`` sends the history, streams the reply (``on_event`` sees each
  stream event; ``signal.output`` publishes its text, thinking and tool calls as
  live output, R43) and records it as a ``ModelResponse``; it runs the reply's tool
  calls (their returns published as tool results) and records their returns as a
  ``ModelRequest``, answering ``Continue()`` so the next step sends them. Beside these
  it records the step's ``host/output`` (with the reply's model and usage), which
  ``restore`` passes over. A reply without tool calls is
  ``Completed()``, a length stop ``MaxTokens()``; failures are ``Failed(message,
  code)`` with one of the ``FAILURE_CODES`` and a storable message.
- The abort signal stops the stream (or the tools) at once (``_model_host.settle``;
  one that ignores its cancellation is left running after ``grace`` seconds): what
  was streamed is recorded with ``state="interrupted"``, so the next request shows
  the model what it had said (pydantic-ai's ``repair_messages`` closes the tool
  calls it left unanswered).
- ``compact`` is a maintenance job (R31): the same model summarizes the history
  into one ``host/pydantic-ai/summary`` record that replaces what came before.
- ``restore_tail(history)``, called by ``LoopAgent`` when it is built over a log,
  rebuilds the history from the log alone (R30), so a restarted process or
  another worker goes on with the same conversation: from the newest summary on,
  reading the log backwards from the events opening read (R41), the whole log only
  when it holds no summary. ``restore(events)`` does the same from a whole log.

Every record's data is one model message in the JSON form pydantic-ai
serializes to (``ModelMessagesTypeAdapter``), fitted to the log's limits when it
holds what no store can (``_pydantic_ai_log.stored``); ``model_messages(transcript(
log.read()))`` is the history the next request is built from.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
from collections.abc import Callable, Coroutine, Iterable, Sequence
from datetime import UTC, datetime
from typing import Any, Final, TypeVar

from pydantic_ai.direct import model_request, model_request_stream
from pydantic_ai.exceptions import (
    ApprovalRequired,
    CallDeferred,
    ToolFailedError,
    ToolRetryError,
    UnexpectedModelBehavior,
)
from pydantic_ai.messages import (
    CompactionPart,
    ModelMessage,
    ModelRequest,
    ModelRequestPart,
    ModelResponse,
    ModelResponseStreamEvent,
    PartEndEvent,
    PartStartEvent,
    ToolCallPart,
    ToolReturn,
    ToolReturnPart,
    UserPromptPart,
    repair_messages,
)
from pydantic_ai.models import KnownModelName, Model, ModelRequestParameters, infer_model
from pydantic_ai.models.function import FunctionModel
from pydantic_ai.models.wrapper import WrapperModel
from pydantic_ai.settings import ModelSettings
from pydantic_ai.tool_manager import ToolManager
from pydantic_ai.tools import RunContext, Tool, ToolDefinition, ToolFuncEither
from pydantic_ai.toolsets import FunctionToolset
from pydantic_ai.usage import RunUsage

from inbox_core.commands import Completed, Continue, Decision, Enter, Failed, MaxTokens, StepOutcome
from inbox_core.events import DurableEvent, HostRecord
from inbox_core.history import transcript
from inbox_core.integrations._model_host import (
    CONTENT_FILTER,
    GRACE,
    MODEL_ERROR,
    SUMMARY_PROMPT,
    TOOL_DEFERRED,
    TOOL_ERROR,
    TOOL_RETRIES,
    Settled,
    contained,
    count,
    describe,
    failed,
    seconds,
    settle,
    tail,
)
from inbox_core.integrations._pydantic_ai_log import (
    REQUEST,
    RESPONSE,
    SUMMARY,
    model_messages,
    records_history,
    stored,
)
from inbox_core.integrations._pydantic_ai_output import Speaker, output_record
from inbox_core.json_values import JsonObject, thaw_json
from inbox_core.shell.host import AbortSignal, Recorded
from inbox_core.shell.stores.checkpoints import LogHistory
from inbox_core.values import UserMessage

__all__ = [
    "CONTENT_FILTER",
    "FAILURE_CODES",
    "MODEL_ERROR",
    "REQUEST",
    "RESPONSE",
    "SUMMARY",
    "TOOL_DEFERRED",
    "TOOL_ERROR",
    "TOOL_RETRIES",
    "PydanticAIHost",
    "StreamListener",
    "model_messages",
]

T = TypeVar("T")

FAILURE_CODES: Final = (MODEL_ERROR, CONTENT_FILTER, TOOL_ERROR, TOOL_RETRIES, TOOL_DEFERRED)
"""The codes this host ends a turn ``error`` with (``_model_host.FAILURE_CODES``, which every
model host shares, holds them and the codes of the hosts that time out or run guardrails)."""
METADATA_KEY: Final = "inbox_core"
"""Key of the request metadata (never sent to the model) naming the turn, step and message ids."""

StreamListener = Callable[[int, int, ModelResponseStreamEvent], None]
"""``on_event(turn, step, event)``: called for each event of a streamed reply (a reply
made without streaming shows each part as a ``PartStartEvent`` and a ``PartEndEvent``)."""


# --------------------------------------------------------------------- host


@dataclasses.dataclass
class _Reply:
    """What one streamed request gave: how it settled, and the reply (or the part streamed
    before it stopped)."""

    settled: Settled
    response: ModelResponse | None


@dataclasses.dataclass
class _ToolRun:
    """The settled returns of a reply's tool calls, in call order, then their user content;
    and the step's outcome: ``Continue()`` when every call settled without a failure."""

    parts: list[ModelRequestPart]
    outcome: StepOutcome


class _ListenerFailed(Exception):
    """``on_event`` raised: the host's caller's error, not the model's."""

    def __init__(self, error: BaseException) -> None:
        super().__init__(error)
        self.error = error


def _now() -> datetime:
    return datetime.now(UTC)


def _can_stream(model: Model) -> bool:
    """Whether ``model`` streams, as far as its class says: a ``FunctionModel`` without a
    ``stream_function`` and a ``Model`` that leaves ``request_stream`` unimplemented do not
    (looked at through any ``WrapperModel``)."""
    while isinstance(model, WrapperModel):
        model = model.wrapped
    if isinstance(model, FunctionModel):
        return model.stream_function is not None
    return type(model).request_stream is not Model.request_stream


def _block_text(block: JsonObject) -> str:
    text = block.get("text")
    if block.get("type") == "text" and isinstance(text, str):
        return text
    return json.dumps(thaw_json(block), ensure_ascii=False, sort_keys=True)


class PydanticAIHost:
    """A ``Host`` (and ``RestoringHost``) running a pydantic-ai model, one request per step.

    ``model`` is a pydantic-ai ``Model`` or a model name (``"openai:gpt-5-mini"``,
    resolved once by ``infer_model``). ``tools`` are plain functions or
    ``Tool``s (with a ``RunContext`` first argument if they want one; its
    ``deps`` is ``deps``); pydantic-ai builds their JSON schemas and validates
    the model's arguments. ``instructions`` go with every request;
    ``model_settings`` too. A tool call whose arguments fail validation, or
    whose tool raises ``ModelRetry``, goes back to the model as a retry, at
    most ``tool_retries`` times per tool and turn unless the tool says
    otherwise (then ``Failed(..., "tool-retries")``). ``on_event(turn, step,
    event)`` sees every streamed event (an exception it raises ends the turn
    ``error`` with the exception's class name as code, like a hook's). ``grace``:
    how long a request or a tool the abort signal stopped may take to end before
    it is left running (a provider that ignores its cancellation costs the step
    that long, not the turn).

    One host holds one conversation: build one per agent (a worker's
    ``make_host(agent_id)``). Its memory is the log's: ``LoopAgent`` calls
    ``restore(events)`` when it is built, and every hook records what it adds.
    """

    def __init__(
        self,
        model: Model | KnownModelName | str,
        *,
        tools: Sequence[Tool[Any] | ToolFuncEither[Any, ...]] = (),
        instructions: str | None = None,
        model_settings: ModelSettings | None = None,
        deps: Any = None,
        tool_retries: int = 1,
        on_event: StreamListener | None = None,
        summary_prompt: str = SUMMARY_PROMPT,
        grace: float = GRACE,
    ) -> None:
        count("tool_retries", tool_retries)
        self.model: Model = infer_model(model)
        self.instructions = instructions
        self.model_settings = model_settings
        self.deps = deps
        self.on_event = on_event
        self.summary_prompt = summary_prompt
        self.grace = seconds("grace", grace)
        self._toolset: FunctionToolset[Any] = FunctionToolset(list(tools), max_retries=tool_retries)
        self._history: list[ModelMessage] = []
        self._tools: tuple[int, ToolManager[Any]] | None = None  # (turn, its manager): retries
        self._streams = _can_stream(self.model)  # False: each request is a plain one

    @property
    def history(self) -> list[ModelMessage]:
        """The conversation as the log holds it, what the next request starts from (a new
        list; the messages are the host's own, not to be changed)."""
        return list(self._history)

    def restore(self, events: Sequence[DurableEvent]) -> None:
        """Rebuild the history from the log's events (``RestoringHost``; R30)."""
        self._history = model_messages(transcript(events))
        self._tools = None

    def restore_tail(self, history: LogHistory) -> None:
        """Rebuild the history from a bounded tail (SH11, R41): the events the agent's
        opening read, then earlier pages read backwards, until the newest summary (which
        replaces everything before it); the whole log only when it holds none."""
        self._history = records_history(tail(history, SUMMARY))
        self._tools = None

    def user_part(self, message: UserMessage) -> UserPromptPart:
        """The prompt part an admitted message becomes: its text blocks as text, any other
        block as its JSON text. Override to map images, files or sources your way."""
        content = [_block_text(block) for block in message.content]
        return UserPromptPart(content[0] if len(content) == 1 else content)

    # ------------------------------------------------------------ the hooks

    async def pre_step(
        self, turn: int, step: int, messages: tuple[UserMessage, ...], signal: AbortSignal
    ) -> Decision | Recorded[Decision]:
        """Enter the batch unchanged, recorded as one ``ModelRequest``."""
        decision = Enter(messages)
        if signal.aborted or not messages:
            return decision
        request = ModelRequest(
            parts=[self.user_part(message) for message in messages],
            instructions=self.instructions,
            timestamp=_now(),
            metadata={
                METADATA_KEY: {
                    "turn": turn,
                    "step": step,
                    "messages": [message.id for message in messages],
                }
            },
        )
        return await self._recorded(decision, [(REQUEST, request)])

    async def run_step(
        self, turn: int, step: int, signal: AbortSignal
    ) -> StepOutcome | Recorded[StepOutcome]:
        """One model request, streamed, then the tools it calls (R16)."""
        if signal.aborted:
            return Completed()
        try:
            tools = await self._tool_manager(turn, step)
        except Exception as error:  # a tool's prepare function raised
            return failed(f"preparing the tools raised {describe(error)}", TOOL_ERROR)
        reply = await self._request(
            repair_messages(self._history, repair_last_response=True),
            tools.tool_defs,
            self.model_settings,
            signal,
            (turn, step),
        )
        if isinstance(reply.settled.error, _ListenerFailed):
            raise reply.settled.error.error
        said: list[tuple[str, ModelMessage]] = []

        async def done(outcome: StepOutcome) -> Recorded[StepOutcome]:
            """``outcome`` with the step's records: its messages, then its host/output."""
            voice = output_record(signal.output, reply.response)
            return await self._recorded(outcome, said, voice)

        if reply.response is not None:
            said.append((RESPONSE, reply.response))
        ended = reply.settled.call_ended(None)  # aborted: Completed(); raised: model-error
        if ended is not None:
            return await done(ended)
        response = reply.response
        assert response is not None
        finish = response.finish_reason
        if finish == "length":
            return await done(MaxTokens())
        if finish == "content_filter":
            stopped = Failed("the provider's content filter stopped the reply", CONTENT_FILTER)
            return await done(stopped)
        if finish == "error":
            ended = Failed("the provider ended the reply with an error", MODEL_ERROR)
            return await done(ended)
        calls = response.tool_calls
        if not calls or signal.aborted:
            return await done(Completed())
        run = await self._run_tools(tools, calls, signal)
        Speaker(signal.output).results(run.parts)  # R43: live, and in its host/output
        interrupted = not isinstance(run.outcome, Continue)
        if run.parts or not interrupted:
            returns = ModelRequest(
                parts=run.parts,
                instructions=self.instructions,
                timestamp=_now(),
                state="interrupted" if interrupted else "complete",
            )
            said.append((REQUEST, returns))
        return await done(run.outcome)

    async def turn_stopping(self, turn: int, signal: AbortSignal) -> None:
        return None

    # ---------------------------------------------------------- maintenance

    async def compact(self, signal: AbortSignal) -> Recorded[None] | None:
        """A maintenance job (``await agent.run_maintenance(host.compact)``, R31): the same
        model summarizes the history into one ``host/pydantic-ai/summary`` record.

        Records nothing when the history is empty or the job is aborted; a
        failing request raises (``run_maintenance`` ends the job and re-raises).
        The summary's stream is not shown to ``on_event``.
        """
        if not self._history or signal.aborted:
            return None
        ask = ModelRequest(
            parts=[UserPromptPart(self.summary_prompt)],
            instructions=self.instructions,
            timestamp=_now(),
        )
        # the history's tool calls need their definitions; tool_choice "none" keeps them unused
        tools = await ToolManager[Any](toolset=self._toolset).for_run_step(self._context(1))
        settings: ModelSettings = {**(self.model_settings or {}), "tool_choice": "none"}
        reply = await self._request(
            repair_messages([*self._history, ask], repair_last_response=True),
            tools.tool_defs,
            settings,
            signal,
            None,
        )
        if not reply.settled.summarized(None):  # aborted (what it failed with is raised)
            return None
        text = reply.response.text if reply.response is not None else None
        if not text:
            raise UnexpectedModelBehavior("the model returned no summary text")
        summary = ModelRequest(
            parts=[CompactionPart(content=text)],
            timestamp=_now(),
            metadata={METADATA_KEY: {"summarized": len(self._history)}},
        )
        return await self._recorded(None, [(SUMMARY, summary)])

    # ------------------------------------------------------------ internals

    async def _recorded(
        self,
        answer: T,
        said: Sequence[tuple[str, ModelMessage]],
        voice: HostRecord | None = None,
    ) -> Recorded[T]:
        """``answer`` with the records of ``said`` and then ``voice``, the step's
        ``host/output`` (R43); the history takes them as recorded (so it is exactly what
        ``restore`` would rebuild from the log). Each record is made in a worker thread:
        serializing, fitting and reading back a reply of 10^5 parts takes seconds of CPU,
        which must not stop the event loop (every agent of a worker)."""
        records: list[HostRecord] = []
        for record_type, message in said:
            record, kept = await asyncio.to_thread(stored, record_type, message)
            records.append(record)
            if record_type == SUMMARY:
                self._history = [kept]
            else:
                self._history.append(kept)
        return Recorded(answer, [*records, *([voice] if voice is not None else [])])

    async def _tool_manager(self, turn: int, step: int) -> ToolManager[Any]:
        """The turn's tool manager, prepared for ``step`` (tool retries count per turn)."""
        manager = (
            self._tools[1]
            if self._tools is not None and self._tools[0] == turn
            else ToolManager[Any](toolset=self._toolset)
        )
        prepared = await manager.for_run_step(self._context(step))
        self._tools = (turn, prepared)
        return prepared

    def _context(self, step: int) -> RunContext[Any]:
        """What a tool (and its ``prepare``) sees as ``ctx``."""
        return RunContext[Any](
            deps=self.deps,
            model=self.model,
            usage=RunUsage(),
            messages=list(self._history),
            run_step=step,
        )

    async def _request(
        self,
        messages: list[ModelMessage],
        tool_defs: list[ToolDefinition],
        settings: ModelSettings | None,
        signal: AbortSignal,
        step: tuple[int, int] | None,
    ) -> _Reply:
        """One request, raced against ``signal`` (``step`` None: no listener): streamed, or
        a plain request when the model cannot stream (``_can_stream``, or its
        ``request_stream`` raised ``NotImplementedError`` before streaming anything)."""
        streams: list[Any] = []
        parameters = ModelRequestParameters(function_tools=tool_defs)
        speaker = Speaker(signal.output) if step is not None else None

        def show(event: ModelResponseStreamEvent) -> None:
            if speaker is not None:
                speaker.event(event)  # R43: the reply as it is made, to every watcher
            if self.on_event is not None and step is not None:
                try:
                    self.on_event(*step, event)
                except BaseException as error:  # a plain call: whatever it raises is its own
                    raise _ListenerFailed(error) from error

        async def consume() -> ModelResponse:
            if self._streams:
                try:
                    async with model_request_stream(
                        self.model,
                        messages,
                        model_settings=settings,
                        model_request_parameters=parameters,
                    ) as stream:
                        streams.append(stream)
                        async for event in stream:
                            show(event)
                        return stream.get()
                except NotImplementedError:
                    if streams:
                        raise
            response = await model_request(
                self.model, messages, model_settings=settings, model_request_parameters=parameters
            )
            self._streams = False  # the plain request works: go on without trying to stream
            if step is not None:  # as a stream would show it
                for index, part in enumerate(response.parts):
                    show(PartStartEvent(index=index, part=part))
                    show(PartEndEvent(index=index, part=part))
            return response

        settled = await settle(consume(), signal, grace=self.grace)
        if not settled.stopped and settled.error is None:
            return _Reply(settled, settled.value)
        partial: ModelResponse | None = streams[0].get() if streams else None
        if partial is not None:
            partial = dataclasses.replace(partial, state="interrupted") if partial.parts else None
        return _Reply(settled, partial)

    async def _run_tools(
        self, manager: ToolManager[Any], calls: list[ToolCallPart], signal: AbortSignal
    ) -> _ToolRun:
        """Run the calls concurrently, raced against ``signal``; keep what settled."""
        settled: list[tuple[list[ModelRequestPart], list[UserPromptPart], Failed | None] | None]
        settled = [None] * len(calls)

        async def run(index: int, call: ToolCallPart) -> None:
            me = asyncio.current_task()
            try:
                settled[index] = await _call_tool(manager, call)
            except BaseException as error:  # in the task's outermost frame (see _call_tool)
                if not contained(error, me):
                    raise
                raised = failed(f"tool {call.tool_name!r} raised {describe(error)}", TOOL_ERROR)
                settled[index] = [], [], raised

        race = await settle(
            _gather(run(index, call) for index, call in enumerate(calls)), signal, grace=self.grace
        )
        parts: list[ModelRequestPart] = []
        extra: list[UserPromptPart] = []
        failure: Failed | None = None
        for outcome in settled:
            if outcome is not None:
                parts.extend(outcome[0])
                extra.extend(outcome[1])
                failure = failure or outcome[2]
        if race.aborted:
            return _ToolRun([*parts, *extra], Completed())
        # a tool's failure, else one of the gathering itself (never lost)
        return _ToolRun([*parts, *extra], failure or race.tools_ended(None) or Continue())

    def __repr__(self) -> str:
        return f"PydanticAIHost(model={self.model.model_name!r}, messages={len(self._history)})"


async def _gather(runs: Iterable[Coroutine[Any, Any, None]]) -> None:
    await asyncio.gather(*runs)


async def _call_tool(
    manager: ToolManager[Any], call: ToolCallPart
) -> tuple[list[ModelRequestPart], list[UserPromptPart], Failed | None]:
    """One call's return parts, its extra user content, or the failure that ends the turn.

    Anything else the tool raises (any ``BaseException``) is a ``tool-error`` too, caught by
    the caller in its task's outermost frame: there PEP 380 raises a ``GeneratorExit`` that
    a future the tool awaited failed with, and a ``SystemExit`` or ``KeyboardInterrupt`` must
    not end the task (asyncio would re-raise it out of the event loop)."""
    try:
        result = await manager.handle_call(call)
    except ToolRetryError as retry:  # invalid arguments, unknown tool, ModelRetry
        return [retry.tool_retry], [], None
    except ToolFailedError as refused:  # ToolFailed: the model is told and adapts
        return [refused.tool_failed], [], None
    except UnexpectedModelBehavior as exceeded:
        return [], [], failed(exceeded.message, TOOL_RETRIES)
    except (CallDeferred, ApprovalRequired):
        message = f"tool {call.tool_name!r} needs approval or external execution"
        return [], [], failed(message, TOOL_DEFERRED)
    returned: ToolReturn[Any] = result if isinstance(result, ToolReturn) else ToolReturn(result)
    part = ToolReturnPart(
        tool_name=call.tool_name,
        content=returned.return_value,
        tool_call_id=call.tool_call_id,
        metadata=returned.metadata,
        tool_kind=call.tool_kind,
    )
    extra = [UserPromptPart(returned.content)] if returned.content else []
    return [part], extra, None
