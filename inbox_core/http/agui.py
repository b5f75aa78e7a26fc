"""AG-UI for every agent (R44): what ``POST /v1/agents/{agent}/ag-ui`` reads and what it
streams back, as pure functions of the agent's feed (D57).

``run_input(document, agent)`` reads AG-UI's ``RunAgentInput`` (its camelCase JSON: a
``DecodeError`` or ``InvalidInput`` naming AG-UI's field when it does not validate, a
``threadId`` other than the agent's included) into the ``Send`` commands of its user
messages; messages of other roles are passed over. ``held_ids`` says which message ids a
log holds already (those are never posted again).

``RunFeed`` turns the agent's feed (its durable events from seq 0 on, and its live output,
R43) into the AG-UI events of one run: the run is the turn that takes the last user
message of the input (its claim, R9), and its events are those of that turn from its
start, whatever was already said when the client asked: ``RUN_STARTED`` (``runId`` the
turn), per step ``STEP_STARTED`` and ``STEP_FINISHED``, the step's output as
``TEXT_MESSAGE_*``, ``REASONING_*`` and ``TOOL_CALL_*`` (live as it is said, and from the
step's ``host/output`` record, which settles it), a ``STATE_SNAPSHOT`` of the projection
whenever it changes (the queue is AG-UI state), and ``RUN_FINISHED`` (``RUN_ERROR`` for an
error end) when that turn ends. A message canceled before a turn took it ends the run with
``RUN_ERROR`` (code ``canceled``); a rejected post with ``RUN_ERROR`` (its typed error).
Nothing here does I/O or keeps time: ``inbox_core.http.agui_stream`` serves it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final

import attrs

from inbox_core.commands import Send
from inbox_core.errors import InboxCoreError, InvalidInput, shown
from inbox_core.http.posting import INTENTS, intent_command
from inbox_core.output import (
    OutputPart,
    ReasoningPart,
    TextPart,
    ToolCallEnd,
    ToolCallPart,
    ToolResultPart,
    apply_output,
    check_message,
    output_from_json,
    output_message_from_json,
    snapshot_from_json,
)
from inbox_core.shell.stores.posts import post_key

__all__ = [
    "AgUiInput",
    "FieldError",
    "RunFeed",
    "held_ids",
    "run_input",
    "state_of",
]

Json = Any
ROLES: Final = frozenset(
    {"developer", "system", "assistant", "user", "tool", "activity", "reasoning"}
)
"""The roles of AG-UI's messages; only ``user`` messages are posted (R44)."""
DEFAULT_INTENT: Final = "followup"


class FieldError(InvalidInput):
    """A ``RunAgentInput`` that does not validate: ``field`` is AG-UI's name of the field
    (``messages[2].content``), which the answer's problem names too, and ``error`` the
    typed error it is (D40: ``DecodeError`` for a shape, ``InvalidInput`` for a value)."""

    def __init__(self, field: str, message: str, error: str = "DecodeError") -> None:
        super().__init__(f"RunAgentInput.{field}: {message}")
        self.field = field
        self.error = error


# ----------------------------------------------------------------------- the input


@attrs.frozen
class AgUiInput:
    """A ``RunAgentInput`` as this endpoint reads it: the run the client named, its user
    messages as the sends of its intent (in order), and the id of the last user message:
    the one whose turn is the run."""

    run_id: str
    sends: tuple[Send, ...]
    follow: str | None


def _object(value: object, field: str) -> Mapping[str, Any]:
    if not isinstance(value, dict):
        raise FieldError(field, f"an object, got {shown(value)}")
    return value


def _string(document: Mapping[str, Any], key: str, field: str, *, required: bool) -> None:
    if key not in document:
        if required:
            raise FieldError(field, "required")
        return
    if not isinstance(document[key], str):
        raise FieldError(field, f"a string, got {shown(document[key])}")


def _list(document: Mapping[str, Any], key: str, field: str) -> None:
    if key in document and document[key] is not None and not isinstance(document[key], list):
        raise FieldError(field, f"an array, got {shown(document[key])}")


def _content(value: object, field: str) -> list[Any]:
    """A user message's content as the blocks of a message (R1): a string is one text
    block; AG-UI's parts are blocks already (``{"type": "text", "text"}``, media parts)."""
    if isinstance(value, str):
        return [{"type": "text", "text": value}]
    if not isinstance(value, list):
        raise FieldError(field, f"a string or an array of parts, got {shown(value)}")
    for index, item in enumerate(value):
        part = _object(item, f"{field}[{index}]")
        _string(part, "type", f"{field}[{index}].type", required=True)
        if part["type"] == "text" and not isinstance(part.get("text"), str):
            raise FieldError(f"{field}[{index}].text", "a text part's text", "InvalidInput")
    return list(value)


def _intent(props: object) -> str:
    if not isinstance(props, dict) or "intent" not in props:
        return DEFAULT_INTENT
    intent = props["intent"]
    if not isinstance(intent, str) or intent not in INTENTS:
        raise FieldError(
            "forwardedProps.intent",
            f"one of {', '.join(INTENTS)}, got {shown(intent)}",
            "InvalidInput",
        )
    return intent


def run_input(document: object, agent: str, held: Iterable[str] = ()) -> AgUiInput:
    """``document`` (a ``RunAgentInput``) for agent ``agent``: ``FieldError`` when it does
    not validate or its ``threadId`` is not ``agent``. Each user message whose id is not in
    ``held`` becomes a ``Send`` of the intent ``forwardedProps.intent`` names (followup by
    default), built as the intent paths build theirs (R39)."""
    run = _object(document, "(root)")
    _string(run, "threadId", "threadId", required=True)
    _string(run, "runId", "runId", required=True)
    for key in ("parentRunId", "protocolVersion"):
        if run.get(key) is not None:
            _string(run, key, key, required=True)
    for key in ("tools", "context", "resume"):
        _list(run, key, key)
    if "messages" not in run:
        raise FieldError("messages", "required")
    _list(run, "messages", "messages")
    if run["threadId"] != agent:
        raise FieldError(
            "threadId", f"the agent id {shown(agent)}, got {shown(run['threadId'])}", "InvalidInput"
        )
    intent = _intent(run.get("forwardedProps"))
    known = set(held)
    sends: list[Send] = []
    follow: str | None = None
    for index, value in enumerate(run["messages"]):
        field = f"messages[{index}]"
        message = _object(value, field)
        _string(message, "id", f"{field}.id", required=True)
        _string(message, "role", f"{field}.role", required=True)
        if message["role"] not in ROLES:
            raise FieldError(f"{field}.role", f"one of AG-UI's roles, got {shown(message['role'])}")
        if message["role"] != "user":
            continue  # the agent's own words, tools, system prompts: the log has its own
        content = _content(message.get("content"), f"{field}.content")
        follow = message["id"]
        if follow in known:
            continue
        known.add(follow)
        try:
            sends.append(intent_command(intent, {"message": {"id": follow, "content": content}}))
            post_key(follow)  # the id is the post's key too (R35)
        except InboxCoreError as error:  # the message's own rules (formats §8)
            raise FieldError(field, str(error), type(error).__name__) from None
    return AgUiInput(run["runId"], tuple(sends), follow)


def held_ids(events: Iterable[Mapping[str, Any]]) -> set[str]:
    """The message ids a log (its events' JSON, ``{"type", "data"}``) holds: every message
    it accepted (R32), whatever became of it."""
    ids: set[str] = set()
    for event in events:
        if event["type"] == "user/message":
            ids.add(event["data"]["id"])
        elif event["type"] == "agent/inbox/spliced":
            for entry in event["data"]["inserted"]:
                ids.add(entry["message"]["id"])
                ids.update(context["id"] for context in entry["contexts"])
    return ids


# --------------------------------------------------------------- a step's output


def _message_id(turn: int, step: int, part: int) -> str:
    return f"turn-{turn}-step-{step}-part-{part}"


@attrs.define
class _Said:
    """What the stream said of one part: its kind, the characters of its text (a tool
    call's arguments) sent, and whether it is still open (no end sent yet)."""

    kind: str
    sent: int = 0
    open: bool = True


class _StepVoice:
    """One step's output as AG-UI events: each call hands the parts as they stand now and
    gets the events that say what is new (a part opened, text added, a part ended).
    What was sent is never taken back: a part that does not continue what was said
    (another type at its index) is passed over."""

    def __init__(self, turn: int, step: int) -> None:
        self.turn = turn
        self.step = step
        self.parts: tuple[OutputPart, ...] = ()
        self.ended: set[str] = set()  # tool calls whose end was said live
        self.said: list[_Said] = []
        self.whole = False  # its host/output came: live output is over

    def update(self, parts: Sequence[OutputPart]) -> list[Json]:
        self.parts = tuple(parts)
        out: list[Json] = []
        for index, part in enumerate(self.parts):
            if index == len(self.said):
                out += self._close_last()
                self.said.append(_Said(part.type))
                out += self._open(index, part)
            said = self.said[index]
            if said.kind != part.type or not said.open:
                continue
            out += self._grow(index, part, said)
            if isinstance(part, ToolCallPart) and part.id in self.ended:
                out += self._close(index)
        return out

    def finish(self) -> list[Json]:
        """The step ended: every part still open ends."""
        return [event for index in range(len(self.said)) for event in self._close(index)]

    def _close_last(self) -> list[Json]:
        return self._close(len(self.said) - 1) if self.said else []

    def _open(self, index: int, part: OutputPart) -> list[Json]:
        ident = _message_id(self.turn, self.step, index)
        if isinstance(part, TextPart):
            return [{"type": "TEXT_MESSAGE_START", "messageId": ident, "role": "assistant"}]
        if isinstance(part, ReasoningPart):
            return [
                {"type": "REASONING_START", "messageId": f"{ident}-reasoning"},
                {"type": "REASONING_MESSAGE_START", "messageId": ident, "role": "reasoning"},
            ]
        if isinstance(part, ToolCallPart):
            return [{"type": "TOOL_CALL_START", "toolCallId": part.id, "toolCallName": part.name}]
        assert isinstance(part, ToolResultPart), part
        self.said[index].open = False
        result = {"type": "TOOL_CALL_RESULT", "messageId": ident, "toolCallId": part.id}
        return [result | {"content": part.content, "role": "tool"}]

    def _grow(self, index: int, part: OutputPart, said: _Said) -> list[Json]:
        if isinstance(part, ToolCallPart):
            text, kind, key = part.arguments, "TOOL_CALL_ARGS", {"toolCallId": part.id}
        elif isinstance(part, TextPart | ReasoningPart):
            kind = "TEXT_MESSAGE" if isinstance(part, TextPart) else "REASONING_MESSAGE"
            kind, text = f"{kind}_CONTENT", part.text
            key = {"messageId": _message_id(self.turn, self.step, index)}
        else:
            return []
        if len(text) <= said.sent:
            return []
        delta = text[said.sent :]
        said.sent = len(text)
        return [{"type": kind, **key, "delta": delta}]

    def _close(self, index: int) -> list[Json]:
        said = self.said[index]
        if not said.open:
            return []
        said.open = False
        ident = _message_id(self.turn, self.step, index)
        part = self.parts[index] if index < len(self.parts) else None
        if said.kind == "text":
            return [{"type": "TEXT_MESSAGE_END", "messageId": ident}]
        if said.kind == "reasoning":
            return [
                {"type": "REASONING_MESSAGE_END", "messageId": ident},
                {"type": "REASONING_END", "messageId": f"{ident}-reasoning"},
            ]
        assert isinstance(part, ToolCallPart), part
        return [{"type": "TOOL_CALL_END", "toolCallId": part.id}]


# ----------------------------------------------------------------------- the run


def state_of(
    lists: Mapping[str, list[Json]],
    last_turn: int,
    open_turn: int | None,
    open_step: int | None,
    abort_cause: Json,
) -> Json:
    """The projection a ``STATE_SNAPSHOT`` carries: status, the last and open turn and step,
    the abort cause and both pending lists (their entries' JSON, formats §8) — the keys of
    the inspector's fold (R40)."""
    return {
        "status": "idle" if open_turn is None else "running",
        "lastTurn": last_turn,
        "openTurn": open_turn,
        "openStep": open_step,
        "abortCause": abort_cause,
        "nextTurn": list(lists["next-turn"]),
        "nextStep": list(lists["next-step"]),
    }


class RunFeed:
    """The AG-UI events of one run of agent ``thread``: the turn that claims message
    ``follow``. Feed it the agent's durable events in seq order from 0 (``durable``, their
    ``{"type", "data"}`` JSON) and its live output as it comes (``output``, ``snapshot``:
    the JSON of R43's messages and snapshots); each call returns the events to send now.
    ``done`` once the run ended; then it takes nothing more."""

    def __init__(self, thread: str, follow: str) -> None:
        self.thread = thread
        self.follow = follow
        self.lists: dict[str, list[Json]] = {"next-turn": [], "next-step": []}
        self.last_turn = 0
        self.open_turn: int | None = None
        self.open_step: int | None = None
        self.abort_cause: Json = None
        self.run: int | None = None  # the run's turn, once it claimed ``follow``
        self.buffer: list[Json] = []  # the open turn's events while it is not the run
        self.voice: _StepVoice | None = None
        self.state: Json = None  # the last STATE_SNAPSHOT sent
        self.done = False

    # ----------------------------------------------------------------- feeding

    def durable(self, event: Mapping[str, Any]) -> list[Json]:
        """One durable event (the next in seq order)."""
        if self.done:
            return []
        kind, data = event["type"], event["data"]
        out: list[Json] = []
        if kind == "agent/inbox/spliced":
            out += self._splice(data)
        elif kind == "turn/start":
            self.last_turn = self.open_turn = data["turn"]
            self.open_step, self.abort_cause, self.buffer = None, None, []
        elif kind == "step/start":
            self.open_step = data["step"]
            self.voice = _StepVoice(data["turn"], data["step"])
            out += self._said([{"type": "STEP_STARTED", "stepName": f"step {data['step']}"}])
        elif kind == "host/output" and self.voice is not None:
            out += self._record(data)
        elif kind == "step/end":
            out += self._step_end()
        elif kind == "turn/abort":
            self.abort_cause = data["cause"]
        elif kind == "turn/end":
            out += self._step_end()
            out += self._turn_end(data["turn"], data["reason"])
        return out + self._state()

    def output(self, message: Json) -> list[Json]:
        """One live output message (R43) of the running step; one that does not fit what
        was said so far is passed over (the step's ``host/output`` settles it)."""
        voice = self.voice
        if self.done or voice is None or voice.whole:
            return []
        try:
            value = output_message_from_json(message)
            if (value.turn, value.step) != (voice.turn, voice.step):
                return []
            check_message(voice.parts, value, voice.ended)
            parts = apply_output(voice.parts, value)
        except InboxCoreError:
            return []
        if isinstance(value, ToolCallEnd):
            voice.ended.add(value.id)
        return self._said(voice.update(parts))

    def snapshot(self, snapshot: Json) -> list[Json]:
        """The running step's output so far (R43: a watcher that joins mid-step)."""
        voice = self.voice
        if self.done or voice is None or voice.whole:
            return []
        try:
            value = snapshot_from_json(snapshot)
        except InboxCoreError:
            return []
        if (value.turn, value.step) != (voice.turn, voice.step):
            return []
        return self._said(voice.update(value.parts))

    def rejected(self, error: str, message: str) -> list[Json]:
        """A post of the run was rejected by the agent's owner (R35): the run fails."""
        return [] if self.done else self._fail(error, message)

    # ---------------------------------------------------------------- the fold

    def _splice(self, data: Mapping[str, Any]) -> list[Json]:
        target, start = data["target"], data["start"]
        removed = self.lists[target][start : start + data.get("removedCount", 0)]
        self.lists[target][start : start + len(removed)] = data["inserted"]
        ids = {e["message"]["id"] for e in removed} | {
            c["id"] for e in removed for c in e["contexts"]
        }
        if self.run is not None or self.follow not in ids:
            return []
        outcome = data.get("outcome")
        if outcome is None:  # a claim (R9): this turn is the run
            self.run = self.last_turn
            events = [{"type": "RUN_STARTED", "threadId": self.thread, "runId": str(self.run)}]
            events += self.buffer
            self.buffer = []
            return events
        if outcome == "canceled" and not any(
            e["message"]["id"] == self.follow for e in data["inserted"]
        ):
            return self._fail("canceled", "the message was canceled before a turn took it")
        return []

    def _record(self, data: Json) -> list[Json]:
        assert self.voice is not None
        try:
            parts = output_from_json(data).parts
        except InboxCoreError:
            return []  # a record of another form some host wrote: no reply (R43)
        self.voice.whole = True
        return self._said(self.voice.update(parts))

    def _step_end(self) -> list[Json]:
        voice, self.voice = self.voice, None
        self.open_step = None
        if voice is None:
            return []
        name = f"step {voice.step}"
        return self._said([*voice.finish(), {"type": "STEP_FINISHED", "stepName": name}])

    def _turn_end(self, turn: int, reason: Mapping[str, Any]) -> list[Json]:
        self.open_turn = self.abort_cause = None
        self.buffer = []
        if self.run != turn:
            return []
        self.done = True
        if reason["kind"] == "error":
            error = reason["error"]
            return [{"type": "RUN_ERROR", "message": error["message"], "code": error["code"]}]
        finished = {"type": "RUN_FINISHED", "threadId": self.thread, "runId": str(turn)}
        return [finished | {"result": {"turn": turn, "reason": dict(reason)}}]

    def _fail(self, code: str, message: str) -> list[Json]:
        """The run failed before it started (a rejected post, a canceled message): a
        ``RUN_ERROR``, the first and last event (AG-UI allows one before ``RUN_STARTED``)."""
        self.done = True
        return [{"type": "RUN_ERROR", "message": message, "code": code}]

    def _said(self, events: list[Json]) -> list[Json]:
        """Events of the open turn: sent if it is the run, kept until it may be."""
        if self.run is not None and self.run == self.open_turn:
            return events
        if self.run is None:
            self.buffer += events
        return []

    def _state(self) -> list[Json]:
        if self.run is None or self.done:
            return []
        state = state_of(
            self.lists, self.last_turn, self.open_turn, self.open_step, self.abort_cause
        )
        if state == self.state:
            return []
        self.state = state
        return [{"type": "STATE_SNAPSHOT", "snapshot": state}]
