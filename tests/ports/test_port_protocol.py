"""specs/ports.md pins what a port author could only learn from vectors (issue 33), and the
kit is bounded whatever a port does (R38 v4).

The reference port answers as pinned: ``hello`` takes an integer protocol only (issue 28
item 26); ``NaN`` and ``Infinity`` are not JSON; ``load`` of log records checks their seq
and answers ``ReplayError`` at the first event that does not decode, is misnumbered or
does not replay, leaving the agent as it was; ``fold`` answers the same for such a log;
``records: null`` reads as absent; the projection's ``disposed``, ``openStep`` and
``awaiting``. The kit stops a port that stops reading, writes an endless line or floods
its standard error, within ``--timeout`` and a fixed amount of memory.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from inbox_core import limits
from inbox_core.port.client import STDERR_TAIL, PortFailure, PortProcess
from inbox_core.port.protocol import ProtocolError, check_response, decode
from inbox_core.port.server import ReferencePort, serve
from tests.ports.hostile_port import FLOOD

ROOT = Path(__file__).resolve().parents[2]


def hostile(mode: str) -> str:
    return f"{sys.executable} -m tests.ports.hostile_port {mode}"


def M(name: str) -> dict[str, Any]:  # a message document
    return {"id": name, "role": "user", "content": [], "source": {"kind": "user"}}


def send(name: str, wakeup: bool = True) -> dict[str, Any]:
    return {"type": "send", "input": {"message": M(name), "contexts": [],
                                      "target": "next-turn", "wakeup": wakeup}}  # fmt: skip


# -------------------------------------------------------------------- the pins


@pytest.mark.parametrize("protocol", [True, 1.0, "1", None, [1]])
def test_issue28_26_hello_takes_an_integer_protocol_only(protocol: object) -> None:
    answer = ReferencePort().handle({"op": "hello", "protocol": protocol})
    assert answer["ok"] is False
    assert answer["error"] == "ProtocolError"
    assert ReferencePort().handle({"op": "hello", "protocol": 1})["ok"] is True
    assert ReferencePort().handle({"op": "hello", "protocol": 2})["error"] == "ProtocolError"
    answer = {"ok": True, "protocol": protocol, "name": "p", "parts": ["inbox"]}
    with pytest.raises(ProtocolError):  # nor does the kit take one from a port
        check_response("hello", answer)


@pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity"])
def test_r38_nan_and_infinity_on_a_request_line_are_not_json(constant: str) -> None:
    line = '{"op":"apply","command":{"type":"send","input":{"message":{"id":"a","role":"user",'
    line += f'"content":[{{"n":{constant}}}],"source":{{"kind":"user"}}}},"contexts":[],'
    line += '"target":"next-turn","wakeup":true}}}'
    with pytest.raises(ProtocolError, match="not JSON"):
        decode(line)
    assert decode('{"op":"projection","x":"NaN and Infinity in a string"}')["x"].startswith("NaN")
    out = _serve([b'{"op":"hello","protocol":1}', line.encode(), b'{"op":"projection"}'])
    assert [a["ok"] for a in out] == [True, False, True]
    assert out[1]["error"] == "ProtocolError"


def _serve(lines: list[bytes]) -> list[dict[str, Any]]:
    import io

    output = io.StringIO()
    serve(ReferencePort(), io.BytesIO(b"\n".join(lines) + b"\n"), output)
    return [json.loads(line) for line in output.getvalue().splitlines()]


def _load(port: ReferencePort, log: list[Any]) -> dict[str, Any]:
    return port.handle({"op": "load", "log": log})


LOG = [
    {"type": "agent/inbox/spliced", "data": {"target": "next-turn", "start": 0, "inserted": [
        {"message": M("a"), "contexts": [], "wakeup": False}]}},
    {"type": "agent/inbox/spliced", "data": {"target": "next-turn", "start": 1, "inserted": [
        {"message": M("b"), "contexts": [], "wakeup": False}]}},
]  # fmt: skip


def test_r38_load_of_log_records_checks_their_seq() -> None:
    """A record may carry its seq (a stored log): it must be its position, else the log is
    refused at that record, and the agent stays as it was."""
    port = ReferencePort()
    numbered = [{"seq": seq, **event} for seq, event in enumerate(LOG)]
    assert _load(port, numbered)["ok"] is True
    assert [e["message"]["id"] for e in _load(port, LOG)["projection"]["nextTurn"]] == ["a", "b"]
    before = port.handle({"op": "projection"})
    for seqs, at in (((0, 2), 1), ((1, 1), 0), ((0, "1"), 1), ((0, True), 1)):
        records = [{"seq": seq, **event} for seq, event in zip(seqs, LOG, strict=True)]
        refused = _load(port, records)
        assert (refused["error"], refused["seq"]) == ("ReplayError", at), seqs
        assert port.handle({"op": "projection"}) == before


def test_r38_load_answers_replay_error_at_the_first_event_it_cannot_take() -> None:
    """An event that does not decode (its shape or a value) is refused like one replay
    refuses, at its index; the first bad event wins whatever its kind."""
    port = ReferencePort()
    undecodable = {"type": "turn/start", "data": {"turn": "1"}}
    value = {"type": "turn/start", "data": {"turn": 0}}
    unreplayable = {"type": "turn/start", "data": {"turn": 5}}
    cases = [
        ([*LOG, undecodable], 2),
        ([*LOG, value], 2),
        ([LOG[0], unreplayable, undecodable], 1),  # replay refuses event 1 first
        ([LOG[0], LOG[0]], 1),  # a duplicated event: the same id twice (R4)
        ([LOG[1]], 0),  # start 1 in an empty list
    ]
    for log, seq in cases:
        refused = _load(port, log)
        assert (refused["error"], refused["seq"]) == ("ReplayError", seq), log


def test_r38_fold_of_a_log_that_does_not_replay_is_its_replay_error() -> None:
    port = ReferencePort()
    folded = port.handle({"op": "fold", "log": LOG})
    assert folded["ok"] is True
    assert set(folded) == {"ok", "fates", "transcript", "goalRounds"}
    refused = port.handle({"op": "fold", "log": [LOG[1]]})
    assert (refused["error"], refused["seq"]) == ("ReplayError", 0)


def test_r38_records_null_reads_as_absent() -> None:
    port = ReferencePort()
    assert port.handle({"op": "apply", "command": send("a")})["ok"]
    report = {"type": "pre-step-decided", "turn": 1, "step": 1,
              "decision": {"kind": "reject"}, "records": None}  # fmt: skip
    assert port.handle({"op": "apply", "command": report})["ok"] is True


def test_r38_the_projection_keys_a_port_author_asked_about() -> None:
    """``openStep`` is null at the pre-step and at turn-stopping (no step is open);
    ``awaiting`` is null for a turn a crash left open (Orphaned: Resume first);
    ``disposed`` is true from the dispose on, while the turn it aborted still closes."""
    port = ReferencePort()

    def apply(command: dict[str, Any]) -> dict[str, Any]:
        assert port.handle({"op": "apply", "command": command})["ok"], command
        return port.handle({"op": "projection"})["projection"]

    seen = apply(send("a"))
    assert (seen["openTurn"], seen["openStep"], seen["awaiting"]["kind"]) == (1, None, "pre-step")
    enter = {"type": "pre-step-decided", "turn": 1, "step": 1,
             "decision": {"kind": "enter", "messages": [M("a")]}}  # fmt: skip
    seen = apply(enter)
    assert (seen["openStep"], seen["awaiting"]) == (1, {"kind": "step", "turn": 1, "step": 1})
    seen = apply({"type": "step-finished", "turn": 1, "step": 1, "outcome": {"kind": "completed"}})
    assert (seen["openTurn"], seen["openStep"]) == (1, None)
    assert seen["awaiting"] == {"kind": "turn-stopping", "turn": 1}
    crashed = ReferencePort()  # a log that ends with turn 1 open: a crash
    events = [{"type": "agent/inbox/spliced", "data": {"target": "next-turn", "start": 0,
               "inserted": [{"message": M("a"), "contexts": [], "wakeup": True}]}},
              {"type": "turn/start", "data": {"turn": 1}}]  # fmt: skip
    seen = _load(crashed, events)["projection"]
    assert (seen["openTurn"], seen["awaiting"], seen["status"]) == (1, None, "running")
    seen = apply({"type": "dispose"})
    assert seen["disposed"] is True
    assert seen["openTurn"] == 1  # the aborted turn closes at the host's next report


# ------------------------------------------------------------------ the bounds


def test_r38_v4_a_port_that_stops_reading_a_large_request_fails_within_the_timeout(
    tmp_path: Path,
) -> None:
    """A request larger than a pipe holds (a vector with a 4 MB seed) to a port that reads
    nothing after the handshake: exit 2 within about the timeout, saying so."""
    big = {"type": "host/blob", "data": "x" * 4_000_000}
    final = {"status": "idle", "lastTurn": 0, "nextTurn": [], "nextStep": []}
    vector = {"name": "big", "rules": ["R38"], "seed": [big], "commands": [], "final": final}
    (tmp_path / "big.json").write_text(json.dumps(vector), encoding="utf-8")
    done = subprocess.run(  # a kit blocked on the write would pass the subprocess timeout
        [sys.executable, "-m", "inbox_core", "conform", "--port", hostile("deaf"),
         "--vectors", str(tmp_path), "--timeout", "2"],
        capture_output=True, text=True, cwd=ROOT, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert "stopped reading its input" in done.stderr


def test_r38_v4_an_endless_line_is_a_protocol_error_at_the_line_limit() -> None:
    """The kit holds at most one line of ``max_line`` bytes: a port writing a line without
    end is a protocol error when the line passes it (maxDocumentSize in the CLI)."""
    with PortProcess(hostile("endless"), max_line=1 << 20) as port:
        port.handshake()
        with pytest.raises(PortFailure, match="longer than"):
            port.call("projection")


def test_r38_v4_only_the_tail_of_a_flooded_standard_error_is_kept() -> None:
    """A port writing megabytes to standard error: the kit keeps its last STDERR_TAIL
    bytes, and the port, which answers as the reference does, still agrees."""
    with PortProcess(hostile("flood")) as port:
        port.handshake()
        for _ in range(40):  # 40 x FLOOD bytes to stderr
            assert port.call("projection")["ok"] is True
        assert FLOOD * 40 > 4 * STDERR_TAIL  # a port blocks on a full pipe: most is read
        assert STDERR_TAIL <= len(port.stderr_tail()) <= STDERR_TAIL


@pytest.mark.slow
def test_r38_v4_an_endless_line_through_the_cli_stays_within_max_document_size() -> None:
    """The command line against a port writing an endless line: exit 2, and the kit's
    peak memory stays within maxDocumentSize and a margin (measured on its process)."""
    code = (
        "import resource, subprocess, sys\n"
        "done = subprocess.run([sys.executable, '-m', 'inbox_core', 'conform', '--port',"
        f" {hostile('endless')!r}, '--no-vectors', '--examples', '1'], capture_output=True)\n"
        "print(done.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
        "sys.stderr.write(done.stderr.decode())"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=600,
        check=False,
    )
    status, peak_kib = map(int, done.stdout.split())
    assert status == 2, done.stderr
    assert "longer than" in done.stderr
    assert peak_kib * 1024 < limits.MAX_DOCUMENT_SIZE + 300 * 2**20


def test_r38_malformed_documents_never_share_the_kit_s_own_values() -> None:
    """A malformed document is changed by several faults in a row; an added value was the
    kit's own ``OTHERS`` object, so a later fault wrote into it: the kit's constant drifted
    between runs, and seeds 1 and 8 built a document with a cycle (conform died with a
    traceback). Every fault works on copies."""
    import copy
    import json
    import random

    from inbox_core.port import generate

    before = copy.deepcopy(generate.OTHERS)
    rng = random.Random(1)
    for _ in range(3000):
        doc = {"type": "followup", "data": {"a": [1, {"b": 2}], "c": {}}}
        for _ in range(6):
            doc = generate._change(rng, doc, inbox=False)
        json.dumps(doc)  # no cycle
    assert before == generate.OTHERS
