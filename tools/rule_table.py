"""Build the rule-to-test table of specs/spec.md from the tests' citations.

A test cites an id (R1-R28, I1-I12, D1-D22) in its name (``test_r14_...``,
``test_i5_...``) or its docstring (``R14``). Usage:

    python tools/rule_table.py          # rewrite the table in specs/spec.md
    python tools/rule_table.py --check  # exit 1 if the table is stale
"""

from __future__ import annotations

import ast
import re
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SPEC = ROOT / "specs" / "spec.md"
START, END = "<!-- rule-table:start -->", "<!-- rule-table:end -->"
RULES = [f"R{n}" for n in range(1, 29)]
INVARIANTS = [f"I{n}" for n in range(1, 13)]
NAME_ID = re.compile(r"(?:^|_)([rid])(\d{1,2})(?=_|$)")
DOC_ID = re.compile(r"\b([RID])(\d{1,2})\b")


def citations() -> dict[str, list[str]]:
    """Map each id to the sorted tests citing it (``path::Class::test``).

    Scanned: test functions and methods of ``tests/**/test_*.py``, and the
    ``@invariant()`` methods of the public stateful machine in
    ``inbox_core/testing.py`` (the invariants are checked there).
    """
    cited: dict[str, set[str]] = defaultdict(set)
    sources = sorted((ROOT / "tests").rglob("test_*.py"))
    machine = ROOT / "inbox_core" / "testing.py"
    if machine.exists():
        sources.append(machine)
    for path in sources:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        relative = path.relative_to(ROOT).as_posix()
        for node, owner in _checks(tree):
            label = f"{relative}::{owner}{node.name}"
            ids = {f"{k.upper()}{n}" for k, n in NAME_ID.findall(node.name)}
            ids |= {f"{k}{n}" for k, n in DOC_ID.findall(ast.get_docstring(node) or "")}
            for cited_id in ids:
                cited[cited_id].add(label)
    return {key: sorted(value) for key, value in cited.items()}


Function = ast.FunctionDef | ast.AsyncFunctionDef


def _is_check(node: ast.AST) -> bool:
    if not isinstance(node, Function):
        return False
    if node.name.startswith("test"):
        return True
    return any(
        isinstance(d, ast.Call) and getattr(d.func, "id", "") == "invariant"
        for d in node.decorator_list
    )


def _checks(tree: ast.Module) -> list[tuple[ast.FunctionDef | ast.AsyncFunctionDef, str]]:
    found: list[tuple[ast.FunctionDef | ast.AsyncFunctionDef, str]] = []
    for node in tree.body:
        if _is_check(node):
            found.append((node, ""))  # type: ignore[arg-type]
        elif isinstance(node, ast.ClassDef):
            found.extend((item, f"{node.name}::") for item in node.body if _is_check(item))  # type: ignore[misc]
    return found


def table() -> str:
    cited = citations()
    lines = ["| id | tests |", "|---|---|"]
    for rule in RULES + INVARIANTS:
        tests = cited.get(rule, [])
        cell = "<br>".join(f"`{t}`" for t in tests) if tests else "**none**"
        lines.append(f"| {rule} | {cell} |")
    return "\n".join(lines)


def render(spec: str) -> str:
    head, rest = spec.split(START, 1)
    _, tail = rest.split(END, 1)
    return f"{head}{START}\n{table()}\n{END}{tail}"


def main(argv: list[str]) -> int:
    spec = SPEC.read_text(encoding="utf-8")
    fresh = render(spec)
    if "--check" in argv:
        if fresh != spec:
            print("specs/spec.md rule table is stale: run python tools/rule_table.py")
            return 1
        return 0
    SPEC.write_text(fresh, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
