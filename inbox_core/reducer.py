"""The delivery state machine: ``reduce(state, command) -> Transition``.

Theory of operation
-------------------
``AgentState`` (module ``state``) is an immutable value: a *phase* plus the
inbox, the last turn number, the disposed flag, the open turn's (or job's)
abort cause and its sticky max-tokens flag. ``reduce`` is the only function
that makes a new state from a command; it never touches its input and does
no I/O. A ``Transition`` carries the new state, the durable events to append
to the log (the only authority, see ``replay``) and the live notifications.

Pending input waits in two lists (``Inbox``): next-turn entries each open a
turn of their own; next-step entries join the next step boundary. Only a
*waking* entry makes the model run. A waking insertion while ``Idle`` opens
a turn inside the same command (R13, R14); a turn's end opens the next one in
the same command while waking work is pending (R19). While a turn is open
the core waits for one host report at a time; the phase says which::

    Idle --waking input--> turn/start, claim --> PreStep
    PreStep --Enter--> step/start, user/message* --> Step
    PreStep --Reject / failure / empty batch--> turn/end
    Step --Continue--> step/end, claim --> PreStep
    Step --Completed/MaxTokens--> step/end, then a waking steer? claim --> PreStep
                                                      otherwise --> TurnStopping
    TurnStopping --done--> steered meanwhile? claim --> PreStep, else turn/end
    turn/end --> waking work pending? turn/start, claim --> PreStep, else Idle

A cancel marks the live turn aborted (first cause wins) and writes
``turn/abort``; the turn closes on whatever report answers it, and no step
starts in it (R23). ``Maintenance`` is an idle-time job: waking input waits
for ``EndMaintenance`` (R31). A replayed log can leave the state
``Orphaned`` (a turn open) or ``Stranded`` (waking work unstarted): only
``Resume`` is accepted there (R27).

A caller command may carry an expectation (``Send``, ``Move`` and ``Cancel``
with ``expect=ExpectIdle()`` or ``ExpectTurn(n)``, R34): a caller who cannot
see the state acts only on the state it meant. It is checked once, in
``reduce``, after the checks every command gets (``ResumeRequired``,
``AgentDisposed``) and before the handler runs, so a failed expectation
changes nothing and announces nothing.

The table
---------
``TRANSITIONS`` maps ``(phase type, command type)`` to a handler and the
phases it can lead to. A pair that is not in the table is rejected with a
typed error, the state untouched (``_rejection`` picks the error).
``guards.EXPECTATIONS`` does the same for ``(phase type, expectation
type)``: a missing pair never holds (``AgentBusy``, ``TurnMismatch``). The
phase diagram and both tables in specs/spec.md are generated from them
(``python tools/phase_table.py``). Handlers work on a scratch copy (``_Tx``)
and may still reject (a duplicate id, a steer with no live turn) before
anything is returned.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final, NamedTuple

import attrs

from inbox_core.commands import (
    GUARDED_TYPES,
    BeginMaintenance,
    Cancel,
    Clear,
    Command,
    Continue,
    Dispose,
    EndMaintenance,
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
    InboxCoreError,
    InvalidInput,
    MaintenanceUnavailable,
    ResumeRequired,
    SteerUnavailable,
    UnexpectedReport,
    shown,
)
from inbox_core.events import (
    AbortedReason,
    AgentError,
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
    StatusChanged,
    StepEnded,
    StepStarted,
    TurnAborted,
    TurnEnded,
    TurnEndReason,
    TurnStarted,
)
from inbox_core.guards import EXPECTATIONS, unmet
from inbox_core.inbox import Inbox
from inbox_core.state import (
    IDLE,
    MAINTENANCE,
    STATUS_OF,
    TURN_PHASES,
    AgentState,
    AwaitPreStep,
    AwaitStep,
    AwaitTurnStopping,
    Idle,
    Maintenance,
    Orphaned,
    Phase,
    PreStep,
    Step,
    Stranded,
    Transition,
    TurnStopping,
)
from inbox_core.validators import trusted
from inbox_core.values import Cause, DisposedCause, Entry, Target, UserMessage, route

# Field-less values: one instance each serves every command.
_COMPLETED: Final = CompletedReason()
_MAX_TOKENS: Final = MaxTokensReason()
_BLOCKED: Final = BlockedReason()
_INTERRUPTED: Final = InterruptedReason()
_DISPOSED: Final = Disposed()
_STATUS_CHANGED: Final = {status: StatusChanged(status) for status in set(STATUS_OF.values())}

# What a command builds comes from values that passed their checks already (the
# command's fields, the state's own turn and step numbers), so it is built
# without them (validators.trusted, D31); the tests rebuild every output through
# the checking constructors (testing.checks.rebuilt).
_AgentState = trusted(AgentState)
_Transition = trusted(Transition)
_PreStep = trusted(PreStep)
_Step = trusted(Step)
_TurnStopping = trusted(TurnStopping)
_AwaitPreStep = trusted(AwaitPreStep)
_AwaitStep = trusted(AwaitStep)
_AwaitTurnStopping = trusted(AwaitTurnStopping)
_Entry = trusted(Entry)
_InboxSpliced = trusted(InboxSpliced)
_InboxInserted = trusted(InboxInserted)
_InboxDiscarded = trusted(InboxDiscarded)
_InboxClaimed = trusted(InboxClaimed)
_InboxMoved = trusted(InboxMoved)
_MessageAdmitted = trusted(MessageAdmitted)
_TurnStarted = trusted(TurnStarted)
_TurnAborted = trusted(TurnAborted)
_TurnEnded = trusted(TurnEnded)
_StepStarted = trusted(StepStarted)
_StepEnded = trusted(StepEnded)
_CancelRequested = trusted(CancelRequested)
_AgentError = trusted(AgentError)
_AbortedReason = trusted(AbortedReason)
_ErrorReason = trusted(ErrorReason)

# ------------------------------------------------------------------ the scratch


class _Tx:
    """One command's working copy of the state plus the outputs it emits."""

    __slots__ = (
        "original",
        "phase",
        "inbox",
        "last_turn",
        "disposed",
        "abort_cause",
        "max_tokens",
        "durable",
        "notes",
        "error",
    )

    def __init__(self, state: AgentState) -> None:
        self.original = state
        self.phase: Phase = state.phase
        self.inbox: Inbox = state.inbox
        self.last_turn = state.last_turn
        self.disposed = state.disposed
        self.abort_cause: Cause | None = state.abort_cause
        self.max_tokens = state.max_tokens
        self.durable: list[DurableEvent] = []
        self.notes: list[Notification] = []
        self.error: AgentError | None = None  # announced after every other note (R33)

    def finish(self) -> Transition:
        original = self.original
        if self.error is not None:
            self.notes.append(self.error)
        if (
            not self.durable
            and not self.notes
            and self.phase is original.phase
            and self.inbox is original.inbox
            and self.last_turn == original.last_turn
            and self.disposed == original.disposed
            and self.abort_cause is original.abort_cause
            and self.max_tokens == original.max_tokens
        ):
            return _Transition(original, (), ())  # a no-op keeps the very same state
        state = _AgentState(
            phase=self.phase,
            inbox=self.inbox,
            last_turn=self.last_turn,
            disposed=self.disposed,
            abort_cause=self.abort_cause,
            max_tokens=self.max_tokens,
        )
        return _Transition(state, tuple(self.durable), tuple(self.notes))

    # ------------------------------------------------------------ inbox edits

    @property
    def turn_live(self) -> bool:
        """A driven turn that is not aborted can still reach a step boundary (R8)."""
        return isinstance(self.phase, TURN_PHASES) and self.abort_cause is None

    def record(
        self,
        target: Target,
        start: int,
        removed: tuple[Entry, ...],
        inserted: tuple[Entry, ...],
        outcome: Outcome | None,
    ) -> None:
        self.durable.append(
            _InboxSpliced(target, start, len(removed), inserted, outcome if removed else None)
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
            self.notes.extend(map(_InboxDiscarded, entry.messages))
        for entry in inserted:
            self.notes.extend(map(_InboxInserted, entry.messages))

    def clear(self) -> None:
        """Cancel everything pending, next-step first (R7, R22)."""
        self.edit("next-step", 0, self.inbox.size("next-step"), ())
        self.edit("next-turn", 0, self.inbox.size("next-turn"), ())

    def wake_if_idle(self) -> None:
        """A waking insertion while idle opens a turn in the same command (R13, R14)."""
        if type(self.phase) is Idle and self.inbox.has_waking:
            self.open_turn()

    def cancel(self, cause: Cause, *, keep_inbox: bool) -> None:
        """Clear (unless keep_inbox) and abort the live turn or job; first cause wins (R21-R23).

        The first abort of a turn is durable: ``turn/abort`` after the cancel's splices.
        """
        in_job = isinstance(self.phase, Maintenance)
        abortable = self.abort_cause is None and (self.turn_live or in_job)
        clears = not keep_inbox and not self.inbox.is_empty
        if not (abortable or clears):
            return
        self.notes.append(_CancelRequested(cause))
        if clears:
            self.clear()
        if abortable:
            self.abort_cause = cause
            if not in_job:  # maintenance writes nothing durable of its own (R31)
                self.durable.append(_TurnAborted(self.last_turn, cause))

    # ------------------------------------------------------------ turn engine

    def enter(self, phase: Phase) -> None:
        """Switch to a phase of another status and announce it (``agent/status``, I8)."""
        self.notes.append(_STATUS_CHANGED[STATUS_OF[type(phase)]])
        self.phase = phase

    def open_turn(self) -> None:
        """``turn/start`` and the turn-boundary claim (R9, R14, R19)."""
        if STATUS_OF[type(self.phase)] != "running":
            self.notes.append(_STATUS_CHANGED["running"])
        self.last_turn += 1
        self.durable.append(_TurnStarted(self.last_turn))
        self.abort_cause = None
        self.max_tokens = False
        self.claim(step=1, at_turn_start=True, after_continue=False)

    def claim(self, *, step: int, at_turn_start: bool, after_continue: bool) -> None:
        """Claim at a boundary and await the pre-step decision on the batch (R9, R16)."""
        turn = self.last_turn
        claimed = self.inbox.claim(at_turn_start=at_turn_start)
        self.inbox = claimed.inbox
        if claimed.next_step:
            self.record("next-step", 0, claimed.next_step, (), None)
        if claimed.next_turn:
            self.record("next-turn", 0, claimed.next_turn, (), None)
        batch = claimed.batch
        for message in batch:
            self.notes.append(_InboxClaimed(message, turn))
        self.phase = _PreStep(
            awaiting=_AwaitPreStep(turn, step, batch), after_continue=after_continue
        )

    def start_step(self, step: int, messages: tuple[UserMessage, ...]) -> None:
        self.durable.append(_StepStarted(self.last_turn, step))
        self.durable.extend(map(_MessageAdmitted, messages))
        self.phase = _Step(awaiting=_AwaitStep(self.last_turn, step))

    def end_step(self, step: int) -> None:
        """``step/end``; what follows (a claim, turn-stopping, turn/end) sets the phase."""
        self.durable.append(_StepEnded(self.last_turn, step))

    def step_or_stop(self, steps_done: int) -> None:
        """After a step that asks for no continuation: a waking steer forces another
        step, otherwise turn-stopping listeners run (R17)."""
        if self.inbox.has_waking_step:
            self.claim(step=steps_done + 1, at_turn_start=False, after_continue=False)
        else:
            self.phase = _TurnStopping(awaiting=_AwaitTurnStopping(self.last_turn), step=steps_done)

    def end_turn(self, reason: TurnEndReason) -> None:
        """``turn/end``, then the next turn or idle (R16-R19). A step that was open has
        been closed already: every report of a step answers with ``end_step`` first."""
        self.durable.append(_TurnEnded(self.last_turn, reason))
        self.abort_cause = None
        self.max_tokens = False
        self.settle()

    def settle(self) -> None:
        """No turn open: pending waking work opens the next turn, else idle (R19, R24, R25)."""
        if self.inbox.has_waking:
            self.open_turn()
            return
        self.enter(IDLE)
        if self.disposed:
            self.notes.append(_DISPOSED)

    def ended_aborted(self) -> bool:
        """An aborted turn closes on whatever report answers it (R23)."""
        if self.abort_cause is None:
            return False
        self.end_turn(_AbortedReason(self.abort_cause))
        return True

    def ending_reason(self) -> TurnEndReason:
        return _MAX_TOKENS if self.max_tokens else _COMPLETED


# ------------------------------------------------------------- inbox handlers
# Legal in every phase that is not waiting for Resume (_LIVE_PHASES).


def _send(tx: _Tx, command: Send) -> None:
    """Append the entry to its list (R13); while idle a waking one opens a turn (R14)."""
    target, entry = route(command.input)
    result = tx.inbox.append(target, entry)
    tx.inbox = result.inbox
    tx.record(target, result.start, (), (entry,), None)
    tx.notes.extend(map(_InboxInserted, entry.messages))
    tx.wake_if_idle()


def _splice(tx: _Tx, command: Splice) -> None:
    """Normalized list splice (R5, R7); a waking insertion while idle opens a turn."""
    tx.edit(command.target, command.start, command.delete_count, command.inserted)
    tx.wake_if_idle()


def _clear(tx: _Tx, _command: Clear) -> None:
    """Cancel every pending entry, next-step first (R7); the turn goes on."""
    tx.clear()


def _replace(tx: _Tx, command: Replace) -> None:
    """Swap a pending entry's message in place, keeping contexts and wakeup (R7)."""
    found = tx.inbox.find(command.message_id)
    if found is None:
        return
    old = found.entry
    new = _Entry(command.message, old.contexts, old.wakeup)
    result = tx.inbox.splice_found(found, (new,))
    tx.inbox = result.inbox
    tx.record(found.target, found.position, result.removed, (new,), "canceled")
    tx.notes.append(_InboxDiscarded(old.message))
    tx.notes.append(_InboxInserted(new.message))
    tx.wake_if_idle()


def _remove(tx: _Tx, command: Remove) -> None:
    """Cancel one pending entry; a no-op when the id is not pending (R7)."""
    found = tx.inbox.find(command.message_id)
    if found is None:
        return
    result = tx.inbox.splice_found(found, ())
    tx.inbox = result.inbox
    tx.record(found.target, found.position, result.removed, (), "canceled")
    tx.notes.extend(map(_InboxDiscarded, found.entry.messages))


def _move(tx: _Tx, command: Move) -> None:
    """Move an entry to the end of the other list; to next-step only in a live turn (R8)."""
    found = tx.inbox.find(command.message_id)
    if found is None or found.target == command.target:
        return
    if command.target == "next-step" and not tx.turn_live:
        raise SteerUnavailable("no live turn can reach a step boundary; use steer or followup")
    entry = found.entry
    moved = _Entry(entry.message, entry.contexts, True) if command.target == "next-step" else entry
    result = tx.inbox.splice_found(found, ())
    tx.record(found.target, found.position, result.removed, (), "moved")
    end = result.inbox.size(command.target)
    tx.inbox = result.inbox.splice(command.target, end, 0, (moved,)).inbox
    tx.record(command.target, end, (), (moved,), None)
    tx.notes.extend(_InboxMoved(m, command.target) for m in entry.messages)
    tx.wake_if_idle()


def _cancel(tx: _Tx, command: Cancel) -> None:
    """Abort the live turn or job (``turn/abort``, first cause wins); clear unless
    ``keep_inbox`` (R21-R23)."""
    tx.cancel(command.cause, keep_inbox=command.keep_inbox)


def _dispose(tx: _Tx, _command: Dispose) -> None:
    """Clear, abort (an earlier cause stays, R23), refuse what follows (R25)."""
    tx.cancel(DisposedCause(), keep_inbox=False)
    tx.disposed = True
    if isinstance(tx.phase, Idle):
        tx.notes.append(_DISPOSED)


# ------------------------------------------------------------- turn handlers


def _pre_step_decided(tx: _Tx, command: PreStepDecided) -> None:
    """Records; then aborted: turn/end aborted; Reject: turn/end blocked; an empty batch
    not after Continue: turn/end; else step/start and one user/message each (R16, R17)."""
    phase = tx.phase
    assert isinstance(phase, PreStep)
    if command.records:
        tx.durable.extend(command.records)
    if tx.ended_aborted():
        return
    decision = command.decision
    if isinstance(decision, Reject):
        tx.end_turn(_BLOCKED)
    elif not decision.messages and not phase.after_continue:
        tx.end_turn(tx.ending_reason())  # empty batch: nothing to step for (R16, R17)
    else:
        _check_batch(decision)
        tx.start_step(phase.step, decision.messages)


def _check_batch(decision: Enter) -> None:
    if len(decision.messages) < 2:
        return
    seen: set[str] = set()
    for message in decision.messages:
        if message.id in seen:
            raise DuplicateMessageId(message.id)
        seen.add(message.id)


def _pre_step_failed(tx: _Tx, command: PreStepFailed) -> None:
    """Records; turn/end error (or aborted), the claim consumed (R18, R23); agent/error (R33)."""
    if command.records:
        tx.durable.extend(command.records)
    if tx.ended_aborted():
        return  # an aborted turn's failure is not announced (R33)
    tx.error = _AgentError(command.turn, None, command.message, command.code)
    tx.end_turn(_ErrorReason(command.message, command.code))


def _step_finished(tx: _Tx, command: StepFinished) -> None:
    """Records, step/end; then aborted: turn/end aborted; Failed: turn/end error and
    agent/error; Continue: claim; Completed/MaxTokens: claim if a waking steer is
    pending, else turn-stopping (R16-R18, R33)."""
    if command.records:
        tx.durable.extend(command.records)
    tx.end_step(command.step)
    if tx.ended_aborted():
        return
    outcome = command.outcome
    if isinstance(outcome, Failed):
        tx.error = _AgentError(command.turn, command.step, outcome.message, outcome.code)
        tx.end_turn(_ErrorReason(outcome.message, outcome.code))
    elif isinstance(outcome, Continue):
        tx.claim(step=command.step + 1, at_turn_start=False, after_continue=True)
    else:
        tx.max_tokens = tx.max_tokens or isinstance(outcome, MaxTokens)
        tx.step_or_stop(command.step)


def _turn_stopping_done(tx: _Tx, command: TurnStoppingDone) -> None:
    """Records; then aborted: turn/end aborted; steered meanwhile: claim; else turn/end
    completed or max-tokens (R17-R19)."""
    phase = tx.phase
    assert isinstance(phase, TurnStopping)
    if command.records:
        tx.durable.extend(command.records)
    if tx.ended_aborted():
        return
    if tx.inbox.has_waking_step:  # steered meanwhile (R17)
        tx.claim(step=phase.step + 1, at_turn_start=False, after_continue=False)
    else:
        tx.end_turn(tx.ending_reason())


# -------------------------------------------------------- maintenance handlers


def _begin_maintenance(tx: _Tx, _command: BeginMaintenance) -> None:
    """Status maintenance; waking input now waits for the job's end (R31)."""
    tx.enter(MAINTENANCE)


def _end_maintenance(tx: _Tx, command: EndMaintenance) -> None:
    """Records first; then the work the job held back, or idle (R30, R31)."""
    if command.records:
        tx.durable.extend(command.records)
    tx.abort_cause = None
    tx.settle()


# ------------------------------------------------------------- resume handlers


def _resume_orphan(tx: _Tx, _command: Resume) -> None:
    """Close the turn a crash left open (R27).

    With a durable ``turn/abort`` it closes ``aborted`` and its undecided
    claim stays consumed (R23); otherwise it closes ``interrupted`` and the
    claim no decision answered goes back to the head of its lists.
    """
    phase = tx.phase
    assert isinstance(phase, Orphaned)
    if phase.step_open:
        tx.durable.append(_StepEnded(phase.turn, phase.step))
    cause = tx.abort_cause
    tx.abort_cause = None
    tx.max_tokens = False
    if cause is not None:
        tx.durable.append(_TurnEnded(phase.turn, _AbortedReason(cause)))
    else:
        tx.durable.append(_TurnEnded(phase.turn, _INTERRUPTED))
        _restore(tx, "next-step", phase.claim.next_step)
        _restore(tx, "next-turn", phase.claim.next_turn)
    tx.settle()


def _restore(tx: _Tx, target: Target, entries: tuple[Entry, ...]) -> None:
    """Put an unanswered claim back at the head of its list (R27, D9).

    MessageId uniqueness (R4) wins over the restore: a message whose id was
    made pending again after the claim stays out (the newer one keeps the id).
    An entry whose primary message stays out is not restored (its contexts are
    consumed with the interrupted turn); otherwise only its clashing contexts
    are left out, so the primary message is never lost.
    """
    pending = tx.inbox
    restored = []
    for entry in entries:
        if entry.message.id in pending:
            continue
        contexts = tuple(c for c in entry.contexts if c.id not in pending)
        restored.append(
            entry
            if len(contexts) == len(entry.contexts)
            else attrs.evolve(entry, contexts=contexts)
        )
    tx.edit(target, 0, 0, tuple(restored))


def _resume_stranded(tx: _Tx, _command: Resume) -> None:
    """Waking work a crash left unstarted opens its turn (R27)."""
    tx.phase = IDLE
    tx.wake_if_idle()


def _nothing(_tx: _Tx, _command: object) -> None:
    """Resume on a state that needs none changes nothing (R27)."""


# ------------------------------------------------------------------- the table


class Row(NamedTuple):
    """One legal (phase, command) pair: its handler and the phases it can lead to."""

    handler: Callable[[_Tx, Any], None]
    leads_to: tuple[type, ...]


_TURN_END: Final = (PreStep, Idle)  # after turn/end: the next turn's claim, or idle
_LIVE_PHASES: Final = (Idle, Maintenance, PreStep, Step, TurnStopping)
_INBOX_ROWS: Final[dict[type, tuple[Callable[[_Tx, Any], None], bool]]] = {
    # command: (handler, may open a turn while idle)
    Send: (_send, True),
    Splice: (_splice, True),
    Clear: (_clear, False),
    Replace: (_replace, True),
    Remove: (_remove, False),
    Move: (_move, True),
    Cancel: (_cancel, False),
    Dispose: (_dispose, False),
}

TRANSITIONS: Final[dict[tuple[type, type], Row]] = {
    **{
        (phase, command): Row(handler, (phase, PreStep) if wakes and phase is Idle else (phase,))
        for phase in _LIVE_PHASES
        for command, (handler, wakes) in _INBOX_ROWS.items()
    },
    **{(phase, Resume): Row(_nothing, (phase,)) for phase in _LIVE_PHASES},
    (Orphaned, Resume): Row(_resume_orphan, _TURN_END),
    (Stranded, Resume): Row(_resume_stranded, (PreStep,)),
    (Idle, BeginMaintenance): Row(_begin_maintenance, (Maintenance,)),
    (Maintenance, EndMaintenance): Row(_end_maintenance, _TURN_END),
    (PreStep, PreStepDecided): Row(_pre_step_decided, (Step, *_TURN_END)),
    (PreStep, PreStepFailed): Row(_pre_step_failed, _TURN_END),
    (Step, StepFinished): Row(_step_finished, (PreStep, TurnStopping, Idle)),
    (TurnStopping, TurnStoppingDone): Row(_turn_stopping_done, _TURN_END),
}
"""(phase type, command type) -> Row: every legal move; a missing pair is rejected."""

COMMAND_TYPES: Final = frozenset(command for _phase, command in TRANSITIONS)
_REPORTS: Final = frozenset(
    (PreStepDecided, PreStepFailed, StepFinished, TurnStoppingDone, EndMaintenance)
)
_DISPATCH: Final[dict[type, dict[type, tuple[Callable[[_Tx, Any], None], bool, bool]]]] = {
    phase: {
        command: (row.handler, command in _REPORTS, command in GUARDED_TYPES)
        for (row_phase, command), row in TRANSITIONS.items()
        if row_phase is phase
    }
    for phase in STATUS_OF
}
"""``TRANSITIONS`` by phase, then command: (handler, is a report, may carry an expectation).
Derived, for speed."""

# -------------------------------------------------------------------- reduce


def _answers(phase: Phase, command: Any) -> bool:
    """A report must name the turn (and step) the phase awaits (R26)."""
    awaiting = getattr(phase, "awaiting", None)
    return awaiting is None or awaiting.answered_by(command)  # None: a job awaits no id


def _rejection(state: AgentState, command: Command) -> InboxCoreError:
    """The typed error for a (phase, command) pair that is not in the table."""
    if type(command) not in COMMAND_TYPES:
        return InvalidInput(f"not a command: {shown(command)}")
    if state.resume_required:
        return ResumeRequired("the log left a turn open or work unstarted; apply Resume() first")
    if state.disposed:
        return AgentDisposed("the agent is disposed")
    if isinstance(command, BeginMaintenance):
        return MaintenanceUnavailable(f"maintenance begins only while idle, not {state.status}")
    return UnexpectedReport(f"{shown(command)} does not answer {state.awaiting or state.status!r}")


def reduce(state: AgentState, command: Command) -> Transition:
    """Apply one command. Raises a typed error, with ``state`` untouched, on rejection."""
    try:
        found = _DISPATCH[type(state.phase)].get(type(command))
    except (AttributeError, KeyError):  # not an AgentState (checked only when it fails)
        raise InvalidInput(f"reduce takes an AgentState, got {shown(state)}") from None
    if found is None:
        raise _rejection(state, command)
    handler, is_report, guarded = found
    if is_report:
        if not _answers(state.phase, command):
            raise _rejection(state, command)
    elif state.disposed:
        raise AgentDisposed("the agent is disposed")
    elif guarded and command.expect is not None:  # type: ignore[union-attr]
        expect = command.expect  # type: ignore[union-attr]
        holds = EXPECTATIONS.get((type(state.phase), type(expect)))
        if holds is None or not holds(state, expect):
            raise unmet(state, expect)
    tx = _Tx(state)
    handler(tx, command)
    return tx.finish()
