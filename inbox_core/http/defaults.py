"""The front door's default bounds (specs/http.md section 6), standard library only: the
command line's help reads them without importing the HTTP stack."""

from __future__ import annotations

from typing import Final

__all__ = ["AGENTS_PER_MINUTE", "HEAD_SECONDS", "PENDING_PER_AGENT"]

AGENTS_PER_MINUTE: Final = 600
"""New agents a token (or, with no token, the store's clients together) may make per minute,
by default (``inbox_core.http.quotas``)."""
PENDING_PER_AGENT: Final = 1000
"""Posts an agent may have waiting for its owner before a post to it is refused, by default."""
HEAD_SECONDS: Final = 10.0
"""How long a connection may take to send a request head, by default
(``inbox_core.http.serving``)."""
