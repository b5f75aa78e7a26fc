"""The records of ``AnthropicHost`` (specs/shell.md section 11a): each holds one message in the
Messages API's own JSON (a reply as the API's ``Message``, the user's and the tool results
as a ``MessageParam``), and the request a conversation of them becomes: repaired, merged by
role and its stable prefix marked for prompt caching.

Framework-free: messages are plain JSON here; only the host speaks to the SDK.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Sequence
from typing import Any, Final

from inbox_core.errors import InvalidInput, shown
from inbox_core.events import DurableEvent, HostRecord
from inbox_core.integrations._model_host import NOT_RUN, fit_record
from inbox_core.json_values import thaw_json

MESSAGE: Final = "host/anthropic/message"
"""One message: the admitted batch or the tool results (``role`` ``user``), or a reply (the
API's ``Message``, ``stop_reason`` null when it was cut short)."""
SUMMARY: Final = "host/anthropic/summary"
"""A compaction's summary, a user message that replaces the conversation before it."""

CACHE: Final = {"type": "ephemeral"}
_UNMARKABLE: Final = frozenset({"thinking", "redacted_thinking"})
"""Blocks that take no ``cache_control`` (the API refuses it on them)."""


def make(record_type: str, message: dict[str, Any]) -> tuple[HostRecord, dict[str, Any]]:
    """The record of ``message`` (``fit_record``: what the log cannot hold kept as text) and
    the message it reads back as, which is what the conversation takes."""

    def placeholder(note: str) -> dict[str, Any]:
        return {"role": message.get("role"), "content": [{"type": "text", "text": note}]}

    record = fit_record(record_type, message, placeholder)
    return record, read(record)


def read(record: HostRecord) -> dict[str, Any]:
    """The message a record holds, or ``InvalidInput`` when it is none (an object whose ``role``
    is ``user`` or ``assistant`` and whose ``content`` is a text or a list of blocks)."""
    data = thaw_json(record.data)
    if not isinstance(data, dict) or data.get("role") not in ("user", "assistant"):
        raise InvalidInput(f"{record.type} holds no user or assistant message: {shown(data)}")
    content = data.get("content")
    if not isinstance(content, str) and not (
        isinstance(content, list) and all(isinstance(block, dict) for block in content)
    ):
        raise InvalidInput(f"{record.type} holds no content: {shown(content)}")
    return data


def fold(events: Iterable[DurableEvent]) -> list[dict[str, Any]]:
    """The conversation a log's events hold (R30): this host's messages in log order, starting
    again at each summary; other events and records are passed over; a record of these types
    that holds no message raises ``InvalidInput``."""
    messages: list[dict[str, Any]] = []
    for event in events:
        if isinstance(event, HostRecord) and event.type == MESSAGE:
            messages.append(read(event))
        elif isinstance(event, HostRecord) and event.type == SUMMARY:
            messages = [read(event)]
    return messages


def _blocks(message: dict[str, Any]) -> list[dict[str, Any]]:
    """A message's content as blocks the API takes back: a text as one text block; of a reply
    what it can be sent again (no empty text, no thinking without its signature, no tool use
    whose input never became an object)."""
    content = message["content"]
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    kept = []
    for block in copy.deepcopy(content):
        kind = block.get("type")
        if kind == "text" and not block.get("text"):
            continue
        if kind == "thinking" and not block.get("signature"):
            continue
        if kind in ("tool_use", "server_tool_use") and not isinstance(block.get("input"), dict):
            continue
        kept.append(block)
    return kept


def request(messages: Sequence[dict[str, Any]], cache: bool) -> list[dict[str, Any]]:
    """The ``messages`` of the next request: each reply's tool uses answered (as not run when
    the log holds no result), consecutive messages of one role merged (tool results first in
    a user message, as the API requires), and, with ``cache``, the last block marked
    ``cache_control`` so the conversation so far is the prefix the next request reads from
    the cache."""
    merged: list[dict[str, Any]] = []
    pending: list[str] = []  # tool uses of the last reply not answered yet
    for message in messages:
        role, blocks = message["role"], _blocks(message)
        if role == "user":
            answered = {b.get("tool_use_id") for b in blocks if b.get("type") == "tool_result"}
            blocks = [_not_run(use) for use in pending if use not in answered] + blocks
            pending = []
        else:
            if pending:
                _append(merged, "user", [_not_run(use) for use in pending])
            pending = [str(b["id"]) for b in blocks if b.get("type") == "tool_use"]
        if blocks:
            _append(merged, role, blocks)
    if pending:
        _append(merged, "user", [_not_run(use) for use in pending])
    if cache and merged:
        markable = [b for b in merged[-1]["content"] if b.get("type") not in _UNMARKABLE]
        if markable:
            markable[-1]["cache_control"] = dict(CACHE)
    return merged


def _not_run(use: str) -> dict[str, Any]:
    return {"type": "tool_result", "tool_use_id": use, "content": NOT_RUN, "is_error": True}


def _append(merged: list[dict[str, Any]], role: str, blocks: list[dict[str, Any]]) -> None:
    if merged and merged[-1]["role"] == role:
        content = merged[-1]["content"] + blocks
        if role == "user":  # tool results lead a user message
            results = [b for b in content if b.get("type") == "tool_result"]
            content = results + [b for b in content if b.get("type") != "tool_result"]
        merged[-1]["content"] = content
    else:
        merged.append({"role": role, "content": blocks})
