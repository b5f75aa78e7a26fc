"""The source kind ``agent`` (R2 v5, D52) and ``HopLimit`` (R45): values, JSON, reading.

A message another agent sent says so in its source: ``AgentSource(agent_id, turn)``,
``{"kind": "agent", "agentId": ..., "turn": n}`` exactly. The agent id is taken by the one
rule every store and the front door apply (``limits.agent_id``); ``agent`` is a built-in
kind since v5, read strictly, never as an extension. The stores' side (a log or a post
written before v5): tests/shell/test_agent_source_logs.py.
"""

from __future__ import annotations

from typing import Any

import pytest

import inbox_core
from inbox_core import (
    AgentSource,
    AgentState,
    DecodeError,
    ExtensionSource,
    HopLimit,
    InboxCoreError,
    InvalidInput,
    UserMessage,
    codec,
    is_human_prompt,
    limits,
    reduce,
    replay,
)
from inbox_core.cli.render import describe_source
from inbox_core.codec import (
    event_from_json,
    event_to_json,
    message_from_json,
    message_to_json,
    source_from_json,
    source_to_json,
)
from inbox_core.commands import queue
from inbox_core.errors import ReplayError
from inbox_core.http.paths import agent_id as path_agent_id
from inbox_core.http.problem import Problem
from inbox_core.shell.stores.posts import Receipt
from inbox_core.wire_types import Declined

AGENT_IDS = ["planner", ".", "..", "a/b", "é😀", "\x01", "x" * limits.MAX_AGENT_ID_LENGTH]
NOT_AGENT_IDS = ["", "a\x00b", "\ud800", "x" * (limits.MAX_AGENT_ID_LENGTH + 1), 7, None]


@pytest.mark.parametrize("name", AGENT_IDS + NOT_AGENT_IDS, ids=range(13))
def test_r2_an_agent_source_takes_exactly_the_agent_ids_of_the_stores_and_the_front_door(
    name: Any,
) -> None:
    """R2 v5, D52: one rule for agent ids. What a store's receipt and the front door's path
    take, an agent source takes, and what they refuse it refuses (InvalidInput)."""
    valid = name in AGENT_IDS
    assert (_error(lambda: limits.agent_id(name)) is None) is valid
    assert (_error(lambda: AgentSource(name, 1)) is None) is valid
    assert (_error(lambda: Receipt(name, 1)) is None) is valid
    if isinstance(name, str) and "\ud800" not in name:
        segment = "".join(f"%{byte:02X}" for byte in name.encode())
        assert (_error(lambda: path_agent_id(segment), Problem) is None) is valid
    if not valid:
        assert isinstance(_error(lambda: AgentSource(name, 1)), InvalidInput)


def _error(call: Any, kind: type[Exception] = InboxCoreError) -> Exception | None:
    try:
        call()
    except kind as error:
        return error
    return None


def test_r2_an_agent_source_json_form_is_exact_and_round_trips() -> None:
    """R2 v5: ``{"kind": "agent", "agentId": ..., "turn": n}``, in that order, nothing else;
    a message, an event and a log holding one read back equal; no human prompt."""
    source = AgentSource("é😀" * 128, limits.MAX_SAFE_INTEGER)
    document = source_to_json(source)
    assert list(document.items()) == [
        ("kind", "agent"),
        ("agentId", "é😀" * 128),
        ("turn", limits.MAX_SAFE_INTEGER),
    ]
    assert source_from_json(document) == source
    message = UserMessage("m", "done: 3 files", source)
    assert message_from_json(message_to_json(message)) == message
    assert not is_human_prompt(message)
    events = reduce(AgentState.initial(), queue(message)).durable
    text = [limits.dump_json(event_to_json(event)) for event in events]
    read = [event_from_json(limits.parse_json(line)) for line in text]
    assert read == list(events)
    assert replay(read).next_turn[0].message.source == source


def test_r2_the_direct_reading_builds_an_agent_source_trusted() -> None:
    """D42: the row states every rule of an agent source (an agent id's, turn >= 1), so the
    one-pass reading builds it without its constructor and declines what breaks a rule;
    the checked reading then raises the value's error."""
    assert codec.TRUSTED[AgentSource] is not AgentSource
    read = codec.SOURCE.direct_function()
    assert read({"kind": "agent", "agentId": "a", "turn": 1}) == AgentSource("a", 1)
    for bad in ("", "a\x00", "x" * 257, "\udfff"):
        with pytest.raises(Declined):
            read({"kind": "agent", "agentId": bad, "turn": 1})
        with pytest.raises(InvalidInput):
            source_from_json({"kind": "agent", "agentId": bad, "turn": 1})
    for turn in (0, True, 1.0, 2**53):
        with pytest.raises(Declined):
            read({"kind": "agent", "agentId": "a", "turn": turn})


@pytest.mark.parametrize(
    ("document", "error"),
    [
        ({"kind": "agent"}, DecodeError),
        ({"kind": "agent", "name": "planner"}, DecodeError),  # a host's own kind before v5
        ({"kind": "agent", "agentId": "a", "turn": 1, "via": "x"}, DecodeError),
        ({"kind": "agent", "agentId": "a", "turn": "1"}, DecodeError),
        ({"kind": "agent", "agentId": "a", "turn": None}, DecodeError),
        ({"kind": "agent", "agentId": ["a"], "turn": 1}, DecodeError),
        ({"kind": "agent", "agentId": "a", "turn": 0}, InvalidInput),
        ({"kind": "agent", "agentId": "a", "turn": -(2**70)}, InvalidInput),
        ({"kind": "agent", "agentId": "", "turn": 1}, InvalidInput),
    ],
)
def test_d52_agent_is_a_built_in_kind_read_strictly(document: Any, error: type[Exception]) -> None:
    """D52, D40: a source of kind agent is never an extension: a key missing or another
    key, or a JSON type, is DecodeError (its text naming the reservation, for a log or
    post written before v5), a value breaking its rule InvalidInput; so is the same
    source inside a stored event, which a reader names by its seq."""
    with pytest.raises(error) as info:
        source_from_json(document)
    if error is DecodeError:
        assert "a built-in kind since v5" in str(info.value)
    event = {"type": "user/message", "data": message_to_json(UserMessage("m", "x"))}
    event["data"]["source"] = document
    with pytest.raises(error):
        event_from_json(event)
    with pytest.raises(ReplayError) as replayed:
        _fold_texts([{"type": "turn/start", "data": {"turn": 1}}, event])
    assert replayed.value.seq == 1


def _fold_texts(documents: list[Any]) -> None:
    """What a store's read does with its rows (``decode_record``), then the fold."""
    from inbox_core.shell.stores.rows import decode_rows

    replay(decode_rows((seq, limits.dump_json(doc)) for seq, doc in enumerate(documents)))


def test_d52_no_extension_takes_a_built_in_kind() -> None:
    """R2, D52: the built-in kinds are the union's own (user, plugin, goal, tool, agent),
    derived from it, and no extension source takes one."""
    assert limits_kinds() == {"user", "plugin", "goal", "tool", "agent"}
    for kind in limits_kinds():
        with pytest.raises(InvalidInput, match="built-in source kind"):
            ExtensionSource(kind, {"agentId": "a", "turn": 1})
    assert ExtensionSource("agents").kind == "agents"


def limits_kinds() -> set[str]:
    from inbox_core.values import RESERVED_SOURCE_KINDS

    return set(RESERVED_SOURCE_KINDS)


def test_r2_a_message_size_counts_an_agent_source_by_its_id() -> None:
    """Formats §1 (the size measure): an agent source is 96 plus its agent id's length, a
    bound of its JSON text whatever the id and turn."""
    for name in ("a", "é" * 256, '"' * 256):
        source = AgentSource(name, limits.MAX_SAFE_INTEGER)
        with_agent = UserMessage("m", "x", source).size
        assert with_agent - UserMessage("m", "x").size == len(name)
        assert len(limits.dump_json(source_to_json(source))) <= 96 + 6 * len(name)


def test_r2_the_cli_names_an_agent_source_by_agent_and_turn() -> None:
    """The CLI's one-line form of a source (``inbox-core replay``, ``watch``)."""
    assert describe_source(AgentSource("planner", 3)) == "agent:planner#3"
    assert describe_source(AgentSource("a\nb", 1)) == "agent:a\\u000ab#1"  # printable


def test_r45_hop_limit_is_a_typed_error_of_the_public_surface() -> None:
    """R45 (v5 public names): HopLimit is an InboxCoreError exported by inbox_core, with the
    hop count of the refused post; the limit is 16 (``limits.MAX_HOPS``)."""
    assert "HopLimit" in inbox_core.__all__
    assert "AgentSource" in inbox_core.__all__
    error = HopLimit("a chain of 17 sends", hops=17)
    assert isinstance(error, InboxCoreError)
    assert (error.hops, str(error)) == (17, "a chain of 17 sends")
    assert HopLimit("unknown count").hops is None
    assert limits.MAX_HOPS == 16
    assert "MAX_HOPS" not in str(limits.LIMITS)  # a store's count, no value's field
