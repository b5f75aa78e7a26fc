"""Crash safety of SqliteLog + LoopAgent: kill a child process at random points, many times.

Each round runs ``crash_child.py`` on the same database; the child resumes
the log, generates random traffic against a random host and dies (SIGKILL,
``os._exit`` inside an SQLite transaction, or inside a hook/subscriber).
After every death the parent checks (I12, R27):

- the log reads and replays without error, and grew by whole appends only
  (the child reports each append's size and its commit): never half a command;
- the child's first append is exactly ``Resume``'s output on the previous log
  (the orphaned turn closed ``interrupted``, its unanswered claim restored,
  pending waking work reopened), or nothing if it died before;
- every message the child saw accepted is in the log, and no message is lost:
  each one is pending, admitted, or removed by an event that says why;
- ``Resume`` on the crashed log closes the open turn and leaves I3 holding.

At the end a LoopAgent resumes the log and runs the pending work to idle.
ROUNDS (default 24) and ``CRASH_SEED`` (environment) control the run.
"""

from __future__ import annotations

import asyncio
import os
import random
import subprocess
import sys
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from inbox_core import (
    AbortedReason,
    AgentState,
    AwaitPreStep,
    DurableEvent,
    InboxSpliced,
    InterruptedReason,
    Resume,
    StepStarted,
    TurnEnded,
    TurnStarted,
    followup,
    reduce,
    replay,
)
from inbox_core.shell import EchoHost, LoopAgent, SqliteLog

from .support import check_invariants

CHILD = Path(__file__).with_name("crash_child.py")
ROOT = Path(__file__).resolve().parents[2]
EXPECTED_CODES = {0, 71, 72, -9}


def run_child(store: str, seed: int) -> tuple[int, list[str], str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(
        [sys.executable, str(CHILD), store, str(seed)],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        check=False,
    )
    return proc.returncode, proc.stdout.splitlines(), proc.stderr


def unaccounted(events: list[DurableEvent]) -> set[str]:
    """Messages claimed by a turn that ended ``interrupted`` and were not restored (lost).

    Every other way out of the inbox says why: a splice with an outcome
    (canceled, moved), a step/start (admitted or dropped by the decision), or
    the turn/end reason (blocked, error, aborted, completed with an empty batch).
    """
    lists: dict[str, list[object]] = {"next-turn": [], "next-step": []}
    limbo: set[str] = set()  # claimed, no pre-step decision recorded yet
    restoring: set[str] | None = None
    lost: set[str] = set()
    for event in events:
        if restoring is not None and not isinstance(event, InboxSpliced):
            lost |= restoring
            restoring = None
        if isinstance(event, InboxSpliced):
            target = lists[event.target]
            removed = target[event.start : event.start + event.removed_count]
            target[event.start : event.start + event.removed_count] = list(event.inserted)
            inserted = {m.id for e in event.inserted for m in e.messages}
            if restoring is not None:
                restoring -= inserted
            if event.removed_count and event.outcome is None:  # a claim
                limbo |= {m.id for e in removed for m in e.messages}  # type: ignore[attr-defined]
        elif isinstance(event, StepStarted):
            limbo.clear()
        elif isinstance(event, TurnEnded):
            if isinstance(event.reason, InterruptedReason):
                restoring = set(limbo)
            limbo.clear()
    if restoring:
        lost |= restoring
    return lost


def whole_appends(lines: list[str]) -> tuple[int, int]:
    """Events the child saw committed (``P n`` then ``C``), and the size of an unfinished append."""
    committed = 0
    in_flight = 0
    for line in lines:
        if line.startswith("P "):
            in_flight = int(line.split()[1])
        elif line == "C":
            committed += in_flight
            in_flight = 0
    return committed, in_flight


def inserted_ids(events: list[DurableEvent]) -> set[str]:
    return {
        m.id
        for e in events
        if isinstance(e, InboxSpliced)
        for entry in e.inserted
        for m in entry.messages
    }


def check_resume(state: AgentState) -> tuple[bool, bool]:
    """R27, I3: Resume closes an open turn (interrupted, or aborted with its recorded
    ``turn/abort`` cause, v2); then idle <=> no waking work."""
    transition = reduce(state, Resume())
    after = transition.state
    closed = [e for e in transition.durable if isinstance(e, TurnEnded)]
    if state.turn_open:
        cause = state.abort_cause
        reason = InterruptedReason() if cause is None else AbortedReason(cause)
        assert closed == [TurnEnded(state.last_turn, reason)]
    else:
        assert closed == []
    if after.status == "idle":  # I3: idle implies no waking entry pending
        assert not any(e.wakeup for e in (*after.next_turn, *after.next_step))
    else:  # R27, R19: pending waking work opened a fresh turn inside Resume
        assert state.resume_required
        assert isinstance(after.awaiting, AwaitPreStep)
        assert after.awaiting.step == 1
        assert TurnStarted(after.last_turn) in transition.durable
    restored = any(
        isinstance(e, InboxSpliced) and e.inserted and not e.removed_count
        for e in transition.durable
    )
    return state.turn_open, restored


def sqlite_store(tmp_path: Path) -> tuple[str, Callable[[], Any], Callable[[], None]]:
    """The child's store argument, how to open the log, and what to do before a round."""
    path = tmp_path / "crash.db"
    return str(path), lambda: SqliteLog(path), lambda: None


def crash_rounds(
    tmp_path: Path,
    rounds: int,
    base_seed: int,
    store: tuple[str, Callable[[], Any], Callable[[], None]] | None = None,
) -> Counter[str]:
    spec, open_log, before_round = store or sqlite_store(tmp_path)
    stats: Counter[str] = Counter()
    previous: list[DurableEvent] = []
    previous_state = AgentState.initial()
    for index in range(rounds):
        seed = base_seed * 1000 + index
        before_round()  # e.g. PostgreSQL: the dead child's lease has lapsed
        code, lines, stderr = run_child(spec, seed)
        context = f"round {index}, seed {seed}, exit {code}\n{stderr[-3000:]}"
        assert code in EXPECTED_CODES, context
        mode = lines[0].split()[1] if lines and lines[0].startswith("MODE") else "early"
        stats[f"kill:{mode}"] += 1
        stats["exit:sigkill" if code == -9 else f"exit:{code}"] += 1
        with open_log() as log:
            events = log.read()  # never half a command: decodes and...
        state = replay(events)  # ...replays (I12)
        assert events[: len(previous)] == previous, context  # append-only
        new = events[len(previous) :]
        expected = list(reduce(previous_state, Resume()).durable)
        if new and expected:
            assert new[: len(expected)] == expected, context  # the child resumed first (R27)
        if "RESUMED" in lines:
            assert new[: len(expected)] == expected, context
            stats["resumed"] += 1
        committed, in_flight = whole_appends(lines)
        assert len(new) in (committed, committed + in_flight), context  # never half a command
        stats["died inside an append"] += in_flight > 0
        accepted = {line.split()[1] for line in lines if line.startswith("A ")}
        stats["accepted"] += len(accepted)
        missing = accepted - inserted_ids(events)
        assert not missing, f"accepted but not durable: {missing}\n{context}"
        lost = unaccounted(events)
        assert not lost, f"lost messages: {lost}\n{context}"
        open_turn, restored = check_resume(state)
        stats["open turn at crash"] += open_turn
        stats["claim restored"] += restored
        stats["events"] = len(events)
        previous, previous_state = events, state

    async def finish() -> None:
        before_round()
        with open_log() as log:
            agent = LoopAgent(EchoHost(), log=log)
            await agent.when_idle()
            state = check_invariants(agent)
            assert state.status == "idle"
            assert not any(e.wakeup for e in (*state.next_turn, *state.next_step))  # I3
            assert not unaccounted(log.read())

    asyncio.run(finish())
    return stats


def base_seed() -> int:
    return int(os.environ.get("CRASH_SEED", random.randrange(1, 10**6)))


def test_I12_R27_crash_at_random_points_then_resume(tmp_path: Path) -> None:
    """I12, R27: ROUNDS kills (default 24); every reopen replays, loses nothing, resumes."""
    seed = base_seed()
    rounds = int(os.environ.get("CRASH_ROUNDS", "24"))
    stats = crash_rounds(tmp_path, rounds, seed)
    print(f"crash seed {seed}: {dict(stats)}")
    assert sum(v for k, v in stats.items() if k.startswith("exit:")) == rounds
    assert stats["accepted"] > 0


@pytest.mark.slow
def test_I12_R27_crash_loop_slow(tmp_path: Path) -> None:
    """I12, R27: the same with 300 kills (``-m slow``)."""
    seed = base_seed()
    stats = crash_rounds(tmp_path, 300, seed)
    print(f"crash seed {seed}: {dict(stats)}")
    assert stats["claim restored"] > 0
    assert stats["open turn at crash"] > 0


def test_R27_the_loss_checker_detects_an_unrestored_claim() -> None:
    """R27: the checker used above flags a claim an interrupted turn did not give back."""
    from inbox_core import create_user_message

    message = create_user_message("x")
    sent = reduce(AgentState.initial(), followup(message))
    cut = list(sent.durable)  # crash between claim and decision
    resumed = list(reduce(replay(cut), Resume()).durable)
    assert not unaccounted(cut + resumed)
    interrupted_only: list[DurableEvent] = [e for e in resumed if isinstance(e, TurnEnded)]
    assert unaccounted(cut + interrupted_only) == {message.id}
