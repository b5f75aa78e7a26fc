"""Generate the phase diagram and the transition table from ``reducer.TRANSITIONS``.

The reducer's table is the one source: which command is legal in which phase,
which handler runs and which phases it can lead to. This tool renders it as a
mermaid state diagram and a markdown table between markers in specs/spec.md
(diagram and table) and README.md (diagram only)::

    <!-- phase-diagram:start --> ... <!-- phase-diagram:end -->
    <!-- phase-table:start --> ... <!-- phase-table:end -->
    <!-- expect-table:start --> ... <!-- expect-table:end -->   (from guards.EXPECTATIONS)

``python tools/phase_table.py`` rewrites them; ``--check`` exits 1 when a
document is stale (run by .ci/run and tests/test_project.py).
"""

from __future__ import annotations

import argparse
import inspect
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from inbox_core.guards import EXPECTATIONS  # noqa: E402
from inbox_core.reducer import TRANSITIONS  # noqa: E402
from inbox_core.state import STATUS_OF  # noqa: E402
from tools.generated import replace_between  # noqa: E402

SPEC = ROOT / "specs" / "spec.md"
README = ROOT / "README.md"
SAME = "<same>"
PHASE_ORDER = ["Idle", "Maintenance", "PreStep", "Step", "TurnStopping", "Orphaned", "Stranded"]


def _summary(handler: object) -> str:
    doc = inspect.getdoc(handler) or ""
    return " ".join(doc.split("\n\n")[0].split())


def _rows() -> list[tuple[str, str, str, list[str]]]:
    rows = []
    for (phase, command), row in TRANSITIONS.items():
        targets = [target.__name__ for target in row.leads_to]
        rows.append((phase.__name__, command.__name__, _summary(row.handler), targets))
    rows.sort(key=lambda r: (PHASE_ORDER.index(r[0]), r[1]))
    return rows


def diagram() -> str:
    """Edges between different phases, labelled with the commands that take them."""
    edges: dict[tuple[str, str], list[str]] = defaultdict(list)
    for phase, command, _summary_text, targets in _rows():
        for target in targets:
            if target != phase:
                edges[phase, target].append(command)
    lines = ["```mermaid", "stateDiagram-v2", "    [*] --> Idle"]
    for phase in PHASE_ORDER:
        for (source, target), commands in edges.items():
            if source == phase:
                lines.append(f"    {source} --> {target}: {', '.join(commands)}")
    lines += ["    [*] --> Orphaned: replay (turn left open)", "    [*] --> Stranded: replay"]
    lines.append("```")
    return "\n".join(lines)


def table() -> str:
    """One line per (command, handler): the phases that accept it and where it leads.

    A phase absent from a command's line rejects that command (``_rejection``).
    """
    groups: dict[tuple[str, str, tuple[str, ...]], list[str]] = defaultdict(list)
    for phase, command, summary, targets in _rows():
        relative = tuple(SAME if target == phase else target for target in targets)
        groups[command, summary, relative].append(phase)
    lines = [
        "| command | accepted in (status) | what the handler does | leads to |",
        "|---|---|---|---|",
    ]
    ordered = sorted(groups.items(), key=lambda item: PHASE_ORDER.index(item[1][0]))
    for (command, summary, relative), phases in ordered:
        where = ", ".join(f"`{p}` ({STATUS_OF_NAMES[p]})" for p in phases)
        single = phases[0] if len(phases) == 1 else "(same phase)"
        targets = ", ".join(single if target == SAME else target for target in relative)
        lines.append(f"| `{command}` | {where} | {summary} | {targets} |")
    return "\n".join(lines)


STATUS_OF_NAMES = {phase.__name__: status for phase, status in STATUS_OF.items()}


def expectations() -> str:
    """One line per expectation: the phases where it can hold, and the test there (R34).

    A phase absent from a line never satisfies that expectation.
    """
    groups: dict[tuple[str, str], list[str]] = defaultdict(list)
    for (phase, expectation), holds in EXPECTATIONS.items():
        groups[expectation.__name__, _summary(holds)].append(phase.__name__)
    lines = ["| expectation | can hold in (status) | it holds when |", "|---|---|---|"]
    for (expectation, summary), phases in groups.items():
        ordered = sorted(phases, key=PHASE_ORDER.index)
        where = ", ".join(f"`{p}` ({STATUS_OF_NAMES[p]})" for p in ordered)
        lines.append(f"| `{expectation}` | {where} | {summary} |")
    return "\n".join(lines)


def render() -> dict[Path, str]:
    spec = SPEC.read_text(encoding="utf-8")
    spec = replace_between(spec, "phase-diagram", diagram())
    spec = replace_between(spec, "phase-table", table())
    spec = replace_between(spec, "expect-table", expectations())
    readme = replace_between(README.read_text(encoding="utf-8"), "phase-diagram", diagram())
    return {SPEC: spec, README: readme}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if a document is stale")
    args = parser.parse_args(argv)
    stale = []
    for path, text in render().items():
        if path.read_text(encoding="utf-8") != text:
            stale.append(path)
            if not args.check:
                path.write_text(text, encoding="utf-8")
    if args.check and stale:
        names = ", ".join(str(p.relative_to(ROOT)) for p in stale)
        print(f"stale: {names}; run python tools/phase_table.py", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
