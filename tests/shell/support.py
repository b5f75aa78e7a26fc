"""Test support for the shell: a scripted host, a recorder, invariant checks, an async runner."""

from __future__ import annotations

import asyncio
import functools
import threading
from collections.abc import Callable, Coroutine, Sequence
from typing import Any, TypeVar

from inbox_core import (
    AgentState,
    Completed,
    Decision,
    DurableEvent,
    Enter,
    Notification,
    StepOutcome,
    UserMessage,
    create_user_message,
    event_to_json,
    notification_to_json,
    replay,
)
from inbox_core.shell import AbortSignal, LoopAgent

from .unprivileged import as_unprivileged  # noqa: F401 - where its callers import it

T = TypeVar("T")
TIMEOUT = 10.0


def run_async(fn: Callable[..., Coroutine[Any, Any, T]]) -> Callable[..., T]:
    """Run an async test body with ``asyncio.run`` (no pytest-asyncio), failing on hangs."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> T:
        async def main() -> T:
            return await asyncio.wait_for(fn(*args, **kwargs), TIMEOUT)

        return asyncio.run(main())

    return wrapper


def capture_loop_errors() -> list[dict[str, Any]]:
    """Install an exception handler on the running loop; return the list it fills."""
    errors: list[dict[str, Any]] = []
    asyncio.get_running_loop().set_exception_handler(lambda _loop, ctx: errors.append(ctx))
    return errors


async def settle(rounds: int = 5) -> None:
    """Let ready callbacks run (a few event loop iterations)."""
    for _ in range(rounds):
        await asyncio.sleep(0)


def msg(text: str, **kwargs: Any) -> UserMessage:
    return create_user_message(text, **kwargs)


def text_of(message: UserMessage) -> str:
    return str(message.content[0]["text"])


# ------------------------------------------------------------------ the host


class Call:
    """One host hook invocation, blocked until the test answers it."""

    def __init__(
        self,
        hook: str,
        turn: int,
        step: int,
        messages: tuple[UserMessage, ...],
        signal: AbortSignal,
    ) -> None:
        self.hook = hook
        self.turn = turn
        self.step = step
        self.messages = messages
        self.signal = signal
        self.future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self.cancelled = False
        self.settled = False
        self.task = asyncio.current_task()

    @property
    def texts(self) -> list[str]:
        return [text_of(m) for m in self.messages]

    def answer(self, value: Any = None) -> None:
        self.future.set_result(value)

    def enter(self, messages: Sequence[UserMessage] | None = None) -> None:
        self.answer(Enter(tuple(self.messages if messages is None else messages)))

    def fail(self, error: BaseException) -> None:
        self.future.set_exception(error)

    def __repr__(self) -> str:
        return f"Call({self.hook}, turn={self.turn}, step={self.step}, {self.texts})"


class ScriptedHost:
    """A host whose every hook blocks until the test answers the ``Call`` it gets.

    It records concurrency (``max_active``), the tasks its hooks ran in, and
    whether a hook coroutine was ever cancelled (the shell must never do it).
    """

    def __init__(self) -> None:
        self.pending: asyncio.Queue[Call] = asyncio.Queue()
        self.history: list[Call] = []
        self.active = 0
        self.max_active = 0

    async def _hook(
        self,
        hook: str,
        turn: int,
        step: int,
        messages: tuple[UserMessage, ...],
        signal: AbortSignal,
    ) -> Any:
        call = Call(hook, turn, step, messages, signal)
        self.history.append(call)
        self.active += 1
        self.max_active = max(self.max_active, self.active)
        self.pending.put_nowait(call)
        try:
            return await call.future
        except asyncio.CancelledError:
            call.cancelled = True
            raise
        finally:
            self.active -= 1
            call.settled = True

    async def pre_step(
        self, turn: int, step: int, messages: tuple[UserMessage, ...], signal: AbortSignal
    ) -> Decision:
        result: Decision = await self._hook("pre_step", turn, step, messages, signal)
        return result

    async def run_step(self, turn: int, step: int, signal: AbortSignal) -> StepOutcome:
        result: StepOutcome = await self._hook("run_step", turn, step, (), signal)
        return result

    async def turn_stopping(self, turn: int, signal: AbortSignal) -> Any:
        return await self._hook("turn_stopping", turn, 0, (), signal)

    async def next(self, hook: str | None = None, timeout: float = 2.0) -> Call:
        call = await asyncio.wait_for(self.pending.get(), timeout)
        if hook is not None:
            assert call.hook == hook, f"expected {hook}, got {call!r}"
        return call

    async def nothing_pending(self) -> bool:
        await settle()
        return self.pending.empty()

    async def complete_turn(self, outcome: StepOutcome | None = None) -> list[str]:
        """Answer pre_step (enter as is), run_step (``outcome``), turn_stopping; return texts."""
        pre = await self.next("pre_step")
        pre.enter()
        (await self.next("run_step")).answer(outcome or Completed())
        (await self.next("turn_stopping")).answer()
        return pre.texts


class Recorder:
    """A subscriber that keeps every notification (and its JSON type)."""

    def __init__(self) -> None:
        self.notes: list[Notification] = []

    def __call__(self, note: Notification) -> None:
        self.notes.append(note)

    @property
    def types(self) -> list[str]:
        return [n.type for n in self.notes]

    @property
    def json(self) -> list[dict[str, Any]]:
        return [notification_to_json(n) for n in self.notes]

    def of(self, kind: str) -> list[Notification]:
        return [n for n in self.notes if n.type == kind]


# ------------------------------------------------------------------ the log


def log_json(agent_or_events: LoopAgent | Sequence[DurableEvent]) -> list[dict[str, Any]]:
    events = (
        agent_or_events.log.read() if isinstance(agent_or_events, LoopAgent) else agent_or_events
    )
    return [event_to_json(e) for e in events]


def log_types(agent: LoopAgent) -> list[str]:
    return [e["type"] for e in log_json(agent)]


def turn_ends(agent: LoopAgent) -> list[tuple[int, dict[str, Any]]]:
    return [
        (e["data"]["turn"], e["data"]["reason"]) for e in log_json(agent) if e["type"] == "turn/end"
    ]


def admitted_texts(agent: LoopAgent) -> list[str]:
    return [e["data"]["content"][0]["text"] for e in log_json(agent) if e["type"] == "user/message"]


def steps_of(agent: LoopAgent) -> list[tuple[int, int]]:
    return [
        (e["data"]["turn"], e["data"]["step"]) for e in log_json(agent) if e["type"] == "step/start"
    ]


def check_invariants(agent: LoopAgent) -> AgentState:
    """I5 (replay equals the live projection), I3 (idle => no waking entry), I4 (replays)."""
    replayed = replay(agent.log.read())
    state = agent.state
    assert replayed.projection() == state.projection(), "I5: replay differs from the live state"
    if state.status == "idle":
        assert not any(e.wakeup for e in (*state.next_turn, *state.next_step)), "I3"
    return state


class Held:
    """Holds a call in its thread until ``release()`` (D47): a test that something runs off
    the event loop holds it there, has the loop answer someone else meanwhile, and then
    checks the order, never a time (on the loop, the hold would stop everyone)."""

    def __init__(self) -> None:
        self.order: list[str] = []
        self.entered = threading.Event()
        self.released = threading.Event()

    def wrap(self, function: Callable[..., Any], when: Callable[..., bool]) -> Any:
        """``function``, held when ``when(*args)`` holds."""

        @functools.wraps(function)
        def held(*args: Any, **kwargs: Any) -> Any:
            if when(*args, **kwargs):
                self.entered.set()
                self.released.wait(20)  # on the loop, this would hold everyone this long
                self.order.append("released")
            return function(*args, **kwargs)

        return held

    async def until_entered(self) -> None:
        assert await asyncio.to_thread(self.entered.wait, 20), "the held call never came"

    def release(self) -> None:
        self.order.append("answered meanwhile")
        self.released.set()
