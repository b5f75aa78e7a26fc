"""The ``inbox-core`` command line: ``demo``, ``replay``, ``vectors`` and ``fuzz``.

``main(argv)`` parses the arguments, runs one subcommand and returns the exit
status (0 success, 1 failure or invalid input, 2 usage error); it writes to
``sys.stdout``/``sys.stderr`` only. The console script ``inbox-core`` and
``python -m inbox_core`` call it. Standard library only: ``demo`` uses the
asyncio shell (``inbox_core.shell``), ``fuzz`` the Hypothesis suite of
``inbox_core.testing`` (a development dependency).
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import importlib.util
import json
import sqlite3
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Final, Protocol, cast

from inbox_core.codec import event_from_json, projection_to_json
from inbox_core.commands import Decision, StepOutcome
from inbox_core.errors import InboxCoreError, ReplayError
from inbox_core.events import (
    AbortedReason,
    AgentError,
    CancelRequested,
    DurableEvent,
    ErrorReason,
    HostRecord,
    InboxClaimed,
    InboxDiscarded,
    InboxInserted,
    InboxMoved,
    InboxSpliced,
    MessageAdmitted,
    Notification,
    StatusChanged,
    StepEnded,
    StepStarted,
    TurnAborted,
    TurnEnded,
    TurnEndReason,
    TurnStarted,
)
from inbox_core.history import FATE_KINDS, RecordsTranscript, fates, goal_rounds, transcript
from inbox_core.replay import replay
from inbox_core.shell import AbortSignal, EchoHost, LoopAgent, SqliteLog
from inbox_core.shell.logs import (
    CorruptLog,
    iter_json_lines,
    iter_sqlite_log,
    sqlite_agent_ids,
)
from inbox_core.state import AgentState
from inbox_core.values import (
    Cause,
    Entry,
    ExtensionSource,
    GoalSource,
    HookCause,
    PluginSource,
    Source,
    ToolSource,
    UserMessage,
    UserSource,
    thaw_json,
)
from inbox_core.vectors import run_vector_file, vector_files

EXIT_OK: Final = 0
EXIT_FAILURE: Final = 1
EXIT_USAGE: Final = 2

SQLITE_MAGIC: Final = b"SQLite format 3\x00"
PACKAGE_ROOT: Final = Path(__file__).resolve().parent.parent
DEFAULT_VECTORS: Final = Path("specs") / "vectors"


def _out(text: str = "") -> None:
    print(text, file=sys.stdout, flush=True)


def _err(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


# ------------------------------------------------------------ plain-text forms


def _shorten(text: str, limit: int = 60) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def describe_source(source: Source) -> str:
    """``user``, ``plugin:name/form``, ``goal:id#round``, ``tool:call``, or the extension kind."""
    if isinstance(source, UserSource):
        return "user"
    if isinstance(source, PluginSource):
        return f"plugin:{source.plugin}" + (f"/{source.form}" if source.form else "")
    if isinstance(source, GoalSource):
        return f"goal:{source.goal_id}#{source.round}"
    if isinstance(source, ToolSource):
        return f"tool:{source.call_id}"
    assert isinstance(source, ExtensionSource)
    return source.kind


def describe_message(message: UserMessage) -> str:
    """``id [source] "text…"`` (non-text blocks as ``<type>``)."""
    parts = []
    for block in message.content:
        text = block.get("text")
        if block.get("type") == "text" and isinstance(text, str):
            parts.append(text)
        else:
            parts.append(f"<{block.get('type', 'block')}>")
    shown = json.dumps(_shorten(" ".join(parts)), ensure_ascii=False)
    return f"{message.id} [{describe_source(message.source)}] {shown}"


def _entry_ids(entry: Entry) -> str:
    label = entry.message.id + (" (waking)" if entry.wakeup else "")
    if entry.contexts:
        label += " +contexts " + ",".join(c.id for c in entry.contexts)
    return label


def describe_entry(entry: Entry) -> str:
    contexts = " +contexts " + ", ".join(c.id for c in entry.contexts) if entry.contexts else ""
    waking = "waking" if entry.wakeup else "not waking"
    return f"{describe_message(entry.message)} ({waking}{contexts})"


def describe_cause(cause: Cause) -> str:
    if isinstance(cause, HookCause):
        return f"hook ({cause.reason})"
    return cause.kind


def describe_event(event: DurableEvent) -> str:
    """One line of detail for a durable event (its type printed separately)."""
    if isinstance(event, InboxSpliced):
        parts = [f"{event.target} @{event.start}"]
        if event.removed_count:
            verb = (
                f"removed {event.removed_count} ({event.outcome})"
                if event.outcome
                else (f"claimed {event.removed_count}")
            )
            parts.append(verb)
        if event.inserted:
            parts.append("inserted " + ", ".join(_entry_ids(e) for e in event.inserted))
        return ", ".join(parts)
    if isinstance(event, TurnStarted):
        return f"turn {event.turn}"
    if isinstance(event, StepStarted | StepEnded):
        return f"turn {event.turn}, step {event.step}"
    if isinstance(event, MessageAdmitted):
        return describe_message(event.message)
    if isinstance(event, TurnAborted):
        return f"turn {event.turn}: {describe_cause(event.cause)}"
    if isinstance(event, HostRecord):
        return _shorten(json.dumps(thaw_json(event.data), ensure_ascii=False))
    assert isinstance(event, TurnEnded)
    return f"turn {event.turn}: {_describe_reason(event.reason)}"


def _describe_reason(reason: TurnEndReason) -> str:
    if isinstance(reason, ErrorReason):
        return f"error: {reason.message} ({reason.code})"
    if isinstance(reason, AbortedReason):
        return f"aborted ({describe_cause(reason.cause)})"
    return reason.kind


def describe_notification(note: Notification) -> str:
    if isinstance(note, InboxClaimed):
        return f"{note.message.id}, turn {note.turn}"
    if isinstance(note, InboxMoved):
        return f"{note.message.id} -> {note.target}"
    if isinstance(note, InboxInserted | InboxDiscarded):
        return note.message.id
    if isinstance(note, StatusChanged):
        return note.status
    if isinstance(note, CancelRequested):
        return describe_cause(note.cause)
    if isinstance(note, AgentError):
        where = f"turn {note.turn}" + (f", step {note.step}" if note.step is not None else "")
        return f"{where}: {note.message} ({note.code})"
    return ""


def format_durable(seq: int, event: DurableEvent) -> str:
    return f"  #{seq:<4} {event.type:<22} {describe_event(event)}"


def format_live(note: Notification) -> str:
    return f"  ~     {note.type:<22} {describe_notification(note)}".rstrip()


# ---------------------------------------------------------------------- replay


class LogProblem(Exception):
    """The first record of a log that cannot be used, by its seq."""

    def __init__(self, seq: int, reason: str) -> None:
        super().__init__(f"seq {seq}: {reason}")
        self.seq = seq
        self.reason = reason


class NotALog(Exception):
    """The file is neither an SQLite log nor JSON Lines."""


def _decode(document: object, seq: int, where: str) -> DurableEvent:
    try:
        return event_from_json(document)
    except InboxCoreError as error:
        raise LogProblem(seq, f"{where}{type(error).__name__}: {error}") from None


def _read_sqlite(path: Path, agent_id: str) -> tuple[list[DurableEvent], LogProblem | None]:
    """Agent ``agent_id``'s events, read-only through the shell's SQLite log code."""
    events: list[DurableEvent] = []
    try:
        for event in iter_sqlite_log(path, agent_id):
            events.append(event)  # the good prefix, kept for the report
    except CorruptLog as error:
        return events, LogProblem(error.seq, error.reason)
    except sqlite3.Error as error:
        raise NotALog(f"not an inbox-core SQLite log: {error}") from None
    if not events and agent_id not in sqlite_agent_ids(path) and agent_id != "default":
        raise NotALog(f"no agent {agent_id!r} in this database")
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
    path: Path, agent_id: str = "default"
) -> tuple[str, list[DurableEvent], LogProblem | None]:
    """The log's kind, its decodable prefix, and the first record that is not (or None).

    SQLite is recognized by its file header, anything else is read as JSON Lines.
    """
    with path.open("rb") as handle:
        head = handle.read(len(SQLITE_MAGIC))
    if head == SQLITE_MAGIC:
        return ("SQLite", *_read_sqlite(path, agent_id))
    return ("JSON Lines", *_read_json_lines(path))


def check_log(
    path: Path, agent_id: str = "default"
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


def _cmd_replay(args: argparse.Namespace) -> int:
    path = Path(args.log)
    if not path.is_file():
        _err(f"inbox-core replay: no such file: {path}")
        return EXIT_FAILURE
    try:
        kind, events, state, problem = check_log(path, args.agent_id)
    except NotALog as error:
        _err(f"inbox-core replay: {path}: {error}")
        return EXIT_FAILURE
    if args.events:
        for seq, event in enumerate(events):
            _out(format_durable(seq, event))
    if problem is not None or state is None:
        assert problem is not None
        _out(f"log: {path} ({kind})")
        _err(f"invalid log: seq {problem.seq}: {problem.reason}")
        if problem.seq:
            _err(f"(seq 0..{problem.seq - 1} are valid; the first bad event is seq {problem.seq})")
        return EXIT_FAILURE
    if args.json:
        document = {
            "log": str(path),
            "format": kind,
            "events": len(events),
            "projection": projection_to_json(state, events),
            "fates": fate_counts(events),
        }
        _out(json.dumps(document, indent=2, ensure_ascii=False))
        return EXIT_OK
    _print_projection(path, kind, events, state)
    if args.transcript:
        _print_transcript(events)
    return EXIT_OK


def fate_counts(events: Sequence[DurableEvent]) -> dict[str, int]:
    """How many accepted message ids have each fate (R32), every kind listed."""
    counts = dict.fromkeys(FATE_KINDS, 0)
    for fate in fates(events).values():
        counts[fate.kind] += 1
    return counts


def _print_transcript(events: Sequence[DurableEvent]) -> None:
    """The conversation (R30): turns, steps, admitted messages and host records."""
    _out("transcript:")
    for block in transcript(events):
        if isinstance(block, RecordsTranscript):
            _out("  between turns:")
            for record in block.records:
                _out(f"    {record.type:<22} {describe_event(record)}")
            continue
        reason = "open" if block.reason is None else _describe_reason(block.reason)
        _out(f"  turn {block.turn} ({reason})")
        for item in block.items:
            if isinstance(item, HostRecord):
                _out(f"    {item.type:<22} {describe_event(item)}")
                continue
            _out(f"    step {item.step}")
            for entry in item.items:
                if isinstance(entry, HostRecord):
                    _out(f"      {entry.type:<20} {describe_event(entry)}")
                else:
                    _out(f"      user/message         {describe_message(entry)}")


def _print_projection(path: Path, kind: str, events: list[DurableEvent], state: AgentState) -> None:
    projection = state.projection()
    _out(f"log: {path} ({kind}, {len(events)} events)")
    _out(f"ok: all {len(events)} events replay")
    _out(f"last turn: {projection.last_turn}")
    if projection.open_turn is not None:
        step = f", step {projection.open_step} open" if projection.open_step is not None else ""
        closes = (
            f"aborted ({describe_cause(state.abort_cause)})"
            if state.abort_cause is not None
            else "interrupted"
        )
        _out(
            f"open turn: {projection.open_turn}{step} (left open by a crash: Resume closes it"
            f" {closes})"
        )
    else:
        _out("open turn: none")
        if state.resume_required:
            _out("waking work is pending without a turn: Resume opens the next turn")
    for label, entries in (
        ("next-turn", projection.next_turn),
        ("next-step", projection.next_step),
    ):
        count = f"{len(entries)} entr{'y' if len(entries) == 1 else 'ies'}"
        _out(f"{label}: {count if entries else 'empty'}")
        for index, entry in enumerate(entries):
            _out(f"  [{index}] {describe_entry(entry)}")
    rounds = goal_rounds(events)
    shown = ", ".join(f"{goal}={count}" for goal, count in sorted(rounds.items()))
    _out(f"goal rounds: {shown or 'none'}")
    counts = fate_counts(events)
    total = sum(counts.values())
    shown = ", ".join(f"{kind} {count}" for kind, count in counts.items() if count)
    _out(f"fates of {total} accepted message ids: {shown or 'none'}")


# --------------------------------------------------------------------- vectors


def _default_vectors() -> Path:
    if DEFAULT_VECTORS.is_dir():
        return DEFAULT_VECTORS
    return PACKAGE_ROOT / DEFAULT_VECTORS


def _cmd_vectors(args: argparse.Namespace) -> int:
    path = Path(args.dir) if args.dir is not None else _default_vectors()
    if not path.exists():
        _err(f"inbox-core vectors: no such file or directory: {path}")
        return EXIT_FAILURE
    files = vector_files(path)
    if not files:
        _err(f"inbox-core vectors: no *.json vectors in {path}")
        return EXIT_FAILURE
    failed = 0
    for file in files:
        result = run_vector_file(file)
        if result.passed:
            if not args.quiet:
                _out(f"PASS  {result.name}")
            continue
        failed += 1
        _out(f"FAIL  {result.name} ({file.name}): {result.problem}")
        for line in result.detail.splitlines():
            _out(f"      {line}")
    passed = len(files) - failed
    _out(f"{len(files)} vectors: {passed} passed, {failed} failed")
    return EXIT_FAILURE if failed else EXIT_OK


# ------------------------------------------------------------------------ fuzz


class FuzzSummaryLike(Protocol):
    """What ``inbox_core.testing.run_fuzz`` returns (``FuzzSummary``)."""

    examples: int
    steps: int
    elapsed_seconds: float
    failure: str | None


class _Progress:
    """Prints ``done/total`` at every tenth of the run (and at its end)."""

    def __init__(self) -> None:
        self.shown = 0
        self.last = -1

    def __call__(self, done: int, total: int) -> None:
        tenth = done * 10 // max(total, 1)
        if done != self.last and (tenth > self.shown or done == total):
            self.shown, self.last = tenth, done
            _out(f"  {done}/{total} examples")


def _cmd_fuzz(args: argparse.Namespace) -> int:
    if importlib.util.find_spec("hypothesis") is None:
        _err(
            "inbox-core fuzz: the invariant suite needs Hypothesis, which is not installed.\n"
            "Install the development extras: pip install 'inbox-core[dev]' (or pip install"
            " hypothesis)."
        )
        return EXIT_FAILURE
    try:
        testing = importlib.import_module("inbox_core.testing")
    except ImportError as error:
        _err(f"inbox-core fuzz: cannot load the stateful suite inbox_core.testing: {error}")
        return EXIT_FAILURE
    run_fuzz = getattr(testing, "run_fuzz", None)
    if run_fuzz is None:
        _err("inbox-core fuzz: inbox_core.testing has no run_fuzz()")
        return EXIT_FAILURE
    _out(
        f"fuzz: {args.examples} examples of up to {args.steps} steps, seed {args.seed}"
        " (invariants I1-I12 after every step)"
    )
    summary = cast(
        FuzzSummaryLike,
        run_fuzz(examples=args.examples, steps=args.steps, seed=args.seed, progress=_Progress()),
    )
    rerun = f"inbox-core fuzz --examples {args.examples} --seed {args.seed} --steps {args.steps}"
    if summary.failure is not None:
        _out(f"fuzz: FAILED after {summary.examples} examples ({summary.elapsed_seconds:.1f} s)")
        _out(summary.failure)
        _out(f"reproduce: {rerun}")
        return EXIT_FAILURE
    _out(
        f"fuzz: passed: {summary.examples} examples of up to {summary.steps} steps"
        f" in {summary.elapsed_seconds:.1f} s (seed {args.seed})"
    )
    return EXIT_OK


# ------------------------------------------------------------------------ demo


class _Timeline:
    """Prints the session as it commits: durable events (with seq), then live notices."""

    def __init__(self) -> None:
        self.scenes = 0

    def scene(self, title: str) -> None:
        self.scenes += 1
        _out()
        _out(f"== {self.scenes}. {title}")

    def action(self, text: str) -> None:
        _out(f"> {text}")

    def note(self, text: str) -> None:
        _out(f"  ({text})")

    def live(self, note: Notification) -> None:
        _out(format_live(note))


class _TracedLog:
    """An ``EventLog`` that prints every event it stores, with its seq."""

    def __init__(self, inner: SqliteLog) -> None:
        self.inner = inner

    def append(self, events: Sequence[DurableEvent]) -> None:
        first = len(self.inner)
        self.inner.append(events)
        for offset, event in enumerate(events):
            _out(format_durable(first + offset, event))

    def read(self) -> list[DurableEvent]:
        return self.inner.read()

    def acquire(self) -> None:
        self.inner.acquire()

    def release(self) -> None:
        self.inner.release()


def _text(id: str, text: str, source: Source = UserSource()) -> UserMessage:
    return UserMessage(id, text, source)


async def _first_process(path: Path, timeline: _Timeline) -> None:
    """Scenes 1-7: the session until the process stops in the middle of turn 7."""
    actions: dict[tuple[str, int, int], Callable[[], None]] = {}
    hang_at = ("pre_step", 7, 1)
    hanging = asyncio.Event()

    async def checkpoint(hook: str, turn: int, step: int) -> None:
        action = actions.pop((hook, turn, step), None)
        if action is not None:
            action()
        if (hook, turn, step) == hang_at:
            hanging.set()
            await asyncio.Event().wait()  # never returns: the process stops here

    class ScriptedHost(EchoHost):
        """EchoHost plus scripted actions at chosen hooks."""

        async def pre_step(
            self, turn: int, step: int, messages: tuple[UserMessage, ...], signal: AbortSignal
        ) -> Decision:
            await checkpoint("pre_step", turn, step)
            return await super().pre_step(turn, step, messages, signal)

        async def run_step(self, turn: int, step: int, signal: AbortSignal) -> StepOutcome:
            await checkpoint("run_step", turn, step)
            return await super().run_step(turn, step, signal)

    log = SqliteLog(path)
    try:
        agent = LoopAgent(ScriptedHost(), log=_TracedLog(log))
        agent.subscribe(timeline.live)

        timeline.scene("followup while idle: the turn opens inside the same command (R12, R14)")
        timeline.action('followup(m1 "What is the weather in Paris?")')
        agent.followup(_text("m1", "What is the weather in Paris?"))
        await agent.when_idle()

        timeline.scene("queue and inject while idle: input parks, no turn opens (R15)")
        timeline.action('queue(q1 "Also book a table for two")')
        agent.queue(_text("q1", "Also book a table for two"))
        timeline.action("inject(i1, a calendar notice)")
        notice = PluginSource("calendar", "notice", summary="dinner at 8pm")
        agent.inject(_text("i1", "Calendar: dinner at 8pm", notice))

        timeline.scene("followup: turn 2 claims the parked input, m2 gets turn 3 (R9, R20)")
        timeline.action('followup(m2 "And tomorrow?")')
        agent.followup(_text("m2", "And tomorrow?"))
        await agent.when_idle()

        timeline.scene("steer during a step: the turn takes another step (R17)")

        def steer() -> None:
            timeline.action('(during turn 4, step 1) steer(s1 "Use Celsius")')
            agent.steer(_text("s1", "Use Celsius"))

        actions[("run_step", 4, 1)] = steer
        timeline.action('followup(m3 "Summarize my day")')
        agent.followup(_text("m3", "Summarize my day"))
        await agent.when_idle()

        timeline.scene("cancel(keep_inbox=True): the turn aborts, pending input is kept (R22-R24)")

        def cancel() -> None:
            timeline.action('(during turn 5, step 1) queue(q2 "Then plan the weekend")')
            agent.queue(_text("q2", "Then plan the weekend"))
            timeline.action('(during turn 5, step 1) steer(s2 "Actually, keep it short")')
            agent.steer(_text("s2", "Actually, keep it short"))
            timeline.action("(during turn 5, step 1) cancel(keep_inbox=True)")
            agent.cancel(keep_inbox=True)

        actions[("run_step", 5, 1)] = cancel
        timeline.action('followup(m4 "Write a long essay")')
        agent.followup(_text("m4", "Write a long essay"))
        await agent.when_idle()

        timeline.scene("crash: the process stops before the pre-step decision of turn 7")
        timeline.action('followup(m5 "Draft the trip plan")')
        agent.followup(_text("m5", "Draft the trip plan"))
        await hanging.wait()
        timeline.note("the host hangs in pre_step; the event loop stops with turn 7 open")
        if actions:  # pragma: no cover - the script and the reference disagree
            raise RuntimeError(f"demo: scripted actions never ran: {sorted(actions)}")
    finally:
        log.close()


async def _second_process(path: Path, timeline: _Timeline) -> LoopAgent:
    """Scenes 8-9: a new process reopens the log, resumes, finishes the work, closes."""
    timeline.scene("restart: a new LoopAgent over the same SqliteLog replays and resumes (R27)")
    timeline.action("LoopAgent(EchoHost(), log=SqliteLog(path))")
    log = SqliteLog(path)
    try:
        agent = LoopAgent(EchoHost(), log=_TracedLog(log))
        timeline.note(
            "Resume closed turn 7 interrupted and put its unanswered claim back; m5 is waking,"
            " so turn 8 opened. Construction announces nothing: nobody has subscribed yet"
        )
        agent.subscribe(timeline.live)
        timeline.action("await when_idle()")
        await agent.when_idle()

        timeline.scene("aclose: dispose and wait (R25)")
        timeline.action("await aclose()")
        await agent.aclose()
        return agent
    finally:
        log.close()


def _cmd_demo(args: argparse.Namespace) -> int:
    if args.log is not None:
        path = Path(args.log)
        if path.exists() and path.stat().st_size > 0:
            _err(f"inbox-core demo: {path} already exists; the demo writes a new log")
            return EXIT_FAILURE
    else:
        path = Path(tempfile.mkdtemp(prefix="inbox-core-demo-")) / "demo.db"
    timeline = _Timeline()
    _out(f"inbox-core demo: a scripted session on the SQLite log {path}")
    _out("  #N  a durable event, N its seq in the log;  ~  a live notification")
    asyncio.run(_first_process(path, timeline))
    agent = asyncio.run(_second_process(path, timeline))
    _out()
    _, events, state, problem = check_log(path)
    if state is None or problem is not None:  # pragma: no cover - would be a reference bug
        _err(f"inbox-core demo: the log does not replay: {problem}")
        return EXIT_FAILURE
    _out(
        f"the log holds {len(events)} events and replays to: {state.status},"
        f" last turn {state.last_turn}, {len(state.next_turn)} next-turn and"
        f" {len(state.next_step)} next-step entries pending"
    )
    assert agent.state.disposed
    _out(f"inspect it: inbox-core replay {path}")
    return EXIT_OK


# ---------------------------------------------------------------------- parser

DESCRIPTION: Final = """\
inbox-core: the reference implementation of agent input delivery.

A pure reducer decides where each user-role input waits (next-turn or
next-step), when it enters the model, what the durable log records and what
is announced live. These commands run it: a scripted demo on the SQLite log,
a log validator, the conformance vectors, and the invariant fuzzer.
"""

EPILOG: Final = """\
exit status:
  0  success
  1  failure: invalid log, failing vector, invariant violation, missing tool
  2  usage error (unknown command, bad or missing arguments)

examples:
  inbox-core demo
  inbox-core demo --log session.db
  inbox-core replay session.db
  inbox-core vectors specs/vectors
  inbox-core fuzz --examples 200 --seed 7

run 'inbox-core COMMAND --help' for the details of one command.
"""

_COMMANDS: Final = {
    "demo": (
        "run a scripted session and print its timeline",
        """\
Run a scripted session with the asyncio shell (LoopAgent, EchoHost) on the
embedded SQLite log and print a timeline of every durable event (with its
seq) and every live notification, in commit order. The session shows a
followup, queue and inject, a steer during a step, a cancel that keeps the
inbox, then a crash in the middle of a turn and a restart: a new LoopAgent
over the same log replays it and resumes. The output is deterministic apart
from the log's path.""",
        """\
examples:
  inbox-core demo                      # the log goes to a new temporary directory
  inbox-core demo --log session.db     # keep it here (the file must not exist yet)
  inbox-core replay session.db         # then inspect it""",
    ),
    "replay": (
        "validate a durable log and print its projection",
        """\
Read a durable log, check it event by event with replay() and print the
projection: the pending lists with their wakeup flags, the last turn, the
turn (and step) a crash left open, the goal rounds and how many accepted
messages have each fate (R32: pending, claimed, admitted, canceled, dropped,
consumed). LOG is an SQLite file written by SqliteLog (recognized by its
header; read-only, one agent: --agent-id) or JSON Lines, one
{"seq","type","data"} document per line ("seq" counting from 0; it may be
omitted). An undecodable record, a seq gap or an event replay rejects makes
the command exit 1, naming the seq of the first bad event.""",
        """\
examples:
  inbox-core replay session.db
  inbox-core replay log.jsonl --events     # also list every event
  inbox-core replay log.jsonl --json       # the projection as JSON (vector 'final' form)
  inbox-core replay agents.db --agent-id bob --transcript""",
    ),
    "vectors": (
        "run conformance vectors against the reference",
        """\
Run conformance vectors (specs/formats.md) against the reference reducer:
replay each vector's seed, apply its commands, and compare every step's
durable events and notifications (or error) and the final projection as
canonical JSON. Prints PASS/FAIL per vector and a summary; a failing vector
shows the first differing step as a diff of expected vs actual. Check a
port's own vectors the same way.""",
        """\
examples:
  inbox-core vectors                       # specs/vectors
  inbox-core vectors my-port/vectors -q    # failures and the summary only
  inbox-core vectors specs/vectors/cancel-keep-inbox.json""",
    ),
    "fuzz": (
        "run the stateful invariant suite",
        """\
Run the Hypothesis stateful machine of inbox_core.testing: random command
sequences against the reducer, checking the invariants I1-I12 after every
step (replay of every log prefix included). Prints progress and a summary;
on a violation prints the shrunk failing example and exits 1. Needs the
development extras (pip install 'inbox-core[dev]').""",
        """\
examples:
  inbox-core fuzz --examples 200 --seed 7
  inbox-core fuzz --examples 50 --seed 1 --steps 100""",
    ),
}


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {value}")
    return value


def _integer(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None


def build_parser() -> argparse.ArgumentParser:
    formatter = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser(
        prog="inbox-core", description=DESCRIPTION, epilog=EPILOG, formatter_class=formatter
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    def command(name: str, handler: Callable[[argparse.Namespace], int]) -> Any:
        summary, description, epilog = _COMMANDS[name]
        sub = commands.add_parser(
            name, help=summary, description=description, epilog=epilog, formatter_class=formatter
        )
        sub.set_defaults(handler=handler)
        return sub

    demo = command("demo", _cmd_demo)
    demo.add_argument("--log", metavar="PATH", help="write the SQLite log here (a new file)")

    replay_cmd = command("replay", _cmd_replay)
    replay_cmd.add_argument("log", metavar="LOG", help="an SQLite log or a JSON Lines log")
    replay_cmd.add_argument("--json", action="store_true", help="print the projection as JSON")
    replay_cmd.add_argument("--events", action="store_true", help="also list every event")
    replay_cmd.add_argument(
        "--transcript", action="store_true", help="also print the conversation (turns, records)"
    )
    replay_cmd.add_argument(
        "--agent-id",
        default="default",
        metavar="ID",
        help="the agent to read from a multi-agent SQLite file (default: %(default)s)",
    )

    vectors = command("vectors", _cmd_vectors)
    vectors.add_argument(
        "dir",
        nargs="?",
        metavar="DIR",
        help="a directory of *.json vectors, or one file (default: specs/vectors)",
    )
    vectors.add_argument("-q", "--quiet", action="store_true", help="print failures only")

    fuzz = command("fuzz", _cmd_fuzz)
    fuzz.add_argument(
        "--examples",
        type=_positive,
        default=100,
        metavar="N",
        help="number of random command sequences (default 100)",
    )
    fuzz.add_argument(
        "--seed",
        type=_integer,
        default=0,
        metavar="S",
        help="random seed; the same seed replays the same run (default 0)",
    )
    fuzz.add_argument(
        "--steps",
        type=_positive,
        default=50,
        metavar="K",
        help="maximum commands per sequence (default 50)",
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status (0 ok, 1 failure, 2 usage)."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exit_:  # --help (0) or a usage error (2)
        return exit_.code if isinstance(exit_.code, int) else EXIT_USAGE
    handler = cast(Callable[[argparse.Namespace], int], args.handler)
    try:
        return handler(args)
    except BrokenPipeError:  # pragma: no cover - e.g. piped into head
        return EXIT_OK
    except KeyboardInterrupt:  # pragma: no cover
        _err("interrupted")
        return 130
