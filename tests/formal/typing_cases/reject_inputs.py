# ruff: noqa
# fmt: off
"""Must be rejected: inputs with the wrong discriminants or a missing field (R11)."""

from __future__ import annotations

from inbox_core import InjectInput, NextTurnInput, SteerInput, UserMessage

m = UserMessage("m", "hello")

steer_that_does_not_wake = SteerInput(m, (), "next-step", False)  # E: [arg-type] Argument 4 to "SteerInput" has incompatible type "Literal[False]"; expected "Literal[True]"
inject_that_wakes = InjectInput(m, (), "next-step", True)  # E: [arg-type] Argument 4 to "InjectInput" has incompatible type "Literal[True]"; expected "Literal[False]"
steer_into_next_turn = SteerInput(m, (), "next-turn", True)  # E: [arg-type] Argument 3 to "SteerInput" has incompatible type "Literal['next-turn']"; expected "Literal['next-step']"
next_turn_into_next_step = NextTurnInput(m, (), "next-step", True)  # E: [arg-type] Argument 3 to "NextTurnInput" has incompatible type "Literal['next-step']"; expected "Literal['next-turn']"
inject_into_next_turn = InjectInput(m, (), "next-turn", False)  # E: [arg-type] Argument 3 to "InjectInput" has incompatible type "Literal['next-turn']"; expected "Literal['next-step']"
next_turn_without_wakeup = NextTurnInput(m, (), "next-turn")  # E: [call-arg] Missing positional argument "wakeup" in call to "NextTurnInput"
steer_without_target = SteerInput(m, (), wakeup=True)  # E: [call-arg] Missing positional argument "target" in call to "SteerInput"
inject_without_contexts = InjectInput(message=m, target="next-step", wakeup=False)  # E: [call-arg] Missing positional argument "contexts" in call to "InjectInput"
steer_without_anything = SteerInput()  # E: [call-arg] Missing positional arguments "message", "contexts", "target", "wakeup" in call to "SteerInput"
