"""``python -m inbox_core.port [--mutant NAME]``: the reference as a port (specs/ports.md);
with ``--mutant``, the reference with one seeded fault (``inbox_core.port.mutants``)."""

from __future__ import annotations

import argparse
import sys

from inbox_core.port.mutants import MUTANTS, MutantPort
from inbox_core.port.server import ReferencePort, serve

if __name__ == "__main__":
    parser = argparse.ArgumentParser(prog="python -m inbox_core.port", description=__doc__)
    parser.add_argument("--mutant", choices=sorted(MUTANTS), help="a seeded fault (R38)")
    args = parser.parse_args()
    port = ReferencePort() if args.mutant is None else MutantPort(args.mutant)
    sys.stdout.reconfigure(encoding="utf-8", newline="\n")  # type: ignore[union-attr]
    sys.exit(serve(port, sys.stdin.buffer, sys.stdout))  # bytes: see serve
