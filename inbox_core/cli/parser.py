"""The ``inbox-core`` argument parser (its texts are ``inbox_core.cli.help``'s).

Building it imports nothing beyond the standard library, so ``inbox-core --help`` and a
usage error start at once: each subcommand names its handler as ``MODULE:FUNCTION`` under
``inbox_core.cli`` (imported by ``main`` once the arguments parsed), and an argument type or
default that needs the package imports it when used (``inbox_core.cli.arguments``).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any, Final

from inbox_core.cli.arguments import (
    DEFAULT_BIND,
    Deferred,
    count,
    grace,
    integer,
    later,
    parse_bind,
    positive,
    receipt,
    seconds,
    store,
)
from inbox_core.cli.help import COMMANDS, DESCRIPTION, EPILOG, INTENT_HELP, STORE_HELP
from inbox_core.cli.output import out
from inbox_core.http.defaults import AGENTS_PER_MINUTE, HEAD_SECONDS, PENDING_PER_AGENT

__all__ = ["build_parser"]


def build_parser() -> argparse.ArgumentParser:
    formatter = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser(
        prog="inbox-core", description=DESCRIPTION, epilog=EPILOG, formatter_class=formatter
    )
    parser.add_argument(
        "--version", action=_Version, nargs=0, help="print the version of inbox-core and exit"
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    def command(name: str, handler: str) -> argparse.ArgumentParser:
        summary, description, epilog = COMMANDS[name]
        sub: argparse.ArgumentParser = commands.add_parser(
            name, help=summary, description=description, epilog=epilog, formatter_class=formatter
        )
        sub.set_defaults(handler=f"inbox_core.cli.{handler}")
        return sub

    demo = command("demo", "demo:run_demo")
    demo.add_argument("--log", metavar="PATH", help="write the SQLite log here (a new file)")

    replay_cmd = command("replay", "replay:run_replay")
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

    vectors = command("vectors", "suites:run_vectors")
    vectors.add_argument(
        "dir",
        nargs="?",
        metavar="DIR",
        help="a directory of *.json vectors, or one file (default: specs/vectors)",
    )
    vectors.add_argument("-q", "--quiet", action="store_true", help="print failures only")

    fuzz = command("fuzz", "suites:run_fuzz")
    fuzz.add_argument(
        "--examples",
        type=positive,
        default=100,
        metavar="N",
        help="number of random command sequences (default 100)",
    )
    fuzz.add_argument(
        "--seed",
        type=integer,
        default=0,
        metavar="S",
        help="random seed; the same seed replays the same run (default 0)",
    )
    fuzz.add_argument(
        "--steps",
        type=positive,
        default=50,
        metavar="K",
        help="maximum commands per sequence (default 50)",
    )

    conform = command("conform", "suites:run_conform")
    conform.add_argument(
        "--port", required=True, metavar="CMD", help="the command that starts the port"
    )
    given = conform.add_mutually_exclusive_group()
    given.add_argument(
        "--vectors",
        metavar="DIR",
        help="a directory of *.json vectors, or one file (default: specs/vectors); one"
        " without vectors is a failure",
    )
    given.add_argument(
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
        type=count,
        default=200,
        metavar="N",
        help="number of random runs after the vectors; 0 for none (default 200)",
    )
    conform.add_argument(
        "--seed", type=integer, default=0, metavar="S", help="random seed (default 0)"
    )
    conform.add_argument(
        "--steps",
        type=positive,
        default=20,
        metavar="K",
        help="maximum steps per run (default 20)",
    )
    conform.add_argument(
        "--timeout",
        type=seconds,
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

    post = command("post", "posting:run_post")
    post.add_argument("store", type=store, metavar="STORE", help=STORE_HELP)
    post.add_argument("agent", metavar="AGENT", help="the agent's id")
    what = post.add_mutually_exclusive_group()
    for intent, meaning in INTENT_HELP.items():
        what.add_argument(
            f"--{intent}",
            dest="intent",
            metavar="TEXT",
            type=_intent(intent),
            help=f"post TEXT as a message: {meaning}",
        )
    what.add_argument("--cancel", action="store_true", help="post a cancel of the live turn")
    what.add_argument(
        "--receipt",
        type=receipt,
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
        type=later("inbox_core.cli.posting:parse_expect"),
        metavar="idle|turn:N",
        help="apply only if the agent is idle, or turn N is live (R34)",
    )
    post.add_argument("--wait", action="store_true", help="wait for the owner's decision")
    post.add_argument(
        "--timeout",
        type=later("inbox_core.cli.posting:parse_wait_timeout"),
        default=30.0,
        metavar="T",
        help="seconds --wait waits (default 30)",
    )

    watch = command("watch", "posting:run_watch")
    watch.add_argument("store", type=store, metavar="STORE", help=STORE_HELP)
    watch.add_argument("agent", metavar="AGENT", help="the agent's id")
    watch.add_argument(
        "--since",
        type=later("inbox_core.cli.posting:parse_since"),
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

    serve = command("serve", "serving:run_serve")
    serve.add_argument("store", type=store, metavar="STORE", help=STORE_HELP)
    serve.add_argument(
        "--host",
        required=True,
        metavar="MODULE:FACTORY",
        help="FACTORY(agent_id) returns the agent's Host; MODULE is a module name or a"
        " path/to/file.py",
    )
    serve.add_argument(
        "--max-agents",
        type=positive,
        default=1000,
        metavar="N",
        help="the most agents served at once (default 1000)",
    )
    serve.add_argument(
        "--idle-seconds",
        type=seconds,
        default=30.0,
        metavar="S",
        help="detach an agent idle this long (default 30)",
    )
    serve.add_argument(
        "--poll-seconds",
        type=seconds,
        default=1.0,
        metavar="S",
        help="look for work this often with no wake (default 1)",
    )
    serve.add_argument(
        "--lease-seconds",
        type=seconds,
        default=None,
        metavar="S",
        help="PostgreSQL: each agent's lease, 0.001 to 86400 (default 30)",
    )
    serve.add_argument(
        "--grace",
        type=grace,
        default=30.0,
        metavar="S",
        help="at a stop, abandon a hook that ignores its abort signal after S s (default 30;"
        " a second signal abandons at once)",
    )
    serve.add_argument(
        "--checkpoint-every",
        type=positive,
        default=Deferred("inbox_core.shell.stores.checkpoints:DEFAULT_EVERY"),
        metavar="N",
        help="write each agent's checkpoint about every N events (R41; default %(default)s)",
    )
    serve.add_argument(
        "--stats-seconds",
        type=seconds,
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
    _front_door_arguments(serve, "with --http: ")
    serve.add_argument("-q", "--quiet", action="store_true", help="log warnings only")
    http = command("http", "frontdoor:run_http")
    http.add_argument("store", type=store, metavar="STORE", help=STORE_HELP)
    http.add_argument(
        "--bind",
        type=parse_bind,
        default=parse_bind(DEFAULT_BIND),
        metavar="HOST:PORT",
        help=f"the address to listen on (default {DEFAULT_BIND}; beyond loopback only with tokens)",
    )
    _front_door_arguments(http, "")
    http.add_argument("-q", "--quiet", action="store_true", help="log warnings only")
    _token_arguments(command("token", "tokens:run_token"))
    return parser


FRONT_DOOR_OPTIONS: Final = (
    "cors_origin",
    "allowed_host",
    "agents_per_minute",
    "pending_per_agent",
    "max_connections",
    "head_timeout",
)
"""The options of a front door (``http``, ``serve --http``): their dests."""


def _front_door_arguments(parser: argparse.ArgumentParser, prefix: str) -> None:
    """The options ``http`` and ``serve --http`` share (specs/http.md sections 5 and 6); each
    is None (or empty) when not given, its default then the front door's."""
    parser.add_argument(
        "--cors-origin",
        action="append",
        default=[],
        metavar="ORIGIN",
        help=f"{prefix}let browsers call from ORIGIN, scheme://host[:port] (repeatable; default:"
        " CORS off; * or null only for a store with tokens)",
    )
    parser.add_argument(
        "--allowed-host",
        action="append",
        default=[],
        metavar="NAME[:PORT]",
        help=f"{prefix}answer requests whose Host is NAME too (repeatable; without it: loopback"
        " names only when the store has no token, any name when it has)",
    )
    parser.add_argument(
        "--agents-per-minute",
        type=count,
        metavar="N",
        help=f"{prefix}new agents a token (with no token: all clients together) may make per"
        f" minute, unless the token has its own bound (default {AGENTS_PER_MINUTE})",
    )
    parser.add_argument(
        "--pending-per-agent",
        type=count,
        metavar="N",
        help=f"{prefix}refuse a post (429) to an agent with N posts waiting, unless the token"
        f" has its own bound (default {PENDING_PER_AGENT})",
    )
    parser.add_argument(
        "--max-connections",
        type=positive,
        metavar="N",
        help=f"{prefix}the most connections kept open (default: 2048, or fewer to keep a"
        " quarter of the descriptor limit, and at least 256, for the rest)",
    )
    parser.add_argument(
        "--head-timeout",
        type=seconds,
        metavar="S",
        help=f"{prefix}close a connection whose request head is not in after S s (default"
        f" {HEAD_SECONDS:g})",
    )


def _token_arguments(token: argparse.ArgumentParser) -> None:
    actions = token.add_subparsers(dest="action", metavar="ACTION", required=True)
    add = actions.add_parser("add", help="make a token and print it once")
    add.add_argument("store", type=store, metavar="STORE", help=STORE_HELP)
    add.add_argument("name", metavar="NAME", help="the token's name (letters, digits, . _ @ : -)")
    add.add_argument(
        "--scopes",
        type=later("inbox_core.cli.tokens:parse_scopes"),
        default=("read", "post"),
        metavar="SCOPES",
        help="read, post or read,post (default read,post)",
    )
    add.add_argument(
        "--agents",
        default="*",
        metavar="PATTERN",
        help="the agent ids it reaches: a glob, * matches anything (default *)",
    )
    add.add_argument(
        "--agents-per-minute",
        type=count,
        default=None,
        metavar="N",
        help="its own bound on new agents per minute (default: the server's)",
    )
    add.add_argument(
        "--pending-per-agent",
        type=count,
        default=None,
        metavar="N",
        help="its own bound on an agent's waiting posts (default: the server's)",
    )
    listing = actions.add_parser("list", help="show the tokens (never a secret)")
    listing.add_argument("store", type=store, metavar="STORE", help=STORE_HELP)
    revoke = actions.add_parser("revoke", help="delete a token")
    revoke.add_argument("store", type=store, metavar="STORE", help=STORE_HELP)
    revoke.add_argument("name", metavar="NAME", help="the token's name")


def _intent(intent: str) -> Callable[[str], tuple[str, str]]:
    """The type of ``--followup TEXT`` (and the other intents): the intent and its text."""
    return lambda text: (intent, text)


class _Version(argparse.Action):
    """``--version``: the installed distribution's version, read only when asked for."""

    def __call__(self, parser: argparse.ArgumentParser, *_args: Any, **_options: Any) -> None:
        from importlib import metadata  # noqa: PLC0415 - only --version reads it

        try:
            version = metadata.version("inbox-core")
        except metadata.PackageNotFoundError:
            version = "(not installed: run from a checkout without pip install)"
        out(f"inbox-core {version}")
        parser.exit(0)
