"""``InboxMachine``: the Hypothesis state machine playing every caller and the host."""

from __future__ import annotations

import contextlib
from typing import Final

import attrs
from hypothesis import strategies as st
from hypothesis.stateful import (
    precondition,
    rule,
)

from inbox_core import (
    AgentDisposed,
    AwaitPreStep,
    AwaitStep,
    AwaitTurnStopping,
    BeginMaintenance,
    Cancel,
    Clear,
    Command,
    Completed,
    Continue,
    Decision,
    Dispose,
    EndMaintenance,
    Enter,
    Entry,
    ExpectIdle,
    ExpectTurn,
    Failed,
    HookCause,
    HostRecord,
    InjectInput,
    InvalidInput,
    MaxTokens,
    MessageId,
    Move,
    ParentCause,
    PreStepDecided,
    PreStepFailed,
    Reject,
    Remove,
    Replace,
    Report,
    ResolvedAgentInput,
    Send,
    Splice,
    StepFinished,
    StepOutcome,
    Target,
    TurnStoppingDone,
    UnexpectedReport,
    UserCause,
    UserMessage,
    create_user_message,
    followup,
    inject,
    queue,
    steer,
)
from inbox_core.shell.stores.errors import CorruptLog
from inbox_core.shell.stores.rows import decode_record
from inbox_core.testing.harness import FRESH, MachineHarness
from inbox_core.testing.hostile import Hostile, hostile_documents, hostile_json
from inbox_core.testing.oracle import answers
from inbox_core.testing.strategies import (
    _WORDS,
    TARGET_NAMES,
    caller_commands,
    causes,
    commands,
    entries,
    host_records,
    message_ids,
    messages,
    resolved_inputs,
)

_TARGETS: Final = st.sampled_from(TARGET_NAMES)
_MACHINE_IDS: Final = st.one_of(st.just(FRESH), message_ids())
_MESSAGES: Final = messages(_MACHINE_IDS)
_CONTEXTS: Final = st.lists(_MESSAGES, max_size=2).map(tuple)
_ENTRIES: Final = entries(_MACHINE_IDS)
_INPUTS: Final = resolved_inputs(_MACHINE_IDS)
_PICK: Final = st.one_of(st.integers(0, 7), message_ids())
_REPORT_KINDS: Final = ("decided", "failed", "finished", "stopping", "end")
_GUARDED_KINDS: Final = ("followup", "queue", "steer", "inject", "move", "cancel")
_GUARDS: Final[dict[str, int | None]] = {"idle": None, "live": 0, "past": -1, "future": 1}
"""An expectation per draw (R34): idle, or the last turn plus this offset."""
_RECORDS: Final = host_records()


def _report(kind: str, turn: int, step: int) -> Report:
    if kind == "decided":
        return PreStepDecided(turn, step, Enter(()))
    if kind == "failed":
        return PreStepFailed(turn, step, "stale", "E")
    if kind == "finished":
        return StepFinished(turn, step, Completed())
    if kind == "end":
        return EndMaintenance()
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


def _in_maintenance(machine: InboxMachine) -> bool:
    return machine.state.status == "maintenance"


class InboxMachine(MachineHarness):
    """Plays every caller and the host against ``reduce``; checks I1-I12 (and the v2 rules
    R23, R30-R33) after every step (``MachineHarness``).

    See the package docstring for the extension points.
    """

    # ---------------------------------------------------------- caller rules

    @precondition(_live)
    @rule(message=_MESSAGES, contexts=_CONTEXTS)
    def followup(self, message: UserMessage, contexts: tuple[UserMessage, ...]) -> None:
        message, contexts = self.fresh(message), self.fresh_all(contexts)
        self.execute(followup(message, contexts))

    @precondition(_live)
    @rule(message=_MESSAGES, contexts=_CONTEXTS)
    def queue(self, message: UserMessage, contexts: tuple[UserMessage, ...]) -> None:
        message, contexts = self.fresh(message), self.fresh_all(contexts)
        self.execute(queue(message, contexts))

    @precondition(_live)
    @rule(message=_MESSAGES, contexts=_CONTEXTS)
    def steer(self, message: UserMessage, contexts: tuple[UserMessage, ...]) -> None:
        message, contexts = self.fresh(message), self.fresh_all(contexts)
        self.execute(steer(message, contexts))

    @precondition(_live)
    @rule(message=_MESSAGES)
    def inject(self, message: UserMessage) -> None:
        self.execute(inject(self.fresh(message)))

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

    @precondition(lambda self: _awaiting_pre_step(self) and bool(self._batch()))
    @rule(choice=st.integers(0, 7), crash=st.booleans())
    def resend_a_claimed_id(self, choice: int, crash: bool) -> None:
        """Queue a new message under an id the awaited pre-step batch holds (claimed ids are
        not pending, so R4 allows it); maybe crash right after, before the decision: D9
        then keeps the claim's entry out of the inbox, and R32 still wants one fate."""
        batch = self._batch()
        again = UserMessage(batch[choice % len(batch)].id, "again")
        self.execute(queue(again))
        if crash:
            self.restart(len(self.durable))

    @precondition(_live)
    @rule(cause=causes(), keep_inbox=st.booleans())
    def cancel(self, cause: UserCause | ParentCause | HookCause, keep_inbox: bool) -> None:
        self.execute(Cancel(cause, keep_inbox))

    @precondition(_live)
    @rule(
        kind=st.sampled_from(_GUARDED_KINDS),
        guard=st.sampled_from(tuple(_GUARDS)),
        message=_MESSAGES,
        choice=_PICK,
        to=_TARGETS,
        keep_inbox=st.booleans(),
    )
    def guarded(
        self,
        kind: str,
        guard: str,
        message: UserMessage,
        choice: int | MessageId,
        to: Target,
        keep_inbox: bool,
    ) -> None:
        """A guarded send, move or cancel (R34) expecting idle, or the live, a past or a
        future turn; a failed expectation changes nothing and announces nothing (I11), and
        the oracle must raise the same error (AgentBusy, TurnMismatch)."""
        offset = _GUARDS[guard]
        last = self.state.last_turn
        expect = ExpectIdle() if offset is None else ExpectTurn(max(last + offset, 1))
        fresh = self.fresh(message)
        command: Command
        if kind == "move":
            command = Move(self.pick(choice), to, expect)
        elif kind == "cancel":
            command = Cancel(UserCause(), keep_inbox, expect)
        elif kind == "inject":
            command = inject(fresh, expect=expect)
        else:
            command = {"followup": followup, "queue": queue, "steer": steer}[kind](
                fresh, expect=expect
            )
        self.execute(command)

    @precondition(_live)
    @rule(skip=st.integers(0, 3))
    def dispose(self, skip: int) -> None:
        """Dispose (only one draw in four does, so that runs do not end early)."""
        if not skip:
            self.execute(Dispose())

    @rule(value=hostile_json(), text=hostile_documents())
    def hostile_input(self, value: Hostile, text: str) -> None:
        """Issue 17: a hostile value is refused where a message or a record is built, and a
        forged stored record is CorruptLog; neither touches the agent."""
        before = self.state
        for build in (
            lambda: create_user_message([{"type": "x", "v": value.value}]),
            lambda: HostRecord("host/x", value.value),
        ):
            try:
                build()
            except InvalidInput:
                continue
            raise AssertionError(f"accepted a hostile value: {value!r}")
        with contextlib.suppress(CorruptLog):  # or it decodes: some texts are valid records
            decode_record(0, text)
        assert self.state is before

    @rule(command=commands())
    def any_command(self, command: Command) -> None:
        """Any command at all: a stale report, an edit of a missing id, Resume (D8)..."""
        self.execute(command)

    # ------------------------------------------------------------ host rules

    def _pre_step(self, decision: Decision, records: tuple[HostRecord, ...] = ()) -> None:
        awaiting = self.state.awaiting
        assert isinstance(awaiting, AwaitPreStep)
        self.execute(awaiting.answer(decision, records))

    def _batch(self) -> tuple[UserMessage, ...]:
        awaiting = self.state.awaiting
        assert isinstance(awaiting, AwaitPreStep)
        return awaiting.batch

    @precondition(_awaiting_pre_step)
    @rule(records=_RECORDS)
    def pre_step_enter_batch(self, records: tuple[HostRecord, ...]) -> None:
        """Enter the claimed batch, with host records written first (R30)."""
        self._pre_step(Enter(self._batch()), records)

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
    @rule(records=_RECORDS)
    def pre_step_reject(self, records: tuple[HostRecord, ...]) -> None:
        self._pre_step(Reject(), records)

    @precondition(_awaiting_pre_step)
    @rule(message=_WORDS, code=st.sampled_from(["E1", "hook"]), records=_RECORDS)
    def pre_step_failed(self, message: str, code: str, records: tuple[HostRecord, ...]) -> None:
        """A pre-step hook failed: turn/end error, agent/error last (R18, R23, R33)."""
        awaiting = self.state.awaiting
        assert isinstance(awaiting, AwaitPreStep)
        self.execute(awaiting.fail(message, code, records))

    def _step_finished(self, outcome: StepOutcome, records: tuple[HostRecord, ...] = ()) -> None:
        awaiting = self.state.awaiting
        assert isinstance(awaiting, AwaitStep)
        self.execute(awaiting.answer(outcome, records))

    @precondition(_awaiting_step)
    @rule(records=_RECORDS)
    def step_continue(self, records: tuple[HostRecord, ...]) -> None:
        self._step_finished(Continue(), records)

    @precondition(_awaiting_step)
    @rule(records=_RECORDS)
    def step_completed(self, records: tuple[HostRecord, ...]) -> None:
        self._step_finished(Completed(), records)

    @precondition(_awaiting_step)
    @rule(records=_RECORDS)
    def step_max_tokens(self, records: tuple[HostRecord, ...]) -> None:
        self._step_finished(MaxTokens(), records)

    @precondition(_awaiting_step)
    @rule(message=_MESSAGES)
    def max_tokens_then_a_steered_step(self, message: UserMessage) -> None:
        """Max-tokens, a steer at turn-stopping, a completed step: the turn still ends
        max-tokens (R18: sticky), after the extra step the steer forced (R17)."""
        self._step_finished(MaxTokens())
        awaiting = self.state.awaiting
        if isinstance(awaiting, AwaitTurnStopping):
            self.execute(steer(self.fresh(message)))
            self.execute(awaiting.answer())
        if isinstance(self.state.awaiting, AwaitPreStep):
            self._pre_step(Enter(self._batch()))
        if isinstance(self.state.awaiting, AwaitStep):
            self._step_finished(Completed())
        awaiting = self.state.awaiting
        if isinstance(awaiting, AwaitTurnStopping):
            self.execute(awaiting.answer())

    @precondition(_awaiting_step)
    @rule(message=_WORDS, code=st.sampled_from(["E1", "rate-limit"]), records=_RECORDS)
    def step_failed(self, message: str, code: str, records: tuple[HostRecord, ...]) -> None:
        """A failed step: turn/end error, agent/error last unless aborted (R33, D21)."""
        self._step_finished(Failed(message, code), records)

    @precondition(_awaiting_turn_stopping)
    @rule(records=_RECORDS)
    def turn_stopping_done(self, records: tuple[HostRecord, ...]) -> None:
        awaiting = self.state.awaiting
        assert isinstance(awaiting, AwaitTurnStopping)
        self.execute(awaiting.answer(records))

    @precondition(_awaiting_turn_stopping)
    @rule(message=_MESSAGES, contexts=_CONTEXTS)
    def steer_then_turn_stopping_done(
        self, message: UserMessage, contexts: tuple[UserMessage, ...]
    ) -> None:
        """A turn-stopping listener steers, then the listeners are done (R17)."""
        awaiting = self.state.awaiting
        assert isinstance(awaiting, AwaitTurnStopping)
        message, contexts = self.fresh(message), self.fresh_all(contexts)
        self.execute(steer(message, contexts))
        self.execute(awaiting.answer())

    @rule(
        kind=st.sampled_from((*_REPORT_KINDS, "junk")),
        turn_delta=st.integers(-1, 1),
        step_delta=st.integers(-1, 1),
    )
    def stale_report(self, kind: str, turn_delta: int, step_delta: int) -> None:
        """A report that answers nothing awaited raises and changes nothing (R26, I11);
        ``end`` is an ``EndMaintenance`` with no job running (R31).

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
        if isinstance(report, EndMaintenance) and self.state.status == "maintenance":
            report = _report("stopping", turn + 1, step)  # the job's end would answer
        self._expect_rejected(report, UnexpectedReport, AgentDisposed)

    @precondition(lambda self: self.state.awaiting is not None or _in_maintenance(self))
    @rule(choice=st.integers(0, 5), records=_RECORDS)
    def host_drives(self, choice: int, records: tuple[HostRecord, ...]) -> None:
        """The host answers what is awaited the ordinary way (keeps turns moving).

        Pre-step: enter the batch; step: completed, continue or max-tokens;
        turn-stopping: done; a maintenance job: its end. Records go with it (R30).
        """
        awaiting = self.state.awaiting
        if isinstance(awaiting, AwaitPreStep):
            self._pre_step(Enter(awaiting.batch), records)
        elif isinstance(awaiting, AwaitStep):
            outcome = (Completed(), Continue(), MaxTokens())[choice % 3]
            self.execute(awaiting.answer(outcome, records))
        elif isinstance(awaiting, AwaitTurnStopping):
            self.execute(awaiting.answer(records))
        elif _in_maintenance(self):
            self.execute(EndMaintenance(records))

    # ----------------------------------------------------- maintenance rules

    @precondition(lambda self: _live(self) and self.state.status == "idle")
    @rule()
    def begin_maintenance(self) -> None:
        """A between-turn job, while idle (R31; ``any_command`` tries it while busy too:
        MaintenanceUnavailable)."""
        self.execute(BeginMaintenance())

    @precondition(_in_maintenance)
    @rule(records=_RECORDS)
    def end_maintenance(self, records: tuple[HostRecord, ...]) -> None:
        """The job ends, its records first; waking work then opens a turn (R30, R31)."""
        self.execute(EndMaintenance(records))

    @precondition(_in_maintenance)
    @rule(message=_MESSAGES, contexts=_CONTEXTS, records=_RECORDS)
    def steer_during_maintenance(
        self,
        message: UserMessage,
        contexts: tuple[UserMessage, ...],
        records: tuple[HostRecord, ...],
    ) -> None:
        """A followup while a job runs waits (no turn, R31) and opens one at the job's end;
        a promotion to next-step has no live turn (SteerUnavailable, R8)."""
        message, contexts = self.fresh(message), self.fresh_all(contexts)
        self.execute(followup(message, contexts))
        self.execute(Move(message.id, "next-step"))
        self.execute(EndMaintenance(records))

    # ------------------------------------------------------------ crash rule

    @precondition(lambda self: self.state.disposed)
    @rule()
    def restart_after_dispose(self) -> None:
        """The disposed process ends; a new one replays the whole log and resumes."""
        self.restart(len(self.durable))

    @rule(back=st.integers(0, 40), early=st.one_of(st.none(), caller_commands()))
    def crash_and_resume(self, back: int, early: Command | None) -> None:
        """The process dies; a new one replays a prefix of the log and resumes (R27, I12).

        ``early`` is a command tried before Resume: it raises ResumeRequired
        when the prefix left a turn open or waking work idle (D8).
        """
        self.restart(max(len(self.durable) - back, 0), early)
