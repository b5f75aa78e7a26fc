"""JSON forms of messages, events, notifications and commands (camelCase keys).

Encoders return plain ``dict``/``list`` data ready for ``json.dumps``; decoders
accept the parsed data and rebuild the values. Round trips are lossless:
``event_from_json(event_to_json(e)) == e``.

A decoder raises ``DecodeError`` when the document does not have the shape of
the format: not an object, missing or unknown keys, an unknown ``type`` or
``kind`` tag, a wrong JSON type in an envelope field (event coordinates,
entry flags, arrays). The fields of a value (a message's id, content and
metadata, a source's fields, a command's arguments) are checked by the value's
own constructor and raise its error (``InvalidInput``, ``InvalidSplice``), so
a decoded command fails exactly as constructing it would.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from inbox_core.commands import (
    BeginMaintenance,
    Cancel,
    Clear,
    Command,
    Completed,
    Continue,
    Decision,
    Dispose,
    EndMaintenance,
    Enter,
    Failed,
    MaxTokens,
    Move,
    PreStepDecided,
    PreStepFailed,
    Reject,
    Remove,
    Replace,
    Resume,
    Send,
    Splice,
    StepFinished,
    StepOutcome,
    TurnStoppingDone,
)
from inbox_core.errors import DecodeError
from inbox_core.events import (
    HOST_PREFIX,
    AbortedReason,
    AgentError,
    BlockedReason,
    CancelRequested,
    CompletedReason,
    Disposed,
    DurableEvent,
    ErrorReason,
    HostRecord,
    InboxClaimed,
    InboxDiscarded,
    InboxInserted,
    InboxMoved,
    InboxSpliced,
    InterruptedReason,
    MaxTokensReason,
    MessageAdmitted,
    Notification,
    StatusChanged,
    StepEnded,
    StepStarted,
    TurnAborted,
    TurnEnded,
    TurnEndReason,
    TurnStarted,
)
from inbox_core.values import (
    Cause,
    DisposedCause,
    Entry,
    ExtensionSource,
    GoalSource,
    HookCause,
    InjectInput,
    NextTurnInput,
    ParentCause,
    PluginSource,
    ResolvedAgentInput,
    Source,
    SteerInput,
    ToolSource,
    UserCause,
    UserMessage,
    UserSource,
    thaw_json,
)

T = TypeVar("T")

# ---------------------------------------------------------------- shape checks


def _object(
    data: object, what: str, required: tuple[str, ...], optional: tuple[str, ...] = ()
) -> Mapping[str, Any]:
    if not isinstance(data, Mapping):
        raise DecodeError(f"{what}: expected a JSON object, got {type(data).__name__}")
    missing = [key for key in required if key not in data]
    if missing:
        raise DecodeError(f"{what}: missing {', '.join(missing)}")
    unknown = [key for key in data if key not in required and key not in optional]
    if unknown:
        raise DecodeError(f"{what}: unknown keys {', '.join(map(str, unknown))}")
    return data


def _str(value: object, what: str) -> str:
    if not isinstance(value, str):
        raise DecodeError(f"{what}: expected a string, got {value!r}")
    return value


def _int(value: object, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise DecodeError(f"{what}: expected an integer, got {value!r}")
    return value


def _bool(value: object, what: str) -> bool:
    if not isinstance(value, bool):
        raise DecodeError(f"{what}: expected a boolean, got {value!r}")
    return value


def _list(value: object, what: str, item: Callable[[object], T]) -> tuple[T, ...]:
    if not isinstance(value, list | tuple):
        raise DecodeError(f"{what}: expected an array, got {type(value).__name__}")
    return tuple(item(element) for element in value)


def _kind(data: object, what: str) -> str:
    if not isinstance(data, Mapping) or not isinstance(data.get("kind"), str):
        raise DecodeError(f"{what}: expected an object with a string 'kind'")
    return str(data["kind"])


# -------------------------------------------------------------------- sources


def source_to_json(source: Source) -> dict[str, Any]:
    if isinstance(source, UserSource):
        return {"kind": "user"}
    if isinstance(source, PluginSource):
        out: dict[str, Any] = {"kind": "plugin", "plugin": source.plugin}
        if source.form is not None:
            out["form"] = source.form
        if source.sections is not None:
            out["sections"] = [{"name": s.name, "text": s.text} for s in source.sections]
        if source.summary is not None:
            out["summary"] = source.summary
        return out
    if isinstance(source, GoalSource):
        return {"kind": "goal", "goalId": source.goal_id, "round": source.round}
    if isinstance(source, ToolSource):
        return {"kind": "tool", "callId": source.call_id}
    return {"kind": source.kind, **thaw_json(source.fields)}


def source_from_json(data: object) -> Source:
    kind = _kind(data, "source")
    if kind == "user":
        _object(data, "user source", ("kind",))
        return UserSource()
    if kind == "plugin":
        obj = _object(data, "plugin source", ("kind", "plugin"), ("form", "sections", "summary"))
        return PluginSource(obj["plugin"], obj.get("form"), obj.get("sections"), obj.get("summary"))
    if kind == "goal":
        obj = _object(data, "goal source", ("kind", "goalId", "round"))
        return GoalSource(obj["goalId"], obj["round"])
    if kind == "tool":
        obj = _object(data, "tool source", ("kind", "callId"))
        return ToolSource(obj["callId"])
    assert isinstance(data, Mapping)
    return ExtensionSource(kind, {k: v for k, v in data.items() if k != "kind"})


# ------------------------------------------------------------------- messages


def message_to_json(message: UserMessage) -> dict[str, Any]:
    """``{"id","role":"user","content":[...],"source":{...},"metadata"?}``."""
    out: dict[str, Any] = {
        "id": message.id,
        "role": "user",
        "content": [thaw_json(block) for block in message.content],
        "source": source_to_json(message.source),
    }
    if message.metadata is not None:
        out["metadata"] = thaw_json(message.metadata)
    return out


def message_from_json(data: object) -> UserMessage:
    obj = _object(data, "message", ("id", "role", "content", "source"), ("metadata",))
    if obj["role"] != "user":
        raise DecodeError(f"message: role must be 'user', got {obj['role']!r}")
    if not isinstance(obj["content"], list | tuple):
        raise DecodeError("message: content must be an array of blocks")
    return UserMessage(
        obj["id"], obj["content"], source_from_json(obj["source"]), obj.get("metadata")
    )


def entry_to_json(entry: Entry) -> dict[str, Any]:
    return {
        "message": message_to_json(entry.message),
        "contexts": [message_to_json(c) for c in entry.contexts],
        "wakeup": entry.wakeup,
    }


def entry_from_json(data: object) -> Entry:
    obj = _object(data, "entry", ("message", "contexts", "wakeup"))
    return Entry(
        message_from_json(obj["message"]),
        _list(obj["contexts"], "entry contexts", message_from_json),
        _bool(obj["wakeup"], "entry wakeup"),
    )


# --------------------------------------------------------- causes and reasons


def cause_to_json(cause: Cause) -> dict[str, Any]:
    if isinstance(cause, HookCause):
        return {"kind": "hook", "reason": cause.reason}
    return {"kind": cause.kind}


_CAUSES: dict[str, Callable[[], Cause]] = {
    "user": UserCause,
    "parent": ParentCause,
    "disposed": DisposedCause,
}


def cause_from_json(data: object) -> Cause:
    kind = _kind(data, "cause")
    if kind == "hook":
        obj = _object(data, "hook cause", ("kind", "reason"))
        return HookCause(_str(obj["reason"], "hook cause reason"))
    if kind not in _CAUSES:
        raise DecodeError(f"cause: unknown kind {kind!r}")
    _object(data, f"{kind} cause", ("kind",))
    return _CAUSES[kind]()


def reason_to_json(reason: TurnEndReason) -> dict[str, Any]:
    if isinstance(reason, ErrorReason):
        return {"kind": "error", "error": {"message": reason.message, "code": reason.code}}
    if isinstance(reason, AbortedReason):
        return {"kind": "aborted", "reason": cause_to_json(reason.cause)}
    return {"kind": reason.kind}


_PLAIN_REASONS: dict[str, Callable[[], TurnEndReason]] = {
    "completed": CompletedReason,
    "blocked": BlockedReason,
    "max-tokens": MaxTokensReason,
    "interrupted": InterruptedReason,
}


def reason_from_json(data: object) -> TurnEndReason:
    kind = _kind(data, "turn/end reason")
    if kind == "error":
        obj = _object(data, "error reason", ("kind", "error"))
        error = _object(obj["error"], "error reason error", ("message", "code"))
        return ErrorReason(_str(error["message"], "error message"), _str(error["code"], "code"))
    if kind == "aborted":
        obj = _object(data, "aborted reason", ("kind", "reason"))
        return AbortedReason(cause_from_json(obj["reason"]))
    if kind not in _PLAIN_REASONS:
        raise DecodeError(f"turn/end reason: unknown kind {kind!r}")
    _object(data, f"{kind} reason", ("kind",))
    return _PLAIN_REASONS[kind]()


# ------------------------------------------------------------- durable events


def event_to_json(event: DurableEvent) -> dict[str, Any]:
    """``{"type","data"}`` as in the spec's Formats section."""
    data: dict[str, Any]
    if isinstance(event, InboxSpliced):
        data = {"target": event.target, "start": event.start}
        if event.removed_count:
            data["removedCount"] = event.removed_count
        data["inserted"] = [entry_to_json(e) for e in event.inserted]
        if event.outcome is not None:
            data["outcome"] = event.outcome
    elif isinstance(event, MessageAdmitted):
        data = message_to_json(event.message)
    elif isinstance(event, TurnStarted):
        data = {"turn": event.turn}
    elif isinstance(event, StepStarted | StepEnded):
        data = {"turn": event.turn, "step": event.step}
    elif isinstance(event, TurnEnded):
        data = {"turn": event.turn, "reason": reason_to_json(event.reason)}
    elif isinstance(event, TurnAborted):
        data = {"turn": event.turn, "cause": cause_to_json(event.cause)}
    elif isinstance(event, HostRecord):
        return {"type": event.type, "data": thaw_json(event.data)}
    else:
        raise TypeError(f"not a durable event: {event!r}")
    return {"type": event.type, "data": data}


def _splice_from_json(data: object) -> InboxSpliced:
    obj = _object(data, "splice", ("target", "start", "inserted"), ("removedCount", "outcome"))
    target = obj["target"]
    if target not in ("next-turn", "next-step"):
        raise DecodeError(f"splice: unknown target {target!r}")
    outcome = obj.get("outcome")
    if outcome not in (None, "canceled", "moved"):
        raise DecodeError(f"splice: unknown outcome {outcome!r}")
    removed = _int(obj.get("removedCount", 0), "splice removedCount")
    if "removedCount" in obj and removed == 0:
        raise DecodeError("splice: removedCount is absent when 0")
    return InboxSpliced(
        target,
        _int(obj["start"], "splice start"),
        removed,
        _list(obj["inserted"], "splice inserted", entry_from_json),
        outcome,
    )


def _turn_step(data: object, what: str) -> tuple[int, int]:
    obj = _object(data, what, ("turn", "step"))
    return _int(obj["turn"], f"{what} turn"), _int(obj["step"], f"{what} step")


def _turn_start(data: object) -> TurnStarted:
    obj = _object(data, "turn/start", ("turn",))
    return TurnStarted(_int(obj["turn"], "turn/start turn"))


def _turn_end(data: object) -> TurnEnded:
    obj = _object(data, "turn/end", ("turn", "reason"))
    return TurnEnded(_int(obj["turn"], "turn/end turn"), reason_from_json(obj["reason"]))


def _turn_abort(data: object) -> TurnAborted:
    obj = _object(data, "turn/abort", ("turn", "cause"))
    return TurnAborted(_int(obj["turn"], "turn/abort turn"), cause_from_json(obj["cause"]))


_EVENT_DECODERS: dict[str, Callable[[object], DurableEvent]] = {
    "agent/inbox/spliced": _splice_from_json,
    "turn/start": _turn_start,
    "step/start": lambda data: StepStarted(*_turn_step(data, "step/start")),
    "user/message": lambda data: MessageAdmitted(message_from_json(data)),
    "step/end": lambda data: StepEnded(*_turn_step(data, "step/end")),
    "turn/abort": _turn_abort,
    "turn/end": _turn_end,
}


def event_from_json(data: object) -> DurableEvent:
    """Decode ``{"type","data"}``; a log record's extra ``"seq"`` is accepted and ignored."""
    obj = _object(data, "durable event", ("type", "data"), ("seq",))
    if not isinstance(obj["type"], str):
        raise DecodeError(f"durable event: type must be a string, got {obj['type']!r}")
    if obj["type"].startswith(HOST_PREFIX):
        return HostRecord(obj["type"], obj["data"])  # any JSON, kept verbatim (R30)
    decoder = _EVENT_DECODERS.get(obj["type"])
    if decoder is None:
        raise DecodeError(f"durable event: unknown type {obj['type']!r}")
    return decoder(obj["data"])


# -------------------------------------------------------- live notifications


def notification_to_json(notification: Notification) -> dict[str, Any]:
    data: dict[str, Any]
    if isinstance(notification, InboxInserted | InboxDiscarded):
        data = {"message": message_to_json(notification.message)}
    elif isinstance(notification, InboxClaimed):
        data = {"message": message_to_json(notification.message), "turn": notification.turn}
    elif isinstance(notification, InboxMoved):
        data = {"message": message_to_json(notification.message), "target": notification.target}
    elif isinstance(notification, StatusChanged):
        data = {"status": notification.status}
    elif isinstance(notification, CancelRequested):
        data = {"cause": cause_to_json(notification.cause)}
    elif isinstance(notification, Disposed):
        data = {}
    elif isinstance(notification, AgentError):
        data = {
            "turn": notification.turn,
            "step": notification.step,
            "error": {"message": notification.message, "code": notification.code},
        }
    else:
        raise TypeError(f"not a notification: {notification!r}")
    return {"type": notification.type, "data": data}


# -------------------------------------------------------------------- commands
# The JSON form of commands is used by the conformance vectors (specs/vectors).


def input_to_json(value: ResolvedAgentInput) -> dict[str, Any]:
    return {
        "message": message_to_json(value.message),
        "contexts": [message_to_json(c) for c in value.contexts],
        "target": value.target,
        "wakeup": value.wakeup,
    }


def input_from_json(data: object) -> ResolvedAgentInput:
    obj = _object(data, "input", ("message", "contexts", "target", "wakeup"))
    message = message_from_json(obj["message"])
    contexts = _list(obj["contexts"], "input contexts", message_from_json)
    target, wakeup = obj["target"], obj["wakeup"]
    if target == "next-turn":
        return NextTurnInput(message, contexts, target, wakeup)
    if target == "next-step" and wakeup is True:
        return SteerInput(message, contexts, target, wakeup)
    if target == "next-step":
        # decoded contexts are checked at run time: InvalidInput unless empty (R11)
        return InjectInput(message, contexts, target, wakeup)  # type: ignore[arg-type]
    raise DecodeError(f"input: unknown target {target!r}")


def decision_to_json(decision: Decision) -> dict[str, Any]:
    if isinstance(decision, Reject):
        return {"kind": "reject"}
    return {"kind": "enter", "messages": [message_to_json(m) for m in decision.messages]}


def decision_from_json(data: object) -> Decision:
    kind = _kind(data, "decision")
    if kind == "reject":
        _object(data, "reject", ("kind",))
        return Reject()
    if kind == "enter":
        obj = _object(data, "enter", ("kind", "messages"))
        return Enter(_list(obj["messages"], "enter messages", message_from_json))
    raise DecodeError(f"decision: unknown kind {kind!r}")


_PLAIN_OUTCOMES: dict[str, Callable[[], StepOutcome]] = {
    "continue": Continue,
    "completed": Completed,
    "max-tokens": MaxTokens,
}


def outcome_to_json(outcome: StepOutcome) -> dict[str, Any]:
    if isinstance(outcome, Failed):
        return {"kind": "failed", "message": outcome.message, "code": outcome.code}
    return {
        "kind": {Continue: "continue", Completed: "completed", MaxTokens: "max-tokens"}[
            type(outcome)
        ]
    }


def outcome_from_json(data: object) -> StepOutcome:
    kind = _kind(data, "outcome")
    if kind == "failed":
        obj = _object(data, "failed outcome", ("kind", "message", "code"))
        return Failed(obj["message"], obj["code"])
    if kind not in _PLAIN_OUTCOMES:
        raise DecodeError(f"outcome: unknown kind {kind!r}")
    _object(data, f"{kind} outcome", ("kind",))
    return _PLAIN_OUTCOMES[kind]()


def records_to_json(records: tuple[HostRecord, ...]) -> list[dict[str, Any]]:
    return [event_to_json(record) for record in records]


def _records_from_json(data: object) -> tuple[HostRecord, ...]:
    def record(item: object) -> HostRecord:
        event = event_from_json(item)
        if not isinstance(event, HostRecord):
            raise DecodeError(f"records: {event.type!r} is not a host record")
        return event

    return _list(data, "records", record)


def command_to_json(command: Command) -> dict[str, Any]:
    """The vectors' command form: ``{"type": <kebab-case name>, ...fields}``.

    A report's (and ``end-maintenance``'s) ``records`` key is written only when
    it holds records.
    """
    out = _command_to_json(command)
    records = getattr(command, "records", ())
    if records:
        out["records"] = records_to_json(records)
    return out


def _command_to_json(command: Command) -> dict[str, Any]:
    if isinstance(command, Send):
        return {"type": "send", "input": input_to_json(command.input)}
    if isinstance(command, Splice):
        return {
            "type": "splice",
            "target": command.target,
            "start": command.start,
            "deleteCount": command.delete_count,
            "inserted": [entry_to_json(e) for e in command.inserted],
        }
    if isinstance(command, Replace):
        return {
            "type": "replace",
            "messageId": command.message_id,
            "message": message_to_json(command.message),
        }
    if isinstance(command, Remove):
        return {"type": "remove", "messageId": command.message_id}
    if isinstance(command, Move):
        return {"type": "move", "messageId": command.message_id, "target": command.target}
    if isinstance(command, Cancel):
        return {
            "type": "cancel",
            "cause": cause_to_json(command.cause),
            "keepInbox": command.keep_inbox,
        }
    if isinstance(command, PreStepDecided):
        return {
            "type": "pre-step-decided",
            "turn": command.turn,
            "step": command.step,
            "decision": decision_to_json(command.decision),
        }
    if isinstance(command, PreStepFailed):
        return {
            "type": "pre-step-failed",
            "turn": command.turn,
            "step": command.step,
            "message": command.message,
            "code": command.code,
        }
    if isinstance(command, StepFinished):
        return {
            "type": "step-finished",
            "turn": command.turn,
            "step": command.step,
            "outcome": outcome_to_json(command.outcome),
        }
    if isinstance(command, TurnStoppingDone):
        return {"type": "turn-stopping-done", "turn": command.turn}
    return {
        "type": {
            Clear: "clear",
            Dispose: "dispose",
            Resume: "resume",
            BeginMaintenance: "begin-maintenance",
            EndMaintenance: "end-maintenance",
        }[type(command)]
    }


def _cancel_from_json(obj: Mapping[str, Any]) -> Cancel:
    # a disposed cause decodes, and Cancel's validator rejects it with InvalidInput
    return Cancel(cause_from_json(obj["cause"]), obj["keepInbox"])  # type: ignore[arg-type]


_COMMANDS: dict[str, tuple[tuple[str, ...], Callable[[Mapping[str, Any]], Command]]] = {
    "send": (("input",), lambda o: Send(input_from_json(o["input"]))),
    "splice": (
        ("target", "start", "deleteCount", "inserted"),
        lambda o: Splice(
            o["target"],
            o["start"],
            o["deleteCount"],
            _list(o["inserted"], "splice inserted", entry_from_json),
        ),
    ),
    "clear": ((), lambda o: Clear()),
    "replace": (
        ("messageId", "message"),
        lambda o: Replace(o["messageId"], message_from_json(o["message"])),
    ),
    "remove": (("messageId",), lambda o: Remove(o["messageId"])),
    "move": (("messageId", "target"), lambda o: Move(o["messageId"], o["target"])),
    "cancel": (("cause", "keepInbox"), _cancel_from_json),
    "dispose": ((), lambda o: Dispose()),
    "resume": ((), lambda o: Resume()),
    "begin-maintenance": ((), lambda o: BeginMaintenance()),
    "end-maintenance": ((), lambda o: EndMaintenance(_records(o))),
    "pre-step-decided": (
        ("turn", "step", "decision"),
        lambda o: PreStepDecided(
            o["turn"], o["step"], decision_from_json(o["decision"]), _records(o)
        ),
    ),
    "pre-step-failed": (
        ("turn", "step", "message", "code"),
        lambda o: PreStepFailed(o["turn"], o["step"], o["message"], o["code"], _records(o)),
    ),
    "step-finished": (
        ("turn", "step", "outcome"),
        lambda o: StepFinished(o["turn"], o["step"], outcome_from_json(o["outcome"]), _records(o)),
    ),
    "turn-stopping-done": (("turn",), lambda o: TurnStoppingDone(o["turn"], _records(o))),
}
_WITH_RECORDS = frozenset(
    (
        "end-maintenance",
        "pre-step-decided",
        "pre-step-failed",
        "step-finished",
        "turn-stopping-done",
    )
)


def _records(obj: Mapping[str, Any]) -> tuple[HostRecord, ...]:
    return _records_from_json(obj.get("records", []))


def command_from_json(data: object) -> Command:
    if not isinstance(data, Mapping) or not isinstance(data.get("type"), str):
        raise DecodeError("command: expected an object with a string 'type'")
    row = _COMMANDS.get(data["type"])
    if row is None:
        raise DecodeError(f"command: unknown type {data['type']!r}")
    keys, build = row
    optional = ("records",) if data["type"] in _WITH_RECORDS else ()
    return build(_object(data, f"{data['type']} command", ("type", *keys), optional))
