"""The stream of one Agents SDK model call as ``OpenAIAgentsHost`` reads it (specs/shell.md
section 11a): Responses API stream events published as live output (R43) and gathered into
the items the reply is recorded as, whole or, when it was cut short, what it had said.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Sequence
from typing import Any, Final

from inbox_core.integrations._model_host import REPLY_LIMIT, Voice

HOSTED_CALLS: Final = frozenset(
    {
        "web_search_call",
        "file_search_call",
        "code_interpreter_call",
        "image_generation_call",
        "mcp_call",
        "mcp_list_tools",
        "tool_search_call",
        "reasoning",
        "message",
        "compaction",
    }
)
"""Output item types that need nothing of the host (the provider ran them, or they are said)."""


@dataclasses.dataclass
class Stream:
    """What one streamed model call gave so far."""

    voice: Voice
    added: dict[int, Any] = dataclasses.field(default_factory=dict)  # output_index -> item
    done: dict[int, dict[str, Any]] = dataclasses.field(default_factory=dict)
    texts: dict[tuple[int, int], str] = dataclasses.field(default_factory=dict)
    calls: dict[str, str] = dataclasses.field(default_factory=dict)  # item id -> call id
    arguments: dict[str, str] = dataclasses.field(default_factory=dict)  # call id -> streamed
    size: int = 0
    response: Any = None  # the terminal Response
    incomplete: str | None = None  # its incomplete reason
    error: str | None = None  # a failure the stream itself reported

    def items(self) -> list[dict[str, Any]]:
        """The items said so far: each finished one, and the text of a message in progress."""
        items: list[dict[str, Any]] = []
        for index in sorted({*self.added, *self.done}):
            if index in self.done:
                items.append(self.done[index])
                continue
            text = "".join(t for (i, _), t in sorted(self.texts.items()) if i == index)
            if text and getattr(self.added[index], "type", None) == "message":
                content = [{"type": "output_text", "text": text, "annotations": []}]
                items.append({"type": "message", "role": "assistant", "content": content})
        return items


def dumped(item: Any) -> dict[str, Any]:
    """An output item as the input item the SDK sends it back as (``to_input_items``)."""
    if isinstance(item, dict):
        return copy.deepcopy(item)
    dumped: dict[str, Any] = item.model_dump(exclude_unset=True)
    return dumped


def final_text(items: Sequence[dict[str, Any]]) -> str:
    """The text of a reply's messages (its final output as text)."""
    return "".join(
        part.get("text") or ""
        for item in items
        if item.get("type") == "message"
        for part in item.get("content") or ()
        if isinstance(part, dict) and part.get("type") == "output_text"
    )


def heard(stream: Stream, event: Any) -> bool:
    """Take one stream event: publish what it says; True when it ends the reply."""
    kind = getattr(event, "type", None)
    voice = stream.voice
    index: Any = getattr(event, "output_index", None)
    if kind in ("response.output_text.delta", "response.refusal.delta"):
        delta = str(event.delta)
        key = (index, event.content_index)
        stream.texts[key] = stream.texts.get(key, "") + delta
        voice.text(key, delta)
        stream.size += len(delta)
    elif kind in ("response.reasoning_summary_text.delta", "response.reasoning_text.delta"):
        part = getattr(event, "summary_index", None) or getattr(event, "content_index", 0)
        voice.reasoning((kind, index, part), str(event.delta))
        stream.size += len(str(event.delta))
    elif kind == "response.output_item.added":
        stream.added[index] = event.item
        if getattr(event.item, "type", None) == "function_call":
            call_id = str(event.item.call_id)
            stream.calls[str(event.item.id or call_id)] = call_id
            stream.arguments[call_id] = str(event.item.arguments or "")
            voice.tool_call(call_id, str(event.item.name), stream.arguments[call_id])
    elif kind == "response.function_call_arguments.delta":
        delta_of = stream.calls.get(str(event.item_id))
        if delta_of is not None:
            stream.arguments[delta_of] += str(event.delta)
            voice.tool_arguments(delta_of, str(event.delta))
            stream.size += len(str(event.delta))
    elif kind == "response.output_item.done":
        item = dumped(event.item)
        stream.done[index] = item
        stream.added.setdefault(index, event.item)
        if item.get("type") == "function_call":
            _call_done(stream, item)
    elif kind == "response.completed":
        stream.response = event.response
        return True
    elif kind == "response.incomplete":
        stream.response = event.response
        details = getattr(event.response, "incomplete_details", None)
        stream.incomplete = str(getattr(details, "reason", None) or "unknown")
        return True
    elif kind in ("response.failed", "error", "response.error"):
        error = getattr(getattr(event, "response", None), "error", None) or event
        stream.error = (
            f"the provider ended the reply with an error: {getattr(error, 'message', error)}"
        )
        return True
    if stream.size > REPLY_LIMIT:
        stream.error = f"the reply passed {REPLY_LIMIT} characters"
        return True
    return False


def _call_done(stream: Stream, item: dict[str, Any]) -> None:
    """A function call's item is whole: stream what its deltas left out, then its end."""
    call_id, name = str(item.get("call_id")), str(item.get("name"))
    arguments = str(item.get("arguments") or "")
    if call_id not in stream.arguments:
        stream.arguments[call_id] = ""
        stream.voice.tool_call(call_id, name)
    streamed = stream.arguments[call_id]
    if arguments.startswith(streamed):
        stream.voice.tool_arguments(call_id, arguments[len(streamed) :])
    stream.voice.tool_end(call_id)
