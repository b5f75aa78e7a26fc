"""What a value may hold: the limits every writer checks and every reader can rely on.

A value that exists is well formed (D17), and since issue 17 it is also
*storable*: whatever a constructor accepts round-trips through every codec
and every store, and any reader (replay, the CLI, a port in another
language) can read it back without recursion the data controls. So the
limits are part of the format, stated once here as data: the validators
check them, ``tools/gen_schemas.py`` writes them into the JSON Schemas, and
specs/formats.md prints this table (``LIMITS``).

Strings are Unicode scalar values only: a lone surrogate (``"\\ud800"``)
cannot be encoded as UTF-8, so no store could hold it.
"""

from __future__ import annotations

import re
from typing import Final

from inbox_core.errors import InvalidInput

MAX_DEPTH: Final = 64
"""Nesting of arrays and objects inside one opaque JSON value (content blocks, metadata,
host record data, extension source fields); a scalar has depth 0, ``[]`` depth 1."""

MAX_SAFE_INTEGER: Final = 2**53 - 1
"""Turns, steps, rounds, splice coordinates and seqs: exact in every JSON reader."""

MAX_JSON_INTEGER: Final = 2**63 - 1
"""Integers inside opaque JSON lie in ``[-MAX_JSON_INTEGER - 1, MAX_JSON_INTEGER]`` (int64)."""

MAX_ID_LENGTH: Final = 256
"""Characters of a MessageId, a goal id, a tool call id or a plugin name."""

MAX_AGENT_ID_LENGTH: Final = 256
"""Characters of an agent id, the same on every store (an index key in PostgreSQL)."""

_SURROGATE: Final = re.compile("[\ud800-\udfff]")


def scalar_text(value: str, what: str) -> str:
    """``value`` if it holds no lone surrogate (it can be encoded as UTF-8), else InvalidInput."""
    if _SURROGATE.search(value) is not None:
        raise InvalidInput(f"{what} holds a lone surrogate, which no store can encode")
    return value


def agent_id(value: object) -> str:
    """An agent id: a non-empty str of at most ``MAX_AGENT_ID_LENGTH`` characters, with no NUL
    and no lone surrogate. Every store checks it when its log object is built."""
    if not isinstance(value, str) or not value:
        raise InvalidInput(f"agent_id must be a non-empty str, got {value!r:.80}")
    if len(value) > MAX_AGENT_ID_LENGTH:
        raise InvalidInput(
            f"agent_id has at most {MAX_AGENT_ID_LENGTH} characters, got {len(value)}"
        )
    if "\x00" in value:
        raise InvalidInput("agent_id must not contain NUL")
    return scalar_text(value, "agent_id")


LIMITS: Final = {
    "maxDepth": MAX_DEPTH,
    "maxSafeInteger": MAX_SAFE_INTEGER,
    "maxJsonInteger": MAX_JSON_INTEGER,
    "maxIdLength": MAX_ID_LENGTH,
    "maxAgentIdLength": MAX_AGENT_ID_LENGTH,
}
"""The table specs/formats.md prints and the schemas read (camelCase, as in the formats)."""
