"""examples/streaming_host.py runs and shows what it claims (R16, R17, R22, R23, R30, R31)."""

from __future__ import annotations

import asyncio
import importlib.util
from pathlib import Path
from types import ModuleType

from inbox_core import HostRecord, RecordsTranscript, TurnTranscript, fates, replay, transcript

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "streaming_host.py"


def load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("streaming_host", EXAMPLE)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_R30_R31_streaming_host_example() -> None:
    """R30, R31, R17, R22, R23: the example's transcript has the tool step, the steer in a
    later step of the same turn, the partial replies of the aborted turns, the kept work
    run after a keep_inbox cancel, and requests rebuilt from the summary after maintenance."""
    example = load()
    lines: list[str] = []
    log = asyncio.run(example.main(latency=0.0005, out=lines.append))
    events = log.read()
    replay(events)  # the log is well formed (I4)
    blocks = transcript(events)
    turns = [b for b in blocks if isinstance(b, TurnTranscript)]
    reasons = [t.reason.kind if t.reason else None for t in turns]
    assert reasons == [
        "completed",
        "completed",
        "completed",
        "aborted",
        "completed",
        "aborted",
        "completed",
    ]
    first = turns[0]
    assert [s.step for s in first.steps] == [1, 2, 3]  # tool call (Continue), reply, steer
    assert [r.type for r in first.steps[0].items if isinstance(r, HostRecord)] == [
        "host/tool-call",
        "host/tool-result",
    ]
    assert [example.text_of(m) for m in first.steps[2].messages] == ["answer in French"]
    partial = [r for r in turns[3].steps[0].items if isinstance(r, HostRecord)]
    assert [dict(r.data)["partial"] for r in partial] == [True]  # type: ignore[arg-type]
    assert [example.text_of(m) for m in turns[4].steps[0].messages] == ["then a short one"]
    summaries = [b for b in blocks if isinstance(b, RecordsTranscript)]
    assert [r.type for b in summaries for r in b.records] == ["host/summary"]
    kinds = sorted(f.kind for f in fates(events).values())
    assert kinds.count("canceled") == 1  # "never mind this one" (R22)
    assert set(kinds) == {"admitted", "canceled"}
    assert any(line.startswith("fates:") for line in lines)
