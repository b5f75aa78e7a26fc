"""README's "Running an OpenAI Agents SDK agent" and "Calling Anthropic's Messages API" programs
run verbatim offline and show what they claim (R46; R16, R17, R22-R24, R30, R43); changing
their one marked line to the real model, without a key, ends each turn with the error."""

from __future__ import annotations

import asyncio
import contextlib
import io
import re
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"

OPENAI_LINE = (
    '    model = ScriptedModel([ModelStep.respond(provider)] * 9)  # or: model = "gpt-5-mini"'
)
ANTHROPIC_LINE = (
    '    client = AsyncAnthropic(api_key="offline", http_client=offline)'
    "  # or: client = AsyncAnthropic()"
)


TOOL_ROUND = ["user", "function_call", "function_call_output", "assistant"]


def program(heading: str) -> str:
    text = README.read_text(encoding="utf-8")
    start = text.index(f"## {heading}")
    end = text.index("\n## ", start + 1)
    [code] = re.findall(r"```python\n(.*?)```", text[start:end], re.S)
    return code


def run(code: str) -> list[str]:
    """Run a program as ``python`` would, in a thread of its own (it calls ``asyncio.run``); what
    it prints."""
    printed = io.StringIO()

    def main() -> None:
        with contextlib.redirect_stdout(printed):
            exec(compile(code, str(README), "exec"), {"__name__": "readme_example"})

    async def bounded() -> None:
        await asyncio.wait_for(asyncio.to_thread(main), 120)

    asyncio.run(bounded())
    return printed.getvalue().splitlines()


def real(code: str, line: str) -> str:
    """The program with its marked line changed to what its comment says."""
    assert code.count(line) == 1
    indent, alternative = line[: len(line) - len(line.lstrip())], line.split("# or: ")[1]
    return code.replace(line, indent + alternative)


def test_r46_r17_r22_readme_openai_agents_program_steers_stops_and_restores() -> None:
    """R46, R16, R17, R22-R24, R30, R43: the README program, the SDK's ScriptedModel for the
    model: turn 1 calls the tool (step 1), answers (step 2: live output steers), takes the
    steer (step 3) and is stopped there with its reply kept; the followup that waited runs
    as turn 2; the items rebuilt from the log are the whole conversation."""
    pytest.importorskip("agents", reason="the openai-agents extra is not installed")
    code = program("Running an OpenAI Agents SDK agent")
    assert OPENAI_LINE in code
    assert run(code) == [
        "turn 1: aborted, 3 steps",
        "turn 2: completed, 2 steps",
        str([*TOOL_ROUND, "user", "assistant", *TOOL_ROUND]),
    ]


def test_r46_r17_r22_readme_anthropic_program_steers_stops_and_restores() -> None:
    """R46, R16, R17, R22-R24, R30, R43: the README program, the Messages API's events replayed
    through httpx2.MockTransport: the tool use, the steer, the stop mid-answer (its message
    kept with stop_reason None), the followup as turn 2."""
    pytest.importorskip("anthropic", reason="the anthropic extra is not installed")
    code = program("Calling Anthropic's Messages API")
    assert ANTHROPIC_LINE in code
    assert run(code) == [
        "turn 1: aborted, 3 steps",
        "turn 2: completed, 2 steps",
        "user None ['text']",
        "assistant tool_use ['tool_use']",
        "user None ['tool_result']",
        "assistant end_turn ['text']",
        "user None ['text']",
        "assistant None ['text']",
        "user None ['text']",
        "assistant tool_use ['tool_use']",
        "user None ['tool_result']",
        "assistant end_turn ['text']",
    ]


@pytest.mark.parametrize(
    ("module", "heading", "line", "error"),
    [
        (
            "agents",
            "Running an OpenAI Agents SDK agent",
            OPENAI_LINE,
            "OpenAIError: Missing credentials",
        ),
        (
            "anthropic",
            "Calling Anthropic's Messages API",
            ANTHROPIC_LINE,
            "Could not resolve authentication method",
        ),
    ],
    ids=["openai-agents", "anthropic"],
)
def test_r18_r33_r46_the_one_line_to_a_real_model_ends_every_turn_without_a_key(
    module: str, heading: str, line: str, error: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """R46, R18, R33: changing the marked line to its comment (the real model) is the only change
    a real run needs: without a key (no network is touched) each turn ends error, code
    model-error, saying why, and the program ends."""
    pytest.importorskip(module, reason=f"the {module} extra is not installed")
    for name in ("OPENAI_API_KEY", "OPENAI_ADMIN_KEY", "ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    lines: list[Any] = run(real(program(heading), line))
    turns = [each for each in lines if each.startswith("turn ")]
    assert len(turns) == 2
    for each in turns:
        assert each.startswith(
            ("turn 1: error, 1 steps (model-error: ", "turn 2: error, 1 steps (model-error: ")
        )
        assert error in each
