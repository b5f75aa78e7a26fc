"""``inbox-core token add|list|revoke STORE ...``: the bearer tokens of a store (R39).

``add`` prints the new token alone on standard output, once: the store keeps only its hash
(``inbox_core.shell.stores.tokens``), in its own database, so every front door over it sees the
token within seconds; ``list`` shows names, scopes and patterns (never a token); ``revoke``
deletes one (every front door refuses it within 5 s; with none left the store is one with no
token again, served on loopback only).
"""

from __future__ import annotations

import argparse
from typing import Any

from inbox_core.cli.output import EXIT_FAILURE, EXIT_OK, EXIT_USAGE, err, out, printable
from inbox_core.cli.stores import on_store
from inbox_core.errors import InvalidInput

__all__ = ["parse_scopes", "run_token"]


def parse_scopes(text: str) -> tuple[str, ...]:
    """argparse's type for ``--scopes``: a comma-separated subset of read, post."""
    from inbox_core.shell.stores.tokens import check_scopes  # noqa: PLC0415

    try:
        return check_scopes(part.strip() for part in text.split(","))
    except InvalidInput as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def run_token(args: argparse.Namespace) -> int:
    return on_store("token", args.store, lambda store: _token(store.tokens, args))


def _token(tokens: Any, args: argparse.Namespace) -> int:
    from inbox_core.shell.stores.tokens import TokenExists  # noqa: PLC0415

    try:
        if args.action == "add":
            quotas = {
                "agents_per_minute": args.agents_per_minute,
                "pending_per_agent": args.pending_per_agent,
            }
            out(tokens.add(args.name, args.scopes, args.agents, **quotas))
        elif args.action == "list":
            for info in tokens.list():
                line = (
                    f"{printable(info.name)}\t{','.join(info.scopes)}\t{printable(info.pattern)}"
                    f"\t{info.created}"
                )
                out(line + _quotas(info))
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
    return EXIT_OK


def _quotas(info: Any) -> str:
    """A token's own quotas, as ``\tNAME=N`` fields (none when it has none of its own)."""
    own = [
        f"{name}={value}"
        for name, value in (
            ("agents-per-minute", info.agents_per_minute),
            ("pending-per-agent", info.pending_per_agent),
        )
        if value is not None
    ]
    return "".join(f"\t{field}" for field in own)
