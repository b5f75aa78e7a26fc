# ruff: noqa
# fmt: off
"""Must be rejected: the intent helpers take no routing keywords (R12)."""

from __future__ import annotations

from inbox_core import Agent, UserMessage


def use(agent: Agent, m: UserMessage, c: UserMessage) -> None:
    agent.followup(m, target="next-step")  # E: [call-arg] Unexpected keyword argument "target" for "followup" of "Agent"
    agent.queue(m, wakeup=True)  # E: [call-arg] Unexpected keyword argument "wakeup" for "queue" of "Agent"
    agent.steer(m, target="next-turn", wakeup=False)  # E: [call-arg] Unexpected keyword argument "target" for "steer" of "Agent"  # E: [call-arg] Unexpected keyword argument "wakeup" for "steer" of "Agent"
    agent.inject(m, contexts=(c,))  # E: [call-arg] Unexpected keyword argument "contexts" for "inject" of "Agent"
    agent.cancel(keep_inbox="yes")  # E: [arg-type] Argument "keep_inbox" to "cancel" of "Agent" has incompatible type "str"; expected "bool"
    agent.move(m.id, "next-round")  # E: [arg-type] Argument 2 to "move" of "Agent" has incompatible type "Literal['next-round']"; expected "Literal['next-turn', 'next-step']"
    delivered = agent.followup(m)  # E: [func-returns-value] "followup" of "Agent" does not return a value (it only ever returns None)
