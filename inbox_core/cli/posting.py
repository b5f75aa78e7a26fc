"""``inbox-core post`` and ``inbox-core watch``: delivery from any process (R35, R36).

``post`` writes one caller command for an agent into a store (``sqlite:PATH``,
a ``postgresql://`` URL or a libpq connection string) and prints its receipt;
with ``--wait`` it waits for the agent's owner to decide it, and says when
nobody serves the agent. ``post --receipt N`` shows post N's outcome again
(waiting for it with ``--wait``); ``post --pending`` lists the agent's
unconsumed posts. ``watch`` prints an agent's durable events in the demo's
timeline form as they are appended (a ``tail -f`` for an agent), without
owning it. They need no ownership and change no log.
"""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from inbox_core import limits
from inbox_core.cli.help import INTENT_HELP
from inbox_core.cli.output import EXIT_FAILURE, EXIT_OK, EXIT_USAGE, clip, err, out, printable
from inbox_core.cli.render import format_durable
from inbox_core.cli.stores import failed, on_store
from inbox_core.codec import event_to_json
from inbox_core.commands import (
    Cancel,
    Command,
    Expectation,
    ExpectIdle,
    ExpectTurn,
    followup,
    inject,
    queue,
    steer,
)
from inbox_core.errors import InboxCoreError, InvalidInput
from inbox_core.values import UserMessage, create_user_message

if TYPE_CHECKING:
    from inbox_core.shell.stores.posts import PostOutcome, Receipt

__all__ = [
    "INTENTS",
    "parse_expect",
    "parse_since",
    "parse_wait_timeout",
    "run_post",
    "run_watch",
]

INTENTS: Final = {"followup": followup, "queue": queue, "steer": steer, "inject": inject}
"""The four intents ``post`` offers, by flag (R15)."""
assert INTENTS.keys() == INTENT_HELP.keys()  # the parser offers these flags
PENDING_SHOWN: Final = 1000
"""The most posts ``post --pending`` lists (the oldest: those applied first)."""
_PAGE: Final = 1000  # events per read of ``watch --no-follow``


def parse_since(text: str) -> int:
    """``watch --since SEQ``: argparse's type, in the range ``store.watch`` takes (else a
    usage error, exit 2)."""
    from inbox_core.shell.stores.watching import since_seq  # noqa: PLC0415 - the shell, on demand

    return int(_checked(text, int, since_seq))


def parse_wait_timeout(text: str) -> float:
    """``post --timeout T``: argparse's type, the seconds ``store.wait`` takes."""
    from inbox_core.shell.stores.watching import wait_seconds  # noqa: PLC0415

    return float(_checked(text, float, wait_seconds))


def _checked(text: str, convert: Callable[[str], object], check: Callable[[object], Any]) -> Any:
    try:
        value = convert(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r:.80}") from None
    try:
        return check(value)
    except InvalidInput as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def parse_expect(text: str) -> Expectation:
    """``idle`` or ``turn:N`` (R34); argparse's type for ``--expect``."""
    if text == "idle":
        return ExpectIdle()
    kind, _, number = text.partition(":")
    if kind == "turn" and number.isdigit() and int(number) >= 1:
        return ExpectTurn(int(number))
    raise argparse.ArgumentTypeError(f"expected 'idle' or 'turn:N' (N >= 1), got {text!r}")


def _command(args: argparse.Namespace) -> Command:
    if args.cancel:
        return Cancel(keep_inbox=args.keep_inbox, expect=args.expect)
    intent, text = args.intent
    message = UserMessage(args.id, text) if args.id is not None else create_user_message(text)
    return INTENTS[intent](message, expect=args.expect)


def _usage_problem(args: argparse.Namespace) -> str | None:
    """What is wrong with the combination of ``post`` options, if anything."""
    if not (args.cancel or args.intent is not None or args.receipt is not None or args.pending):
        return (
            "give one of --followup, --queue, --steer, --inject TEXT, --cancel, --receipt N"
            " or --pending"
        )
    if args.keep_inbox and not args.cancel:
        return "--keep-inbox goes with --cancel"
    if args.cancel and args.id is not None:
        return "--id names the posted message; --cancel posts none"
    posting = ("--id", args.id), ("--key", args.key), ("--expect", args.expect)
    if args.receipt is not None or args.pending:
        given = [flag for flag, value in posting if value is not None]
        mode = "--pending" if args.pending else "--receipt"
        if given:
            return f"{', '.join(given)} go(es) with a post, not with {mode}"
        if args.pending and args.wait:
            return "--wait goes with a post or --receipt, not with --pending"
    return None


def run_post(args: argparse.Namespace) -> int:
    problem = _usage_problem(args)
    if problem is not None:
        err(f"inbox-core post: {problem}")
        return EXIT_USAGE
    try:
        command = None if args.receipt is not None or args.pending else _command(args)
    except InboxCoreError as error:
        return failed("post", error)
    return on_store("post", args.store, lambda store: _post(store, args, command))


def _post(store: Any, args: argparse.Namespace, command: Command | None) -> int:
    from inbox_core.shell.stores.posts import PostPending, Receipt  # noqa: PLC0415

    if args.pending:
        return _list_pending(store, args.agent)
    if command is None:
        receipt = Receipt(args.agent, args.receipt)
        outcome = store.outcome(receipt)
    else:
        receipt = store.post(args.agent, command, key=args.key)
        out(f"posted {receipt.post_id} for agent {receipt.agent_id!r}")
        if not args.wait:
            return EXIT_OK
        outcome = PostPending()
    if args.wait and isinstance(outcome, PostPending):
        outcome = _wait(store, receipt, args.timeout)
    return _show(outcome)


def _wait(store: Any, receipt: Receipt, timeout: float) -> PostOutcome:
    """``store.wait``, saying who serves the agent when it waited in vain. Nothing is said
    before: an agent nobody owns yet is opened by a worker once its post is there (R37), so
    whether anyone serves it is known only once the wait is over."""
    from inbox_core.shell.stores.posts import PostTimeout  # noqa: PLC0415

    try:
        outcome: PostOutcome = asyncio.run(store.wait(receipt, timeout=timeout))
    except PostTimeout as error:
        why = (
            f"agent {receipt.agent_id!r} is served; its owner has not decided the post yet"
            if store.has_owner(receipt.agent_id)
            else f"nobody serves agent {receipt.agent_id!r} (no live process took up its log"
            f" in {timeout:g} s): start 'inbox-core serve' on its store, or a LoopAgent over"
            " its log"
        )
        raise PostTimeout(f"{error}; {why}") from None
    return outcome


def _show(outcome: PostOutcome) -> int:
    """Print a post's outcome; exit 0 only if it was applied."""
    from inbox_core.shell.stores.posts import PostPending, PostRejected  # noqa: PLC0415

    if isinstance(outcome, PostPending):
        out("pending")
        return EXIT_FAILURE
    if isinstance(outcome, PostRejected):
        out(f"rejected: {printable(outcome.error)}: {printable(outcome.message)}")
        return EXIT_FAILURE
    out("applied")
    return EXIT_OK


def _list_pending(store: Any, agent_id: str) -> int:
    """One line per unconsumed post of the agent (``post_id`` and the command as stored),
    oldest first; then, on standard error, how many and whether anyone serves the agent."""
    posts = store.pending(agent_id, limit=PENDING_SHOWN + 1)
    for post in posts[:PENDING_SHOWN]:
        text = post.command if isinstance(post.command, str) else repr(post.command)
        out(clip(f"{post.post_id} {printable(text)}"))
    count = f"{len(posts)}" if len(posts) <= PENDING_SHOWN else f"more than {PENDING_SHOWN}"
    served = "served" if store.has_owner(agent_id) else "nobody serves it"
    err(f"inbox-core post: {count} pending post(s) for agent {agent_id!r} ({served})")
    return EXIT_OK


def _print_log(store: Any, args: argparse.Namespace) -> None:
    """What the log holds now from ``--since`` on, a page at a time (read-only, R36 v4)."""
    seq = args.since
    while page := store.events(args.agent, since=seq, limit=_PAGE):
        for seq, event in page:
            _print(seq, event, args.json)
        seq += 1
    if seq == 0:
        err(f"inbox-core watch: agent {args.agent!r} has no events in this store")


async def _follow(store: Any, args: argparse.Namespace) -> int:
    async for seq, event in store.watch(args.agent, since=args.since):
        _print(seq, event, args.json)
    return EXIT_OK  # pragma: no cover - a watch follows until interrupted


def _print(seq: int, event: Any, as_json: bool) -> None:
    if as_json:
        out(limits.dump_json({"seq": seq, **event_to_json(event)}))  # a JSON Lines line
    else:
        out(format_durable(seq, event))


def run_watch(args: argparse.Namespace) -> int:
    from inbox_core.shell.stores.opening import parse_store  # noqa: PLC0415

    kind, target = parse_store(args.store)
    if kind == "sqlite" and not Path(target).exists():  # a watch creates no file
        err(f"inbox-core watch: no such file: {target}")
        return EXIT_FAILURE
    return on_store("watch", args.store, lambda store: _watch(store, args))


def _watch(store: Any, args: argparse.Namespace) -> int:
    if not args.follow:
        _print_log(store, args)
        return EXIT_OK
    try:
        return asyncio.run(_follow(store, args))
    except KeyboardInterrupt:
        return EXIT_OK  # Ctrl-C ends a tail -f
