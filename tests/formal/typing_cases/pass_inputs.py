# ruff: noqa
# fmt: off
"""Must type-check: correct use of every input class (R11), positionally and by keyword."""

from __future__ import annotations

from inbox_core import (
    InjectInput,
    NextTurnInput,
    ResolvedAgentInput,
    Send,
    SteerInput,
    UserMessage,
    create_user_message,
)

m = create_user_message("hello")
c = UserMessage("ctx-1", "some context")

followup = NextTurnInput(m, (c,), "next-turn", True)
queued = NextTurnInput(message=m, contexts=(), target="next-turn", wakeup=False)
steered = SteerInput(m, (c,), "next-step", True)
injected = InjectInput(m, (), "next-step", False)
by_keyword = InjectInput(message=m, contexts=(), target="next-step", wakeup=False)

inputs: list[ResolvedAgentInput] = [followup, queued, steered, injected, by_keyword]
commands = [Send(value) for value in inputs]


def route(value: ResolvedAgentInput) -> str:
    if value.target == "next-turn":
        return "turn" if value.wakeup else "parked"
    return "steer" if value.wakeup else "inject"
