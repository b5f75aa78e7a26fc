"""Project-level checks: pinned names, pure-core imports, README/CI, spec tables."""

from __future__ import annotations

import ast
import importlib.util
import re
import tomllib
from pathlib import Path

import pytest

import inbox_core

ROOT = Path(__file__).resolve().parent.parent
PURE_CORE = [
    "values",
    "json_values",
    "errors",
    "commands",
    "events",
    "sequence",
    "validators",
    "inbox",
    "state",
    "reducer",
    "replay",
    "checkpoint",
    "history",
    "wire",
    "wire_types",
    "codec",
    "protocol",
    "limits",
    "json_text",
]
FORBIDDEN = {
    "asyncio",
    "time",
    "random",
    "io",
    "os",
    "sys",
    "sqlite3",
    "socket",
    "threading",
    "subprocess",
    "secrets",
    "datetime",
    "pathlib",
    "logging",
    "inbox_core.shell",
}

PINNED = """
MessageId UserMessage create_user_message UserSource PluginSource GoalSource ToolSource
AgentSource ExtensionSource is_human_prompt Entry NextTurnInput SteerInput InjectInput
ResolvedAgentInput Send Splice Replace Remove Move Cancel Dispose Resume PreStepDecided
PreStepFailed StepFinished TurnStoppingDone Enter Reject Continue Completed MaxTokens
Failed UserCause ParentCause HookCause DisposedCause AgentState AwaitPreStep AwaitStep
AwaitTurnStopping reduce Transition replay goal_rounds InboxCoreError DuplicateMessageId
InvalidInput InvalidSplice SteerUnavailable UnexpectedReport AgentDisposed ResumeRequired
ReplayError event_to_json event_from_json notification_to_json message_to_json
message_from_json Agent fates BeginMaintenance EndMaintenance MaintenanceUnavailable
LogOwned LogFenced transcript HopLimit
""".split()  # noqa: SIM905


def test_pinned_public_names_are_exported() -> None:
    """Brief section 9: every pinned name is importable from inbox_core and in __all__."""
    missing = [name for name in PINNED if name not in inbox_core.__all__]
    assert missing == []
    for name in inbox_core.__all__:
        assert hasattr(inbox_core, name), name


SHELL_PINNED = """
LoopAgent Host AbortSignal MemoryLog SqliteLog PostgresLog LogOwned LogFenced
SqliteStore PostgresStore Receipt PostPending PostApplied PostRejected
""".split()  # noqa: SIM905


def test_pinned_shell_names_are_exported() -> None:
    """Brief section 9 (v2) and v3 (R35): the shell's pinned names (``Worker`` comes with
    R37), LogOwned/LogFenced InboxCoreErrors."""
    from inbox_core import shell

    assert [name for name in SHELL_PINNED if name not in shell.__all__] == []
    assert issubclass(shell.LogOwned, inbox_core.InboxCoreError)
    assert issubclass(shell.LogFenced, inbox_core.InboxCoreError)
    for method in ("detach", "run_maintenance", "followup", "when_idle", "aclose"):
        assert callable(getattr(shell.LoopAgent, method))


def test_pure_core_imports_no_io_clock_or_randomness() -> None:
    """The reducer and its values never import asyncio, time, random or I/O modules."""
    offenders = []
    for module in PURE_CORE:
        tree = ast.parse((ROOT / "inbox_core" / f"{module}.py").read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            offenders += [
                f"{module}: {n}"
                for n in names
                if n.split(".")[0] in FORBIDDEN or n.startswith("inbox_core.shell")
            ]
    assert offenders == []


def _readme_commands() -> list[str]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    block = re.search(r"```(?:sh|bash|console)?\n(.*?)```", text, re.S)
    assert block is not None, "README must open with a code block of commands"
    return [line.strip() for line in block.group(1).splitlines() if line.strip()]


def test_readme_opens_with_demo_and_test_commands() -> None:
    commands = _readme_commands()
    assert len(commands) >= 2
    assert commands[0].endswith("inbox-core demo")
    assert "nox -s tests" in commands[1]


def test_ci_runs_the_readme_test_command() -> None:
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert _readme_commands()[1] in ci.splitlines()
    assert "set -euo pipefail" in ci


def _rule_table_module():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("rule_table", ROOT / "tools" / "rule_table.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_rule_is_specified_and_tested() -> None:
    """specs/spec.md states every rule of ``rule_table.RULES`` and the rule table cites at
    least one test each."""
    spec = (ROOT / "specs" / "spec.md").read_text(encoding="utf-8")
    module = _rule_table_module()
    for rule in module.RULES:
        assert f"**{rule} —" in spec, f"{rule} is not stated in specs/spec.md"
    cited = module.citations()
    untested = [rule for rule in module.RULES + module.INVARIANTS if not cited.get(rule)]
    assert untested == []


def test_rule_table_is_fresh() -> None:
    """Run `python tools/rule_table.py` after adding or renaming tests."""
    assert _rule_table_module().main(["--check"]) == 0


def _tool(name: str):  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location(name, ROOT / "tools" / f"{name}.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_phase_diagram_and_table_are_generated_from_the_reducer() -> None:
    """The diagram and transition table in specs/spec.md and README come from
    ``reducer.TRANSITIONS`` (run `python tools/phase_table.py` after changing it)."""
    assert _tool("phase_table").main(["--check"]) == 0


def test_readme_figures_are_generated_from_the_baseline() -> None:
    """README's figures come from benchmarks/baseline.json (run `python tools/figures.py`
    after a new baseline), so no number in the README is restated by hand."""
    assert _tool("figures").main(["--check"]) == 0


def test_testing_md_names_the_modules_mutation_testing_mutates() -> None:
    """specs/testing.md §7 names exactly the files pyproject's ``[tool.mutmut] only_mutate``
    lists (the mutated modules and the coverage gate, noxfile.py), with their count."""
    with (ROOT / "pyproject.toml").open("rb") as f:
        only = tomllib.load(f)["tool"]["mutmut"]["only_mutate"]
    text = " ".join((ROOT / "specs" / "testing.md").read_text(encoding="utf-8").split())
    found = re.search(r"mutates the (\d+) pure-core modules `only_mutate` lists \(([^;]*);", text)
    assert found, "specs/testing.md §7 no longer says which modules mutmut mutates"
    named = re.findall(r"`(\w+)`", found.group(2))
    assert [f"inbox_core/{name}.py" for name in named] == only
    assert int(found.group(1)) == len(only)


def test_decision_and_rule_references_exist() -> None:
    """Docs cite only decisions that specs/decisions.md defines and rules of the brief."""
    decisions = (ROOT / "specs" / "decisions.md").read_text(encoding="utf-8")
    defined = {int(n) for n in re.findall(r"^- D(\d+)\b", decisions, re.M)}
    assert defined, "specs/decisions.md defines no decision"
    docs = [ROOT / "README.md", *sorted((ROOT / "specs").glob("*.md"))]
    for doc in docs:
        text = doc.read_text(encoding="utf-8")
        for low, high in re.findall(r"\bD(\d+)[\u2013-]D(\d+)\b", text):
            assert int(high) <= max(defined), f"{doc.name} cites D{low}-D{high}"
        for n in re.findall(r"\bD(\d+)\b", text):
            assert int(n) in defined, f"{doc.name} cites D{n}, which decisions.md does not define"
        for n in re.findall(r"\bR(\d+)\b", text):
            assert 1 <= int(n) <= _rule_table_module().LAST_RULE, f"{doc.name} cites R{n}"


def test_readme_python_examples_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """README's examples (the shell, and embedding the reducer) run as written."""
    monkeypatch.chdir(tmp_path)
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    assert len(blocks) >= 2
    for block in blocks:
        extras = {"pydantic_ai": "pydantic_ai", "openai_agents": "agents", "anthropic": "anthropic"}
        if any(
            f"integrations.{name}" in block and importlib.util.find_spec(module) is None
            for name, module in extras.items()
        ):
            continue  # needs that extra (tests/integrations skip without it too)
        exec(compile(block, "README.md", "exec"), {"__name__": "readme_example"})
    assert (tmp_path / "agent.db").exists()


def test_readme_sending_example_runs_both_turns_to_their_end(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """README "Sending from any process" (R35, R34): the guarded post it says ran does run:
    alice's log ends both turns ``completed`` (the example once disposed turn 2 at once)."""
    from inbox_core import TurnEnded
    from inbox_core.shell import SqliteLog

    monkeypatch.chdir(tmp_path)
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    (block,) = [b for b in re.findall(r"```python\n(.*?)```", text, re.S) if "mail.db" in b]
    exec(compile(block, "README.md", "exec"), {"__name__": "readme_example"})
    with SqliteLog(tmp_path / "mail.db", agent_id="alice") as log:
        ends = [e for e in log.read() if isinstance(e, TurnEnded)]
    assert [(e.turn, e.reason.kind) for e in ends] == [(1, "completed"), (2, "completed")]
