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
    AgentState,
    ExtensionSource,
    HookCause,
    HostRecord,
    InboxCoreError,
    InvalidInput,
    PluginSource,
    SnapshotSection,
    TurnStarted,
    UserMessage,
    create_user_message,
    limits,
    reduce,
    replay,
)
from inbox_core.codec import (
    command_from_json,
    command_to_json,
    event_from_json,
    message_from_json,
    message_to_json,
)
from inbox_core.shell import SqliteLog
from inbox_core.shell.logs import (
    CorruptLog,
    decode_record,
    encode_event,
    from_json_lines,
    iter_json_lines,
    to_json_lines,
)
from inbox_core.testing import hostile
from inbox_core.testing.strategies import commands
from inbox_core.values import JsonObject, freeze_json
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


@HOSTILE
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
