"""What a host supplies (the ``Host`` protocol) and what it is given (``AbortSignal``)."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Generic, Protocol, TypeVar

import attrs

from inbox_core import limits
from inbox_core.commands import Decision, StepOutcome
from inbox_core.errors import InvalidInput, shown
from inbox_core.events import DurableEvent, HostRecord
from inbox_core.shell.output import CLOSED, StepOutput
from inbox_core.values import Cause, UserMessage

__all__ = [
    "AbortSignal",
    "Host",
    "Recorded",
    "RestoringHost",
    "closing",
    "job_answer",
    "run_job",
    "wait_in",
    "wake",
]

T = TypeVar("T")


def _records(value: Iterable[HostRecord]) -> tuple[HostRecord, ...]:
    if isinstance(value, (str, bytes, bytearray, Mapping, HostRecord)):
        raise InvalidInput(f"records are an iterable of HostRecord, got {shown(value)}")
    try:
        records = tuple(value)
    except TypeError:
        raise InvalidInput(f"records are an iterable of HostRecord, got {shown(value)}") from None
    for record in records:
        if not isinstance(record, HostRecord):
            raise InvalidInput(
                f"a record must be a HostRecord ('host/<name>'), got {shown(record)}"
            )
    return records


@attrs.frozen
class Recorded(Generic[T]):
    """A hook's answer together with the host records to log with it (R30).

    ``pre_step`` may return ``Recorded(Enter(...), records)``, ``run_step``
    ``Recorded(Completed(), records)``, ``turn_stopping`` ``Recorded(None,
    records)`` and a maintenance job ``Recorded(answer, records)`` (or just the
    records): ``run_maintenance`` returns its ``answer``. The records are
    appended first, in the same atomic append as the events the answer
    causes: a reply and the ``step/end`` of the step that produced it land
    together or not at all.
    """

    value: T
    records: tuple[HostRecord, ...] = attrs.field(default=(), converter=_records)


def unwrap(result: Any) -> tuple[Any, tuple[HostRecord, ...]]:
    """``(answer, records)`` of a hook's return value (plain answers carry no records)."""
    if isinstance(result, Recorded):
        return result.value, result.records
    return result, ()


async def run_job(
    job: Callable[[AbortSignal], Any], signal: AbortSignal
) -> tuple[Any, tuple[HostRecord, ...]]:
    """Await a maintenance job, ``job(signal)``, and read what it returned (``job_answer``)."""
    pending = job(signal)
    if not inspect.isawaitable(pending):
        raise InvalidInput(
            "a maintenance job is a coroutine function; job(signal) returned "
            f"a {type(pending).__name__}, not an awaitable"
        )
    return job_answer(await pending)


def job_answer(result: object) -> tuple[Any, tuple[HostRecord, ...]]:
    """``(answer, records)`` of a maintenance job's return value (R30, R31).

    A job returns None, an iterable of ``HostRecord`` (no answer) or
    ``Recorded(answer, records)``. Anything else is ``InvalidInput`` saying so;
    a str, a mapping or a lone record is never read as a sequence of records.
    """
    if result is None:
        return None, ()
    if isinstance(result, Recorded):
        return result.value, result.records
    if isinstance(result, Iterable) and not isinstance(
        result, (str, bytes, bytearray, Mapping, HostRecord)
    ):
        records = tuple(result)
        if all(isinstance(record, HostRecord) for record in records):
            return None, records
        shown = next(type(r).__name__ for r in records if not isinstance(r, HostRecord))
        got = f"an iterable holding a {shown}"
    else:
        got = f"a {type(result).__name__}"
    raise InvalidInput(
        "a maintenance job returns None, an iterable of HostRecord, or "
        f"Recorded(answer, records); it returned {got}"
    )


def closing(error: BaseException, task: asyncio.Task[Any] | None) -> bool:
    """Whether ``error`` is ``task``'s coroutine being closed, the one ``GeneratorExit`` to let
    through: ``close()`` throws it into a suspended coroutine, never while ``task`` runs.
    One that a hook, a factory or a tool raises while ``task`` runs it is theirs, an error
    like any other that costs only its agent (R37 v4)."""
    if not isinstance(error, GeneratorExit):
        return False
    try:
        return asyncio.current_task() is not task
    except RuntimeError:  # no running loop: a garbage-collected coroutine is being closed
        return True


def _render(text: Callable[[], object]) -> str | None:
    """``text()`` as a plain str that every store can hold (``limits.storable_text``: lone
    surrogates escaped, cut to ``limits.MAX_JSON_SIZE``); None if it raises or returns
    anything but a str."""
    try:
        value = text()
        return limits.storable_text(value) if isinstance(value, str) else None
    except BaseException:  # a __str__ may raise anything, SystemExit included (R33)
        return None


def describe_failure(error: BaseException) -> tuple[str, str]:
    """The ``(message, code)`` a host failure is reported with: the class name as code,
    ``str(error)`` as message (the code when empty; the ``repr`` when ``str`` itself
    fails). Never raises, whatever the exception does in ``__str__``/``__repr__``, and both
    are valid text whatever they hold (a lone surrogate, 100 MB): R33, nothing a hook
    raises stops the driver."""
    code = _render(lambda: type(error).__name__) or "Exception"
    message = _render(lambda: str(error))
    if message is None:
        message = _render(lambda: repr(error))
    return message or code, code


async def wait_in(waiters: list[asyncio.Future[None]]) -> None:
    """Wait on a new future kept in ``waiters`` until someone ``wake``s it (it leaves the
    list either way, a cancel included)."""
    waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    waiters.append(waiter)
    try:
        await waiter
    finally:
        if waiter in waiters:
            waiters.remove(waiter)


def wake(waiter: asyncio.Future[None]) -> None:
    """Resolve ``waiter`` unless it is done or its loop was closed under it (nobody waits)."""
    if not waiter.done() and not waiter.get_loop().is_closed():
        waiter.set_result(None)


class AbortSignal:
    """Trips when the core marks the turn (or maintenance job) aborted (R23, R31).

    One signal per turn (``turn`` its number) and one per maintenance job
    (``turn`` None).

    ``aborted`` and ``cause`` (the first cause, or None) can be polled;
    ``await wait()`` returns the cause once the signal has tripped, in
    whatever event loop awaits it (an agent driven again in a new loop after
    the first one ended keeps its turn's signal). The shell
    trips it synchronously in the command that aborts the turn (a ``cancel``
    or ``dispose``), before that command's notifications are delivered. A
    tripped signal never resets: the next turn gets a fresh signal.

    Cancellation is cooperative: the shell never cancels a host coroutine.
    A hook that sees the signal should wind down and return (any value; the
    core ignores a report's content for an aborted turn, D6).

    ``output`` is where the running step's host publishes what it says (R43): the
    step's ``StepOutput`` while ``run_step`` runs, a closed one at any other time
    (publishing raises ``OutputClosed``); tripping the signal closes it.
    """

    __slots__ = ("_cause", "_output", "_waiters", "turn")

    def __init__(self, turn: int | None) -> None:
        self.turn = turn
        self._output: StepOutput = CLOSED
        self._cause: Cause | None = None
        # one future per waiting call, in the loop that awaits it (an asyncio.Event
        # would bind itself to the first loop that waits on it)
        self._waiters: list[asyncio.Future[None]] = []

    @property
    def aborted(self) -> bool:
        return self._cause is not None

    @property
    def cause(self) -> Cause | None:
        return self._cause

    async def wait(self) -> Cause:
        """Wait until the signal trips; return the abort cause."""
        if self._cause is None:
            await wait_in(self._waiters)
        assert self._cause is not None
        return self._cause

    @property
    def output(self) -> StepOutput:
        """The running step's publisher (R43); closed while no step runs."""
        return self._output

    def hand(self, output: StepOutput | None) -> None:
        """Shell-internal: ``output`` is the running step's (None: no step runs)."""
        self._output = CLOSED if output is None else output

    def trip(self, cause: Cause) -> None:
        """Shell-internal: mark aborted with ``cause`` (first cause wins); the running step's
        output closes (what it said is kept, R43)."""
        if self._cause is None:
            self._cause = cause
            self._output.close()
            waiters, self._waiters = self._waiters, []
            for waiter in waiters:
                wake(waiter)

    def __repr__(self) -> str:
        return f"AbortSignal(turn={self.turn}, cause={self._cause!r})"


class Host(Protocol):
    """The model loop ``LoopAgent`` drives; one call at a time, in the order the core awaits.

    Each hook receives the turn's ``AbortSignal`` and may wrap its answer in
    ``Recorded(answer, records)`` to log host records with it (R30). An
    exception raised by ``pre_step`` or ``run_step``, or an answer that is not
    a valid one, is reported to the core as the turn's error (``PreStepFailed``
    or ``Failed``, the exception class name as code) and announced as
    ``agent/error`` (R33); an exception in ``turn_stopping`` is reported to
    the event loop's exception handler and the turn goes on as if it returned.

    A host that keeps the conversation in memory can also define ``restore``
    (``RestoringHost``): ``LoopAgent`` calls it once, in its constructor, with
    the log's events, after replaying them and before ``Resume``.
    """

    async def pre_step(
        self, turn: int, step: int, messages: tuple[UserMessage, ...], signal: AbortSignal
    ) -> Decision | Recorded[Decision]:
        """Decide the entering batch of step ``step`` (``Enter(messages)`` or ``Reject()``)."""
        ...

    async def run_step(
        self, turn: int, step: int, signal: AbortSignal
    ) -> StepOutcome | Recorded[StepOutcome]:
        """Run one model request plus its tools; say whether another step is needed."""
        ...

    async def turn_stopping(self, turn: int, signal: AbortSignal) -> Recorded[None] | None:
        """The turn is about to end; listeners may ``steer`` to keep it going (R17)."""
        ...


class RestoringHost(Host, Protocol):
    """A ``Host`` that rebuilds its memory (the model's history) from the log (R30, SH4).

    ``LoopAgent`` calls ``restore(events)`` once, in its constructor, when the
    host defines it: with every durable event the log held (possibly none),
    after replaying them and before applying ``Resume``, so before any hook
    runs. The host replaces whatever it held, so a host rebuilt over a log
    (after a crash, a detach, or in another worker) continues the same
    conversation. An exception propagates out of the constructor, which then
    releases the log.
    """

    def restore(self, events: Sequence[DurableEvent]) -> None:
        """Rebuild the host's memory from ``events``, the log's whole content."""
        ...
