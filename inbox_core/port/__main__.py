"""``python -m inbox_core.port``: the reference as a port (specs/ports.md)."""

from __future__ import annotations

import sys

from inbox_core.port.server import ReferencePort, serve

if __name__ == "__main__":
    sys.stdout.reconfigure(encoding="utf-8", newline="\n")  # type: ignore[union-attr]
    sys.exit(serve(ReferencePort(), sys.stdin.buffer, sys.stdout))  # bytes: see serve
