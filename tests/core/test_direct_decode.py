"""The direct reading of a document (issue 32, D42): one pass, values built trusted (D31).

``Wire.decode`` reads a document in one pass that checks every key, JSON type, tag and
the value rules its rows state, freezes opaque JSON in the same pass and builds the values
without their constructors' checks; whatever it does not plainly allow it leaves to the
checked reading (``Wire.checked_decode``: building, then the shape check, D40). So the
two must agree on every document: the same value (the same classes, the same frozen
JSON with the same sizes and depths) or the same error (type and message). Checked here
on every vector document, on events of every kind and payload, and on documents changed
at random with the values that sit on either side of a rule (R26, issue 17's limits).
The plain JSON walk and the parser's fast path: ``test_plain_json.py``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import attrs
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from inbox_core import codec, limits
from inbox_core.checkpoint import CHECKPOINT, checkpoint_to_json, take
from inbox_core.errors import InvalidInput
from inbox_core.events import (
    AbortedReason,
    BlockedReason,
    CompletedReason,
    ErrorReason,
    HostRecord,
    InboxSpliced,
    InterruptedReason,
    MaxTokensReason,
    MessageAdmitted,
    StepEnded,
    StepStarted,
    TurnAborted,
    TurnEnded,
    TurnStarted,
)
from inbox_core.json_values import JsonObject
from inbox_core.replay import LogFold
from inbox_core.testing.hostile import (
    LONE_SURROGATES,
    nested,
    storable_json,
    storable_strings,
)
from inbox_core.testing.strategies import entries, messages
from inbox_core.validators import trusted
from inbox_core.values import (
    TARGETS,
    DisposedCause,
    Entry,
    HookCause,
    ParentCause,
    UserCause,
    UserMessage,
    UserSource,
    decoded_entry,
    decoded_message,
)
from inbox_core.wire import Array, Field, Int, Map, Record, Scalar, Str, Tagged, Wire
from inbox_core.wire_types import DECLINED, Declined
from tests.core.helpers import identical, outcome
from tests.ports.test_decode_rule import DOCUMENTS, _change, _paths  # the vectors' documents

SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))


# ------------------------------------------------------------------ comparison


def agree(wire: Any, doc: Any) -> None:
    """D42: the direct reading (first in ``decode``) and the checked reading agree."""
    direct, checked = outcome(wire.decode, doc), outcome(wire.checked_decode, doc)
    assert direct[0] == checked[0], (direct, checked)
    if direct[0] == "ok":
        assert identical(direct[1], checked[1]), (direct[1], checked[1])
    else:
        assert direct == checked


# ------------------------------------------------------------------- documents

TABLES: dict[str, Any] = {
    "command": codec.COMMAND,
    "event": codec.EVENT,
    "message": codec.MESSAGE,
    "entry": codec.ENTRY,
    "notification": codec.NOTIFICATION,
}


COUNTS = st.one_of(st.integers(1, 3), st.just(limits.MAX_SAFE_INTEGER))
TEXTS = st.one_of(storable_strings(), st.just("x" * 200))
CAUSES = st.one_of(
    st.sampled_from([UserCause(), ParentCause(), DisposedCause()]), st.builds(HookCause, TEXTS)
)
REASONS = st.one_of(
    st.sampled_from([CompletedReason(), BlockedReason(), MaxTokensReason(), InterruptedReason()]),
    st.builds(ErrorReason, TEXTS, TEXTS),
    st.builds(AbortedReason, CAUSES),
)
EVENTS = st.one_of(
    st.builds(
        InboxSpliced,
        st.sampled_from(TARGETS),
        st.integers(0, 4),
        st.integers(0, 3),
        st.lists(entries(), max_size=2).map(tuple),
        st.sampled_from([None, "canceled", "moved"]),
    ),
    st.builds(TurnStarted, COUNTS),
    st.builds(StepStarted, COUNTS, COUNTS),
    st.builds(StepEnded, COUNTS, COUNTS),
    st.builds(MessageAdmitted, messages()),
    st.builds(TurnAborted, COUNTS, CAUSES),
    st.builds(TurnEnded, COUNTS, REASONS),
    st.builds(HostRecord, st.sampled_from(["host/a", "host/é/x"]), storable_json()),
)

EDGES: tuple[Any, ...] = (
    None, 0, 1, -1, limits.MAX_SAFE_INTEGER, limits.MAX_SAFE_INTEGER + 1,
    -limits.MAX_SAFE_INTEGER - 1, 2**63, True, False, 1.0, float("nan"), "", "x", "x" * 1024,
    "x" * 1025, "x" * 256, "x" * 257, "n\x00l", "a\nb", "é", *LONE_SURROGATES, "host/",
    "host/x", "next-step", "moved", "snapshot", "notice", "user", "disposed", "agent",
    "n" * 121, [], [1], [{}], {}, {"kind": "user"}, {"kind": "agent", "agentId": "a", "turn": 1},
    {"kind": "hook", "reason": "\ud800"}, {"type": "host/x", "data": 1}, (1,), JsonObject(),
    nested(limits.MAX_DEPTH), nested(limits.MAX_DEPTH + 1, kind="array"),
)  # fmt: skip
"""What a value is swapped for: every JSON type, and each rule's values on either side."""


@st.composite
def changed(draw: st.DrawFn, documents: st.SearchStrategy[tuple[str, Any]]) -> tuple[str, Any]:
    """A document with up to three changes."""
    kind, doc = draw(documents)
    for _ in range(draw(st.integers(0, 3))):
        path = draw(st.sampled_from(list(_paths(doc))))
        how = draw(st.sampled_from(["swap", "swap", "drop", "add"]))
        doc = _change(doc, path, how, draw(st.sampled_from(EDGES)))
    return kind, doc


# ----------------------------------------------------------------------- tests


def test_d42_every_vector_document_reads_the_same_directly() -> None:
    assert {kind for kind, _ in DOCUMENTS} == set(TABLES)
    for kind, doc in DOCUMENTS:
        agree(TABLES[kind], doc)


def _one_of_each() -> list[tuple[str, Any]]:
    """A vector document of each kind and tag, of each message source and of an entry with
    and without contexts (the first found)."""
    seen: dict[tuple[str, object], Any] = {}
    for kind, doc in DOCUMENTS:
        message = doc.get("data") if doc.get("type") == "user/message" else doc
        source = message.get("source", {}).get("kind") if isinstance(message, dict) else None
        seen.setdefault((kind, (doc.get("type"), source, bool(doc.get("contexts")))), doc)
    return [(kind, doc) for (kind, _), doc in seen.items()]


def test_d42_each_value_of_each_document_swapped_for_each_edge_reads_the_same() -> None:
    """Every value of a document of each kind and tag, swapped in turn for each of the
    values on either side of a rule: the direct reading lets none through that the checked
    reading refuses (a lone surrogate in an id, a turn of 0, a bool for an int)."""
    for kind, doc in _one_of_each():
        for path in list(_paths(doc))[1:]:
            for edge in EDGES:
                agree(TABLES[kind], _change(doc, path, "swap", edge))


@SETTINGS
@given(changed(st.sampled_from(DOCUMENTS)))
def test_d42_a_changed_vector_document_reads_the_same_directly(case: tuple[str, Any]) -> None:
    """Hypothesis, D40/D42: whatever changes, the direct reading gives the checked reading's
    value or leaves the document to it, which raises the same error as before."""
    kind, doc = case
    agree(TABLES[kind], doc)


@SETTINGS
@given(changed(EVENTS.map(lambda event: ("event", codec.event_to_json(event)))))
def test_d42_events_of_every_kind_and_payload_read_the_same_directly(
    case: tuple[str, Any],
) -> None:
    """Hypothesis: events with every source, block, context, reason, cause and record data,
    as written and then changed; read back through the stored text too."""
    _, doc = case
    agree(codec.EVENT, doc)
    if isinstance(doc, dict) and "seq" not in doc:
        text = limits.dump_json(doc) if _dumpable(doc) else None
        if text is not None:
            agree(codec.EVENT, limits.parse_json(text))


def _dumpable(doc: Any) -> bool:
    try:
        limits.dump_json(doc)
    except (TypeError, ValueError):
        return False
    return True


def test_d42_written_events_are_read_directly_and_built_trusted() -> None:
    """The direct reading is the one a valid document takes: no constructor runs, and what
    it builds is what the checking constructors build (``rebuilt``, D31)."""
    from inbox_core.testing import rebuilt

    message = UserMessage("m", [{"type": "text", "text": "é"}], metadata={"a": [1, None]})
    events = [
        InboxSpliced("next-turn", 0, 0, (Entry(message, (message,), True),), None),
        MessageAdmitted(message),
        TurnEnded(2, ErrorReason("bad", "E")),
        HostRecord("host/x", {"deep": nested(limits.MAX_DEPTH - 1)}),
    ]
    for event in events:
        doc = codec.event_to_json(event)
        direct = codec.EVENT.direct_function()(doc)
        assert identical(direct, event)
        assert identical(rebuilt(direct), direct)
        assert hash(direct) == hash(event)


@pytest.mark.parametrize(
    ("table", "doc"),
    [
        (codec.EVENT, {"type": "turn/start", "data": {"turn": 0}}),  # a value rule
        (codec.EVENT, {"type": "turn/start", "data": {"turn": True}}),  # a JSON type
        (codec.EVENT, {"type": "turn/start", "data": {"turn": 1}, "seq": "0"}),  # an extra key
        (codec.EVENT, {"type": "turn/start", "data": {"turn": 1}, "other": 0}),
        (codec.EVENT, {"type": "host/", "data": None}),  # a fallback tag past its rule
        (codec.EVENT, {"type": "nope/x", "data": None}),  # no member, no fallback
        (codec.EVENT, {"type": 5, "data": None}),
        (codec.EVENT, {"type": "agent/inbox/spliced", "data": {"target": "next-turn",
         "start": 0, "removedCount": 0, "inserted": []}}),  # a default written out
        (codec.CAUSE, {"kind": "hook"}),  # a key missing
        (codec.CAUSE, ["hook"]),
        (codec.MESSAGE, {"id": "m", "role": "user", "content": [[]], "source": {"kind": "user"}}),
    ],
)  # fmt: skip
def test_d42_the_direct_reading_declines_what_it_does_not_plainly_allow(
    table: Any, doc: Any
) -> None:
    with pytest.raises(DECLINED):
        table.direct_function()(doc)
    agree(table, doc)


@attrs.frozen
class _Counted:
    n: int = 0


def test_d42_a_default_written_out_is_left_to_the_checked_reading() -> None:
    """D12: a field absent when it holds its default refuses the default written out, even
    where the field's JSON type allows it (``removedCount``'s does not)."""
    field = Field("n", Int(0), optional=True, default=0, reject_default=True)
    record = Record("counted", _Counted, (field,))
    assert record.direct_function()({}) == _Counted()
    assert record.direct_function()({"n": 2}) == _Counted(2)
    with pytest.raises(Declined):
        record.direct_function()({"n": 0})
    with pytest.raises(InvalidInput, match="absent when 0"):
        record.decode({"n": 0})


def test_d42_a_record_with_its_seq_reads_directly() -> None:
    doc = {"seq": 7, "type": "turn/start", "data": {"turn": 1}}
    assert codec.EVENT.direct_function()(doc) == TurnStarted(1)


def test_d42_every_scalar_states_its_rules_for_the_direct_reading() -> None:
    """A scalar without rules of its own takes any value; the others their rules'."""
    assert Scalar().direct_function()(object) is object
    read = Str(min_length=2, max_length=3, one_line=True, prefix="a").direct_function()
    assert read("ab") == "ab"
    for bad in ("a", "abcd", "ba", "a\n", 5, "a\ud800"):
        with pytest.raises(Declined):
            read(bad)
    agent_id = Str(max_length=3, no_nul=True).direct_function()  # R2 v5: an agent id's rule
    assert agent_id("a\x01") == "a\x01"
    for bad in ("a\x00", "\x00", "abcd"):
        with pytest.raises(Declined):
            agent_id(bad)
    with pytest.raises(Declined):
        Int().direct_function()(limits.MAX_SAFE_INTEGER + 1)
    goals = Map(Int(minimum=1)).direct_function()
    assert goals({"g": 1}) == {"g": 1}
    for bad in ({"g": 0}, [1]):
        with pytest.raises(Declined):
            goals(bad)


def test_d42_a_union_without_fallback_declines_an_unknown_tag() -> None:
    union: Tagged[Any] = Tagged("u", "u", "kind", UserCause | ParentCause)
    assert union.direct_function()({"kind": "user"}) == UserCause()
    with pytest.raises(Declined):
        union.direct_function()({"kind": "hook"})


def test_d42_checkpoints_read_the_same_directly() -> None:
    """Tables without trusted builders read directly through their constructors (R41)."""
    from tests.core.test_checkpoint import SESSION

    for at in range(1, len(SESSION) + 1):
        taken = take(LogFold().feed(SESSION[:at]))
        document = json.loads(json.dumps(checkpoint_to_json(taken, "a")))
        fields = {k: v for k, v in document.items() if k not in ("version", "agent")}
        agree(CHECKPOINT, fields)
        assert CHECKPOINT.decode(fields) == taken


# ------------------------------------------------------------------ builders


@SETTINGS
@given(entries())
def test_d31_decoded_builders_build_what_the_constructors_build(entry: Entry) -> None:
    message = entry.message
    built = decoded_message(message.id, message.content, message.source, message.metadata)
    assert identical(built, message)
    assert hash(built) == hash(message)
    assert identical(decoded_entry(entry.message, entry.contexts, entry.wakeup), entry)


def test_r26_decoded_builders_check_the_size_of_the_whole() -> None:
    block = JsonObject({"t": "x" * (limits.MAX_JSON_SIZE - 16)})
    blocks = (block,) * (limits.MAX_VALUE_SIZE // limits.MAX_JSON_SIZE + 1)
    with pytest.raises(InvalidInput, match="a message must have a size"):
        decoded_message("m", blocks, UserSource())
    half = UserMessage("h", (block,))
    with pytest.raises(InvalidInput, match="an entry's messages"):
        decoded_entry(half, (half, half), True)


def test_d31_trusted_keeps_a_hash_cache_empty() -> None:
    build = trusted(UserMessage, cached_hash=True)
    message = build("m", (), UserSource())
    assert message == UserMessage("m", ())
    assert hash(message) == hash(UserMessage("m", ()))
    with pytest.raises(TypeError, match="no hash cache"):
        trusted(Entry, cached_hash=True)


def test_d42_wire_base_reads_through_its_own_function() -> None:
    """A wire that states no reading of its own lines reads through its function."""

    class Odd(Wire):
        def direct_function(self) -> Callable[[Any], Any]:
            return lambda data: ("odd", data)

    assert Array(Odd()).direct_function()([1]) == (("odd", 1),)
