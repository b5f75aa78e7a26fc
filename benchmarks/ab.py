"""Before/after of a core change, side by side in one process.

    python -m benchmarks.ab BASE_DIR PATCHED_DIR [--rounds N] [--only B1,B2,B3,B5] [--out F]

``BASE_DIR`` and ``PATCHED_DIR`` are two copies of the ``inbox_core`` package
directory (e.g. ``inbox_core`` and ``/tmp/x/inbox_core`` with a proposal
applied). Both are copied into a temporary directory under the names
``inbox_core_base`` and ``inbox_core_patched`` (imports rewritten), together
with a matching copy of ``benchmarks/workloads.py``; then the B1, B2, B3 and B5
workloads run on both *interleaved*, one batch of each per round, so that load
from other processes on a shared machine hits both alike. Figures are medians
of CPU time (B5: wall time); ``after/before`` is the median over rounds of the
paired ratio (below 1: the patch is faster).
This is how the numbers in ``benchmarks/proposals/`` were measured.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import importlib
import itertools
import json
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path
from types import ModuleType
from typing import Any

from benchmarks import suite
from benchmarks.floor import FloorAgent

LABELS = ("base", "patched")
_NAME = re.compile(r"\binbox_core\b")


def _alias(source: str, alias: str) -> str:
    return _NAME.sub(alias, source)


def load(
    base: Path, patched: Path, tmp: Path, base_workloads: Path | None = None
) -> dict[str, dict[str, ModuleType]]:
    """Import both cores (and a workloads module bound to each) under distinct names.

    ``base_workloads``: the base core's own ``workloads.py`` when this one uses
    names the base core does not have (an older core).
    """
    here = Path(__file__).resolve().parent / "workloads.py"
    sources = {"base": base_workloads or here, "patched": here}
    for label, src in zip(LABELS, (base, patched), strict=True):
        workloads_src = sources[label].read_text()
        alias = f"inbox_core_{label}"
        dst = tmp / alias
        shutil.copytree(src, dst, ignore=shutil.ignore_patterns("__pycache__"))
        for path in dst.rglob("*.py"):
            path.write_text(_alias(path.read_text(), alias))
        (tmp / f"workloads_{label}.py").write_text(_alias(workloads_src, alias))
    sys.path.insert(0, str(tmp))
    modules: dict[str, dict[str, ModuleType]] = {}
    for label in LABELS:
        alias = f"inbox_core_{label}"
        modules[label] = {
            "core": importlib.import_module(alias),
            "workloads": importlib.import_module(f"workloads_{label}"),
        }
        with contextlib.suppress(ImportError):  # a core without its shell: no B5
            modules[label]["shell"] = importlib.import_module(f"{alias}.shell")
    return modules


def _compare(samples: dict[str, suite.Samples], clock: str = "cpu") -> dict[str, Any]:
    before = samples["base"].per_unit_us(clock)
    after = samples["patched"].per_unit_us(clock)
    return {
        "before_us": before,
        "after_us": after,
        "after_over_before": suite.paired(samples["patched"], samples["base"], clock),
        "spread_before": samples["base"].summary(clock)["spread"],
        "spread_after": samples["patched"].summary(clock)["spread"],
    }


def ab_steady(mods: dict[str, dict[str, ModuleType]], rounds: int, batch: int) -> dict[str, Any]:
    depths = (10, 10_000)
    out: dict[str, Any] = {}
    states: dict[tuple[str, int], Any] = {}
    sends: dict[str, list[Any]] = {}
    total = max(depths) + 1 + rounds * batch
    for label in LABELS:
        w = mods[label]["workloads"]
        sends[label] = w.followups("m", total)
        for depth in depths:
            states[label, depth] = w.steady_state(iter(sends[label]), depth)
    messages = [s.input.message for s in sends["base"]]
    floors = {d: mods["base"]["workloads"].floor_steady_state(iter(messages), d) for d in depths}
    samples = {(label, d): suite.Samples(batch) for label in LABELS for d in depths}
    floor_samples = {d: suite.Samples(batch) for d in depths}
    for r in range(rounds):
        start_offset = r * batch
        for depth in depths:
            start = depth + 1 + start_offset
            for label in LABELS if r % 2 else LABELS[::-1]:
                w = mods[label]["workloads"]
                chunk = sends[label][start : start + batch]
                cpu, wall, states[label, depth] = suite.timed(
                    lambda w=w, s=states[label, depth], c=chunk: w.core_messages(s, c)
                )
                samples[label, depth].add(cpu, wall)
            agent: FloorAgent = floors[depth]
            plain = messages[start : start + batch]
            w = mods["base"]["workloads"]
            cpu, wall, _ = suite.timed(lambda w=w, a=agent, p=plain: w.floor_messages(a, p))
            floor_samples[depth].add(cpu, wall)
    for depth in depths:
        row = _compare({label: samples[label, depth] for label in LABELS})
        floor = floor_samples[depth].per_unit_us()
        row["floor_us"] = floor
        row["x_floor_before"] = row["before_us"] / floor
        row["x_floor_after"] = row["after_us"] / floor
        out[f"B1 D={depth}"] = row
    for label in LABELS:
        key = "before" if label == "base" else "after"
        out[f"B1 ratio {key}"] = suite.paired(samples[label, depths[-1]], samples[label, depths[0]])
    return out


def ab_edits(mods: dict[str, dict[str, ModuleType]], rounds: int, batch: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    cases: dict[tuple[str, str, int], tuple[Any, Any, Any]] = {}
    for label in LABELS:
        core, w = mods[label]["core"], mods[label]["workloads"]
        sends = w.followups("m", 10_001)
        for depth in (10, 10_000):
            state = w.steady_state(iter(sends), depth)
            middle = state.next_turn[depth // 2].message.id
            replacement = core.UserMessage("replacement", w.TEXT)
            cases[label, "replace", depth] = (core.reduce, state, core.Replace(middle, replacement))
            cases[label, "remove", depth] = (core.reduce, state, core.Remove(middle))
    samples = {key: suite.Samples(batch) for key in cases}
    reps = range(batch)

    def edit(reduce: Any, state: Any, command: Any) -> None:
        for _ in reps:
            reduce(state, command)

    keys = list(cases)
    for r in range(rounds):
        for key in keys if r % 2 else keys[::-1]:
            reduce, state, command = cases[key]
            cpu, wall, _ = suite.timed(lambda f=reduce, s=state, c=command: edit(f, s, c))
            samples[key].add(cpu, wall)
    for op in ("replace", "remove"):
        for depth in (10, 10_000):
            out[f"B2 {op} D={depth}"] = _compare(
                {label: samples[label, op, depth] for label in LABELS}
            )
    return out


def ab_replay(mods: dict[str, dict[str, ModuleType]], events: int, repeats: int) -> dict[str, Any]:
    logs = {}
    for label in LABELS:
        log, _, live = mods[label]["workloads"].build_log(events)
        if mods[label]["core"].replay(log).projection() != live.projection():
            raise AssertionError(f"{label}: replay does not reproduce the live state")
        logs[label] = log
    if len(logs["base"]) != len(logs["patched"]):
        raise AssertionError("the two cores produced different logs from the same commands")
    samples = {label: suite.Samples(len(logs[label])) for label in LABELS}
    for r in range(repeats):
        for label in LABELS if r % 2 else LABELS[::-1]:
            replay, log = mods[label]["core"].replay, logs[label]
            cpu, wall, _ = suite.timed(lambda r=replay, lg=log: r(lg))
            samples[label].add(cpu, wall)
    row = _compare(samples)
    row["events"] = len(logs["base"])
    row["events_per_s_before"] = 1e6 / row["before_us"]
    row["events_per_s_after"] = 1e6 / row["after_us"]
    return {"B3 replay": row}


def ab_shell(mods: dict[str, dict[str, ModuleType]], messages: int, repeats: int) -> dict[str, Any]:
    if any("shell" not in mods[label] for label in LABELS):
        return {"B5": "skipped: no shell"}
    samples = {label: suite.Samples(messages) for label in LABELS}
    counter = itertools.count()
    for r in range(repeats):
        for label in LABELS if r % 2 else LABELS[::-1]:
            shell, w = mods[label]["shell"], mods[label]["workloads"]
            msgs = [w.message(f"s{next(counter)}") for _ in range(messages)]
            cpu, wall, _ = suite.timed(
                lambda s=shell, m=msgs: asyncio.run(
                    suite._drive_shell(s, s.MemoryLog(), m, "burst")
                )
            )
            samples[label].add(cpu, wall)
    row = _compare(samples, "wall")
    row["msgs_per_s_before"] = 1e6 / row["before_us"]
    row["msgs_per_s_after"] = 1e6 / row["after_us"]
    return {"B5 memory burst": row}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.ab", description=__doc__)
    parser.add_argument("base", type=Path)
    parser.add_argument("patched", type=Path)
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--only", default="B1,B2,B3,B5")
    parser.add_argument("--events", type=int, default=300_000)
    parser.add_argument("--out", type=Path)
    parser.add_argument(
        "--base-workloads",
        type=Path,
        help="workloads.py of the base core's commit (for a core older than today's workloads)",
    )
    args = parser.parse_args(argv)
    only = {part.strip().upper() for part in args.only.split(",")}
    started = time.perf_counter()
    result: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="inbox-ab-") as tmp:
        mods = load(args.base.resolve(), args.patched.resolve(), Path(tmp), args.base_workloads)
        if "B1" in only:
            result.update(ab_steady(mods, args.rounds, 1_000))
        if "B2" in only:
            result.update(ab_edits(mods, args.rounds, 1_000))
        if "B3" in only:
            result.update(ab_replay(mods, args.events, max(3, args.rounds // 3)))
        if "B5" in only:
            result.update(ab_shell(mods, 2_000, max(3, args.rounds // 3)))
    document = {
        "base": str(args.base),
        "patched": str(args.patched),
        "rounds": args.rounds,
        "machine": suite.machine(),
        "duration_s": time.perf_counter() - started,
        "results": result,
    }
    if args.out:
        args.out.write_text(json.dumps(document, indent=2) + "\n")
    for key, row in result.items():
        if isinstance(row, dict):
            extra = {
                k: round(v, 2)
                for k, v in row.items()
                if k not in ("before_us", "after_us", "after_over_before")
            }
            print(
                f"{key:<22} before {row['before_us']:9.3f} µs  after {row['after_us']:9.3f} µs"
                f"  after/before {row['after_over_before']:.3f}  {extra}"
            )
        else:
            print(f"{key:<22} {row:.3f}" if isinstance(row, float) else f"{key:<22} {row}")
    print(f"({document['duration_s']:.0f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
