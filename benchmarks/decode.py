"""Decoding stored events: events/s of this core against an older one, in one process.

    python -m benchmarks.decode [--base REV_OR_DIR] [--log agent|b3|failover]
                                [--events N] [--rounds R] [--quick] [--out FILE]

What is decoded is what a store reads back: the compact ``{"type","data"}`` JSON text of
one row, through ``shell.stores.rows.decode_record`` (parse, the document-depth guard,
``event_from_json``). The log (``--log``) is by default an agent's: the B3 command mix of
``workloads.build_log`` (followups, queued, steered and injected input, edits, cancels,
every kind of report) carrying what real messages and reports carry: texts from a few
words to a few pages, some non-ASCII, tool results and images as content blocks,
metadata, plugin notices and snapshots, goal continuations, other agents' messages (v5),
extension sources, and host records with the reports (a model request and response per
step, tool calls), as ``PydanticAIHost`` writes them. ``b3`` is the same mix with B3's own
one-block messages and no records, ``failover`` B7's failover history.

``--base`` is a git revision (its ``inbox_core`` is taken with ``git archive``) or a
directory holding an ``inbox_core`` package; by default the commit before the one-pass
decoder (issue 32). Both cores are imported side by side under other names
(``benchmarks.ab.load``) and decode the same texts, every event type as one batch each,
the two cores alternating from round to round, so that load from other processes hits
both alike. Figures are medians of CPU time; each ratio is the median over rounds of the
paired ratio base time / this core's time (above 1: this core is faster). ``json.loads``
alone is given as the floor of any decoder that parses with it.
"""

from __future__ import annotations

import argparse
import importlib
import io
import json
import statistics
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Final

import attrs

import inbox_core
from benchmarks import ab, many_agents, suite
from benchmarks.workloads import _LogBuilder, build_log
from inbox_core import (
    AgentSource,
    ExtensionSource,
    GoalSource,
    HostRecord,
    PluginSource,
    SnapshotSection,
    ToolSource,
    UserMessage,
)
from inbox_core.events import DurableEvent
from inbox_core.shell.stores.rows import encode_event

ROOT: Final = Path(__file__).resolve().parents[1]
BASE: Final = "5edf5ed"
"""The parent of issue 32's decoder work: main as it was when the work began."""
REPORTS: Final = frozenset({"enter", "reject", "prefail", "step", "stopping"})
_PHRASE: Final = (
    "the build failed again on the integration step, can you look at the log and "
    "tell me which test broke first and why; résumé attached, naïve fix tried 🙂"
)
WORDS: Final = tuple(_PHRASE.split())
STAMP: Final = "2026-12-08T10:15:30.123456Z"


# ------------------------------------------------------------------------ the log


class AgentLog(_LogBuilder):
    """``workloads.build_log``'s command mix with an agent's payloads (see the module)."""

    def text(self, short: int = 12, long: int = 2_000) -> str:
        """Words, most often a line or two, sometimes a page or several."""
        roll = self.rng.random()
        words = self.rng.randint(3, short) if roll < 0.55 else self.rng.randint(short, 160)
        if roll > 0.9:
            words = self.rng.randint(160, long)
        out = " ".join(self.rng.choice(WORDS) for _ in range(words))
        return out if self.rng.random() < 0.3 else out.encode("ascii", "ignore").decode()

    def blocks(self) -> list[dict[str, Any]]:
        blocks: list[dict[str, Any]] = [{"type": "text", "text": self.text()}]
        if self.rng.random() < 0.08:
            blocks.append(
                {"type": "image", "source": {"type": "url", "url": f"https://x/{self.serial}.png"}}
            )
        return blocks

    def fresh(self) -> UserMessage:
        self.serial += 1
        rng = self.rng
        message_id = f"m-{self.serial:08d}-{rng.getrandbits(64):016x}"
        roll = rng.random()
        source: Any = None
        content: Any = self.blocks()
        if roll < 0.2:
            source = ToolSource(f"call_{rng.getrandbits(48):012x}")
            content = [{"type": "tool_result", "content": self.text(), "is_error": roll < 0.01}]
        elif roll < 0.25:
            source = PluginSource("memory", "notice", summary="3 notes recalled")
        elif roll < 0.28:
            sections = (SnapshotSection("files", self.text()), SnapshotSection("git", "clean"))
            source = PluginSource("workspace", "snapshot", sections)
        elif roll < 0.32:
            source = GoalSource("goal-1", rng.randint(0, 9))
        elif roll < 0.34:
            source = ExtensionSource("email", {"from": "ops@example.com", "thread": 7})
        elif roll < 0.39:  # a team's replies and tasks (R2 v5)
            source = AgentSource(f"worker-{rng.randint(1, 4)}", rng.randint(1, 400))
        metadata = None
        if rng.random() < 0.25:
            metadata = {"client": "web", "receivedAt": STAMP, "trace": f"{rng.getrandbits(64):x}"}
        if source is None:
            return UserMessage(message_id, content, metadata=metadata)
        return UserMessage(message_id, content, source, metadata)

    def records(self, label: str) -> tuple[HostRecord, ...]:
        """A step's model request and response (PydanticAIHost's records), a tool call's
        return with some of them."""
        rng = self.rng
        if label != "step" or rng.random() < 0.1:
            return ()
        request = {
            "parts": [{"content": self.text(), "timestamp": STAMP, "part_kind": "user-prompt"}],
            "instructions": None,
            "kind": "request",
        }
        parts: list[dict[str, Any]] = [{"content": self.text(40, 600), "part_kind": "text"}]
        if rng.random() < 0.3:
            parts.append(
                {
                    "tool_name": "search",
                    "args": {"query": self.text(), "limit": 5},
                    "tool_call_id": f"call_{rng.getrandbits(48):012x}",
                    "part_kind": "tool-call",
                }
            )
        response = {
            "parts": parts,
            "usage": {"input_tokens": rng.randint(100, 9000), "output_tokens": rng.randint(5, 900)},
            "model_name": "gpt-4o",
            "timestamp": STAMP,
            "kind": "response",
            "finish_reason": "stop",
        }
        return (
            HostRecord("host/pydantic-ai/request", request),
            HostRecord("host/pydantic-ai/response", response),
        )

    def apply(self, command: object, label: str) -> None:
        records = self.records(label) if label in REPORTS else ()
        if records:
            command = attrs.evolve(command, records=records)  # type: ignore[misc]
        super().apply(command, label)


def agent_log(events: int, seed: int = 32) -> list[DurableEvent]:
    builder = AgentLog(seed, 40)
    while len(builder.log) < events:
        builder.step()
    return builder.log


LOGS: Final[dict[str, Callable[[int, int], list[DurableEvent]]]] = {
    "agent": agent_log,
    "b3": lambda events, seed: build_log(events, seed=seed)[0],
    "failover": lambda events, _seed: many_agents.big_log(events),
}
"""``--log``: an agent's log (above); B3's (the same command mix, every message one short
text block, no host records); or B7's failover history (one-line followups, each a
one-step turn). The smaller the payloads, the more of the work is the structure."""


def kind(event: DurableEvent) -> str:
    """An event's type, host records as one kind."""
    return "host/*" if isinstance(event, HostRecord) else event.type


# ----------------------------------------------------------------------- the cores


def base_package(base: str, tmp: Path) -> Path:
    """The ``inbox_core`` directory of ``base``: a directory as given, or a git revision
    unpacked under ``tmp``."""
    given = Path(base)
    for candidate in (given, given / "inbox_core"):
        if (candidate / "shell" / "stores" / "rows.py").is_file():
            return candidate
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", "--format=tar", base, "inbox_core"],
        capture_output=True,
        check=False,
    )
    if archive.returncode != 0:
        raise SystemExit(f"--base {base}: {archive.stderr.decode().strip()}")
    safe = {"filter": "data"} if hasattr(tarfile, "data_filter") else {}  # Python 3.11.4+
    with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
        tar.extractall(tmp / "base", **safe)  # type: ignore[arg-type]
    return tmp / "base" / "inbox_core"


def decoders(base: str, tmp: Path, texts: list[str]) -> dict[str, Callable[[int, object], Any]]:
    """``decode_record`` of the base core and of this one, both imported as copies, each
    checked to read every text back to the same text."""
    here = Path(inbox_core.__file__).resolve().parent
    modules = ab.load(base_package(base, tmp / "src"), here, tmp / "cores")
    out = {}
    for label in ab.LABELS:
        rows = importlib.import_module(f"{modules[label]['core'].__name__}.shell.stores.rows")
        for seq, text in enumerate(texts):
            if rows.encode_event(rows.decode_record(seq, text)) != text:
                raise AssertionError(f"{label} core: event {seq} does not read back: {text[:200]}")
        out[label] = rows.decode_record
    return out


# ------------------------------------------------------------------------ the runs


def measure(
    texts: dict[str, list[str]], decode: dict[str, Callable[[int, object], Any]], rounds: int
) -> dict[str, dict[str, suite.Samples]]:
    """Samples per event kind of each core and of ``json.loads``, alternating."""
    variants: dict[str, Callable[[int, object], Any]] = {**decode, "json.loads": _loads}
    samples = {k: {v: suite.Samples(len(batch)) for v in variants} for k, batch in texts.items()}
    order = list(variants)
    for r in range(rounds):
        for name in order if r % 2 else order[::-1]:
            fn = variants[name]
            for k, batch in texts.items():
                cpu, wall, _ = suite.timed(lambda f=fn, b=batch: [f(i, t) for i, t in enumerate(b)])
                samples[k][name].add(cpu, wall)
    return samples


def _loads(_seq: int, text: object) -> Any:
    return json.loads(text)  # type: ignore[arg-type]


def summary(samples: dict[str, dict[str, suite.Samples]]) -> dict[str, Any]:
    """Per event kind and for the whole log (the rounds' sums): events/s and the ratio."""
    rows: dict[str, Any] = {}
    for k, by in samples.items():
        rows[k] = {
            "events": by["base"].units,
            "base_events_per_s": 1e6 / by["base"].per_unit_us(),
            "events_per_s": 1e6 / by["patched"].per_unit_us(),
            "json_loads_events_per_s": 1e6 / by["json.loads"].per_unit_us(),
            "ratio": suite.paired(by["base"], by["patched"]),
            "spread": by["patched"].summary()["spread"],
        }
    total = {
        v: [sum(s[v].cpu[r] for s in samples.values()) for r in range(_rounds(samples))]
        for v in ("base", "patched", "json.loads")
    }
    events = sum(row["events"] for row in rows.values())
    rows["all"] = {
        "events": events,
        "base_events_per_s": events / statistics.median(total["base"]) * 1e9,
        "events_per_s": events / statistics.median(total["patched"]) * 1e9,
        "json_loads_events_per_s": events / statistics.median(total["json.loads"]) * 1e9,
        "ratio": statistics.median(
            b / p for b, p in zip(total["base"], total["patched"], strict=True)
        ),
        "spread": suite._spread(total["patched"]),
    }
    return rows


def _rounds(samples: dict[str, dict[str, suite.Samples]]) -> int:
    return len(next(iter(samples.values()))["base"].cpu)


def table(rows: dict[str, Any]) -> str:
    head = (
        f"{'event':<22}{'count':>8}{'base ev/s':>12}{'new ev/s':>12}{'ratio':>8}{'json.loads':>12}"
    )
    lines = [head]
    for k, row in rows.items():
        lines.append(
            f"{k:<22}{row['events']:>8}{row['base_events_per_s']:>12,.0f}"
            f"{row['events_per_s']:>12,.0f}{row['ratio']:>8.2f}{row['json_loads_events_per_s']:>12,.0f}"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.decode",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--base", default=BASE, help=f"git revision or directory (default {BASE})")
    parser.add_argument("--events", type=int, help="log length (default 20,000; quick 1,000)")
    parser.add_argument("--rounds", type=int, help="rounds of each core (default 9; quick 3)")
    parser.add_argument("--log", choices=sorted(LOGS), default="agent", help="the log decoded")
    parser.add_argument("--seed", type=int, default=32, help="the log's random seed")
    parser.add_argument("--quick", action="store_true", help="smoke sizes")
    parser.add_argument("--out", type=Path, help="write the result as JSON here")
    args = parser.parse_args(argv)
    events = args.events or (1_000 if args.quick else 20_000)
    rounds = args.rounds or (3 if args.quick else 9)
    log = LOGS[args.log](events, args.seed)
    texts: dict[str, list[str]] = {}
    for event in log:
        texts.setdefault(kind(event), []).append(encode_event(event))
    with tempfile.TemporaryDirectory() as tmp:
        decode = decoders(args.base, Path(tmp), [t for batch in texts.values() for t in batch])
        rows = summary(measure(dict(sorted(texts.items())), decode, rounds))
    result = {
        "base": args.base,
        "log": args.log,
        "events": len(log),
        "rounds": rounds,
        "machine": suite.machine(),
        "decode": rows,
    }
    print(table(rows))
    if args.out is not None:
        args.out.write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
