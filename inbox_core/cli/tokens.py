"""``inbox-core token add|list|revoke STORE ...``: the bearer tokens of a store (R39).

``add`` prints the new token alone on standard output, once: the store keeps only its hash
(``inbox_core.shell.stores.tokens``), in its own database, so every front door over it sees the
token within seconds; ``list`` shows names, scopes and patterns (never a token); ``revoke``
deletes one (every front door refuses it within 5 s; with none left the store is one with no
token again, served on loopback only).
"""

from __future__ import annotations

import argparse
from typing import Any, Final

from inbox_core.cli.render import EXIT_FAILURE, EXIT_OK, EXIT_USAGE, err, out, printable
from inbox_core.errors import InboxCoreError, InvalidInput

__all__ = ["TOKEN_HELP", "add_token_arguments", "parse_scopes", "run_token"]

TOKEN_HELP: Final = (
    "add, list or revoke the bearer tokens of a store's front door",
    """\
Manage the bearer tokens that inbox-core http asks for. 'add' makes a token NAME with
--scopes (read: every GET of an agent and the agent list; post: every POST) and
--agents PATTERN (a glob over agent ids: * matches any characters, / included) and
prints it, alone, on standard output: it is shown only this once, the store keeps
only its hash. 'list' prints each token's name, scopes, pattern and creation time.
'revoke' deletes one: every server refuses it within 5 s. A store with no token is
served on a loopback address only.""",
    """\
examples:
  inbox-core token add sqlite:agents.db browser --scopes read,post --agents '*'
  inbox-core token add postgresql://app@db/agents team-a --scopes read --agents 'team-a/*'
  inbox-core token list sqlite:agents.db
  inbox-core token revoke sqlite:agents.db browser""",
)


def parse_scopes(text: str) -> tuple[str, ...]:
    """argparse's type for ``--scopes``: a comma-separated subset of read, post."""
    from inbox_core.shell.stores.tokens import check_scopes  # noqa: PLC0415

    try:
        return check_scopes(part.strip() for part in text.split(","))
    except InvalidInput as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def add_token_arguments(token: argparse.ArgumentParser, store_type: Any) -> None:
    actions = token.add_subparsers(dest="action", metavar="ACTION", required=True)
    add = actions.add_parser("add", help="make a token and print it once")
    add.add_argument(
        "store", type=store_type, metavar="STORE", help="sqlite:PATH or postgresql://..."
    )
    add.add_argument("name", metavar="NAME", help="the token's name (letters, digits, . _ @ : -)")
    add.add_argument(
        "--scopes",
        type=parse_scopes,
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
    listing = actions.add_parser("list", help="show the tokens (never a secret)")
    listing.add_argument(
        "store", type=store_type, metavar="STORE", help="sqlite:PATH or postgresql://..."
    )
    revoke = actions.add_parser("revoke", help="delete a token")
    revoke.add_argument(
        "store", type=store_type, metavar="STORE", help="sqlite:PATH or postgresql://..."
    )
    revoke.add_argument("name", metavar="NAME", help="the token's name")


def run_token(args: argparse.Namespace) -> int:
    from inbox_core.shell.stores.opening import open_store  # noqa: PLC0415 - the shell, on demand
    from inbox_core.shell.stores.tokens import TokenExists  # noqa: PLC0415

    try:
        store = open_store(args.store)
    except InboxCoreError as error:
        err(f"inbox-core token: {type(error).__name__}: {error}")
        return EXIT_FAILURE
    try:
        tokens = store.tokens
        if args.action == "add":
            out(tokens.add(args.name, args.scopes, args.agents))
        elif args.action == "list":
            for info in tokens.list():
                out(
                    f"{printable(info.name)}\t{','.join(info.scopes)}\t{printable(info.pattern)}\t{info.created}"
                )
        elif not tokens.revoke(args.name):
            err(f"inbox-core token: no token named {printable(args.name)!r}")
            return EXIT_FAILURE
        else:
            out(f"revoked {printable(args.name)}")
    except TokenExists as error:
        err(f"inbox-core token: {error}")
        return EXIT_FAILURE
    except InvalidInput as error:
        err(f"inbox-core token: {error}")
        return EXIT_USAGE
    except InboxCoreError as error:
        err(f"inbox-core token: {type(error).__name__}: {error}")
        return EXIT_FAILURE
    finally:
        store.close()
    return EXIT_OK
