"""Plain-text forms of values, events and notifications for the command line."""

from __future__ import annotations

import codecs
import json
import re
import sys
from typing import Final, TextIO

from inbox_core.events import (
    AbortedReason,
    AgentError,
    CancelRequested,
    DurableEvent,
    ErrorReason,
    HostRecord,
    InboxClaimed,
    InboxDiscarded,
    InboxInserted,
    InboxMoved,
    InboxSpliced,
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
from inbox_core.json_values import thaw_json
from inbox_core.output import Output, TextPart, ToolCallPart, ToolResultPart, read_output
from inbox_core.values import (
    AgentSource,
    Cause,
    Entry,
    ExtensionSource,
    GoalSource,
    HookCause,
    PluginSource,
    Source,
    ToolSource,
    UserMessage,
    UserSource,
)

EXIT_OK: Final = 0
EXIT_FAILURE: Final = 1
EXIT_USAGE: Final = 2


# What a line written to a terminal or a pipe never holds raw: lone surrogates (no encoding
# has them), control characters but newline and tab (C0, DEL, C1: they move the cursor or
# start an escape sequence), the line and paragraph separators, and the bidirectional
# controls (they reorder what a terminal shows).
_UNSAFE: Final = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069\ud800-\udfff]"
)
_UNSAFE_IN_TEXT: Final = re.compile(f"[\n\t{_UNSAFE.pattern[1:-1]}]")


def _escape(found: re.Match[str]) -> str:
    return f"\\u{ord(found.group()):04x}"


def printable(text: str) -> str:
    """``text`` for one field of a plain-text line: every character ``out`` would escape,
    and newline and tab too, as a ``\\uXXXX`` escape (a hostile id cannot forge a line)."""
    return _UNSAFE_IN_TEXT.sub(_escape, text)


def _json_escapes(error: UnicodeError) -> tuple[str, int]:
    """The codec error handler of ``_write``: what a stream's encoding cannot hold, as JSON
    escapes (valid inside a JSON string, readable in plain text)."""
    assert isinstance(error, UnicodeEncodeError)
    chunk = error.object[error.start : error.end]
    escaped = json.dumps(chunk)[1:-1]  # ASCII; astral characters as surrogate pairs
    return escaped, error.end


codecs.register_error("inbox_core.json_escapes", _json_escapes)


def _write(stream: TextIO | None, text: str) -> None:
    """One line on ``stream``, never a traceback for what it holds: the characters of
    ``_UNSAFE`` escaped, and what the stream's encoding cannot hold (an ASCII locale)
    written as JSON escapes. Both escapes mean the same inside a JSON string, so JSON
    output stays JSON."""
    if stream is None:  # pragma: no cover - no console (pythonw)
        return
    line = _UNSAFE.sub(_escape, text) + "\n"
    try:
        stream.write(line)
    except UnicodeEncodeError:
        encoding = getattr(stream, "encoding", None) or "utf-8"
        stream.write(line.encode(encoding, "inbox_core.json_escapes").decode(encoding))
    stream.flush()


LINE_LIMIT: Final = 2000
"""Characters of one line of a diff or a report a human reads; the rest is cut."""


def clip(line: str, limit: int = LINE_LIMIT) -> str:
    """``line`` cut to ``limit`` characters, saying how many more it had (a port or a vector
    may hold a 40 MB string: its diff must not print it 163 times)."""
    if len(line) <= limit:
        return line
    return f"{line[:limit]}… ({len(line) - limit} more characters)"


def lines(text: str) -> list[str]:
    """The lines of a multi-line report, split on newline only (``str.splitlines`` would also
    split at U+2028 and its kind inside a quoted string), each ``clip``-ped."""
    return [clip(line) for line in text.split("\n")]


def out(text: str = "") -> None:
    _write(sys.stdout, text)


def err(text: str) -> None:
    _write(sys.stderr, text)


# ------------------------------------------------------------ plain-text forms


def _shorten(text: str, limit: int = 60) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _free(text: str) -> str:
    """A free text (a reason, an error message or code) for one line: shortened, printable."""
    return printable(_shorten(text, 200))


def describe_source(source: Source) -> str:
    """``user``, ``plugin:name/form``, ``goal:id#round``, ``tool:call``, ``agent:id#turn``,
    or the extension kind."""
    if isinstance(source, UserSource):
        return "user"
    if isinstance(source, PluginSource):
        return f"plugin:{printable(source.plugin)}" + (f"/{source.form}" if source.form else "")
    if isinstance(source, GoalSource):
        return f"goal:{printable(source.goal_id)}#{source.round}"
    if isinstance(source, ToolSource):
        return f"tool:{printable(source.call_id)}"
    if isinstance(source, AgentSource):
        return f"agent:{printable(source.agent_id)}#{source.turn}"
    assert isinstance(source, ExtensionSource)
    return printable(source.kind)


def describe_message(message: UserMessage) -> str:
    """``id [source] "text…"`` (non-text blocks as ``<type>``)."""
    parts = []
    for block in message.content:
        text = block.get("text")
        if block.get("type") == "text" and isinstance(text, str):
            parts.append(text)
        else:
            parts.append(f"<{block.get('type', 'block')}>")
    shown = json.dumps(_shorten(" ".join(parts)), ensure_ascii=False)
    return f"{printable(message.id)} [{describe_source(message.source)}] {shown}"


def describe_output(output: Output) -> str:
    """A step's reply (R43) as ``"text…"``: its text, other parts as ``<reasoning>``,
    ``<call name>``, ``<result>``."""
    said = []
    for part in output.parts:
        if isinstance(part, TextPart):
            said.append(part.text)
        elif isinstance(part, ToolCallPart):
            said.append(f"<call {part.name}>")
        else:
            said.append("<result>" if isinstance(part, ToolResultPart) else "<reasoning>")
    return json.dumps(_shorten(" ".join(said)), ensure_ascii=False)


def _entry_ids(entry: Entry) -> str:
    label = printable(entry.message.id) + (" (waking)" if entry.wakeup else "")
    if entry.contexts:
        label += " +contexts " + ",".join(printable(c.id) for c in entry.contexts)
    return label


def describe_entry(entry: Entry) -> str:
    ids = ", ".join(printable(c.id) for c in entry.contexts)
    contexts = " +contexts " + ids if entry.contexts else ""
    waking = "waking" if entry.wakeup else "not waking"
    return f"{describe_message(entry.message)} ({waking}{contexts})"


def describe_cause(cause: Cause) -> str:
    if isinstance(cause, HookCause):
        return f"hook ({_free(cause.reason)})"
    return cause.kind


def describe_event(event: DurableEvent) -> str:
    """One line of detail for a durable event (its type printed separately)."""
    if isinstance(event, InboxSpliced):
        parts = [f"{event.target} @{event.start}"]
        if event.removed_count:
            verb = (
                f"removed {event.removed_count} ({event.outcome})"
                if event.outcome
                else (f"claimed {event.removed_count}")
            )
            parts.append(verb)
        if event.inserted:
            parts.append("inserted " + ", ".join(_entry_ids(e) for e in event.inserted))
        return ", ".join(parts)
    if isinstance(event, TurnStarted):
        return f"turn {event.turn}"
    if isinstance(event, StepStarted | StepEnded):
        return f"turn {event.turn}, step {event.step}"
    if isinstance(event, MessageAdmitted):
        return describe_message(event.message)
    if isinstance(event, TurnAborted):
        return f"turn {event.turn}: {describe_cause(event.cause)}"
    if isinstance(event, HostRecord):
        output = read_output(event)
        if output is not None:
            return describe_output(output)
        return _shorten(json.dumps(thaw_json(event.data), ensure_ascii=False))
    assert isinstance(event, TurnEnded)
    return f"turn {event.turn}: {describe_reason(event.reason)}"


def describe_reason(reason: TurnEndReason) -> str:
    if isinstance(reason, ErrorReason):
        return f"error: {_free(reason.message)} ({_free(reason.code)})"
    if isinstance(reason, AbortedReason):
        return f"aborted ({describe_cause(reason.cause)})"
    return reason.kind


def describe_notification(note: Notification) -> str:
    if isinstance(note, InboxClaimed):
        return f"{printable(note.message.id)}, turn {note.turn}"
    if isinstance(note, InboxMoved):
        return f"{printable(note.message.id)} -> {note.target}"
    if isinstance(note, InboxInserted | InboxDiscarded):
        return printable(note.message.id)
    if isinstance(note, StatusChanged):
        return note.status
    if isinstance(note, CancelRequested):
        return describe_cause(note.cause)
    if isinstance(note, AgentError):
        where = f"turn {note.turn}" + (f", step {note.step}" if note.step is not None else "")
        return f"{where}: {_free(note.message)} ({_free(note.code)})"
    return ""


def format_durable(seq: int, event: DurableEvent) -> str:
    return f"  #{seq:<4} {printable(event.type):<22} {describe_event(event)}"


def format_live(note: Notification) -> str:
    return f"  ~     {note.type:<22} {describe_notification(note)}".rstrip()
