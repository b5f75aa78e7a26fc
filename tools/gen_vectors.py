"""Write the conformance vectors in ``specs/vectors/`` from ``tools/scenarios.py``.

Usage (from the repository root)::

    python tools/gen_vectors.py            # (re)write specs/vectors/*.json
    python tools/gen_vectors.py --check    # exit 1 if the stored vectors are stale
    python tools/gen_vectors.py --out DIR  # write somewhere else
    python tools/gen_vectors.py --coverage # print which vectors cite each rule id

Each scenario runs on the reference reducer; its document is then run back
through ``inbox_core.vectors.run_vector`` as a self-check before anything is
written. Stale ``*.json`` files (no scenario of that name) are removed.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run as a script: make ``tools`` importable
    sys.path.insert(0, str(ROOT))

from inbox_core.vectors import dump_vector, run_vector  # noqa: E402
from tools import scenarios, scenarios_v3, scenarios_voice  # noqa: E402, F401  (register them)
from tools.generated import sync_directory  # noqa: E402
from tools.vectorkit import REGISTRY, Scenario, ScenarioError  # noqa: E402

VECTORS = ROOT / "specs" / "vectors"


def active() -> list[Scenario]:
    """The scenarios that become vectors (not blocked by a known reference bug)."""
    return [s for s in REGISTRY if s.blocked_by is None]


def blocked() -> list[Scenario]:
    return [s for s in REGISTRY if s.blocked_by is not None]


def generate() -> dict[str, str]:
    """File name -> stored text of every vector, in scenario order."""
    files: dict[str, str] = {}
    for item in active():
        doc = item.build()
        result = run_vector(doc)
        if not result.passed:
            raise ScenarioError(
                f"{item.name}: generated vector fails: {result.problem}\n{result.detail}"
            )
        files[f"{item.name}.json"] = dump_vector(doc)
    return files


def coverage(files: dict[str, str]) -> dict[str, list[str]]:
    """Rule id -> names of the vectors citing it (R…, then D…, then I…, in number order)."""
    cited: dict[str, list[str]] = {}
    for text in files.values():
        doc = json.loads(text)
        for rule in doc["rules"]:
            cited.setdefault(rule, []).append(doc["name"])
    order = {"R": 0, "D": 1, "I": 2}
    return dict(sorted(cited.items(), key=lambda item: (order[item[0][0]], int(item[0][1:]))))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="fail if stored vectors are stale")
    parser.add_argument("--out", type=Path, default=VECTORS, help="output directory")
    parser.add_argument("--coverage", action="store_true", help="print rule -> vectors")
    args = parser.parse_args(argv)
    files = generate()
    if args.coverage:
        for rule, names in coverage(files).items():
            print(f"{rule:<4} {len(names):>3}  {', '.join(names)}")
        return 0
    for item in blocked():
        print(f"skipped {item.name}: blocked by {item.blocked_by}")
    return sync_directory(
        args.out,
        files,
        pattern="*.json",
        what="vectors",
        tool="tools/gen_vectors.py",
        check=args.check,
    )


if __name__ == "__main__":
    sys.exit(main())
