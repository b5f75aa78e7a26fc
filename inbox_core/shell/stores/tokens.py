"""Bearer tokens of a store (R39): kept hashed in the store's own database, so every front
door over that database (any number of replicas) sees the same set at once.

A token is ``ict_`` followed by 43 characters of URL-safe base64 (32 random bytes); it is
shown once, when it is made, and only its SHA-256 is stored. A secret that random needs no
slow hash: nobody guesses 256 bits, and a copy of the table yields no token. Each row holds a
unique name, that hash, the scopes (``read``: every GET of an agent; ``post``: every POST),
the pattern of the agent ids it may reach (a glob in which ``*`` matches any characters, ``/``
included, and nothing else is special: ``team-a/*``), when it was made and, if the token
has them, its own quotas (new agents per minute, pending posts per agent:
``inbox_core.http.quotas``; NULL is the server's). A table of before the quotas (no such
columns) reads as tokens without them, and the first ``add`` adds the columns.

``TokenTable`` runs the statements of either dialect on a store's connections (the store
hands it its writer's ``_connection`` and its read-only look). The table is created by the
first ``add``; reading never writes (R36 v4): a database without the table, or no database
file at all, holds no token, and a server that may only read the database sees its tokens.
"""

from __future__ import annotations

import base64
import contextlib
import functools
import hashlib
import re
import secrets
from collections.abc import Callable, Iterable
from typing import Any, Final

import attrs

from inbox_core import limits
from inbox_core.errors import InboxCoreError, InvalidInput, shown

__all__ = [
    "QUOTA_COLUMNS",
    "TOKEN_COLUMNS",
    "SCOPES",
    "TokenDialect",
    "TokenExists",
    "TokenInfo",
    "TokenTable",
    "glob_matches",
    "new_token",
    "token_hash",
]

SCOPES: Final = ("read", "post")
"""What a token may do: ``read`` (every GET of an agent, the agent list), ``post`` (every POST)."""

TOKEN_PREFIX: Final = "ict_"
MAX_NAME_LENGTH: Final = 128
_NAME: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9._@:-]*")


class TokenExists(InboxCoreError):
    """``add`` of a name the store already holds; nothing was written."""


@attrs.frozen
class TokenInfo:
    """One token as stored, without its secret: its name, scopes, agent pattern, when it
    was made (the database's clock, ISO 8601) and its own quotas (None: the server's)."""

    name: str
    scopes: tuple[str, ...]
    pattern: str
    created: str
    agents_per_minute: int | None = None
    pending_per_agent: int | None = None

    def allows(self, scope: str) -> bool:
        return scope in self.scopes

    def reaches(self, agent_id: str) -> bool:
        """Whether the pattern matches ``agent_id`` (``glob_matches``)."""
        return glob_matches(self.pattern, agent_id)


# --------------------------------------------------------------------- values


def new_token() -> str:
    """A fresh random bearer token (32 bytes from the OS's CSPRNG)."""
    return TOKEN_PREFIX + secrets.token_urlsafe(32)


def token_hash(token: str) -> str:
    """What the store keeps of a token: its SHA-256, as URL-safe base64 without padding."""
    digest = hashlib.sha256(token.encode("utf-8", "surrogatepass")).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


@functools.lru_cache(maxsize=1024)
def _compiled(pattern: str) -> re.Pattern[str]:
    return re.compile(".*".join(re.escape(part) for part in pattern.split("*")), re.DOTALL)


def glob_matches(pattern: str, agent_id: str) -> bool:
    """Whether agent id ``agent_id`` matches ``pattern``: ``*`` stands for any characters
    (``/`` and none included), every other character for itself."""
    return _compiled(pattern).fullmatch(agent_id) is not None


def check_name(name: object) -> str:
    if not isinstance(name, str) or len(name) > MAX_NAME_LENGTH or _NAME.fullmatch(name) is None:
        raise InvalidInput(
            f"a token's name is 1 to {MAX_NAME_LENGTH} letters, digits and . _ @ : - "
            f"(starting with a letter or digit), got {shown(name)}"
        )
    return name


def check_scopes(scopes: Iterable[object]) -> tuple[str, ...]:
    given = list(scopes)
    unknown = [scope for scope in given if scope not in SCOPES]
    if not given or unknown:
        raise InvalidInput(f"scopes are one or more of {', '.join(SCOPES)}, got {shown(given)}")
    return tuple(scope for scope in SCOPES if scope in given)


def check_quota(value: object, name: str) -> int | None:
    """A token's own quota: None (the server's) or a count from 0."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 2**31 - 1:
        raise InvalidInput(f"{name} is a count from 0 to 2**31 - 1, got {shown(value)}")
    return value


def check_pattern(pattern: object) -> str:
    """A pattern has the limits of an agent id (``*`` counts as a character)."""
    try:
        return limits.agent_id(pattern)
    except InvalidInput as error:
        raise InvalidInput(str(error).replace("agent_id", "pattern", 1)) from None


# ------------------------------------------------------------------- dialects


@attrs.frozen
class TokenDialect:
    """The statements of one database (parameters as its driver writes them). ``exists``
    yields a row when the table is there, holding whether it has the quota columns;
    ``select_all`` and ``select_hash`` read ``{columns}``; ``add_quotas`` adds the columns
    to a table of before them."""

    ddl: str
    exists: str
    add_quotas: tuple[str, ...]
    insert: str
    select_all: str
    select_hash: str
    delete: str


TOKEN_COLUMNS: Final = "name, scopes, pattern, created"
"""The columns every token row has (those of before the quotas), in both dialects."""
QUOTA_COLUMNS: Final = "agents_per_minute, pending_per_agent"
"""The quota columns (NULL: the server's quota), read as NULL from a table without them."""


def _quota(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _info(row: tuple[Any, ...]) -> TokenInfo:
    name, scopes, pattern, created, agents_per_minute, pending_per_agent = row
    found = tuple(scope for scope in str(scopes).split(",") if scope in SCOPES)
    stamp = created.isoformat() if hasattr(created, "isoformat") else str(created)
    return TokenInfo(
        str(name), found, str(pattern), stamp, _quota(agents_per_minute), _quota(pending_per_agent)
    )


Connection = Callable[[str], contextlib.AbstractContextManager[Any]]
"""A store's ``_connection(what)``: its lock held, its errors typed, its connection yielded."""
Reading = Callable[[str, Callable[[Any], Any]], Any]
"""A store's read-only look: ``reading(what, read)`` is ``read(conn)`` on a connection that
writes nothing (R36 v4), or None when the database has no tables (so no token)."""


class TokenTable:
    """The tokens of one store: ``add``, ``list``, ``revoke`` (for ``inbox-core token``) and
    ``find`` (for the front door). ``add`` and ``revoke`` write through the store's writer;
    ``list``, ``find`` and ``count`` only read (a front door that may only read the database
    serves, and a read never creates a file or a table). Store failures raise the store's
    typed errors."""

    __slots__ = ("_connection", "_dialect", "_reading")

    def __init__(self, connection: Connection, dialect: TokenDialect, reading: Reading) -> None:
        self._connection = connection
        self._dialect = dialect
        self._reading = reading

    def add(
        self,
        name: str,
        scopes: Iterable[str],
        pattern: str,
        *,
        agents_per_minute: int | None = None,
        pending_per_agent: int | None = None,
    ) -> str:
        """Make a token; its secret is returned (and kept nowhere). ``TokenExists`` if
        ``name`` is taken, ``InvalidInput`` for a bad name, scope, pattern or quota (None: the
        server's)."""
        args = (check_name(name), check_scopes(scopes), check_pattern(pattern))
        quotas = (
            check_quota(agents_per_minute, "agents_per_minute"),
            check_quota(pending_per_agent, "pending_per_agent"),
        )
        token = new_token()
        with self._connection("add a token") as conn:
            conn.execute(self._dialect.ddl)
            (has_quotas,) = conn.execute(self._dialect.exists).fetchone()
            if not has_quotas:  # a table of before the quotas
                for statement in self._dialect.add_quotas:
                    conn.execute(statement)
            row = conn.execute(
                self._dialect.insert,
                (args[0], token_hash(token), ",".join(args[1]), args[2], *quotas),
            ).fetchone()
        if row is None:
            raise TokenExists(f"the store already has a token named {name!r}; nothing was added")
        return token

    def _read(self, what: str, statement: str, args: tuple[Any, ...] = ()) -> list[TokenInfo]:
        """The tokens ``statement`` selects, read-only; none without a table of tokens."""

        def read(conn: Any) -> list[TokenInfo]:
            table = conn.execute(self._dialect.exists).fetchone()
            if table is None:
                return []
            quotas = QUOTA_COLUMNS if table[0] else "NULL, NULL"
            columns = f"{TOKEN_COLUMNS}, {quotas}"
            return [
                _info(tuple(row)) for row in conn.execute(statement.format(columns=columns), args)
            ]

        found = self._reading(what, read)
        return [] if found is None else list(found)

    def list(self) -> list[TokenInfo]:
        """Every token, by name (never a secret: only their hashes are stored)."""
        return self._read("list tokens", self._dialect.select_all)

    def revoke(self, name: str) -> bool:
        """Delete token ``name``; whether there was one."""
        with self._connection("revoke a token") as conn:
            if conn.execute(self._dialect.exists).fetchone() is None:
                return False
            return bool(conn.execute(self._dialect.delete, (name,)).rowcount)

    def find(self, token: str) -> TokenInfo | None:
        """The token whose secret is ``token``, or None."""
        found = self._read("read tokens", self._dialect.select_hash, (token_hash(token),))
        return found[0] if found else None

    def count(self) -> int:
        """How many tokens the store holds (none: a front door serves loopback only, with no
        token asked for)."""
        return len(self.list())
