"""Hostile input (issue 17): what a value accepts every store and reader takes back, and
what it refuses is a typed error with nothing changed (D17, R26, I11, ``limits``).

The properties draw from ``inbox_core.testing.hostile``: storable values (odd strings,
int64 bounds, nesting at the limit) must round-trip through every codec and store;
hostile ones (too deep, huge integers, lone surrogates, non-JSON) must be refused by
every constructor with ``InvalidInput``; forged or damaged documents must be refused by
every reader with a typed error (``CorruptLog`` naming the seq), never a traceback,
also when the reader runs deep in its caller's stack.
"""

from __future__ import annotations

import functools
import itertools
import json
import sqlite3
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from inbox_core import (
    AgentSource,
    AgentState,
    AwaitPreStep,
    Clear,
    Completed,
    EndMaintenance,
    Enter,
    Entry,
    ExpectTurn,
    ExtensionSource,
    GoalSource,
    HookCause,
    HostRecord,
    Inbox,
    InboxCoreError,
    InvalidInput,
    InvalidSplice,
    NextTurnInput,
    PluginSource,
    PreStepDecided,
    PreStepFailed,
    Reject,
    Replace,
    ReplayError,
    Send,
    SnapshotSection,
    Splice,
    SteerInput,
    StepFinished,
    ToolSource,
    TurnStarted,
    UserMessage,
    UserSource,
    create_user_message,
    fates,
    followup,
    goal_rounds,
    is_human_prompt,
    json_text,
    limits,
    reduce,
    replay,
    transcript,
)
from inbox_core.codec import (
    command_from_json,
    command_to_json,
    event_from_json,
    event_to_json,
    message_from_json,
    message_to_json,
    notification_to_json,
)
from inbox_core.json_values import JsonObject, freeze_json, json_size, thaw_json
from inbox_core.shell import SqliteLog
from inbox_core.shell.stores.errors import CorruptLog
from inbox_core.shell.stores.jsonl import from_json_lines, iter_json_lines, to_json_lines
from inbox_core.shell.stores.rows import decode_record, encode_event
from inbox_core.testing import hostile
from inbox_core.testing.strategies import commands
from tests.core.helpers import queue

AGENT_NUMBERS = itertools.count()
HOSTILE = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def in_deep_stack(depth: int, call: Callable[[], Any]) -> Any:
    """Run ``call`` ``depth`` frames below this one (a reader inside a deep host stack)."""
    if depth <= 0:
        return call()
    return in_deep_stack(depth - 1, call)


def typed_error(call: Callable[[], object]) -> InboxCoreError | None:
    """The typed error ``call`` raises, or None; any other exception propagates (a bug)."""
    try:
        call()
    except InboxCoreError as error:
        return error
    return None


def stack_depth() -> int:
    frame, depth = sys._getframe(), 0
    while frame is not None:
        frame, depth = frame.f_back, depth + 1  # type: ignore[assignment]
    return depth


# Every place where a caller's opaque JSON goes in, as a constructor of one argument.
OPAQUE_SLOTS: dict[str, Callable[[Any], object]] = {
    "content block": lambda value: create_user_message([{"type": "x", "v": value}]),
    "metadata": lambda value: create_user_message("hi", metadata={"m": value}),
    "host record data": lambda value: HostRecord("host/x", value),
    "extension fields": lambda value: ExtensionSource("x-host", {"f": value}),
}

# Every str field, as a constructor of one argument.
TEXT_SLOTS: dict[str, Callable[[str], object]] = {
    "message id": lambda text: UserMessage(text or "x", "hi"),
    "text": create_user_message,
    "plugin": lambda text: PluginSource(text or "x"),
    "section": lambda text: SnapshotSection("s", text),
    "notice": lambda text: PluginSource("p", "notice", summary=text.replace("\n", "")[:10]),
    "hook reason": HookCause,
    "record type": lambda text: HostRecord("host/" + text),
    "record key": lambda text: HostRecord("host/x", {text: 1}),
    "extension kind": lambda text: ExtensionSource("x-" + text),
    "agent id": lambda text: AgentSource(text or "x", 1),  # R2 v5
}


# ------------------------------------------------------------ refused when built


@HOSTILE
@given(slot=st.sampled_from(sorted(OPAQUE_SLOTS)), value=hostile.hostile_json())
def test_hostile_json_is_refused_where_values_are_built(slot: str, value: hostile.Hostile) -> None:
    """D17, issue 17 (items 1, 6, 7, 8): too deep, an integer past int64, a lone surrogate,
    a non-finite float, a non-str key or a non-JSON object anywhere in an opaque value is
    InvalidInput at construction, never RecursionError, ValueError or TypeError."""
    with pytest.raises(InvalidInput):
        OPAQUE_SLOTS[slot](value.value)


@HOSTILE
@given(slot=st.sampled_from(sorted(TEXT_SLOTS)), text=hostile.hostile_strings())
def test_lone_surrogates_are_refused_in_every_string_field(slot: str, text: str) -> None:
    """Issue 17 item 7: a lone surrogate cannot be encoded as UTF-8, so no store could hold
    it; every str field refuses it when the value is built."""
    with pytest.raises(InvalidInput, match="surrogate"):
        TEXT_SLOTS[slot](text)


def test_the_depth_limit_is_exact_for_objects_arrays_and_nested_values() -> None:
    """limits.MAX_DEPTH: a value exactly MAX_DEPTH deep is accepted (and stays readable),
    one level more is refused, also when the extra level comes from nesting a frozen value."""
    for kind in ("object", "array"):
        at_limit = freeze_json(hostile.nested(limits.MAX_DEPTH, kind=kind))
        assert freeze_json([at_limit][0]) == at_limit
        with pytest.raises(InvalidInput, match="levels deep"):
            freeze_json(hostile.nested(limits.MAX_DEPTH + 1, kind=kind))
    frozen = freeze_json(hostile.nested(limits.MAX_DEPTH - 1))
    assert freeze_json({"one more": frozen}) is not None
    with pytest.raises(InvalidInput, match="levels deep"):
        freeze_json({"a": {"two more": frozen}})
    full = freeze_json(hostile.nested(limits.MAX_DEPTH))
    with pytest.raises(InvalidInput, match="levels deep"):
        create_user_message([{"deep": full, "x": 1}])  # a block is one level itself


def test_integer_limits_are_exact() -> None:
    """limits: int64 inside opaque JSON; +-MAX_SAFE_INTEGER in event and command fields."""
    assert freeze_json([2**63 - 1, -(2**63)]) == (2**63 - 1, -(2**63))
    for bad in (2**63, -(2**63) - 1, 10**5000):
        with pytest.raises(InvalidInput, match="int64"):
            freeze_json({"n": bad})
    assert TurnStarted(limits.MAX_SAFE_INTEGER).turn == limits.MAX_SAFE_INTEGER
    for bad in (limits.MAX_SAFE_INTEGER + 1, 10**10000):
        with pytest.raises(InvalidInput, match="within"):
            TurnStarted(bad)


def test_sizes_and_id_lengths_are_bounded() -> None:
    """limits.MAX_JSON_SIZE and MAX_ID_LENGTH: a value or an id past them is refused."""
    UserMessage("i" * limits.MAX_ID_LENGTH, "hi")
    with pytest.raises(InvalidInput, match="at most"):
        UserMessage("i" * (limits.MAX_ID_LENGTH + 1), "hi")
    with pytest.raises(InvalidInput, match="size"):
        HostRecord("host/x", ["ab" * 1024] * (limits.MAX_JSON_SIZE // 2048 + 1))
    with pytest.raises(InvalidInput, match="at most"):
        HookCause("r" * (limits.MAX_JSON_SIZE + 1))


def test_a_scalar_root_and_subclasses_are_judged_by_their_base_type() -> None:
    """limits: a bare integer root is bounded like a nested one; str, int and Mapping
    subclasses (keys too) freeze to their base type, so a stored value never depends
    on a caller's class."""
    import enum
    import types

    class Name(str):
        pass

    class Level(enum.IntEnum):
        HIGH = 2

    with pytest.raises(InvalidInput, match="int64"):
        freeze_json(2**63)
    frozen: Any = freeze_json(
        {Name("k"): [Name("v"), Level.HIGH, types.MappingProxyType({"a": 1})]}
    )
    assert frozen == {"k": ("v", 2, {"a": 1})}
    assert type(next(iter(frozen))) is str
    assert [type(item) for item in frozen["k"]] == [str, int, JsonObject]


def test_the_size_limit_counts_siblings_after_a_nested_container_closes() -> None:
    """limits.MAX_JSON_SIZE: two nested halves, each under the limit, are refused together."""
    half = "x" * (limits.MAX_JSON_SIZE // 2 + 8)
    freeze_json([[half]])
    with pytest.raises(InvalidInput, match="size"):
        freeze_json([[half], [half]])


@given(
    hostile_int=st.one_of(hostile.huge_integers(), st.just(limits.MAX_SAFE_INTEGER + 1)),
    where=st.sampled_from(["turn", "step", "target", "wakeup", "cause", "type"]),
)
def test_huge_integers_give_typed_errors_whose_message_can_be_printed(
    hostile_int: int, where: str
) -> None:
    """Issue 17 item 8: an integer past Python's 4,300-digit str limit in any field is a
    typed error whose message is printable (repr would raise ValueError)."""
    documents = {
        "turn": {"type": "turn/start", "data": {"turn": hostile_int}},
        "step": {"type": "step/start", "data": {"turn": 1, "step": hostile_int}},
        "target": {"type": "move", "messageId": "m", "target": hostile_int},
        "wakeup": {"type": "send", "input": {"message": {}, "target": "next-turn"}},
        "cause": {"type": "cancel", "cause": hostile_int},
        "type": {"type": hostile_int},
    }
    for decode in (event_from_json, command_from_json):
        error = typed_error(functools.partial(decode, documents[where]))
        assert error is not None, f"{where}: accepted"
        assert str(error)  # printable


@settings(HOSTILE, max_examples=75)  # each builds values at the size limits: ~1 s apiece
@given(data=st.data())
def test_decoders_refuse_a_hostile_leaf_with_a_typed_error(data: st.DataObject) -> None:
    """Issue 17 item 6: a valid command document with any leaf replaced by a hostile value
    decodes, or fails with a typed error; nothing else escapes."""
    document = command_to_json(data.draw(commands(), label="command"))
    paths = list(_leaf_paths(document))
    if not paths:
        return
    path = data.draw(st.sampled_from(paths), label="path")
    bad = data.draw(hostile.hostile_json(), label="bad")
    forged = _replace_at(document, path, bad.value)
    error = typed_error(lambda: command_from_json(forged))
    assert error is None or str(error)


def _leaf_paths(value: Any, path: tuple[Any, ...] = ()) -> Any:
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _leaf_paths(item, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _leaf_paths(item, (*path, index))
    else:
        yield path


def _replace_at(value: Any, path: tuple[Any, ...], new: Any) -> Any:
    if not path:
        return new
    head, rest = path[0], path[1:]
    if isinstance(value, dict):
        return {**value, head: _replace_at(value[head], rest, new)}
    return [*value[:head], _replace_at(value[head], rest, new), *value[head + 1 :]]


# ----------------------------------------------------------- accepted round-trips


def _message_event(content: Any, metadata: Any) -> Any:
    message = create_user_message([{"type": "x", "v": content}], metadata={"m": metadata})
    (event,) = reduce(AgentState.initial(), queue(message)).durable
    return message, event


@HOSTILE
@given(
    content=hostile.storable_json(),
    metadata=hostile.storable_json(),
    text=hostile.storable_strings(),
)
def test_storable_values_round_trip_through_every_codec(
    content: Any, metadata: Any, text: str
) -> None:
    """Issue 17 items 1 and 3: any accepted value round-trips losslessly through the message
    codec, the stored event text and JSON Lines (U+2028, U+2029 and U+0085 included), and a
    JSON Lines text is one record per "\\n" line for any reader."""
    message, event = _message_event(content, metadata)
    assert message_from_json(json.loads(json.dumps(message_to_json(message)))) == message
    record = HostRecord("host/note", {"text": text, "content": content})
    assert decode_record(0, encode_event(event)) == event
    lines = to_json_lines([event, record])
    assert from_json_lines(lines) == [event, record]
    assert len(lines.split("\n")) == 3  # two records, then the final newline
    assert len(lines.splitlines()) == 2  # so str.splitlines agrees (no raw U+2028 & co)
    assert replay(from_json_lines(lines)) == replay([event, record])


def test_line_breaks_json_leaves_raw_are_escaped_in_json_lines() -> None:
    """Issue 17 item 3: U+2028, U+2029 and U+0085 are written escaped and read back as is."""
    text = "a\u2028b\u2029c\x85d"
    lines = to_json_lines([HostRecord("host/t", text)])
    assert "\u2028" not in lines
    assert "\\u2028" in lines
    assert "\\u0085" in lines
    assert from_json_lines(lines) == [HostRecord("host/t", text)]
    # a reader that splits on "\n" only also reads a raw separator written by another tool
    raw = '{"seq":0,"type":"host/t","data":"a\u2028b"}\n'
    assert from_json_lines(raw) == [HostRecord("host/t", "a\u2028b")]


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(content=hostile.storable_json(), text=hostile.storable_strings())
def test_storable_values_round_trip_through_sqlite(tmp_path: Path, content: Any, text: str) -> None:
    """Issue 17: what a value accepts, SqliteLog stores and reads back equal."""
    _message, event = _message_event(content, text)
    record = HostRecord("host/" + (text.replace("\x00", "") or "x")[:50], content)
    path = tmp_path / "round.db"
    log = SqliteLog(path, agent_id=f"agent-{next(AGENT_NUMBERS)}")  # one file, many examples
    log.acquire()
    try:
        log.append([event, record])
        assert log.read() == [event, record]
    finally:
        log.release()


# ------------------------------------------------------------- readers refuse


@HOSTILE
@given(text=hostile.hostile_documents(), deep=st.booleans())
def test_readers_refuse_forged_documents_with_corrupt_log(text: str, deep: bool) -> None:
    """Issue 17 items 1 and 6: a stored record or a JSON Lines line no writer could produce
    is CorruptLog naming its seq, also deep in the caller's stack (no recursion the data
    controls: limits.MAX_DOCUMENT_DEPTH is checked before the parser recurses)."""
    room = sys.getrecursionlimit() - stack_depth() - 2 * limits.MAX_DOCUMENT_DEPTH - 60

    def read() -> None:
        for reader in (lambda: decode_record(3, text), lambda: list(iter_json_lines(text))):
            error = typed_error(reader)
            assert error is None or isinstance(error, CorruptLog), error
            assert error is None or error.seq in (0, 3)

    in_deep_stack(room if deep else 0, read)


def test_a_stored_5000_deep_document_is_corrupt_log_naming_its_seq(tmp_path: Path) -> None:
    """Issue 17 item 1: a forged row 5,000 deep after a good one: read() raises CorruptLog
    naming seq 1 (not RecursionError), and the good prefix is what a reader keeps."""
    path = tmp_path / "forged.db"
    log = SqliteLog(path, agent_id="a")
    log.acquire()
    log.append([HostRecord("host/ok", 1)])
    log.release()
    with sqlite3.connect(path) as conn:
        conn.execute(
            "INSERT INTO events (agent_id, seq, event) VALUES ('a', 1, ?)",
            (hostile._deep_document(5_000, arrays=True),),
        )
    with pytest.raises(CorruptLog) as caught:
        SqliteLog(path, agent_id="a").read()
    assert caught.value.seq == 1


def test_freezing_at_the_limit_works_deep_in_the_callers_stack() -> None:
    """No recursion the data controls: a value at MAX_DEPTH is frozen, encoded and decoded
    with only a few frames of room left below the caller."""
    value = hostile.nested(limits.MAX_DEPTH - 1, kind="array")
    room = sys.getrecursionlimit() - stack_depth() - 3 * limits.MAX_DEPTH - 40

    def build() -> object:
        record = HostRecord("host/deep", value)
        return decode_record(0, encode_event(record)) == record

    assert in_deep_stack(room, build) is True


def test_a_deep_event_read_through_event_from_json_is_invalid_input() -> None:
    """The codec takes parsed JSON from anywhere: a 5,000-deep document is InvalidInput."""
    document = {"type": "host/x", "data": hostile.nested(5_000, kind="array")}
    with pytest.raises(InvalidInput, match="levels deep"):
        event_from_json(document)


# ----------------------------------------------------- sizes (audit of issue 17, G8)

BIG = hostile.big_text(limits.MAX_JSON_SIZE - 64)  # one block of it is within maxJsonSize
BLOCK = {"type": "text", "text": BIG}


def _message_of_size(size: int, message_id: str = "m") -> UserMessage:
    """A message whose size is exactly ``size`` (two blocks, the second one sized to fit)."""
    base = UserMessage(message_id, [{"type": "text", "text": ""}] * 2).size
    first = min(size - base, len(BIG))
    second = size - base - first
    return UserMessage(
        message_id, [{"type": "text", "text": BIG[:first]}, {"type": "text", "text": BIG[:second]}]
    )


def _half(message_id: str) -> UserMessage:
    return _message_of_size(limits.MAX_VALUE_SIZE // 2 + 1024, message_id)


@settings(max_examples=20, deadline=None)
@given(blocks=hostile.oversized_blocks())
def test_g8_a_message_past_max_value_size_is_refused_when_built(blocks: hostile.Hostile) -> None:
    """Issue 17 (audit G8), R26: blocks each within maxJsonSize but past maxValueSize
    together (61 blocks of 16 MiB were accepted, then no store could hold the message) are
    InvalidInput from every message constructor: nothing exists that a store refuses later."""
    for build in (
        lambda: create_user_message(blocks.value),
        lambda: UserMessage("m", blocks.value),
        lambda: message_from_json(
            {"id": "m", "role": "user", "content": blocks.value, "source": {"kind": "user"}}
        ),
    ):
        with pytest.raises(InvalidInput, match="must have a size of at most"):
            build()


def test_g8_the_message_size_limit_is_exact() -> None:
    """limits.MAX_VALUE_SIZE: a message of exactly that size is accepted (and queued), one
    more unit is refused; the size is a sum of what the checked parts knew."""
    at_limit = _message_of_size(limits.MAX_VALUE_SIZE)
    assert at_limit.size == limits.MAX_VALUE_SIZE
    assert reduce(AgentState.initial(), queue(at_limit)).durable
    with pytest.raises(InvalidInput, match="must have a size of at most"):
        _message_of_size(limits.MAX_VALUE_SIZE + 1)


LISTS: dict[str, Callable[[UserMessage, UserMessage], object]] = {
    "entry contexts": lambda a, b: Entry(a, (b,), False),
    "next-turn input contexts": lambda a, b: NextTurnInput(a, (b,), "next-turn", True),
    "steer input contexts": lambda a, b: SteerInput(a, (b,), "next-step", True),
    "followup contexts": lambda a, b: followup(a, [b]),
    "splice entries": lambda a, b: Splice(
        "next-turn", 0, 0, (Entry(a, (), False), Entry(b, (), True))
    ),
    "enter messages": lambda a, b: Enter((a, b)),
    "decided records": lambda a, b: PreStepDecided(1, 1, Reject(), _records(a, b)),
    "answered records": lambda a, b: AwaitPreStep(1, 1, ()).answer(Reject(), _records(a, b)),
    "step records": lambda a, b: StepFinished(1, 1, Completed(), _records(a, b)),
    "maintenance records": lambda a, b: EndMaintenance(_records(a, b)),
}


def _records(a: UserMessage, b: UserMessage) -> tuple[HostRecord, ...]:
    return tuple(HostRecord("host/r", block) for m in (a, b) for block in m.content)


@pytest.mark.parametrize("where", sorted(LISTS))
def test_g8_each_list_a_command_carries_is_bounded_together(where: str) -> None:
    """Issue 17 (audit G8): each list a command carries is bounded by maxValueSize as a whole
    (InvalidInput when built), so no command of accepted values is too big for a post or a
    stored event; two small messages pass."""
    LISTS[where](UserMessage("a", "x"), UserMessage("b", "y"))
    with pytest.raises(InvalidInput, match="must have a size of at most"):
        LISTS[where](_half("a"), _half("b"))


def _unescaped_length(document: Any) -> int:
    """The compact JSON text's length of ``document`` were no string character escaped."""
    text = limits.dump_json(document)
    escapes = 0
    stack = [document]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            stack.extend(item.values())
            strings: list[str] = list(item)
        elif isinstance(item, list):
            stack.extend(item)
            strings = []
        else:
            strings = [item] if isinstance(item, str) else []
        for string in strings:
            escapes += len(limits.dump_json(string)) - len(string) - 2
    return len(text) - escapes


def _carried(command: Any) -> int:
    """What ``command`` carries, in limits' measure (test_g8_..._bounds_the_json_text)."""
    from inbox_core.events import records_size
    from inbox_core.values import entries_size, messages_size

    size = records_size(getattr(command, "records", ()))
    if isinstance(command, Send):
        size += entries_size([command.input.entry()])
    elif isinstance(command, Splice):
        size += entries_size(command.inserted)
    elif isinstance(command, Replace):
        size += command.message.size
    elif isinstance(command, PreStepDecided) and isinstance(command.decision, Enter):
        size += messages_size(command.decision.messages)
    for text in (
        getattr(getattr(command, "cause", None), "reason", ""),
        getattr(command, "message", "") if isinstance(command, PreStepFailed) else "",
        getattr(command, "code", ""),
        getattr(getattr(command, "outcome", None), "message", ""),
        getattr(getattr(command, "outcome", None), "code", ""),
    ):
        size += len(text) + 2 if text else 0
    return size


@HOSTILE
@given(
    content=hostile.storable_json(),
    metadata=hostile.storable_json(),
    text=hostile.storable_strings(),
    command=commands(),
)
def test_g8_the_size_bounds_the_json_text(
    content: Any, metadata: Any, text: str, command: Any
) -> None:
    """limits (audit G8): a size bounds the compact JSON text: its length were no character
    escaped, and its UTF-8 bytes at JSON_BYTES_PER_UNIT per unit; so a command's text is at
    most that many bytes per unit it carries plus the 64 KiB envelope (maxDocumentSize)."""
    per_unit = limits.JSON_BYTES_PER_UNIT
    value = freeze_json({"c": content, "t": text, "m": [metadata]})
    thawed = thaw_json(value)
    assert _unescaped_length(thawed) <= json_size(value) == freeze_json(thawed)._size
    assert len(limits.dump_json(thawed).encode()) <= per_unit * json_size(value)
    message = create_user_message([{"type": text, "v": content}], metadata={"m": metadata})
    document = {"message": message_to_json(message), "contexts": [], "wakeup": False}
    assert _unescaped_length(document) <= message.size
    assert len(limits.dump_json(document).encode()) <= per_unit * message.size
    command_text = limits.dump_json(command_to_json(command)).encode()
    assert len(command_text) <= per_unit * _carried(command) + 2**16


def test_g8_a_command_at_the_limit_in_the_worst_characters_fits_max_document_size() -> None:
    """limits.MAX_DOCUMENT_SIZE: a send of a message at maxValueSize whose every character
    is escaped six bytes long (the worst case) still fits, with its post's envelope."""
    worst = "\x1f" * (limits.MAX_JSON_SIZE - 64)
    base = UserMessage("w", [{"type": "text", "text": ""}] * 2).size
    second = limits.MAX_VALUE_SIZE - base - len(worst)
    message = UserMessage(
        "w" * limits.MAX_ID_LENGTH,
        [
            {"type": "text", "text": worst},
            {"type": "text", "text": worst[: second - limits.MAX_ID_LENGTH + 1]},
        ],
    )
    assert message.size == limits.MAX_VALUE_SIZE
    text = limits.dump_json(
        command_to_json(queue(message, expect=ExpectTurn(limits.MAX_SAFE_INTEGER)))
    )
    assert limits.MAX_VALUE_SIZE * 5 < len(text.encode()) <= limits.MAX_DOCUMENT_SIZE


@pytest.mark.parametrize(
    "source",
    [
        UserSource(),
        PluginSource("p", "snapshot", sections=[SnapshotSection("n", "t" * 40)]),
        PluginSource("p", "notice", summary="s" * 120),
        GoalSource("g" * 70, limits.MAX_SAFE_INTEGER),
        ToolSource("c" * 30),
        AgentSource("\U0001f600" * limits.MAX_AGENT_ID_LENGTH, limits.MAX_SAFE_INTEGER),
        ExtensionSource("x-host", {"url": "u" * 50, "n": [1.5, None, True]}),
    ],
)
def test_g8_a_message_size_bounds_its_entry_text_with_every_source(source: Any) -> None:
    """limits (G8): whatever the source, a message's size bounds the text of the entry that
    holds it, computed from the sizes its parts knew (the array, scalar and object sizes of
    json_size are those of the walk that froze them)."""
    array = [1, [2.5, None, [], {}], {"a": "b"}, "s", True]
    message = UserMessage("i", [{"type": "t", "a": array}], source, {"k": [2**63 - 1]})
    document = {"message": message_to_json(message), "contexts": [], "wakeup": True}
    assert len(limits.dump_json(document)) <= message.size
    assert json_size(freeze_json(array)) == freeze_json({"": array})._size - 6
    assert [json_size(v) for v in ("ab", 7, 0.5, None, False)] == [4, 20, 24, 5, 5]


# --------------------------------------------- untyped argument errors (audit G9)


class _Unprintable:
    def __repr__(self) -> str:
        raise RuntimeError("no repr")


JUNK = st.one_of(
    st.builds(_Unprintable),  # error messages still name it (errors.shown)
    st.none(),
    st.integers(),
    st.floats(),
    st.text(max_size=3),
    st.binary(max_size=3),
    st.builds(object),
    st.lists(st.one_of(st.none(), st.integers(), st.text(max_size=2)), min_size=1, max_size=3),
    st.dictionaries(st.text(max_size=2), st.integers(), min_size=1, max_size=2),
)
"""Arguments of the wrong type: not iterable, or iterables of the wrong items."""

PUBLIC: dict[str, Callable[[Any], object]] = {
    "replay": replay,
    "fates": fates,
    "goal_rounds": goal_rounds,
    "transcript": transcript,
    "event_to_json": event_to_json,
    "message_to_json": message_to_json,
    "command_to_json": command_to_json,
    "notification_to_json": notification_to_json,
    "is_human_prompt": is_human_prompt,
    "reduce (state)": lambda junk: reduce(junk, Clear()),
    "reduce (command)": lambda junk: reduce(AgentState.initial(), junk),
    "Inbox.of": Inbox.of,
    "Inbox.of (next-step)": lambda junk: Inbox.of((), junk),
    "Enter": Enter,
    "Splice": lambda junk: Splice("next-turn", 0, 0, junk),
    "followup (contexts)": lambda junk: followup(UserMessage("m", "x"), junk),
    "create_user_message": create_user_message,
    "EndMaintenance": EndMaintenance,
}


@settings(max_examples=300, deadline=None)
@given(name=st.sampled_from(sorted(PUBLIC)), junk=JUNK)
def test_g9_public_functions_refuse_arguments_of_the_wrong_type_with_a_typed_error(
    name: str, junk: Any
) -> None:
    """R26, issue 17 (audit G9): a non-iterable, or an iterable of the wrong items, given to
    a public function is a typed error (InboxCoreError), never TypeError or AttributeError
    (replay(None), fates(5), event_to_json('x'), reduce(None, ...), Inbox.of([5]), ...)."""
    error = typed_error(lambda: PUBLIC[name](junk))
    if error is None:  # accepted: only what is a valid argument after all
        assert name in ("create_user_message", "replay", "fates", "goal_rounds", "transcript")
        assert isinstance(junk, str) or not junk


# the documented error where it is not InvalidInput: a splice's arguments (R5), an item
# replay cannot fold (R10, by its seq)
DOCUMENTED: dict[tuple[str, str], type[InboxCoreError]] = {
    ("Splice", "None"): InvalidSplice,
    ("Splice", "[5]"): InvalidSplice,
    ("replay", "[5]"): ReplayError,
}


@pytest.mark.parametrize("name", sorted(PUBLIC))
def test_g9_the_examples_of_the_audit_are_typed(name: str) -> None:
    """Issue 17 (audit G9): None and a list holding an int are InvalidInput (or the error
    the brief names for that argument) everywhere."""
    for junk in (None, [5]):
        expected = DOCUMENTED.get((name, repr(junk)), InvalidInput)
        error = typed_error(functools.partial(PUBLIC[name], junk))
        assert type(error) is expected, (name, junk)


# ------------------------------- no stack the data controls (audit of issue 17, note)


def _same(left: Any, right: Any) -> bool:
    """Equal and of the same types all the way down (1 is not 1.0 nor True; nan is nan)."""
    return repr(left) == repr(right)


TEXTS = st.one_of(
    hostile.storable_json(max_leaves=20).map(json.dumps),
    hostile.storable_json().map(lambda value: json.dumps(value, ensure_ascii=False, indent=1)),
    hostile.hostile_documents(),
    st.text(alphabet=' \t\n\r{}[],:"\\-+.0123456789eEtruefalsnNIity\ud800\u2028', max_size=30),
)


@settings(max_examples=400, deadline=None)
@given(text=TEXTS)
def test_the_iterative_parser_reads_what_json_loads_reads(text: str) -> None:
    """json_text.parse (what limits.parse_json falls back to deep in a stack) gives exactly
    json.loads' value, types included, and refuses with ValueError what it refuses."""
    try:
        expected = json.loads(text)
    except RecursionError:  # a 5,000-deep document: only the loop can read it
        assert json_text.parse(text) is not None
        return
    except ValueError:
        with pytest.raises(ValueError):
            json_text.parse(text)
        return
    assert _same(json_text.parse(text), expected)


@settings(max_examples=300, deadline=None)
@given(
    document=st.one_of(
        hostile.storable_json(max_leaves=20),
        hostile.hostile_json().map(lambda hostile_value: hostile_value.value),
        st.dictionaries(
            st.one_of(st.integers(), st.floats(), st.booleans(), st.none(), st.text()),
            st.integers(),
            max_size=3,
        ),
    )
)
def test_the_iterative_encoder_writes_what_json_dumps_writes(document: Any) -> None:
    """json_text.dump (limits.dump_json's fallback) writes json.dumps' exact text (compact,
    ensure_ascii off, no NaN), and refuses with the same kind of error what it refuses."""
    try:
        expected = json.dumps(document, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    except RecursionError:
        return  # a 5,000-deep hostile value: json.dumps itself cannot say
    except (ValueError, TypeError) as error:
        with pytest.raises(type(error)):
            json_text.dump(document)
        return
    assert json_text.dump(document) == expected


def test_the_iterative_encoder_refuses_a_cycle_and_bom_and_odd_corners() -> None:
    """json_text: a circular reference is ValueError (json.dumps' check), a BOM is refused
    like json.loads does, tuples are arrays; thawing without recursion keeps a scalar."""
    from inbox_core.json_values import _thaw_iteratively

    assert _thaw_iteratively(5) == 5
    assert _thaw_iteratively(freeze_json([{"a": [1]}, []])) == [{"a": [1]}, []]
    with pytest.raises(ValueError, match="property name"):
        json_text.parse("{1: 2}")
    with pytest.raises(ValueError, match="':' delimiter"):
        json_text.parse('{"a" 2}')
    loop: list[Any] = []
    loop.append(loop)
    with pytest.raises(ValueError, match="Circular"):
        json_text.dump(loop)
    with pytest.raises(ValueError, match="BOM"):
        json_text.parse("\ufeff[]")
    assert json_text.dump((1, (2, {}))) == "[1,[2,{}]]"
    with pytest.raises(TypeError):
        json_text.dump({(1, 2): 3})


def test_a_valid_log_reads_and_writes_whatever_the_caller_s_stack_depth(tmp_path: Path) -> None:
    """Issue 17 item 1 (audit note): a value at maxDepth read with ~40 frames of stack left
    was CorruptLog ("nests too deeply for this reader's stack") and to_json_lines raised
    RecursionError; the readers and writers now need no stack the data controls, so what
    fails a flat log fails a deep one, and nothing else does."""
    deep = hostile.nested(limits.MAX_DEPTH - 2, kind="array", leaf={"k": [1.5, "é\u2028"]})
    event = HostRecord("host/deep", deep)
    path = tmp_path / "deep.db"
    with SqliteLog(path) as log:
        log.acquire()
        log.append([event])
    room = sys.getrecursionlimit() - stack_depth() - 40

    def everything() -> list[Any]:  # compared outside: equality itself recurses
        text = to_json_lines([event])
        stored = encode_event(event)
        return [
            from_json_lines(text),
            decode_record(0, stored),
            SqliteLog(path).read(),
            thaw_json(event.data),
            stored,
        ]

    lines, decoded, read, thawed, stored = in_deep_stack(room, everything)
    assert lines == read == [event]
    assert decoded == event
    assert thawed == json.loads(stored)["data"]
    assert stored == encode_event(event)


def test_shown_names_a_value_whose_repr_raises_by_its_type() -> None:
    """errors.shown (every error message): a list holding an integer past Python's
    4,300-digit limit (reprlib's repr raises on it) is shown by its type."""
    from inbox_core.errors import shown

    assert shown([10**5000]) == "<list>"
    assert shown(10**5000).startswith("<an int of")
