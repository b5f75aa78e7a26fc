"""JSON codec: exact key names and lossless round trips (Formats, R5, R6, R18, D12)."""

from __future__ import annotations

import json
from typing import Any, get_args

import pytest

from inbox_core import (
    AbortedReason,
    AgentSource,
    BlockedReason,
    CancelRequested,
    CompletedReason,
    DecodeError,
    Disposed,
    DisposedCause,
    Entry,
    ErrorReason,
    ExtensionSource,
    GoalSource,
    HookCause,
    InboxClaimed,
    InboxDiscarded,
    InboxInserted,
    InboxMoved,
    InboxSpliced,
    InterruptedReason,
    InvalidInput,
    MaxTokensReason,
    MessageAdmitted,
    ParentCause,
    PluginSource,
    StatusChanged,
    StepEnded,
    StepStarted,
    ToolSource,
    TurnEnded,
    TurnStarted,
    UserCause,
    UserMessage,
    UserSource,
    codec,
    command_from_json,
    command_to_json,
    event_from_json,
    event_to_json,
    message_from_json,
    message_to_json,
    notification_to_json,
    replay,
)
from inbox_core.codec import (
    awaiting_to_json,
    fates_to_json,
    folds_to_json,
    notification_from_json,
    projection_to_json,
    source_from_json,
    source_to_json,
    transcript_to_json,
)
from inbox_core.commands import Command, Completed, Continue, Failed, StepOutcome, followup
from inbox_core.errors import InvalidSplice
from inbox_core.events import AgentError, DurableEvent, HostRecord
from inbox_core.json_values import JsonObject
from inbox_core.state import AwaitPreStep, AwaitStep, AwaitTurnStopping
from inbox_core.values import Source
from inbox_core.wire import Array, Int, Map, Nullable, Opaque, Scalar, Tagged, Variant
from tests.core.helpers import Run, busy_session


def through_json(data: Any) -> Any:
    return json.loads(json.dumps(data))


SOURCES = [
    (UserSource(), {"kind": "user"}),
    (PluginSource("p"), {"kind": "plugin", "plugin": "p"}),
    (PluginSource("p", "instructions"), {"kind": "plugin", "plugin": "p", "form": "instructions"}),
    (PluginSource("p", "catalog"), {"kind": "plugin", "plugin": "p", "form": "catalog"}),
    (PluginSource("p", "relay"), {"kind": "plugin", "plugin": "p", "form": "relay"}),
    (PluginSource("p", "recall"), {"kind": "plugin", "plugin": "p", "form": "recall"}),
    (
        PluginSource("p", "snapshot", [{"name": "n", "text": "t"}, {"name": "m", "text": ""}]),
        {
            "kind": "plugin",
            "plugin": "p",
            "form": "snapshot",
            "sections": [{"name": "n", "text": "t"}, {"name": "m", "text": ""}],
        },
    ),
    (
        PluginSource("p", "notice", summary="one line"),
        {"kind": "plugin", "plugin": "p", "form": "notice", "summary": "one line"},
    ),
    (GoalSource("goal-1", 3), {"kind": "goal", "goalId": "goal-1", "round": 3}),
    (ToolSource("call-9"), {"kind": "tool", "callId": "call-9"}),
    (AgentSource("planner", 4), {"kind": "agent", "agentId": "planner", "turn": 4}),  # v5
    (
        ExtensionSource("webhook", {"url": "u", "n": 1.5, "deep": {"a": [1, None, True]}}),
        {"kind": "webhook", "url": "u", "n": 1.5, "deep": {"a": [1, None, True]}},
    ),
    (ExtensionSource("bare"), {"kind": "bare"}),
]


@pytest.mark.parametrize(("source", "expected"), SOURCES, ids=lambda v: getattr(v, "kind", ""))
def test_formats_every_source_variant_exact_json_and_round_trip(source, expected):
    """R2, Formats: camelCase keys (goalId, callId, agentId); extension fields verbatim."""
    assert source_to_json(source) == expected
    assert source_from_json(through_json(expected)) == source
    message = UserMessage("m", "x", source)
    assert message_to_json(message)["source"] == expected
    assert message_from_json(through_json(message_to_json(message))) == message


def test_formats_message_exact_json_with_metadata_absent_when_none():
    """Formats, D12: {"id","role","content","source"} and "metadata" only when set."""
    plain = UserMessage("m1", "hello")
    assert message_to_json(plain) == {
        "id": "m1",
        "role": "user",
        "content": [{"type": "text", "text": "hello"}],
        "source": {"kind": "user"},
    }
    rich = UserMessage("m2", [{"type": "image", "data": [1, 2]}], ToolSource("c"), {"k": {"v": 1}})
    assert message_to_json(rich) == {
        "id": "m2",
        "role": "user",
        "content": [{"type": "image", "data": [1, 2]}],
        "source": {"kind": "tool", "callId": "c"},
        "metadata": {"k": {"v": 1}},
    }
    for m in (plain, rich):
        assert message_from_json(through_json(message_to_json(m))) == m
    empty_meta = UserMessage("m3", "x", UserSource(), {})
    assert message_to_json(empty_meta)["metadata"] == {}
    assert message_from_json(message_to_json(empty_meta)) == empty_meta


def test_d12_metadata_null_decodes_as_absent():
    """D12: "metadata": null reads as None."""
    data = {"id": "m", "role": "user", "content": [], "source": {"kind": "user"}, "metadata": None}
    assert message_from_json(data) == UserMessage("m", [], UserSource(), None)


E = Entry(UserMessage("a", "x"), (UserMessage("c", "y", ToolSource("t")),), True)
E_JSON = {
    "message": {
        "id": "a",
        "role": "user",
        "content": [{"type": "text", "text": "x"}],
        "source": {"kind": "user"},
    },
    "contexts": [
        {
            "id": "c",
            "role": "user",
            "content": [{"type": "text", "text": "y"}],
            "source": {"kind": "tool", "callId": "t"},
        }
    ],
    "wakeup": True,
}

EVENTS = [
    pytest.param(
        InboxSpliced("next-turn", 2, 0, (E,), None),
        {
            "type": "agent/inbox/spliced",
            "data": {"target": "next-turn", "start": 2, "inserted": [E_JSON]},
        },
        id="insertion",
    ),
    pytest.param(
        InboxSpliced("next-step", 0, 3, (), None),
        {
            "type": "agent/inbox/spliced",
            "data": {"target": "next-step", "start": 0, "removedCount": 3, "inserted": []},
        },
        id="claim",
    ),
    pytest.param(
        InboxSpliced("next-turn", 1, 1, (E,), "canceled"),
        {
            "type": "agent/inbox/spliced",
            "data": {
                "target": "next-turn",
                "start": 1,
                "removedCount": 1,
                "inserted": [E_JSON],
                "outcome": "canceled",
            },
        },
        id="replace",
    ),
    pytest.param(
        InboxSpliced("next-turn", 4, 2, (), "moved"),
        {
            "type": "agent/inbox/spliced",
            "data": {
                "target": "next-turn",
                "start": 4,
                "removedCount": 2,
                "inserted": [],
                "outcome": "moved",
            },
        },
        id="moved",
    ),
    pytest.param(TurnStarted(7), {"type": "turn/start", "data": {"turn": 7}}, id="turn-start"),
    pytest.param(
        StepStarted(7, 2), {"type": "step/start", "data": {"turn": 7, "step": 2}}, id="step-start"
    ),
    pytest.param(
        MessageAdmitted(UserMessage("u", "hi", GoalSource("g", 1), {"m": 1})),
        {
            "type": "user/message",
            "data": {
                "id": "u",
                "role": "user",
                "content": [{"type": "text", "text": "hi"}],
                "source": {"kind": "goal", "goalId": "g", "round": 1},
                "metadata": {"m": 1},
            },
        },
        id="user-message",
    ),
    pytest.param(
        StepEnded(7, 2), {"type": "step/end", "data": {"turn": 7, "step": 2}}, id="step-end"
    ),
    pytest.param(
        TurnEnded(1, CompletedReason()),
        {"type": "turn/end", "data": {"turn": 1, "reason": {"kind": "completed"}}},
        id="completed",
    ),
    pytest.param(
        TurnEnded(1, BlockedReason()),
        {"type": "turn/end", "data": {"turn": 1, "reason": {"kind": "blocked"}}},
        id="blocked",
    ),
    pytest.param(
        TurnEnded(1, MaxTokensReason()),
        {"type": "turn/end", "data": {"turn": 1, "reason": {"kind": "max-tokens"}}},
        id="max-tokens",
    ),
    pytest.param(
        TurnEnded(1, InterruptedReason()),
        {"type": "turn/end", "data": {"turn": 1, "reason": {"kind": "interrupted"}}},
        id="interrupted",
    ),
    pytest.param(
        TurnEnded(1, ErrorReason("boom", "E1")),
        {
            "type": "turn/end",
            "data": {
                "turn": 1,
                "reason": {"kind": "error", "error": {"message": "boom", "code": "E1"}},
            },
        },
        id="error",
    ),
    pytest.param(
        TurnEnded(1, AbortedReason(UserCause())),
        {
            "type": "turn/end",
            "data": {"turn": 1, "reason": {"kind": "aborted", "reason": {"kind": "user"}}},
        },
        id="aborted-user",
    ),
    pytest.param(
        TurnEnded(1, AbortedReason(ParentCause())),
        {
            "type": "turn/end",
            "data": {"turn": 1, "reason": {"kind": "aborted", "reason": {"kind": "parent"}}},
        },
        id="aborted-parent",
    ),
    pytest.param(
        TurnEnded(1, AbortedReason(DisposedCause())),
        {
            "type": "turn/end",
            "data": {"turn": 1, "reason": {"kind": "aborted", "reason": {"kind": "disposed"}}},
        },
        id="aborted-disposed",
    ),
    pytest.param(
        TurnEnded(1, AbortedReason(HookCause("why"))),
        {
            "type": "turn/end",
            "data": {
                "turn": 1,
                "reason": {"kind": "aborted", "reason": {"kind": "hook", "reason": "why"}},
            },
        },
        id="aborted-hook",
    ),
]


@pytest.mark.parametrize(("event", "expected"), EVENTS)
def test_formats_every_durable_event_exact_json_and_round_trip(event, expected):
    """R5, R18, Formats: exact keys; removedCount absent when 0; outcome absent for claims
    and insertions; round trip through json.dumps/loads is lossless."""
    encoded = event_to_json(event)
    assert encoded == expected
    assert event_from_json(through_json(encoded)) == event
    assert json.loads(json.dumps(encoded, sort_keys=True)) == expected


def test_formats_log_records_with_seq_decode():
    """Formats: a log record adds "seq"; the decoder accepts it."""
    record = {**event_to_json(TurnStarted(1)), "seq": 0}
    assert event_from_json(record) == TurnStarted(1)


NOTIFICATIONS = [
    (
        InboxInserted(UserMessage("a", "x")),
        {"type": "agent/inbox/inserted", "data": {"message": E_JSON["message"]}},
    ),
    (
        InboxDiscarded(UserMessage("a", "x")),
        {"type": "agent/inbox/discarded", "data": {"message": E_JSON["message"]}},
    ),
    (
        InboxClaimed(UserMessage("a", "x"), 3),
        {"type": "agent/inbox/claimed", "data": {"message": E_JSON["message"], "turn": 3}},
    ),
    (
        InboxMoved(UserMessage("a", "x"), "next-step"),
        {
            "type": "agent/inbox/moved",
            "data": {"message": E_JSON["message"], "target": "next-step"},
        },
    ),
    (StatusChanged("running"), {"type": "agent/status", "data": {"status": "running"}}),
    (StatusChanged("idle"), {"type": "agent/status", "data": {"status": "idle"}}),
    (
        CancelRequested(UserCause()),
        {"type": "agent/cancel-requested", "data": {"cause": {"kind": "user"}}},
    ),
    (
        CancelRequested(ParentCause()),
        {"type": "agent/cancel-requested", "data": {"cause": {"kind": "parent"}}},
    ),
    (
        CancelRequested(HookCause("r")),
        {"type": "agent/cancel-requested", "data": {"cause": {"kind": "hook", "reason": "r"}}},
    ),
    (
        CancelRequested(DisposedCause()),
        {"type": "agent/cancel-requested", "data": {"cause": {"kind": "disposed"}}},
    ),
    (Disposed(), {"type": "agent/disposed", "data": {}}),
]


@pytest.mark.parametrize(("note", "expected"), NOTIFICATIONS, ids=lambda v: getattr(v, "type", ""))
def test_formats_every_notification_exact_json(note, expected):
    """R6, Formats: per-message notices carry no placement, outcome or batch envelope."""
    encoded = notification_to_json(note)
    assert encoded == expected
    assert through_json(encoded) == expected


def test_formats_a_real_log_round_trips_and_replays_identically():
    """R10, Formats: every event of a busy session survives JSON and replays the same."""
    run = busy_session()
    records = [{"seq": n, **event_to_json(e)} for n, e in enumerate(run.log)]
    decoded = [event_from_json(r) for r in through_json(records)]
    assert decoded == run.log
    assert replay(decoded).projection() == run.state.projection()
    for note in run.notes:
        assert through_json(notification_to_json(note)) == notification_to_json(note)


def test_formats_commands_round_trip():
    """Formats: the vectors' command form is lossless for the commands of a session."""
    from inbox_core import (
        Cancel,
        Clear,
        Completed,
        Continue,
        Dispose,
        Enter,
        Failed,
        InjectInput,
        MaxTokens,
        Move,
        NextTurnInput,
        PreStepDecided,
        PreStepFailed,
        Reject,
        Remove,
        Replace,
        Resume,
        Send,
        Splice,
        SteerInput,
        StepFinished,
        TurnStoppingDone,
    )

    m = UserMessage("m", "x")
    commands = [
        Send(NextTurnInput(m, (UserMessage("c", "y"),), "next-turn", False)),
        Send(SteerInput(m, (), "next-step", True)),
        Send(InjectInput(m, (), "next-step", False)),
        Splice("next-step", -1, 2, (E,)),
        Clear(),
        Replace("a", m),
        Remove("a"),
        Move("a", "next-step"),
        Cancel(HookCause("h"), keep_inbox=True),
        Cancel(),
        Dispose(),
        Resume(),
        PreStepDecided(1, 2, Enter((m,))),
        PreStepDecided(1, 2, Reject()),
        PreStepFailed(1, 1, "x", "y"),
        StepFinished(1, 1, Continue()),
        StepFinished(1, 1, Completed()),
        StepFinished(1, 1, MaxTokens()),
        StepFinished(1, 1, Failed("x", "y")),
        TurnStoppingDone(4),
    ]
    for command in commands:
        assert command_from_json(through_json(command_to_json(command))) == command


# ---------------------------------------------------------------- DecodeError

SPLICE = {"target": "next-turn", "start": 0, "inserted": []}
MESSAGE = {"id": "m", "role": "user", "content": [], "source": {"kind": "user"}}


def spliced(**changes: Any) -> dict[str, Any]:
    return {"type": "agent/inbox/spliced", "data": {**SPLICE, **changes}}


BAD_EVENTS = [
    pytest.param([], id="not-an-object"),
    pytest.param("turn/start", id="string"),
    pytest.param({"data": {"turn": 1}}, id="missing-type"),
    pytest.param({"type": "turn/start"}, id="missing-data"),
    pytest.param({"type": "turn/begin", "data": {"turn": 1}}, id="unknown-type"),
    pytest.param({"type": "turn/start", "data": {"turn": 1}, "extra": 1}, id="unknown-key"),
    pytest.param({"type": "turn/start", "data": {"turn": "1"}}, id="turn-str"),
    pytest.param({"type": "turn/start", "data": {"turn": True}}, id="turn-bool"),
    pytest.param({"type": "turn/start", "data": {"turn": 1, "step": 1}}, id="turn-extra-key"),
    pytest.param({"type": "turn/start", "data": [1]}, id="data-array"),
    pytest.param({"type": "step/start", "data": {"turn": 1}}, id="step-missing"),
    pytest.param({"type": "step/end", "data": {"turn": 1, "step": 1.0}}, id="step-float"),
    pytest.param(spliced(removedCount="1"), id="removed-count-str"),
    pytest.param(spliced(target="later"), id="unknown-target"),
    pytest.param(spliced(outcome="dropped"), id="unknown-outcome"),
    pytest.param(spliced(start=True), id="start-bool"),
    pytest.param(spliced(start=0.5), id="start-float"),
    pytest.param(spliced(inserted={}), id="inserted-object"),
    pytest.param(spliced(removed=1), id="snake-or-unknown-key"),
    pytest.param(spliced(inserted=[{"message": MESSAGE, "contexts": []}]), id="entry-no-wakeup"),
    pytest.param(
        spliced(inserted=[{"message": MESSAGE, "contexts": [], "wakeup": 1}]), id="entry-wakeup-int"
    ),
    pytest.param(
        spliced(inserted=[{"message": MESSAGE, "contexts": {}, "wakeup": True}]),
        id="entry-contexts-object",
    ),
    pytest.param(
        {"type": "turn/end", "data": {"turn": 1, "reason": {"kind": "finished"}}},
        id="unknown-reason",
    ),
    pytest.param(
        {"type": "turn/end", "data": {"turn": 1, "reason": "completed"}}, id="reason-string"
    ),
    pytest.param(
        {"type": "turn/end", "data": {"turn": 1, "reason": {"kind": "completed", "why": "x"}}},
        id="reason-extra-key",
    ),
    pytest.param(
        {
            "type": "turn/end",
            "data": {"turn": 1, "reason": {"kind": "error", "error": {"message": "m"}}},
        },
        id="error-missing-code",
    ),
    pytest.param(
        {
            "type": "turn/end",
            "data": {"turn": 1, "reason": {"kind": "error", "message": "m", "code": "c"}},
        },
        id="error-flattened",
    ),
    pytest.param(
        {
            "type": "turn/end",
            "data": {"turn": 1, "reason": {"kind": "aborted", "reason": {"kind": "boss"}}},
        },
        id="unknown-cause",
    ),
    pytest.param(
        {
            "type": "turn/end",
            "data": {"turn": 1, "reason": {"kind": "aborted", "reason": {"kind": "hook"}}},
        },
        id="hook-without-reason",
    ),
    pytest.param(
        {
            "type": "turn/end",
            "data": {
                "turn": 1,
                "reason": {"kind": "aborted", "reason": {"kind": "hook", "reason": 5}},
            },
        },
        id="hook-reason-int",
    ),
    pytest.param(
        {
            "type": "turn/end",
            "data": {"turn": 1, "reason": {"kind": "aborted", "cause": {"kind": "user"}}},
        },
        id="aborted-cause-key",
    ),
    pytest.param({"type": "user/message", "data": {**MESSAGE, "role": "assistant"}}, id="role"),
    pytest.param(
        {"type": "user/message", "data": {k: v for k, v in MESSAGE.items() if k != "id"}},
        id="message-missing-id",
    ),
    pytest.param({"type": "user/message", "data": {**MESSAGE, "extra": 1}}, id="message-extra"),
    pytest.param(
        {"type": "user/message", "data": {**MESSAGE, "content": "text"}}, id="content-string"
    ),
    pytest.param({"type": "user/message", "data": {**MESSAGE, "source": {}}}, id="source-no-kind"),
    pytest.param(
        {"type": "user/message", "data": {**MESSAGE, "source": {"kind": 1}}}, id="source-kind-int"
    ),
    pytest.param(
        {"type": "user/message", "data": {**MESSAGE, "source": "user"}}, id="source-string"
    ),
    pytest.param(
        {"type": "user/message", "data": {**MESSAGE, "source": {"kind": "user", "x": 1}}},
        id="user-source-extra",
    ),
    pytest.param(
        {
            "type": "user/message",
            "data": {**MESSAGE, "source": {"kind": "goal", "goal_id": "g", "round": 1}},
        },
        id="goal-snake-case",
    ),
    pytest.param(
        {"type": "user/message", "data": {**MESSAGE, "source": {"kind": "tool"}}},
        id="tool-missing-call-id",
    ),
    pytest.param(
        {"type": "user/message", "data": {**MESSAGE, "source": {"kind": "plugin"}}},
        id="plugin-missing-name",
    ),
    pytest.param(
        {
            "type": "user/message",
            "data": {**MESSAGE, "source": {"kind": "plugin", "plugin": "p", "style": "x"}},
        },
        id="plugin-extra",
    ),
]


@pytest.mark.parametrize("data", BAD_EVENTS)
def test_formats_malformed_event_documents_raise_decode_error(data):
    """Formats, D12, D40: wrong shapes (missing/unknown keys, wrong JSON types) -> DecodeError."""
    with pytest.raises(DecodeError):
        event_from_json(data)


@pytest.mark.parametrize(
    "data",
    [
        {**MESSAGE, "id": ""},
        {**MESSAGE, "source": {"kind": "goal", "goalId": "g", "round": -1}},
        {
            **MESSAGE,
            "source": {"kind": "plugin", "plugin": "p", "form": "notice", "summary": "x" * 121},
        },
        {**MESSAGE, "source": {"kind": "plugin", "plugin": "p", "form": "snapshot"}},
        {**MESSAGE, "content": [{"n": float("nan")}]},
    ],
    ids=["empty-id", "goal-round-negative", "long-summary", "snapshot-no-sections", "nan"],
)
def test_formats_value_rules_inside_well_shaped_documents_raise_invalid_input(data):
    """R1, R2: a broken value rule raises what constructing the value raises."""
    with pytest.raises(InvalidInput):
        message_from_json(data)


@pytest.mark.parametrize(
    "data",
    [
        {"type": "launch"},
        {"type": "clear", "x": 1},
        {"kind": "clear"},
        [],
        {"type": "remove"},
        {"type": "cancel", "cause": {"kind": "user"}},
    ],
    ids=["unknown", "extra", "no-type", "array", "missing-field", "missing-keep-inbox"],
)
def test_formats_malformed_command_documents_raise_decode_error(data):
    """Formats: command documents have the same strict shape checks."""
    with pytest.raises(DecodeError):
        command_from_json(data)


def test_formats_cancel_with_disposed_cause_decodes_to_invalid_input():
    """R21, D17: a disposed cause decodes, and Cancel refuses it."""
    with pytest.raises(InvalidInput):
        command_from_json({"type": "cancel", "cause": {"kind": "disposed"}, "keepInbox": False})


# ------------------------------------------------- notifications, decoded too


AGENT_ERRORS = [
    (AgentError(1, None, "hook crashed", "hook_error"),
     {"type": "agent/error", "data": {"turn": 1, "step": None,
                                      "error": {"message": "hook crashed", "code": "hook_error"}}}),
    (AgentError(3, 2, "rate limited", "429"),
     {"type": "agent/error", "data": {"turn": 3, "step": 2,
                                      "error": {"message": "rate limited", "code": "429"}}}),
]  # fmt: skip


@pytest.mark.parametrize(("note", "expected"), [*NOTIFICATIONS, *AGENT_ERRORS])
def test_formats_notifications_decode_from_the_same_table(note, expected):
    """R6, R33: agent/error nests {message, code}; every notification decodes back."""
    assert notification_to_json(note) == expected
    assert notification_from_json(through_json(expected)) == note


def test_formats_the_busy_sessions_notifications_round_trip():
    run = busy_session()
    for note in run.notes:
        assert notification_from_json(through_json(notification_to_json(note))) == note
    with pytest.raises(DecodeError):
        notification_from_json({"type": "agent/status", "data": {"status": "busy"}})
    with pytest.raises(DecodeError):
        notification_from_json({"type": "agent/disposed", "data": {}, "seq": 0})


# ------------------------------------------------ projections and log folds

BATCH = (UserMessage("b", "x"),)


@pytest.mark.parametrize(
    ("awaiting", "expected"),
    [
        (None, None),
        (AwaitPreStep(2, 1, BATCH),
         {"kind": "pre-step", "turn": 2, "step": 1, "batch": [message_to_json(BATCH[0])]}),
        (AwaitStep(2, 3), {"kind": "step", "turn": 2, "step": 3}),
        (AwaitTurnStopping(4), {"kind": "turn-stopping", "turn": 4}),
    ],
)  # fmt: skip
def test_formats_awaited_actions(awaiting, expected):
    """formats.md section 8: the ``awaiting`` key of a projection."""
    assert awaiting_to_json(awaiting) == expected
    if awaiting is not None:
        assert codec.AWAITING.decode(through_json(expected)) == awaiting


def test_formats_projection_and_folds_round_trip_through_their_tables():
    """The projection (a vector's final) and the folds decode back from their JSON too."""
    run = busy_session()
    projection = projection_to_json(run.state, run.log)
    assert list(projection) == list(codec.PROJECTION_KEYS)
    assert projection["goalRounds"] == {}
    assert projection["status"] == "idle"
    view = codec.PROJECTION.decode(through_json(projection))
    assert view == codec.ProjectionView.of(run.state, run.log)
    running = Run()
    running(followup(UserMessage("a", "x")))
    running.enter()
    projection = projection_to_json(running.state, running.log)
    assert projection["awaiting"] == {"kind": "step", "turn": 1, "step": 1}
    assert codec.PROJECTION.decode(through_json(projection)).awaiting == AwaitStep(1, 1)
    folds = folds_to_json(run.log)
    assert folds == {"fates": fates_to_json(run.log), "transcript": transcript_to_json(run.log)}
    assert codec.FOLDS.decode(through_json(folds)) == codec.Folds.of(run.log)
    with pytest.raises(DecodeError):
        codec.PROJECTION.decode({**projection, "goalRounds": []})


# ------------------------------------------------------------- the tables


def test_formats_a_tables_members_are_its_aliases():
    """One source: the union aliases list the members, the classes declare their tags."""
    assert codec.COMMAND.classes == get_args(Command)
    assert codec.COMMAND.tags == tuple(c.type for c in get_args(Command))
    assert codec.OUTCOME.tags == tuple(c.kind for c in get_args(StepOutcome))
    assert (*codec.EVENT.classes, HostRecord) == get_args(DurableEvent)
    assert (*codec.SOURCE.classes, ExtensionSource) == get_args(Source)


def test_formats_tables_refuse_a_member_with_fields_but_no_row():
    with pytest.raises(TypeError, match="Failed has fields but no row"):
        Tagged("outcome", "outcome", "kind", StepOutcome)
    with pytest.raises(TypeError, match="non-members"):
        Tagged("outcome", "outcome", "kind", Continue | Completed, {Failed: ()})
    twice = Variant(ParentCause, (), "user")
    with pytest.raises(TypeError, match="duplicate tags"):
        Tagged("cause", "cause", "kind", UserCause | ParentCause, {ParentCause: twice})
    with pytest.raises(InvalidInput, match="not a command"):  # typed (issue 17, G9)
        command_to_json(UserCause())  # type: ignore[arg-type]


def test_wire_scalars_encode_and_decode_as_declared():
    assert Scalar().decode([]) == []  # checks nothing: the subclasses say what a type is
    assert Int().decode(3) == 3
    assert Int(check=False).decoder is None  # building leaves the type to a constructor
    with pytest.raises(DecodeError):  # but a document's shape is always checked (D40)
        Int(check=False).decode("3")
    assert Nullable(Int()).decode(None) is None
    assert Nullable(Int()).encode(None) is None
    assert Nullable(Int()).encode(4) == 4
    assert Map(Int()).decode({"a": 1}) == {"a": 1}
    assert Array(Int()).encode((1, 2)) == [1, 2]
    assert Array(Int(), check=False).decoder is None
    with pytest.raises(DecodeError):
        Array(Int(), check=False).decode("x")
    assert Map(Opaque()).decode({"a": [1]}, "data") == {"a": [1]}
    with pytest.raises(DecodeError):
        Map(Int()).decode([], "goal rounds")
    assert Opaque().encode(JsonObject({"a": (1,)})) == {"a": [1]}
    with pytest.raises(DecodeError):
        Nullable(Int()).decode("1")
    with pytest.raises(DecodeError):
        Map(Int()).decode({"a": True}, "goal rounds")


# ------------------------------------------------- which error a document raises
# D40: the schema's shape anywhere -> DecodeError; else the first value that refuses.


@pytest.mark.parametrize(
    ("data", "error"),
    [
        # the whole document's shape first: an unknown outcome beats an entry's empty id
        (spliced(removedCount=1, outcome="lost",
                 inserted=[{"message": {**MESSAGE, "id": ""}, "contexts": [], "wakeup": True}]),
         DecodeError),
        (spliced(removedCount=1, outcome="canceled",
                 inserted=[{"message": {**MESSAGE, "id": ""}, "contexts": [], "wakeup": "no"}]),
         DecodeError),
        (spliced(outcome=None, inserted=[{"message": MESSAGE, "contexts": [], "wakeup": True}]),
         None),  # a null optional key reads as absent (D12)
        (spliced(removedCount=None,
                 inserted=[{"message": MESSAGE, "contexts": [], "wakeup": True}]),
         None),  # in every optional key (D40)
        (spliced(removedCount=0), InvalidInput),  # a value rule (D12)
        ({"type": "host/", "data": 1}, InvalidInput),  # the record's own rule
        ({"type": "host/x", "data": float("nan")}, InvalidInput),
        ({"type": "turn/start", "data": {"turn": 0}}, InvalidInput),
        ({"type": "turn/start", "data": {"turn": 1}, "seq": 4}, None),  # a log record
        ({"type": "turn/start", "data": {"turn": 1}, "seq": "4"}, DecodeError),
        ({"type": "turn/end", "data": {"turn": 1, "reason": {"kind": "aborted",
                                                             "reason": {"kind": "disposed"}}}},
         None),
    ],
)  # fmt: skip
def test_formats_event_decoding_errors(data, error):
    if error is None:
        event_from_json(data)
    else:
        with pytest.raises(error):
            event_from_json(data)


DECIDED = {"type": "pre-step-decided", "turn": 1, "step": 1, "decision": {"kind": "reject"}}
INJECT = {"type": "send", "input": {"message": MESSAGE, "contexts": [MESSAGE],
                                    "target": "next-step", "wakeup": False}}  # fmt: skip


@pytest.mark.parametrize(
    ("data", "error"),
    [
        ({**DECIDED, "records": [{"type": "host/", "data": 1}]}, InvalidInput),
        ({**DECIDED, "records": [{"type": "host/x", "data": 1, "seq": 0}]}, DecodeError),
        ({**DECIDED, "records": None}, None),  # null in an optional key: absent
        ({**DECIDED, "turn": None}, DecodeError),  # null in a required key: a shape error
        # the shape of the whole document first, whatever the order of its fields
        ({**DECIDED, "decision": {"kind": "maybe"}, "records": [{"type": "host/", "data": 1}]},
         DecodeError),
        ({**DECIDED, "turn": 0, "records": [{"type": "turn/start", "data": {}}]}, DecodeError),
        ({**DECIDED, "turn": 0, "decision": {"kind": "maybe"}}, DecodeError),
        ({**DECIDED, "turn": 0}, InvalidInput),
        ({**DECIDED, "turn": 1.0}, DecodeError),
        ({"type": "cancel", "cause": {"kind": "hook", "reason": 5}, "keepInbox": False},
         DecodeError),
        ({"type": "cancel", "cause": {"kind": "user"}, "keepInbox": 0}, DecodeError),
        ({"type": "cancel", "cause": {"kind": "disposed"}, "keepInbox": False}, InvalidInput),
        ({"type": "cancel", "cause": {"kind": "disposed"}, "keepInbox": "no"}, DecodeError),
        ({"type": "step-finished", "turn": 1, "step": 1,
          "outcome": {"kind": "failed", "message": 5, "code": "c"}}, DecodeError),
        ({"type": "splice", "target": "later", "start": 0, "deleteCount": 0, "inserted": []},
         DecodeError),
        ({"type": "splice", "target": "next-turn", "start": 2**53, "deleteCount": 0,
          "inserted": []}, InvalidSplice),
        # among value errors the entries are built before the splice holding them
        ({"type": "splice", "target": "next-turn", "start": 2**53, "deleteCount": 0,
          "inserted": [{"message": {**MESSAGE, "id": ""}, "contexts": [], "wakeup": True}]},
         InvalidInput),
        (INJECT, InvalidInput),
        ({**INJECT, "expect": {"kind": "turn", "turn": "2"}}, DecodeError),
        ({**INJECT, "expect": None}, InvalidInput),
        ({"type": "send", "input": {"message": MESSAGE, "contexts": [],
                                    "target": "now", "wakeup": False}}, DecodeError),
        ({"type": "send", "input": {"message": MESSAGE, "contexts": [],
                                    "target": "next-turn", "wakeup": "yes"}}, DecodeError),
        ({"type": "send", "input": {"message": {**MESSAGE, "source": {"kind": "user", "x": 1}},
                                    "contexts": [], "target": "next-turn", "wakeup": True}},
         DecodeError),
    ],
)  # fmt: skip
def test_formats_command_decoding_errors(data, error):
    """D40: DecodeError for a shape error anywhere, else the value's own error."""
    if error is None:
        command_from_json(data)
    else:
        with pytest.raises(error):
            command_from_json(data)


@pytest.mark.parametrize(
    ("wire", "data", "fault"),
    [
        (Nullable(Int()), None, False),
        (Nullable(Int()), "1", True),
        (Map(Int()), {"a": 1}, False),
        (Map(Int()), {"a": "1"}, True),
        (Map(Int()), [], True),
        (Opaque(object_only=True), [], True),
        (Opaque(), [], False),
        (Int(check=False), 3, False),
        (codec.NOTIFICATION, {"type": "agent/error", "data": {"turn": 1, "step": None,
                                                              "error": {"message": "m"}}}, True),
        (codec.NOTIFICATION, {"type": "agent/error", "data": {"turn": 0, "step": None,
                                                              "error": {"message": "m",
                                                                        "code": "c"}}}, False),
        (codec.EVENT, {"type": "hosts/x", "data": 1}, True),
        (codec.EVENT, {"type": "host/", "data": 1}, False),  # a value rule: no shape fault
        (codec.EVENT, {"type": "user/message", "data": {**MESSAGE, "id": ""}}, False),
        (codec.EVENT, {"type": "user/message", "data": {**MESSAGE, "id": 1}}, True),
        (codec.EVENT, {"type": "turn/start", "data": {"turn": 1}, "seq": 1.5}, True),
        (codec.SOURCE, {"kind": "x-webhook", "anything": [1]}, False),
        (codec.SOURCE, {"kind": "tool"}, True),
        (codec.CAUSE, {"kind": "boss"}, True),
    ],
)  # fmt: skip
def test_wire_shape_check_builds_nothing_and_says_decode_error(wire, data, fault):
    """D40: the shape check alone (what ``decode`` runs when a value refused)."""
    if fault:
        with pytest.raises(DecodeError):
            wire.check_shape(data, "document")
    else:
        assert wire.check_shape(data, "document") is None
    assert Int(check=False).decode(3) == 3


def test_wire_any_wire_decodes_a_whole_document_by_the_rule():
    """D40 for a wire that is not a table (a list of messages): the shape first."""
    empty_id, no_role = {**MESSAGE, "id": ""}, {k: v for k, v in MESSAGE.items() if k != "role"}
    with pytest.raises(InvalidInput):
        codec.MESSAGES.decode([empty_id, MESSAGE])
    with pytest.raises(DecodeError):
        codec.MESSAGES.decode([empty_id, no_role])
