"""The command line's help: what ``inbox-core --help`` and ``inbox-core COMMAND --help`` say.

Texts only (no import beyond ``typing``): ``COMMANDS`` maps each subcommand to its one-line
summary, its description and its epilog of examples; ``inbox_core.cli.parser`` builds the
parser around them.
"""

from __future__ import annotations

from typing import Final

__all__ = ["COMMANDS", "DESCRIPTION", "EPILOG", "INTENT_HELP", "STORE_HELP"]

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

COMMANDS: Final = {
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
    "http": (
        "serve every agent of a store over HTTP (API, event streams, inspector)",
        """\
Serve the front door of STORE (sqlite:PATH or a postgresql:// URL) over HTTP at --bind
(default 127.0.0.1:8000) until SIGTERM or SIGINT: post to any agent
(POST /v1/agents/AGENT/followup, /queue, /steer, /inject, /commands), read it
(GET /v1/agents/AGENT, its /events as JSON or Server-Sent Events, /fates,
/transcript, /posts/POST), list the agents (GET /v1/agents), and /openapi.json,
/healthz, /metrics; the inspector at /. The server holds no state: any number of
them serve one store, beside any number of workers (inbox-core serve), which apply
the posts. With no token in the store (inbox-core token add) it serves a loopback
address only, and answers only requests addressed to localhost, 127.0.0.1 or [::1]
at its port (421 otherwise: no web page reaches it by re-resolving its own name);
with tokens every request needs one (Authorization: Bearer), and --allowed-host
names the only hosts it answers to. Each token (with none, the store's clients
together) may make --agents-per-minute new agents, and a post to an agent with
--pending-per-agent posts waiting is refused (429). A request head must arrive within
--head-timeout seconds; at most --max-connections stay open. See specs/http.md.""",
        """\
examples:
  inbox-core http sqlite:agents.db
  inbox-core token add postgresql://app@db/agents web --scopes read,post --agents 'team-a/*'
  inbox-core http postgresql://app@db/agents --bind 0.0.0.0:8080 --cors-origin https://app.example
  curl -s localhost:8000/v1/agents/alice/followup -H 'content-type: application/json' \\
       -d '{"message": {"content": "hello"}}'""",
    ),
    "token": (
        "add, list or revoke the bearer tokens of a store's front door",
        """\
Manage the bearer tokens that inbox-core http asks for. 'add' makes a token NAME with
--scopes (read: every GET of an agent and the agent list; post: every POST) and
--agents PATTERN (a glob over agent ids: * matches any characters, / included) and
prints it, alone, on standard output: it is shown only this once, the store keeps
only its hash; --agents-per-minute and --pending-per-agent give it quotas of its own
(the server's otherwise). 'list' prints each token's name, scopes, pattern, creation
time and own quotas. 'revoke' deletes one: every server refuses it within 5 s. A
store with no token is served on a loopback address only.""",
        """\
examples:
  inbox-core token add sqlite:agents.db browser --scopes read,post --agents '*'
  inbox-core token add sqlite:agents.db bulk --agents 'import/*' --agents-per-minute 5000
  inbox-core token add postgresql://app@db/agents team-a --scopes read --agents 'team-a/*'
  inbox-core token list sqlite:agents.db
  inbox-core token revoke sqlite:agents.db browser""",
    ),
}


STORE_HELP: Final = "sqlite:PATH, postgresql://... or a libpq string ('host=... dbname=...')"

INTENT_HELP: Final = {
    "followup": "next-turn, waking (a prompt with a turn of its own)",
    "queue": "next-turn, not waking (waits for a waking input)",
    "steer": "next-step, waking (joins the live turn at its next step)",
    "inject": "next-step, not waking (rides along with a later step)",
}
