"""README's "Steering a pydantic-ai agent" program and examples/pydantic_ai_agent.py run
offline and show what they claim (R8, R16, R17, R22-R24, R27, R30, R31; the example's
``make_host`` is a worker's factory, R37)."""

from __future__ import annotations

import ast
import asyncio
import contextlib
import importlib.util
import io
import re
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

pytest.importorskip("pydantic_ai", reason="the pydantic-ai extra is not installed")

from pydantic_ai.exceptions import ModelHTTPError
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart
from pydantic_ai.models import Model
from pydantic_ai.models.function import AgentInfo, FunctionModel

from inbox_core import (
    RecordsTranscript,
    TurnTranscript,
    create_user_message,
    fates,
    transcript,
)
from inbox_core.integrations.pydantic_ai import SUMMARY
from inbox_core.shell import LoopAgent, SqliteLog

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
EXAMPLE = ROOT / "examples" / "pydantic_ai_agent.py"


def readme_program() -> str:
    text = README.read_text(encoding="utf-8")
    start = text.index("## Steering a pydantic-ai agent")
    end = text.index("\n## ", start + 1)
    [code] = re.findall(r"```python\n(.*?)```", text[start:end], re.S)
    return code


def test_r16_r17_r22_readme_program_steers_and_stops_a_pydantic_ai_agent() -> None:
    """R8, R16, R17, R22-R24, R30: the README program, with a FunctionModel for the provider:
    turn 1 calls the tool (step 1), answers (step 2), takes the steer (step 3) and is stopped
    mid-answer with its partial reply kept; the followup that waited runs as turn 2."""
    code = readme_program()
    assert len([line for line in code.splitlines() if line.strip()]) <= 45  # about 35 lines
    assert MODEL_LINE in code
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(compile(code, str(README), "exec"), {"__name__": "readme_example"})
    assert printed.getvalue().splitlines() == [
        "turn 1: aborted, 3 steps",
        "turn 2: completed, 2 steps",
        "request complete ['user-prompt']",
        "response complete ['tool-call']",
        "request complete ['tool-return']",
        "response complete ['text']",
        "request complete ['user-prompt']",
        "response interrupted ['text']",
        "request complete ['user-prompt']",
        "response complete ['tool-call']",
        "request complete ['tool-return']",
        "response complete ['text']",
    ]


MODEL_LINE = 'model = FunctionModel(stream_function=provider)  # or: model = "'


async def refused(messages: list[ModelMessage], info: AgentInfo) -> AsyncIterator[str]:
    """A provider refusing the key, as a real model name with a bad key does."""
    raise ModelHTTPError(401, "gpt-5-mini", body={"error": "Incorrect API key provided"})
    yield "never"  # pragma: no cover


async def plain(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """A model that cannot stream: it answers every request at once, without tools."""
    return ModelResponse(parts=[TextPart("Fine.")])


async def run_readme_with(model: Model) -> list[str]:
    """The README program with ``model`` for its ``model =`` line; what it prints. Its
    ``main()`` is awaited under a generous bound, so a program that hangs fails the test."""
    code = (
        readme_program().replace(MODEL_LINE, "model = MODEL  # ").replace("asyncio.run(main())", "")
    )
    namespace: dict[str, Any] = {"__name__": "readme_example", "MODEL": model}
    exec(compile(code, str(README), "exec"), namespace)
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        await asyncio.wait_for(namespace["main"](), 60)
    return printed.getvalue().splitlines()


@pytest.mark.parametrize(
    ("model", "expected"),
    [
        (
            FunctionModel(stream_function=refused),
            [
                "turn 1: error, 1 steps (model-error: ModelHTTPError: status_code: 401, "
                "model_name: gpt-5-mini, body: {'error': 'Incorrect API key provided'})",
                "turn 2: error, 1 steps (model-error: ModelHTTPError: status_code: 401, "
                "model_name: gpt-5-mini, body: {'error': 'Incorrect API key provided'})",
                "request complete ['user-prompt']",
                "request complete ['user-prompt']",
            ],
        ),
        (
            FunctionModel(function=plain),
            [
                "turn 1: completed, 1 steps",
                "turn 2: completed, 1 steps",
                "request complete ['user-prompt']",
                "response complete ['text']",
                "request complete ['user-prompt']",
                "response complete ['text']",
            ],
        ),
    ],
    ids=["bad-key", "no-streaming"],
)
def test_r18_r33_readme_program_ends_and_shows_the_error_whatever_the_model_does(
    model: Model, expected: list[str]
) -> None:
    """R18, R33 (issue 28 item 22): with a model that fails every request (a bad key), the
    README program ends and prints each turn's error (it used to wait forever for a reply
    that never streamed); with a model that cannot stream and never calls the tool, it
    ends too."""
    assert asyncio.run(run_readme_with(model)) == expected


def load_example() -> ModuleType:
    spec = importlib.util.spec_from_file_location("pydantic_ai_agent", EXAMPLE)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_r27_r30_r31_example_runs_offline_restarts_and_compacts(tmp_path: Path) -> None:
    """R27, R30, R31 (and R17, R22): the example's offline variant: a tool step and a steer
    in one turn, a stopped turn whose followup runs next, a restart that restores the whole
    history from the SQLite log, and a compaction the next request starts from."""
    example = load_example()
    assert example.MODEL == example.OFFLINE  # the one line to change for a real provider
    lines: list[str] = []
    path = tmp_path / "agent.db"
    kinds = asyncio.run(
        example.main(example.offline_model(latency=0.002), path=str(path), out=lines.append)
    )
    assert kinds == ["request", "request", "response"]  # the summary, then the last turn
    (kept,) = [line for line in lines if line.startswith("  kept the stopped answer: ")]
    stopped = ast.literal_eval(kept.removeprefix("  kept the stopped answer: "))
    whole = "About 'Tell me the history of Rome.': here is a rather long answer, told one word "
    assert stopped.startswith("About ")  # stopped mid-answer, what was said kept
    assert whole.startswith(stopped)
    assert len(stopped) < len(whole)
    assert "  restored 12 messages" in lines
    assert "  history: ['request']" in lines
    assert any(line.startswith("  [turn 1, step 3] About 'Also say whether") for line in lines)

    events = SqliteLog(path).read()
    blocks = transcript(events)
    turns = [
        (b.turn, b.reason.kind if b.reason else None, len(b.steps))
        for b in blocks
        if isinstance(b, TurnTranscript)
    ]
    assert turns == [
        (1, "completed", 3),
        (2, "aborted", 1),
        (3, "completed", 2),
        (4, "completed", 1),
        (5, "completed", 1),
    ]
    between = [b for b in blocks if isinstance(b, RecordsTranscript)]
    assert [[r.type for r in b.records] for b in between] == [[SUMMARY]]
    assert {fate.kind for fate in fates(events).values()} == {"admitted"}


def test_r16_example_takes_a_model_name(tmp_path: Path) -> None:
    """R16: pointing the example at a model name goes through pydantic-ai's infer_model
    ("test" is its TestModel, which calls every tool and then answers)."""
    example = load_example()
    lines: list[str] = []
    kinds = asyncio.run(example.main("test", path=str(tmp_path / "t.db"), out=lines.append))
    assert kinds[0] == "request"
    assert "4. compaction: one summary replaces the history" in lines


@pytest.mark.parametrize(
    "model", [FunctionModel(stream_function=refused), FunctionModel(function=plain)]
)
def test_r18_r33_example_ends_and_shows_the_error_whatever_the_model_does(
    tmp_path: Path, model: Model
) -> None:
    """R18, R33 (item 22): the example ends with a model that fails every request (each
    turn's error shown, the failed compaction too) and with one that cannot stream."""
    example = load_example()
    lines: list[str] = []
    main = example.main(model, path=str(tmp_path / "agent.db"), out=lines.append)
    asyncio.run(asyncio.wait_for(main, 60))
    assert lines[-1].startswith("  fates: ")
    turns = [line for line in lines if line.startswith("  turn ")]
    assert turns
    if model.stream_function is not None:  # type: ignore[attr-defined]
        assert all(": error, " in line or ": aborted, " in line for line in turns)
        assert "(model-error: ModelHTTPError: status_code: 401" in turns[0]
        assert turns[0].endswith("Incorrect API key provided'})")
        assert any(line.startswith("  compaction failed: ModelHTTPError") for line in lines)
    else:
        assert not [line for line in turns if ": error, " in line]


def test_r37_make_host_is_a_factory_importable_as_the_docstring_says(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """R37 (``FACTORY(agent_id)`` returns the agent's ``Host``), R30: with examples/ on
    ``sys.path`` (``inbox-core serve`` puts the current directory there, as ``python -m``
    does), ``pydantic_ai_agent:make_host`` resolves by the name the example's docstring
    gives; each call builds a new host, one conversation per agent, all sharing one model."""
    doc = load_example().__doc__ or ""
    commands = re.findall(r"^\s*(.*inbox-core serve .*)$", doc, re.M)
    assert [command.split(" inbox-core")[0] for command in commands] == [
        "cd examples &&",  # run from examples/
        "PYTHONPATH=examples",  # run from the repository root
    ]
    [target] = {command.split("--host ")[1].split()[0] for command in commands}
    module_name, factory_name = target.split(":")
    monkeypatch.syspath_prepend(str(EXAMPLE.parent))
    monkeypatch.delitem(sys.modules, module_name, raising=False)
    factory = getattr(importlib.import_module(module_name), factory_name)
    alice, bob = factory("alice"), factory("bob")
    assert alice is not bob
    assert alice.model is bob.model  # resolved once for every agent (shared_model)

    async def serve_alice() -> None:
        agent = LoopAgent(alice)
        agent.followup(create_user_message("hello"))
        await agent.when_idle()
        await agent.aclose()

    asyncio.run(serve_alice())
    assert [message.kind for message in alice.history] == ["request", "response"]
    assert bob.history == []
