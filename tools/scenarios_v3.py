"""Conformance scenarios of brief v3 (guarded commands, R34; the newest message owns its
id, R32 v3). Read like ``tools/scenarios.py``; ``tools/vectorkit.py`` explains the helpers.

Every guarded command (``Send`` of each intent, ``Move``, ``Cancel``) is run with each
expectation holding and failing, and the precedence of R34 is pinned both ways: after
``ResumeRequired`` and ``AgentDisposed``, before ``DuplicateMessageId``,
``SteerUnavailable`` and a no-op.
"""

from __future__ import annotations

from inbox_core import ExpectIdle, ExpectTurn, limits
from inbox_core.testing.bodies import values_in
from tools.vectorkit import Script, m, mj, scenario

NT, NS = "next-turn", "next-step"
IDLE = ExpectIdle()


def _turn_one_step_open(s: Script) -> None:
    """Turn 1 for ``a`` with its step 1 open: the core awaits the step's outcome."""
    s.followup("a")
    s.enter()


# ============================================================== expect idle


@scenario("guard-idle-followup-holds", "R12", "R14", "R34")
def _(s: Script) -> None:
    """A followup guarded by ExpectIdle while idle is an ordinary followup: it opens turn 1
    at once. Later ones find the agent busy (the 'reject a double text' answer)."""
    s.followup("a", expect=IDLE)
    s.followup("b", expect=IDLE, raises="AgentBusy")
    s.queue("c", expect=IDLE, raises="AgentBusy")
    s.steer("d", expect=IDLE, raises="AgentBusy")
    s.inject("e", expect=IDLE, raises="AgentBusy")
    s.turn()
    s.followup("b", expect=IDLE)


@scenario("guard-idle-queue-steer-inject-hold", "R12", "R14", "R15", "R34")
def _(s: Script) -> None:
    """Every intent takes ExpectIdle: while idle, a queue and an inject park, a steer
    opens a turn whose first boundary claims them all (R15)."""
    s.queue("q", expect=IDLE)
    s.inject("i", expect=IDLE)
    s.steer("s", expect=IDLE)
    s.turn()


@scenario("guard-idle-during-maintenance", "R31", "R34", "I11")
def _(s: Script) -> None:
    """Maintenance is not idle: guarded by ExpectIdle, a followup, a move and a cancel
    raise AgentBusy and change nothing; unguarded input waits for the job's end."""
    s.queue("q")
    s.begin_maintenance()
    s.followup("f", expect=IDLE, raises="AgentBusy")
    s.move("q", NT, expect=IDLE, raises="AgentBusy")
    s.cancel(expect=IDLE, raises="AgentBusy")
    s.followup("f")
    s.end_maintenance()


@scenario("guard-turn-during-maintenance", "R31", "R34", "I11", "D23")
def _(s: Script) -> None:
    """Maintenance runs while no turn is open, so no turn is live: guarded by the turn that
    ended before it (1) or the next one (2), a followup, an inject, a move and a cancel
    raise TurnMismatch and change nothing. A job aborted by a cancel is still not idle
    (AgentBusy). When the job ends the waiting followup makes it open turn 2 (which claims
    the parked q first, D23), and turn 2 is live."""
    s.followup("a")
    s.turn()
    s.queue("q")
    s.begin_maintenance()
    for turn in (1, 2):
        s.followup("x", expect=ExpectTurn(turn), raises="TurnMismatch")
        s.inject("x", expect=ExpectTurn(turn), raises="TurnMismatch")
        s.move("q", NS, expect=ExpectTurn(turn), raises="TurnMismatch")
        s.cancel(keep_inbox=True, expect=ExpectTurn(turn), raises="TurnMismatch")
    s.cancel(keep_inbox=True)  # aborts the job (R31); the status stays maintenance
    s.followup("x", expect=IDLE, raises="AgentBusy")
    s.cancel(expect=ExpectTurn(1), raises="TurnMismatch")
    s.followup("f")
    s.end_maintenance()  # turn 2 claims the parked q first (D23)
    s.steer("s", expect=ExpectTurn(2))


@scenario("guard-idle-move-and-cancel", "R7", "R8", "R21", "R22", "R34", "D1", "D2")
def _(s: Script) -> None:
    """ExpectIdle on a move and a cancel: they act while idle and are refused while a
    turn runs. A promotion to next-step that the expectation lets through still needs a
    live turn (SteerUnavailable comes after the expectation)."""
    s.queue("q")
    s.inject("i")
    s.move("i", NT, expect=IDLE)
    s.move("q", NS, expect=IDLE, raises="SteerUnavailable")
    s.cancel(keep_inbox=True, expect=IDLE)  # nothing to abort, nothing to clear: a no-op
    s.followup("f")
    s.move("q", NS, expect=IDLE, raises="AgentBusy")
    s.cancel(expect=IDLE, raises="AgentBusy")
    s.turn()  # turn 1 took the parked q first (D23); i and f get turns 2 and 3
    s.turn()
    s.turn()
    s.queue("z")
    s.cancel(expect=IDLE)  # idle again: clears what is pending


# ============================================================== expect turn


@scenario("guard-turn-steer-live", "R12", "R17", "R34")
def _(s: Script) -> None:
    """A steer guarded by the turn on screen joins that turn while it is live: during its
    step, and during turn-stopping (which it keeps going, R17)."""
    _turn_one_step_open(s)
    s.steer("s1", expect=ExpectTurn(1))
    s.complete()
    s.enter()
    s.complete()
    s.steer("s2", expect=ExpectTurn(1))
    s.stop()
    s.turn()


@scenario("guard-turn-steer-ended", "R14", "R34", "I11")
def _(s: Script) -> None:
    """The user steers the answer on screen, but that turn ended a moment ago: the guarded
    steer raises TurnMismatch instead of opening a new turn that holds only the steer."""
    s.followup("a")
    s.turn()
    s.steer("late", expect=ExpectTurn(1), raises="TurnMismatch")
    s.inject("late-inject", expect=ExpectTurn(1), raises="TurnMismatch")
    s.followup("next", expect=ExpectTurn(1), raises="TurnMismatch")


@scenario("guard-turn-followup-and-inject-hold", "R12", "R14", "R15", "R17", "R34")
def _(s: Script) -> None:
    """ExpectTurn holds for every intent while its turn is live, and holding changes nothing
    about the send: a guarded followup waits in next-turn with no second reservation
    (R14), a guarded inject waits in next-step and forces no step (R15). The inject rides
    along with the boundary a Continue reaches anyway; the followup gets turn 2."""
    _turn_one_step_open(s)
    s.followup("f", expect=ExpectTurn(1))
    s.inject("i", expect=ExpectTurn(1))
    s.cont()  # between steps the claim takes next-step input only: i
    s.enter()
    s.complete()  # nothing waking in next-step: turn-stopping, not another step
    s.inject("j", expect=ExpectTurn(1))
    s.followup("g", expect=ExpectTurn(1))
    s.stop()  # turn 1 ends; turn 2 claims j (next-step) and then f
    s.followup("h", expect=ExpectTurn(1), raises="TurnMismatch")
    s.inject("k", expect=ExpectTurn(2))


@scenario("guard-turn-past-and-future", "R34", "I11")
def _(s: Script) -> None:
    """Only the live turn matches: while turn 2 runs, a past turn (1) and a future one (3)
    are mismatches for every guarded command."""
    s.followup("a")
    s.turn()
    s.followup("b")
    s.queue("q")
    for turn in (1, 3):
        s.queue("x", expect=ExpectTurn(turn), raises="TurnMismatch")
        s.move("q", NS, expect=ExpectTurn(turn), raises="TurnMismatch")
        s.cancel(expect=ExpectTurn(turn), raises="TurnMismatch")
    s.queue("x", expect=ExpectTurn(2))
    s.move("q", NS, expect=ExpectTurn(2))
    s.enter()


@scenario("guard-turn-stop-button", "R19", "R21", "R23", "R34")
def _(s: Script) -> None:
    """The stop button: the user presses stop for turn 1 while it finishes; by the time the
    cancel is applied turn 1 has ended and turn 2 (a queued followup) has started. The
    guarded cancel raises TurnMismatch and turn 2 runs on; a stop for turn 2 aborts it."""
    _turn_one_step_open(s)
    s.followup("b")
    s.complete()
    s.stop()  # turn 1 ends; turn 2 opens for b
    s.cancel(expect=ExpectTurn(1), raises="TurnMismatch")
    s.enter()
    s.cancel(keep_inbox=True, expect=ExpectTurn(2))
    s.complete()


@scenario("guard-turn-aborted-is-not-live", "R23", "R34", "I9")
def _(s: Script) -> None:
    """An aborted turn is no longer live: after a keep-inbox cancel, a second cancel, a
    steer and a promotion guarded by that turn raise TurnMismatch; unguarded, a second
    cancel may still clear new input (R23)."""
    _turn_one_step_open(s)
    s.queue("q")
    s.cancel(keep_inbox=True, expect=ExpectTurn(1))
    s.cancel(expect=ExpectTurn(1), raises="TurnMismatch")
    s.steer("s", expect=ExpectTurn(1), raises="TurnMismatch")
    s.move("q", NS, expect=ExpectTurn(1), raises="TurnMismatch")
    s.cancel()
    s.complete()


@scenario("guard-turn-during-pre-step", "R8", "R16", "R34")
def _(s: Script) -> None:
    """While the pre-step decision of turn 1 is awaited the turn is live: a guarded
    promotion of a queued entry waits for the next boundary, in next-step."""
    s.followup("a")
    s.queue("q")
    s.move("q", NS, expect=ExpectTurn(1))
    s.enter()
    s.complete()
    s.enter()


# ================================================================ precedence


@scenario("guard-precedence-before-duplicate-id", "R4", "R34", "I11")
def _(s: Script) -> None:
    """A failed expectation wins over the command's own errors: a send that would duplicate
    a pending id raises AgentBusy or TurnMismatch when its expectation fails, and
    DuplicateMessageId only when it holds."""
    _turn_one_step_open(s)
    s.queue("q")
    s.queue("q", expect=IDLE, raises="AgentBusy")
    s.queue("q", expect=ExpectTurn(2), raises="TurnMismatch")
    s.queue("q", expect=ExpectTurn(1), raises="DuplicateMessageId")


@scenario("guard-precedence-before-noop", "R7", "R21", "R34", "D1")
def _(s: Script) -> None:
    """A guarded command that would be a no-op (a move of an id that is not pending, a
    cancel with nothing to do) still raises when its expectation fails, and is a no-op
    when it holds."""
    s.move("missing", NT, expect=ExpectTurn(1), raises="TurnMismatch")
    s.move("missing", NT, expect=IDLE)
    s.cancel(keep_inbox=True, expect=ExpectTurn(1), raises="TurnMismatch")
    s.cancel(keep_inbox=True, expect=IDLE)


@scenario("guard-precedence-after-disposed", "R25", "R34", "D16")
def _(s: Script) -> None:
    """Once disposed, a guarded command raises AgentDisposed whether or not its
    expectation would hold."""
    _turn_one_step_open(s)
    s.dispose()
    s.followup("b", expect=IDLE, raises="AgentDisposed")
    s.cancel(expect=ExpectTurn(1), raises="AgentDisposed")
    s.move("a", NT, expect=ExpectTurn(2), raises="AgentDisposed")
    s.complete()
    s.followup("b", expect=IDLE, raises="AgentDisposed")


@scenario("guard-precedence-after-resume-required", "R27", "R34", "D8", "D16")
def _(s: Script) -> None:
    """A replayed log with turn 1 open: the turn is open but not driven, so guarded commands
    raise ResumeRequired (not a mismatch); after Resume the turn has ended."""
    _turn_one_step_open(s)
    s.crash()
    s.cancel(expect=ExpectTurn(1), raises="ResumeRequired")
    s.followup("b", expect=IDLE, raises="ResumeRequired")
    s.resume()
    s.steer("s", expect=ExpectTurn(1), raises="TurnMismatch")
    s.followup("b", expect=IDLE)


@scenario("guard-precedence-after-resume-required-stranded", "R27", "R31", "R34", "D33")
def _(s: Script) -> None:
    """A replayed log with waking work left idle (the process died during maintenance,
    after a followup was inserted): the status reads idle, yet ExpectIdle does not hold
    and ExpectTurn does not mismatch; every guarded command raises ResumeRequired. Resume
    opens turn 1 for the followup, which is then live."""
    s.begin_maintenance()
    s.followup("f")
    s.crash()
    s.expect(status="idle")
    s.followup("g", expect=IDLE, raises="ResumeRequired")
    s.queue("g", expect=ExpectTurn(1), raises="ResumeRequired")
    s.move("f", NS, expect=ExpectTurn(1), raises="ResumeRequired")
    s.cancel(expect=IDLE, raises="ResumeRequired")
    s.resume()
    s.steer("s", expect=ExpectTurn(1))
    s.followup("g", expect=IDLE, raises="AgentBusy")


@scenario("guard-json-forms", "R34", "D12", "D17")
def _(s: Script) -> None:
    """The JSON form: 'expect' is absent when there is none (null reads as absent), an
    idle expectation has only its kind, a turn expectation needs a turn >= 1, and only
    send, move and cancel take one."""
    s.run({"type": "cancel", "cause": {"kind": "user"}, "keepInbox": False, "expect": None})
    s.run(
        {
            "type": "cancel",
            "cause": {"kind": "user"},
            "keepInbox": True,
            "expect": {"kind": "turn", "turn": 0},
        },
        raises="InvalidInput",
    )
    for bad in ({"kind": "turn"}, {"kind": "idle", "turn": 1}, {"kind": "busy"}, "idle"):
        s.run(
            {"type": "cancel", "cause": {"kind": "user"}, "keepInbox": True, "expect": bad},
            raises="DecodeError",
        )
    s.run({"type": "remove", "messageId": "a", "expect": {"kind": "idle"}}, raises="DecodeError")
    s.run({"type": "clear", "expect": {"kind": "idle"}}, raises="DecodeError")
    s.followup("a", expect=IDLE)


# ================================================= the newest message owns its id


def _claimed_then_resent(s: Script, *, keep_resent: bool) -> None:
    """Turn 1 claims m1; a new message is queued under the same id (m1 is claimed, not
    pending: R4 allows it); unless ``keep_resent`` it is removed again."""
    s.followup("m1")
    s.queue(m("m1", "m1, sent again"))
    if not keep_resent:
        s.remove("m1")


@scenario("fates-newest-id-older-claim-entered", "R32", "D9", "D27", folds=("fates",))
def _(s: Script) -> None:
    """m1 is claimed by turn 1, sent again under its id and canceled; then turn 1's decision
    admits the old m1. The newest message carrying the id owns it: the fate is canceled."""
    _claimed_then_resent(s, keep_resent=False)
    s.turn()
    s.expect(fates={"m1": {"kind": "canceled"}})


@scenario("fates-newest-id-older-claim-rejected", "R32", "D9", "D27", folds=("fates",))
def _(s: Script) -> None:
    """The older claim is rejected while the newer m1 still waits: m1 is pending."""
    _claimed_then_resent(s, keep_resent=True)
    s.reject()
    s.expect(fates={"m1": {"kind": "pending", "target": NT}})


@scenario("fates-newest-id-older-claim-aborted", "R23", "R32", "D9", folds=("fates",))
def _(s: Script) -> None:
    """The issue's case: the older claim is consumed by an aborted turn, but the newest
    message with the id was canceled: the fate is canceled, not consumed."""
    _claimed_then_resent(s, keep_resent=False)
    s.cancel(keep_inbox=True)
    s.enter()
    s.expect(fates={"m1": {"kind": "canceled"}})


@scenario("fates-newest-id-older-claim-failed", "R18", "R32", "D9", folds=("fates",))
def _(s: Script) -> None:
    """The older claim is consumed by a pre-step failure; the newer m1 was canceled."""
    _claimed_then_resent(s, keep_resent=False)
    s.pre_step_failed()
    s.expect(fates={"m1": {"kind": "canceled"}})


@scenario("fates-newest-id-older-claim-interrupted", "R27", "R32", "D9", folds=("fates",))
def _(s: Script) -> None:
    """A crash between the claim and its decision while the newer m1 waits: Resume closes
    turn 1 interrupted and does not restore the older m1 (uniqueness, R4); the newer m1,
    parked ahead of a followup, is what turn 2 claims (D23) and admits."""
    _claimed_then_resent(s, keep_resent=True)
    s.followup("w")
    s.crash()
    s.resume()
    claimed = {"kind": "claimed", "turn": 2, "step": 1}
    s.expect(fates={"m1": claimed, "w": {"kind": "pending", "target": NT}})
    s.turn()


@scenario("fates-newest-id-older-claim-restored", "R27", "R32", "D9", folds=("fates",))
def _(s: Script) -> None:
    """The same crash after the newer m1 was canceled: the id is free again, so Resume
    restores the older m1 and it is pending (then claimed by the turn Resume opens)."""
    _claimed_then_resent(s, keep_resent=False)
    s.crash()
    s.resume()
    s.expect(fates={"m1": {"kind": "claimed", "turn": 2, "step": 1}})
    s.turn()
    s.expect(fates={"m1": {"kind": "admitted", "turn": 2, "step": 1}})


# ============================================================ the values limit


def _with_values(values: int) -> dict[str, object]:
    """A send guarded by ``ExpectTurn(5)`` whose message's metadata brings the command
    document to exactly ``values`` JSON values (rows of zeros, each on one line)."""
    command: dict[str, object] = {
        "type": "send",
        "input": {
            "message": {**mj("x"), "metadata": {"rows": []}},
            "contexts": [],
            "target": NT,
            "wakeup": True,
        },
        "expect": {"kind": "turn", "turn": 5},
    }
    rows: list[list[int]] = command["input"]["message"]["metadata"]["rows"]  # type: ignore[index]
    left = values - values_in(command)
    while left > 0:
        row = min(24, left - 1)  # a row is one value, and its zeros one each: one line
        rows.append([0] * row)
        left -= row + 1
    assert values_in(command) == values
    return command


@scenario("decode-command-values-limit", "R26", "R35", "R39", "D40", "D47")
def _(s: Script) -> None:
    """A command document holds at most maxCommandValues (16,384) JSON values: every
    scalar, array and object, the document itself included, and no object key. One at the
    limit is decoded (this one then fails its expectation, TurnMismatch, and changes
    nothing); one value more is InvalidInput, judged before any field is read (so also
    before its shape: a port's own tests pin that, since a vector's command that is not
    DecodeError must validate)."""
    most = limits.MAX_COMMAND_VALUES
    s.run(_with_values(most), raises="TurnMismatch")
    s.run(_with_values(most + 1), raises="InvalidInput")
