"""Recorded provider streams replayed offline: ``Provider`` is an ``httpx2.MockTransport`` handler
serving scripted replies as the server-sent events of Anthropic's Messages API
(``anthropic_reply``) or of OpenAI's Responses API (``responses_reply``), or as whatever bytes
a test wants (garbage, an error status, a stream that never ends and ignores its
cancellation). Each SDK client is given it as its HTTP client: the SDK's own parsing runs.

Import this only after ``pytest.importorskip`` of the SDK a test uses.
"""

from __future__ import annotations

import asyncio
import functools
import json
from collections import deque
from collections.abc import AsyncIterator, Callable, Coroutine, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

import httpx2

T = TypeVar("T")
BOUND = 120.0
"""A hang guard, not a measure: an SDK's first request builds its types (seconds of CPU on a
loaded machine), which ``tests.shell.support.run_async``'s bound does not allow for."""


def run_async(fn: Callable[..., Coroutine[Any, Any, T]]) -> Callable[..., T]:
    """Run an async test body with ``asyncio.run``, failing (not stalling) on a hang."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> T:
        async def main() -> T:
            return await asyncio.wait_for(fn(*args, **kwargs), BOUND)

        return asyncio.run(main())

    return wrapper


@dataclass
class Reply:
    """One scripted HTTP reply: ``events`` (SSE ``(name, data)``) or ``raw`` bytes, sent
    ``delay`` seconds apart; ``status`` and ``body`` for an error reply.

    ``hold``: after the first delta event the stream waits for ``Provider.release()``
    (``Provider.streaming`` is set then), so a test acts mid-stream without timing.
    ``forever``: after its events the stream never ends; ``stubborn``: and it ignores
    its first cancellation (a provider that ignores its abort; the next one, the event
    loop's at its end, ends it)."""

    events: Sequence[tuple[str, dict[str, Any]]] = ()
    raw: bytes | None = None
    status: int = 200
    body: dict[str, Any] | None = None
    delay: float = 0.0
    hold: bool = False
    forever: bool = False
    stubborn: bool = False


@dataclass
class Provider:
    """Serves ``replies`` in order; ``requests`` keeps each request's JSON body."""

    replies: deque[Reply]
    requests: list[dict[str, Any]] = field(default_factory=list)
    cancelled: int = 0
    streaming: asyncio.Event = field(default_factory=asyncio.Event)
    _release: asyncio.Event = field(default_factory=asyncio.Event)
    closed: int = 0

    @classmethod
    def of(cls, *replies: Reply) -> Provider:
        return cls(deque(replies))

    def release(self) -> None:
        self.streaming.clear()
        self._release.set()

    async def handle(self, request: httpx2.Request) -> httpx2.Response:
        self.requests.append(json.loads(request.content or b"{}"))
        reply = self.replies.popleft()
        if reply.status != 200:
            return httpx2.Response(reply.status, json=reply.body or {})
        headers = {"content-type": "text/event-stream"}
        return httpx2.Response(200, headers=headers, content=self._body(reply))

    async def _body(self, reply: Reply) -> AsyncIterator[bytes]:
        chunks = [reply.raw] if reply.raw is not None else [sse(*e) for e in reply.events]
        deltas = [i for i, (name, _) in enumerate(reply.events) if name.endswith("delta")]
        held = deltas[0] if reply.hold and deltas else 0
        try:
            for index, chunk in enumerate(chunks):
                if reply.delay:
                    await asyncio.sleep(reply.delay)
                yield chunk
                if reply.hold and index == held:
                    self._release.clear()
                    self.streaming.set()
                    await self._release.wait()
            ignored = 0
            while reply.forever:
                try:
                    await asyncio.sleep(3600)
                except asyncio.CancelledError:
                    if not reply.stubborn or ignored:
                        raise
                    ignored += 1
                    self.cancelled += 1
        except asyncio.CancelledError:
            self.cancelled += 1
            raise
        finally:
            self.closed += 1

    def transport(self) -> httpx2.AsyncClient:
        return httpx2.AsyncClient(transport=httpx2.MockTransport(self.handle))

    def anthropic(self) -> Any:
        from anthropic import AsyncAnthropic

        return AsyncAnthropic(api_key="offline", http_client=self.transport(), max_retries=0)

    def openai_model(self, name: str = "gpt-test") -> Any:
        from agents import OpenAIResponsesModel
        from openai import AsyncOpenAI

        client = AsyncOpenAI(api_key="offline", http_client=self.transport(), max_retries=0)
        return OpenAIResponsesModel(model=name, openai_client=client)


def sse(name: str, data: dict[str, Any]) -> bytes:
    return f"event: {name}\ndata: {json.dumps(data)}\n\n".encode()


# ---------------------------------------------------------------- Anthropic

Block = tuple[Any, ...]


def text(*chunks: str) -> Block:
    return ("text", chunks)


def thinking(*chunks: str, signature: str = "sig") -> Block:
    return ("thinking", chunks, signature)


def tool_use(name: str, *chunks: str, id: str = "toolu_1") -> Block:
    return ("tool_use", id, name, chunks)


def anthropic_events(
    *blocks: Block, stop: str | None = "end_turn", usage: tuple[int, int] = (10, 5)
) -> list[tuple[str, dict[str, Any]]]:
    """The events of one reply: ``stop`` None leaves out its end (a stream cut short)."""
    message = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-test",
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {"input_tokens": usage[0], "output_tokens": 1},
    }
    events: list[tuple[str, dict[str, Any]]] = [("message_start", {"message": message})]
    for index, block in enumerate(blocks):
        kind = block[0]
        if kind == "text":
            start: dict[str, Any] = {"type": "text", "text": ""}
            deltas = [{"type": "text_delta", "text": chunk} for chunk in block[1]]
        elif kind == "thinking":
            start = {"type": "thinking", "thinking": "", "signature": ""}
            deltas = [{"type": "thinking_delta", "thinking": chunk} for chunk in block[1]]
            deltas.append({"type": "signature_delta", "signature": block[2]})
        else:
            start = {"type": "tool_use", "id": block[1], "name": block[2], "input": {}}
            deltas = [{"type": "input_json_delta", "partial_json": chunk} for chunk in block[3]]
        events.append(("content_block_start", {"index": index, "content_block": start}))
        events.extend(("content_block_delta", {"index": index, "delta": d}) for d in deltas)
        events.append(("content_block_stop", {"index": index}))
    if stop is not None:
        delta = {"stop_reason": stop, "stop_sequence": None}
        events.append(("message_delta", {"delta": delta, "usage": {"output_tokens": usage[1]}}))
        events.append(("message_stop", {}))
    return [(name, {"type": name, **data}) for name, data in events]


def anthropic_reply(*blocks: Block, stop: str | None = "end_turn", **options: Any) -> Reply:
    return Reply(anthropic_events(*blocks, stop=stop), **options)


# ---------------------------------------------------------------- OpenAI Responses


def message(*chunks: str) -> Block:
    return ("message", chunks)


def function_call(name: str, *chunks: str, call_id: str = "call_1") -> Block:
    return ("function_call", call_id, name, chunks)


def reasoning(*chunks: str) -> Block:
    return ("reasoning", chunks)


def _response(status: str, output: list[dict[str, Any]], **more: Any) -> dict[str, Any]:
    return {
        "id": "resp_1",
        "object": "response",
        "created_at": 0,
        "model": "gpt-test",
        "status": status,
        "output": output,
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        **more,
    }


def responses_events(
    *items: Block,
    status: str | None = "completed",
    incomplete: str | None = None,
    usage: tuple[int, int] = (10, 5),
) -> list[tuple[str, dict[str, Any]]]:
    """The events of one response: ``status`` None leaves out its end; ``incomplete`` ends
    it ``response.incomplete`` with that reason."""
    events: list[tuple[str, dict[str, Any]]] = [
        ("response.created", {"response": _response("in_progress", [])})
    ]
    done: list[dict[str, Any]] = []
    for index, item in enumerate(items):
        where = {"output_index": index}
        if item[0] == "message":
            text = "".join(item[1])
            whole = {
                "id": f"msg_{index}",
                "type": "message",
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": text, "annotations": []}],
            }
            events.append(
                (
                    "response.output_item.added",
                    {**where, "item": {**whole, "content": [], "status": "in_progress"}},
                )
            )
            for chunk in item[1]:
                events.append(
                    (
                        "response.output_text.delta",
                        {
                            **where,
                            "item_id": f"msg_{index}",
                            "content_index": 0,
                            "delta": chunk,
                            "logprobs": [],
                        },
                    )
                )
        elif item[0] == "reasoning":
            whole = {
                "id": f"rs_{index}",
                "type": "reasoning",
                "summary": [{"type": "summary_text", "text": "".join(item[1])}],
            }
            events.append(
                ("response.output_item.added", {**where, "item": {**whole, "summary": []}})
            )
            for chunk in item[1]:
                events.append(
                    (
                        "response.reasoning_summary_text.delta",
                        {**where, "item_id": f"rs_{index}", "summary_index": 0, "delta": chunk},
                    )
                )
        else:
            _, call_id, name, chunks = item
            whole = {
                "id": f"fc_{index}",
                "type": "function_call",
                "call_id": call_id,
                "name": name,
                "arguments": "".join(chunks),
                "status": "completed",
            }
            events.append(
                ("response.output_item.added", {**where, "item": {**whole, "arguments": ""}})
            )
            for chunk in chunks:
                events.append(
                    (
                        "response.function_call_arguments.delta",
                        {**where, "item_id": f"fc_{index}", "delta": chunk},
                    )
                )
        events.append(("response.output_item.done", {**where, "item": whole}))
        done.append(whole)
    spent = {
        "input_tokens": usage[0],
        "output_tokens": usage[1],
        "total_tokens": sum(usage),
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens_details": {"reasoning_tokens": 0},
    }
    if incomplete is not None:
        end = _response("incomplete", done, usage=spent, incomplete_details={"reason": incomplete})
        events.append(("response.incomplete", {"response": end}))
    elif status is not None:
        events.append(("response.completed", {"response": _response(status, done, usage=spent)}))
    return [
        (name, {"type": name, "sequence_number": n, **data})
        for n, (name, data) in enumerate(events)
    ]


def responses_reply(*items: Block, **options: Any) -> Reply:
    keys = ("status", "incomplete", "usage")
    events = responses_events(*items, **{k: v for k, v in options.items() if k in keys})
    return Reply(events, **{k: v for k, v in options.items() if k not in keys})


# ---------------------------------------------------------------- reading what a host did


def ends(events: Sequence[Any]) -> list[tuple[Any, ...]]:
    """Each turn's end: ``(turn, kind)``, with ``code`` for an error."""
    from inbox_core import TurnEnded

    shown = []
    for event in events:
        if isinstance(event, TurnEnded):
            reason = event.reason
            code = (getattr(reason, "code", None),) if reason.kind == "error" else ()
            shown.append((event.turn, reason.kind, *code))
    return shown


def records(events: Sequence[Any], prefix: str = "host/") -> list[str]:
    from inbox_core import HostRecord

    return [e.type for e in events if isinstance(e, HostRecord) and e.type.startswith(prefix)]


def outputs(events: Sequence[Any]) -> list[Any]:
    """The ``Output`` of each ``host/output`` record, in log order."""
    from inbox_core.output import read_output

    found = [read_output(event) for event in events]
    return [output for output in found if output is not None]


def said(output: Any) -> list[tuple[Any, ...]]:
    """An output's parts compactly: ``("text", t)``, ``("call", id, name, arguments)``, ..."""
    shown: list[tuple[Any, ...]] = []
    for part in output.parts:
        if part.type in ("text", "reasoning"):
            shown.append((part.type, part.text))
        elif part.type == "tool-call":
            shown.append(("call", part.id, part.name, part.arguments))
        else:
            shown.append(("result", part.id, part.content, part.is_error))
    return shown


class Heard:
    """An agent's live output (``subscribe_output``), folded per step."""

    def __init__(self, agent: Any) -> None:
        self.messages: list[Any] = []
        agent.subscribe_output(self.messages.append)

    def steps(self) -> dict[tuple[int, int], Any]:
        from inbox_core.output import fold_output

        keys = sorted({(m.turn, m.step) for m in self.messages})
        return {
            key: fold_output(m for m in self.messages if (m.turn, m.step) == key) for key in keys
        }
