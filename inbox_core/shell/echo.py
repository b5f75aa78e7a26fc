"""``EchoHost``: the bundled host for demos and tests; it answers each step with an echo (R43)."""

from __future__ import annotations

import asyncio
import contextlib
import re
from typing import Final

from inbox_core.commands import Completed, Decision, Enter, StepOutcome
from inbox_core.shell.host import AbortSignal
from inbox_core.values import UserMessage

__all__ = ["EchoHost", "echo_host", "echo_reply"]

MAX_DELTAS: Final = 1000
"""A longer reply streams several words per delta: a step publishes at most this many."""
_WORD: Final = re.compile(r"\S+\s*")


def echo_reply(messages: tuple[UserMessage, ...]) -> str:
    """``echo: `` and the texts of ``messages`` (their text blocks), joined by a newline;
    ``echo: (nothing)`` for no message (brief section 22, pinned)."""
    if not messages:
        return "echo: (nothing)"
    texts = [
        text
        for message in messages
        for block in message.content
        if block.get("type") == "text" and isinstance(text := block.get("text"), str)
    ]
    return "echo: " + "\n".join(texts)


def _deltas(reply: str) -> list[str]:
    """The reply word by word (each word with the whitespace after it), in at most
    ``MAX_DELTAS`` deltas; joined, they are the reply."""
    words = _WORD.findall(reply)
    size = -(-len(words) // MAX_DELTAS)  # words per delta
    if size == 1:
        return words
    return ["".join(words[i : i + size]) for i in range(0, len(words), size)]


class EchoHost:
    """Enters every batch unchanged and answers each step with ``echo_reply`` of the messages
    it admitted, published word by word through ``signal.output`` (R43), which the shell
    records as the step's ``host/output`` (one text part); does nothing at turn-stopping.

    ``delay`` (seconds) spreads the words over that long, unless the turn is aborted
    first: the step then returns at once, what it said so far recorded (cooperative
    cancellation, R23). Each step yields to the event loop at least once (once per word
    with a delay).
    ``calls`` records ``(hook, turn, step)`` (step 0 for ``turn_stopping``) and
    ``admitted`` every message of every entered batch, for demos and assertions.
    """

    def __init__(self, *, delay: float = 0.0) -> None:
        if delay < 0:
            raise ValueError(f"delay must be >= 0, got {delay!r}")
        self.delay = delay
        self.calls: list[tuple[str, int, int]] = []
        self.admitted: list[UserMessage] = []
        self._batch: tuple[int, int, tuple[UserMessage, ...]] = (0, 0, ())

    async def pre_step(
        self, turn: int, step: int, messages: tuple[UserMessage, ...], signal: AbortSignal
    ) -> Decision:
        self.calls.append(("pre_step", turn, step))
        self.admitted.extend(messages)
        self._batch = (turn, step, messages)
        return Enter(messages)

    async def run_step(self, turn: int, step: int, signal: AbortSignal) -> StepOutcome:
        self.calls.append(("run_step", turn, step))
        batch_turn, batch_step, messages = self._batch
        admitted = messages if (batch_turn, batch_step) == (turn, step) else ()
        deltas = _deltas(echo_reply(admitted))
        pause = self.delay / len(deltas)
        for delta in deltas:
            if signal.aborted:
                break
            signal.output.text(delta)
            if pause > 0:
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(pause):  # not wait_for (see wakes.Chime)
                        await signal.wait()
        if pause == 0:
            await asyncio.sleep(0)  # a step without delay still lets others run once
        return Completed()

    async def turn_stopping(self, turn: int, signal: AbortSignal) -> None:
        self.calls.append(("turn_stopping", turn, 0))

    def __repr__(self) -> str:
        return f"EchoHost(delay={self.delay!r})"


def echo_host(agent_id: str) -> EchoHost:
    """A worker's host factory (``inbox-core serve ... --host inbox_core.shell.echo:echo_host``):
    an ``EchoHost`` per agent; ``INBOX_CORE_ECHO_DELAY`` (seconds) spreads each reply's words
    over that long."""
    import os  # noqa: PLC0415 - only this factory reads the environment

    return EchoHost(delay=float(os.environ.get("INBOX_CORE_ECHO_DELAY", "0")))
