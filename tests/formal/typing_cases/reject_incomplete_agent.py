# ruff: noqa
# fmt: off
"""Must be rejected: a fake missing members is not an ``Agent``."""

from __future__ import annotations

from inbox_core import Agent, UserMessage


class HalfAgent:
    def followup(self, message: UserMessage, *, contexts: tuple[UserMessage, ...] = ()) -> None:
        pass


agent: Agent = HalfAgent()  # E: [assignment] Incompatible types in assignment (expression has type "HalfAgent", variable has type "Agent")
