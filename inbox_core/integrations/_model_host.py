"""What the model hosts share (specs/shell.md sections 11 and 11a): their failure codes, how
they describe an error, how they race a model call or a tool against the abort signal (and
a clock), how they publish live output (R43) without ever failing on it, how they make a
record of whatever a provider or a tool said (``fit_record``, over ``_fit.fit_json``), and
how they find the log's tail they restore from (R41).

Framework-free but for ``pydantic_core`` (every host's SDK depends on pydantic), so each
host imports it without importing another's SDK.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import math
import time
from collections.abc import Callable, Coroutine, Hashable, Iterable, Iterator, Sequence
from typing import Any, Final

from pydantic_core import to_json, to_jsonable_python

from inbox_core import limits
from inbox_core.commands import Completed, Failed, StepOutcome
from inbox_core.errors import InvalidInput
from inbox_core.events import RECORD_RESERVE, DurableEvent, HostRecord
from inbox_core.history import RecordsTranscript, TranscriptBlock, TurnTranscript
from inbox_core.integrations._fit import escaped, fit_json
from inbox_core.json_values import json_size
from inbox_core.output import RECORD_SIZE as OUTPUT_RECORD_SIZE
from inbox_core.output import Usage
from inbox_core.shell.errors import OutputClosed
from inbox_core.shell.host import AbortSignal, closing
from inbox_core.shell.output import StepOutput
from inbox_core.shell.stores.checkpoints import LogHistory

__all__ = [
    "MAX_SECONDS",
    "count",
    "limit_seconds",
    "seconds",
    "CONTENT_FILTER",
    "FAILURE_CODES",
    "GUARDRAIL",
    "MODEL_ERROR",
    "MODEL_TIMEOUT",
    "NOT_RUN",
    "RECORD_BUDGET",
    "REPLY_LIMIT",
    "SUMMARY_HEADER",
    "SUMMARY_PROMPT",
    "TOOL_DEFERRED",
    "TOOL_ERROR",
    "TOOL_RETRIES",
    "TOOL_TIMEOUT",
    "Progress",
    "Settled",
    "Voice",
    "contained",
    "describe",
    "failed",
    "fit_record",
    "fitted",
    "host_records",
    "settle",
    "tail",
    "usage",
    "value_text",
]

logger: Final = logging.getLogger("inbox_core.integrations")

# ------------------------------------------------------------------ failure codes

MODEL_ERROR: Final = "model-error"
"""The model call raised (message ``"<class>: <text>"``; a ``CancelledError`` the provider raised
while nobody stopped the turn too), its stream was not a reply (garbage, or it ended before the
reply did), or the provider ended the reply with an error."""
MODEL_TIMEOUT: Final = "model-timeout"
"""The model call streamed nothing for the host's ``timeout`` seconds."""
CONTENT_FILTER: Final = "content-filter"
"""The provider's safety system stopped the reply (a content filter, Anthropic's ``refusal``)."""
TOOL_ERROR: Final = "tool-error"
"""A tool raised (what a tool answers the model with, a tool failure it reports, is no error)."""
TOOL_TIMEOUT: Final = "tool-timeout"
"""A tool ran longer than the host's ``tool_timeout`` seconds."""
TOOL_RETRIES: Final = "tool-retries"
"""The model called a tool that does not exist, or with arguments it refused, more often in one
turn than the host's retries allow."""
TOOL_DEFERRED: Final = "tool-deferred"
"""A tool needs approval or external execution, which the host does not run."""
GUARDRAIL: Final = "guardrail"
"""An input or output guardrail's tripwire was triggered (the OpenAI Agents SDK's)."""
FAILURE_CODES: Final = (
    MODEL_ERROR,
    MODEL_TIMEOUT,
    CONTENT_FILTER,
    TOOL_ERROR,
    TOOL_TIMEOUT,
    TOOL_RETRIES,
    TOOL_DEFERRED,
    GUARDRAIL,
)


def describe(error: BaseException, limit: int = limits.MAX_JSON_SIZE) -> str:
    """``"<class>: <text>"`` made storable (``limits.storable_text``: lone surrogates escaped,
    cut to ``limit`` characters), never raising (an exception's ``__str__`` may)."""
    name = type(error).__name__
    try:
        text = str(error)
    except BaseException:  # a __str__ may raise anything, SystemExit included
        text = ""
    return limits.storable_text(f"{name}: {text}" if text else name, limit)


def failed(message: str, code: str) -> Failed:
    """``Failed(message, code)`` with the message made storable (a tool's name or a provider's
    text may hold anything)."""
    return Failed(limits.storable_text(message), code)


# ------------------------------------------------------------------ racing work


def cancelled_by_caller() -> bool:
    """Whether the running task is being cancelled (a ``CancelledError`` raised while it is
    not comes from the work itself: a failure, not an abort)."""
    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0


class Escaped(Exception):
    """Work raised a ``BaseException`` that is no ``Exception``: a ``CancelledError`` while
    nobody cancelled it (a provider's bug), a ``SystemExit`` or ``KeyboardInterrupt`` (which
    asyncio re-raises out of the event loop from any task: every agent of the process would
    stop), a ``GeneratorExit``. Carried out of the work's task as an error of its own."""

    def __init__(self, error: BaseException) -> None:
        super().__init__(error)
        self.error = error


def contained(error: BaseException, task: asyncio.Task[Any] | None) -> bool:
    """Whether ``error``, raised in ``task``, is the work's (to report) rather than the task
    being cancelled by its caller or its coroutine being closed (to let through)."""
    if isinstance(error, asyncio.CancelledError):
        return not cancelled_by_caller()
    return not closing(error, task)


@dataclasses.dataclass
class Settled:
    """How raced work ended: its value or error, or stopped: ``aborted`` (the signal tripped)
    or ``timed_out`` (it made no progress in time); ``abandoned`` when, stopped, it did not
    end within the grace it was given (it runs on, unawaited)."""

    value: Any = None
    error: BaseException | None = None
    aborted: bool = False
    timed_out: bool = False
    abandoned: bool = False

    @property
    def stopped(self) -> bool:
        return self.aborted or self.timed_out

    def call_ended(self, timeout: float | None) -> StepOutcome | None:
        """A model call's step outcome when it gave no reply (None when it did): an abort
        ``Completed()`` (the core ends the turn aborted), ``model-timeout``, ``model-error``."""
        if self.aborted:
            return Completed()
        if self.timed_out:
            return failed(f"the model streamed nothing for {timeout} seconds", MODEL_TIMEOUT)
        if self.error is not None:
            return failed(describe(self.error), MODEL_ERROR)
        return None

    def tools_ended(self, timeout: float | None) -> StepOutcome | None:
        """The tools' step outcome when they did not all end (None when they did): an abort
        ``Completed()``, ``tool-timeout``, or ``tool-error`` (a failure of the gathering
        itself: never lost)."""
        if self.aborted:
            return Completed()
        if self.timed_out:
            return failed(f"a tool ran longer than {timeout} seconds", TOOL_TIMEOUT)
        if self.error is not None:
            return failed(f"running the tools raised {describe(self.error)}", TOOL_ERROR)
        return None

    def summarized(self, timeout: float | None) -> bool:
        """Whether a compaction's call gave a reply (False: it was aborted); raises what it
        failed with, as ``run_maintenance`` expects of a failed job."""
        if self.timed_out:
            raise TimeoutError(f"the model streamed nothing for {timeout} seconds")
        if self.error is not None:
            raise self.error
        return not self.aborted


class Progress:
    """When raced work last made progress: ``settle`` times it out ``idle`` seconds after
    its last ``touch`` (None: never)."""

    __slots__ = ("idle", "last")

    def __init__(self, idle: float | None) -> None:
        self.idle = idle
        self.last = time.monotonic()

    def touch(self) -> None:
        self.last = time.monotonic()

    def left(self) -> float | None:
        """Seconds until the work times out (None: never; 0 or less: it has)."""
        return None if self.idle is None else self.last + self.idle - time.monotonic()


SUMMARY_PROMPT: Final = (
    "Summarize the conversation so far for your own later use: the user's goals, the facts "
    "and decisions established, tool results that still matter, and what is still open. "
    "Reply with the summary only."
)
SUMMARY_HEADER: Final = "[A summary of the conversation so far]\n"
"""What a compaction's summary, recorded as a user message, starts with."""
NOT_RUN: Final = "[this tool call was not run: its step was stopped or failed first]"
"""The result a request gives a tool call the log holds no result for."""
REPLY_LIMIT: Final = 2**25
"""Characters a reply may stream before the host stops it (``model-error``): a provider that
streams without end costs one turn, not the process's memory."""
GRACE: Final = 5.0
"""Seconds stopped work gets to end after it is cancelled, before it is abandoned."""
_abandoned: set[asyncio.Task[Any]] = set()  # strong references: a task may not vanish mid-run

MAX_SECONDS: Final = 1e9
"""The longest timeout or grace a host takes (about 31 years; asyncio's clock holds no more)."""


def seconds(name: str, value: object) -> float:
    """A host option in seconds: a number in ``[0, MAX_SECONDS]``; ``InvalidInput`` naming
    ``name`` for anything else (a bool, a NaN, an infinity, an int too large for a float),
    so a bad option fails when the host is built, never later inside a step."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        try:
            number = float(value)
        except OverflowError:
            number = math.inf
        if 0 <= number <= MAX_SECONDS:
            return number
    raise InvalidInput(
        f"{name} must be a number of seconds in [0, {MAX_SECONDS:g}], got {value!r:.80}"
    )


def limit_seconds(name: str, value: object) -> float | None:
    """``seconds``, or None for no limit at all."""
    return None if value is None else seconds(name, value)


def count(name: str, value: object, *, least: int = 0) -> int:
    """A host option that counts (retries, tokens): an int >= ``least`` (``InvalidInput``)."""
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        raise InvalidInput(f"{name} must be an int >= {least}, got {value!r:.80}")
    return value


def _abandon(task: asyncio.Task[Any]) -> None:
    logger.warning("inbox_core.integrations: %r ignored its cancellation; left running", task)
    _abandoned.add(task)

    def forget(done: asyncio.Task[Any]) -> None:
        _abandoned.discard(done)
        if not done.cancelled():
            done.exception()  # retrieved: whatever it raised at last is no one's concern

    task.add_done_callback(forget)


async def settle(
    work: Coroutine[Any, Any, Any],
    signal: AbortSignal,
    *,
    progress: Progress | None = None,
    grace: float = GRACE,
) -> Settled:
    """Run ``work`` as a task until it ends, ``signal`` trips or ``progress`` times out; a
    stopped task is cancelled and awaited at most ``grace`` seconds (a provider or a tool
    that ignores its cancellation costs the step that long, then runs on unawaited).

    The work runs in a task of its own so that its context managers (an open stream) are
    entered and exited in one task. A ``CancelledError`` the work raises by itself is its
    error, not an abort, and so is any ``BaseException`` (``Escaped``).
    """

    async def guarded() -> Any:
        me = asyncio.current_task()
        try:
            return await work
        except Exception:
            raise
        except BaseException as error:
            if not contained(error, me):
                raise
            raise Escaped(error) from error

    clock = progress or Progress(None)
    task = asyncio.ensure_future(guarded())
    tripped = asyncio.ensure_future(signal.wait())
    timed_out = False
    try:
        while not task.done() and not tripped.done():
            left = clock.left()
            if left is not None and left <= 0:
                timed_out = True
                break
            await asyncio.wait({task, tripped}, timeout=left, return_when=asyncio.FIRST_COMPLETED)
    finally:
        tripped.cancel()
        if not task.done():
            task.cancel()
            await asyncio.wait({task}, timeout=grace)
    stopped = not task.done() or task.cancelled() or timed_out or (signal.aborted and not _ok(task))
    if stopped:
        if not task.done():
            _abandon(task)
        elif not task.cancelled():
            task.exception()  # retrieved: what a stopped task raised on its way out is moot
        aborted = signal.aborted and not timed_out
        return Settled(aborted=aborted, timed_out=not aborted, abandoned=not task.done())
    error = task.exception()
    if isinstance(error, Escaped):
        error = error.error
    return Settled(None, error) if error is not None else Settled(task.result())


def _ok(task: asyncio.Task[Any]) -> bool:
    """Whether a done task ended with a value (then it finished before an abort stopped it)."""
    return not task.cancelled() and task.exception() is None


# ------------------------------------------------------------------ tool values


def value_text(value: Any) -> str:
    """A Python value as the JSON text a model would be sent (a str as it is, surrogates
    escaped), or, when nothing can serialize it, a text naming its type. Never raises: the
    value's own methods (``__repr__``, a serializer) may, and each attempt stands alone."""
    if isinstance(value, str):
        return escaped(value)
    attempts: tuple[Callable[[], str], ...] = (
        lambda: to_json(value, fallback=_shown).decode(),  # big integers, any type
        lambda: limits.dump_json(to_jsonable_python(value, fallback=_shown)),  # surrogates
        lambda: limits.dump_json(value),  # plain values nested deeper than pydantic goes
    )
    failure: Exception | None = None
    for attempt in attempts:
        try:
            return escaped(attempt())
        except Exception as error:
            failure = error
    assert failure is not None
    return f"[a {type(value).__name__} no JSON can hold: {describe(failure, 200)}]"


def _shown(value: Any) -> str:
    """``repr(value)``, or its type's name when that raises."""
    try:
        return repr(value)
    except Exception:
        return f"<{type(value).__name__}>"


# ------------------------------------------------------------------ records

RECORD_BUDGET: Final = (limits.MAX_VALUE_SIZE - OUTPUT_RECORD_SIZE) // 2 - 2 * RECORD_RESERVE - 2**8
"""The most a host's own record measures: a step's reply, its tool results (two records) and
its ``host/output`` fit one report (``MAX_VALUE_SIZE``), each below ``MAX_JSON_SIZE``."""
UNIT_DEPTH: Final = 5
"""How deep ``fit_record`` looks for the units it may cut (``fit_json``): the strings of a
record ``{"items": [{"content": [{"text": ...}]}]}`` (a message's, a block's, a call's fields)."""


def fit_record(
    record_type: str, data: dict[str, Any], placeholder: Callable[[str], dict[str, Any]]
) -> HostRecord:
    """The record of ``data``, plain JSON as a provider or a tool gave it: as it is when the
    log holds it and it measures at most ``RECORD_BUDGET``; else what fits kept and the rest
    as text, cut with a marker (``fit_json``); when even that cannot represent it (a
    structure too big by itself), ``placeholder(why)``. Never raises for what ``data`` holds."""
    try:
        record = HostRecord(record_type, data)
        if json_size(record.data) <= RECORD_BUDGET:
            return record
    except Exception:  # InvalidInput, a value's own error: not as it is
        pass
    try:
        return fitted(record_type, data)
    except Exception as error:
        note = f"[this {record_type} record could not be recorded: {describe(error, 1000)}]"
        return HostRecord(record_type, placeholder(note))


def fitted(record_type: str, data: Any, unit_depth: int = UNIT_DEPTH) -> HostRecord:
    """The record of ``data`` as ``fit_json`` represents it within ``RECORD_BUDGET``, its units
    ``unit_depth`` levels down; ``InvalidInput`` (or a value's own error) when it cannot be."""
    record = HostRecord(record_type, fit_json(data, RECORD_BUDGET, unit_depth))
    if json_size(record.data) > RECORD_BUDGET:  # a guard: fit_json measures as json_size does
        raise InvalidInput(f"a fitted {record_type} record exceeds {RECORD_BUDGET}")
    return record


def host_records(blocks: Iterable[TranscriptBlock]) -> Iterator[HostRecord]:
    """The host records of a transcript (R30), in log order."""
    for block in blocks:
        if isinstance(block, RecordsTranscript):
            yield from block.records
            continue
        assert isinstance(block, TurnTranscript)
        for item in block.items:
            if isinstance(item, HostRecord):
                yield item
            else:
                yield from (entry for entry in item.items if isinstance(entry, HostRecord))


def tail(history: LogHistory, summary: str) -> list[DurableEvent]:
    """The events a host restores from (SH11, R41): the events the agent's opening read, then
    earlier pages read backwards, until one holds a ``summary`` record (which replaces
    everything before it), in log order; the whole log only when it holds none."""
    pages: list[Sequence[DurableEvent]] = []
    for page in history.pages():
        pages.append(page)
        if any(isinstance(event, HostRecord) and event.type == summary for event in page):
            break
    return [event for page in reversed(pages) for event in page]


# ------------------------------------------------------------------ live output


class Voice:
    """A step's live output (R43) as a model host makes it: ``signal.output`` addressed by the
    provider's own keys (a content block's index, a tool call's id), so each block is a part
    of its own. It never raises: once the step's output is closed (its turn was aborted) or
    for a message that does not fit (a provider's id that is not an id), it publishes nothing
    and the step goes on; the output keeps what it was told before."""

    __slots__ = ("_calls", "_output", "_parts")

    def __init__(self, step_output: StepOutput) -> None:
        self._output = step_output
        self._parts: dict[Hashable, int] = {}
        self._calls: set[str] = set()

    @property
    def output(self) -> StepOutput:
        return self._output

    def text(self, key: Hashable, delta: str) -> None:
        """More text of the provider's block ``key`` (its first opens a part)."""
        self._stream(key, delta, self._output.text)

    def reasoning(self, key: Hashable, delta: str) -> None:
        """More reasoning (thinking) of the provider's block ``key``."""
        self._stream(key, delta, self._output.reasoning)

    def tool_call(self, id: str, name: str, arguments: str = "") -> None:
        """Tool call ``id`` starts (once: a second start is ignored)."""
        if id in self._calls:
            return
        self._calls.add(id)
        self._say(lambda: self._output.tool_call(id, name, arguments))

    def tool_arguments(self, id: str, delta: str) -> None:
        if delta:
            self._say(lambda: self._output.tool_call_arguments(id, delta))

    def tool_end(self, id: str) -> None:
        self._say(lambda: self._output.tool_call_end(id))

    def tool_result(self, id: str, content: str, *, is_error: bool = False) -> None:
        self._say(lambda: self._output.tool_result(id, content, is_error=is_error))

    def record(self, model: object = None, usage: Usage | None = None) -> HostRecord | None:
        """The step's ``host/output`` (R43) with ``model`` (when it is a name the form holds)
        and ``usage``; None when the step said nothing."""
        if not self._output.parts:
            return None
        name = model if isinstance(model, str) and 0 < len(model) <= limits.MAX_ID_LENGTH else None
        try:
            return self._output.record(model=name, usage=usage)
        except InvalidInput:  # a name the form does not hold (a lone surrogate)
            return self._output.record(usage=usage)

    def _stream(self, key: Hashable, delta: str, publish: Callable[..., int]) -> None:
        if not delta:
            return
        part = self._parts.get(key)
        if part is not None:
            self._say(lambda: publish(delta, part=part))
            return
        index = self._say(lambda: publish(delta, part=len(self._output.parts)))
        if index is not None:
            self._parts[key] = index

    def _say(self, publish: Callable[[], int]) -> int | None:
        try:
            return publish()
        except (OutputClosed, InvalidInput):
            return None


def usage(input_tokens: object, output_tokens: object) -> Usage | None:
    """A ``Usage`` of what a provider reported, or None when it reported no plain counts a
    ``Usage`` holds (ints from 0 to ``MAX_SAFE_INTEGER``: a larger one raised, and the step
    lost its records for a number in its report)."""
    counts = (input_tokens, output_tokens)
    if all(_count(n) for n in counts):
        return Usage(*counts)  # type: ignore[arg-type]
    return None


def _count(value: object) -> bool:
    return type(value) is int and 0 <= value <= limits.MAX_SAFE_INTEGER
