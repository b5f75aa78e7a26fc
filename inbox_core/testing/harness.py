"""The harness of ``InboxMachine``: execution, extension points, restarts, invariants."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Final

import attrs
from hypothesis.stateful import (
    RuleBasedStateMachine,
    invariant,
)

from inbox_core import (
    AgentState,
    Command,
    DurableEvent,
    Entry,
    Fate,
    InboxCoreError,
    MessageId,
    Notification,
    Resume,
    Transition,
    UserMessage,
    fates,
    reduce,
    replay,
)
from inbox_core.shell.stores.jsonl import from_json_lines, to_json_lines
from inbox_core.testing.checks import (
    InvariantViolation,
    LogChecker,
    NotificationChecker,
    Record,
    TraceChecker,
    _detached,
    _fail,
    _ids,
    check_quiescence,
    check_unique_ids,
    check_well_formed,
)
from inbox_core.testing.oracle import NaiveInbox
from inbox_core.testing.recovery import (
    check_checkpoint,
    check_fates,
    check_replay,
    check_resume,
)
from inbox_core.testing.strategies import (
    DEFAULT_ID_POOL,
)

FRESH: Final = "fresh"
"""A placeholder MessageId: the machine's rules replace it by one never used in the run."""


class MachineHarness(RuleBasedStateMachine):
    """What ``InboxMachine`` runs on: the run so far, the extension points, ``execute``
    (implementation, oracle, records, comparison), restarts, and the invariants I1-I12
    (and the v2 rules R23, R30-R33) checked after every step.

    See the package docstring for the extension points. ``state``,
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

    def fates_of(self, events: Sequence[DurableEvent]) -> Mapping[MessageId, Fate]:
        """Fold a durable log to its fates (default: ``fates``; R32)."""
        return fates(events)

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
        self._found_in(check_well_formed, transition)
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

    # --------------------------------------------------------------- restarts

    def restart(self, cut: int, early: Command | None = None) -> None:
        """The process dies; a new one replays ``durable[:cut]`` and resumes (R27, I12).

        ``early`` is a command tried before Resume: it raises ResumeRequired
        when the prefix left a turn open or waking work idle (D8).
        """
        prefix = self.durable[:cut]
        stored = from_json_lines(to_json_lines(prefix))  # the new process reads it back
        if stored != prefix:
            self._found.setdefault("I5", _fail("I5", "the log does not survive JSON Lines"))
            return
        try:
            self.resume_after(prefix)
            replayed = self.replay_log(prefix)
        except InvariantViolation as violation:
            self._found.setdefault("I12", violation)
            return
        except InboxCoreError as error:
            self._found.setdefault("I12", _fail("I12", f"prefix {cut} does not replay: {error}"))
            return
        try:  # opening from a checkpoint the dead process wrote at or before the cut
            for at in sorted({1, cut // 2, cut - cut // 3, cut} - {0}) if cut else ():
                check_checkpoint(prefix, at)
        except InvariantViolation as violation:
            self._found.setdefault("R41", violation)
            return
        self.state = replayed
        self.durable = list(prefix)
        self.notifications = []
        pending = _ids(replayed.next_turn) + _ids(replayed.next_step)
        self.crashes = [c for c in self.crashes if c < cut] + [cut]
        self._log = LogChecker(crashes=self.crashes).feed(prefix).crash()
        self._notes = NotificationChecker(status=replayed.status, pending=pending)
        open_turn = self._log.last_turn if self._log.turn_open else None
        aborted = open_turn if self._log.aborted is not None else None
        self._trace = TraceChecker(open_turn=open_turn, aborted=aborted)
        self._prefixes_checked = min(self._prefixes_checked, cut + 1)
        if self.oracle is not None:
            self.oracle = type(self.oracle).from_fold(self._log)
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
            fold=self._log,
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
    def R23_first_abort_is_durable(self) -> None:
        self._raise_found("R23")

    @invariant()
    def R30_records_come_first(self) -> None:
        self._raise_found("R30")

    @invariant()
    def R31_maintenance_between_turns(self) -> None:
        self._raise_found("R31")

    @invariant()
    def R32_every_accepted_id_has_one_fate(self) -> None:
        self._raise_found("R32")
        check_fates(self.durable, fates_fn=self.fates_of, fold=self._log)

    @invariant()
    def R33_failures_are_announced(self) -> None:
        self._raise_found("R33")

    @invariant()
    def D31_outputs_are_well_formed(self) -> None:
        self._raise_found("D31")

    @invariant()
    def R41_checkpoints_reopen_exactly(self) -> None:
        self._raise_found("R41")

    @invariant()
    def I12_every_prefix_resumes(self) -> None:
        self._raise_found("I12")
        if not self.check_every_prefix:
            return
        for cut in range(self._prefixes_checked, len(self.durable) + 1):
            self.resume_after(self.durable[:cut])
        self._prefixes_checked = len(self.durable) + 1
