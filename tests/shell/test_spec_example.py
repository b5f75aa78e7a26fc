"""specs/shell.md stays true: its embedding example runs, its JSON Lines sample decodes."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from inbox_core import (
    Cancel,
    InterruptedReason,
    TurnEnded,
    create_user_message,
    followup,
    replay,
)
from inbox_core.codec import event_from_json
from inbox_core.shell import from_json_lines

SPEC = Path(__file__).resolve().parents[2] / "specs" / "shell.md"


def section(title: str) -> str:
    text = SPEC.read_text(encoding="utf-8")
    start = text.index(f"## {title}")
    end = text.find("\n## ", start + 1)
    return text[start : end if end != -1 else len(text)]


def embedding_example() -> dict[str, Any]:
    [code] = re.findall(
        r"```python\n(.*?)```", section("Embedding the reducer without the shell"), re.S
    )
    namespace: dict[str, Any] = {"__name__": "spec_example"}
    exec(compile(code, str(SPEC), "exec"), namespace)  # the example asserts its own results
    return namespace


def test_R14_R16_I5_embedding_example_runs() -> None:
    """R14, R16, R19, I5: the README example drives a turn to idle and replays."""
    namespace = embedding_example()
    agent = namespace["agent"]
    assert agent.state.status == "idle"
    assert any(n["type"] == "agent/status" for n in agent.announced)


def test_R23_R27_embedding_example_cancel_and_resume() -> None:
    """R23, R27, D8: the example's agent aborts on Cancel and resumes a cut log."""
    namespace = embedding_example()
    embedded = namespace["EmbeddedAgent"]
    log: list[dict[str, Any]] = []
    agent = embedded(log)
    agent.apply(followup(create_user_message("x")))
    cut = list(log)  # a crash right after the claim
    agent.apply(Cancel())
    agent.run_until_idle(lambda turn, step: (_ for _ in ()).throw(AssertionError("model ran")))
    assert log[-1]["data"]["reason"] == {"kind": "aborted", "reason": {"kind": "user"}}
    resumed = embedded(cut)
    assert event_from_json(cut[3]) == TurnEnded(1, InterruptedReason())
    assert resumed.state.status == "running"  # the restored followup reopened a turn
    assert replay(event_from_json(e) for e in cut).projection() == resumed.state.projection()


def test_json_lines_sample_in_the_spec_decodes_and_replays() -> None:
    """Section Formats: the sample lines are valid JSON Lines of durable events."""
    sample = re.findall(r"^\{\"seq\".*$", section("9. Logs and ownership (SH9, R29)"), re.M)
    assert len(sample) == 3
    replay(from_json_lines("\n".join(sample)))
