"""Print the mutation score of the last ``mutmut run`` (used by ``nox -s mutation``).

Reads ``mutmut results --all true`` and counts each status. A mutant is
detected when a test killed it or it timed out (an infinite loop the tests
ran into). Prints detected/total and the surviving mutants by function;
specs/testing.md sorts the survivors into message-text, equivalent and
tool-limited ones.
"""

from __future__ import annotations

import collections
import subprocess
import sys

DETECTED = ("killed", "timeout")


def main() -> int:
    done = subprocess.run(
        ["mutmut", "results", "--all", "true"], check=False, capture_output=True, text=True
    )
    statuses: dict[str, str] = {}
    for line in done.stdout.splitlines():
        name, sep, status = line.strip().rpartition(": ")
        if sep:
            statuses[name] = status
    if not statuses:
        print("mutation: no results; run `mutmut run` first", file=sys.stderr)
        return 1
    counts = collections.Counter(statuses.values())
    total = len(statuses)
    detected = sum(counts[s] for s in DETECTED)
    print("mutation: " + ", ".join(f"{s} {c}" for s, c in sorted(counts.items())))
    print(f"mutation: score {detected}/{total} detected ({100 * detected / total:.1f}%)")
    by_function = collections.Counter(
        name.partition("__mutmut_")[0] for name, s in statuses.items() if s not in DETECTED
    )
    for function, count in by_function.most_common():
        print(f"  {count:4d} not detected in {function}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
