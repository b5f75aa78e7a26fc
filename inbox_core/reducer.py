"""The delivery state machine: ``reduce(state, command) -> Transition``.

Theory of operation
-------------------
``AgentState`` is an immutable value. ``reduce`` is the only function that
makes a new one from a command; it never touches its input and imports no
I/O. A ``Transition`` carries the new state, the durable events to append to
the log (the only authority, see ``replay``) and the live notifications.

Pending input waits in two lists (``Inbox``): next-turn entries each open a
turn of their own; next-step entries join the next step boundary. Only a
*waking* entry makes the model run. The agent is ``idle`` or ``running``, and
it is running exactly while a turn is open: a waking insertion while idle
opens a turn inside the same command, and a turn's end opens the next one in
the same command when waking work is still pending (R14, R19).

While a turn is open the core waits for one host report at a time, named by
``state.awaiting``::

    claim --> AwaitPreStep --Enter--> step/start, user/message* --> AwaitStep
                  |  Reject / failure / empty batch            |
                  v                                            |  Continue: claim -> AwaitPreStep
              turn/end  <-- TurnStoppingDone (nothing waking) <+- otherwise: waking next-step?
                  |                        AwaitTurnStopping <-+     yes: claim -> AwaitPreStep
                  v
        waking work pending? -- yes --> turn/start, claim (next turn)
                  | no
                  v
                idle

A cancel marks the open turn aborted (first cause wins); the turn closes when
the host answers whatever it was awaited for, and no step starts in it (R23).
Every handler below works on a scratch copy (``_Tx``); a rejected command
raises before anything is returned, so the caller's state is never changed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final, Literal, TypeAlias

import attrs

from inbox_core.commands import (
    Cancel,
    Clear,
    Command,
    Continue,
    Dispose,
    Enter,
    Failed,
    MaxTokens,
    Move,
    PreStepDecided,
    PreStepFailed,
    Reject,
    Remove,
    Replace,
    Resume,
    Send,
    Splice,
    StepFinished,
    TurnStoppingDone,
)
from inbox_core.errors import (
    AgentDisposed,
    DuplicateMessageId,
    InvalidInput,
    ResumeRequired,
    SteerUnavailable,
    UnexpectedReport,
)
from inbox_core.events import (
    AbortedReason,
    BlockedReason,
    CancelRequested,
    CompletedReason,
    Disposed,
    DurableEvent,
    ErrorReason,
    InboxClaimed,
    InboxDiscarded,
    InboxInserted,
    InboxMoved,
    InboxSpliced,
    InterruptedReason,
    MaxTokensReason,
    MessageAdmitted,
    Notification,
    Outcome,
    Status,
    StatusChanged,
    StepEnded,
    StepStarted,
    TurnEnded,
    TurnEndReason,
    TurnStarted,
)
from inbox_core.inbox import EMPTY_INBOX, Inbox
from inbox_core.values import Cause, DisposedCause, Entry, Target, UserMessage, route

# ------------------------------------------------------------- awaited actions


@attrs.frozen
class AwaitPreStep:
    """The host decides the entering batch of step ``step`` (answer: PreStepDecided/Failed)."""

    turn: int
    step: int
    batch: tuple[UserMessage, ...]


@attrs.frozen
class AwaitStep:
    """The host runs step ``step`` (answer: StepFinished)."""

    turn: int
    step: int


@attrs.frozen
class AwaitTurnStopping:
    """Turn-stopping listeners run and may steer (answer: TurnStoppingDone)."""

    turn: int


Awaiting: TypeAlias = AwaitPreStep | AwaitStep | AwaitTurnStopping


@attrs.frozen
class Claim:
    """What the latest boundary claimed and no pre-step decision answered yet (R27)."""

    next_step: tuple[Entry, ...] = ()
    next_turn: tuple[Entry, ...] = ()


_NO_CLAIM: Final = Claim()


@attrs.frozen
class Projection:
    """What the durable log determines (R10, I5): compare live and replayed states by this."""

    next_turn: tuple[Entry, ...]
    next_step: tuple[Entry, ...]
    last_turn: int
    open_turn: int | None
    open_step: int | None


@attrs.frozen
class AgentState:
    """The whole agent as a value. Build the first one with ``AgentState.initial()``.

    ``status`` is ``running`` exactly while a turn is open. ``step`` counts the
    steps started in the open turn; ``step_open`` says whether the last one
    still waits for its ``step/end``. ``max_tokens`` is the sticky turn-end
    reason (R18), ``continuing`` whether the last step asked for another (R17).
    ``resume_required`` marks a replayed state that needs ``Resume`` (R27).
    """

    status: Status = "idle"
    disposed: bool = False
    last_turn: int = 0
    awaiting: Awaiting | None = None
    abort_cause: Cause | None = None
    inbox: Inbox = EMPTY_INBOX
    turn_open: bool = False
    step: int = 0
    step_open: bool = False
    max_tokens: bool = False
    continuing: bool = False
    claim: Claim = _NO_CLAIM
    resume_required: bool = False

    @classmethod
    def initial(cls) -> AgentState:
        return _INITIAL

    @property
    def next_turn(self) -> tuple[Entry, ...]:
        return self.inbox.next_turn

    @property
    def next_step(self) -> tuple[Entry, ...]:
        return self.inbox.next_step

    def projection(self) -> Projection:
        return Projection(
            self.inbox.next_turn,
            self.inbox.next_step,
            self.last_turn,
            self.last_turn if self.turn_open else None,
            self.step if self.step_open else None,
        )


_INITIAL: Final = AgentState()
_STATE_FIELDS: Final = tuple(field.name for field in attrs.fields(AgentState))


@attrs.frozen
class Transition:
    """The result of one command: new state, durable events, live notifications."""

    state: AgentState
    durable: tuple[DurableEvent, ...]
    notifications: tuple[Notification, ...]


# ------------------------------------------------------------------ the scratch


class _Tx:
    """One command's working copy of the state plus the outputs it emits."""

    __slots__ = (
        "original",
        "status",
        "disposed",
        "last_turn",
        "awaiting",
        "abort_cause",
        "inbox",
        "turn_open",
        "step",
        "step_open",
        "max_tokens",
        "continuing",
        "claim",
        "resume_required",
        "durable",
        "notes",
    )

    def __init__(self, state: AgentState) -> None:
        self.original = state
        self.status: Status = state.status
        self.disposed = state.disposed
        self.last_turn = state.last_turn
        self.awaiting: Awaiting | None = state.awaiting
        self.abort_cause: Cause | None = state.abort_cause
        self.inbox = state.inbox
        self.turn_open = state.turn_open
        self.step = state.step
        self.step_open = state.step_open
        self.max_tokens = state.max_tokens
        self.continuing = state.continuing
        self.claim = state.claim
        self.resume_required = state.resume_required
        self.durable: list[DurableEvent] = []
        self.notes: list[Notification] = []

    def finish(self) -> Transition:
        original = self.original
        if (
            not self.durable
            and not self.notes
            and all(getattr(self, name) is getattr(original, name) for name in _STATE_FIELDS)
        ):
            return Transition(original, (), ())  # a no-op keeps the very same state
        state = AgentState(
            self.status,
            self.disposed,
            self.last_turn,
            self.awaiting,
            self.abort_cause,
            self.inbox,
            self.turn_open,
            self.step,
            self.step_open,
            self.max_tokens,
            self.continuing,
            self.claim,
            self.resume_required,
        )
        return Transition(state, tuple(self.durable), tuple(self.notes))

    # ------------------------------------------------------------ inbox edits

    @property
    def turn_live(self) -> bool:
        """A turn is open and not aborted, so it can still reach a step boundary (R8)."""
        return self.turn_open and self.abort_cause is None

    def record(
        self,
        target: Target,
        start: int,
        removed: tuple[Entry, ...],
        inserted: tuple[Entry, ...],
        outcome: Outcome | None,
    ) -> None:
        self.durable.append(
            InboxSpliced(target, start, len(removed), inserted, outcome if removed else None)
        )

    def edit(
        self, target: Target, start: int, delete_count: int, inserted: tuple[Entry, ...]
    ) -> None:
        """An ordinary splice: removals are canceled and announced discarded (R5, R6)."""
        result = self.inbox.splice(target, start, delete_count, inserted)
        if not result.removed and not inserted:
            return
        self.inbox = result.inbox
        self.record(target, result.start, result.removed, inserted, "canceled")
        for entry in result.removed:
            self.notes.extend(InboxDiscarded(m) for m in entry.messages)
        for entry in inserted:
            self.notes.extend(InboxInserted(m) for m in entry.messages)

    def clear(self) -> None:
        """Cancel everything pending, next-step first (R7, R22)."""
        self.edit("next-step", 0, self.inbox.size("next-step"), ())
        self.edit("next-turn", 0, self.inbox.size("next-turn"), ())

    def wake_if_idle(self) -> None:
        """A waking insertion while idle opens a turn in the same command (R13, R14)."""
        if self.status == "idle" and self.inbox.has_waking:
            self.open_turn()

    # ------------------------------------------------------------ turn engine

    def set_status(self, status: Status) -> None:
        if self.status != status:
            self.status = status
            self.notes.append(StatusChanged(status))

    def open_turn(self) -> None:
        self.set_status("running")
        self.last_turn += 1
        self.durable.append(TurnStarted(self.last_turn))
        self.turn_open = True
        self.step = 0
        self.step_open = False
        self.max_tokens = False
        self.continuing = False
        self.abort_cause = None
        self.claim_boundary(at_turn_start=True)

    def claim_boundary(self, *, at_turn_start: bool) -> None:
        """Claim at a boundary and await the pre-step decision on the batch (R9, R16)."""
        turn = self.last_turn
        claimed = self.inbox.claim(at_turn_start=at_turn_start)
        self.inbox = claimed.inbox
        if claimed.next_step:
            self.record("next-step", 0, claimed.next_step, (), None)
        if claimed.next_turn:
            self.record("next-turn", 0, claimed.next_turn, (), None)
        self.claim = Claim(claimed.next_step, claimed.next_turn)
        batch = claimed.batch
        self.notes.extend(InboxClaimed(m, turn) for m in batch)
        self.awaiting = AwaitPreStep(turn, self.step + 1, batch)

    def start_step(self, messages: tuple[UserMessage, ...]) -> None:
        self.step += 1
        self.durable.append(StepStarted(self.last_turn, self.step))
        self.durable.extend(MessageAdmitted(m) for m in messages)
        self.step_open = True
        self.continuing = False
        self.claim = _NO_CLAIM
        self.awaiting = AwaitStep(self.last_turn, self.step)

    def end_step(self) -> None:
        self.durable.append(StepEnded(self.last_turn, self.step))
        self.step_open = False

    def after_ending_step(self) -> None:
        """No continuation asked: steer forces another step, else turn-stopping (R17)."""
        if self.inbox.has_waking_step:
            self.claim_boundary(at_turn_start=False)
        else:
            self.awaiting = AwaitTurnStopping(self.last_turn)

    def ending_reason(self) -> TurnEndReason:
        return MaxTokensReason() if self.max_tokens else CompletedReason()

    def close_turn(self, reason: TurnEndReason) -> None:
        """``step/end`` if a step is open, then ``turn/end`` (R16, R18)."""
        if self.step_open:
            self.end_step()
        self.durable.append(TurnEnded(self.last_turn, reason))
        self.turn_open = False
        self.step = 0
        self.max_tokens = False
        self.continuing = False
        self.claim = _NO_CLAIM
        self.awaiting = None
        self.abort_cause = None

    def settle(self) -> None:
        """After a turn ends: next turn for pending waking work, else idle (R19, R24, R25)."""
        if self.inbox.has_waking:
            self.open_turn()
            return
        self.set_status("idle")
        if self.disposed:
            self.notes.append(Disposed())

    def end_turn(self, reason: TurnEndReason) -> None:
        self.close_turn(reason)
        self.settle()

    def end_if_aborted(self) -> bool:
        """An aborted turn closes on whatever report answers it (R23)."""
        if self.abort_cause is None:
            return False
        self.end_turn(AbortedReason(self.abort_cause))
        return True

    def cancel(self, cause: Cause, *, keep_inbox: bool) -> None:
        """Clear (unless keep_inbox) and abort the live turn; first cause wins (R21-R23)."""
        live = self.turn_live
        clears = not keep_inbox and not self.inbox.is_empty
        if not (live or clears):
            return
        self.notes.append(CancelRequested(cause))
        if clears:
            self.clear()
        if live:
            self.abort_cause = cause


# ------------------------------------------------------------------- handlers


def _send(tx: _Tx, command: Send) -> None:
    target, entry = route(command.input)
    tx.edit(target, tx.inbox.size(target), 0, (entry,))
    tx.wake_if_idle()


def _splice(tx: _Tx, command: Splice) -> None:
    tx.edit(command.target, command.start, command.delete_count, command.inserted)
    tx.wake_if_idle()


def _clear(tx: _Tx, _command: Clear) -> None:
    tx.clear()


def _replace(tx: _Tx, command: Replace) -> None:
    found = tx.inbox.find(command.message_id)
    if found is None:
        return
    old = found.entry
    new = Entry(command.message, old.contexts, old.wakeup)
    result = tx.inbox.splice_found(found, (new,))
    tx.inbox = result.inbox
    tx.record(found.target, found.position, result.removed, (new,), "canceled")
    tx.notes.append(InboxDiscarded(old.message))
    tx.notes.append(InboxInserted(new.message))
    tx.wake_if_idle()


def _remove(tx: _Tx, command: Remove) -> None:
    found = tx.inbox.find(command.message_id)
    if found is None:
        return
    result = tx.inbox.splice_found(found, ())
    tx.inbox = result.inbox
    tx.record(found.target, found.position, result.removed, (), "canceled")
    tx.notes.extend(InboxDiscarded(m) for m in found.entry.messages)


def _move(tx: _Tx, command: Move) -> None:
    found = tx.inbox.find(command.message_id)
    if found is None or found.target == command.target:
        return
    if command.target == "next-step" and not tx.turn_live:
        raise SteerUnavailable("no live turn can reach a step boundary; use steer or followup")
    entry = found.entry
    moved = Entry(entry.message, entry.contexts, True) if command.target == "next-step" else entry
    result = tx.inbox.splice_found(found, ())
    tx.record(found.target, found.position, result.removed, (), "moved")
    end = result.inbox.size(command.target)
    tx.inbox = result.inbox.splice(command.target, end, 0, (moved,)).inbox
    tx.record(command.target, end, (), (moved,), None)
    tx.notes.extend(InboxMoved(m, command.target) for m in entry.messages)
    tx.wake_if_idle()


def _cancel(tx: _Tx, command: Cancel) -> None:
    tx.cancel(command.cause, keep_inbox=command.keep_inbox)


def _dispose(tx: _Tx, _command: Dispose) -> None:
    tx.cancel(DisposedCause(), keep_inbox=False)
    tx.disposed = True
    if not tx.turn_open:
        tx.notes.append(Disposed())


def _resume(tx: _Tx, _command: Resume) -> None:
    if not tx.resume_required:
        return
    tx.resume_required = False
    if not tx.turn_open:
        tx.wake_if_idle()
        return
    claim = tx.claim
    tx.close_turn(InterruptedReason())
    _restore(tx, "next-step", claim.next_step)
    _restore(tx, "next-turn", claim.next_turn)
    tx.settle()


def _restore(tx: _Tx, target: Target, entries: tuple[Entry, ...]) -> None:
    """Put an unanswered claim back at the head of its list (R27).

    An entry whose id was sent again after the claim is not restored: the newer
    pending message keeps the id, since MessageId uniqueness (R4) must hold.
    """
    pending = tx.inbox
    tx.edit(target, 0, 0, tuple(e for e in entries if not any(m.id in pending for m in e.messages)))


def _pre_step_decided(tx: _Tx, command: PreStepDecided) -> None:
    if tx.end_if_aborted():
        return
    decision = command.decision
    if isinstance(decision, Reject):
        tx.end_turn(BlockedReason())
        return
    if not decision.messages and not tx.continuing:
        tx.end_turn(tx.ending_reason())
        return
    _check_batch(decision)
    tx.start_step(decision.messages)


def _check_batch(decision: Enter) -> None:
    seen: set[str] = set()
    for message in decision.messages:
        if message.id in seen:
            raise DuplicateMessageId(message.id)
        seen.add(message.id)


def _pre_step_failed(tx: _Tx, command: PreStepFailed) -> None:
    if tx.end_if_aborted():
        return
    tx.end_turn(ErrorReason(command.message, command.code))


def _step_finished(tx: _Tx, command: StepFinished) -> None:
    tx.end_step()
    if tx.end_if_aborted():
        return
    outcome = command.outcome
    if isinstance(outcome, Failed):
        tx.end_turn(ErrorReason(outcome.message, outcome.code))
    elif isinstance(outcome, Continue):
        tx.continuing = True
        tx.claim_boundary(at_turn_start=False)
    else:
        if isinstance(outcome, MaxTokens):
            tx.max_tokens = True
        tx.after_ending_step()


def _turn_stopping_done(tx: _Tx, _command: TurnStoppingDone) -> None:
    if tx.end_if_aborted():
        return
    if tx.inbox.has_waking_step:
        tx.claim_boundary(at_turn_start=False)
    else:
        tx.end_turn(tx.ending_reason())


# ---------------------------------------------------------------------- gates


def _answers(awaiting: Awaiting | None, command: Command) -> bool:
    """Whether a host report answers exactly what the core awaits (R26)."""
    if isinstance(command, (PreStepDecided, PreStepFailed)):
        return (
            isinstance(awaiting, AwaitPreStep)
            and awaiting.turn == command.turn
            and awaiting.step == command.step
        )
    if isinstance(command, StepFinished):
        return (
            isinstance(awaiting, AwaitStep)
            and awaiting.turn == command.turn
            and awaiting.step == command.step
        )
    assert isinstance(command, TurnStoppingDone)
    return isinstance(awaiting, AwaitTurnStopping) and awaiting.turn == command.turn


_Kind: TypeAlias = Literal["edit", "report", "resume"]

_TABLE: Final[dict[type, tuple[_Kind, Callable[[_Tx, Any], None]]]] = {
    Send: ("edit", _send),
    Splice: ("edit", _splice),
    Clear: ("edit", _clear),
    Replace: ("edit", _replace),
    Remove: ("edit", _remove),
    Move: ("edit", _move),
    Cancel: ("edit", _cancel),
    Dispose: ("edit", _dispose),
    Resume: ("resume", _resume),
    PreStepDecided: ("report", _pre_step_decided),
    PreStepFailed: ("report", _pre_step_failed),
    StepFinished: ("report", _step_finished),
    TurnStoppingDone: ("report", _turn_stopping_done),
}
"""Each command type, the gate it passes, and its handler: the transition table."""


def reduce(state: AgentState, command: Command) -> Transition:
    """Apply one command. Raises a typed error, with ``state`` untouched, on rejection."""
    row = _TABLE.get(type(command))
    if row is None:
        raise InvalidInput(f"not a command: {command!r}")
    kind, handler = row
    if state.resume_required and kind != "resume":
        raise ResumeRequired("the log left a turn open; apply Resume() first")
    if kind == "report":
        if not _answers(state.awaiting, command):
            if state.disposed:
                raise AgentDisposed("the agent is disposed")
            raise UnexpectedReport(f"{command!r} does not answer {state.awaiting!r}")
    elif state.disposed:
        raise AgentDisposed("the agent is disposed")
    tx = _Tx(state)
    handler(tx, command)
    return tx.finish()
