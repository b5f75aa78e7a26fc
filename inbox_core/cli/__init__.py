"""The ``inbox-core`` command line: ``demo``, ``replay``, ``vectors``, ``fuzz``, ``conform``,
``post``, ``watch``, ``serve``, ``http`` and ``token``.

``main(argv)`` parses the arguments, runs one subcommand and returns the exit
status (0 success, 1 failure or invalid input, 2 usage error); it writes to
``sys.stdout``/``sys.stderr`` only. The console script ``inbox-core`` and
``python -m inbox_core`` call it. Standard library only: ``demo`` uses the
asyncio shell (``inbox_core.shell``), ``fuzz`` the Hypothesis suite of
``inbox_core.testing`` (a development dependency), ``conform`` a port as a
child process (``inbox_core.port``; its random runs need Hypothesis too),
``post`` and ``watch`` a store (``inbox_core.shell.stores.sqlite.store``; PostgreSQL needs
psycopg).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Final, Protocol, cast

from inbox_core.cli.conform import run_conform
from inbox_core.cli.demo import run_demo
from inbox_core.cli.frontdoor import parse_bind, register
from inbox_core.cli.posting import (
    INTENTS,
    parse_expect,
    parse_since,
    parse_wait_timeout,
    run_post,
    run_watch,
)
from inbox_core.cli.render import (
    EXIT_FAILURE,
    EXIT_OK,
    EXIT_USAGE,
    clip,
    err,
    lines,
    out,
    printable,
)
from inbox_core.cli.replay import run_replay
from inbox_core.cli.serving import run_serve
from inbox_core.limits import MAX_SAFE_INTEGER
from inbox_core.shell.stores.checkpoints import DEFAULT_EVERY as DEFAULT_CHECKPOINT_EVERY
from inbox_core.vectors import run_vector_file, vector_files

PACKAGE_ROOT: Final = Path(__file__).resolve().parents[2]
DEFAULT_VECTORS: Final = Path("specs") / "vectors"


# --------------------------------------------------------------------- vectors


def _default_vectors() -> Path:
    if DEFAULT_VECTORS.is_dir():
        return DEFAULT_VECTORS
    return PACKAGE_ROOT / DEFAULT_VECTORS


def _vectors_dir(given: str | None) -> Path:
    return Path(given) if given is not None else _default_vectors()


def _cmd_vectors(args: argparse.Namespace) -> int:
    path = _vectors_dir(args.dir)
    if not path.exists():
        err(f"inbox-core vectors: no such file or directory: {path}")
        return EXIT_FAILURE
    files = vector_files(path)
    if not files:
        err(f"inbox-core vectors: no *.json vectors in {path}")
        return EXIT_FAILURE
    failed = 0
    for file in files:
        result = run_vector_file(file)
        if result.passed:
            if not args.quiet:
                out(f"PASS  {printable(result.name)}")
            continue
        failed += 1
        name, where = printable(result.name), printable(file.name)
        out(clip(f"FAIL  {name} ({where}): {printable(result.problem)}"))
        for line in lines(result.detail):
            out(f"      {line}")
    passed = len(files) - failed
    out(f"{len(files)} vectors: {passed} passed, {failed} failed")
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
            out(f"  {done}/{total} examples")


def _cmd_fuzz(args: argparse.Namespace) -> int:
    try:
        from inbox_core.testing import run_fuzz  # noqa: PLC0415 - needs Hypothesis (dev only)
    except ImportError as error:
        err(
            f"inbox-core fuzz: the invariant suite cannot load ({error}).\n"
            "Install the development extras from the checkout: pip install -e '.[dev]' (or"
            " pip install hypothesis)."
        )
        return EXIT_FAILURE
    out(
        f"fuzz: {args.examples} examples of up to {args.steps} steps, seed {args.seed}"
        " (invariants I1-I12 after every step)"
    )
    summary = cast(
        FuzzSummaryLike,
        run_fuzz(examples=args.examples, steps=args.steps, seed=args.seed, progress=_Progress()),
    )
    rerun = f"inbox-core fuzz --examples {args.examples} --seed {args.seed} --steps {args.steps}"
    if summary.failure is not None:
        out(f"fuzz: FAILED after {summary.examples} examples ({summary.elapsed_seconds:.1f} s)")
        out(summary.failure)
        out(f"reproduce: {rerun}")
        return EXIT_FAILURE
    out(
        f"fuzz: passed: {summary.examples} examples of up to {summary.steps} steps"
        f" in {summary.elapsed_seconds:.1f} s (seed {args.seed})"
    )
    return EXIT_OK


# ---------------------------------------------------------------------- parser

DESCRIPTION: Final = """\
inbox-core: the reference implementation of agent input delivery.

A pure reducer decides where each user-role input waits (next-turn or
next-step), when it enters the model, what the durable log records and what
is announced live. These commands run it: a scripted demo on the SQLite log,
a log validator, the conformance vectors, the invariant fuzzer, and the
conformance kit that checks a port in any language against the reference;
and, for agents whose logs live in a store (an SQLite file or a PostgreSQL
database), a post of a command from any process and a live watch of a log.
"""

EPILOG: Final = """\
exit status:
  0  success
  1  failure: invalid log, failing vector, invariant violation, a port that
     differs from the reference, missing tool
  2  usage error (unknown command, bad or missing arguments); for conform
     also a port that breaks the protocol (exits, hangs, malformed answers)
  for post --wait, 1 also means the owner rejected the command, or it is
  still pending after --timeout

examples:
  inbox-core demo
  inbox-core demo --log session.db
  inbox-core replay session.db
  inbox-core vectors specs/vectors
  inbox-core fuzz --examples 200 --seed 7
  inbox-core conform --port "node examples/port_js/port.js"
  inbox-core post sqlite:agents.db alice --followup "hello" --wait
  inbox-core watch sqlite:agents.db alice
  inbox-core http sqlite:agents.db

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
consumed). LOG is a regular file: an SQLite file written by SqliteLog (recognized by
its header; one agent, 'default' unless --agent-id names another; a file of
other agents only lists them and exits 2) or JSON Lines, one
{"seq","type","data"} document per line ("seq" counting from 0; it may be
omitted). Reading changes nothing and creates no file: a cleanly closed
SQLite log is read in a directory the user cannot write. An undecodable
record, a seq gap or an event replay rejects makes the command exit 1,
naming the seq of the first bad event; so does a path that is no log (a
directory, a FIFO, another application's database). --check-checkpoints
also compares every checkpoint stored beside an SQLite log (R41) with the
state replay has at its seq, one line each, and exits 1 on any mismatch.""",
        """\
examples:
  inbox-core replay session.db
  inbox-core replay agents.db --agent-id bob --check-checkpoints
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
development extras (pip install -e '.[dev]' from the checkout).""",
        """\
examples:
  inbox-core fuzz --examples 200 --seed 7
  inbox-core fuzz --examples 50 --seed 1 --steps 100""",
    ),
    "conform": (
        "check a port in any language against the reference",
        """\
Start the port CMD (a program speaking the JSON Lines protocol of
specs/ports.md on its standard input and output), shake hands, and run
every conformance vector of the parts it declares through it (a failing
vector skips the random runs unless --keep-going); then play N random runs
(sends of every intent with contexts and expectations, edits, cancels both
ways, dispose, host answers with records, maintenance, malformed commands,
crashes as a reload of the log then Resume, loads of corrupted logs), each
favouring a few kinds of steps, on the port and on the reference at once,
comparing each step's durable events, notifications or error name (a
ReplayError's seq), the projection after it, then the fates, transcript and
goal rounds of the log. On a divergence the run is shrunk to a short one,
both sides are printed as a diff, and the run is written as a vector file the
port can keep in its own suite. Exit 0: the port agrees; 1: it differs (or
no vector was found); 2: it broke the protocol (it exited, stayed silent or
stopped reading past --timeout, or answered malformed JSON or a line past
maxDocumentSize), with a one-line reason and the end of its standard error.
The same seed replays the same runs.""",
        """\
examples:
  inbox-core conform --port "python -m inbox_core.port"          # the reference itself
  inbox-core conform --port "node examples/port_js/port.js" --examples 500
  inbox-core conform --port ./my-port --examples 0               # the vectors only
  inbox-core conform --port ./my-port --keep-going               # every failure at once
  inbox-core conform --port ./my-port --seed 7 --steps 30 --json""",
    ),
    "post": (
        "post a command to an agent from any process",
        """\
Write one caller command for agent AGENT into STORE (sqlite:PATH, a
postgresql:// URL or a libpq connection string such as "host=db dbname=x")
and print its receipt (the post's number). The post is durable when the
command returns; the process that owns the agent's log applies it exactly
once, after the posts made before it (R35), and an agent nobody serves
applies it when it is next opened. A --key already posted for that agent
returns the first post's receipt and posts nothing. With --wait, wait for
the owner's decision: print 'applied' (exit 0) or 'rejected:' with the typed
error (exit 1), or exit 1 after --timeout while it is pending, saying whether
anyone serves the agent. --receipt N posts nothing and prints post N's
outcome again ('pending' too; exit 0 only for 'applied'); --pending lists the
agent's unconsumed posts (number and command as stored, oldest first).""",
        """\
examples:
  inbox-core post sqlite:agents.db alice --followup "summarize the thread" --wait
  inbox-core post sqlite:agents.db alice --steer "shorter, please" --expect turn:3
  inbox-core post sqlite:agents.db alice --queue "and then the tests" --key ui-4711
  inbox-core post postgresql://app@db/agents alice --cancel --keep-inbox
  inbox-core post sqlite:agents.db alice --followup "only if idle" --expect idle --wait
  inbox-core post "host=db dbname=agents" alice --receipt 42 --wait
  inbox-core post sqlite:agents.db alice --pending""",
    ),
    "watch": (
        "print an agent's events live, from any process",
        """\
Print agent AGENT's durable events (seq, type, detail: the demo's timeline
form) from --since on, then each one as its owner appends it, until
interrupted: a tail -f for an agent. It needs no ownership and never blocks
the writer (R36); it follows the agent across a change of owner. With
--no-follow, print what the log holds now and exit.""",
        """\
examples:
  inbox-core watch sqlite:agents.db alice
  inbox-core watch postgresql://app@db/agents alice --since 120 --json
  inbox-core watch sqlite:agents.db alice --no-follow""",
    ),
    "serve": (
        "serve the agents of a store that have work (a worker)",
        """\
Run a worker over STORE (sqlite:PATH, a postgresql:// URL or a libpq
connection string) until SIGTERM or SIGINT: it opens every agent that has work
(an unconsumed post, or an open turn or waking work left by an owner that died
or detached) and no live owner, up to --max-agents, with the Host that
FACTORY(agent_id) returns (--host MODULE:FACTORY, MODULE a module name, the
current directory importable, or a path/to/file.py), applies its posts, drives
its turns, and detaches it after --idle-seconds idle. Any number of workers
share a store: each agent is served by one at a time (R29, R37). Store I/O
runs off the event loop, batched across agents. On SIGTERM or SIGINT every
agent is detached (its inbox stays in the log) and the worker exits 0; a hook
that ignores its abort signal is abandoned after --grace seconds (at once on a
second signal) and its log released all the same; after SIGKILL the next
worker resumes its agents. A factory or hook that raises anything costs only
its agent. Options out of range are usage errors (exit 2) before the store is
opened. One line of statistics per --stats-seconds goes to standard error. With
--http HOST:PORT the same process also serves the store over HTTP (as 'inbox-core
http' does).""",
        """\
examples:
  inbox-core serve sqlite:agents.db --host inbox_core.shell.echo:echo_host
  inbox-core serve postgresql://app@db/agents --host myhosts:make_host --max-agents 500
  inbox-core serve "host=db dbname=agents" --host ./hosts.py:make_host --grace 10
  inbox-core serve sqlite:agents.db --host inbox_core.shell.echo:echo_host --http 127.0.0.1:8000
  inbox-core post sqlite:agents.db alice --followup "hello" --wait""",
    ),
}


STORE_HELP: Final = "sqlite:PATH, postgresql://... or a libpq string ('host=... dbname=...')"

_INTENT_HELP: Final = {
    "followup": "next-turn, waking (a prompt with a turn of its own)",
    "queue": "next-turn, not waking (waits for a waking input)",
    "steer": "next-step, waking (joins the live turn at its next step)",
    "inject": "next-step, not waking (rides along with a later step)",
}
assert _INTENT_HELP.keys() == INTENTS.keys()


def _store(text: str) -> str:
    from inbox_core.errors import InvalidInput  # noqa: PLC0415
    from inbox_core.shell.stores.opening import parse_store  # noqa: PLC0415

    try:
        parse_store(text)
    except InvalidInput as error:
        raise argparse.ArgumentTypeError(str(error)) from None
    return text


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {value}")
    return value


def _receipt(text: str) -> int:
    value = _integer(text)
    if not 1 <= value <= MAX_SAFE_INTEGER:
        raise argparse.ArgumentTypeError(f"a post's number is in [1, 2**53 - 1], got {text}")
    return value


def _count(text: str) -> int:
    value = _integer(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {value}")
    return value


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"must be a positive number of seconds, got {text}")
    return value


def _grace(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not 0 <= value < float("inf"):
        raise argparse.ArgumentTypeError(f"must be a number of seconds >= 0, got {text}")
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

    demo = command("demo", run_demo)
    demo.add_argument("--log", metavar="PATH", help="write the SQLite log here (a new file)")

    replay_cmd = command("replay", run_replay)
    replay_cmd.add_argument("log", metavar="LOG", help="an SQLite log or a JSON Lines log")
    replay_cmd.add_argument("--json", action="store_true", help="print the projection as JSON")
    replay_cmd.add_argument("--events", action="store_true", help="also list every event")
    replay_cmd.add_argument(
        "--transcript", action="store_true", help="also print the conversation (turns, records)"
    )
    replay_cmd.add_argument(
        "--agent-id",
        metavar="ID",
        help="the agent to read from an SQLite file (default: 'default'; a file holding other"
        " agents only must name one); not for JSON Lines",
    )
    replay_cmd.add_argument(
        "--check-checkpoints",
        action="store_true",
        help="compare every stored checkpoint with the replay at its seq (exit 1 on a mismatch)",
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

    conform = command(
        "conform",
        lambda args: run_conform(args, None if args.no_vectors else _vectors_dir(args.vectors)),
    )
    conform.add_argument(
        "--port", required=True, metavar="CMD", help="the command that starts the port"
    )
    vectors = conform.add_mutually_exclusive_group()
    vectors.add_argument(
        "--vectors",
        metavar="DIR",
        help="a directory of *.json vectors, or one file (default: specs/vectors); one"
        " without vectors is a failure",
    )
    vectors.add_argument(
        "--no-vectors", action="store_true", help="skip the vectors: the random runs alone"
    )
    conform.add_argument(
        "--keep-going",
        action="store_true",
        help="report every failing vector and still play the random runs (a port that"
        " breaks the protocol on a vector is restarted)",
    )
    conform.add_argument(
        "--examples",
        type=_count,
        default=200,
        metavar="N",
        help="number of random runs after the vectors; 0 for none (default 200)",
    )
    conform.add_argument(
        "--seed", type=_integer, default=0, metavar="S", help="random seed (default 0)"
    )
    conform.add_argument(
        "--steps",
        type=_positive,
        default=20,
        metavar="K",
        help="maximum steps per run (default 20)",
    )
    conform.add_argument(
        "--timeout",
        type=_seconds,
        default=10.0,
        metavar="T",
        help="seconds the port may take to answer one request (default 10)",
    )
    conform.add_argument(
        "--save",
        metavar="DIR",
        default="conform-failures",
        help="where a divergent run is written as a vector (default: conform-failures)",
    )
    conform.add_argument("--json", action="store_true", help="print one JSON summary at the end")

    post = command("post", run_post)
    post.add_argument("store", type=_store, metavar="STORE", help=STORE_HELP)
    post.add_argument("agent", metavar="AGENT", help="the agent's id")
    what = post.add_mutually_exclusive_group()
    for intent, meaning in _INTENT_HELP.items():
        what.add_argument(
            f"--{intent}",
            dest="intent",
            metavar="TEXT",
            type=lambda text, intent=intent: (intent, text),
            help=f"post TEXT as a message: {meaning}",
        )
    what.add_argument("--cancel", action="store_true", help="post a cancel of the live turn")
    what.add_argument(
        "--receipt",
        type=_receipt,
        metavar="N",
        help="post nothing: show the outcome of post N again (with --wait, wait for it)",
    )
    what.add_argument(
        "--pending",
        action="store_true",
        help="post nothing: list the agent's pending posts, oldest first",
    )
    post.add_argument(
        "--keep-inbox", action="store_true", help="with --cancel: keep the pending input"
    )
    post.add_argument("--id", metavar="ID", help="the message's id (default: a new uuid)")
    post.add_argument("--key", metavar="K", help="idempotency key: post at most once per agent")
    post.add_argument(
        "--expect",
        type=parse_expect,
        metavar="idle|turn:N",
        help="apply only if the agent is idle, or turn N is live (R34)",
    )
    post.add_argument("--wait", action="store_true", help="wait for the owner's decision")
    post.add_argument(
        "--timeout",
        type=parse_wait_timeout,
        default=30.0,
        metavar="T",
        help="seconds --wait waits (default 30)",
    )

    watch = command("watch", run_watch)
    watch.add_argument("store", type=_store, metavar="STORE", help=STORE_HELP)
    watch.add_argument("agent", metavar="AGENT", help="the agent's id")
    watch.add_argument(
        "--since",
        type=parse_since,
        default=0,
        metavar="SEQ",
        help="the first seq shown (default 0)",
    )
    watch.add_argument(
        "--no-follow",
        dest="follow",
        action="store_false",
        help="print what the log holds now and exit",
    )
    watch.add_argument("--json", action="store_true", help="one JSON event per line")

    serve = command("serve", run_serve)
    serve.add_argument("store", type=_store, metavar="STORE", help=STORE_HELP)
    serve.add_argument(
        "--host",
        required=True,
        metavar="MODULE:FACTORY",
        help="FACTORY(agent_id) returns the agent's Host; MODULE is a module name or a"
        " path/to/file.py",
    )
    serve.add_argument(
        "--max-agents",
        type=_positive,
        default=1000,
        metavar="N",
        help="the most agents served at once (default 1000)",
    )
    serve.add_argument(
        "--idle-seconds",
        type=_seconds,
        default=30.0,
        metavar="S",
        help="detach an agent idle this long (default 30)",
    )
    serve.add_argument(
        "--poll-seconds",
        type=_seconds,
        default=1.0,
        metavar="S",
        help="look for work this often with no wake (default 1)",
    )
    serve.add_argument(
        "--lease-seconds",
        type=_seconds,
        default=None,
        metavar="S",
        help="PostgreSQL: each agent's lease, 0.001 to 86400 (default 30)",
    )
    serve.add_argument(
        "--grace",
        type=_grace,
        default=30.0,
        metavar="S",
        help="at a stop, abandon a hook that ignores its abort signal after S s (default 30;"
        " a second signal abandons at once)",
    )
    serve.add_argument(
        "--checkpoint-every",
        type=_positive,
        default=DEFAULT_CHECKPOINT_EVERY,
        metavar="N",
        help="write each agent's checkpoint about every N events (R41; default"
        f" {DEFAULT_CHECKPOINT_EVERY})",
    )
    serve.add_argument(
        "--stats-seconds",
        type=_seconds,
        default=60.0,
        metavar="S",
        help="log a line of statistics this often (default 60)",
    )
    serve.add_argument("--name", metavar="NAME", help="the worker's name in logs (host:pid)")
    serve.add_argument(
        "--http",
        type=parse_bind,
        metavar="HOST:PORT",
        help="also serve the store over HTTP here, in the same process (see 'inbox-core http')",
    )
    serve.add_argument("-q", "--quiet", action="store_true", help="log warnings only")
    register(commands, formatter, _store)
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
        err("interrupted")
        return 130
