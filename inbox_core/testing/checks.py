"""The invariant checker, part 1: states, the durable log, notifications and commands.

Every check folds what it is given on its own, with plain lists, and never
asks the reducer about itself. Every failure is an ``InvariantViolation``
naming the invariant (I1-I12) or, for the v2 rules that are not numbered
invariants, the rule (R23, R30, R31, R33); ``check_well_formed`` names decision
D31 (outputs built without checks pass them). Part 2 (``inbox_core.testing.recovery``)
checks what a log replays and resumes to (I5, I12) and its fates (R32).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Final, TypeVar, cast

import attrs

from inbox_core import (
    AbortedReason,
    AgentError,
    AgentState,
    AwaitPreStep,
    BeginMaintenance,
    Cancel,
    CancelRequested,
    Cause,
    Completed,
    Dispose,
    Disposed,
    DisposedCause,
    DurableEvent,
    EndMaintenance,
    Entry,
    Failed,
    HostRecord,
    Inbox,
    InboxClaimed,
    InboxCoreError,
    InboxDiscarded,
    InboxInserted,
    InboxMoved,
    InboxSpliced,
    MaxTokens,
    MessageAdmitted,
    MessageId,
    Notification,
    PreStepDecided,
    PreStepFailed,
    Resume,
    StatusChanged,
    StepEnded,
    StepFinished,
    StepStarted,
    Transition,
    TurnAborted,
    TurnEnded,
    TurnStarted,
    TurnStoppingDone,
    UserMessage,
)

TURN_REPORTS: Final = (PreStepDecided, PreStepFailed, StepFinished, TurnStoppingDone)
"""The reports of a turn's host (R16, R17)."""
RECORDING: Final = (*TURN_REPORTS, EndMaintenance)
"""The commands that carry host records (R30)."""
_V = TypeVar("_V")


class InvariantViolation(AssertionError):
    """An invariant (or v2 rule) does not hold; ``invariant`` is its id (``"I4"``, ``"R32"``)."""

    def __init__(self, invariant: str, detail: str) -> None:
        super().__init__(f"{invariant}: {detail}")
        self.invariant = invariant
        self.detail = detail


def _fail(invariant: str, detail: str) -> InvariantViolation:
    return InvariantViolation(invariant, detail)


def _ids(entries: Iterable[Entry]) -> list[MessageId]:
    return [m.id for e in entries for m in (*e.contexts, e.message)]


def _batch(entries: Iterable[Entry]) -> list[UserMessage]:
    return [m for e in entries for m in (*e.contexts, e.message)]


@attrs.frozen
class Record:
    """One command and its effect: the states around it and what it emitted or raised.

    For a rejected command ``error`` is set, and ``after`` is the state the
    caller holds afterwards (it must equal ``before``, I11).
    """

    command: object
    before: AgentState
    after: AgentState
    durable: tuple[DurableEvent, ...] = ()
    notifications: tuple[Notification, ...] = ()
    error: BaseException | None = None


def check_unique_ids(state: AgentState) -> None:
    """I1: MessageIds are unique across both lists, contexts included."""
    ids = _ids(state.next_turn) + _ids(state.next_step)
    if len(set(ids)) != len(ids):
        dupes = sorted({i for i in ids if ids.count(i) > 1})
        raise _fail("I1", f"MessageIds pending twice: {dupes}")


def check_quiescence(state: AgentState) -> None:
    """I3: an idle agent has no waking entry pending (maintenance is not idle, R31)."""
    if state.status == "idle":
        waking = [e.message.id for e in (*state.next_turn, *state.next_step) if e.wakeup]
        if waking:
            raise _fail("I3", f"idle with waking entries pending: {waking}")


def check_state(state: AgentState) -> None:
    """I1 and I3 on one (live) state."""
    check_unique_ids(state)
    check_quiescence(state)


def rebuilt(value: _V) -> _V:
    """``value`` built again through the checking constructors, all the way down.

    Tuples, the inbox's entries and every attrs value's fields are rebuilt
    first; anything else (a str, a JSON object) is taken as it is. A value
    that a checking constructor refuses raises its ``InvalidInput``.
    """
    again: Any = value
    if type(value) is tuple:
        again = tuple(rebuilt(item) for item in again)
    elif isinstance(value, Inbox):
        again = Inbox.of(rebuilt(value.next_turn), rebuilt(value.next_step))
    elif attrs.has(type(value)):
        fields = attrs.fields(type(again))
        again = type(value)(**{f.alias: rebuilt(getattr(value, f.name)) for f in fields if f.init})
    return cast(_V, again)


def check_well_formed(transition: Transition) -> None:
    """D31: what the core built without checks is what the checking constructors build.

    The reducer builds its states, phases, events and notifications with
    ``validators.trusted``; each must equal its rebuild, and no check may refuse it.
    """
    try:
        again = rebuilt(transition)
    except InboxCoreError as error:
        raise _fail("D31", f"a checking constructor refuses an output: {error}") from error
    if again != transition:
        raise _fail("D31", f"an output differs from its checked rebuild: {transition!r}")


# ------------------------------------------------------------------ the log


class LogChecker:
    """A naive fold of a durable log checking I2 (turn/start), I4, I7 and I10 event by event.

    It keeps both lists as plain Python lists. After ``feed``, ``lists``,
    ``turn_open``, ``step_open``, ``step``, ``aborted`` (the cause of the open
    turn's ``turn/abort``), ``claim`` (the entries claimed at the latest
    boundary that no ``step/start`` answered yet) and ``accepted`` (every
    MessageId the log ever accepted, R32) describe the log; ``touched`` gives
    each id's latest event (insertion, removal, claim or admission) and
    ``claimed_at`` its latest claim. ``crashes`` are the
    positions (events before) where the log was cut and a restarted process
    went on with Resume: a command's events may stop short there (see
    ``crash``); ``half_moved`` lists the entries whose move a crash cut.
    """

    def __init__(self, *, crashes: Iterable[int] = ()) -> None:
        self.crashes = frozenset(crashes)
        self.lists: dict[str, list[Entry]] = {"next-turn": [], "next-step": []}
        self.seq = 0
        self.last_turn = 0
        self.turn_open = False
        self.step = 0
        self.step_open = False
        self.aborted: Cause | None = None
        self.admitting = False
        self.turn_claimed = False
        self.claim: dict[str, list[Entry]] = {"next-turn": [], "next-step": []}
        self.moving: Entry | None = None
        self.moving_to: str | None = None
        self.half_moved: list[Entry] = []
        self.accepted: set[MessageId] = set()
        self.touched: dict[MessageId, int] = {}
        self.claimed_at: dict[MessageId, int] = {}

    def feed(self, events: Iterable[DurableEvent]) -> LogChecker:
        for event in events:
            self.feed_one(event)
        return self

    def crash(self) -> LogChecker:
        """The log was cut here: a command's remaining events never came (I12).

        The second half of a move may be missing; the removal already says
        ``moved`` (R27). The entry is kept in ``half_moved``.
        """
        if self.moving is not None:
            self.half_moved.append(self.moving)
        self.moving = None
        return self

    def pending_ids(self) -> list[MessageId]:
        return _ids(self.lists["next-turn"]) + _ids(self.lists["next-step"])

    def claimed(self) -> list[UserMessage]:
        """The unanswered claim as the pre-step batch: next-step entries, then next-turn (R9)."""
        return _batch(self.claim["next-step"]) + _batch(self.claim["next-turn"])

    def _bad(self, invariant: str, detail: str) -> InvariantViolation:
        return _fail(invariant, f"event {self.seq}: {detail}")

    def feed_one(self, event: DurableEvent) -> None:
        if self.seq in self.crashes:
            self.crash()
        admitting, self.admitting = self.admitting, False
        moving, self.moving = self.moving, None
        if moving is not None:
            self._check_move_insertion(event, moving)
        if isinstance(event, InboxSpliced):
            self._splice(event)
        elif isinstance(event, TurnStarted):
            if self.turn_open:
                raise self._bad("I4", f"turn/start {event.turn} while turn {self.last_turn} open")
            if event.turn != self.last_turn + 1:
                raise self._bad("I4", f"turn/start {event.turn} after turn {self.last_turn}")
            if not any(e.wakeup for lst in self.lists.values() for e in lst):
                raise self._bad("I2", f"turn/start {event.turn} with no waking entry pending")
            self.last_turn = event.turn
            self.turn_open = True
            self.step = 0
            self.aborted = None
            self.turn_claimed = False
            self.claim = {"next-turn": [], "next-step": []}
        elif isinstance(event, StepStarted):
            if not self.turn_open or event.turn != self.last_turn:
                raise self._bad("I4", f"step/start in turn {event.turn}, no such open turn")
            if self.step_open or event.step != self.step + 1:
                raise self._bad("I4", f"step/start {event.step} after step {self.step}")
            if self.aborted is not None:
                raise self._bad("I10", f"step/start {event.step} after turn {event.turn}'s abort")
            self.step = event.step
            self.step_open = True
            self.admitting = True
            self.claim = {"next-turn": [], "next-step": []}
        elif isinstance(event, MessageAdmitted):
            if not admitting:
                raise self._bad(
                    "I4",
                    "user/message not right after step/start or user/message "
                    "(nothing, not even a host record, stands between them: R30)",
                )
            self.accepted.add(event.message.id)
            self.touched[event.message.id] = self.seq
            self.admitting = True
        elif isinstance(event, StepEnded):
            if not self.step_open or (event.turn, event.step) != (self.last_turn, self.step):
                raise self._bad("I4", f"step/end {event.turn}.{event.step} closes no open step")
            self.step_open = False
        elif isinstance(event, TurnAborted):
            self._abort(event)
        elif isinstance(event, TurnEnded):
            self._turn_end(event)
        elif not isinstance(event, HostRecord):  # a host record stands anywhere else (R30)
            raise self._bad("I4", f"not a durable event: {event!r}")
        self.seq += 1

    def _abort(self, event: TurnAborted) -> None:
        """I4 v2: at most one turn/abort per turn, only inside that open turn (R23)."""
        if not self.turn_open or event.turn != self.last_turn:
            raise self._bad("I4", f"turn/abort {event.turn} outside its open turn")
        if self.aborted is not None:
            raise self._bad("I4", f"a second turn/abort in turn {event.turn}")
        self.aborted = event.cause

    def _turn_end(self, event: TurnEnded) -> None:
        if not self.turn_open or event.turn != self.last_turn:
            raise self._bad("I4", f"turn/end {event.turn} closes no open turn")
        if self.step_open:
            raise self._bad("I4", f"turn/end {event.turn} with step {self.step} open")
        if self.aborted is not None and event.reason != AbortedReason(self.aborted):
            raise self._bad(
                "I4", f"turn {event.turn} has turn/abort {self.aborted!r}, ends {event.reason!r}"
            )
        if self.aborted is None and isinstance(event.reason, AbortedReason):
            raise self._bad("I4", f"turn {event.turn} ends aborted with no turn/abort (R23)")
        self.turn_open = False
        self.aborted = None
        self.claim = {"next-turn": [], "next-step": []}

    def _check_move_insertion(self, event: DurableEvent, moved: Entry) -> None:
        ok = (
            isinstance(event, InboxSpliced)
            and event.target == self.moving_to
            and event.removed_count == 0
            and event.outcome is None
            and event.start == len(self.lists[event.target])
            and len(event.inserted) == 1
            and event.inserted[0].message == moved.message
            and event.inserted[0].contexts == moved.contexts
            and (event.inserted[0].wakeup or event.target == "next-turn")
        )
        if not ok:
            raise self._bad("I4", "a 'moved' removal must be followed by its insertion (R8)")

    def _splice(self, event: InboxSpliced) -> None:
        lst = self.lists[event.target]
        start, removed, inserted = event.start, event.removed_count, event.inserted
        if start + removed > len(lst):
            raise self._bad("I4", f"splice {start}+{removed} beyond length {len(lst)}")
        if not removed and not inserted:
            raise self._bad("I4", "a splice that changes nothing")
        if event.outcome is not None and not removed:
            raise self._bad("I4", "a splice outcome without removal")
        claim = bool(removed) and event.outcome is None
        if claim:
            self._check_claim(event.target, start, removed, bool(inserted), len(lst))
        if event.outcome == "moved":
            if removed != 1 or inserted:
                raise self._bad("I4", "a move removes exactly one entry and inserts none")
            self.moving = lst[start]
            self.moving_to = "next-step" if event.target == "next-turn" else "next-turn"
        taken = lst[start : start + removed]
        lst[start : start + removed] = list(inserted)
        ids = self.pending_ids()
        if len(set(ids)) != len(ids):
            raise self._bad("I4", "the splice makes a MessageId pending twice (R4)")
        self.accepted.update(_ids(inserted))
        for m_id in _ids(taken) + _ids(inserted):
            self.touched[m_id] = self.seq
        if claim:
            self.claim[event.target].extend(taken)
            self.claimed_at.update((m_id, self.seq) for m_id in _ids(taken))

    def _check_claim(self, target: str, start: int, removed: int, inserts: bool, size: int) -> None:
        if inserts or start != 0:
            raise self._bad("I7", "a claim is a pure deletion from the head of the list")
        if not self.turn_open or self.step_open:
            raise self._bad("I4", "a claim outside a step boundary of an open turn")
        if self.aborted is not None:
            raise self._bad("I10", f"a claim after turn {self.last_turn}'s abort (R23)")
        if target == "next-step":
            if removed != size:
                raise self._bad("I4", "a next-step claim takes the whole list (R9)")
        else:
            if removed != 1 or self.turn_claimed:
                raise self._bad("I7", f"turn {self.last_turn} claims a second next-turn entry")
            if self.step != 0:
                raise self._bad("I7", "a next-turn entry claimed between steps")
            self.turn_claimed = True


def check_durable_log(events: Iterable[DurableEvent], *, crashes: Iterable[int] = ()) -> LogChecker:
    """I2 (every turn/start has waking work pending), I4 (well-formed log, v2: turn/abort and
    host records), I7 (claims), I10 (nothing steps after a turn/abort).

    ``crashes``: positions where the log was cut and resumed (see ``LogChecker``).
    """
    return LogChecker(crashes=crashes).feed(events)


# ------------------------------------------------------------ notifications


class NotificationChecker:
    """Checks a live notification log event by event: I6 (per-message grammar), I8.

    ``status`` is the status the log starts from, ``pending`` the MessageIds
    already pending then (a process restarted from a log, I12). ``pending``
    holds the ids announced pending so far.
    """

    def __init__(self, *, status: str = "idle", pending: Iterable[MessageId] = ()) -> None:
        self.status = status
        self.pending: set[MessageId] = set(pending)
        self.index = 0

    def feed(self, notifications: Iterable[Notification]) -> NotificationChecker:
        for note in notifications:
            self.feed_one(note)
        return self

    def _bad(self, invariant: str, detail: str) -> InvariantViolation:
        return _fail(invariant, f"notification {self.index}: {detail}")

    def feed_one(self, note: Notification) -> None:
        if isinstance(note, InboxInserted):
            if note.message.id in self.pending:
                raise self._bad("I6", f"{note.message.id!r} inserted while pending")
            self.pending.add(note.message.id)
        elif isinstance(note, InboxMoved):
            if note.message.id not in self.pending:
                raise self._bad("I6", f"{note.message.id!r} moved while not pending")
        elif isinstance(note, (InboxClaimed, InboxDiscarded)):
            if note.message.id not in self.pending:
                raise self._bad("I6", f"{note.type} of {note.message.id!r}, not pending")
            self.pending.discard(note.message.id)
        elif isinstance(note, StatusChanged):
            if note.status == self.status:
                raise self._bad("I8", f"agent/status {note.status!r} twice in a row")
            self.status = note.status
        elif not isinstance(note, (AgentError, CancelRequested, Disposed)):
            raise self._bad("I6", f"not a notification: {note!r}")
        self.index += 1


def check_notifications(
    notifications: Iterable[Notification],
    *,
    status: str = "idle",
    pending: Iterable[MessageId] = (),
) -> NotificationChecker:
    """I6 (inserted, moved*, (claimed | discarded) per MessageId) and I8 (no repeated status)."""
    return NotificationChecker(status=status, pending=pending).feed(notifications)


# ----------------------------------------------------------------- commands


def _lists(state: AgentState) -> tuple[tuple[Entry, ...], tuple[Entry, ...]]:
    return state.next_turn, state.next_step


def _same_state(a: AgentState, b: AgentState) -> bool:
    return a == b and a.projection() == b.projection()


def _detached(state: AgentState) -> AgentState:
    """An equal ``AgentState`` that shares no object with ``state`` but its values.

    The inbox is rebuilt from its entries, so even an in-place change of the
    inbox's internals shows as a difference (I11).
    """
    if type(state) is not AgentState:  # a port's own state: compared as it is
        return state
    return attrs.evolve(state, inbox=Inbox.of(state.next_turn, state.next_step))


_STEPPING: Final = (Completed, MaxTokens)


class TraceChecker:
    """Checks ``Record``s in command order: I2 (no forced step), I9, I10, I11, and the v2
    rules of one command: R23 (turn/abort), R30 (records first), R31 (maintenance),
    R33 (agent/error).

    It tracks the open turn and which turn is aborted from the records' own
    durable events and notifications, so it does not trust the state's
    abort flag. ``open_turn``/``aborted`` start a trace on a replayed log (the
    open turn's number, and that number again if the log aborted it).
    """

    def __init__(self, *, open_turn: int | None = None, aborted: int | None = None) -> None:
        self.open_turn = open_turn
        self.aborted = aborted
        self.index = 0

    def feed(self, records: Iterable[Record]) -> TraceChecker:
        for record in records:
            self.feed_one(record)
        return self

    def _bad(self, invariant: str, record: Record, detail: str) -> InvariantViolation:
        return _fail(invariant, f"command {self.index} ({record.command!r}): {detail}")

    def feed_one(self, record: Record) -> None:
        self._check(record)
        self.index += 1

    def _check(self, record: Record) -> None:
        command = record.command
        if record.error is not None:
            if not isinstance(record.error, InboxCoreError):
                raise self._bad("I11", record, f"rejected with an untyped {record.error!r}")
            if record.durable or record.notifications:
                raise self._bad("I11", record, "a rejected command emitted events")
            if not _same_state(record.before, record.after):
                raise self._bad("I11", record, "a rejected command changed the state")
            return
        quiet = not record.durable and not record.notifications
        after = record.after
        if isinstance(command, Dispose):  # a silent Dispose still marks the agent disposed
            after = attrs.evolve(after, disposed=record.before.disposed)
        if quiet and not _same_state(record.before, after):
            raise self._bad("I11", record, "a command without events changed the state")
        if isinstance(command, Cancel) and command.keep_inbox:
            if any(isinstance(n, InboxDiscarded) for n in record.notifications) or any(
                isinstance(e, InboxSpliced) for e in record.durable
            ):
                raise self._bad("I9", record, "a keep_inbox cancel discarded pending input")
            if _lists(record.before) != _lists(record.after):
                raise self._bad("I9", record, "a keep_inbox cancel changed the pending lists")
        aborted_before = self.aborted
        self._check_records(record)
        self._check_forcing(record)
        self._check_abort(record)
        self._check_maintenance(record)
        self._check_errors(record, aborted_before)

    def _check_records(self, record: Record) -> None:
        """R30: a report's records come first in its durable events; no one else writes any."""
        command = record.command
        records = tuple(command.records) if isinstance(command, RECORDING) else ()
        written = [e for e in record.durable if isinstance(e, HostRecord)]
        if tuple(record.durable[: len(records)]) != records or len(written) != len(records):
            raise self._bad(
                "R30", record, f"records {records!r} not written first and only: {written!r}"
            )

    def _check_forcing(self, record: Record) -> None:
        """I2: only waking next-step input forces a step; callers never force one."""
        command, before, after = record.command, record.before, record.after
        if isinstance(command, (Resume, PreStepDecided, PreStepFailed, StepFinished)):
            stepping = isinstance(command, StepFinished) and isinstance(command.outcome, _STEPPING)
            if not stepping:
                return
        if isinstance(command, (StepFinished, TurnStoppingDone)):
            same_turn = not any(isinstance(e, TurnEnded) for e in record.durable)
            boundary = isinstance(after.awaiting, AwaitPreStep) and same_turn
            if boundary and not any(e.wakeup for e in before.next_step):
                raise self._bad("I2", record, "a step forced with no waking next-step input")
            return
        if before.status == "running" and after.awaiting != before.awaiting:
            raise self._bad("I2", record, "a caller command changed the awaited host action")

    def _check_abort(self, record: Record) -> None:
        """I10 and R23: the first effective cancel of a live turn writes ``turn/abort`` (its
        cause, after its splices); no step/start follows; the next report closes the turn."""
        command = record.command
        aborted_before, open_before = self.aborted, self.open_turn
        cause: Cause | None = None
        if isinstance(command, Cancel):
            cause = command.cause
        elif isinstance(command, Dispose):
            cause = DisposedCause()
        for index, event in enumerate(record.durable):
            if isinstance(event, StepStarted) and event.turn == self.aborted:
                raise self._bad("I10", record, f"step/start in aborted turn {event.turn}")
            if isinstance(event, TurnAborted):
                if cause is None:
                    raise self._bad("R23", record, "only a cancel or dispose writes turn/abort")
                if event.turn != self.open_turn or self.aborted is not None:
                    raise self._bad("R23", record, f"turn/abort {event.turn}: no live turn")
                if event.cause != cause or index != len(record.durable) - 1:
                    raise self._bad("R23", record, "turn/abort: its cause, after the splices")
                self.aborted = event.turn
            elif isinstance(event, TurnStarted):
                self.open_turn = event.turn
            elif isinstance(event, TurnEnded):
                if event.turn == self.aborted:
                    if not isinstance(event.reason, AbortedReason):
                        raise self._bad("I10", record, "an aborted turn ended not aborted")
                    self.aborted = None
                self.open_turn = None
        notes = [n for n in record.notifications if isinstance(n, CancelRequested)]
        if notes and (cause is None or notes != [CancelRequested(cause)]):
            raise self._bad("R23", record, f"cancel-requested {notes!r} for cause {cause!r}")
        live = (
            open_before is not None and aborted_before is None and record.before.status == "running"
        )
        if cause is not None and live and self.aborted != open_before:
            raise self._bad("R23", record, f"a cancel left live turn {open_before} unaborted")
        reporting = isinstance(command, TURN_REPORTS)
        if aborted_before is not None and reporting and self.aborted == aborted_before:
            raise self._bad("I10", record, "a report did not close the aborted turn (R23)")

    def _check_maintenance(self, record: Record) -> None:
        """R31: a job starts only while idle, writes nothing durable of its own, opens no turn
        before its end, and its end leaves maintenance."""
        command, before, after = record.command, record.before, record.after
        durable = record.durable
        if isinstance(command, BeginMaintenance):
            if before.status != "idle" or before.disposed:
                raise self._bad("R31", record, f"maintenance began while {before.status}")
            if durable or record.notifications != (StatusChanged("maintenance"),):
                raise self._bad("R31", record, "BeginMaintenance only announces its status")
        if before.status == "maintenance" and not isinstance(command, EndMaintenance):
            if after.status != "maintenance":
                raise self._bad(
                    "R31", record, f"maintenance left for {after.status} before its end"
                )
            if not all(isinstance(e, InboxSpliced) for e in durable):
                raise self._bad("R31", record, "maintenance wrote more than inbox splices")
        if isinstance(command, EndMaintenance):
            if before.status != "maintenance":
                raise self._bad("R31", record, "EndMaintenance accepted with no job running")
            if after.status == "maintenance" or StatusChanged(after.status) not in (
                record.notifications
            ):
                raise self._bad("R31", record, "EndMaintenance did not announce the next status")
        if after.status == "maintenance" and after.awaiting is not None:
            raise self._bad("R31", record, f"awaiting {after.awaiting!r} during maintenance")

    def _check_errors(self, record: Record, aborted_before: int | None) -> None:
        """R33: a failure report of a turn that is not aborted announces ``agent/error`` last."""
        command = record.command
        expected: AgentError | None = None
        live = getattr(command, "turn", None) != aborted_before
        if isinstance(command, PreStepFailed) and live:
            expected = AgentError(command.turn, None, command.message, command.code)
        elif isinstance(command, StepFinished) and live and isinstance(command.outcome, Failed):
            outcome = command.outcome
            expected = AgentError(command.turn, command.step, outcome.message, outcome.code)
        errors = [n for n in record.notifications if isinstance(n, AgentError)]
        if expected is None and errors:
            raise self._bad("R33", record, f"unexpected {errors!r}")
        if expected is not None and (errors != [expected] or record.notifications[-1] != expected):
            raise self._bad("R33", record, f"expected {expected!r} last, got {errors!r}")


def check_records(
    records: Iterable[Record], *, open_turn: int | None = None, aborted: int | None = None
) -> TraceChecker:
    """I2 (no forced step), I9 (keep_inbox never discards), I10 (abort), I11 (rejections),
    R23, R30, R31, R33 over the records of a run."""
    return TraceChecker(open_turn=open_turn, aborted=aborted).feed(records)
