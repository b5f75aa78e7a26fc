"""The invariant checker, part 2: what a log replays, resumes and folds to.

* ``check_replay`` (I5): the live state equals what its log replays to;
* ``check_resume`` (I12): every prefix replays, and Resume closes what a
  crash left open (R27 v2: ``aborted`` when the log holds the turn's
  ``turn/abort``, else ``interrupted`` plus the restore of an undecided claim);
* ``check_checkpoint`` (R41): a log opened from a checkpoint at any position,
  read back from its JSON form, is exactly the replay of the whole log;
* ``check_fates`` (R32): every accepted MessageId has one current fate, the
  pending ones are exactly the replayed lists, the claimed ones exactly the
  unanswered claim;
* ``check_invariants``: all of them over one run.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Final

import attrs

from inbox_core import (
    AbortedReason,
    AgentState,
    AwaitPreStep,
    AwaitStep,
    AwaitTurnStopping,
    Cause,
    ClaimedFate,
    Command,
    DurableEvent,
    Entry,
    Fate,
    InboxCoreError,
    InboxSpliced,
    InterruptedReason,
    MessageId,
    Notification,
    PendingFate,
    Resume,
    Transition,
    TurnEnded,
    TurnStarted,
    fates,
    reduce,
    replay,
)
from inbox_core.checkpoint import checkpoint_from_json, checkpoint_to_json, matches, take
from inbox_core.replay import LogFold, replay_from
from inbox_core.testing.checks import (
    InvariantViolation,
    LogChecker,
    Record,
    _fail,
    _ids,
    check_durable_log,
    check_notifications,
    check_records,
    check_state,
)

FATE_KINDS: Final = ("pending", "admitted", "canceled", "dropped", "consumed", "claimed")

ReplayFn = Callable[[Sequence[DurableEvent]], AgentState]
FatesFn = Callable[[Sequence[DurableEvent]], Mapping[MessageId, Fate]]


def check_checkpoint(
    events: Sequence[DurableEvent], at: int, *, replay_fn: ReplayFn = replay
) -> AgentState:
    """R41 for one position: the checkpoint after ``events[:at]`` (0 < at <= len), through its
    JSON form, matches the event it follows, and opening from it with ``events[at:]``
    gives exactly the state of the whole log's replay (and so every next transition).
    Returns that state."""
    whole = replay_fn(events)
    taken = take(LogFold().feed(events[:at]))
    stored = checkpoint_from_json(checkpoint_to_json(taken, "agent"), "agent")
    if stored != taken:
        raise _fail("R41", f"the checkpoint at {at} does not survive its JSON form")
    if not matches(stored, events[at - 1]):
        raise _fail("R41", f"the checkpoint at {at} does not match the event it follows")
    try:
        opened = replay_from(stored, events[at:])
    except InboxCoreError as error:
        raise _fail("R41", f"opening from the checkpoint at {at} raised {error!r}") from None
    if opened != whole:
        raise _fail("R41", f"opening from the checkpoint at {at} gives {opened!r}, not {whole!r}")
    return opened


def check_replay(
    state: AgentState,
    durable: Sequence[DurableEvent],
    *,
    strict: bool = False,
    replay_fn: ReplayFn = replay,
    fold: LogChecker | None = None,
    crashes: Iterable[int] = (),
) -> None:
    """I5: replaying the whole durable log gives the live state's projection.

    ``strict`` also compares what only the live state shows with what the log
    says, by its own fold (``fold``: a ``LogChecker`` already fed ``durable``,
    else one is built with ``crashes``): while a turn runs, the awaited action
    (its turn and step, and a pre-step batch equal to the unanswered claim,
    R9) and the abort cause (durable since v2: the open turn's ``turn/abort``,
    R23); at rest (idle) the whole state equals its replay, except
    ``disposed``, which is not durable (R25).
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
    if state.status != "running":  # maintenance: the log knows nothing of the job (R31)
        return
    if fold is None:
        fold = LogChecker(crashes=crashes).feed(durable)
    if state.abort_cause != fold.aborted:
        raise _fail("I5", f"abort cause: live {state.abort_cause!r}, log {fold.aborted!r}")
    awaiting, turn = state.awaiting, fold.last_turn
    if isinstance(awaiting, AwaitPreStep):
        ok = (
            not fold.step_open
            and (awaiting.turn, awaiting.step) == (turn, fold.step + 1)
            and list(awaiting.batch) == fold.claimed()
        )
    elif isinstance(awaiting, AwaitStep):
        ok = fold.step_open and (awaiting.turn, awaiting.step) == (turn, fold.step)
    elif isinstance(awaiting, AwaitTurnStopping):
        ok = not fold.step_open and fold.step >= 1 and awaiting.turn == turn and not fold.claimed()
    else:
        ok = True
    if not ok:
        raise _fail(
            "I5",
            f"awaiting {awaiting!r}, but the log has turn {turn} step {fold.step} "
            f"(open: {fold.step_open}) and claim {fold.claimed()!r}",
        )


def check_resume(
    events: Sequence[DurableEvent],
    *,
    cut: int | None = None,
    crashes: Iterable[int] = (),
    replay_fn: ReplayFn = replay,
    reduce_fn: Callable[[AgentState, Command], Transition] = reduce,
) -> Transition:
    """I12 for one crash point: ``events[:cut]`` replays, and Resume restores I3/I4.

    After ``Resume`` the prefix plus its events is a well-formed log (I4, I2,
    I7), the state holds I1 and I3 and equals its own replay (I5), no further
    Resume is needed, and the orphaned turn closed as R27 (v2) says: with the
    cause of its ``turn/abort`` and nothing restored, or ``interrupted`` with
    the claim the crash left unanswered back at the head of its lists (D9:
    an entry whose primary id became pending again stays out, any other comes
    back without its contexts whose ids did; D20: next-step first).
    ``crashes`` are earlier crash points inside ``events`` (see ``LogChecker``).
    Returns Resume's transition.
    """
    prefix = list(events if cut is None else events[:cut])
    try:
        replayed = replay_fn(prefix)
    except InboxCoreError as error:
        raise _fail("I12", f"prefix of {len(prefix)} events does not replay: {error}") from None
    fold = LogChecker(crashes=crashes).feed(prefix).crash()
    orphan = _Orphan.of(fold)
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
    if orphan is not None:
        orphan.check_closed(resumed, fold)
    return resumed


@attrs.frozen
class _Orphan:
    """The turn a crash left open, as the log's own fold saw it before Resume."""

    turn: int
    aborted: Cause | None
    claim: dict[str, list[Entry]]
    pending: frozenset[MessageId]

    @classmethod
    def of(cls, fold: LogChecker) -> _Orphan | None:
        if not fold.turn_open:
            return None
        claim = {t: list(entries) for t, entries in fold.claim.items()}
        return cls(fold.last_turn, fold.aborted, claim, frozenset(fold.pending_ids()))

    def check_closed(self, resumed: Transition, after: LogChecker) -> None:
        """R27 v2: an aborted orphan ends aborted and restores nothing; any other ends
        interrupted and its unanswered claim is back at the head of its lists (D9, D20).

        ``after`` is the fold of the prefix and Resume's events."""
        ends = [e for e in resumed.durable if isinstance(e, TurnEnded) and e.turn == self.turn]
        aborted = self.aborted
        expected_end = InterruptedReason() if aborted is None else AbortedReason(aborted)
        if [e.reason for e in ends] != [expected_end]:
            raise _fail(
                "I12", f"Resume closed turn {self.turn} with {ends!r}, not {expected_end!r}"
            )
        pending: set[MessageId] = set(self.pending)
        restored: dict[str, list[Entry]] = {}
        for target in ("next-step", "next-turn"):
            claimed = self.claim[target] if aborted is None else []  # consumed (R23)
            # D9: an entry whose primary id is pending again stays out; any other comes
            # back without its contexts whose ids are pending again
            kept = [
                Entry(e.message, tuple(c for c in e.contexts if c.id not in pending), e.wakeup)
                for e in claimed
                if e.message.id not in pending
            ]
            pending.update(_ids(kept))
            restored[target] = kept
        if after.turn_open:  # the restored work opened the next turn and was claimed again
            lists = {t: after.claim[t] + after.lists[t] for t in after.lists}
        else:
            lists = after.lists
        for target, kept in restored.items():
            if lists[target][: len(kept)] != kept:
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


def check_fates(
    events: Sequence[DurableEvent],
    *,
    crashes: Iterable[int] = (),
    fates_fn: FatesFn = fates,
    fold: LogChecker | None = None,
    strict_half_moves: bool = False,
) -> Mapping[MessageId, Fate]:
    """R32 on one log: ``fates`` gives every accepted MessageId (sent, spliced in, or added
    by a decision) exactly one fate of the six kinds, and nothing else; the pending ones
    are exactly the ids in the folded lists, contexts included, with their list; the
    claimed ones are exactly the open turn's unanswered claim (turn, and the step its
    decision is asked for), none while no turn is open.

    ``fold``: a ``LogChecker`` already fed ``events`` (else one is built with
    ``crashes``). An entry whose move a crash cut in half (removed ``moved``,
    never inserted: only at a crash point inside one command's events) is in no
    list; its fate is not checked unless ``strict_half_moves``. Returns the fates.
    """
    if fold is None:
        fold = LogChecker(crashes=crashes).feed(events)
        if fold.seq in fold.crashes:  # the log ends at a crash point
            fold.crash()
    got = fates_fn(events)
    missing, extra = fold.accepted - set(got), set(got) - fold.accepted
    if missing or extra:
        raise _fail(
            "R32", f"ids accepted without a fate {sorted(missing)}, fates of {sorted(extra)}"
        )
    odd = {i: f for i, f in got.items() if getattr(f, "kind", None) not in FATE_KINDS}
    if odd:
        raise _fail("R32", f"not a fate: {odd!r}")
    expected = {m_id: t for t, lst in fold.lists.items() for m_id in _ids(lst)}
    pending = {i: f.target for i, f in got.items() if isinstance(f, PendingFate)}
    if not strict_half_moves:
        for m_id in _ids(fold.half_moved):
            if m_id not in expected:
                pending.pop(m_id, None)
    if pending != expected:
        wrong = sorted(set(pending.items()) ^ set(expected.items()))
        raise _fail("R32", f"pending fates {pending!r}, lists {expected!r} (differ: {wrong})")
    # the open turn's unanswered claim: ids the log touched again since (sent anew,
    # then removed, say) have a later fate of their own
    claim = (
        set(_ids(fold.claim["next-step"] + fold.claim["next-turn"])) if fold.turn_open else set()
    )
    fate = ClaimedFate(fold.last_turn, fold.step + 1)
    for m_id in claim - set(expected):
        if fold.touched.get(m_id) == fold.claimed_at.get(m_id) and got[m_id] != fate:
            raise _fail("R32", f"{m_id!r} is claimed by the log ({fate!r}), fate {got[m_id]!r}")
    stray = {
        i: f for i, f in got.items() if isinstance(f, ClaimedFate) and (i not in claim or f != fate)
    }
    if stray:
        raise _fail(
            "R32",
            f"claimed fates {stray!r}; the unanswered claim is {sorted(claim)} ({fate!r})",
        )
    return got


def check_invariants(
    state: AgentState,
    durable: Sequence[DurableEvent],
    notifications: Sequence[Notification],
    *,
    records: Sequence[Record] = (),
    cuts: Iterable[int] | None = None,
) -> None:
    """Check I1-I12 (and R32) over (state, durable log, notification log) of one run.

    ``records`` (one per command, in order) enables I2's forced-step part,
    I9, I10, I11 and the per-command rules (R23, R30, R31, R33). I12 replays
    ``durable[:cut]`` then Resume for each cut in ``cuts`` (default: every cut,
    which is quadratic in the log length). Raises ``InvariantViolation``
    naming the first invariant that fails.
    """
    check_state(state)
    fold = check_durable_log(durable)
    seen = check_notifications(notifications)
    pending = set(_ids(state.next_turn) + _ids(state.next_step))
    if seen.pending != pending:
        raise _fail("I6", f"announced pending {sorted(seen.pending)}, state has {sorted(pending)}")
    check_records(records)
    check_replay(state, durable)
    check_fates(durable, fold=fold)
    for cut in range(len(durable) + 1) if cuts is None else cuts:
        check_resume(durable, cut=cut)
