"""Values: messages, sources, entries and the resolved inputs (R1, R2, R3, R11, R12)."""

from __future__ import annotations

import math

import attrs
import pytest

from inbox_core import (
    AgentSource,
    Entry,
    ExtensionSource,
    GoalSource,
    InjectInput,
    InvalidInput,
    JsonObject,
    NextTurnInput,
    PluginSource,
    Send,
    SnapshotSection,
    SteerInput,
    ToolSource,
    UserMessage,
    UserSource,
    create_user_message,
    is_human_prompt,
)
from inbox_core.values import route
from tests.core.helpers import msg

# ------------------------------------------------------------------------ R1


def test_r1_user_message_fields_role_and_text_content():
    """R1: id, role "user", content blocks, source, metadata; a str is one text block."""
    m = UserMessage("m-1", "hello")
    assert m.id == "m-1"
    assert m.role == "user"
    assert m.content == ({"type": "text", "text": "hello"},)
    assert m.source == UserSource()
    assert m.metadata is None


def test_r1_create_user_message_mints_fresh_distinct_ids():
    """R1: create_user_message mints a fresh non-empty id each call."""
    a = create_user_message("same")
    b = create_user_message("same")
    assert isinstance(a.id, str)
    assert a.id
    assert b.id
    assert a.id != b.id
    assert a.content == b.content == ({"type": "text", "text": "same"},)
    assert a != b


def test_r1_create_user_message_keeps_blocks_source_and_metadata():
    """R1: a sequence of blocks is kept as given; source and metadata are carried."""
    blocks = [{"type": "image", "url": "u"}, {"type": "text", "text": "t"}]
    m = create_user_message(blocks, source=ToolSource("c1"), metadata={"k": [1, 2]})
    assert m.content == ({"type": "image", "url": "u"}, {"type": "text", "text": "t"})
    assert m.source == ToolSource("c1")
    assert m.metadata == {"k": (1, 2)}
    assert m.role == "user"


def test_r1_message_is_deeply_immutable():
    """R1: the message, its blocks and its metadata cannot be changed, even via the input."""
    block = {"type": "text", "text": "a", "nested": {"list": [1, {"x": 2}]}}
    meta = {"tags": ["a"]}
    m = UserMessage("m", [block], UserSource(), meta)
    block["text"] = "changed"
    block["nested"]["list"].append(3)
    meta["tags"].append("b")
    assert m.content[0]["text"] == "a"
    assert m.content[0]["nested"]["list"] == (1, {"x": 2})
    assert m.metadata == {"tags": ("a",)}
    assert isinstance(m.content, tuple)
    assert isinstance(m.content[0], JsonObject)
    with pytest.raises(TypeError):
        m.content[0]["text"] = "x"  # type: ignore[index]
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        m.id = "other"  # type: ignore[misc]
    hash(m)  # hashable all the way down


def test_r1_messages_with_equal_contents_are_equal_and_hash_alike():
    """R1: equality follows the contents (same id, blocks, source, metadata)."""
    a = UserMessage("m", [{"type": "text", "text": "x"}], GoalSource("g", 1), {"a": 1})
    b = UserMessage("m", "x", GoalSource("g", 1), {"a": 1})
    assert a == b
    assert hash(a) == hash(b)
    assert a != UserMessage("m", "x", GoalSource("g", 2), {"a": 1})
    assert a != UserMessage("m2", "x", GoalSource("g", 1), {"a": 1})


@pytest.mark.parametrize(
    "build",
    [
        pytest.param(lambda: UserMessage("", "x"), id="empty-id"),
        pytest.param(lambda: UserMessage(7, "x"), id="int-id"),
        pytest.param(lambda: UserMessage(None, "x"), id="none-id"),
        pytest.param(lambda: UserMessage("m", "x", role="assistant"), id="role"),
        pytest.param(lambda: UserMessage("m", [{"x": object()}]), id="non-json-content"),
        pytest.param(lambda: UserMessage("m", [{"x": math.nan}]), id="nan-content"),
        pytest.param(lambda: UserMessage("m", [{"x": math.inf}]), id="inf-content"),
        pytest.param(lambda: UserMessage("m", [{1: "x"}]), id="non-str-key"),
        pytest.param(lambda: UserMessage("m", ["text"]), id="block-not-object"),
        pytest.param(lambda: UserMessage("m", {"type": "text"}), id="content-mapping"),
        pytest.param(lambda: UserMessage("m", b"bytes"), id="content-bytes"),
        pytest.param(lambda: UserMessage("m", 5), id="content-int"),
        pytest.param(lambda: UserMessage("m", "x", UserSource(), [1]), id="metadata-list"),
        pytest.param(lambda: UserMessage("m", "x", UserSource(), {"k": {1, 2}}), id="metadata-set"),
        pytest.param(lambda: UserMessage("m", "x", "user"), id="source-str"),
        pytest.param(lambda: UserMessage("m", "x", {"kind": "user"}), id="source-dict"),
        pytest.param(lambda: create_user_message([{"t": object()}]), id="create-non-json"),
    ],
)
def test_r1_invalid_message_values_raise_invalid_input(build):
    """R1, D17: malformed message values raise InvalidInput at construction."""
    with pytest.raises(InvalidInput):
        build()


# ------------------------------------------------------------------------ R2


@pytest.mark.parametrize(
    "build",
    [
        pytest.param(lambda: PluginSource(""), id="plugin-empty-name"),
        pytest.param(lambda: PluginSource("p", "essay"), id="plugin-unknown-form"),
        pytest.param(lambda: PluginSource("p", "snapshot"), id="snapshot-without-sections"),
        pytest.param(lambda: PluginSource("p", "snapshot", "abc"), id="sections-str"),
        pytest.param(lambda: PluginSource("p", "snapshot", [{"name": "a"}]), id="section-shape"),
        pytest.param(
            lambda: PluginSource("p", "snapshot", [{"name": 1, "text": "t"}]),
            id="section-name-type",
        ),
        pytest.param(
            lambda: PluginSource("p", "catalog", [{"name": "a", "text": "b"}]),
            id="sections-on-catalog",
        ),
        pytest.param(lambda: PluginSource("p", "notice"), id="notice-without-summary"),
        pytest.param(lambda: PluginSource("p", "notice", summary="x" * 121), id="summary-121"),
        pytest.param(lambda: PluginSource("p", "notice", summary="two\nlines"), id="summary-lf"),
        pytest.param(lambda: PluginSource("p", "notice", summary="two\rlines"), id="summary-cr"),
        pytest.param(lambda: PluginSource("p", "notice", summary=5), id="summary-int"),
        pytest.param(lambda: PluginSource("p", "relay", summary="s"), id="summary-on-relay"),
        pytest.param(lambda: PluginSource("p", None, summary="s"), id="summary-without-form"),
        pytest.param(lambda: GoalSource("g", -1), id="goal-round-negative"),  # R2 v2: 0 is valid
        pytest.param(lambda: GoalSource("g", True), id="goal-round-bool"),
        pytest.param(lambda: GoalSource("g", "1"), id="goal-round-str"),
        pytest.param(lambda: GoalSource("g", 1.0), id="goal-round-float"),
        pytest.param(lambda: GoalSource("", 1), id="goal-empty-id"),
        pytest.param(lambda: ToolSource(""), id="tool-empty-call"),
        pytest.param(lambda: ExtensionSource("user"), id="reserved-user"),
        pytest.param(lambda: ExtensionSource("plugin"), id="reserved-plugin"),
        pytest.param(lambda: ExtensionSource("goal"), id="reserved-goal"),
        pytest.param(lambda: ExtensionSource("tool"), id="reserved-tool"),
        pytest.param(lambda: ExtensionSource("agent"), id="reserved-agent"),  # v5, D52
        pytest.param(lambda: AgentSource("", 1), id="agent-empty-id"),
        pytest.param(lambda: AgentSource("a" * 257, 1), id="agent-id-257"),
        pytest.param(lambda: AgentSource("a\x00b", 1), id="agent-id-nul"),
        pytest.param(lambda: AgentSource("\ud800", 1), id="agent-id-surrogate"),
        pytest.param(lambda: AgentSource(7, 1), id="agent-id-int"),
        pytest.param(lambda: AgentSource("a", 0), id="agent-turn-0"),
        pytest.param(lambda: AgentSource("a", True), id="agent-turn-bool"),
        pytest.param(lambda: AgentSource("a", 1.0), id="agent-turn-float"),
        pytest.param(lambda: AgentSource("a", 2**53), id="agent-turn-past-safe"),
        pytest.param(lambda: ExtensionSource(""), id="extension-empty-kind"),
        pytest.param(lambda: ExtensionSource("x", {"kind": "y"}), id="extension-kind-field"),
        pytest.param(lambda: ExtensionSource("x", {"f": object()}), id="extension-non-json"),
        pytest.param(lambda: ExtensionSource("x", [1]), id="extension-fields-list"),
    ],
)
def test_r2_invalid_sources_raise_invalid_input(build):
    """R2: source variants validate form, sections, summary, round and reserved kinds."""
    with pytest.raises(InvalidInput):
        build()


def test_r2_valid_source_variants_keep_their_fields():
    """R2: notice up to 120 chars, snapshot sections, goal, tool, agent (v5), extension
    fields verbatim."""
    notice = PluginSource("p", "notice", summary="s" * 120)
    assert notice.summary == "s" * 120
    assert notice.kind == "plugin"
    snap = PluginSource("p", "snapshot", [{"name": "a", "text": "b"}])
    assert snap.sections == (SnapshotSection("a", "b"),)
    for form in ("instructions", "catalog", "relay", "recall"):
        assert PluginSource("p", form).form == form
    assert PluginSource("p").form is None
    goal = GoalSource("g", 3)
    assert (goal.kind, goal.goal_id, goal.round) == ("goal", "g", 3)
    assert (ToolSource("c").kind, ToolSource("c").call_id) == ("tool", "c")
    agent = AgentSource("é" * 256, 2**53 - 1)  # R2 v5: the longest agent id, the last turn
    assert (agent.kind, agent.agent_id, agent.turn) == ("agent", "é" * 256, 2**53 - 1)
    ext = ExtensionSource("webhook", {"url": "u", "nested": {"a": [1, None]}})
    assert ext.kind == "webhook"
    assert ext.fields == {"url": "u", "nested": {"a": (1, None)}}


@pytest.mark.parametrize(
    ("source", "human"),
    [
        (UserSource(), True),
        (PluginSource("p"), False),
        (PluginSource("p", "notice", summary="s"), False),
        (GoalSource("g", 1), False),
        (ToolSource("c"), False),
        (AgentSource("planner", 1), False),  # R2 v5
        (ExtensionSource("human"), False),
        (ExtensionSource("users"), False),
    ],
)
def test_r2_is_human_prompt_is_exactly_user_kind(source, human):
    """R2: is_human_prompt(m) is exactly m.source.kind == "user"."""
    m = msg("m", source=source)
    assert is_human_prompt(m) is human
    assert (m.source.kind == "user") is human


# ------------------------------------------------------------------------ R3


def test_r3_entry_holds_message_contexts_and_wakeup():
    """R3: messages are the contexts, then the primary message."""
    c1, c2, m = msg("c1"), msg("c2"), msg("m")
    entry = Entry(m, [c1, c2], True)
    assert entry.contexts == (c1, c2)
    assert entry.messages == (c1, c2, m)
    assert entry.wakeup is True
    assert Entry(m, (), False).messages == (m,)


@pytest.mark.parametrize(
    "build",
    [
        pytest.param(lambda: Entry("m", (), True), id="message-str"),
        pytest.param(lambda: Entry(msg("m"), (), 1), id="wakeup-int"),
        pytest.param(lambda: Entry(msg("m"), (), None), id="wakeup-none"),
        pytest.param(lambda: Entry(msg("m"), ("c",), True), id="context-str"),
        pytest.param(lambda: Entry(msg("m"), msg("c"), True), id="contexts-message"),
        pytest.param(lambda: Entry(msg("m"), "abc", True), id="contexts-str"),
    ],
)
def test_r3_invalid_entries_raise_invalid_input(build):
    """R3: an entry needs a UserMessage, a sequence of UserMessage contexts and a bool."""
    with pytest.raises(InvalidInput):
        build()


# ----------------------------------------------------------------------- R11


@pytest.mark.parametrize("cls", [NextTurnInput, SteerInput, InjectInput])
def test_r11_every_input_field_is_mandatory_in_order(cls):
    """R11: message, contexts, target, wakeup, in this order, none with a default."""
    fields = attrs.fields(cls)
    assert [f.name for f in fields] == ["message", "contexts", "target", "wakeup"]
    assert all(f.default is attrs.NOTHING for f in fields)
    with pytest.raises(TypeError):
        cls(msg("m"), (), "next-turn" if cls is NextTurnInput else "next-step")  # no wakeup


@pytest.mark.parametrize(
    "build",
    [
        pytest.param(
            lambda: InjectInput(msg("m"), (msg("c"),), "next-step", False),
            id="inject-with-contexts",
        ),
        pytest.param(lambda: InjectInput(msg("m"), (), "next-step", True), id="inject-waking"),
        pytest.param(lambda: InjectInput(msg("m"), (), "next-turn", False), id="inject-next-turn"),
        pytest.param(lambda: SteerInput(msg("m"), (), "next-step", False), id="steer-not-waking"),
        pytest.param(lambda: SteerInput(msg("m"), (), "next-step", 1), id="steer-wakeup-int"),
        pytest.param(lambda: SteerInput(msg("m"), (), "next-turn", True), id="steer-next-turn"),
        pytest.param(lambda: NextTurnInput(msg("m"), (), "next-step", True), id="next-turn-step"),
        pytest.param(lambda: NextTurnInput(msg("m"), (), "next_turn", True), id="bad-target"),
        pytest.param(lambda: NextTurnInput(msg("m"), (), "next-turn", 1), id="wakeup-int"),
        pytest.param(lambda: NextTurnInput(msg("m"), (), "next-turn", "yes"), id="wakeup-str"),
        pytest.param(lambda: NextTurnInput("m", (), "next-turn", True), id="message-str"),
        pytest.param(lambda: NextTurnInput(msg("m"), ("c",), "next-turn", True), id="context-str"),
        pytest.param(lambda: Send("m"), id="send-str"),
        pytest.param(lambda: Send(Entry(msg("m"), (), True)), id="send-entry"),
        pytest.param(lambda: Send(msg("m")), id="send-message"),
    ],
)
def test_r11_bad_inputs_raise_invalid_input_at_run_time(build):
    """R11, D17: an injection with contexts, a steer that does not wake, a wrong target..."""
    with pytest.raises(InvalidInput):
        build()


# ----------------------------------------------------------------------- R12


@pytest.mark.parametrize(
    ("value", "target", "wakeup", "has_contexts"),
    [
        pytest.param(
            NextTurnInput(msg("m"), (msg("c"),), "next-turn", True),
            "next-turn",
            True,
            True,
            id="followup",
        ),
        pytest.param(
            NextTurnInput(msg("m"), (msg("c"),), "next-turn", False),
            "next-turn",
            False,
            True,
            id="queue",
        ),
        pytest.param(
            SteerInput(msg("m"), (msg("c"),), "next-step", True),
            "next-step",
            True,
            True,
            id="steer",
        ),
        pytest.param(
            InjectInput(msg("m"), (), "next-step", False), "next-step", False, False, id="inject"
        ),
    ],
)
def test_r12_four_intents_route_to_target_and_wakeup(value, target, wakeup, has_contexts):
    """R11, R12: followup/queue/steer/inject are the four (target, wakeup) pairs."""
    routed_target, entry = route(value)
    assert routed_target == target
    assert entry == Entry(msg("m"), (msg("c"),) if has_contexts else (), wakeup)


@pytest.mark.parametrize(
    "summary",
    [
        "first\u2028second",
        "first\u2029second",
        "first\x85second",
        "first\x0bsecond",
        "first\x0csecond",
    ],
    ids=["u2028", "u2029", "nel", "vt", "ff"],
)
def test_r2_notice_summary_with_any_line_break_is_not_one_line(summary):
    """R2: a notice summary is one line: no line break of any kind (str.splitlines)."""
    assert len(summary.splitlines()) == 2
    with pytest.raises(InvalidInput):
        PluginSource("p", "notice", summary=summary)


# ------------------------------------------------------------- pinned surface


@pytest.mark.parametrize(
    ("cls", "names"),
    [
        ("Entry", ["message", "contexts", "wakeup"]),
        ("Send", ["input", "expect"]),
        ("Splice", ["target", "start", "delete_count", "inserted"]),
        ("Replace", ["message_id", "message"]),
        ("Remove", ["message_id"]),
        ("Move", ["message_id", "target", "expect"]),
        ("Cancel", ["cause", "keep_inbox", "expect"]),
        ("ExpectIdle", []),
        ("ExpectTurn", ["turn"]),
        ("PreStepDecided", ["turn", "step", "decision", "records"]),
        ("PreStepFailed", ["turn", "step", "message", "code", "records"]),
        ("StepFinished", ["turn", "step", "outcome", "records"]),
        ("TurnStoppingDone", ["turn", "records"]),
        ("EndMaintenance", ["records"]),
        ("BeginMaintenance", []),
        ("Enter", ["messages"]),
        ("Failed", ["message", "code"]),
        ("HookCause", ["reason"]),
        ("AwaitPreStep", ["turn", "step", "batch"]),
        ("AwaitStep", ["turn", "step"]),
        ("AwaitTurnStopping", ["turn"]),
        ("Transition", ["state", "durable", "notifications"]),
    ],
)
def test_r11_pinned_signatures_list_fields_in_order(cls, names):
    """R11, R16, R21, R34: the pinned field order (positional construction relies on it)."""
    import inbox_core

    assert [f.name for f in attrs.fields(getattr(inbox_core, cls))] == names


def test_r21_cancel_defaults_to_user_cause_without_keep_inbox():
    """R21: cancel(cause=user, keep_inbox=False)."""
    from inbox_core import Cancel, UserCause

    assert Cancel() == Cancel(UserCause(), False)
    assert Cancel().keep_inbox is False


def test_r1_create_user_message_source_and_metadata_are_keyword_only():
    """R1: create_user_message(content, *, source=UserSource(), metadata=None)."""
    with pytest.raises(TypeError):
        create_user_message("x", ToolSource("c"))  # type: ignore[misc]
    assert create_user_message("x").source == UserSource()
    assert create_user_message("x").metadata is None
