# ruff: noqa
# fmt: off
"""Must be rejected: an injection carries no contexts (R11: contexts typed as ``tuple[()]``)."""

from __future__ import annotations

from inbox_core import InjectInput, UserMessage

m = UserMessage("m", "hello")
c = UserMessage("c", "context")

inject_with_contexts = InjectInput(m, (c,), "next-step", False)  # E: [arg-type] Argument 2 to "InjectInput" has incompatible type "tuple[UserMessage]"; expected "tuple[()]"
