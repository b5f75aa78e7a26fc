"""The agent's voice (R43): what a step says, as values, live messages and JSON.

A step's reply is one host record, ``host/output`` (``OUTPUT_RECORD``), whose data
is an ``Output``: its parts (``TextPart``, ``ReasoningPart``, ``ToolCallPart``,
``ToolResultPart``), and optionally the model, its ``Usage`` and when the step
started and ended (RFC 3339). While the step runs the host publishes it as live
messages (``OutputMessage``: ``TextDelta``, ``ReasoningDelta``, ``ToolCallStart``,
``ToolCallDelta``, ``ToolCallEnd``, ``ToolResult``), each naming its turn, step and
the index of the part it builds; ``apply_output`` folds them, so a watcher's view
(an ``OutputSnapshot``, the fold so far) ends equal to the ``host/output`` parts.

The forms are specs/formats.md's "The agent's voice", stated once as the tables
below (``inbox_core.wire``), which encode, decode (D40: a shape error is a
``DecodeError``, a value rule's the value's own error) and give the JSON Schemas of
``specs/schema`` (``output``, ``output-message``, ``output-snapshot``).

A step's output is bounded (``limits.MAX_OUTPUT_PARTS``, ``MAX_OUTPUT_SIZE``), so its
record always fits the step's report: an ``Output`` past them is ``InvalidInput``,
and a publisher asks ``fitted`` what of a message still fits; past the bounds the
text that fits is kept and one marker part (``MARKER``) ends the output. Nothing
here does I/O or keeps time: the shell (``inbox_core.shell.output``) does.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, ClassVar, Final, Literal, TypeAlias, get_args

import attrs

from inbox_core import limits
from inbox_core.errors import InboxCoreError, InvalidInput, shown
from inbox_core.events import HostRecord
from inbox_core.json_values import freeze_json, thaw_json
from inbox_core.validators import identifier, instance_of, integer, strict_bool, text, trusted
from inbox_core.wire import Array, Bool, Field, Int, Record, Str, Tagged

__all__ = [
    "MARKER",
    "OUTPUT_RECORD",
    "PART_RESERVE",
    "RECORD_SIZE",
    "Output",
    "OutputMessage",
    "OutputPart",
    "OutputSnapshot",
    "ReasoningDelta",
    "ReasoningPart",
    "TextDelta",
    "TextPart",
    "ToolCallDelta",
    "ToolCallEnd",
    "ToolCallPart",
    "ToolCallStart",
    "ToolResult",
    "ToolResultPart",
    "Usage",
    "appended",
    "apply_output",
    "check_message",
    "fitted",
    "fold_output",
    "output_from_json",
    "output_message_from_json",
    "output_message_to_json",
    "output_record",
    "output_size",
    "output_to_json",
    "read_output",
    "snapshot_from_json",
    "snapshot_to_json",
]

OUTPUT_RECORD: Final = "host/output"
"""The type of a step's reply record (R43)."""

# ----------------------------------------------------------------------- parts


@attrs.frozen
class TextPart:
    """What the model said to the user."""

    type: ClassVar[Literal["text"]] = "text"
    text: str = attrs.field(validator=text)


@attrs.frozen
class ReasoningPart:
    """What the model thought aloud (a reasoning or thinking block, as the provider shows it)."""

    type: ClassVar[Literal["reasoning"]] = "reasoning"
    text: str = attrs.field(validator=text)


@attrs.frozen
class ToolCallPart:
    """A tool call: ``arguments`` is the arguments' JSON text (partial, or empty, while it
    streams; the core never parses it)."""

    type: ClassVar[Literal["tool-call"]] = "tool-call"
    id: str = attrs.field(validator=identifier)
    name: str = attrs.field(validator=identifier)
    arguments: str = attrs.field(default="", validator=text)


@attrs.frozen
class ToolResultPart:
    """What a tool call returned, as text (``is_error``: it failed)."""

    type: ClassVar[Literal["tool-result"]] = "tool-result"
    id: str = attrs.field(validator=identifier)
    content: str = attrs.field(validator=text)
    is_error: bool = attrs.field(default=False, validator=strict_bool)


OutputPart: TypeAlias = TextPart | ReasoningPart | ToolCallPart | ToolResultPart
PART_TYPES: Final[tuple[type[OutputPart], ...]] = get_args(OutputPart)

PART_RESERVE: Final = 64
"""What a part's size counts besides its strings: its keys and tags (``{"type":
"tool-result", "id", "content", "isError": false}`` and a comma is 61), so the parts'
JSON text measures at most their size (``limits``' measure)."""


def part_size(part: OutputPart) -> int:
    """A part's size: ``PART_RESERVE`` and the characters of its strings."""
    if isinstance(part, TextPart | ReasoningPart):
        return PART_RESERVE + len(part.text)
    if isinstance(part, ToolCallPart):
        return PART_RESERVE + len(part.id) + len(part.name) + len(part.arguments)
    return PART_RESERVE + len(part.id) + len(part.content)


def output_size(parts: Iterable[OutputPart]) -> int:
    """The size of a step's output (``limits.MAX_OUTPUT_SIZE`` bounds it)."""
    return sum(part_size(part) for part in parts)


def _parts(value: object) -> tuple[OutputPart, ...]:
    """A sequence of parts as a tuple, within ``limits.MAX_OUTPUT_PARTS`` and ``_SIZE``."""
    if isinstance(value, str | bytes | Mapping) or not isinstance(value, Sequence):
        raise InvalidInput(f"parts are a sequence of output parts, got {shown(value)}")
    parts = tuple(value)
    if len(parts) > limits.MAX_OUTPUT_PARTS:
        raise InvalidInput(
            f"an output has at most {limits.MAX_OUTPUT_PARTS} parts, got {len(parts)}"
        )
    for part in parts:
        if not isinstance(part, PART_TYPES):
            raise InvalidInput(
                f"an output part is a text, reasoning, tool-call or tool-result "
                f"part, got {shown(part)}"
            )
    size = output_size(parts)
    if size > limits.MAX_OUTPUT_SIZE:
        raise InvalidInput(f"an output has a size of at most {limits.MAX_OUTPUT_SIZE}, got {size}")
    return parts


# ---------------------------------------------------------------------- output

_RFC3339: Final = re.compile(
    r"\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])[Tt]([01]\d|2[0-3]):[0-5]\d:([0-5]\d|60)"
    r"(\.\d{1,9})?([Zz]|[+-]([01]\d|2[0-3]):[0-5]\d)"
)
TIME_LENGTH: Final = 35
"""The longest RFC 3339 time an output holds (nine fraction digits and an offset)."""


def _time(_inst: object, attribute: attrs.Attribute[Any], value: object) -> None:
    """None, or an RFC 3339 date and time (``2026-12-06T10:00:00.250Z``)."""
    if value is None:
        return
    if not isinstance(value, str) or _RFC3339.fullmatch(value) is None:
        raise InvalidInput(f"{attribute.name} must be an RFC 3339 date-time, got {shown(value)}")


def _optional_identifier(inst: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if value is not None:
        identifier(inst, attribute, value)


def _optional_usage(inst: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if value is not None:
        instance_of(Usage, what="a Usage")(inst, attribute, value)


@attrs.frozen
class Usage:
    """What a model call cost in tokens."""

    input_tokens: int = attrs.field(validator=integer(0))
    output_tokens: int = attrs.field(validator=integer(0))


@attrs.frozen
class Output:
    """A step's reply (R43): the data of its ``host/output`` record.

    ``parts`` in order (at most ``limits.MAX_OUTPUT_PARTS``, of a size of at most
    ``limits.MAX_OUTPUT_SIZE``); ``model`` the model's name, ``usage`` its tokens,
    ``started_at`` and ``ended_at`` the step's times (RFC 3339), each None when unknown.
    """

    parts: tuple[OutputPart, ...] = attrs.field(converter=_parts)
    model: str | None = attrs.field(default=None, validator=_optional_identifier)
    usage: Usage | None = attrs.field(default=None, validator=_optional_usage)
    started_at: str | None = attrs.field(default=None, validator=_time)
    ended_at: str | None = attrs.field(default=None, validator=_time)


RECORD_SIZE: Final = limits.MAX_OUTPUT_SIZE + 2**12
"""The most a ``host/output`` record measures in a report (``events.records_size``): its
parts' size, then its keys, model, usage and times; a host keeping its own records beside
it leaves this much of ``limits.MAX_VALUE_SIZE`` free."""

# --------------------------------------------------------------- live messages


@attrs.frozen
class TextDelta:
    """Text for part ``part``: it opens that part when ``part`` is the next index."""

    kind: ClassVar[Literal["text-delta"]] = "text-delta"
    turn: int = attrs.field(validator=integer(1))
    step: int = attrs.field(validator=integer(1))
    part: int = attrs.field(validator=integer(0))
    text: str = attrs.field(validator=text)


@attrs.frozen
class ReasoningDelta:
    """Reasoning text for part ``part``: it opens that part when ``part`` is the next index."""

    kind: ClassVar[Literal["reasoning-delta"]] = "reasoning-delta"
    turn: int = attrs.field(validator=integer(1))
    step: int = attrs.field(validator=integer(1))
    part: int = attrs.field(validator=integer(0))
    text: str = attrs.field(validator=text)


@attrs.frozen
class ToolCallStart:
    """A tool call starts as the next part (its arguments follow as deltas)."""

    kind: ClassVar[Literal["tool-call-start"]] = "tool-call-start"
    turn: int = attrs.field(validator=integer(1))
    step: int = attrs.field(validator=integer(1))
    part: int = attrs.field(validator=integer(0))
    id: str = attrs.field(validator=identifier)
    name: str = attrs.field(validator=identifier)


@attrs.frozen
class ToolCallDelta:
    """More of tool call ``id``'s arguments (JSON text), for its part ``part``."""

    kind: ClassVar[Literal["tool-call-delta"]] = "tool-call-delta"
    turn: int = attrs.field(validator=integer(1))
    step: int = attrs.field(validator=integer(1))
    part: int = attrs.field(validator=integer(0))
    id: str = attrs.field(validator=identifier)
    arguments: str = attrs.field(validator=text)


@attrs.frozen
class ToolCallEnd:
    """Tool call ``id`` (part ``part``) is whole: no more arguments follow."""

    kind: ClassVar[Literal["tool-call-end"]] = "tool-call-end"
    turn: int = attrs.field(validator=integer(1))
    step: int = attrs.field(validator=integer(1))
    part: int = attrs.field(validator=integer(0))
    id: str = attrs.field(validator=identifier)


@attrs.frozen
class ToolResult:
    """What tool call ``id`` returned, as the next part."""

    kind: ClassVar[Literal["tool-result"]] = "tool-result"
    turn: int = attrs.field(validator=integer(1))
    step: int = attrs.field(validator=integer(1))
    part: int = attrs.field(validator=integer(0))
    id: str = attrs.field(validator=identifier)
    content: str = attrs.field(validator=text)
    is_error: bool = attrs.field(default=False, validator=strict_bool)


OutputMessage: TypeAlias = (
    TextDelta | ReasoningDelta | ToolCallStart | ToolCallDelta | ToolCallEnd | ToolResult
)
MESSAGE_TYPES: Final[tuple[type[OutputMessage], ...]] = get_args(OutputMessage)


@attrs.frozen
class OutputSnapshot:
    """The output of step ``step`` of turn ``turn`` so far: the fold of its messages."""

    turn: int = attrs.field(validator=integer(1))
    step: int = attrs.field(validator=integer(1))
    parts: tuple[OutputPart, ...] = attrs.field(converter=_parts)


# ------------------------------------------------------------------- the fold

_PART_OF: Final[Mapping[type, type]] = {
    TextDelta: TextPart,
    ReasoningDelta: ReasoningPart,
    ToolCallDelta: ToolCallPart,
    ToolCallEnd: ToolCallPart,
}
"""The type of part a message that does not open one continues."""


def check_message(
    parts: Sequence[OutputPart], message: OutputMessage, ended: Iterable[str] = ()
) -> bool:
    """Whether ``message`` opens a new part after ``parts`` (else it continues one), or
    ``InvalidInput`` when it does not fit them: a part index that is neither the next one
    nor an existing part of its type (a tool call's of its id), a tool call started twice
    in one step, or (``ended``: the ids of the tool calls that ended) a delta or an end
    to a tool call that ended."""
    if not isinstance(message, MESSAGE_TYPES):
        raise InvalidInput(f"not an output message: {shown(message)}")
    index, count = message.part, len(parts)
    if index == count and not isinstance(message, ToolCallDelta | ToolCallEnd):
        if isinstance(message, ToolCallStart) and any(
            isinstance(part, ToolCallPart) and part.id == message.id for part in parts
        ):
            raise InvalidInput(f"tool call {shown(message.id)} started twice in one step")
        return True
    if index >= count:
        raise InvalidInput(f"{message.kind} names part {index}; the output has {count} so far")
    part = parts[index]
    expected = _PART_OF.get(type(message))
    if expected is None:
        raise InvalidInput(f"{message.kind} opens the next part ({count}), not part {index}")
    if not isinstance(part, expected):
        raise InvalidInput(f"{message.kind} does not fit part {index}, a {part.type} part")
    if isinstance(message, ToolCallDelta | ToolCallEnd):
        assert isinstance(part, ToolCallPart)
        if part.id != message.id:
            raise InvalidInput(
                f"part {index} is tool call {shown(part.id)}, not {shown(message.id)}"
            )
        if message.id in ended:
            raise InvalidInput(f"tool call {shown(message.id)} ended")
    return False


_TEXT_PART: Final = trusted(TextPart)
_REASONING_PART: Final = trusted(ReasoningPart)
_TOOL_CALL_PART: Final = trusted(ToolCallPart)
_TOOL_RESULT_PART: Final = trusted(ToolResultPart)
# a message's fields passed the same checks as the part's (D31): built without them again


def opened(message: OutputMessage) -> OutputPart:
    """The part a message that opens one opens."""
    if isinstance(message, TextDelta):
        return _TEXT_PART(message.text)
    if isinstance(message, ReasoningDelta):
        return _REASONING_PART(message.text)
    if isinstance(message, ToolCallStart):
        return _TOOL_CALL_PART(message.id, message.name, "")
    assert isinstance(message, ToolResult), message
    return _TOOL_RESULT_PART(message.id, message.content, message.is_error)


def delta(message: OutputMessage) -> str:
    """The text a message that continues a part adds to it ("" for a tool call's end)."""
    if isinstance(message, TextDelta | ReasoningDelta):
        return message.text
    if isinstance(message, ToolCallDelta):
        return message.arguments
    return ""


def appended(part: OutputPart, more: str) -> OutputPart:
    """``part`` with ``more`` (checked text) at the end of its text (a tool call: of its
    arguments); ``InvalidInput`` past ``limits.MAX_JSON_SIZE`` characters. Joining strings
    of scalar values makes one (D31: built without checking it again)."""
    if not more:
        return part
    if isinstance(part, ToolCallPart):
        joined = part.arguments + more
        _check_length(joined)
        return _TOOL_CALL_PART(part.id, part.name, joined)
    assert isinstance(part, TextPart | ReasoningPart), part
    joined = part.text + more
    _check_length(joined)
    return (_TEXT_PART if isinstance(part, TextPart) else _REASONING_PART)(joined)


def _check_length(text: str) -> None:
    if len(text) > limits.MAX_JSON_SIZE:
        raise InvalidInput(f"a part's text has at most {limits.MAX_JSON_SIZE} characters")


def apply_output(parts: Sequence[OutputPart], message: OutputMessage) -> tuple[OutputPart, ...]:
    """``parts`` after ``message`` (a new tuple), or ``InvalidInput`` when it does not fit
    them (``check_message``). Whether a tool call ended is no part's (the ``host/output``
    form has no place for it): ``fold_output`` and a publisher refuse a delta after an end."""
    if check_message(parts, message):
        return (*parts, opened(message))
    index = message.part
    return (*parts[:index], appended(parts[index], delta(message)), *parts[index + 1 :])


def fold_output(messages: Iterable[OutputMessage]) -> tuple[OutputPart, ...]:
    """The parts a step's messages build, from none (what every watcher ends with), or
    ``InvalidInput`` at the first that does not fit, a delta after its tool call's end too."""
    parts: tuple[OutputPart, ...] = ()
    ended: set[str] = set()
    for message in messages:
        check_message(parts, message, ended)
        parts = apply_output(parts, message)
        if isinstance(message, ToolCallEnd):
            ended.add(message.id)
    return parts


# ------------------------------------------------------------------ the limits

MARKER: Final = "… [cut: this step said more than one step's output holds]"
"""The text of the part that ends an output cut at its limits."""
MARKER_SIZE: Final = PART_RESERVE + len(MARKER)
CONTENT_PARTS: Final = limits.MAX_OUTPUT_PARTS - 1
"""Parts a step's output may hold before its marker (which always has room)."""
CONTENT_SIZE: Final = limits.MAX_OUTPUT_SIZE - MARKER_SIZE


def _growth(message: OutputMessage, opens: bool) -> int:
    """How much ``message`` adds to an output's size (``part_size`` of what it opens)."""
    if not opens:
        return len(delta(message))
    if isinstance(message, TextDelta | ReasoningDelta):
        return PART_RESERVE + len(message.text)
    if isinstance(message, ToolCallStart):
        return PART_RESERVE + len(message.id) + len(message.name)
    assert isinstance(message, ToolResult), message
    return PART_RESERVE + len(message.id) + len(message.content)


def _shortened(message: OutputMessage, room: int, opens: bool) -> OutputMessage | None:
    """``message`` cut to add at most ``room`` to an output's size, or None when nothing of
    it can be kept (a tool call's start is whole or nothing; a part opens with some text)."""
    if isinstance(message, ToolResult):
        keep = room - PART_RESERVE - len(message.id)
        return None if keep < 0 else attrs.evolve(message, content=message.content[:keep])
    keep = room - PART_RESERVE if opens else room
    if keep <= 0 or isinstance(message, ToolCallStart):
        return None
    if isinstance(message, ToolCallDelta):
        return attrs.evolve(message, arguments=message.arguments[:keep])
    assert isinstance(message, TextDelta | ReasoningDelta), message
    return attrs.evolve(message, text=message.text[:keep])


def fitted(message: OutputMessage, size: int, count: int) -> tuple[tuple[OutputMessage, ...], bool]:
    """What of ``message``, which fits an output of ``count`` parts and size ``size`` (both
    within the bounds a publisher keeps), stays within the limits: ``((message,), False)``
    when it all does; else ``(kept, True)``, the output cut: what fits of it (if anything)
    and then the marker part (``MARKER``), after which the output takes nothing more."""
    opens = message.part == count
    room = not opens or count < CONTENT_PARTS  # a part to open has room before the marker's
    if room and _growth(message, opens) <= CONTENT_SIZE - size:
        return (message,), False
    kept = _shortened(message, CONTENT_SIZE - size, opens) if room else None
    index = count + 1 if kept is not None and opens else count
    marker = TextDelta(message.turn, message.step, index, MARKER)
    return ((marker,) if kept is None else (kept, marker)), True


# ---------------------------------------------------------------------- JSON

ID: Final = Str(min_length=1, max_length=limits.MAX_ID_LENGTH)
TEXT: Final = Str()
TIME: Final = Str(max_length=TIME_LENGTH)
PART: Final = Tagged[OutputPart](
    "outputPart",
    "output part",
    "type",
    OutputPart,
    {
        TextPart: (Field("text", TEXT),),
        ReasoningPart: (Field("text", TEXT),),
        ToolCallPart: (Field("id", ID), Field("name", ID), Field("arguments", TEXT)),
        ToolResultPart: (Field("id", ID), Field("content", TEXT), Field("is_error", Bool())),
    },
)
PARTS: Final = Array(PART)
USAGE: Final = Record(
    "usage", Usage, (Field("input_tokens", Int(0)), Field("output_tokens", Int(0)))
)
OUTPUT: Final = Record(
    "output",
    Output,
    (
        Field("parts", PARTS),
        Field("model", ID, optional=True),
        Field("usage", USAGE, optional=True),
        Field("started_at", TIME, optional=True),
        Field("ended_at", TIME, optional=True),
    ),
)
WHERE: Final = (Field("turn", Int(1)), Field("step", Int(1)), Field("part", Int(0)))
MESSAGE: Final = Tagged[OutputMessage](
    "outputMessage",
    "output message",
    "kind",
    OutputMessage,
    {
        TextDelta: (*WHERE, Field("text", TEXT)),
        ReasoningDelta: (*WHERE, Field("text", TEXT)),
        ToolCallStart: (*WHERE, Field("id", ID), Field("name", ID)),
        ToolCallDelta: (*WHERE, Field("id", ID), Field("arguments", TEXT)),
        ToolCallEnd: (*WHERE, Field("id", ID)),
        ToolResult: (*WHERE, Field("id", ID), Field("content", TEXT), Field("is_error", Bool())),
    },
)
SNAPSHOT: Final = Record(
    "outputSnapshot",
    OutputSnapshot,
    (Field("turn", Int(1)), Field("step", Int(1)), Field("parts", PARTS)),
)


def output_to_json(output: Output) -> dict[str, Any]:
    """``{"parts": [...], "model"?, "usage"?: {"inputTokens", "outputTokens"}, "startedAt"?,
    "endedAt"?}``: the data of a ``host/output`` record."""
    if not isinstance(output, Output):
        raise InvalidInput(f"not an Output: {shown(output)}")
    return OUTPUT.encode(output)


def output_from_json(data: object) -> Output:
    """The ``Output`` a document holds: ``DecodeError`` for one of another shape, the value's
    error (``InvalidInput``) for a value rule it breaks (D40)."""
    return OUTPUT.decode(data, "output")


def output_message_to_json(message: OutputMessage) -> dict[str, Any]:
    """``{"kind", "turn", "step", "part", ...}`` (the kind's own fields)."""
    return MESSAGE.encode(message)


def output_message_from_json(data: object) -> OutputMessage:
    """The message a document holds (D40, as ``output_from_json``); an unknown kind is a
    ``DecodeError``."""
    return MESSAGE.decode(data, "output message")


def snapshot_to_json(snapshot: OutputSnapshot) -> dict[str, Any]:
    """``{"turn", "step", "parts"}``."""
    if not isinstance(snapshot, OutputSnapshot):
        raise InvalidInput(f"not an OutputSnapshot: {shown(snapshot)}")
    return SNAPSHOT.encode(snapshot)


def snapshot_from_json(data: object) -> OutputSnapshot:
    """The snapshot a document holds (D40, as ``output_from_json``)."""
    return SNAPSHOT.decode(data, "output snapshot")


def output_record(output: Output) -> HostRecord:
    """The ``host/output`` record of a step's reply."""
    return _HOST_RECORD(OUTPUT_RECORD, freeze_json(output_to_json(output)))


_HOST_RECORD: Final = trusted(HostRecord)  # its type is ours, its data frozen (and checked)


def read_output(record: object) -> Output | None:
    """The ``Output`` of a well-formed ``host/output`` record, else None (any other event,
    record or data: a log holds whatever JSON a host wrote, and a reader never fails on
    it)."""
    if not isinstance(record, HostRecord) or record.type != OUTPUT_RECORD:
        return None
    try:
        return output_from_json(thaw_json(record.data))
    except InboxCoreError:
        return None
