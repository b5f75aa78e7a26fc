"""What a host says while a step runs (R43): the step's ``StepOutput`` and the agent's fan-out.

The driver opens one ``StepOutput`` per step it runs and hands it to the host as
``signal.output`` while ``run_step`` runs (at any other time ``signal.output`` is a
closed one). Each call checks the message it makes against the output so far
(``inbox_core.output``: ``InvalidInput`` when it does not fit), cuts what passes the
limits (a marker part ends the output, never an error), folds it in and hands it to
the agent's ``OutputFanout``, which gives it to every sink in publish order: the
in-process subscribers of ``LoopAgent.subscribe_output`` and whatever else is
``add``-ed (a store that carries live output to other processes plugs in there). The
step ends, or its turn is aborted: the output closes, publishing raises
``OutputClosed``, and the driver records ``host/output`` for a host that published
without recording one. None of this touches the commit path: live output is never
logged.

Parts are kept as the pure values with each part's later deltas in a list beside it,
joined when someone reads ``parts``: publishing costs the delta's length, not the
part's.
"""

from __future__ import annotations

import logging
import time
from collections import deque
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Final, Protocol

from inbox_core import limits
from inbox_core.errors import InvalidInput, shown
from inbox_core.events import HostRecord, records_size
from inbox_core.output import (
    CONTENT_SIZE,
    MESSAGE_TYPES,
    OUTPUT_RECORD,
    RECORD_SIZE,
    Output,
    OutputMessage,
    OutputPart,
    OutputSnapshot,
    ReasoningDelta,
    ReasoningPart,
    TextDelta,
    TextPart,
    ToolCallDelta,
    ToolCallEnd,
    ToolCallStart,
    ToolResult,
    Usage,
    appended,
    check_message,
    delta,
    fitted,
    opened,
    output_record,
    part_size,
)
from inbox_core.shell.errors import OutputClosed
from inbox_core.validators import trusted

__all__ = [
    "CLOSED",
    "OutputFanout",
    "OutputSink",
    "OutputSubscriber",
    "StepOutput",
    "rfc3339",
    "with_output",
]

logger: Final = logging.getLogger("inbox_core.shell")

OutputSubscriber = Callable[[OutputMessage], None]
"""``subscribe_output``'s callback: each message as it is published."""


def rfc3339(seconds: float) -> str:
    """A time in seconds since the epoch as RFC 3339 in UTC, to the millisecond (a
    ``host/output``'s times)."""
    millis = int(seconds * 1000)
    whole, fraction = divmod(millis, 1000)
    prefix = _SECOND.get(whole)
    if prefix is None:  # steps ending in the same second share it: formatted once
        prefix = datetime.fromtimestamp(whole, UTC).isoformat()[:19]  # YYYY-MM-DDTHH:MM:SS
        _SECOND.clear()
        _SECOND[whole] = prefix
    return f"{prefix}.{fraction:03d}Z"


_SECOND: dict[int, str] = {}


class OutputSink(Protocol):
    """Where a step's live output goes: called in the event loop, in publish order, it must
    not block (a sink that carries output elsewhere queues it and returns)."""

    def on_output(self, message: OutputMessage) -> None:
        """One message, as published (after the limits: what the step's output holds)."""
        ...

    def on_step_end(self, output: StepOutput) -> None:
        """The step's output closed (the step returned, or its turn was aborted): its
        ``parts`` are final; its ``host/output`` is on its way to the log, if recorded."""
        ...


def _text(value: object, what: str) -> str:
    """A delta or a content as given, at most ``MAX_OUTPUT_SIZE`` characters: more cannot
    fit a step's output, and what passes it is cut with a marker, not refused."""
    if not isinstance(value, str):
        raise InvalidInput(f"{what} must be a str, got {shown(value)}")
    return value[: limits.MAX_OUTPUT_SIZE]


class StepOutput:
    """The publisher of step ``step`` of turn ``turn`` (R43): ``signal.output`` while the
    host's ``run_step`` runs.

    Each publishing call returns the index of the part it touched. ``text`` and
    ``reasoning`` append to part ``part``, or (None) to the last part when it is of that
    type, else to a new one; ``tool_call`` starts a call (and streams ``arguments`` when
    given), ``tool_call_arguments`` and ``tool_call_end`` continue and end it,
    ``tool_result`` adds a result; ``publish`` takes any ``OutputMessage`` of this step.
    A message that does not fit is ``InvalidInput``, and after the step ended or its turn
    was aborted every call raises ``OutputClosed``: either changes nothing, and the step
    goes on. Past the limits (``maxOutputParts``, ``maxOutputSize``) what fits is kept,
    one marker part ends the output, and later calls change nothing (they return the
    marker's index). ``output()`` and ``record()`` give the step's ``host/output`` so far,
    its times filled in. Call it from the event loop that runs the agent.
    """

    __slots__ = (
        "_calls",
        "_closed",
        "_cut",
        "_ended",
        "_ended_at",
        "_started_at",
        "_parts",
        "_sink",
        "_size",
        "_tails",
        "clock",
        "step",
        "turn",
    )

    def __init__(
        self,
        turn: int,
        step: int,
        sink: OutputSink | None = None,
        *,
        clock: Callable[[], float] = time.time,
    ) -> None:
        for value, what in ((turn, "turn"), (step, "step")):
            if type(value) is not int or not 1 <= value <= limits.MAX_SAFE_INTEGER:
                raise InvalidInput(f"a step output's {what} is an int >= 1, got {shown(value)}")
        self.turn = turn
        self.step = step
        self.clock = clock
        self._started_at = clock()  # formatted only when a record needs it
        self._sink = sink
        self._parts: list[OutputPart] = []
        self._tails: dict[int, list[str]] = {}  # each part's deltas not yet joined into it
        self._calls: dict[str, int] = {}  # tool call id -> its part
        self._ended: set[str] = set()  # tool calls ended
        self._size = 0
        self._cut: int | None = None  # the marker's part, once the output was cut
        self._closed = False
        self._ended_at: float | None = None

    # ------------------------------------------------------------------- state

    @property
    def closed(self) -> bool:
        """Whether the step ended or its turn was aborted: publishing raises ``OutputClosed``."""
        return self._closed

    @property
    def parts(self) -> tuple[OutputPart, ...]:
        """The parts so far (what folding every message published so far gives)."""
        if self._tails:
            for index, chunks in self._tails.items():
                self._parts[index] = appended(self._parts[index], "".join(chunks))
            self._tails.clear()
        return tuple(self._parts)

    def output(self, *, model: str | None = None, usage: Usage | None = None) -> Output:
        """The step's reply so far, with its start and its end (now, if it runs)."""
        ended = rfc3339(self._ended_at if self._ended_at is not None else self.clock())
        if model is None and usage is None:  # every field checked already (D31)
            return _OUTPUT(self.parts, None, None, self.started_at, ended)
        return Output(self.parts, model, usage, self.started_at, ended)

    @property
    def started_at(self) -> str:
        """When the step started (RFC 3339)."""
        return rfc3339(self._started_at)

    @property
    def said(self) -> bool:
        """Whether the step said anything (its output has a part)."""
        return bool(self._parts)

    def record(self, *, model: str | None = None, usage: Usage | None = None) -> HostRecord:
        """``output()`` as the step's ``host/output`` record."""
        return output_record(self.output(model=model, usage=usage))

    def snapshot(self) -> OutputSnapshot:
        """The output so far as a snapshot (what a watcher joining now starts from)."""
        return OutputSnapshot(self.turn, self.step, self.parts)

    def close(self) -> None:
        """Shell-internal: the step ended or its turn was aborted (idempotent)."""
        if self._closed:
            return
        self._closed = True
        self._ended_at = self.clock()
        if self._sink is not None:
            self._sink.on_step_end(self)

    # -------------------------------------------------------------- publishing

    def text(self, delta: str, *, part: int | None = None) -> int:
        """Append ``delta`` to text part ``part`` (None: the last part if it is text, else
        a new one)."""
        return self._stream(TextDelta, TextPart, delta, part)

    def reasoning(self, delta: str, *, part: int | None = None) -> int:
        """Append ``delta`` to reasoning part ``part`` (None: as ``text``)."""
        return self._stream(ReasoningDelta, ReasoningPart, delta, part)

    def tool_call(self, id: str, name: str, arguments: str = "") -> int:
        """Start tool call ``id`` of tool ``name`` as a new part; ``arguments``, when given,
        is its first arguments delta."""
        self._open()
        arguments = _text(arguments, "arguments")
        index = self.publish(ToolCallStart(self.turn, self.step, len(self._parts), id, name))
        if arguments and self._cut is None:
            self.tool_call_arguments(id, arguments)
        return index

    def tool_call_arguments(self, id: str, delta: str) -> int:
        """Append ``delta`` to tool call ``id``'s arguments (their JSON text)."""
        self._open()
        delta = _text(delta, "delta")
        return self.publish(ToolCallDelta(self.turn, self.step, self._call(id), id, delta))

    def tool_call_end(self, id: str) -> int:
        """Tool call ``id`` is whole: no more arguments follow."""
        self._open()
        return self.publish(ToolCallEnd(self.turn, self.step, self._call(id), id))

    def tool_result(self, id: str, content: str, *, is_error: bool = False) -> int:
        """Add what tool call ``id`` returned (as text) as a new part."""
        self._open()
        content = _text(content, "content")
        index = len(self._parts)
        return self.publish(ToolResult(self.turn, self.step, index, id, content, is_error))

    def publish(self, message: OutputMessage) -> int:
        """Publish ``message``, an ``OutputMessage`` of this step; the part it touched."""
        self._open()
        if self._cut is not None:
            return self._cut
        if not isinstance(message, MESSAGE_TYPES):
            raise InvalidInput(f"not an output message: {shown(message)}")
        if (message.turn, message.step) != (self.turn, self.step):
            raise InvalidInput(
                f"a message of turn {message.turn}, step {message.step} published for step "
                f"{self.step} of turn {self.turn}"
            )
        return self._publish(message)

    def _publish(self, message: OutputMessage) -> int:
        """Check, cut, fold and hand on a message of this step."""
        check_message(self._parts, message, self._ended)
        kept, cut = fitted(message, self._size, len(self._parts))
        for each in kept:
            self._apply(each)
        if cut:
            self._cut = len(self._parts) - 1
            logger.warning(
                "turn %d, step %d: the step's output passed its limits and was cut",
                self.turn,
                self.step,
            )
        return kept[0].part

    # --------------------------------------------------------------- internals

    def _open(self) -> None:
        if self._closed:
            raise OutputClosed(
                f"step {self.step} of turn {self.turn} is not running: its output is closed"
                if self.step
                else "no step is running: signal.output takes output only while run_step runs"
            )

    def _stream(
        self,
        kind: type[TextDelta | ReasoningDelta],
        part_type: type[OutputPart],
        value: object,
        part: int | None,
    ) -> int:
        self._open()
        text = _text(value, "delta")
        if self._cut is not None:
            return self._cut
        if part is None:
            last = len(self._parts) - 1
            part = last if last >= 0 and type(self._parts[last]) is part_type else last + 1
        elif type(part) is not int or not 0 <= part <= limits.MAX_SAFE_INTEGER:
            return self.publish(kind(self.turn, self.step, part, text))  # InvalidInput
        if not limits.scalar_values(text):
            limits.scalar_text(text, "text")  # InvalidInput, as the message would say
        # every field checked as the message's own checks would (D31): the hot path
        message = _TRUSTED_DELTAS[kind](self.turn, self.step, part, text)
        parts = self._parts
        if (
            part < len(parts)
            and type(parts[part]) is part_type
            and self._size + len(text) <= CONTENT_SIZE
        ):  # more of an existing part, within the limits: what check and fit would find
            if text:
                self._tails.setdefault(part, []).append(text)
                self._size += len(text)
            if self._sink is not None:
                self._sink.on_output(message)
            return part
        return self._publish(message)

    def _call(self, id: object) -> int:
        """The part of tool call ``id`` (the marker's once the output was cut: its start may
        have been dropped)."""
        index = self._calls.get(id) if isinstance(id, str) else None
        if index is not None:
            return index
        if self._cut is not None:
            return self._cut
        raise InvalidInput(f"no tool call {shown(id)} started in this step")

    def _apply(self, message: OutputMessage) -> None:
        """Fold a message that fits in, and hand it on."""
        index = message.part
        if index == len(self._parts):
            part = opened(message)
            self._parts.append(part)
            self._size += part_size(part)
            if isinstance(message, ToolCallStart):
                self._calls[message.id] = index
        else:
            more = delta(message)
            if more:
                self._tails.setdefault(index, []).append(more)
                self._size += len(more)
            if isinstance(message, ToolCallEnd):
                self._ended.add(message.id)
        if self._sink is not None:
            self._sink.on_output(message)

    def __repr__(self) -> str:
        state = "closed" if self._closed else "open"
        return f"StepOutput(turn={self.turn}, step={self.step}, {len(self._parts)} parts, {state})"


_OUTPUT: Final = trusted(Output)
_TRUSTED_DELTAS: Final[dict[type, Callable[[int, int, int, str], TextDelta | ReasoningDelta]]] = {
    TextDelta: trusted(TextDelta),
    ReasoningDelta: trusted(ReasoningDelta),
}


def _closed() -> StepOutput:
    output = StepOutput(1, 1, clock=lambda: 0.0)
    output.turn = output.step = 0  # no step's
    output._closed = True
    return output


CLOSED: Final = _closed()
"""``signal.output`` while no step runs: every publishing call raises ``OutputClosed``."""


def with_output(records: tuple[HostRecord, ...], output: StepOutput) -> tuple[HostRecord, ...]:
    """A step's records and, after them, its ``host/output`` (R43): when it said something
    and the host recorded no ``host/output`` of its own. A host whose own records leave no
    room for it in the report (``RECORD_SIZE`` of ``MAX_VALUE_SIZE``) keeps them: the
    output is left out, with a warning."""
    if not output.said or any(record.type == OUTPUT_RECORD for record in records):
        return records
    if records_size(records) + RECORD_SIZE > limits.MAX_VALUE_SIZE:
        logger.warning(
            "turn %d, step %d: the host's records leave no room for its host/output; "
            "the step's output is not recorded",
            output.turn,
            output.step,
        )
        return records
    return (*records, output.record())


class OutputFanout:
    """An agent's live output (R43): opens each step's ``StepOutput`` and gives what it
    publishes to every sink, in publish order, never nested (a sink that publishes has its
    message delivered after the current one). ``report(message, error)`` gets what a sink
    raises: a subscriber never stops the host."""

    __slots__ = ("_delivering", "_queue", "_report", "_sinks", "clock")

    def __init__(
        self,
        report: Callable[[str, BaseException], None],
        *,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._report = report
        self.clock = clock
        self._sinks: tuple[OutputSink, ...] = ()
        self._queue: deque[tuple[OutputMessage | StepOutput, tuple[OutputSink, ...]]] = deque()
        self._delivering = False

    def open(self, turn: int, step: int) -> StepOutput:
        """The publisher of a step that starts now."""
        return StepOutput(turn, step, self, clock=self.clock)

    def add(self, sink: OutputSink) -> Callable[[], None]:
        """Give live output to ``sink`` from now on; returns its (idempotent) removal, after
        which nothing more reaches it, not even what was queued."""
        self._sinks = (*self._sinks, sink)

        def remove() -> None:
            self._sinks = tuple(s for s in self._sinks if s is not sink)

        return remove

    def subscribe(self, callback: OutputSubscriber) -> Callable[[], None]:
        """``add`` a sink that calls ``callback`` with each message."""
        if not callable(callback):
            raise InvalidInput(f"a subscriber must be callable, got {type(callback).__name__}")
        return self.add(_Subscriber(callback))

    def on_output(self, message: OutputMessage) -> None:
        self._deliver(message)

    def on_step_end(self, output: StepOutput) -> None:
        self._deliver(output)

    def _deliver(self, item: OutputMessage | StepOutput) -> None:
        if not self._sinks:
            return
        self._queue.append((item, self._sinks))
        if self._delivering:
            return  # a sink published: the outer loop delivers it next
        self._delivering = True
        try:
            while self._queue:
                each, sinks = self._queue.popleft()
                for sink in sinks:
                    if sink in self._sinks:
                        self._give(sink, each)
        finally:
            self._delivering = False

    def _give(self, sink: OutputSink, item: OutputMessage | StepOutput) -> None:
        try:
            if isinstance(item, StepOutput):
                sink.on_step_end(item)
            else:
                sink.on_output(item)
        except Exception as error:
            self._report(f"inbox_core.shell: output sink {sink!r} raised", error)


class _Subscriber:
    """A callback as a sink: messages only."""

    __slots__ = ("callback",)

    def __init__(self, callback: OutputSubscriber) -> None:
        self.callback = callback

    def on_output(self, message: OutputMessage) -> None:
        self.callback(message)

    def on_step_end(self, output: StepOutput) -> None:
        pass

    def __repr__(self) -> str:
        return repr(self.callback)
