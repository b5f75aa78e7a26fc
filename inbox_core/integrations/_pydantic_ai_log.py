"""The records of ``PydanticAIHost`` (specs/shell.md section 11): one model message each, in
the JSON form pydantic-ai serializes to, made to fit the log whatever the message holds;
and ``model_messages``, the history a log's records fold to (R30).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable
from typing import Any, Final

from pydantic_ai.messages import (
    ModelMessage,
    ModelMessagesTypeAdapter,
    ModelResponse,
    TextPart,
    UserPromptPart,
)

from inbox_core import limits
from inbox_core.errors import InvalidInput
from inbox_core.events import DurableEvent, HostRecord
from inbox_core.history import TranscriptBlock
from inbox_core.integrations._model_host import (
    RECORD_BUDGET,
    describe,
    fitted,
    host_records,
    value_text,
)
from inbox_core.json_values import json_size, thaw_json

REQUEST: Final = "host/pydantic-ai/request"
"""A ``ModelRequest``: the messages a step admitted, or the returns of a step's tool calls."""
RESPONSE: Final = "host/pydantic-ai/response"
"""A ``ModelResponse``: the model's reply (``state="interrupted"`` when cut short)."""
SUMMARY: Final = "host/pydantic-ai/summary"
"""A ``ModelRequest`` holding one ``CompactionPart``: it replaces the history before it."""


def stored(record_type: str, message: ModelMessage) -> tuple[HostRecord, ModelMessage]:
    """The record of ``message`` and the message it holds (what ``restore`` rebuilds).

    A message the log can hold is recorded as pydantic-ai serializes it. One it cannot
    (a lone surrogate, an integer past int64, nesting past ``MAX_DEPTH``, more than
    ``RECORD_BUDGET``: a tool may return any of these, pydantic-ai sends them) is recorded
    as ``fit_json`` represents it: what fits kept, the rest as text, cut with a marker. A
    message even that cannot represent becomes one text part saying so.
    """
    try:
        data = limits.parse_json(ModelMessagesTypeAdapter.dump_json([message]).decode())[0]
        record = HostRecord(record_type, data)
        if json_size(record.data) <= RECORD_BUDGET:
            return record, _message(record)
    except Exception:  # pydantic's errors, InvalidInput, a value's own: not as it is
        pass
    try:
        return _fitted(record_type, message)
    except Exception as error:
        return _fitted(record_type, _placeholder(message, error))


def _fitted(record_type: str, message: ModelMessage) -> tuple[HostRecord, ModelMessage]:
    """``message``'s record as ``fit_json`` represents it (each part's fields are units)."""
    record = fitted(record_type, _plain(message), unit_depth=3)
    return record, _message(record)


def _plain(message: ModelMessage) -> Any:
    """``message`` in pydantic-ai's JSON form as Python values (which keep surrogates and
    large integers); a part pydantic cannot serialize has its open fields as text."""
    try:
        return ModelMessagesTypeAdapter.dump_python([message], mode="json")[0]
    except Exception:  # whatever a tool's value raises while pydantic serializes it
        parts = [_serializable(message, part) for part in message.parts]
        fixed = dataclasses.replace(message, parts=parts)  # type: ignore[arg-type]
        return ModelMessagesTypeAdapter.dump_python([fixed], mode="json")[0]


def _serializable(message: ModelMessage, part: Any) -> Any:
    alone = dataclasses.replace(message, parts=[part])  # type: ignore[arg-type]
    try:
        ModelMessagesTypeAdapter.dump_python([alone], mode="json")
        return part
    except Exception:  # a part pydantic cannot serialize: its open fields as text
        fields = {
            name: value_text(getattr(part, name))
            for name in ("content", "args", "metadata")
            if getattr(part, name, None) is not None
        }
        return dataclasses.replace(part, **fields)


def _placeholder(message: ModelMessage, error: BaseException) -> ModelMessage:
    """The last resort of ``stored``: the message with one text part saying why."""
    note = f"[this {message.kind} could not be recorded: {describe(error, 1000)}]"
    if isinstance(message, ModelResponse):
        return dataclasses.replace(message, parts=[TextPart(note)], provider_details=None)
    return dataclasses.replace(message, parts=[UserPromptPart(note)])


def _message(record: HostRecord) -> ModelMessage:
    try:
        (message,) = ModelMessagesTypeAdapter.validate_json(json.dumps([thaw_json(record.data)]))
    except ValueError as error:  # pydantic's ValidationError is a ValueError
        raise InvalidInput(f"{record.type} does not hold a pydantic-ai message: {error}") from error
    expected = "response" if record.type == RESPONSE else "request"
    if message.kind != expected:
        raise InvalidInput(f"{record.type} holds a model {message.kind}, not a {expected}")
    return message


def model_messages(blocks: Iterable[TranscriptBlock]) -> list[ModelMessage]:
    """The model history a log holds: ``model_messages(transcript(log.read()))`` (R30).

    Every ``host/pydantic-ai/request`` and ``.../response`` record in log order,
    from the latest ``.../summary`` on (a summary replaces what came before it).
    Other host records are left out. A record of these types that does not hold
    a pydantic-ai message of its kind raises ``InvalidInput``.
    """
    return records_history(host_records(blocks))


def records_history(records: Iterable[DurableEvent]) -> list[ModelMessage]:
    """``model_messages`` of a log's events in log order (its host records; any other
    event is passed over): what a tail from the newest summary on is enough for."""
    history: list[ModelMessage] = []
    for record in records:
        if not isinstance(record, HostRecord):
            continue
        if record.type in (REQUEST, RESPONSE):
            history.append(_message(record))
        elif record.type == SUMMARY:
            history = [_message(record)]
    return history
