"""Property-based testing kit for inbox_core: strategies, invariant checker, oracle, machine.

Importing this module needs Hypothesis, which is a ``dev`` extra
(``pip install 'inbox-core[dev]'``); the rest of ``inbox_core`` does not.

What is here
------------
* **Strategies** (``hypothesis.strategies``): ``message_ids`` (a small pool, so
  duplicates happen), ``sources`` (every variant), ``messages``, ``entries``,
  ``resolved_inputs`` (all three classes), ``causes``, ``decisions``,
  ``outcomes``, ``caller_commands``, ``host_reports`` (mostly stale or
  wrong-phase: they carry arbitrary turn and step numbers) and ``commands``.
* **Invariant checker** for the invariants I1-I12 of the brief. Every check
  raises ``InvariantViolation`` (an ``AssertionError``) whose ``invariant``
  attribute and message name the invariant (``"I4: ..."``):

  - ``check_state(state)``: I1, I3;
  - ``check_durable_log(events)``: I2 (turn/start), I4, I7, by a naive fold;
  - ``check_notifications(notes)``: I6, I8;
  - ``check_records(records)``: I2 (no forced step), I9, I10, I11 over
    ``Record``s (one command, the states around it, what it emitted or the
    error it raised);
  - ``check_replay(state, events)``: I5;
  - ``check_resume(events)``: I12 for one crash point;
  - ``check_invariants(state, durable, notifications, records=...)``: all of
    them over (state, durable log, notification log).

  The ``LogChecker``, ``NotificationChecker`` and ``TraceChecker`` classes do
  the same incrementally (``feed``) for long runs.
* **Oracle**: ``NaiveInbox``, a deliberately naive second implementation of
  the delivery rules (plain lists, written from the brief, not from the
  reducer). It predicts the pending lists with their wakeup flags, the status,
  the awaited action, the abort cause, the exact durable events and live
  notifications of every command, and the error class of a rejected one.
* **Machine**: ``InboxMachine``, a Hypothesis ``RuleBasedStateMachine`` that
  plays every caller and the host at once, runs ``NaiveInbox`` side by side,
  and checks I1-I12 after every step (its ``@invariant`` methods are named
  ``I1_...`` to ``I12_...``). ``run_machine`` runs it under given settings and
  seed; ``run_fuzz`` is the entry point of ``inbox-core fuzz``.

Extending the machine (hosts and ports)
---------------------------------------
Subclass ``InboxMachine`` and use ``MyMachine.TestCase`` (or ``run_machine``).
Every rule goes through ``execute``; override these hooks:

* ``apply(command) -> Transition``: run one command on *your* implementation
  (default ``reduce(self.state, command)``). Raise the typed error of
  ``inbox_core.errors`` on rejection, leaving your implementation unchanged.
  The returned ``Transition.state`` must offer ``status``, ``disposed``,
  ``next_turn``, ``next_step``, ``last_turn``, ``awaiting``, ``abort_cause``
  and ``projection()`` like ``AgentState`` (a port can decode its JSON output
  with ``inbox_core.codec`` and rebuild that state with ``replay`` plus the
  awaited action).
* ``current_state() -> AgentState``: your implementation's state right after
  a rejected command (default ``self.state``); I11 compares it with the state
  before.
* ``replay_log(events) -> AgentState``: fold a durable log (default ``replay``);
  used by I5, I12 and the crash rule.
* ``resume_after(prefix) -> Transition``: I12 for one crash point (default
  ``check_resume`` with ``replay_log`` and ``reduce``).
* ``on_transition(command, transition)`` / ``on_rejected(command, error)``:
  observe every accepted / rejected command (mirror it into your host, assert
  your own side effects).
* ``on_crash(prefix, replayed)``: the crash rule threw the live process away
  and restarted from ``prefix``; rebuild your implementation from it.
* ``make_oracle()``: return the oracle (default ``NaiveInbox()``); return
  ``None`` to run without one.
* class attribute ``check_every_prefix`` (default True): I12 replays every new
  crash point of the log after every step (quadratic in the log length); set
  it to False to check only the crash points the crash rule draws.
* class attribute ``check_reducer_bookkeeping`` (default True): I5 also
  compares ``AgentState``'s own fields with replay's (``check_replay(strict=
  True)``); a port whose state is not an ``AgentState`` sets it to False.

Add your own ``@rule``/``@invariant`` methods as usual; the inherited ones
keep running. The caller rules draw MessageIds from ``DEFAULT_ID_POOL`` or
``FRESH`` (replaced by an id never used in the run); edits pick pending ids.
"""

from __future__ import annotations

import re
import time
import traceback
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Final, TypeAlias, cast

import attrs
import hypothesis
from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st
from hypothesis.reporting import with_reporter
from hypothesis.stateful import (
    RuleBasedStateMachine,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from inbox_core.commands import (
    Cancel,
    Clear,
    Command,
    Completed,
    Continue,
    Decision,
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
    Report,
    Resume,
    Send,
    Splice,
    StepFinished,
    StepOutcome,
    TurnStoppingDone,
)
from inbox_core.errors import (
    AgentDisposed,
    DuplicateMessageId,
    InboxCoreError,
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
from inbox_core.inbox import Inbox
from inbox_core.reducer import (
    AgentState,
    Awaiting,
    AwaitPreStep,
    AwaitStep,
    AwaitTurnStopping,
    Transition,
    reduce,
)
from inbox_core.replay import replay
from inbox_core.values import (
    PLUGIN_FORMS,
    Cause,
    DisposedCause,
    Entry,
    ExtensionSource,
    GoalSource,
    HookCause,
    InjectInput,
    MessageId,
    NextTurnInput,
    ParentCause,
    PluginSource,
    ResolvedAgentInput,
    SnapshotSection,
    Source,
    SteerInput,
    Target,
    ToolSource,
    UserCause,
    UserMessage,
    UserSource,
)

__all__ = [
    "DEFAULT_ID_POOL",
    "FRESH",
    "FuzzSummary",
    "InboxMachine",
    "InvariantViolation",
    "LogChecker",
    "NaiveInbox",
    "NotificationChecker",
    "Record",
    "TraceChecker",
    "answers",
    "caller_commands",
    "causes",
    "check_durable_log",
    "check_invariants",
    "check_notifications",
    "check_quiescence",
    "check_records",
    "check_replay",
    "check_resume",
    "check_state",
    "check_unique_ids",
    "commands",
    "describe_failure",
    "decisions",
    "entries",
    "host_reports",
    "items_of",
    "message_ids",
    "messages",
    "outcomes",
    "resolved_inputs",
    "run_fuzz",
    "run_machine",
    "sources",
    "waiting_of",
]

TARGET_NAMES: Final[tuple[Target, Target]] = ("next-turn", "next-step")

# =================================================================== strategies

DEFAULT_ID_POOL: Final[tuple[MessageId, ...]] = tuple(f"m{i}" for i in range(10))
"""The MessageIds the strategies draw from: small, so duplicates (R4) happen."""

_WORDS: Final = st.sampled_from(["", "a", "go", "hi", "ok?"])
_JSON_SCALARS: Final = st.one_of(
    st.none(), st.booleans(), st.integers(-3, 3), st.floats(-2, 2, allow_nan=False), _WORDS
)


def _json_objects() -> st.SearchStrategy[dict[str, object]]:
    return st.dictionaries(
        st.sampled_from(["a", "b", "note"]),
        st.one_of(_JSON_SCALARS, st.lists(_JSON_SCALARS, max_size=2)),
        max_size=2,
    )


def message_ids(pool: Sequence[MessageId] = DEFAULT_ID_POOL) -> st.SearchStrategy[MessageId]:
    """MessageIds from a small pool, so that duplicates are common."""
    return st.sampled_from(tuple(pool))


def _plugin_sources() -> st.SearchStrategy[PluginSource]:
    names = st.sampled_from(["memory", "clock"])
    plain = st.builds(
        PluginSource,
        names,
        st.sampled_from([None, *(f for f in PLUGIN_FORMS if f not in ("snapshot", "notice"))]),
    )
    sections = st.lists(st.builds(SnapshotSection, _WORDS, _WORDS), max_size=2).map(tuple)
    snapshot = st.builds(PluginSource, names, st.just("snapshot"), sections)
    summaries = st.one_of(_WORDS, st.just("x" * 120))
    notice = st.builds(
        lambda plugin, summary: PluginSource(plugin, "notice", summary=summary), names, summaries
    )
    return st.one_of(plain, snapshot, notice)


def sources() -> st.SearchStrategy[Source]:
    """Every source variant of R2, including host-defined extension kinds."""
    return st.one_of(
        st.just(UserSource()),
        _plugin_sources(),
        st.builds(GoalSource, st.sampled_from(["g1", "g2"]), st.integers(1, 3)),
        st.builds(ToolSource, st.sampled_from(["call-1", "call-2"])),
        st.builds(ExtensionSource, st.sampled_from(["x-host", "memo"]), _json_objects()),
    )


def _contents() -> st.SearchStrategy[str | list[dict[str, object]]]:
    blocks = st.one_of(
        st.builds(lambda text: {"type": "text", "text": text}, _WORDS),
        st.builds(lambda data: {"type": "image", "data": data}, _json_objects()),
    )
    return st.one_of(_WORDS, st.lists(blocks, max_size=2))


def messages(
    ids: st.SearchStrategy[MessageId] | None = None,
) -> st.SearchStrategy[UserMessage]:
    """User messages with ids from ``ids`` (default: the small pool) and any source."""
    return st.builds(
        UserMessage,
        message_ids() if ids is None else ids,
        _contents(),
        sources(),
        st.one_of(st.none(), _json_objects()),
    )


def _contexts(
    ids: st.SearchStrategy[MessageId] | None, max_size: int
) -> st.SearchStrategy[tuple[UserMessage, ...]]:
    return st.lists(messages(ids), max_size=max_size).map(tuple)


def entries(
    ids: st.SearchStrategy[MessageId] | None = None, *, max_contexts: int = 2
) -> st.SearchStrategy[Entry]:
    """Pending entries (R3): a message, 0..max_contexts contexts, either wakeup."""
    return st.builds(Entry, messages(ids), _contexts(ids, max_contexts), st.booleans())


def resolved_inputs(
    ids: st.SearchStrategy[MessageId] | None = None, *, max_contexts: int = 2
) -> st.SearchStrategy[ResolvedAgentInput]:
    """All three input classes of R11 (so all four intents of R12)."""
    return st.one_of(
        st.builds(
            NextTurnInput,
            messages(ids),
            _contexts(ids, max_contexts),
            st.just("next-turn"),
            st.booleans(),
        ),
        st.builds(
            SteerInput,
            messages(ids),
            _contexts(ids, max_contexts),
            st.just("next-step"),
            st.just(True),
        ),
        st.builds(InjectInput, messages(ids), st.just(()), st.just("next-step"), st.just(False)),
    )


def causes() -> st.SearchStrategy[UserCause | ParentCause | HookCause]:
    """The causes a caller may give ``Cancel`` (``DisposedCause`` is Dispose's own)."""
    return st.one_of(st.just(UserCause()), st.just(ParentCause()), st.builds(HookCause, _WORDS))


def decisions(ids: st.SearchStrategy[MessageId] | None = None) -> st.SearchStrategy[Decision]:
    """Pre-step decisions: Reject, or Enter with any batch (duplicates included)."""
    return st.one_of(
        st.just(Reject()), st.builds(Enter, st.lists(messages(ids), max_size=3).map(tuple))
    )


def outcomes() -> st.SearchStrategy[StepOutcome]:
    """Every step outcome of R16."""
    return st.one_of(
        st.just(Continue()),
        st.just(Completed()),
        st.just(MaxTokens()),
        st.builds(Failed, _WORDS, st.sampled_from(["E1", "rate-limit"])),
    )


def caller_commands(ids: st.SearchStrategy[MessageId] | None = None) -> st.SearchStrategy[Command]:
    """Every caller command: sends, edits, cancels, dispose and Resume."""
    pool = message_ids() if ids is None else ids
    targets = st.sampled_from(TARGET_NAMES)
    return st.one_of(
        st.builds(Send, resolved_inputs(ids)),
        st.builds(
            Splice,
            targets,
            st.integers(-4, 5),
            st.integers(-1, 4),
            st.lists(entries(ids), max_size=2).map(tuple),
        ),
        st.just(Clear()),
        st.builds(Replace, pool, messages(ids)),
        st.builds(Remove, pool),
        st.builds(Move, pool, targets),
        st.builds(Cancel, causes(), st.booleans()),
        st.just(Dispose()),
        st.just(Resume()),
    )


def host_reports(*, max_turn: int = 4, max_step: int = 3) -> st.SearchStrategy[Report]:
    """Host reports with arbitrary turn/step numbers: mostly stale or wrong-phase."""
    turns = st.integers(1, max_turn)
    steps = st.integers(1, max_step)
    return st.one_of(
        st.builds(PreStepDecided, turns, steps, decisions()),
        st.builds(PreStepFailed, turns, steps, _WORDS, _WORDS),
        st.builds(StepFinished, turns, steps, outcomes()),
        st.builds(TurnStoppingDone, turns),
    )


def commands(ids: st.SearchStrategy[MessageId] | None = None) -> st.SearchStrategy[Command]:
    """Any command at all: caller commands and host reports."""
    return st.one_of(caller_commands(ids), host_reports())


# ============================================================ invariant checker


class InvariantViolation(AssertionError):
    """An invariant of the brief does not hold; ``invariant`` is its id (``"I4"``)."""

    def __init__(self, invariant: str, detail: str) -> None:
        super().__init__(f"{invariant}: {detail}")
        self.invariant = invariant
        self.detail = detail


def _fail(invariant: str, detail: str) -> InvariantViolation:
    return InvariantViolation(invariant, detail)


def _ids(entries: Iterable[Entry]) -> list[MessageId]:
    return [m.id for e in entries for m in (*e.contexts, e.message)]


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
    """I3: an idle agent has no waking entry pending."""
    if state.status == "idle":
        waking = [e.message.id for e in (*state.next_turn, *state.next_step) if e.wakeup]
        if waking:
            raise _fail("I3", f"idle with waking entries pending: {waking}")


def check_state(state: AgentState) -> None:
    """I1 and I3 on one (live) state."""
    check_unique_ids(state)
    check_quiescence(state)


class LogChecker:
    """A naive fold of a durable log checking I2 (turn/start), I4 and I7 event by event.

    It keeps both lists as plain Python lists. After ``feed``, ``lists``,
    ``turn_open``, ``step_open`` and ``claim`` (the entries claimed at the
    latest boundary that no ``step/start`` answered yet) describe the log.
    ``crashes`` are the positions (events before) where the log was cut and a
    restarted process went on with Resume: a command's events may stop short
    there (see ``crash``).
    """

    def __init__(self, *, crashes: Iterable[int] = ()) -> None:
        self.crashes = frozenset(crashes)
        self.lists: dict[str, list[Entry]] = {"next-turn": [], "next-step": []}
        self.seq = 0
        self.last_turn = 0
        self.turn_open = False
        self.step = 0
        self.step_open = False
        self.admitting = False
        self.turn_claimed = False
        self.claim: dict[str, list[Entry]] = {"next-turn": [], "next-step": []}
        self.moving: Entry | None = None
        self.moving_to: str | None = None

    def feed(self, events: Iterable[DurableEvent]) -> LogChecker:
        for event in events:
            self.feed_one(event)
        return self

    def crash(self) -> LogChecker:
        """The log was cut here: a command's remaining events never came (I12).

        The second half of a move may be missing; the removal already says
        ``moved`` (R27).
        """
        self.moving = None
        return self

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
            self.turn_claimed = False
            self.claim = {"next-turn": [], "next-step": []}
        elif isinstance(event, StepStarted):
            if not self.turn_open or event.turn != self.last_turn:
                raise self._bad("I4", f"step/start in turn {event.turn}, no such open turn")
            if self.step_open or event.step != self.step + 1:
                raise self._bad("I4", f"step/start {event.step} after step {self.step}")
            self.step = event.step
            self.step_open = True
            self.admitting = True
            self.claim = {"next-turn": [], "next-step": []}
        elif isinstance(event, MessageAdmitted):
            if not admitting:
                raise self._bad("I4", "user/message not right after step/start or user/message")
            if not isinstance(event.message, UserMessage):
                raise self._bad("I4", "user/message without a message")
            self.admitting = True
        elif isinstance(event, StepEnded):
            if not self.step_open or (event.turn, event.step) != (self.last_turn, self.step):
                raise self._bad("I4", f"step/end {event.turn}.{event.step} closes no open step")
            self.step_open = False
        elif isinstance(event, TurnEnded):
            if not self.turn_open or event.turn != self.last_turn:
                raise self._bad("I4", f"turn/end {event.turn} closes no open turn")
            if self.step_open:
                raise self._bad("I4", f"turn/end {event.turn} with step {self.step} open")
            if not _valid_reason(event.reason):
                raise self._bad("I4", f"turn/end with invalid reason {event.reason!r}")
            self.turn_open = False
            self.claim = {"next-turn": [], "next-step": []}
        else:
            raise self._bad("I4", f"not a durable event: {event!r}")
        self.seq += 1

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
        if event.target not in self.lists:
            raise self._bad("I4", f"splice target {event.target!r}")
        lst = self.lists[event.target]
        start, removed, inserted = event.start, event.removed_count, event.inserted
        if not (isinstance(start, int) and isinstance(removed, int)) or start < 0 or removed < 0:
            raise self._bad("I4", "splice coordinates must be ints >= 0")
        if start + removed > len(lst):
            raise self._bad("I4", f"splice {start}+{removed} beyond length {len(lst)}")
        if not removed and not inserted:
            raise self._bad("I4", "a splice that changes nothing")
        if event.outcome not in (None, "canceled", "moved"):
            raise self._bad("I4", f"splice outcome {event.outcome!r}")
        if event.outcome is not None and not removed:
            raise self._bad("I4", "a splice outcome without removal")
        if not all(isinstance(e, Entry) for e in inserted):
            raise self._bad("I4", "splice inserts a non-entry")
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
        ids = _ids(self.lists["next-turn"]) + _ids(self.lists["next-step"])
        if len(set(ids)) != len(ids):
            raise self._bad("I4", "the splice makes a MessageId pending twice (R4)")
        if claim:
            self.claim[event.target].extend(taken)

    def _check_claim(self, target: str, start: int, removed: int, inserts: bool, size: int) -> None:
        if inserts or start != 0:
            raise self._bad("I7", "a claim is a pure deletion from the head of the list")
        if not self.turn_open or self.step_open:
            raise self._bad("I4", "a claim outside a step boundary of an open turn")
        if target == "next-step":
            if removed != size:
                raise self._bad("I4", "a next-step claim takes the whole list (R9)")
        else:
            if removed != 1 or self.turn_claimed:
                raise self._bad("I7", f"turn {self.last_turn} claims a second next-turn entry")
            if self.step != 0:
                raise self._bad("I7", "a next-turn entry claimed between steps")
            self.turn_claimed = True


def _valid_reason(reason: object) -> bool:
    if isinstance(reason, (CompletedReason, BlockedReason, MaxTokensReason, InterruptedReason)):
        return True
    if isinstance(reason, ErrorReason):
        return isinstance(reason.message, str) and isinstance(reason.code, str)
    if isinstance(reason, AbortedReason):
        return isinstance(reason.cause, (UserCause, ParentCause, HookCause, DisposedCause))
    return False


def check_durable_log(events: Iterable[DurableEvent], *, crashes: Iterable[int] = ()) -> LogChecker:
    """I2 (every turn/start has waking work pending), I4 (well-formed log), I7 (claims).

    ``crashes``: positions where the log was cut and resumed (see ``LogChecker``).
    """
    return LogChecker(crashes=crashes).feed(events)


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
        elif not isinstance(note, (CancelRequested, Disposed)):
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
    """Checks ``Record``s in command order: I2 (no forced step), I9, I10, I11.

    It tracks the open turn from the records' durable events and which turn a
    cancel aborted from their ``agent/cancel-requested`` notifications, so I10
    does not trust the state's own abort flag.
    """

    def __init__(self, *, open_turn: int | None = None) -> None:
        self.open_turn = open_turn
        self.aborted: int | None = None
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
        self._check_forcing(record)
        self._check_abort(record)

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
        """I10: no step/start in an aborted turn, and its next report closes it aborted."""
        command = record.command
        aborted_before = self.aborted
        for event in record.durable:
            if isinstance(event, StepStarted) and event.turn == self.aborted:
                raise self._bad("I10", record, f"step/start in aborted turn {event.turn}")
            if isinstance(event, TurnStarted):
                self.open_turn = event.turn
            elif isinstance(event, TurnEnded):
                if event.turn == self.aborted:
                    if not isinstance(event.reason, AbortedReason):
                        raise self._bad("I10", record, "an aborted turn ended not aborted")
                    self.aborted = None
                self.open_turn = None
        reporting = isinstance(command, _REPORTS)
        if aborted_before is not None and reporting and self.aborted == aborted_before:
            raise self._bad("I10", record, "a report did not close the aborted turn (R23)")
        if self.open_turn is not None and any(
            isinstance(n, CancelRequested) for n in record.notifications
        ):
            self.aborted = self.open_turn


def check_records(records: Iterable[Record], *, open_turn: int | None = None) -> TraceChecker:
    """I2 (no forced step), I9 (keep_inbox never discards), I10 (abort), I11 (rejections)."""
    return TraceChecker(open_turn=open_turn).feed(records)


def check_replay(
    state: AgentState,
    durable: Sequence[DurableEvent],
    *,
    strict: bool = False,
    replay_fn: Callable[[Sequence[DurableEvent]], AgentState] = replay,
) -> None:
    """I5: replaying the whole durable log gives the live state's projection.

    ``strict`` (for ``AgentState`` itself) also compares the reducer's own
    bookkeeping with replay's: while a turn is open the step counter, the
    open step and the unanswered claim (R27 restores it after a crash); at
    rest the whole state, except ``disposed``, which is not durable (R25).
    """
    try:
        replayed = replay_fn(durable)
    except InboxCoreError as error:
        raise _fail("I5", f"the live durable log does not replay: {error}") from None
    if replayed.projection() != state.projection():
        raise _fail("I5", f"replay gives {replayed.projection()!r}, live is {state.projection()!r}")
    if not strict:
        return
    if state.status == "idle":
        if attrs.evolve(replayed, disposed=state.disposed) != state:
            raise _fail("I5", f"at rest the live state {state!r} differs from replay {replayed!r}")
        return
    live = (state.step, state.step_open, state.claim)
    logged = (replayed.step, replayed.step_open, replayed.claim)
    if live != logged:
        raise _fail("I5", f"step, open step, claim: live {live!r}, replay {logged!r}")


def check_resume(
    events: Sequence[DurableEvent],
    *,
    cut: int | None = None,
    crashes: Iterable[int] = (),
    replay_fn: Callable[[Sequence[DurableEvent]], AgentState] = replay,
    reduce_fn: Callable[[AgentState, Command], Transition] = reduce,
) -> Transition:
    """I12 for one crash point: ``events[:cut]`` replays, and Resume restores I3/I4.

    After ``Resume`` the prefix plus its events is a well-formed log (I4, I2,
    I7), the state holds I1 and I3 and equals its own replay (I5), no further
    Resume is needed, and the claim the crash left unanswered is back at the
    head of its lists (R27; D9: unless its id became pending again).
    ``crashes`` are earlier crash points inside ``events`` (see ``LogChecker``).
    Returns Resume's transition.
    """
    prefix = list(events if cut is None else events[:cut])
    try:
        replayed = replay_fn(prefix)
    except InboxCoreError as error:
        raise _fail("I12", f"prefix of {len(prefix)} events does not replay: {error}") from None
    crashes = frozenset(crashes)
    fold = LogChecker(crashes=crashes).feed(prefix).crash()
    try:
        resumed = reduce_fn(replayed, Resume())
    except InboxCoreError as error:
        raise _fail("I12", f"Resume after {len(prefix)} events raised {error!r}") from None
    try:
        fold.feed(resumed.durable)
        check_state(resumed.state)
        check_replay(resumed.state, prefix + list(resumed.durable), replay_fn=replay_fn)
    except InvariantViolation as violation:
        raise _fail("I12", f"after a crash at {len(prefix)} and Resume: {violation}") from None
    if fold.turn_open and resumed.state.status != "running":
        raise _fail("I12", "Resume left a turn open while idle")
    again = reduce_fn(resumed.state, Resume())
    if again.durable or again.notifications:
        raise _fail("I12", "a second Resume still did something")
    _check_restored(prefix, resumed, crashes)
    return resumed


def _check_restored(
    prefix: Sequence[DurableEvent], resumed: Transition, crashes: frozenset[int]
) -> None:
    """R27: an unanswered claim is back at the head of its lists, in order (D9, D20)."""
    before = LogChecker(crashes=crashes).feed(prefix)
    if not before.turn_open:
        return
    pending: set[MessageId] = set(_ids(before.lists["next-turn"]) + _ids(before.lists["next-step"]))
    restored: dict[str, list[Entry]] = {}
    for target in ("next-step", "next-turn"):
        kept = [e for e in before.claim[target] if not set(_ids([e])) & pending]
        pending.update(_ids(kept))
        restored[target] = kept
    after = LogChecker(crashes=crashes).feed(prefix).crash().feed(resumed.durable)
    if after.turn_open:  # the restored work opened the next turn and was claimed again
        lists = {t: after.claim[t] + after.lists[t] for t in after.lists}
    else:
        lists = after.lists
    for target, kept in restored.items():
        head = lists[target][: len(kept)]
        if head != kept:
            raise _fail("I12", f"Resume did not restore the unanswered {target} claim {kept!r}")
    # D20: one insertion per list, at its head, next-step before next-turn, and
    # before any turn the restored work opens
    restores: list[str] = []
    for event in resumed.durable:
        if isinstance(event, TurnStarted):
            break
        if isinstance(event, InboxSpliced) and event.inserted:
            restores.append(event.target)
    expected = [target for target, kept in restored.items() if kept]
    if restores != expected:
        raise _fail("I12", f"Resume restored the lists in the order {restores}, not {expected}")


def check_invariants(
    state: AgentState,
    durable: Sequence[DurableEvent],
    notifications: Sequence[Notification],
    *,
    records: Sequence[Record] = (),
    cuts: Iterable[int] | None = None,
) -> None:
    """Check I1-I12 over (state, durable log, notification log) of one run from the start.

    ``records`` (one per command, in order) enables I2's forced-step part,
    I9, I10 and I11. I12 replays ``durable[:cut]`` then Resume for each cut
    in ``cuts`` (default: every cut, which is quadratic in the log length).
    Raises ``InvariantViolation`` naming the first invariant that fails.
    """
    check_state(state)
    check_durable_log(durable)
    seen = check_notifications(notifications)
    pending = set(_ids(state.next_turn) + _ids(state.next_step))
    if seen.pending != pending:
        raise _fail("I6", f"announced pending {sorted(seen.pending)}, state has {sorted(pending)}")
    check_records(records)
    check_replay(state, durable)
    for cut in range(len(durable) + 1) if cuts is None else cuts:
        check_resume(durable, cut=cut)


# ======================================================================= oracle

Item: TypeAlias = tuple[UserMessage, tuple[UserMessage, ...], bool]
"""An oracle entry: (message, contexts, wakeup)."""

Waiting: TypeAlias = tuple[Any, ...]
"""The oracle's awaited action: ("pre", turn, step, batch), ("step", turn, step), ("stop", turn)."""


def answers(awaiting: Awaiting | None, report: object) -> bool:
    """Whether a host report answers exactly the awaited action (kind, turn, step)."""
    if isinstance(report, (PreStepDecided, PreStepFailed)):
        return isinstance(awaiting, AwaitPreStep) and (awaiting.turn, awaiting.step) == (
            report.turn,
            report.step,
        )
    if isinstance(report, StepFinished):
        return isinstance(awaiting, AwaitStep) and (awaiting.turn, awaiting.step) == (
            report.turn,
            report.step,
        )
    if isinstance(report, TurnStoppingDone):
        return isinstance(awaiting, AwaitTurnStopping) and awaiting.turn == report.turn
    return False


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


_REPORTS: Final = (PreStepDecided, PreStepFailed, StepFinished, TurnStoppingDone)
_CALLER: Final = (Send, Splice, Clear, Replace, Remove, Move, Cancel, Dispose, Resume)


class NaiveInbox:
    """The oracle: the delivery rules of the brief on plain lists, as naively as possible.

    It is written from the rules (R3-R27, D1-D22), not from the reducer. A
    command either applies completely or raises the error class the brief
    names and changes nothing. After ``apply``, ``durable`` and ``notes`` hold
    the events the command must emit, and the attributes hold what the
    machine compares with the reducer's state (see ``differences``).
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
    def from_log(cls, events: Iterable[DurableEvent]) -> NaiveInbox:
        """The oracle of a process restarted from a durable log (before ``Resume``)."""
        model = cls()
        for event in events:
            if isinstance(event, InboxSpliced):
                lst = model.pending_list(event.target)
                removed = lst[event.start : event.start + event.removed_count]
                lst[event.start : event.start + event.removed_count] = items_of(event.inserted)
                if removed and event.outcome is None:
                    model.claimed_list(event.target).extend(removed)
            elif isinstance(event, TurnStarted):
                model.last_turn = event.turn
                model.turn_open = True
                model.step = 0
                model.claimed_step, model.claimed_turn = [], []
            elif isinstance(event, StepStarted):
                model.step = event.step
                model.step_open = True
                model.claimed_step, model.claimed_turn = [], []
            elif isinstance(event, StepEnded):
                model.step_open = False
            elif isinstance(event, TurnEnded):
                model.turn_open = False
                model.claimed_step, model.claimed_turn = [], []
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
            self.cancel(DisposedCause(), False)
            self.disposed = True
            if not self.turn_open:
                self.notes.append(Disposed())
        elif isinstance(command, Resume):
            self.resume()
        else:
            self.report(command)

    def answers(self, report: object) -> bool:
        w = self.waiting
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
            raise SteerUnavailable("no live turn")
        message, contexts, wakeup = self.pending_list(found[0])[found[1]]
        self.splice(found[0], found[1], 1, [], "moved", announce=False)
        moved = (message, contexts, True if target == "next-step" else wakeup)
        self.splice(target, len(self.pending_list(target)), 0, [moved], announce=False)
        self.notes += [InboxMoved(m, cast(Target, target)) for m in (*contexts, message)]
        self.wake_if_idle()

    def cancel(self, cause: Cause, keep_inbox: bool) -> None:
        live = self.turn_open and self.aborted is None
        clears = not keep_inbox and bool(self.next_turn or self.next_step)
        if live or clears:
            self.notes.append(CancelRequested(cause))
        if clears:
            self.clear()
        if live:
            self.aborted = cause

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
        self.claimed_step, self.claimed_turn = [], []
        self.after_turn()

    def after_turn(self) -> None:
        if self.any_waking():
            self.open_turn()
            return
        self.set_status("idle")
        if self.disposed:
            self.notes.append(Disposed())

    def ending(self) -> TurnEndReason:
        return MaxTokensReason() if self.max_tokens else CompletedReason()

    def report(self, command: object) -> None:
        if isinstance(command, StepFinished):
            self.durable.append(StepEnded(self.last_turn, self.step))
            self.step_open = False
        if self.aborted is not None:
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
        elif isinstance(command, StepFinished):
            outcome = command.outcome
            if isinstance(outcome, Failed):
                self.end_turn(ErrorReason(outcome.message, outcome.code))
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
        if not self.needs_resume:
            return
        self.needs_resume = False
        if not self.turn_open:
            self.wake_if_idle()
            return
        claimed_step, claimed_turn = self.claimed_step, self.claimed_turn
        if self.step_open:
            self.durable.append(StepEnded(self.last_turn, self.step))
        self.durable.append(TurnEnded(self.last_turn, InterruptedReason()))
        self.turn_open = False
        self.step_open = False
        self.step = 0
        self.waiting = None
        for target, claimed in (("next-step", claimed_step), ("next-turn", claimed_turn)):
            pending = set(self.pending_ids())
            kept = [i for i in claimed if not {m.id for m in (*i[1], i[0])} & pending]
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


# ====================================================================== machine

FRESH: Final = "fresh"
"""A placeholder MessageId: the machine's rules replace it by one never used in the run."""

_TARGETS: Final = st.sampled_from(TARGET_NAMES)
_MACHINE_IDS: Final = st.one_of(st.just(FRESH), message_ids())
_MESSAGES: Final = messages(_MACHINE_IDS)
_CONTEXTS: Final = st.lists(_MESSAGES, max_size=2).map(tuple)
_ENTRIES: Final = entries(_MACHINE_IDS)
_INPUTS: Final = resolved_inputs(_MACHINE_IDS)
_PICK: Final = st.one_of(st.integers(0, 7), message_ids())
_REPORT_KINDS: Final = ("decided", "failed", "finished", "stopping")


def _report(kind: str, turn: int, step: int) -> Report:
    if kind == "decided":
        return PreStepDecided(turn, step, Enter(()))
    if kind == "failed":
        return PreStepFailed(turn, step, "stale", "E")
    if kind == "finished":
        return StepFinished(turn, step, Completed())
    return TurnStoppingDone(turn)


def _live(machine: InboxMachine) -> bool:
    return not machine.state.disposed


def _awaiting_pre_step(machine: InboxMachine) -> bool:
    return isinstance(machine.state.awaiting, AwaitPreStep)


def _awaiting_step(machine: InboxMachine) -> bool:
    return isinstance(machine.state.awaiting, AwaitStep)


def _quiet_entry_promotable(machine: InboxMachine) -> bool:
    state = machine.state
    return (
        state.status == "running"
        and state.abort_cause is None
        and not state.disposed
        and any(not entry.wakeup for entry in state.next_turn)
    )


def _awaiting_turn_stopping(machine: InboxMachine) -> bool:
    return isinstance(machine.state.awaiting, AwaitTurnStopping)


class InboxMachine(RuleBasedStateMachine):
    """Plays every caller and the host against ``reduce``; checks I1-I12 after every step.

    See the module docstring for the extension points. ``state``,
    ``durable``, ``notifications`` and ``records`` are the run so far (since
    the last crash for ``notifications``).
    """

    check_every_prefix: bool = True
    check_reducer_bookkeeping: bool = True

    def __init__(self) -> None:
        super().__init__()
        self.state: AgentState = AgentState.initial()
        self.durable: list[DurableEvent] = []
        self.notifications: list[Notification] = []
        self.records: list[Record] = []
        self.oracle: NaiveInbox | None = self.make_oracle()
        self._log = LogChecker()
        self._notes = NotificationChecker()
        self._trace = TraceChecker()
        self._found: dict[str, InvariantViolation] = {}
        self._prefixes_checked = 0
        self._minted = 0
        self.crashes: list[int] = []

    # ------------------------------------------------------- extension points

    def apply(self, command: Command) -> Transition:
        """Run one command on the implementation under test (default: ``reduce``)."""
        return reduce(self.state, command)

    def current_state(self) -> AgentState:
        """The implementation's state after a rejected command (I11; default: ``state``)."""
        return self.state

    def replay_log(self, events: Sequence[DurableEvent]) -> AgentState:
        """Fold a durable log (default: ``replay``)."""
        return replay(events)

    def resume_after(self, prefix: Sequence[DurableEvent]) -> Transition:
        """I12 for one crash point; returns Resume's transition (default: ``check_resume``)."""
        return check_resume(prefix, crashes=self.crashes, replay_fn=self.replay_log)

    def make_oracle(self) -> NaiveInbox | None:
        """The model run side by side (default ``NaiveInbox()``; None disables it)."""
        return NaiveInbox()

    def on_transition(self, command: Command, transition: Transition) -> None:
        """Called after every accepted command."""

    def on_rejected(self, command: object, error: InboxCoreError) -> None:
        """Called after every rejected command."""

    def on_crash(self, prefix: Sequence[DurableEvent], replayed: AgentState) -> None:
        """Called when the crash rule restarts the agent from ``prefix`` (before Resume)."""

    # -------------------------------------------------------------- execution

    def execute(self, command: object) -> Transition | InboxCoreError:
        """Run ``command`` on the implementation and the oracle, record and compare."""
        # I11 compares the state after a command with this copy: an implementation
        # that changed its state in place and then raised cannot hide behind identity
        before = _detached(self.state)
        expected: InboxCoreError | None = None
        if self.oracle is not None:
            try:
                self.oracle.apply(command)
            except InboxCoreError as error:
                expected = error
        rejected: InboxCoreError | None = None
        try:
            transition = self.apply(command)  # type: ignore[arg-type]
        except InboxCoreError as error:
            rejected = error
        if rejected is not None:
            self._track(Record(command, before, self.current_state(), error=rejected))
            if self.oracle is not None and type(expected) is not type(rejected):
                raise AssertionError(
                    f"oracle: {command!r} raised {rejected!r}, the oracle expected {expected!r}"
                )
            self.on_rejected(command, rejected)
            return rejected
        if self.oracle is not None and expected is not None:
            raise AssertionError(f"oracle: {command!r} was accepted, oracle expected {expected!r}")
        self.state = transition.state
        self.durable.extend(transition.durable)
        self.notifications.extend(transition.notifications)
        self._found_in(self._log.feed, transition.durable)
        self._found_in(self._notes.feed, transition.notifications)
        self._track(
            Record(command, before, transition.state, transition.durable, transition.notifications)
        )
        self._compare(command, transition.durable, transition.notifications)
        self.on_transition(command, transition)  # type: ignore[arg-type]
        return transition

    def _found_in(self, feed: Callable[[Any], object], items: object) -> None:
        try:
            feed(items)
        except InvariantViolation as violation:
            self._found.setdefault(violation.invariant, violation)

    def _track(self, record: Record) -> None:
        self.records.append(record)
        self._found_in(self._trace.feed_one, record)

    def _compare(
        self,
        command: object,
        durable: Sequence[DurableEvent] | None = None,
        notifications: Sequence[Notification] | None = None,
    ) -> None:
        if self.oracle is None:
            return
        diffs = self.oracle.differences(self.state, durable, notifications)
        if diffs:
            raise AssertionError(f"oracle disagrees after {command!r}:\n  " + "\n  ".join(diffs))

    def _expect_rejected(self, command: object, *errors: type[InboxCoreError]) -> None:
        result = self.execute(command)
        if not isinstance(result, errors):
            raise AssertionError(f"{command!r} should raise one of {errors}, got {result!r}")

    # ------------------------------------------------------------ ids

    def fresh(self, message: UserMessage) -> UserMessage:
        """``message`` with a never-used MessageId if its id is the ``FRESH`` placeholder."""
        if message.id != FRESH:
            return message
        self._minted += 1
        return attrs.evolve(message, id=f"f{self._minted}")

    def fresh_all(self, messages: Iterable[UserMessage]) -> tuple[UserMessage, ...]:
        return tuple(self.fresh(m) for m in messages)

    def fresh_entry(self, entry: Entry) -> Entry:
        return Entry(self.fresh(entry.message), self.fresh_all(entry.contexts), entry.wakeup)

    def pick(self, choice: int | MessageId) -> MessageId:
        """A pending id (``choice`` indexes primaries, then contexts) or a pool id."""
        if isinstance(choice, str):
            return choice
        everything = (*self.state.next_turn, *self.state.next_step)
        ids = [e.message.id for e in everything] + [c.id for e in everything for c in e.contexts]
        return ids[choice % len(ids)] if ids else DEFAULT_ID_POOL[0]

    # ---------------------------------------------------------- caller rules

    @precondition(_live)
    @rule(message=_MESSAGES, contexts=_CONTEXTS)
    def followup(self, message: UserMessage, contexts: tuple[UserMessage, ...]) -> None:
        message, contexts = self.fresh(message), self.fresh_all(contexts)
        self.execute(Send(NextTurnInput(message, contexts, "next-turn", True)))

    @precondition(_live)
    @rule(message=_MESSAGES, contexts=_CONTEXTS)
    def queue(self, message: UserMessage, contexts: tuple[UserMessage, ...]) -> None:
        message, contexts = self.fresh(message), self.fresh_all(contexts)
        self.execute(Send(NextTurnInput(message, contexts, "next-turn", False)))

    @precondition(_live)
    @rule(message=_MESSAGES, contexts=_CONTEXTS)
    def steer(self, message: UserMessage, contexts: tuple[UserMessage, ...]) -> None:
        message, contexts = self.fresh(message), self.fresh_all(contexts)
        self.execute(Send(SteerInput(message, contexts, "next-step", True)))

    @precondition(_live)
    @rule(message=_MESSAGES)
    def inject(self, message: UserMessage) -> None:
        self.execute(Send(InjectInput(self.fresh(message), (), "next-step", False)))

    @precondition(_live)
    @rule(value=_INPUTS)
    def send(self, value: ResolvedAgentInput) -> None:
        resolved: ResolvedAgentInput
        if isinstance(value, InjectInput):  # R11: contexts typed as the empty tuple
            resolved = attrs.evolve(value, message=self.fresh(value.message))
        else:
            resolved = attrs.evolve(
                value, message=self.fresh(value.message), contexts=self.fresh_all(value.contexts)
            )
        self.execute(Send(resolved))

    @precondition(_live)
    @rule(
        which=_TARGETS,
        start=st.integers(-4, 5),
        delete_count=st.integers(-1, 4),
        inserted=st.lists(_ENTRIES, max_size=2).map(tuple),
    )
    def splice(
        self, which: Target, start: int, delete_count: int, inserted: tuple[Entry, ...]
    ) -> None:
        fresh = tuple(self.fresh_entry(e) for e in inserted)
        self.execute(Splice(which, start, delete_count, fresh))

    @precondition(_live)
    @rule(now=st.booleans())
    def clear(self, now: bool) -> None:
        if now:
            self.execute(Clear())

    @precondition(_live)
    @rule(choice=_PICK, message=_MESSAGES, keep_id=st.booleans())
    def replace(self, choice: int | MessageId, message: UserMessage, keep_id: bool) -> None:
        message_id = self.pick(choice)
        new = attrs.evolve(message, id=message_id) if keep_id else self.fresh(message)
        self.execute(Replace(message_id, new))

    @precondition(_live)
    @rule(choice=_PICK)
    def remove(self, choice: int | MessageId) -> None:
        self.execute(Remove(self.pick(choice)))

    @precondition(_live)
    @rule(choice=_PICK, to=_TARGETS)
    def move(self, choice: int | MessageId, to: Target) -> None:
        self.execute(Move(self.pick(choice), to))

    @precondition(_quiet_entry_promotable)
    @rule(choice=st.integers(0, 7))
    def promote_quiet_entry(self, choice: int) -> None:
        """Move a parked queued entry to next-step during a live turn: it wakes (R8)."""
        quiet = [e.message.id for e in self.state.next_turn if not e.wakeup]
        self.execute(Move(quiet[choice % len(quiet)], "next-step"))

    @precondition(_live)
    @rule(cause=causes(), keep_inbox=st.booleans())
    def cancel(self, cause: UserCause | ParentCause | HookCause, keep_inbox: bool) -> None:
        self.execute(Cancel(cause, keep_inbox))

    @precondition(_live)
    @rule(skip=st.integers(0, 3))
    def dispose(self, skip: int) -> None:
        """Dispose (only one draw in four does, so that runs do not end early)."""
        if not skip:
            self.execute(Dispose())

    @rule(command=commands())
    def any_command(self, command: Command) -> None:
        """Any command at all: a stale report, an edit of a missing id, Resume (D8)..."""
        self.execute(command)

    # ------------------------------------------------------------ host rules

    def _pre_step(self, decision: Decision) -> None:
        awaiting = self.state.awaiting
        assert isinstance(awaiting, AwaitPreStep)
        self.execute(PreStepDecided(awaiting.turn, awaiting.step, decision))

    def _batch(self) -> tuple[UserMessage, ...]:
        awaiting = self.state.awaiting
        assert isinstance(awaiting, AwaitPreStep)
        return awaiting.batch

    @precondition(_awaiting_pre_step)
    @rule()
    def pre_step_enter_batch(self) -> None:
        self._pre_step(Enter(self._batch()))

    @precondition(_awaiting_pre_step)
    @rule(mask=st.lists(st.booleans(), max_size=6), text=_WORDS)
    def pre_step_enter_rewritten(self, mask: list[bool], text: str) -> None:
        batch = self._batch()
        flags = mask + [False] * len(batch)
        rewritten = tuple(
            attrs.evolve(m, content=f"{text} (rewritten)") if flag else m
            for m, flag in zip(batch, flags, strict=False)
        )
        self._pre_step(Enter(rewritten))

    @precondition(_awaiting_pre_step)
    @rule(extra=st.lists(_MESSAGES, min_size=1, max_size=2), first=st.booleans())
    def pre_step_enter_extra(self, extra: list[UserMessage], first: bool) -> None:
        batch, added = self._batch(), self.fresh_all(extra)
        self._pre_step(Enter((*added, *batch) if first else (*batch, *added)))

    @precondition(_awaiting_pre_step)
    @rule(keep=st.lists(st.booleans(), max_size=6))
    def pre_step_enter_dropped(self, keep: list[bool]) -> None:
        batch = self._batch()
        flags = keep + [False] * len(batch)
        self._pre_step(Enter(tuple(m for m, k in zip(batch, flags, strict=False) if k)))

    @precondition(_awaiting_pre_step)
    @rule()
    def pre_step_enter_empty(self) -> None:
        self._pre_step(Enter(()))

    @precondition(_awaiting_pre_step)
    @rule()
    def pre_step_reject(self) -> None:
        self._pre_step(Reject())

    @precondition(_awaiting_pre_step)
    @rule(message=_WORDS, code=st.sampled_from(["E1", "hook"]))
    def pre_step_failed(self, message: str, code: str) -> None:
        awaiting = self.state.awaiting
        assert isinstance(awaiting, AwaitPreStep)
        self.execute(PreStepFailed(awaiting.turn, awaiting.step, message, code))

    def _step_finished(self, outcome: StepOutcome) -> None:
        awaiting = self.state.awaiting
        assert isinstance(awaiting, AwaitStep)
        self.execute(StepFinished(awaiting.turn, awaiting.step, outcome))

    @precondition(_awaiting_step)
    @rule()
    def step_continue(self) -> None:
        self._step_finished(Continue())

    @precondition(_awaiting_step)
    @rule()
    def step_completed(self) -> None:
        self._step_finished(Completed())

    @precondition(_awaiting_step)
    @rule()
    def step_max_tokens(self) -> None:
        self._step_finished(MaxTokens())

    @precondition(_awaiting_step)
    @rule(message=_MESSAGES)
    def max_tokens_then_a_steered_step(self, message: UserMessage) -> None:
        """Max-tokens, a steer at turn-stopping, a completed step: the turn still ends
        max-tokens (R18: sticky), after the extra step the steer forced (R17)."""
        self._step_finished(MaxTokens())
        awaiting = self.state.awaiting
        if isinstance(awaiting, AwaitTurnStopping):
            self.execute(Send(SteerInput(self.fresh(message), (), "next-step", True)))
            self.execute(TurnStoppingDone(awaiting.turn))
        if isinstance(self.state.awaiting, AwaitPreStep):
            self._pre_step(Enter(self._batch()))
        if isinstance(self.state.awaiting, AwaitStep):
            self._step_finished(Completed())
        awaiting = self.state.awaiting
        if isinstance(awaiting, AwaitTurnStopping):
            self.execute(TurnStoppingDone(awaiting.turn))

    @precondition(_awaiting_step)
    @rule(message=_WORDS, code=st.sampled_from(["E1", "rate-limit"]))
    def step_failed(self, message: str, code: str) -> None:
        self._step_finished(Failed(message, code))

    @precondition(_awaiting_turn_stopping)
    @rule()
    def turn_stopping_done(self) -> None:
        awaiting = self.state.awaiting
        assert isinstance(awaiting, AwaitTurnStopping)
        self.execute(TurnStoppingDone(awaiting.turn))

    @precondition(_awaiting_turn_stopping)
    @rule(message=_MESSAGES, contexts=_CONTEXTS)
    def steer_then_turn_stopping_done(
        self, message: UserMessage, contexts: tuple[UserMessage, ...]
    ) -> None:
        """A turn-stopping listener steers, then the listeners are done (R17)."""
        awaiting = self.state.awaiting
        assert isinstance(awaiting, AwaitTurnStopping)
        message, contexts = self.fresh(message), self.fresh_all(contexts)
        self.execute(Send(SteerInput(message, contexts, "next-step", True)))
        self.execute(TurnStoppingDone(awaiting.turn))

    @rule(
        kind=st.sampled_from((*_REPORT_KINDS, "junk")),
        turn_delta=st.integers(-1, 1),
        step_delta=st.integers(-1, 1),
    )
    def stale_report(self, kind: str, turn_delta: int, step_delta: int) -> None:
        """A report that answers nothing awaited raises and changes nothing (R26, I11).

        ``junk`` sends something that is not a command at all (InvalidInput, D16).
        """
        if kind == "junk":
            self._expect_rejected(("not a command", turn_delta, step_delta), InvalidInput)
            return
        awaiting = self.state.awaiting
        turn = max(getattr(awaiting, "turn", self.state.last_turn) + turn_delta, 1)
        step = max(getattr(awaiting, "step", 1) + step_delta, 1)
        report = _report(kind, turn, step)
        if answers(awaiting, report):
            report = _report(kind, turn + 1, step)
        self._expect_rejected(report, UnexpectedReport, AgentDisposed)

    @precondition(lambda self: self.state.awaiting is not None)
    @rule(choice=st.integers(0, 5))
    def host_drives(self, choice: int) -> None:
        """The host answers what is awaited the ordinary way (keeps turns moving).

        Pre-step: enter the batch; step: completed, continue or max-tokens;
        turn-stopping: done.
        """
        awaiting = self.state.awaiting
        if isinstance(awaiting, AwaitPreStep):
            self._pre_step(Enter(awaiting.batch))
        elif isinstance(awaiting, AwaitStep):
            outcome = (Completed(), Continue(), MaxTokens())[choice % 3]
            self.execute(StepFinished(awaiting.turn, awaiting.step, outcome))
        elif isinstance(awaiting, AwaitTurnStopping):
            self.execute(TurnStoppingDone(awaiting.turn))

    # ------------------------------------------------------------ crash rule

    @precondition(lambda self: self.state.disposed)
    @rule()
    def restart_after_dispose(self) -> None:
        """The disposed process ends; a new one replays the whole log and resumes."""
        self.crash_and_resume(0, None)

    @rule(back=st.integers(0, 40), early=st.one_of(st.none(), caller_commands()))
    def crash_and_resume(self, back: int, early: Command | None) -> None:
        """The process dies; a new one replays a prefix of the log and resumes (R27, I12).

        ``early`` is a command tried before Resume: it raises ResumeRequired
        when the prefix left a turn open or waking work idle (D8).
        """
        cut = max(len(self.durable) - back, 0)
        prefix = self.durable[:cut]
        try:
            self.resume_after(prefix)
            replayed = self.replay_log(prefix)
        except InvariantViolation as violation:
            self._found.setdefault("I12", violation)
            return
        except InboxCoreError as error:
            self._found.setdefault("I12", _fail("I12", f"prefix {cut} does not replay: {error}"))
            return
        self.state = replayed
        self.durable = list(prefix)
        self.notifications = []
        pending = _ids(replayed.next_turn) + _ids(replayed.next_step)
        self.crashes = [c for c in self.crashes if c < cut] + [cut]
        self._log = LogChecker(crashes=self.crashes).feed(prefix).crash()
        self._notes = NotificationChecker(status=replayed.status, pending=pending)
        running = replayed.status == "running"
        self._trace = TraceChecker(open_turn=replayed.last_turn if running else None)
        self._prefixes_checked = min(self._prefixes_checked, cut + 1)
        if self.oracle is not None:
            self.oracle = type(self.oracle).from_log(prefix)
            self._compare(f"a crash after {cut} events")
        self.on_crash(prefix, replayed)
        if early is not None:
            self.execute(early)
        self.execute(Resume())

    # ------------------------------------------------------------ invariants

    def _raise_found(self, invariant_id: str) -> None:
        violation = self._found.get(invariant_id)
        if violation is not None:
            raise violation

    @invariant()
    def I1_unique_pending_ids(self) -> None:
        self._raise_found("I1")
        check_unique_ids(self.state)

    @invariant()
    def I2_turns_and_steps_need_waking_work(self) -> None:
        self._raise_found("I2")

    @invariant()
    def I3_idle_means_no_waking_work(self) -> None:
        self._raise_found("I3")
        check_quiescence(self.state)

    @invariant()
    def I4_durable_log_well_formed(self) -> None:
        self._raise_found("I4")

    @invariant()
    def I5_replay_equals_projection(self) -> None:
        self._raise_found("I5")
        check_replay(
            self.state,
            self.durable,
            strict=self.check_reducer_bookkeeping,
            replay_fn=self.replay_log,
        )

    @invariant()
    def I6_notification_grammar(self) -> None:
        self._raise_found("I6")
        pending = set(_ids(self.state.next_turn) + _ids(self.state.next_step))
        if self._notes.pending != pending:
            raise _fail(
                "I6",
                f"announced pending {sorted(self._notes.pending)}, state has {sorted(pending)}",
            )

    @invariant()
    def I7_one_next_turn_claim_per_turn(self) -> None:
        self._raise_found("I7")

    @invariant()
    def I8_status_never_repeats(self) -> None:
        self._raise_found("I8")

    @invariant()
    def I9_keep_inbox_cancel_never_discards(self) -> None:
        self._raise_found("I9")

    @invariant()
    def I10_no_step_after_abort(self) -> None:
        self._raise_found("I10")

    @invariant()
    def I11_rejected_commands_change_nothing(self) -> None:
        self._raise_found("I11")

    @invariant()
    def I12_every_prefix_resumes(self) -> None:
        self._raise_found("I12")
        if not self.check_every_prefix:
            return
        for cut in range(self._prefixes_checked, len(self.durable) + 1):
            self.resume_after(self.durable[:cut])
        self._prefixes_checked = len(self.durable) + 1


# ======================================================================= runner


def run_machine(
    machine: Callable[[], RuleBasedStateMachine] = InboxMachine,
    *,
    config: settings | None = None,
    seed: int | None = None,
) -> None:
    """Run a state machine under ``config`` (default: the current profile), from ``seed``.

    Raises the (shrunk) failure, like any Hypothesis test.
    """

    def factory() -> RuleBasedStateMachine:
        return machine()

    if seed is not None:
        factory = hypothesis.seed(seed)(factory)
    run_state_machine_as_test(
        cast("type[RuleBasedStateMachine]", factory),
        settings=settings() if config is None else config,
    )


_INVARIANT_CALL: Final = re.compile(r"^[\s|]*state\.I\d+_\w+\(\)\s*$")


def describe_failure(error: BaseException) -> str:
    """A failure of the machine as text: the shrunk steps and the error, without the
    invariant calls Hypothesis prints after every step."""
    lines = "".join(traceback.format_exception(error)).splitlines()
    return "\n".join(line for line in lines if not _INVARIANT_CALL.match(line))


@attrs.frozen
class FuzzSummary:
    """What ``run_fuzz`` did: examples run (at most the budget), steps per example,
    wall time, and the shrunk failure report (None when every example passed)."""

    examples: int
    steps: int
    elapsed_seconds: float
    failure: str | None


def run_fuzz(
    *,
    examples: int,
    steps: int,
    seed: int,
    progress: Callable[[int, int], None] | None = None,
    machine: Callable[[], InboxMachine] = InboxMachine,
) -> FuzzSummary:
    """Run the stateful machine with these budgets, deterministically from ``seed``.

    ``progress(done, total)`` is called as examples start (``total`` is
    ``examples``) and once at the end. A failure does not raise: its shrunk
    command sequence and error are returned in ``FuzzSummary.failure``.
    """
    done = 0

    def counted() -> InboxMachine:
        nonlocal done
        done += 1
        if progress is not None and done <= examples:
            progress(done, examples)
        return machine()

    config = settings(
        max_examples=examples,
        stateful_step_count=steps,
        deadline=None,
        database=None,
        derandomize=False,
        print_blob=False,
        phases=(Phase.generate, Phase.shrink),
        suppress_health_check=list(HealthCheck),
    )
    lines: list[str] = []
    failure: str | None = None
    start = time.perf_counter()
    with with_reporter(lambda value: lines.append(str(value))):
        try:
            run_machine(counted, config=config, seed=seed)
        except Exception as error:
            failure = "\n".join([*lines, describe_failure(error)]).strip()
    elapsed = time.perf_counter() - start
    ran = min(done, examples)
    if progress is not None:
        progress(ran, examples)
    return FuzzSummary(ran, steps, elapsed, failure)
