"""Host records of v2 (R30, I4, §8, §9): placement, validation, replay, codec, transcript."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest

from inbox_core import (
    AbortedReason,
    BeginMaintenance,
    BlockedReason,
    Cancel,
    Completed,
    CompletedReason,
    Continue,
    DecodeError,
    DuplicateMessageId,
    EndMaintenance,
    Enter,
    ErrorReason,
    Failed,
    HostRecord,
    InvalidInput,
    MaxTokens,
    MaxTokensReason,
    MessageAdmitted,
    PreStepDecided,
    PreStepFailed,
    RecordsTranscript,
    Reject,
    ReplayError,
    StepEnded,
    StepFinished,
    StepStarted,
    StepTranscript,
    TurnAborted,
    TurnEnded,
    TurnStarted,
    TurnStoppingDone,
    TurnTranscript,
    UnexpectedReport,
    UserCause,
    command_from_json,
    command_to_json,
    event_from_json,
    event_to_json,
    replay,
    transcript,
)
from tests.core.helpers import Run, claimed, followup, inject, msg, steer


def rec(name: str, data: Any = None) -> HostRecord:
    return HostRecord(f"host/{name}", data)


R1, R2 = rec("reply", {"text": "hi"}), rec("tool", [1, {"a": None}])

# ------------------------------------------------------- placement (live)


def test_r30_pre_step_decided_records_come_before_step_start():
    """R30: PreStepDecided(Enter)'s records are appended first, before ``step/start``."""
    run = Run()
    run(followup(msg("a")))
    t = run(PreStepDecided(1, 1, Enter((msg("a"),)), (R1, R2)))
    assert t.durable == (R1, R2, StepStarted(1, 1), MessageAdmitted(msg("a")))


def test_r30_pre_step_reject_records_come_before_turn_end():
    run = Run()
    run(followup(msg("a")))
    t = run(PreStepDecided(1, 1, Reject(), (R1,)))
    assert t.durable == (R1, TurnEnded(1, BlockedReason()))


def test_r30_empty_enter_records_come_before_turn_end():
    run = Run()
    run(followup(msg("a")))
    t = run(PreStepDecided(1, 1, Enter(()), (R1,)))
    assert t.durable == (R1, TurnEnded(1, CompletedReason()))


def test_r30_pre_step_failed_records_come_before_turn_end_error():
    run = Run()
    run(followup(msg("a")))
    t = run(PreStepFailed(1, 1, "m", "c", (R1, R2)))
    assert t.durable == (R1, R2, TurnEnded(1, ErrorReason("m", "c")))


@pytest.mark.parametrize(
    ("outcome", "tail"),
    [
        (Completed(), ()),
        (MaxTokens(), ()),
        (Failed("f", "F"), (TurnEnded(1, ErrorReason("f", "F")),)),
        (Continue(), ()),
    ],
)
def test_r30_step_finished_records_come_before_step_end(outcome, tail):
    """R30: StepFinished's records precede its ``step/end`` (and whatever follows)."""
    run = Run()
    run(followup(msg("a")))
    run.enter()
    t = run(StepFinished(1, 1, outcome, (R1,)))
    assert t.durable == (R1, StepEnded(1, 1), *tail)


def test_r30_step_finished_continue_records_before_step_end_and_claim():
    run = Run()
    run(followup(msg("a")))
    run.enter()
    run(steer(msg("s")))
    t = run(StepFinished(1, 1, Continue(), (R1,)))
    assert t.durable == (R1, StepEnded(1, 1), claimed("next-step", 1))


def test_r30_turn_stopping_done_records_come_before_turn_end_and_next_turn():
    """R30, R19: TurnStoppingDone's records precede ``turn/end`` and the next turn."""
    run = Run()
    run(followup(msg("a")))
    run.step_through(MaxTokens())
    run(followup(msg("b")))
    t = run(TurnStoppingDone(1, (R2,)))
    assert t.durable == (
        R2,
        TurnEnded(1, MaxTokensReason()),
        TurnStarted(2),
        claimed("next-turn", 1),
    )


def test_r30_end_maintenance_records_alone_or_before_the_next_turn():
    """R30, R31: EndMaintenance's records stand alone, or before ``turn/start``."""
    run = Run()
    run(BeginMaintenance())
    t = run(EndMaintenance((R1,)))
    assert t.durable == (R1,)
    run(BeginMaintenance())
    run(followup(msg("a")))
    t = run(EndMaintenance((R2, R1)))
    assert t.durable == (R2, R1, TurnStarted(1), claimed("next-turn", 1))


@pytest.mark.parametrize("where", ["pre-step", "step", "turn-stopping"])
def test_r30_r23_aborted_turns_closing_report_writes_its_records_first(where):
    """R30, R23: the closing report of an aborted turn still writes its records first,
    then ``step/end`` if a step is open, then ``turn/end aborted``."""
    run = Run()
    run(followup(msg("a")))
    if where != "pre-step":
        run.enter()
    if where == "turn-stopping":
        run.finish()
    run(Cancel(UserCause(), keep_inbox=True))
    aborted = TurnEnded(1, AbortedReason(UserCause()))
    if where == "pre-step":
        t = run(PreStepDecided(1, 1, Enter((msg("a"),)), (R1,)))
        assert t.durable == (R1, aborted)
    elif where == "step":
        t = run(StepFinished(1, 1, Failed("x", "X"), (R1,)))
        assert t.durable == (R1, StepEnded(1, 1), aborted)
    else:
        t = run(TurnStoppingDone(1, (R1,)))
        assert t.durable == (R1, aborted)


def test_r30_aborted_pre_step_failure_records_come_first():
    run = Run()
    run(followup(msg("a")))
    run(Cancel(UserCause(), keep_inbox=True))
    t = run(PreStepFailed(1, 1, "m", "c", (R2,)))
    assert t.durable == (R2, TurnEnded(1, AbortedReason(UserCause())))


def test_r30_records_may_be_passed_positionally_and_as_a_list():
    """§9: ``records`` is the optional last field (default empty) of every report."""
    assert PreStepDecided(1, 1, Reject()).records == ()
    assert PreStepFailed(1, 1, "m", "c", [R1]).records == (R1,)
    assert StepFinished(1, 1, Completed(), [R1, R2]).records == (R1, R2)
    assert TurnStoppingDone(1, (R2,)).records == (R2,)
    assert EndMaintenance().records == ()
    assert EndMaintenance([R1]).records == (R1,)
    assert EndMaintenance(records=(R2,)).records == (R2,)
    assert PreStepDecided(1, 1, Reject(), records=(R1,)) == PreStepDecided(1, 1, Reject(), (R1,))
    assert TurnStoppingDone(turn=2, records=[R1]).records == (R1,)


# ------------------------------------------------------------- validation


@pytest.mark.parametrize(
    "bad_type", ["x/reply", "host/", "host", "Host/x", "", 7, None, b"host/x", "turn/start"]
)
def test_r30_record_type_must_be_host_slash_a_name(bad_type):
    """R30: a record's type is ``host/<non-empty name>``, else InvalidInput."""
    with pytest.raises(InvalidInput):
        HostRecord(bad_type, {})


@pytest.mark.parametrize(
    "bad_data",
    [
        math.nan,
        math.inf,
        -math.inf,
        {1, 2},
        {1: "non-str key"},
        {"nested": [{"deep": math.nan}]},
        {"nested": {(1, 2): "tuple key"}},
        b"bytes",
        object(),
        [frozenset()],
        1 + 2j,
    ],
    ids=lambda value: "object()" if type(value) is object else repr(value),  # same in each run
)
def test_r30_record_data_must_be_json(bad_data):
    """R30, §8: record data is any JSON; NaN, infinities, sets, non-str keys, bytes and
    other objects raise InvalidInput at construction."""
    with pytest.raises(InvalidInput):
        HostRecord("host/x", bad_data)


@pytest.mark.parametrize(
    "good_data",
    [None, True, 0, -1.5, "s", [], {}, [1, "a", None, [True]], {"a": {"b": [1, {"c": None}]}}],
    ids=repr,
)
def test_r30_record_data_accepts_any_json(good_data):
    record = HostRecord("host/x", good_data)
    assert json.loads(json.dumps(event_to_json(record))) == {"type": "host/x", "data": good_data}


def test_r30_record_data_is_immutable():
    """R30: a record is a durable value: mutating the source dict does not change it."""
    data = {"a": [1, 2]}
    record = HostRecord("host/x", data)
    data["a"].append(3)
    data["b"] = 1
    assert event_to_json(record) == {"type": "host/x", "data": {"a": [1, 2]}}
    assert hash(record) == hash(HostRecord("host/x", {"a": [1, 2]}))


@pytest.mark.parametrize(
    "build",
    [
        lambda records: PreStepDecided(1, 1, Reject(), records),
        lambda records: PreStepFailed(1, 1, "m", "c", records),
        lambda records: StepFinished(1, 1, Completed(), records),
        lambda records: TurnStoppingDone(1, records),
        EndMaintenance,
    ],
)
@pytest.mark.parametrize(
    "records",
    [
        ({"type": "host/x", "data": 1},),
        (TurnStarted(1),),
        ("host/x",),
        "host/x",
        R1,
        (R1, None),
    ],
    ids=repr,
)
def test_r30_reports_accept_only_sequences_of_host_records(build, records):
    """R30, D17: a report's records must be a sequence of HostRecord (InvalidInput)."""
    with pytest.raises(InvalidInput):
        build(records)


def test_r30_r26_rejected_report_with_records_writes_nothing():
    """R30, R26, I11: a report that does not answer (wrong step, wrong turn, wrong phase)
    is rejected; its records are not written and nothing changes."""
    run = Run()
    run(followup(msg("a")))
    run.rejects(PreStepDecided(1, 2, Reject(), (R1,)), UnexpectedReport)
    run.rejects(PreStepDecided(2, 1, Reject(), (R1,)), UnexpectedReport)
    run.rejects(StepFinished(1, 1, Completed(), (R1,)), UnexpectedReport)
    run.rejects(TurnStoppingDone(1, (R1,)), UnexpectedReport)
    run.rejects(EndMaintenance((R1,)), UnexpectedReport)
    assert not any(isinstance(e, HostRecord) for e in run.log)


def test_r30_d7_report_rejected_by_its_own_error_writes_no_records():
    """R30, D7, I11: an Enter with a duplicate id is rejected after the records were
    staged; nothing is written."""
    run = Run()
    run(followup(msg("a")))
    run.rejects(PreStepDecided(1, 1, Enter((msg("a"), msg("a"))), (R1,)), DuplicateMessageId)
    assert not any(isinstance(e, HostRecord) for e in run.log)


# ------------------------------------------------------------------ replay


def recorded_session() -> Run:
    """Records everywhere the core writes them: maintenance end, pre-step, step, turn."""
    run = Run()
    run(BeginMaintenance())
    run(EndMaintenance((rec("summary", "s0"),)))
    run(followup(msg("a")))
    run(PreStepDecided(1, 1, Enter((msg("a"),)), (rec("pre", 1),)))
    run(inject(msg("i")))
    run(StepFinished(1, 1, Continue(), (rec("reply", "r1"), rec("tool", {"x": 1}))))
    run(PreStepDecided(1, 2, Enter((msg("i"), msg("extra"))), (rec("pre", 2),)))
    run(StepFinished(1, 2, Completed(), (rec("reply", "r2"),)))
    run(TurnStoppingDone(1, (rec("stop", None),)))
    run(BeginMaintenance())
    run(EndMaintenance((rec("summary", "s1"), rec("summary", "s2"))))
    run(followup(msg("b")))
    run(PreStepFailed(2, 1, "m", "c", (rec("fail", True),)))
    run(followup(msg("c")))
    run(PreStepDecided(3, 1, Enter((msg("c"),)), (rec("pre", 3),)))
    return run


def test_r30_r10_replay_accepts_records_in_and_out_of_turns_and_ignores_them():
    """R30, R10, I5: replay accepts records inside a turn and while no turn is open, and
    keeps them out of the projection (equal to the log without records) at every prefix."""
    log = recorded_session().log
    assert any(isinstance(e, HostRecord) for e in log)
    for cut in range(len(log) + 1):
        prefix = log[:cut]
        bare = [e for e in prefix if not isinstance(e, HostRecord)]
        assert replay(prefix).projection() == replay(bare).projection(), cut
        assert replay(prefix).phase == replay(bare).phase, cut


def test_r30_replay_rejects_a_user_message_that_follows_a_record():
    """R30, I4: ``user/message`` only right after ``step/start`` (or another
    ``user/message``): a record in between is misplaced."""
    run = Run()
    run(followup(msg("a")))
    run.enter()
    log = list(run.log)
    at = log.index(StepStarted(1, 1)) + 1
    assert log[at] == MessageAdmitted(msg("a"))
    bad = [*log[:at], rec("x"), *log[at:]]
    with pytest.raises(ReplayError) as info:
        replay(bad)
    assert info.value.seq == at + 1
    log2 = [*log, rec("y"), MessageAdmitted(msg("late"))]
    with pytest.raises(ReplayError) as info:
        replay(log2)
    assert info.value.seq == len(log2) - 1


def test_r30_replay_accepts_records_after_turn_abort():
    """R30, R23: a record may stand between ``turn/abort`` and ``turn/end``."""
    run = Run()
    run(followup(msg("a")))
    run(Cancel(UserCause(), keep_inbox=True))
    run(PreStepDecided(1, 1, Reject(), (R1,)))
    aborted = TurnEnded(1, AbortedReason(UserCause()))
    assert run.log[-3:] == [TurnAborted(1, UserCause()), R1, aborted]
    assert replay(run.log).projection() == replay(run.log[:-2] + run.log[-1:]).projection()


# ------------------------------------------------------------------- codec


NESTED = {
    "text": "héllo ✓",
    "n": [0, -1, 2.5, 1e100, True, False, None],
    "deep": {"a": [{"b": {"c": []}}, {}], "empty": ""},
    "order": {"z": 1, "a": 2, "m": 3},
}


@pytest.mark.parametrize(
    "data", [NESTED, None, 0, 1, True, "s", [], {}, [[[]]], {"1": 1}, 1.0], ids=repr
)
def test_r30_codec_round_trips_records_verbatim(data):
    """R30, §8: ``{"type":"host/<name>","data":<any JSON>}`` round-trips byte-for-byte
    (key order, true vs 1, 1.0 vs 1 kept), also read back from a log record with seq."""
    doc = {"type": "host/some-thing", "data": data}
    event = event_from_json(json.loads(json.dumps(doc)))
    assert isinstance(event, HostRecord)
    assert json.dumps(event_to_json(event)) == json.dumps(doc)
    again = event_from_json({**doc, "seq": 12})
    assert json.dumps(event_to_json(again)) == json.dumps(doc)


def test_r30_codec_every_record_of_a_session_round_trips():
    for event in recorded_session().log:
        doc = event_to_json(event)
        assert event_from_json(json.loads(json.dumps(doc))) == event
        assert json.dumps(event_to_json(event_from_json(doc))) == json.dumps(doc)


@pytest.mark.parametrize(
    "command",
    [
        PreStepDecided(1, 2, Enter((msg("a"),)), (rec("a", NESTED), rec("b"))),
        PreStepDecided(1, 1, Reject(), (R1,)),
        PreStepFailed(3, 1, "m", "c", (R2,)),
        StepFinished(1, 1, Failed("f", "F"), (R1, R2)),
        StepFinished(2, 4, Continue(), (rec("x", [1.5, None]),)),
        TurnStoppingDone(5, (R1,)),
        EndMaintenance((rec("summary", NESTED),)),
        EndMaintenance(()),
        StepFinished(1, 1, Completed()),
    ],
    ids=lambda c: type(c).__name__,
)
def test_r30_codec_commands_with_records_round_trip(command):
    """R30: ``command_to_json``/``command_from_json`` round-trip reports with records;
    ``records`` is written only when non-empty, each in the durable-event form."""
    doc = command_to_json(command)
    if command.records:
        assert doc["records"] == [event_to_json(r) for r in command.records]
    else:
        assert "records" not in doc
    back = command_from_json(json.loads(json.dumps(doc)))
    assert back == command
    assert json.dumps(command_to_json(back)) == json.dumps(doc)


def test_r30_codec_command_records_must_be_host_records():
    """R30: a non-host event in a command's records does not decode."""
    doc = command_to_json(TurnStoppingDone(1, (R1,)))
    doc["records"] = [{"type": "turn/start", "data": {"turn": 1}}]
    with pytest.raises(DecodeError):
        command_from_json(doc)


# -------------------------------------------------------------- transcript


def test_r30_transcript_folds_turns_steps_messages_and_records_in_log_order():
    """R30: turns -> steps -> admitted messages and records in log order; a PreStepDecided's
    records stand at turn level before their step; records written while no turn is open
    form RecordsTranscript blocks; the open last turn has reason None."""
    blocks = transcript(recorded_session().log)
    assert blocks == (
        RecordsTranscript((rec("summary", "s0"),)),
        TurnTranscript(
            1,
            (
                rec("pre", 1),
                StepTranscript(1, (msg("a"), rec("reply", "r1"), rec("tool", {"x": 1}))),
                rec("pre", 2),
                StepTranscript(2, (msg("i"), msg("extra"), rec("reply", "r2"))),
                rec("stop", None),
            ),
            CompletedReason(),
        ),
        RecordsTranscript((rec("summary", "s1"), rec("summary", "s2"))),
        TurnTranscript(2, (rec("fail", True),), ErrorReason("m", "c")),
        TurnTranscript(3, (rec("pre", 3), StepTranscript(1, (msg("c"),))), None),
    )
    turn1 = blocks[1]
    assert [s.step for s in turn1.steps] == [1, 2]
    assert turn1.steps[1].messages == (msg("i"), msg("extra"))


def test_r30_transcript_of_an_empty_log_and_of_records_only():
    assert transcript([]) == ()
    assert transcript([R1, R2]) == (RecordsTranscript((R1, R2)),)


def test_r30_transcript_leaves_out_inbox_events_and_keeps_aborted_turns():
    """R30: inbox events and ``turn/abort`` are not part of the conversation; an aborted
    turn ends with its aborted reason."""
    run = Run()
    run(followup(msg("a")))
    run.enter()
    run(Cancel(UserCause(), keep_inbox=True))
    run(StepFinished(1, 1, Completed(), (R1,)))
    assert transcript(run.log) == (
        TurnTranscript(1, (StepTranscript(1, (msg("a"), R1)),), AbortedReason(UserCause())),
    )


def test_r30_transcript_open_step_of_an_open_turn_is_kept():
    run = Run()
    run(followup(msg("a")))
    run(PreStepDecided(1, 1, Enter((msg("a"), msg("b"))), (R1,)))
    assert transcript(run.log) == (
        TurnTranscript(1, (R1, StepTranscript(1, (msg("a"), msg("b")))), None),
    )


def test_r30_transcript_blocked_turn_has_no_step():
    run = Run()
    run(followup(msg("a")))
    run(PreStepDecided(1, 1, Reject()))
    assert transcript(run.log) == (TurnTranscript(1, (), BlockedReason()),)


def test_r30_random_sessions_append_records_first():
    """R30 over random sessions: every accepted report's records are the first durable
    events of its command, in order; the records never change the replayed projection."""
    import random

    from inbox_core import InboxCoreError
    from tests.core.test_transition_table import CRASH, Session, next_command

    for seed in range(100):
        rng = random.Random(seed)
        session = Session()
        for _ in range(40):
            command = next_command(rng, session.state)
            if command == CRASH:
                session.crash(rng)
                continue
            try:
                t = session.apply(command)
            except InboxCoreError:
                continue
            records = getattr(command, "records", ())
            assert t.durable[: len(records)] == records, (seed, command)
            assert sum(isinstance(e, HostRecord) for e in t.durable) == len(records)
        bare = [e for e in session.log if not isinstance(e, HostRecord)]
        assert replay(session.log).projection() == replay(bare).projection()
