"""Who may do what (R39): bearer tokens of the store, checked per request.

A store with no token is open, but a front door serves it only on a loopback address (the
command line refuses another bind; ``public=True`` says the app was bound elsewhere, and
then it never opens, even after the last token is revoked). A store with tokens asks every
request for one (``Authorization: Bearer ...``): none, or one the store does not know, is 401
with ``WWW-Authenticate: Bearer``; a known one used outside its scopes or its agent pattern
is 403. What the store says is cached for ``TTL_SECONDS`` (found and not found alike), so a
revocation reaches every replica within that time plus one request, and an open event
stream checks its token again at least as often.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Final

import attrs

from inbox_core.http.problem import Problem
from inbox_core.shell.stores.tokens import SCOPES, TokenInfo, TokenTable, glob_matches, token_hash

__all__ = ["OPEN", "TTL_SECONDS", "Access", "Gate"]

TTL_SECONDS: Final = 2.0
"""How long a token lookup (and the store's token count) is trusted: revocation takes
effect within this, well inside the 5 s R39 allows."""
MAX_TOKEN_LENGTH: Final = 512
MAX_CACHED: Final = 4096
CHALLENGE: Final = {"WWW-Authenticate": "Bearer"}
"""The challenge of every 401, exactly as R39 words it (no realm, no error attribute: the
problem's ``detail`` says whether a token was missing or unknown)."""


@attrs.frozen
class Access:
    """What one request may do: the token's name (None for an open store), its scopes and
    agent pattern, and its own quotas if it has some (``inbox_core.http.quotas``)."""

    token: str | None
    scopes: tuple[str, ...]
    pattern: str
    agents_per_minute: int | None = None
    pending_per_agent: int | None = None

    def reaches(self, agent: str) -> bool:
        return glob_matches(self.pattern, agent)

    def require(self, scope: str, agent: str | None = None) -> None:
        """``Problem(403)`` unless the token has ``scope`` and (given) reaches ``agent``."""
        if scope not in self.scopes:
            raise Problem(403, f"token {self.token!r} has no {scope!r} scope")
        if agent is not None and not self.reaches(agent):
            raise Problem(403, f"token {self.token!r} does not reach this agent")


OPEN: Final = Access(None, SCOPES, "*")
"""The access of every request to a store with no token (served on loopback only)."""


class Gate:
    """Admits requests: ``await gate.admit(headers)`` is their ``Access`` or ``Problem(401)``."""

    def __init__(
        self,
        tokens: TokenTable,
        run: Callable[[Callable[[], Any]], Awaitable[Any]],
        *,
        public: bool = False,
        ttl: float = TTL_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._tokens = tokens
        self._run = run
        self.public = public
        self._ttl = ttl
        self._clock = clock
        self._found: dict[str, tuple[float, TokenInfo | None]] = {}
        self._count: tuple[float, int] | None = None

    async def _token_count(self) -> int:
        now = self._clock()
        if self._count is None or self._count[0] <= now:
            count = await self._run(self._tokens.count)
            assert isinstance(count, int)
            self._count = (now + self._ttl, count)
        return self._count[1]

    async def _lookup(self, token: str) -> TokenInfo | None:
        now = self._clock()
        digest = token_hash(token)
        cached = self._found.get(digest)
        if cached is not None and cached[0] > now:
            return cached[1]
        info = await self._run(lambda: self._tokens.find(token))
        assert info is None or isinstance(info, TokenInfo)
        if len(self._found) >= MAX_CACHED:
            self._found = {k: v for k, v in self._found.items() if v[0] > now}
            if len(self._found) >= MAX_CACHED:
                self._found.clear()
        self._found[digest] = (now + self._ttl, info)
        return info

    async def opens(self) -> bool:
        """Whether a request needs no token now: the store has none and the app is not
        public (then it answers loopback names only: ``inbox_core.http.hosts``)."""
        return not self.public and await self._token_count() == 0

    async def admit(self, headers: Mapping[str, str]) -> Access:
        """The request's ``Access``; ``Problem(401)`` without a token the store knows (when
        the store has any, or the app is public)."""
        header = headers.get("authorization")
        token = _bearer(header)
        if await self.opens():
            return OPEN
        if token is None:
            why = "no bearer token" if header is None else "the Authorization header is no bearer"
            raise Problem(401, f"{why}: this store asks for a token", headers=CHALLENGE)
        info = await self._lookup(token)
        if info is None:
            raise Problem(401, "the store knows no such token", headers=CHALLENGE)
        return Access(
            info.name, info.scopes, info.pattern, info.agents_per_minute, info.pending_per_agent
        )

    async def still_admits(self, headers: Mapping[str, str], access: Access) -> bool:
        """Whether the same request would still get ``access`` now (an open stream asks)."""
        try:
            return await self.admit(headers) == access
        except Problem:
            return False


def _bearer(header: str | None) -> str | None:
    if header is None:
        return None
    scheme, _, token = header.strip().partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not token or len(token) > MAX_TOKEN_LENGTH:
        return None
    return token
