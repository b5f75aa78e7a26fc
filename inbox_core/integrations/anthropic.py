"""``AnthropicHost``: Anthropic's Messages API tool-use loop behind ``LoopAgent``, in the log.

``pip install 'inbox-core[anthropic]'`` (``anthropic``). specs/shell.md section 11a.

One step is one streamed Messages API request (``client.messages.create(...,
stream=True)``):

- ``pre_step`` enters the claimed batch unchanged and records it as one user message.
- ``run_step`` sends the conversation (its stable prefix marked for prompt caching),
  streams the reply through live output (R43: text, tool-use input as it is typed,
  thinking as reasoning) and records it, the API's own ``Message`` JSON. Its
  ``stop_reason`` decides the step: ``tool_use`` runs the tools and records their
  results as the next user message (``Continue()``); ``pause_turn`` continues too
  (the next request resumes the reply); ``max_tokens`` and
  ``model_context_window_exceeded`` are ``MaxTokens()``; ``refusal`` ends the turn
  ``error``, code ``content-filter``; ``end_turn`` and ``stop_sequence`` are
  ``Completed()``.
- The abort signal stops the stream (or the tools) at once: what was said is recorded
  (``stop_reason`` null), so the next request shows the model what it had said.
- ``compact`` is a maintenance job (R31): the model summarizes the conversation into
  one record that replaces what came before.
- ``restore_tail(history)`` rebuilds the conversation from the log's tail (R41).

Each step also records its ``host/output`` (R43). Failures end the turn ``error`` with
a stable code (``FAILURE_CODES``, shared with the other model hosts).
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import dataclasses
import inspect
import json
from collections.abc import Mapping, Sequence
from typing import Any, Final

import pydantic
from anthropic import AsyncAnthropic
from anthropic.lib.tools import BetaAsyncFunctionTool, BetaFunctionTool, ToolError
from anthropic.lib.tools import beta_async_tool as async_tool
from anthropic.lib.tools import beta_tool as sync_tool

from inbox_core.commands import Completed, Continue, Decision, Enter, Failed, MaxTokens, StepOutcome
from inbox_core.errors import InvalidInput
from inbox_core.events import DurableEvent, HostRecord
from inbox_core.integrations import _anthropic_log as log
from inbox_core.integrations._anthropic_log import MESSAGE, SUMMARY
from inbox_core.integrations._model_host import (
    CONTENT_FILTER,
    FAILURE_CODES,
    GRACE,
    MODEL_ERROR,
    REPLY_LIMIT,
    SUMMARY_HEADER,
    SUMMARY_PROMPT,
    TOOL_ERROR,
    TOOL_RETRIES,
    Progress,
    Settled,
    Voice,
    contained,
    count,
    describe,
    failed,
    limit_seconds,
    seconds,
    settle,
    tail,
    usage,
    value_text,
)
from inbox_core.shell.host import AbortSignal, Recorded
from inbox_core.shell.stores.checkpoints import LogHistory
from inbox_core.values import UserMessage

__all__ = ["FAILURE_CODES", "MESSAGE", "SUMMARY", "AnthropicHost"]

CONTINUES: Final = frozenset({"tool_use", "pause_turn"})
COMPLETES: Final = frozenset({"end_turn", "stop_sequence"})
CUT: Final = frozenset({"max_tokens", "model_context_window_exceeded"})

MAX_BLOCKS: Final = 1024
"""The most content blocks a tool result is sent as; a longer list goes as its JSON text."""
AnyTool = BetaFunctionTool[Any] | BetaAsyncFunctionTool[Any]


def _tool(tool: object) -> AnyTool | dict[str, Any]:
    """A tool as the host runs it: a plain function (sync or async) wrapped like the SDK's
    ``beta_tool`` (its schema from its signature and docstring), a ``beta_tool`` as it is,
    a mapping as a tool definition the API runs itself (a server tool)."""
    if isinstance(tool, BetaFunctionTool | BetaAsyncFunctionTool):
        return tool
    if isinstance(tool, Mapping):
        return dict(tool)
    if callable(tool):
        return async_tool(tool) if inspect.iscoroutinefunction(tool) else sync_tool(tool)
    raise InvalidInput(f"a tool is a function, a beta_tool or a mapping, got {type(tool).__name__}")


@dataclasses.dataclass
class _Stream:
    """What one streamed request gave so far: the reply as the API's ``Message`` JSON."""

    voice: Voice
    message: dict[str, Any] = dataclasses.field(default_factory=dict)
    blocks: dict[int, dict[str, Any]] = dataclasses.field(default_factory=dict)
    inputs: dict[int, str] = dataclasses.field(default_factory=dict)  # a tool use's JSON text
    size: int = 0
    ended: bool = False

    def reply(self) -> dict[str, Any]:
        """The reply so far: its blocks in order (a tool use's input parsed when it can be)."""
        blocks = []
        for index in sorted(self.blocks):
            block = self.blocks[index]
            if index in self.inputs:
                block["input"] = _parsed(self.inputs[index])
            blocks.append(block)
        message = {"type": "message", "role": "assistant", "stop_reason": None, **self.message}
        return {**message, "role": "assistant", "content": blocks}


def _parsed(text: str) -> Any:
    """A tool use's input from its JSON text (``{}`` for none; the text itself when it is not
    an object, so it is never sent back as a call)."""
    if not text.strip():
        return {}
    try:
        return json.loads(text)
    except ValueError:
        return text


def _dump(value: Any) -> dict[str, Any]:
    dumped: dict[str, Any] = value.model_dump(mode="json", exclude_none=True)
    return dumped


class AnthropicHost:
    """A ``Host`` (and ``RestoringHost``) running Anthropic's Messages API, one request per step.

    ``client`` is an ``anthropic.AsyncAnthropic`` (its ``http_client`` may replay recorded
    streams offline); ``model`` the model's name. ``tools`` are plain functions (sync ones
    run in a thread), the SDK's ``beta_tool``s, or tool definitions the API runs itself
    (mappings). ``system``, ``max_tokens`` and ``thinking`` (``{"type": "enabled",
    "budget_tokens": N}``) go with every request, and so do ``params`` (any other
    ``messages.create`` argument). ``cache``: mark the system prompt and the conversation
    so far for prompt caching. ``timeout``: the longest a request may stream nothing
    (``model-timeout``); ``tool_timeout``: the longest a tool may run (``tool-timeout``);
    ``tool_retries``: how often in a turn a tool call may fail validation or name no
    tool before the turn ends (``tool-retries``); ``grace``: how long a stopped request
    or tool may take to end before it is left running.

    One host holds one conversation: build one per agent (a worker's ``make_host``).
    """

    def __init__(
        self,
        client: AsyncAnthropic,
        model: str,
        *,
        tools: Sequence[object] = (),
        system: str | None = None,
        max_tokens: int = 4096,
        thinking: Mapping[str, Any] | None = None,
        params: Mapping[str, Any] | None = None,
        cache: bool = True,
        timeout: float | None = 300.0,
        tool_timeout: float | None = 300.0,
        tool_retries: int = 1,
        grace: float = GRACE,
        summary_prompt: str = SUMMARY_PROMPT,
    ) -> None:
        if not isinstance(model, str) or not model:
            raise InvalidInput(f"model must be a model's name, got {model!r}")
        self.client = client
        self.model = model
        self.tools = [_tool(tool) for tool in tools]
        self.system = system
        self.max_tokens = count("max_tokens", max_tokens, least=1)
        self.thinking = dict(thinking) if thinking is not None else None
        self.params = dict(params or {})
        self.cache = cache
        self.timeout = limit_seconds("timeout", timeout)
        self.tool_timeout = limit_seconds("tool_timeout", tool_timeout)
        self.tool_retries = count("tool_retries", tool_retries)
        self.grace = seconds("grace", grace)
        self.summary_prompt = summary_prompt
        self._runs = {t.name: t for t in self.tools if not isinstance(t, dict)}
        self._messages: list[dict[str, Any]] = []
        self._retries: tuple[int, int] = (0, 0)  # (turn, failed calls in it)

    # ------------------------------------------------------------- memory

    @property
    def messages(self) -> list[dict[str, Any]]:
        """The conversation as the log holds it (a copy): what the next request is built of."""
        return copy.deepcopy(self._messages)

    def restore(self, events: Sequence[DurableEvent]) -> None:
        """Rebuild the conversation from the log (``RestoringHost``; R30)."""
        self._messages = log.fold(events)

    def restore_tail(self, history: LogHistory) -> None:
        """Rebuild it from the log's tail (SH11, R41): from the newest summary on."""
        self._messages = log.fold(tail(history, SUMMARY))

    def user_block(self, block: Mapping[str, Any]) -> dict[str, Any]:
        """The content block an admitted message's block becomes: a text block as it is, any
        other block as its JSON text. Override to send images or documents as they are."""
        if block.get("type") == "text" and isinstance(block.get("text"), str):
            return {"type": "text", "text": block["text"]}
        text = json.dumps(dict(block), ensure_ascii=False, sort_keys=True, default=str)
        return {"type": "text", "text": text}

    # ------------------------------------------------------------- hooks

    async def pre_step(
        self, turn: int, step: int, messages: tuple[UserMessage, ...], signal: AbortSignal
    ) -> Decision | Recorded[Decision]:
        """Enter the batch unchanged, recorded as one user message."""
        decision = Enter(messages)
        if signal.aborted or not messages:
            return decision
        blocks = [self.user_block(block) for message in messages for block in message.content]
        record = await self._take(MESSAGE, {"role": "user", "content": blocks})
        return Recorded(decision, [record])

    async def run_step(
        self, turn: int, step: int, signal: AbortSignal
    ) -> StepOutcome | Recorded[StepOutcome]:
        """One streamed request, then the tools it calls."""
        if signal.aborted:
            return Completed()
        voice = Voice(signal.output)
        stream = _Stream(voice)
        progress = Progress(self.timeout)
        request = self._request(log.request(self._messages, self.cache))
        settled = await settle(
            self._stream(request, stream, progress), signal, progress=progress, grace=self.grace
        )
        reply = stream.reply()
        records: list[HostRecord] = []
        if reply["content"] or stream.ended:
            records.append(await self._take(MESSAGE, reply))
        outcome = self._ending(settled, stream, reply)
        uses = [b for b in reply["content"] if b.get("type") == "tool_use"]
        if outcome is None and reply.get("stop_reason") == "pause_turn":
            outcome = Continue()  # the next request resumes the reply
        elif outcome is None and uses:
            outcome = await self._tools(uses, turn, signal, voice, records)
        elif outcome is None:
            outcome = failed("the reply stopped to use a tool but used none", MODEL_ERROR)
        spent = reply.get("usage") or {}
        counted = (
            spent.get(key) for key in ("cache_creation_input_tokens", "cache_read_input_tokens")
        )
        total_in = spent.get("input_tokens")
        if isinstance(total_in, int):
            total_in += sum(n for n in counted if isinstance(n, int))
        said = voice.record(reply.get("model"), usage(total_in, spent.get("output_tokens")))
        return Recorded(outcome, [*records, *([said] if said is not None else [])])

    async def turn_stopping(self, turn: int, signal: AbortSignal) -> None:
        return None

    # ------------------------------------------------------------- a request

    def _request(self, messages: list[dict[str, Any]], **more: Any) -> dict[str, Any]:
        """The arguments of one ``messages.create`` call."""
        request: dict[str, Any] = {
            **self.params,
            "model": self.model,
            "max_tokens": self.max_tokens,
            "messages": messages,
            **more,
        }
        if self.system is not None:
            system: dict[str, Any] = {"type": "text", "text": self.system}
            if self.cache:
                system["cache_control"] = dict(log.CACHE)
            request["system"] = [system]
        if self.tools:
            request["tools"] = [t if isinstance(t, dict) else dict(t.to_dict()) for t in self.tools]
        if self.thinking is not None:
            request["thinking"] = self.thinking
        return request

    async def _stream(self, request: dict[str, Any], stream: _Stream, progress: Progress) -> None:
        """Stream one reply into ``stream`` (raises for a stream that is not a reply)."""
        events = await self.client.messages.create(**request, stream=True)
        async with contextlib.AsyncExitStack() as stack:
            stack.push_async_callback(events.close)
            async for event in events:
                progress.touch()
                self._heard(stream, event)
                if stream.ended:
                    return
                if stream.size > REPLY_LIMIT:
                    raise ValueError(f"the reply passed {REPLY_LIMIT} characters")
        raise ValueError("the stream ended before the reply did")

    def _heard(self, stream: _Stream, event: Any) -> None:
        """Take one stream event: publish what it says."""
        kind = getattr(event, "type", None)
        voice = stream.voice
        if kind == "message_start":
            stream.message = {k: v for k, v in _dump(event.message).items() if k != "content"}
        elif kind == "content_block_start":
            block = _dump(event.content_block)
            stream.blocks[event.index] = block
            if block.get("type") in ("tool_use", "server_tool_use"):
                stream.inputs[event.index] = ""
                voice.tool_call(str(block.get("id")), str(block.get("name")))
            elif block.get("type", "").endswith("_tool_result"):
                content = value_text(block.get("content"))
                voice.tool_result(str(block.get("tool_use_id")), content)
            elif block.get("text") or block.get("thinking"):  # a block that starts with its text
                self._delta(stream, event.index, block.get("text") or "", "text")
                self._delta(stream, event.index, block.get("thinking") or "", "thinking")
        elif kind == "content_block_delta":
            delta = event.delta
            index = event.index
            block = stream.blocks.setdefault(index, {"type": "text", "text": ""})
            if delta.type == "text_delta":
                self._delta(stream, index, delta.text, "text", grow=block)
            elif delta.type == "thinking_delta":
                self._delta(stream, index, delta.thinking, "thinking", grow=block)
            elif delta.type == "input_json_delta" and index in stream.inputs:
                stream.inputs[index] += delta.partial_json
                stream.size += len(delta.partial_json)
                voice.tool_arguments(str(block.get("id")), delta.partial_json)
            elif delta.type == "signature_delta":
                block["signature"] = block.get("signature", "") + delta.signature
            elif delta.type == "citations_delta":
                block.setdefault("citations", []).append(_dump(delta.citation))
        elif kind == "content_block_stop":
            block = stream.blocks.get(event.index, {})
            if event.index in stream.inputs:
                voice.tool_end(str(block.get("id")))
        elif kind == "message_delta":
            stream.message.update(_dump(event.delta))
            spent = stream.message.setdefault("usage", {})
            spent.update({k: v for k, v in _dump(event.usage).items() if v is not None})
        elif kind == "message_stop":
            stream.ended = True

    def _delta(
        self, stream: _Stream, index: int, text: str, field: str, grow: dict[str, Any] | None = None
    ) -> None:
        if not text:
            return
        if grow is not None:
            grow[field] = grow.get(field, "") + text
        stream.size += len(text)
        if field == "text":
            stream.voice.text(index, text)
        else:
            stream.voice.reasoning(index, text)

    def _ending(
        self, settled: Settled, stream: _Stream, reply: dict[str, Any]
    ) -> StepOutcome | None:
        """The step's outcome, or None when the reply calls tools (or pauses: ``Continue()``)."""
        ended = settled.call_ended(self.timeout)
        if ended is not None:
            return ended
        stop = reply.get("stop_reason")
        if stop in CUT:
            return MaxTokens()
        if stop == "refusal":
            return Failed("the model refused to go on (stop_reason refusal)", CONTENT_FILTER)
        if stop in COMPLETES:
            return Completed()
        if stop in CONTINUES:
            return None
        return failed(f"the reply ended with stop_reason {stop!r}", MODEL_ERROR)

    # ------------------------------------------------------------- tools

    async def _tools(
        self,
        uses: list[dict[str, Any]],
        turn: int,
        signal: AbortSignal,
        voice: Voice,
        records: list[HostRecord],
    ) -> StepOutcome:
        """Run a reply's tool uses concurrently; record their results as one user message."""
        if signal.aborted:
            return Completed()
        results: dict[int, dict[str, Any]] = {}
        failures: list[Failed] = []

        async def run(index: int, use: dict[str, Any]) -> None:
            me = asyncio.current_task()
            try:
                result = await self._call(use, turn)
            except BaseException as error:  # in the task's outermost frame (see settle)
                if not contained(error, me):
                    raise
                failures.append(
                    failed(f"tool {use.get('name')!r} raised {describe(error)}", TOOL_ERROR)
                )
                return
            if isinstance(result, Failed):
                failures.append(result)
                return
            results[index] = result
            content = result["content"]
            shown = content if isinstance(content, str) else value_text(content)
            voice.tool_result(str(use.get("id")), shown, is_error=bool(result.get("is_error")))

        async def everything() -> None:
            await asyncio.gather(*(run(index, use) for index, use in enumerate(uses)))

        settled = await settle(
            everything(), signal, progress=Progress(self.tool_timeout), grace=self.grace
        )
        if results:
            content = [results[index] for index in sorted(results)]
            records.append(await self._take(MESSAGE, {"role": "user", "content": content}))
        ended = settled.tools_ended(self.tool_timeout)
        if ended is not None:
            return ended
        return failures[0] if failures else Continue()

    async def _call(self, use: dict[str, Any], turn: int) -> dict[str, Any] | Failed:
        """One tool use's ``tool_result`` block, or the failure that ends the turn."""
        name, arguments = str(use.get("name")), use.get("input")
        tool = self._runs.get(name)
        if tool is None or not isinstance(arguments, dict):
            why = f"Tool {name!r} not found." if tool is None else "The input is not a JSON object."
            return self._retry(use, why, turn)
        try:
            if isinstance(tool, BetaAsyncFunctionTool):
                value = await tool.call(arguments)
            else:
                value = await asyncio.to_thread(tool.call, arguments)
        except ToolError as error:  # the tool's own answer: the model is told
            return _result(use, error.content, is_error=True)
        except ValueError as error:
            if not isinstance(error.__cause__, pydantic.ValidationError):
                raise
            return self._retry(use, f"{error}: {error.__cause__}", turn)
        return _result(use, value)

    def _retry(self, use: dict[str, Any], why: str, turn: int) -> dict[str, Any] | Failed:
        """Tell the model ``why`` its call failed, unless the turn's retries are spent."""
        count = self._retries[1] + 1 if self._retries[0] == turn else 1
        self._retries = (turn, count)
        if count > self.tool_retries:
            return failed(f"tool calls failed too often in this turn ({why})", TOOL_RETRIES)
        return _result(use, why, is_error=True)

    # ------------------------------------------------------------- internals

    async def _take(self, record_type: str, message: dict[str, Any]) -> HostRecord:
        """Record ``message``; the conversation takes it as recorded (so it is what ``restore``
        would rebuild from the log). Made in a worker thread: fitting a reply of 10^5 blocks
        takes seconds of CPU, which must not stop the event loop (every agent of a worker)."""
        record, kept = await asyncio.to_thread(log.make, record_type, message)
        self._messages = [kept] if record_type == SUMMARY else [*self._messages, kept]
        return record

    # ------------------------------------------------------------- maintenance

    async def compact(self, signal: AbortSignal) -> Recorded[None] | None:
        """A maintenance job (``await agent.run_maintenance(host.compact)``, R31): the model
        summarizes the conversation into one ``host/anthropic/summary`` record that replaces
        it. Records nothing when the conversation is empty or the job is aborted; a failing
        request raises (``run_maintenance`` ends the job and re-raises)."""
        if not self._messages or signal.aborted:
            return None
        ask = {"role": "user", "content": [{"type": "text", "text": self.summary_prompt}]}
        more: dict[str, Any] = {"tool_choice": {"type": "none"}} if self.tools else {}
        request = self._request(log.request([*self._messages, ask], self.cache), **more)
        stream = _Stream(Voice(signal.output))
        progress = Progress(self.timeout)
        settled = await settle(
            self._stream(request, stream, progress), signal, progress=progress, grace=self.grace
        )
        if not settled.summarized(self.timeout):
            return None
        reply = stream.reply()
        text = "".join(b.get("text", "") for b in reply["content"] if b.get("type") == "text")
        if not text:
            raise RuntimeError("the model returned no summary text")
        summary = {"role": "user", "content": [{"type": "text", "text": SUMMARY_HEADER + text}]}
        return Recorded(None, [await self._take(SUMMARY, summary)])

    def __repr__(self) -> str:
        return f"AnthropicHost(model={self.model!r}, messages={len(self._messages)})"


def _result(use: dict[str, Any], value: Any, *, is_error: bool = False) -> dict[str, Any]:
    """A ``tool_result`` block: a text as it is, a list of content blocks as they are, any
    other value as its JSON text."""
    content: Any
    if isinstance(value, str):
        content = value
    elif (
        isinstance(value, list | tuple)
        and value
        and all(isinstance(b, Mapping) and isinstance(b.get("type"), str) for b in value)
    ):
        content = [dict(b) for b in value]
    else:
        content = value_text(value)
    block = {"type": "tool_result", "tool_use_id": use.get("id"), "content": content}
    if is_error:
        block["is_error"] = True
    return block
