# ruff: noqa
# fmt: off
"""Must type-check: a structural fake is an ``Agent`` without inheriting anything."""

from __future__ import annotations

from collections.abc import Callable

from inbox_core import (
    Agent,
    Entry,
    Expectation,
    ExpectIdle,
    ExpectTurn,
    HookCause,
    InjectInput,
    MessageId,
    NextTurnInput,
    Notification,
    ParentCause,
    ResolvedAgentInput,
    Status,
    SteerInput,
    Target,
    UserCause,
    UserMessage,
)


class FakeInbox:
    def __init__(self) -> None:
        self.next_turn: tuple[Entry, ...] = ()
        self.next_step: tuple[Entry, ...] = ()


class FakeAgent:
    """Records what it is sent; no base class, no registration."""

    def __init__(self) -> None:
        self.sent: list[ResolvedAgentInput] = []
        self._inbox = FakeInbox()

    def followup(
        self, message: UserMessage, *, contexts: tuple[UserMessage, ...] = (),
        expect: Expectation | None = None,
    ) -> None:
        self.send(NextTurnInput(message, contexts, "next-turn", True), expect=expect)

    def queue(
        self, message: UserMessage, *, contexts: tuple[UserMessage, ...] = (),
        expect: Expectation | None = None,
    ) -> None:
        self.send(NextTurnInput(message, contexts, "next-turn", False), expect=expect)

    def steer(
        self, message: UserMessage, *, contexts: tuple[UserMessage, ...] = (),
        expect: Expectation | None = None,
    ) -> None:
        self.send(SteerInput(message, contexts, "next-step", True), expect=expect)

    def inject(self, message: UserMessage, *, expect: Expectation | None = None) -> None:
        self.send(InjectInput(message, (), "next-step", False), expect=expect)

    def send(self, input: ResolvedAgentInput, *, expect: Expectation | None = None) -> None:
        self.sent.append(input)

    def replace(self, message_id: MessageId, message: UserMessage) -> bool:
        return False

    def remove(self, message_id: MessageId) -> bool:
        return False

    def move(
        self, message_id: MessageId, target: Target, *, expect: Expectation | None = None
    ) -> None:
        pass

    def cancel(
        self, cause: UserCause | ParentCause | HookCause = UserCause(), *, keep_inbox: bool = False,
        expect: Expectation | None = None,
    ) -> None:
        pass

    @property
    def status(self) -> Status:
        return "idle"

    @property
    def inbox(self) -> FakeInbox:
        return self._inbox

    def subscribe(self, callback: Callable[[Notification], None]) -> Callable[[], None]:
        return lambda: None

    async def when_idle(self) -> None:
        pass

    async def aclose(self) -> None:
        pass


agent: Agent = FakeAgent()


async def use(agent: Agent, m: UserMessage, c: UserMessage) -> bool:
    agent.followup(m, contexts=(c,))
    agent.queue(m)
    agent.steer(m, contexts=(c,))
    agent.inject(m)
    agent.send(SteerInput(m, (), "next-step", True))
    agent.move(m.id, "next-step")
    agent.cancel(HookCause("budget"), keep_inbox=True)
    agent.followup(m, expect=ExpectIdle())  # R34: the guarded forms
    agent.steer(m, contexts=(c,), expect=ExpectTurn(5))
    agent.move(m.id, "next-step", expect=ExpectTurn(5))
    agent.cancel(keep_inbox=True, expect=ExpectTurn(5))
    unsubscribe = agent.subscribe(lambda note: None)
    unsubscribe()
    await agent.when_idle()
    pending: tuple[Entry, ...] = agent.inbox.next_turn + agent.inbox.next_step
    await agent.aclose()
    return agent.status == "idle" and not pending and agent.remove(m.id)
