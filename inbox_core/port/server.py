"""The reference speaking the port protocol: ``python -m inbox_core.port``.

It holds one agent: the state ``load`` replays (or the initial state) and the
commands ``apply`` reduces on it. Every answer comes from the same functions the
vectors use (``vectors.apply_step``, ``codec.projection_to_json``,
``codec.folds_to_json``), so the reference port is the reference.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import IO, Any, TextIO

from inbox_core.codec import folds_to_json, projection_to_json
from inbox_core.errors import InboxCoreError
from inbox_core.events import DurableEvent
from inbox_core.history import goal_rounds
from inbox_core.port.protocol import (
    PARTS,
    PROTOCOL_VERSION,
    ProtocolError,
    check_request,
    decode,
    encode,
    failure,
    success,
)
from inbox_core.state import AgentState
from inbox_core.vectors import apply_step, load_log

Document = dict[str, Any]


class ReferencePort:
    """One agent behind the protocol; ``handle`` answers one request document."""

    name = "inbox-core reference"
    parts: tuple[str, ...] = PARTS

    def __init__(self) -> None:
        self.state = AgentState.initial()
        self.log: list[DurableEvent] = []
        self.handlers: dict[str, Callable[[Document], Document]] = {
            "hello": self.hello,
            "load": self.load,
            "apply": self.apply,
            "projection": self.projection,
            "fold": self.fold,
        }

    def handle(self, document: object) -> Document:
        try:
            request = check_request(document)
            return self.handlers[request["op"]](request)
        except InboxCoreError as error:
            return failure(error)

    def hello(self, request: Document) -> Document:
        if request["protocol"] != PROTOCOL_VERSION:
            raise ProtocolError(f"this port speaks protocol {PROTOCOL_VERSION}")
        return success("hello", protocol=PROTOCOL_VERSION, name=self.name, parts=list(self.parts))

    def load(self, request: Document) -> Document:
        self.log, self.state = load_log(request["log"])  # nothing changes if it raises
        return success("load", projection=projection_to_json(self.state, self.log))

    def apply(self, request: Document) -> Document:
        run = apply_step(self.state, request["command"])
        if "error" in run.output:
            return {"ok": False, "error": run.output["error"], "message": run.message}
        self.state = run.state
        self.log.extend(run.events)
        return success("apply", **run.output)

    def projection(self, _request: Document) -> Document:
        return success("projection", projection=projection_to_json(self.state, self.log))

    def fold(self, request: Document) -> Document:
        events, _ = load_log(request["log"])  # a log load refuses has no folds
        return success("fold", **reference_folds(events))


def reference_folds(events: Sequence[DurableEvent]) -> Document:
    """Every fold part of a log as ``fold`` answers it (``protocol.FOLD_PARTS``)."""
    return folds_to_json(events) | {"goalRounds": dict(sorted(goal_rounds(events).items()))}


def serve(port: ReferencePort, stdin: IO[bytes] | IO[str], stdout: TextIO) -> int:
    """Answer requests line by line until ``bye`` or the end of input; returns 0.

    ``stdin`` is best binary (``sys.stdin.buffer``): lines end at ``"\n"`` only, and a line
    that is not UTF-8 gets a ``ProtocolError`` answer like any malformed line, and the
    requests after it are served.
    """
    for raw in stdin:
        try:
            line = raw.decode("utf-8") if isinstance(raw, bytes) else raw
            if not line.strip():
                continue
            document = decode(line)
        except (UnicodeDecodeError, ProtocolError) as error:
            problem = (
                error
                if isinstance(error, ProtocolError)
                else ProtocolError(f"not a UTF-8 line: {error}")
            )
            stdout.write(encode(failure(problem)))
            stdout.flush()
            continue
        if isinstance(document, dict) and document.get("op") == "bye":
            stdout.write(encode(success("bye")))
            stdout.flush()
            return 0
        stdout.write(encode(port.handle(document)))
        stdout.flush()
    return 0
