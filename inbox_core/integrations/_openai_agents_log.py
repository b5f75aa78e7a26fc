"""The records of ``OpenAIAgentsHost`` (specs/shell.md section 11a) and the conversation they
fold to: each holds Responses API items, the SDK's own JSON (``TResponseInputItem``), and the
name of the agent that speaks next, so a log alone rebuilds both (R30).

Framework-free: the items are plain JSON here; only the host speaks to the SDK.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from typing import Any, Final

from inbox_core.errors import InvalidInput, shown
from inbox_core.events import DurableEvent, HostRecord
from inbox_core.integrations._model_host import NOT_RUN, fit_record
from inbox_core.json_values import thaw_json

INPUT: Final = "host/openai-agents/input"
"""The messages a step admitted, as user message items (``tripped``: an input guardrail of the
agent refused them; they are kept out of the conversation)."""
RESPONSE: Final = "host/openai-agents/response"
"""A model call's output items (``state`` ``interrupted`` when it was cut short: the items it
had finished and the text it had said)."""
TOOLS: Final = "host/openai-agents/tools"
"""The outputs of a reply's tool calls (``function_call_output`` items); after a handoff its
``agent`` is the agent handed to."""
SUMMARY: Final = "host/openai-agents/summary"
"""A compaction's summary: one item that replaces the conversation before it."""
TYPES: Final = (INPUT, RESPONSE, TOOLS, SUMMARY)


@dataclasses.dataclass(frozen=True)
class Entry:
    """One record as the fold reads it."""

    type: str
    agent: str
    items: list[dict[str, Any]]
    tripped: bool = False


def make(
    record_type: str, agent: str, items: Sequence[dict[str, Any]], **extra: Any
) -> tuple[HostRecord, Entry]:
    """The record of ``items`` (``fit_record``: what the log cannot hold kept as text) and the
    entry it reads back as, which is what the conversation takes."""
    data = {"agent": agent, "items": list(items), **extra}

    def placeholder(note: str) -> dict[str, Any]:
        role = "assistant" if record_type == RESPONSE else "user"
        return {**data, "items": [{"role": role, "content": note}]}

    record = fit_record(record_type, data, placeholder)
    return record, read(record)


def read(record: HostRecord) -> Entry:
    """The entry a record of these types holds, or ``InvalidInput`` when it is not of its form
    (an object with an ``agent`` name and a list of ``items``, each an object)."""
    data = thaw_json(record.data)
    if not isinstance(data, dict):
        raise InvalidInput(f"{record.type} holds {shown(data)}, not an object")
    agent, items = data.get("agent"), data.get("items")
    if not isinstance(agent, str) or not agent:
        raise InvalidInput(f"{record.type} names no agent: {shown(agent)}")
    if not isinstance(items, list) or not all(isinstance(item, dict) for item in items):
        raise InvalidInput(f"{record.type} holds no list of items: {shown(items)}")
    return Entry(record.type, agent, items, data.get("tripped") is not None)


@dataclasses.dataclass
class Conversation:
    """What the log's records fold to: the items the next model call is sent (from the latest
    summary on) and the agent that speaks next (None: the host's starting agent)."""

    items: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    agent: str | None = None

    def take(self, entry: Entry) -> None:
        self.agent = entry.agent
        if entry.type == SUMMARY:
            self.items = list(entry.items)
        elif not entry.tripped:
            self.items.extend(entry.items)


def fold(events: Iterable[DurableEvent]) -> Conversation:
    """The conversation a log's events hold (R30): this host's records in log order, starting
    again at each summary; other events and records are passed over; a record of these types
    not of its form raises ``InvalidInput``."""
    conversation = Conversation()
    for event in events:
        if isinstance(event, HostRecord) and event.type in TYPES:
            conversation.take(read(event))
    return conversation


_CALLS: Final = {
    "function_call": "function_call_output",
    "custom_tool_call": "custom_tool_call_output",
}


def repaired(items: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """``items`` as a model call may be sent them: each tool call left without its output (a
    step stopped or failed between the two) answered as not run, right after the call's
    reply, as the Responses API requires."""
    answered = {item.get("call_id") for item in items if item.get("type") in _CALLS.values()}
    result: list[dict[str, Any]] = []
    missing: list[dict[str, Any]] = []
    for item in items:
        if missing and item.get("type") not in _CALLS:
            result.extend(missing)
            missing = []
        result.append(item)
        kind = item.get("type")
        if kind in _CALLS and item.get("call_id") not in answered:
            missing.append(
                {"type": _CALLS[kind], "call_id": item.get("call_id"), "output": NOT_RUN}
            )
    return result + missing
