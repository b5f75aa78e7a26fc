"""The structural ``Agent`` protocol: what callers hold, whatever implements it.

``Agent`` is a ``typing.Protocol``: any object with these members is an agent,
no base class needed (tests and adapters use plain fakes). ``inbox_core.shell``
provides the asyncio implementation, ``LoopAgent``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from inbox_core.commands import Expectation
from inbox_core.events import Notification, Status
from inbox_core.values import (
    Entry,
    HookCause,
    MessageId,
    ParentCause,
    ResolvedAgentInput,
    Target,
    UserCause,
    UserMessage,
)


class PendingInbox(Protocol):
    """A read-only view of both pending lists."""

    @property
    def next_turn(self) -> tuple[Entry, ...]: ...

    @property
    def next_step(self) -> tuple[Entry, ...]: ...


class Agent(Protocol):
    """Delivery by intent (R12), the resolved primitive (R11), edits, cancel, lifecycle."""

    # ``expect=`` (keyword only): act only if the agent is idle (``ExpectIdle()``, else
    # ``AgentBusy``) or turn n is live (``ExpectTurn(n)``, else ``TurnMismatch``), R34.

    def followup(
        self,
        message: UserMessage,
        *,
        contexts: tuple[UserMessage, ...] = (),
        expect: Expectation | None = None,
    ) -> None:
        """next-turn, waking: an ordinary prompt that gets a turn of its own."""

    def queue(
        self,
        message: UserMessage,
        *,
        contexts: tuple[UserMessage, ...] = (),
        expect: Expectation | None = None,
    ) -> None:
        """next-turn, not waking: parked until some waking delivery runs the model."""

    def steer(
        self,
        message: UserMessage,
        *,
        contexts: tuple[UserMessage, ...] = (),
        expect: Expectation | None = None,
    ) -> None:
        """next-step, waking: joins the running turn at its next step boundary."""

    def inject(self, message: UserMessage, *, expect: Expectation | None = None) -> None:
        """next-step, not waking, no contexts: model-facing context for a later step."""

    def send(self, input: ResolvedAgentInput, *, expect: Expectation | None = None) -> None:
        """Deliver an input whose target and wakeup are already resolved."""

    def replace(self, message_id: MessageId, message: UserMessage) -> bool:
        """Swap a pending entry's message in place; False when the id is not pending."""

    def remove(self, message_id: MessageId) -> bool:
        """Cancel one pending entry; False when the id is not pending."""

    def move(
        self, message_id: MessageId, target: Target, *, expect: Expectation | None = None
    ) -> None:
        """Move a pending entry to the end of the other list (promotion may raise)."""

    def cancel(
        self,
        cause: UserCause | ParentCause | HookCause = UserCause(),
        *,
        keep_inbox: bool = False,
        expect: Expectation | None = None,
    ) -> None:
        """Abort the live turn; without keep_inbox also cancel everything pending."""

    @property
    def status(self) -> Status: ...

    @property
    def inbox(self) -> PendingInbox: ...

    def subscribe(self, callback: Callable[[Notification], None]) -> Callable[[], None]:
        """Receive live notifications in commit order; returns the unsubscribe function."""

    async def when_idle(self) -> None:
        """Return once the agent is idle: no turn open and no waking entry pending."""

    async def aclose(self) -> None:
        """Dispose and wait until the in-flight turn (if any) has closed."""
