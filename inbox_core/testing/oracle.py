"""The oracle: ``NaiveInbox``, the delivery rules of the brief on plain lists.

Written from the brief (R3-R33, v2 included) and ``specs/decisions.md``, not
from the reducer: two Python lists of ``(message, contexts, wakeup)`` tuples,
linear searches, list slicing for splices, a dictionary snapshot to undo a
rejected command.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, Final, TypeAlias, cast

from inbox_core import (
    AbortedReason,
    AgentBusy,
    AgentDisposed,
    AgentError,
    AgentState,
    Awaiting,
    AwaitPreStep,
    AwaitStep,
    AwaitTurnStopping,
    BeginMaintenance,
    BlockedReason,
    Cancel,
    CancelRequested,
    Cause,
    Clear,
    CompletedReason,
    Continue,
    Dispose,
    Disposed,
    DisposedCause,
    DuplicateMessageId,
    DurableEvent,
    EndMaintenance,
    Entry,
    ErrorReason,
    ExpectIdle,
    ExpectTurn,
    Failed,
    InboxClaimed,
    InboxCoreError,
    InboxDiscarded,
    InboxInserted,
    InboxMoved,
    InboxSpliced,
    InterruptedReason,
    InvalidInput,
    MaintenanceUnavailable,
    MaxTokens,
    MaxTokensReason,
    MessageAdmitted,
    MessageId,
    Move,
    Notification,
    PreStepDecided,
    PreStepFailed,
    Reject,
    Remove,
    Replace,
    Resume,
    ResumeRequired,
    Send,
    Splice,
    Status,
    StatusChanged,
    SteerUnavailable,
    StepEnded,
    StepFinished,
    StepStarted,
    Target,
    TurnAborted,
    TurnEnded,
    TurnEndReason,
    TurnMismatch,
    TurnStarted,
    TurnStoppingDone,
    UnexpectedReport,
    UserMessage,
)
from inbox_core.events import Outcome
from inbox_core.testing.checks import LogChecker
from inbox_core.testing.strategies import TARGET_NAMES

Item: TypeAlias = tuple[UserMessage, tuple[UserMessage, ...], bool]
"""An oracle entry: (message, contexts, wakeup)."""

Waiting: TypeAlias = tuple[Any, ...]
"""The oracle's awaited action: ("pre", turn, step, batch), ("step", turn, step), ("stop", turn)."""


def answers(awaiting: Awaiting | None, report: object) -> bool:
    """Whether a host report answers exactly the awaited action (kind, turn, step)."""
    return awaiting is not None and awaiting.answered_by(report)


def waiting_of(awaiting: Awaiting | None) -> Waiting | None:
    """An awaited action in the oracle's tuple form."""
    if isinstance(awaiting, AwaitPreStep):
        return ("pre", awaiting.turn, awaiting.step, tuple(awaiting.batch))
    if isinstance(awaiting, AwaitStep):
        return ("step", awaiting.turn, awaiting.step)
    if isinstance(awaiting, AwaitTurnStopping):
        return ("stop", awaiting.turn)
    return None


def items_of(entries: Iterable[Entry]) -> list[Item]:
    """Entries in the oracle's tuple form."""
    return [(e.message, tuple(e.contexts), e.wakeup) for e in entries]


_REPORTS: Final = (PreStepDecided, PreStepFailed, StepFinished, TurnStoppingDone, EndMaintenance)
_CALLER: Final = (
    Send,
    Splice,
    Clear,
    Replace,
    Remove,
    Move,
    Cancel,
    Dispose,
    Resume,
    BeginMaintenance,
)


class NaiveInbox:
    """The oracle: the delivery rules of the brief on plain lists, as naively as possible.

    It is written from the rules (R3-R33, D1-D25 where v2 keeps them), not
    from the reducer. A command either applies completely or raises the error
    class the brief names and changes nothing. After ``apply``, ``durable`` and
    ``notes`` hold the events the command must emit, and the attributes hold
    what the machine compares with the reducer's state (see ``differences``).

    ``status`` is "idle", "running" (a turn is open) or "maintenance" (a job
    runs, R31); ``aborted`` is the first abort cause of the open turn or job.
    """

    def __init__(self) -> None:
        self.next_turn: list[Item] = []
        self.next_step: list[Item] = []
        self.status = "idle"
        self.disposed = False
        self.last_turn = 0
        self.turn_open = False
        self.step = 0
        self.step_open = False
        self.aborted: Cause | None = None
        self.continuing = False
        self.max_tokens = False
        self.waiting: Waiting | None = None
        self.claimed_step: list[Item] = []
        self.claimed_turn: list[Item] = []
        self.needs_resume = False
        self.durable: list[DurableEvent] = []
        self.notes: list[Notification] = []

    # ----------------------------------------------------------- from a log

    @classmethod
    def from_log(cls, events: Iterable[DurableEvent], *, crashes: Iterable[int] = ()) -> NaiveInbox:
        """The oracle of a process restarted from a durable log (before ``Resume``)."""
        return cls.from_fold(LogChecker(crashes=crashes).feed(events).crash())

    @classmethod
    def from_fold(cls, fold: LogChecker) -> NaiveInbox:
        """The oracle of a process restarted from the log ``fold`` has read.

        The log's facts come from the checker's fold (one reading of a log for
        the testing tools); what the restarted agent does with them is the
        oracle's own. A job's maintenance is not in the log (R31): the
        restarted agent is idle, or running its orphaned turn, aborted if the
        log says so (R23).
        """
        model = cls()
        model.next_turn = items_of(fold.lists["next-turn"])
        model.next_step = items_of(fold.lists["next-step"])
        model.last_turn = fold.last_turn
        model.turn_open = fold.turn_open
        model.step = fold.step
        model.step_open = fold.step_open
        model.aborted = fold.aborted
        model.claimed_step = items_of(fold.claim["next-step"])
        model.claimed_turn = items_of(fold.claim["next-turn"])
        model.status = "running" if model.turn_open else "idle"
        model.needs_resume = model.turn_open or model.any_waking()
        return model

    # ------------------------------------------------------------ reading

    def pending_list(self, target: str) -> list[Item]:
        return self.next_turn if target == "next-turn" else self.next_step

    def claimed_list(self, target: str) -> list[Item]:
        return self.claimed_turn if target == "next-turn" else self.claimed_step

    def pending_ids(self) -> list[MessageId]:
        return [m.id for item in self.next_turn + self.next_step for m in (*item[1], item[0])]

    def any_waking(self) -> bool:
        return any(item[2] for item in self.next_turn + self.next_step)

    def find(self, message_id: MessageId) -> tuple[str, int] | None:
        for target in TARGET_NAMES:
            for position, item in enumerate(self.pending_list(target)):
                if item[0].id == message_id:
                    return target, position
        return None

    # ------------------------------------------------------------- applying

    def apply(self, command: object) -> None:
        """Run one command; on rejection raise its error class and change nothing."""
        saved = {k: list(v) if isinstance(v, list) else v for k, v in vars(self).items()}
        self.durable, self.notes = [], []
        try:
            self._apply(command)
        except InboxCoreError:
            self.__dict__.update(saved)
            self.durable, self.notes = [], []
            raise

    def _apply(self, command: object) -> None:
        # D16's order: not a command, Resume first, a report that answers nothing,
        # disposed, then the command's own errors
        if not isinstance(command, _REPORTS + _CALLER):
            raise InvalidInput("not a command")
        if self.needs_resume and not isinstance(command, Resume):
            raise ResumeRequired("resume first")
        if isinstance(command, _REPORTS):
            if not self.answers(command):
                if self.disposed:
                    raise AgentDisposed("disposed")
                raise UnexpectedReport("stale or wrong-phase report")
        elif self.disposed:
            raise AgentDisposed("disposed")
        expect = getattr(command, "expect", None)
        if expect is not None:  # R34: before anything the command itself does
            self.check_expectation(expect)
        if isinstance(command, Send):
            given = command.input
            item = (given.message, tuple(given.contexts), given.wakeup)
            self.splice(given.target, len(self.pending_list(given.target)), 0, [item])
            self.wake_if_idle()
        elif isinstance(command, Splice):
            inserted = items_of(command.inserted)
            self.splice(command.target, command.start, command.delete_count, inserted)
            self.wake_if_idle()
        elif isinstance(command, Clear):
            self.clear()
        elif isinstance(command, Replace):
            self.replace(command.message_id, command.message)
        elif isinstance(command, Remove):
            found = self.find(command.message_id)
            if found is not None:
                self.splice(found[0], found[1], 1, [])
        elif isinstance(command, Move):
            self.move(command.message_id, command.target)
        elif isinstance(command, Cancel):
            self.cancel(command.cause, command.keep_inbox)
        elif isinstance(command, Dispose):
            self.cancel(DisposedCause(), False)  # D5; an earlier cause stays (R25 v2)
            self.disposed = True
            if self.status == "idle":  # converged at once; else at the turn's or job's end
                self.notes.append(Disposed())
        elif isinstance(command, Resume):
            self.resume()
        elif isinstance(command, BeginMaintenance):
            if self.status != "idle":
                raise MaintenanceUnavailable("only while idle")
            self.aborted = None
            self.set_status("maintenance")
        elif isinstance(command, EndMaintenance):
            self.durable += command.records  # R30: first
            self.aborted = None
            self.after_turn()  # R31: waking work opens the next turn, else idle
        else:
            self.report(command)

    def check_expectation(self, expect: object) -> None:
        """R34: idle means status idle; turn n means turn n is open, driven, not aborted."""
        if isinstance(expect, ExpectIdle):
            if self.status != "idle":
                raise AgentBusy(f"status {self.status}")
        elif isinstance(expect, ExpectTurn):
            live = self.status == "running" and self.turn_open and self.aborted is None
            if not (live and self.last_turn == expect.turn):
                raise TurnMismatch(f"turn {expect.turn} is not live")

    def answers(self, report: object) -> bool:
        w = self.waiting
        if isinstance(report, EndMaintenance):
            return self.status == "maintenance"
        if isinstance(report, (PreStepDecided, PreStepFailed)):
            return w is not None and w[0] == "pre" and w[1:3] == (report.turn, report.step)
        if isinstance(report, StepFinished):
            return w is not None and w[0] == "step" and w[1:3] == (report.turn, report.step)
        assert isinstance(report, TurnStoppingDone)
        return w is not None and w[0] == "stop" and w[1] == report.turn

    # --------------------------------------------------------------- edits

    def splice(
        self,
        target: str,
        start: int,
        delete_count: int,
        inserted: list[Item],
        outcome: Outcome | None = "canceled",
        announce: bool = True,
    ) -> list[Item]:
        """A list splice (R5): normalized, unique ids (R4), recorded, announced (D18)."""
        lst = self.pending_list(target)
        start = slice(start, None).indices(len(lst))[0]  # list-splice rules, by Python
        delete_count = max(0, min(delete_count, len(lst) - start))
        removed = lst[start : start + delete_count]
        others = self.pending_ids()
        for item in removed:
            for m in (*item[1], item[0]):
                others.remove(m.id)
        new_ids = [m.id for item in inserted for m in (*item[1], item[0])]
        if len(set(new_ids)) < len(new_ids) or set(new_ids) & set(others):
            raise DuplicateMessageId("duplicate")
        if not removed and not inserted:
            return []
        lst[start : start + delete_count] = inserted
        self.durable.append(
            InboxSpliced(
                cast(Target, target),
                start,
                len(removed),
                tuple(Entry(*item) for item in inserted),
                outcome if removed else None,
            )
        )
        if announce:
            for item in removed:
                self.notes.extend(InboxDiscarded(m) for m in (*item[1], item[0]))
            for item in inserted:
                self.notes.extend(InboxInserted(m) for m in (*item[1], item[0]))
        return removed

    def clear(self) -> None:
        self.splice("next-step", 0, len(self.next_step), [])
        self.splice("next-turn", 0, len(self.next_turn), [])

    def replace(self, message_id: MessageId, message: UserMessage) -> None:
        found = self.find(message_id)
        if found is None:
            return
        target, position = found
        old, contexts, wakeup = self.pending_list(target)[position]
        self.splice(target, position, 1, [(message, contexts, wakeup)], announce=False)
        self.notes += [InboxDiscarded(old), InboxInserted(message)]  # D4
        self.wake_if_idle()

    def move(self, message_id: MessageId, target: str) -> None:
        found = self.find(message_id)
        if found is None or found[0] == target:
            return
        if target == "next-step" and not (self.turn_open and self.aborted is None):
            raise SteerUnavailable("no live turn")  # R8 (also during maintenance, R31)
        message, contexts, wakeup = self.pending_list(found[0])[found[1]]
        self.splice(found[0], found[1], 1, [], "moved", announce=False)
        moved = (message, contexts, True if target == "next-step" else wakeup)
        self.splice(target, len(self.pending_list(target)), 0, [moved], announce=False)
        self.notes += [InboxMoved(m, cast(Target, target)) for m in (*contexts, message)]
        self.wake_if_idle()

    def cancel(self, cause: Cause, keep_inbox: bool) -> None:
        """R21-R23: announce, clear (unless keep_inbox), abort the live turn or job once."""
        live = (self.turn_open or self.status == "maintenance") and self.aborted is None
        clears = not keep_inbox and bool(self.next_turn or self.next_step)
        if live or clears:
            self.notes.append(CancelRequested(cause))
        if clears:
            self.clear()
        if live:
            self.aborted = cause
            if self.turn_open:  # v2: durable, after the splices; a job writes nothing
                self.durable.append(TurnAborted(self.last_turn, cause))

    # --------------------------------------------------------------- turns

    def set_status(self, status: str) -> None:
        if self.status != status:
            self.status = status
            self.notes.append(StatusChanged(cast(Status, status)))

    def wake_if_idle(self) -> None:
        if self.status == "idle" and self.any_waking():
            self.open_turn()

    def open_turn(self) -> None:
        self.set_status("running")
        self.last_turn += 1
        self.durable.append(TurnStarted(self.last_turn))
        self.turn_open = True
        self.step = 0
        self.step_open = False
        self.aborted = None
        self.continuing = False
        self.max_tokens = False
        self.claim(first=True)

    def claim(self, *, first: bool) -> None:
        self.claimed_step = list(self.next_step)
        self.claimed_turn = self.next_turn[:1] if first else []
        for target, claimed in (("next-step", self.claimed_step), ("next-turn", self.claimed_turn)):
            if claimed:
                self.splice(target, 0, len(claimed), [], None, announce=False)  # pure deletion
        batch = [m for item in self.claimed_step + self.claimed_turn for m in (*item[1], item[0])]
        self.notes += [InboxClaimed(m, self.last_turn) for m in batch]
        self.waiting = ("pre", self.last_turn, self.step + 1, tuple(batch))

    def end_turn(self, reason: TurnEndReason) -> None:
        if self.step_open:
            self.durable.append(StepEnded(self.last_turn, self.step))
        self.durable.append(TurnEnded(self.last_turn, reason))
        self.turn_open = False
        self.step_open = False
        self.step = 0
        self.waiting = None
        self.aborted = None
        self.claimed_step, self.claimed_turn = [], []  # consumed or dropped (R23)
        self.after_turn()

    def after_turn(self) -> None:
        """R19, R24, R31: waking work opens the next turn; otherwise idle (and D5)."""
        if self.any_waking():
            self.open_turn()
            return
        self.set_status("idle")
        if self.disposed:
            self.notes.append(Disposed())

    def ending(self) -> TurnEndReason:
        return MaxTokensReason() if self.max_tokens else CompletedReason()

    def report(self, command: Any) -> None:
        turn, step = self.last_turn, self.step
        self.durable += command.records  # R30: before everything the report causes
        if isinstance(command, StepFinished):
            self.durable.append(StepEnded(self.last_turn, self.step))
            self.step_open = False
        if self.aborted is not None:  # D6, D15; R33: an aborted turn's failure is silent
            self.end_turn(AbortedReason(self.aborted))
            return
        if isinstance(command, PreStepDecided):
            decision = command.decision
            if isinstance(decision, Reject):
                self.end_turn(BlockedReason())
            elif not decision.messages and not self.continuing:
                self.end_turn(self.ending())
            else:
                ids = [m.id for m in decision.messages]
                if len(set(ids)) < len(ids):
                    raise DuplicateMessageId("twice in one batch")
                self.step += 1
                self.step_open = True
                self.continuing = False
                self.claimed_step, self.claimed_turn = [], []
                self.durable.append(StepStarted(self.last_turn, self.step))
                self.durable += [MessageAdmitted(m) for m in decision.messages]
                self.waiting = ("step", self.last_turn, self.step)
        elif isinstance(command, PreStepFailed):
            self.end_turn(ErrorReason(command.message, command.code))
            self.notes.append(AgentError(turn, None, command.message, command.code))
        elif isinstance(command, StepFinished):
            outcome = command.outcome
            if isinstance(outcome, Failed):
                self.end_turn(ErrorReason(outcome.message, outcome.code))
                self.notes.append(AgentError(turn, step, outcome.message, outcome.code))
            elif isinstance(outcome, Continue):
                self.continuing = True
                self.claim(first=False)
            else:
                self.max_tokens = self.max_tokens or isinstance(outcome, MaxTokens)
                if any(item[2] for item in self.next_step):
                    self.claim(first=False)
                else:
                    self.waiting = ("stop", self.last_turn)
        elif any(item[2] for item in self.next_step):  # TurnStoppingDone, steered
            self.claim(first=False)
        else:
            self.end_turn(self.ending())

    def resume(self) -> None:
        """R27 v2: close the orphaned turn aborted (its logged cause, nothing restored) or
        interrupted (restoring its undecided claim, D9 v2, D20); then waking work opens a
        turn."""
        if not self.needs_resume:
            return
        self.needs_resume = False
        if not self.turn_open:
            self.wake_if_idle()
            return
        claimed_step, claimed_turn = self.claimed_step, self.claimed_turn
        aborted = self.aborted
        if self.step_open:
            self.durable.append(StepEnded(self.last_turn, self.step))
        reason = InterruptedReason() if aborted is None else AbortedReason(aborted)
        self.durable.append(TurnEnded(self.last_turn, reason))
        self.turn_open = False
        self.step_open = False
        self.step = 0
        self.waiting = None
        self.aborted = None
        if aborted is None:  # D9: the newer pending id wins; a primary is never lost
            for target, claimed in (("next-step", claimed_step), ("next-turn", claimed_turn)):
                pending = set(self.pending_ids())
                kept = [
                    (message, tuple(c for c in contexts if c.id not in pending), wakeup)
                    for message, contexts, wakeup in claimed
                    if message.id not in pending
                ]
                self.splice(target, 0, 0, kept)
        self.claimed_step, self.claimed_turn = [], []
        self.after_turn()

    # --------------------------------------------------------- comparison

    def differences(
        self,
        state: AgentState,
        durable: Sequence[DurableEvent] | None = None,
        notifications: Sequence[Notification] | None = None,
    ) -> list[str]:
        """What differs between the oracle and the reducer (empty when they agree).

        ``durable`` and ``notifications`` are what the reducer emitted for the
        command the oracle last applied (None: not compared).
        """
        diffs = []
        for name, mine in (("next-turn", self.next_turn), ("next-step", self.next_step)):
            theirs = items_of(state.next_turn if name == "next-turn" else state.next_step)
            if theirs != mine:
                diffs.append(f"{name}: reducer {theirs!r}, oracle {mine!r}")
        checks: list[tuple[str, object, object]] = [
            ("status", state.status, self.status),
            ("disposed", state.disposed, self.disposed),
            ("last_turn", state.last_turn, self.last_turn),
            ("awaiting", waiting_of(state.awaiting), self.waiting),
            ("abort_cause", state.abort_cause, self.aborted),
        ]
        if durable is not None:
            checks.append(("durable events", list(durable), self.durable))
        if notifications is not None:
            checks.append(("notifications", list(notifications), self.notes))
        diffs.extend(f"{n}: reducer {a!r}, oracle {b!r}" for n, a, b in checks if a != b)
        return diffs
