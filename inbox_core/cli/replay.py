"""``inbox-core replay``: read a log (SQLite or JSON Lines), check it, print what it holds;
``--check-checkpoints`` compares every stored checkpoint with the replay (R41)."""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Final

from inbox_core import limits
from inbox_core.cli.output import EXIT_FAILURE, EXIT_OK, EXIT_USAGE, err, out, printable
from inbox_core.cli.render import (
    describe_cause,
    describe_entry,
    describe_event,
    describe_message,
    describe_reason,
    format_durable,
)
from inbox_core.codec import projection_to_json
from inbox_core.errors import InboxCoreError, InvalidInput, ReplayError
from inbox_core.events import (
    DurableEvent,
    HostRecord,
)
from inbox_core.history import FATE_KINDS, RecordsTranscript, fates, goal_rounds, transcript
from inbox_core.replay import replay
from inbox_core.shell.stores.checkpoints import Verdict, verify
from inbox_core.shell.stores.errors import CorruptLog, IncompatibleLog
from inbox_core.shell.stores.jsonl import iter_json_lines
from inbox_core.shell.stores.sqlite.log import (
    SQLITE_HEADER,
    iter_sqlite_log,
    sqlite_agent_ids,
    sqlite_checkpoints,
)
from inbox_core.shell.stores.sqlite.schema import FILE_KINDS
from inbox_core.state import AgentState

DEFAULT_AGENT: Final = "default"

# ---------------------------------------------------------------------- replay


class LogProblem(Exception):
    """The first record of a log that cannot be used, by its seq."""

    def __init__(self, seq: int, reason: str) -> None:
        super().__init__(f"seq {seq}: {reason}")
        self.seq = seq
        self.reason = reason


class NotALog(Exception):
    """The path names no log that can be read (``usage``: the arguments are what is wrong)."""

    def __init__(self, message: str, *, usage: bool = False) -> None:
        super().__init__(message)
        self.usage = usage


def check_path(path: Path) -> None:
    """Refuse, by what it is, a path that is not a readable regular file (``NotALog``)."""
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        broken = path.is_symlink()
        raise NotALog("a broken symbolic link" if broken else "no such file or directory") from None
    except OSError as error:
        raise NotALog(f"cannot read it: {error.strerror}") from None
    for test, kind in FILE_KINDS:
        if test(mode):
            raise NotALog(f"{kind}, not a log file (replay reads a regular file)")
    if not os.access(path, os.R_OK):
        raise NotALog("cannot read it: permission denied")


def choose_agent(path: Path, agent_id: str | None) -> str:
    """The agent to read from an SQLite file: ``agent_id`` if the file holds it, else (no
    ``agent_id``) ``"default"`` when the file holds it or nothing at all (an empty log).

    Anything else is ``NotALog`` naming the agents the file holds: a usage
    error when no ``--agent-id`` was given (the file holds other agents only).
    """
    if agent_id is not None:
        limits.agent_id(agent_id)  # InvalidInput: a usage error
    agents = sqlite_agent_ids(path)
    if agent_id is None and (not agents or DEFAULT_AGENT in agents):
        return DEFAULT_AGENT
    if agent_id in agents:
        return agent_id
    shown = ", ".join(repr(agent) for agent in agents[:20])
    more = f" and {len(agents) - 20} more" if len(agents) > 20 else ""
    held = f"{len(agents)} agent{'s' * (len(agents) != 1)}: {shown}{more}" if agents else "none"
    wanted = DEFAULT_AGENT if agent_id is None else agent_id
    hint = " (choose one with --agent-id)" if agent_id is None else ""
    raise NotALog(
        f"no agent {wanted!r} in this database; it holds {held}{hint}", usage=agent_id is None
    )


def _read_sqlite(path: Path, agent_id: str) -> tuple[list[DurableEvent], LogProblem | None]:
    """Agent ``agent_id``'s events, read-only through the shell's SQLite log code."""
    events: list[DurableEvent] = []
    try:
        for event in iter_sqlite_log(path, agent_id):
            events.append(event)  # the good prefix, kept for the report
    except CorruptLog as error:
        return events, LogProblem(error.seq, error.reason)
    return events, None


def _read_json_lines(path: Path) -> tuple[list[DurableEvent], LogProblem | None]:
    """One ``{"seq","type","data"}`` per line (``seq`` optional, else it must count from 0)."""
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise NotALog("neither an SQLite database nor UTF-8 JSON Lines") from None
    events: list[DurableEvent] = []
    try:
        for event in iter_json_lines(text):
            events.append(event)  # the good prefix, kept for the report
    except CorruptLog as error:
        return events, LogProblem(error.seq, error.reason)
    return events, None


def read_log(
    path: Path, agent_id: str | None = None
) -> tuple[str, list[DurableEvent], LogProblem | None]:
    """The log's kind, its decodable prefix, and the first record that is not (or None).

    SQLite is recognized by its file header, anything else is read as JSON
    Lines. ``agent_id`` selects an agent of an SQLite file (``choose_agent``);
    with JSON Lines, which holds one agent, it is a usage error. A path that
    is not a readable log file, an SQLite file that is not an inbox-core log
    or cannot be read, raise ``NotALog``.
    """
    check_path(path)
    try:
        with path.open("rb") as handle:
            head = handle.read(len(SQLITE_HEADER))
        if head == SQLITE_HEADER:
            return ("SQLite", *_read_sqlite(path, choose_agent(path, agent_id)))
        if agent_id is not None:
            raise NotALog(
                "--agent-id selects an agent of an SQLite file; a JSON Lines log holds one agent",
                usage=True,
            )
        return ("JSON Lines", *_read_json_lines(path))
    except OSError as error:
        raise NotALog(f"cannot read it: {error.strerror}") from None
    except IncompatibleLog as error:
        raise NotALog(f"not an inbox-core SQLite log: {error.reason}") from None
    except InvalidInput as error:
        raise NotALog(f"--agent-id: {error}", usage=True) from None
    except InboxCoreError as error:  # LogUnavailable: locked, unreadable
        raise NotALog(str(error)) from None


def check_log(
    path: Path, agent_id: str | None = None
) -> tuple[str, list[DurableEvent], AgentState | None, LogProblem | None]:
    """Read and replay a log: the state, or the first bad seq (decoding or replay)."""
    kind, events, problem = read_log(path, agent_id)
    try:
        state = replay(events)
    except ReplayError as error:
        return kind, events, None, LogProblem(error.seq, error.reason)
    if problem is not None:
        return kind, events, None, problem
    return kind, events, state, None


def run_replay(args: argparse.Namespace) -> int:
    path = Path(args.log)
    try:
        kind, events, state, problem = check_log(path, args.agent_id)
    except NotALog as error:
        err(f"inbox-core replay: {path}: {error}")
        return EXIT_USAGE if error.usage else EXIT_FAILURE
    if args.events:
        for seq, event in enumerate(events):
            out(format_durable(seq, event))
    if problem is not None or state is None:
        assert problem is not None
        out(f"log: {path} ({kind})")
        err(f"invalid log: seq {problem.seq}: {problem.reason}")
        if problem.seq:
            err(f"(seq 0..{problem.seq - 1} are valid; the first bad event is seq {problem.seq})")
        return EXIT_FAILURE
    verdicts = None
    if args.check_checkpoints:
        try:
            verdicts = check_checkpoints(path, kind, events, args.agent_id)
        except NotALog as error:
            err(f"inbox-core replay: {path}: {error}")
            return EXIT_FAILURE
    status = EXIT_OK if all(v.ok for v in verdicts or ()) else EXIT_FAILURE
    if args.json:
        document = {
            "log": str(path),
            "format": kind,
            "events": len(events),
            "projection": projection_to_json(state, events),
            "fates": fate_counts(events),
        }
        if verdicts is not None:
            document["checkpoints"] = [
                {"seq": v.stored_seq, "ok": v.ok, **({"why": v.why} if v.why else {})}
                for v in verdicts
            ]
        out(json.dumps(document, indent=2, ensure_ascii=False, default=repr))
        return status
    _print_projection(path, kind, events, state)
    if args.transcript:
        _print_transcript(events)
    if verdicts is not None:
        _print_verdicts(kind, verdicts)
    return status


def check_checkpoints(
    path: Path, kind: str, events: Sequence[DurableEvent], agent_id: str | None
) -> list[Verdict]:
    """Every checkpoint stored beside the log against the replay at its seq (R41); none
    beside a JSON Lines log. Read-only, like the log's read."""
    if kind != "SQLite":
        return []
    agent = choose_agent(path, agent_id)
    try:
        stored = sqlite_checkpoints(path, agent)
    except InboxCoreError as error:
        raise NotALog(f"reading its checkpoints failed: {error}") from None
    return verify(events, stored, agent)


def _print_verdicts(kind: str, verdicts: Sequence[Verdict]) -> None:
    if not verdicts:
        out("checkpoints: none" + (" (a JSON Lines log keeps none)" if kind != "SQLite" else ""))
        return
    bad = sum(not v.ok for v in verdicts)
    out(f"checkpoints: {len(verdicts)}, {bad} mismatched")
    for verdict in verdicts:
        out(printable(verdict.line()))


def fate_counts(events: Sequence[DurableEvent]) -> dict[str, int]:
    """How many accepted message ids have each fate (R32), every kind listed."""
    counts = dict.fromkeys(FATE_KINDS, 0)
    for fate in fates(events).values():
        counts[fate.kind] += 1
    return counts


def _print_transcript(events: Sequence[DurableEvent]) -> None:
    """The conversation (R30): turns, steps, admitted messages and host records."""
    out("transcript:")
    for block in transcript(events):
        if isinstance(block, RecordsTranscript):
            out("  between turns:")
            for record in block.records:
                out(f"    {printable(record.type):<22} {describe_event(record)}")
            continue
        reason = "open" if block.reason is None else describe_reason(block.reason)
        out(f"  turn {block.turn} ({reason})")
        for item in block.items:
            if isinstance(item, HostRecord):
                out(f"    {printable(item.type):<22} {describe_event(item)}")
                continue
            out(f"    step {item.step}")
            for entry in item.items:
                if isinstance(entry, HostRecord):
                    out(f"      {printable(entry.type):<20} {describe_event(entry)}")
                else:
                    out(f"      user/message         {describe_message(entry)}")


def _print_projection(path: Path, kind: str, events: list[DurableEvent], state: AgentState) -> None:
    projection = state.projection()
    out(f"log: {path} ({kind}, {len(events)} events)")
    out(f"ok: all {len(events)} events replay")
    out(f"last turn: {projection.last_turn}")
    if projection.open_turn is not None:
        step = f", step {projection.open_step} open" if projection.open_step is not None else ""
        closes = (
            f"aborted ({describe_cause(state.abort_cause)})"
            if state.abort_cause is not None
            else "interrupted"
        )
        out(
            f"open turn: {projection.open_turn}{step} (left open by a crash: Resume closes it"
            f" {closes})"
        )
    else:
        out("open turn: none")
        if state.resume_required:
            out("waking work is pending without a turn: Resume opens the next turn")
    for label, entries in (
        ("next-turn", projection.next_turn),
        ("next-step", projection.next_step),
    ):
        count = f"{len(entries)} entr{'y' if len(entries) == 1 else 'ies'}"
        out(f"{label}: {count if entries else 'empty'}")
        for index, entry in enumerate(entries):
            out(f"  [{index}] {describe_entry(entry)}")
    rounds = goal_rounds(events)
    shown = ", ".join(f"{printable(goal)}={count}" for goal, count in sorted(rounds.items()))
    out(f"goal rounds: {shown or 'none'}")
    counts = fate_counts(events)
    total = sum(counts.values())
    shown = ", ".join(f"{kind} {count}" for kind, count in counts.items() if count)
    out(f"fates of {total} accepted message ids: {shown or 'none'}")
