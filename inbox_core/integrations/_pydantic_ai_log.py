"""The records of ``PydanticAIHost`` (specs/shell.md section 11): one model message each, in
the JSON form pydantic-ai serializes to, made to fit the log whatever the message holds;
and ``model_messages``, the history a log's records fold to (R30).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, Final

from pydantic_ai.messages import (
    ModelMessage,
    ModelMessagesTypeAdapter,
    ModelResponse,
    TextPart,
    UserPromptPart,
)
from pydantic_core import to_json, to_jsonable_python

from inbox_core import limits, output
from inbox_core.errors import InvalidInput
from inbox_core.events import DurableEvent, HostRecord
from inbox_core.history import RecordsTranscript, TranscriptBlock, TurnTranscript
from inbox_core.integrations._fit import escaped, fit_json
from inbox_core.json_values import json_size, thaw_json

REQUEST: Final = "host/pydantic-ai/request"
"""A ``ModelRequest``: the messages a step admitted, or the returns of a step's tool calls."""
RESPONSE: Final = "host/pydantic-ai/response"
"""A ``ModelResponse``: the model's reply (``state="interrupted"`` when cut short)."""
SUMMARY: Final = "host/pydantic-ai/summary"
"""A ``ModelRequest`` holding one ``CompactionPart``: it replaces the history before it."""


def describe(error: BaseException, limit: int = limits.MAX_JSON_SIZE) -> str:
    """``"<class>: <text>"`` made storable (``limits.storable_text``: lone surrogates escaped,
    cut to ``limit`` characters), never raising (an exception's ``__str__`` may)."""
    name = type(error).__name__
    try:
        text = str(error)
    except BaseException:  # a __str__ may raise anything, SystemExit included
        text = ""
    return limits.storable_text(f"{name}: {text}" if text else name, limit)


RECORD_SIZE: Final = (limits.MAX_VALUE_SIZE - output.RECORD_SIZE) // 2 - 2**10
"""The most a record's data may measure (``limits``): two records, a step's reply and its
tool returns, fit one report (``MAX_VALUE_SIZE``) beside the step's ``host/output`` (R43)."""


def stored(record_type: str, message: ModelMessage) -> tuple[HostRecord, ModelMessage]:
    """The record of ``message`` and the message it holds (what ``restore`` rebuilds).

    A message the log can hold is recorded as pydantic-ai serializes it. One it cannot
    (a lone surrogate, an integer past int64, nesting past ``MAX_DEPTH``, more than
    ``RECORD_SIZE``: a tool may return any of these, pydantic-ai sends them) is recorded
    as ``fit_json`` represents it: what fits kept, the rest as text, cut with a marker. A
    message even that cannot represent becomes one text part saying so.
    """
    try:
        data = limits.parse_json(ModelMessagesTypeAdapter.dump_json([message]).decode())[0]
        record = HostRecord(record_type, data)
        if json_size(record.data) <= RECORD_SIZE:
            return record, _message(record)
    except Exception:  # pydantic's errors, InvalidInput, a value's own: not as it is
        pass
    try:
        return _fitted(record_type, message)
    except Exception as error:
        return _fitted(record_type, _placeholder(message, error))


def _fitted(record_type: str, message: ModelMessage) -> tuple[HostRecord, ModelMessage]:
    """``message``'s record as ``fit_json`` represents it (each part's fields are units)."""
    record = HostRecord(record_type, fit_json(_plain(message), RECORD_SIZE, unit_depth=3))
    if json_size(record.data) > RECORD_SIZE:  # a guard: fit_json measures as json_size does
        raise InvalidInput(f"a fitted {record_type} record exceeds {RECORD_SIZE}")
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


def value_text(value: Any) -> str:
    """A Python value as the JSON text pydantic-ai would send it as (surrogates escaped),
    or, when nothing can serialize it, a text naming its type. Never raises: the value's
    own methods (``__repr__``, a serializer) may, and each attempt stands alone."""
    if isinstance(value, str):
        return escaped(value)
    attempts: tuple[Callable[[], str], ...] = (
        lambda: to_json(value, fallback=_shown).decode(),  # big integers, any type
        lambda: limits.dump_json(to_jsonable_python(value, fallback=_shown)),  # surrogates
        lambda: limits.dump_json(value),  # plain values nested deeper than pydantic goes
    )
    failure: Exception | None = None
    for attempt in attempts:
        try:
            return escaped(attempt())
        except Exception as error:
            failure = error
    assert failure is not None
    return f"[a {type(value).__name__} no JSON can hold: {describe(failure, 200)}]"


def _shown(value: Any) -> str:
    """``repr(value)``, or its type's name when that raises."""
    try:
        return repr(value)
    except Exception:
        return f"<{type(value).__name__}>"


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


def _host_records(blocks: Iterable[TranscriptBlock]) -> Iterator[HostRecord]:
    """The host records of a transcript, in log order."""
    for block in blocks:
        if isinstance(block, RecordsTranscript):
            yield from block.records
            continue
        assert isinstance(block, TurnTranscript)
        for item in block.items:
            if isinstance(item, HostRecord):
                yield item
            else:
                yield from (entry for entry in item.items if isinstance(entry, HostRecord))


def model_messages(blocks: Iterable[TranscriptBlock]) -> list[ModelMessage]:
    """The model history a log holds: ``model_messages(transcript(log.read()))`` (R30).

    Every ``host/pydantic-ai/request`` and ``.../response`` record in log order,
    from the latest ``.../summary`` on (a summary replaces what came before it).
    Other host records are left out. A record of these types that does not hold
    a pydantic-ai message of its kind raises ``InvalidInput``.
    """
    return records_history(_host_records(blocks))


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


def summarized(events: Sequence[DurableEvent]) -> bool:
    """Whether ``events`` hold a summary record (what ends a backwards read of a log)."""
    return any(isinstance(event, HostRecord) and event.type == SUMMARY for event in events)
