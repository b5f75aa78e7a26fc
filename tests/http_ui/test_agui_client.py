"""AG-UI's own JavaScript client against a real ``inbox-core serve --http`` (R44):
``@ag-ui/client``'s ``HttpAgent``, installed with ``npm ci`` from the lockfile in
tests/http_ui/agui, run under node (``run.mjs``, ``say.mjs``). A followup, a steer into
the running turn, a queued message and a followup behind it, each a run of the client: the
events it took in (after its own checks of AG-UI's order, which would fail the run) are
validated against AG-UI's Python models (``ag-ui-protocol``) and read as what each run
should say. The speaking test host adds reasoning, a tool call and its result."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.http.agui_support import check_sequence, texts, validate
from tests.http_ui.node import missing, node
from tests.http_ui.served import Served

FIXTURE = Path(__file__).resolve().parent / "agui"


@pytest.fixture(scope="module")
def client() -> Path:
    """The fixture folder with its node_modules installed from the lockfile (``npm ci``)."""
    npm = shutil.which("npm")
    if npm is None:
        missing("npm")
    assert npm is not None
    node()
    done = subprocess.run(
        [npm, "ci", "--no-audit", "--no-fund"],
        cwd=FIXTURE,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return FIXTURE


def runs(client: Path, served: Served, agent: str, *said: dict[str, Any]) -> dict[int, Any]:
    """``run.mjs`` with one line per run: each run's events and how it ended."""
    lines = "".join(json.dumps(run) + "\n" for run in said)
    done = subprocess.run(
        [node(), "run.mjs", served.base, agent],
        cwd=client,
        input=lines,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:] + served.tail()
    out: dict[int, Any] = {run["run"]: {"events": []} for run in said}
    for line in done.stdout.splitlines():
        printed = json.loads(line)
        got = out[printed["run"]]
        if "event" in printed:
            got["events"].append(printed["event"])
        else:
            assert "error" not in printed, printed  # the client refused the run
            got["newMessages"] = printed["newMessages"]
    for got in out.values():
        validate(got["events"])
        check_sequence(got["events"])
    return out


def test_r44_agui_s_client_runs_a_followup_a_steer_and_a_queue(client: Path, serve: Any) -> None:
    served = serve(delay=2)  # each step lasts 2 s: the steer joins turn 1's next step
    got = runs(
        client,
        served,
        "ada",
        {"run": 1, "id": "u1", "text": "first", "wait": False},
        {"run": 2, "id": "u2", "text": "also this", "intent": "steer", "wait": False},
        {"run": 3, "id": "u3", "text": "later", "intent": "queue", "wait": False},
        {"run": 4, "id": "u4", "text": "and now"},
    )
    turn_one = {"turn-1-step-1-part-0": "echo: first", "turn-1-step-2-part-0": "echo: also this"}
    for run in (1, 2):  # the followup's turn, which the steer joined: from its start
        events = got[run]["events"]
        assert events[0] == {"type": "RUN_STARTED", "threadId": "ada", "runId": "1"}
        assert texts(events) == turn_one
        assert [e["stepName"] for e in events if e["type"] == "STEP_STARTED"] == [
            "step 1",
            "step 2",
        ]
        assert events[-1]["result"] == {"turn": 1, "reason": {"kind": "completed"}}
        said = [m["content"] for m in got[run]["newMessages"] if m["role"] == "assistant"]
        assert said == ["echo: first", "echo: also this"]
    # the queued message waited (the queue is state), then turn 2 took it, turn 3 the last
    queued = [
        e["snapshot"]["nextTurn"]
        for e in got[1]["events"]
        if e["type"] == "STATE_SNAPSHOT" and e["snapshot"]["nextTurn"]
    ]
    assert [[entry["message"]["id"] for entry in q] for q in queued][-1] == ["u3", "u4"]
    assert got[3]["events"][0]["runId"] == "2"
    assert texts(got[3]["events"]) == {"turn-2-step-1-part-0": "echo: later"}
    assert got[4]["events"][0]["runId"] == "3"
    assert texts(got[4]["events"]) == {"turn-3-step-1-part-0": "echo: and now"}
    log = served.events("ada")
    admitted = [e["data"]["id"] for e in log if e["type"] == "user/message"]
    assert admitted == ["u1", "u2", "u3", "u4"]  # each posted once, whatever was resent


def test_r44_agui_s_client_takes_reasoning_a_tool_call_and_an_error_end(
    client: Path, serve: Any
) -> None:
    served = serve(host="tests.http_ui.hosts:speaking")
    got = runs(
        client,
        served,
        "bo",
        {"run": 1, "id": "u1", "text": "weather?"},
        {"run": 2, "id": "u2", "text": "fail"},
    )
    events = got[1]["events"]
    kinds = [e["type"] for e in events]
    assert "REASONING_MESSAGE_CONTENT" in kinds
    assert "TOOL_CALL_RESULT" in kinds
    messages = got[1]["newMessages"]
    calls = [m for m in messages if m.get("toolCalls")]
    assert calls[0]["toolCalls"][0]["function"] == {
        "name": "weather",
        "arguments": '{"city": "Paris"}',
    }
    assert [m["content"] for m in messages if m["role"] == "tool"] == ["sunny"]
    assert [m["content"] for m in messages if m["role"] == "assistant" and m.get("content")] == [
        "Let me check the weather.",
        "echo: weather?",
    ]
    failed = got[2]["events"]
    assert failed[-1] == {
        "type": "RUN_ERROR",
        "message": "the model refused",
        "code": "model-error",
    }


def test_r44_a_node_script_prints_the_streamed_reply(client: Path, serve: Any) -> None:
    """README's AG-UI example: ``node say.mjs URL AGENT TEXT`` prints the reply."""
    served = serve(delay=1)
    done = subprocess.run(
        [node(), "say.mjs", served.base, "cy", "hello there"],
        cwd=client,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert (done.returncode, done.stdout, done.stderr) == (0, "echo: hello there\n", "")
