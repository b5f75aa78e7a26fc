"""Conformance vectors: stored files equal the generator's output and pass the runner.

If a test here fails after a change to the reference or to the scenarios,
re-run ``python tools/gen_vectors.py`` and review the diff of specs/vectors.
"""

from __future__ import annotations

import copy
import difflib
import json
import re
from pathlib import Path
from typing import Any

import pytest

from inbox_core.vectors import (
    VectorFormatError,
    check_vector,
    dump_vector,
    first_difference,
    read_vector,
    run_vector,
    vector_files,
)
from tools import gen_vectors
from tools.vectorkit import REGISTRY, ScenarioError, Script, m

ROOT = Path(__file__).resolve().parents[2]
VECTORS = ROOT / "specs" / "vectors"
FILES = vector_files(VECTORS)
REGEN = "re-run `python tools/gen_vectors.py` and review the diff of specs/vectors"


@pytest.fixture(scope="module")
def generated() -> dict[str, str]:
    return gen_vectors.generate()


def _doc(name: str) -> dict[str, Any]:
    return read_vector(VECTORS / f"{name}.json")  # type: ignore[no-any-return]


def test_stored_vectors_equal_the_reference(generated: dict[str, str]) -> None:
    """Drift check: every stored vector is exactly what the reference produces now."""
    stored = {path.name: path.read_text(encoding="utf-8") for path in FILES}
    missing = sorted(set(generated) - set(stored))
    extra = sorted(set(stored) - set(generated))
    assert not missing, f"vectors not written: {missing}; {REGEN}"
    assert not extra, f"vectors without a scenario: {extra}; {REGEN}"
    for name, text in generated.items():
        if stored[name] != text:
            diff = "\n".join(
                difflib.unified_diff(
                    stored[name].splitlines(),
                    text.splitlines(),
                    f"specs/vectors/{name} (stored)",
                    f"{name} (reference now)",
                    lineterm="",
                    n=2,
                )
            )
            pytest.fail(f"{name} is stale; {REGEN}\n{diff[:4000]}")


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_vector_passes(path: Path) -> None:
    doc = read_vector(path)
    assert doc["name"] == path.stem, "a vector file is named after the vector"
    result = run_vector(doc)
    assert result.passed, f"{result.problem}\n{result.detail}"


def test_at_least_sixty_vectors() -> None:
    assert len(FILES) >= 60


NOT_IN_VECTORS = {
    "R29": "log ownership is the stores' business (tests/shell), not the reducer's",
    "D25": "message equality is a Python value question; JSON documents cannot show it",
}


def test_every_rule_and_decision_is_cited_by_a_vector() -> None:
    """Brief v2: R1-R33 and decisions D1-D30, but for what a reducer vector cannot show."""
    cited = {rule for path in FILES for rule in read_vector(path)["rules"]}
    wanted = {f"R{n}" for n in range(1, 34)} | {f"D{n}" for n in range(1, 31)}
    wanted -= set(NOT_IN_VECTORS)
    assert sorted(wanted - cited, key=lambda r: (r[0], int(r[1:]))) == []
    assert cited.isdisjoint(NOT_IN_VECTORS)


def test_every_command_type_and_error_appears() -> None:
    """Every command of the codec's JSON form and every typed rejection (R34's included)
    occurs in a vector."""
    kinds: set[str] = set()
    errors: set[str] = set()
    for path in FILES:
        for step in read_vector(path)["commands"]:
            kinds.add(step["command"]["type"])
            if "error" in step:
                errors.add(step["error"])
    assert kinds == {
        "send", "splice", "clear", "replace", "remove", "move", "cancel", "dispose", "resume",
        "begin-maintenance", "end-maintenance",
        "pre-step-decided", "pre-step-failed", "step-finished", "turn-stopping-done",
    }  # fmt: skip
    assert errors == {
        "DuplicateMessageId", "InvalidInput", "InvalidSplice", "SteerUnavailable",
        "UnexpectedReport", "AgentDisposed", "ResumeRequired", "MaintenanceUnavailable",
        "DecodeError", "AgentBusy", "TurnMismatch",
    }  # fmt: skip


def test_v2_outputs_appear() -> None:
    """Every v2 output occurs in a vector: turn/abort (R23), host records in commands and
    logs (R30), agent/error with and without a step (R33), status maintenance (R31), and
    every fate kind and transcript block in a final (R30, R32)."""
    durable: set[str] = set()
    notes: set[str] = set()
    statuses: set[str] = set()
    error_steps: set[bool] = set()
    fate_kinds: set[str] = set()
    blocks: set[str] = set()
    with_records: set[str] = set()
    for path in FILES:
        doc = read_vector(path)
        for step in doc["commands"]:
            if step["command"].get("records") and "error" not in step:
                with_records.add(step["command"]["type"])
            for event in step.get("durable", []):
                durable.add("host/*" if event["type"].startswith("host/") else event["type"])
            for note in step.get("notifications", []):
                notes.add(note["type"])
                if note["type"] == "agent/status":
                    statuses.add(note["data"]["status"])
                if note["type"] == "agent/error":
                    error_steps.add(note["data"]["step"] is None)
        final = doc.get("final", {})
        fate_kinds |= {fate["kind"] for fate in final.get("fates", {}).values()}
        blocks |= {block["kind"] for block in final.get("transcript", [])}
    assert {"turn/abort", "host/*"} <= durable
    assert "agent/error" in notes
    assert error_steps == {True, False}
    assert statuses == {"idle", "running", "maintenance"}
    assert with_records == {
        "pre-step-decided", "pre-step-failed", "step-finished", "turn-stopping-done",
        "end-maintenance",
    }  # fmt: skip
    assert fate_kinds == {"pending", "claimed", "admitted", "canceled", "dropped", "consumed"}
    assert blocks == {"turn", "records"}


def test_messages_carry_explicit_ids() -> None:
    """Vectors are deterministic: no minted (uuid) message ids."""
    uuid = re.compile(r'"id": "[0-9a-f]{8}-[0-9a-f]{4}-')
    assert [p.name for p in FILES if uuid.search(p.read_text(encoding="utf-8"))] == []


# --------------------------------------------------------------- the runner


def test_broken_vector_fails_with_a_readable_diff() -> None:
    """R21: dropping the cancel-requested notice makes the vector fail at that step."""
    doc = copy.deepcopy(_doc("cancel-keep-inbox"))
    index = next(i for i, s in enumerate(doc["commands"]) if s["command"]["type"] == "cancel")
    doc["commands"][index]["notifications"] = []
    result = run_vector(doc)
    assert not result.passed
    assert result.problem == (
        f"step {index} (cancel) differs from the reference at notifications[0]"
    )
    assert result.detail.startswith('command: {"type":"cancel"')
    assert "--- expected (vector)" in result.detail
    assert "+++ actual (reference)" in result.detail
    assert '+      "type": "agent/cancel-requested"' in result.detail


def test_wrong_error_name_fails() -> None:
    """R8: the vector says SteerUnavailable; claiming another error must not pass."""
    doc = copy.deepcopy(_doc("inbox-move-promote-idle-unavailable"))
    doc["commands"][1]["error"] = "InvalidInput"
    result = run_vector(doc)
    assert not result.passed
    assert '-  "error": "InvalidInput"' in result.detail
    assert '+  "error": "SteerUnavailable"' in result.detail


def test_comparison_is_strict_json() -> None:
    """1 is not true: canonical JSON comparison, not Python equality."""
    doc = copy.deepcopy(_doc("delivery-followup-idle"))
    doc["commands"][0]["durable"][0]["data"]["inserted"][0]["wakeup"] = 1
    result = run_vector(doc)
    assert not result.passed
    assert result.problem.endswith("at durable[0].data.inserted[0].wakeup")


def test_final_projection_mismatch_names_the_keys() -> None:
    doc = copy.deepcopy(_doc("delivery-followup-idle"))
    doc["final"]["lastTurn"] = 7
    doc["final"]["status"] = "running"
    result = run_vector(doc)
    assert result.problem == "final projection differs in status, lastTurn"
    assert '-  "lastTurn": 7' in result.detail


def test_final_folds_are_checked() -> None:
    """R32, R30: a vector's fates and transcript are compared like the projection."""
    doc = copy.deepcopy(_doc("fates-every-kind"))
    doc["final"]["fates"]["c"] = {"kind": "canceled"}
    result = run_vector(doc)
    assert result.problem == "final projection differs in fates"
    assert '-      "kind": "canceled"' in result.detail
    doc = copy.deepcopy(_doc("records-on-every-report"))
    doc["final"]["transcript"] = doc["final"]["transcript"][1:]
    assert run_vector(doc).problem == "final projection differs in transcript"


def test_folds_are_optional_in_a_final() -> None:
    """A vector states the folds only when it pins them; ones without fold keys still pass."""
    doc = copy.deepcopy(_doc("fates-every-kind"))
    del doc["final"]["fates"]
    assert run_vector(doc).passed
    plain = copy.deepcopy(_doc("delivery-followup-idle"))
    assert "fates" not in plain["final"]
    assert "transcript" not in plain["final"]


def test_final_projection_may_omit_optional_keys() -> None:
    """A port's vector may check only the required projection keys."""
    doc = copy.deepcopy(_doc("cancel-keep-inbox"))
    doc["final"] = {k: doc["final"][k] for k in ("status", "lastTurn", "nextTurn", "nextStep")}
    assert run_vector(doc).passed


def test_replay_error_vectors_check_the_seq() -> None:
    """R10: the seed must be rejected exactly at the stated seq."""
    doc = copy.deepcopy(_doc("replay-rejects-turn-number-gap"))
    assert run_vector(doc).passed
    doc["replayError"]["seq"] = 0
    result = run_vector(doc)
    assert not result.passed
    assert "expects seq 0" in result.problem
    good = copy.deepcopy(_doc("resume-crash-mid-step"))
    bad = {k: v for k, v in good.items() if k not in ("commands", "final")}
    bad |= {"commands": [], "replayError": {"seq": 1}}
    assert "seed replays" in run_vector(bad).problem


def test_undecodable_seed_fails() -> None:
    """An undecodable seed event is refused at its index like one replay refuses (ports.md,
    ``load``): a failure, or the vector's expected ``replayError``."""
    doc = copy.deepcopy(_doc("resume-crash-mid-step"))
    doc["seed"][1]["data"] = {"turn": "one"}
    result = run_vector(doc)
    assert not result.passed
    assert result.problem.startswith("seed does not replay: event 1: the event does not decode")
    doc["seed"][1] = {"type": ["turn/start"], "data": {"turn": 1}}  # codec TypeError workaround
    assert "durable event: type must be" in run_vector(doc).problem
    refused = {k: v for k, v in doc.items() if k not in ("commands", "final")}
    assert run_vector({**refused, "commands": [], "replayError": {"seq": 1}}).passed


def test_reference_exceptions_fail_the_vector(monkeypatch: pytest.MonkeyPatch) -> None:
    """A non-typed exception of the reference fails the vector instead of crashing the run."""
    from inbox_core import vectors

    def broken(state: Any, command: Any) -> Any:
        raise KeyError("boom")

    monkeypatch.setattr(vectors, "apply_step", broken)
    result = run_vector(copy.deepcopy(_doc("inbox-clear")))
    assert not result.passed
    assert result.problem == "step 0: the reference raised KeyError: 'boom'"


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda d: d.pop("final"), "final"),
        (lambda d: d.update(extra=1), "unknown keys ['extra']"),
        (lambda d: d["commands"][0].update(error="X"), "an error step has no"),
        (lambda d: d["commands"][0].pop("durable"), "durable and notifications"),
        (lambda d: d["commands"][0].update(command="send"), "command must be an object"),
        (lambda d: d.update(rules="R1"), "rules"),
        (lambda d: d["final"].update(colour="red"), "final: unknown keys"),
        (lambda d: d["final"].pop("nextStep"), "final: missing ['nextStep']"),
        (lambda d: d.update(replayError={"seq": 0}), "replayError"),
    ],
)
def test_malformed_vector_documents_are_reported(change: Any, message: str) -> None:
    doc = copy.deepcopy(_doc("delivery-followup-idle"))
    change(doc)
    with pytest.raises(VectorFormatError, match=re.escape(message)):
        check_vector(doc)
    result = run_vector(doc)
    assert not result.passed
    assert result.problem.startswith("not a vector:")


def test_first_difference_paths() -> None:
    assert first_difference({"a": [1, {"b": 2}]}, {"a": [1, {"b": 3}]}) == "a[1].b"
    assert first_difference({"a": 1}, {"a": 1, "c": 2}) == "c"
    assert first_difference([1], [1, 2]) == "[1]"
    assert first_difference(1, 2) == "<root>"


def test_dumped_vectors_round_trip() -> None:
    doc = _doc("inbox-clear")
    assert json.loads(dump_vector(doc)) == doc
    assert dump_vector(doc).endswith("}\n")


# ------------------------------------------------------------ the generator


def test_generator_check_mode(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert gen_vectors.main(["--out", str(tmp_path)]) == 0
    assert len(list(tmp_path.glob("*.json"))) == len(FILES)
    assert gen_vectors.main(["--check", "--out", str(tmp_path)]) == 0
    (tmp_path / "inbox-clear.json").write_text("{}\n", encoding="utf-8")
    (tmp_path / "stale.json").write_text("{}\n", encoding="utf-8")
    assert gen_vectors.main(["--check", "--out", str(tmp_path)]) == 1
    out = capsys.readouterr().out
    assert "inbox-clear.json, stale.json" in out
    assert "run: python tools/gen_vectors.py" in out
    assert gen_vectors.main(["--out", str(tmp_path)]) == 0
    assert not (tmp_path / "stale.json").exists()


def test_scenario_raises_must_match_the_reference() -> None:
    """R4: a scenario that says success where the reference rejects stops generation."""
    script = Script("t", "", ["R4"])
    script.queue("a")
    with pytest.raises(ScenarioError, match="expected success, the reference gave Duplicate"):
        script.queue("a")
    with pytest.raises(
        ScenarioError, match="expected SteerUnavailable, the reference gave success"
    ):
        script.queue(m("b"), raises="SteerUnavailable")


@pytest.mark.parametrize(
    "scenario",
    [s for s in REGISTRY if s.blocked_by is not None],
    ids=lambda s: s.name,
)
@pytest.mark.xfail(strict=True, reason="blocked by a known reference bug (see blocked_by)")
def test_blocked_scenarios_still_fail(scenario: Any) -> None:
    """R25/D5: a blocked scenario is kept out of specs/vectors while the reference fails it.

    When this XPASSes the reference was fixed: drop ``blocked_by`` and regenerate.
    """
    scenario.build()
