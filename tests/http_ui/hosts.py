"""A host factory for the inspector's browser tests (``--host tests.http_ui.hosts:replying``):
the echo host, with a ``host/reply`` record per step (R30), and a step that fails when its
turn admitted a message saying "fail" (R18, R33)."""

from __future__ import annotations

from inbox_core import Failed, HostRecord, UserMessage
from inbox_core.commands import Decision, StepOutcome
from inbox_core.shell import AbortSignal, EchoHost, Recorded


class ReplyingHost(EchoHost):
    def __init__(self) -> None:
        super().__init__()
        self.said: dict[int, list[str]] = {}

    async def pre_step(
        self, turn: int, step: int, messages: tuple[UserMessage, ...], signal: AbortSignal
    ) -> Decision:
        texts = [b.get("text", "") for m in messages for b in m.content if b.get("type") == "text"]
        self.said.setdefault(turn, []).extend(texts)
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
