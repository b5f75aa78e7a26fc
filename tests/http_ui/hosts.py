"""Host factories for the inspector's browser tests and the AG-UI client's (``--host
tests.http_ui.hosts:replying`` or ``:speaking``).

- ``replying``: the echo host, with a ``host/reply`` record per step (R30), and a step that
  fails when its turn admitted a message saying "fail" (R18, R33).
- ``speaking``: a host that says what a model says (R43), through ``signal.output``, over
  ``INBOX_CORE_ECHO_DELAY`` seconds: reasoning, a text, a tool call ``weather`` with its
  arguments, its result, then the echo of the step's messages; "fail" fails the step, and
  "long" makes the reply long (R40 v5's "Show more"). The shell records it as the step's
  ``host/output``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os

from inbox_core import Failed, HostRecord, UserMessage
from inbox_core.commands import Completed, Decision, StepOutcome
from inbox_core.shell import AbortSignal, EchoHost, Recorded
from inbox_core.shell.echo import echo_reply

LONG_REPLY = " ".join(f"line {n} of a long answer." for n in range(1, 80))
"""What ``speaking`` says after its echo when a message said "long" (past 600 characters)."""


def _texts(messages: tuple[UserMessage, ...]) -> list[str]:
    return [b.get("text", "") for m in messages for b in m.content if b.get("type") == "text"]


class ReplyingHost(EchoHost):
    def __init__(self) -> None:
        super().__init__()
        self.said: dict[int, list[str]] = {}

    async def pre_step(
        self, turn: int, step: int, messages: tuple[UserMessage, ...], signal: AbortSignal
    ) -> Decision:
        self.said.setdefault(turn, []).extend(_texts(messages))
        return await super().pre_step(turn, step, messages, signal)

    async def run_step(  # type: ignore[override]
        self, turn: int, step: int, signal: AbortSignal
    ) -> StepOutcome | Recorded[StepOutcome]:
        said = self.said.get(turn, [])
        if "fail" in said:
            return Failed("the model refused", "model-error")
        reply = HostRecord("host/reply", {"text": f"echo: {' / '.join(said)}", "tokens": 7})
        return Recorded(await super().run_step(turn, step, signal), (reply,))


def replying(agent_id: str) -> ReplyingHost:
    return ReplyingHost()


class SpeakingHost(EchoHost):
    """Each step: reasoning, "Let me check the weather.", the tool call ``weather`` with
    ``{"city": "Paris"}``, its result ``sunny``, then ``echo_reply`` of the step's messages,
    each piece after ``delay / 6`` seconds (returning at once when aborted)."""

    async def run_step(self, turn: int, step: int, signal: AbortSignal) -> StepOutcome:
        batch_turn, batch_step, messages = self._batch
        admitted = messages if (batch_turn, batch_step) == (turn, step) else ()
        texts = _texts(admitted)
        out = signal.output
        call = f"call-{turn}-{step}"
        pieces = [
            lambda: out.reasoning("The user wants an answer; "),
            lambda: out.reasoning("the weather tool can help."),
            lambda: out.text("Let me check the weather."),
            lambda: out.tool_call(call, "weather", '{"city": '),
            lambda: out.tool_call_arguments(call, '"Paris"}'),
            lambda: out.tool_call_end(call),
            lambda: out.tool_result(call, "sunny"),
            lambda: out.text(echo_reply(admitted)),
        ]
        if "long" in texts:
            pieces.append(lambda: out.text(" " + LONG_REPLY, part=None))
        pause = self.delay / len(pieces)
        for piece in pieces:
            if signal.aborted:
                break
            piece()
            if pause > 0:
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(pause):
                        await signal.wait()
            else:
                await asyncio.sleep(0)
        if "fail" in texts and not signal.aborted:
            return Failed("the model refused", "model-error")
        return Completed()


def speaking(agent_id: str) -> SpeakingHost:
    return SpeakingHost(delay=float(os.environ.get("INBOX_CORE_ECHO_DELAY", "0")))


TOOL_ARGUMENTS = json.dumps({"city": "Paris"}, indent=2)
"""How the page shows the tool call's arguments (indented JSON)."""
