# ruff: noqa
# fmt: off
"""Must be rejected: an ExpectTurn needs an int; ``expect`` is keyword-only in the helpers (R34)."""

from __future__ import annotations

from inbox_core import Agent, Cancel, ExpectIdle, ExpectTurn, Move, UserMessage, followup


def use(agent: Agent, m: UserMessage) -> None:
    ExpectTurn("5")  # E: [arg-type] Argument 1 to "ExpectTurn" has incompatible type "str"; expected "int"
    ExpectTurn()  # E: [call-arg] Missing positional argument "turn" in call to "ExpectTurn"
    ExpectIdle(5)  # E: [call-arg] Too many arguments for "ExpectIdle"
    agent.followup(m, (), ExpectIdle())  # E: [call-arg] Too many positional arguments for "followup" of "Agent"
    agent.inject(m, ExpectIdle())  # E: [call-arg] Too many positional arguments for "inject" of "Agent"
    agent.move(m.id, "next-step", ExpectTurn(1))  # E: [call-arg] Too many positional arguments for "move" of "Agent"
    agent.cancel(keep_inbox=True, expect=5)  # E: [arg-type] Argument "expect" to "cancel" of "Agent" has incompatible type "int"; expected "ExpectIdle | ExpectTurn | None"
    agent.steer(m, expect="idle")  # E: [arg-type] Argument "expect" to "steer" of "Agent" has incompatible type "str"; expected "ExpectIdle | ExpectTurn | None"
    followup(m, (), ExpectIdle())  # E: [call-arg] Too many positional arguments for "followup"
    Cancel(expect=ExpectTurn)  # E: [arg-type] Argument "expect" to "Cancel" has incompatible type "type[ExpectTurn]"; expected "ExpectIdle | ExpectTurn | None"
    Move(m.id, "next-step", 3)  # E: [arg-type] Argument 3 to "Move" has incompatible type "int"; expected "ExpectIdle | ExpectTurn | None"
