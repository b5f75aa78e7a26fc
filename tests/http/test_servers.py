"""The front door as real server processes (R39, with R27, R29, R35, R36, R37): ``inbox-core
serve --http`` with the echo host, ``inbox-core http`` replicas over one PostgreSQL store with
a worker beside them, a worker killed mid-turn, the loopback rule and ``inbox-core token``."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from inbox_core import event_to_json, fates, replay
from inbox_core.shell import PostApplied, Receipt, SqliteStore
from inbox_core.testing import check_durable_log

from .servers import ECHO, Child, EventReader, children, port, request, wait_serving
from .support import AnyStore, agent_name

FOLLOWUP = {"message": {"content": "hello"}}


def ended(kind: str, turn: int = 1) -> Any:
    def check(events: list[dict[str, Any]]) -> bool:
        return any(
            e["type"] == "turn/end"
            and e["data"]["turn"] == turn
            and e["data"]["reason"]["kind"] == kind
            for e in events
        )

    return check


def contiguous(events: list[dict[str, Any]]) -> bool:
    return [e["seq"] for e in events] == list(range(len(events)))


def test_r39_serve_http_with_the_echo_host_answers_a_followup_and_streams_the_turn(
    tmp_path: Path,
) -> None:
    db = tmp_path / "agents.db"
    at = port()
    with children() as started:
        serve = Child(
            tmp_path,
            "serve",
            "serve",
            f"sqlite:{db}",
            "--host",
            ECHO,
            "--http",
            f"127.0.0.1:{at}",
            env={"INBOX_CORE_ECHO_DELAY": "0.3"},
        )
        started.append(serve)
        wait_serving(at, serve)
        stream = EventReader(at, "/v1/agents/alice/events")
        status, headers, answer = request(
            at, "POST", "/v1/agents/alice/followup", FOLLOWUP, {"Prefer": "wait=20"}
        )
        assert status == 200, answer
        assert answer["outcome"] == {"kind": "applied"}
        assert answer["agent"] == "alice"
        assert headers["location"] == f"/v1/agents/alice/posts/{answer['post']}"
        events = stream.until(ended("completed"))
        agent = request(at, "GET", "/v1/agents/alice")[2]
        metrics = request(at, "GET", "/metrics")[2]
        stream.close()
        assert serve.stop() == 0
    types = [e["type"] for e in events]
    assert types[:2] == ["agent/inbox/spliced", "turn/start"]
    assert "step/start" in types
    assert contiguous(events)
    assert agent["status"] == "idle"
    assert agent["lastTurn"] == 1
    assert agent["seq"] == len(events)
    assert "inbox_core_worker_opened 1.0" in metrics  # the worker's statistics, same process
    assert "inbox_core_http_event_streams" in metrics


@pytest.mark.parametrize("command", ["http", "serve"])
def test_r39_a_store_with_no_token_refuses_a_bind_beyond_loopback_exit_2(
    tmp_path: Path, command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    store = f"sqlite:{tmp_path / 'agents.db'}"
    where = f"0.0.0.0:{port()}"
    if command == "http":
        args = ["http", store, "--bind", where]
    else:
        args = ["serve", store, "--host", ECHO, "--http", where]
    status, out, err = run_cli(capsys, *args)
    assert status == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert "no token" in lines[0]
    assert "loopback" in lines[0]
    assert out == ""


def run_cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """``inbox-core ARGS`` in this process: (exit status, stdout, stderr)."""
    from inbox_core.cli import main

    capsys.readouterr()
    status = main(list(args))
    out, err = capsys.readouterr()
    return status, out, err


def test_r39_token_add_prints_the_token_alone_and_a_public_server_asks_for_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = f"sqlite:{tmp_path / 'agents.db'}"
    status, out, err = run_cli(
        capsys, "token", "add", store, "web", "--scopes", "read,post", "--agents", "team/*"
    )
    assert status == 0, err
    token = out.strip()
    assert out == token + "\n"  # alone on standard output
    assert token.startswith("ict_")
    status, listed, _ = run_cli(capsys, "token", "list", store)
    assert status == 0
    assert token not in listed
    assert listed.startswith("web\tread,post\tteam/*\t")
    assert run_cli(capsys, "token", "add", store, "web")[0] == 1  # the name is taken
    assert run_cli(capsys, "token", "add", store, "x", "--scopes", "write")[0] == 2
    at = port()
    bearer = {"Authorization": f"Bearer {token}"}
    with children() as started:
        http = Child(tmp_path, "http", "http", store, "--bind", f"0.0.0.0:{at}")
        started.append(http)
        wait_serving(at, http)
        refused = request(at, "GET", "/v1/agents/team%2Fa")
        allowed = request(at, "GET", "/v1/agents/team%2Fa", headers=bearer)
        outside = request(at, "GET", "/v1/agents/other", headers=bearer)
        assert run_cli(capsys, "token", "revoke", store, "web")[0] == 0
        time.sleep(2.5)  # revocation: within 5 s (a server trusts a lookup for 2 s)
        revoked = request(at, "GET", "/v1/agents/team%2Fa", headers=bearer)
        assert http.stop() == 0
    assert refused[0] == 401
    assert refused[1]["www-authenticate"].startswith("Bearer")
    assert allowed[0] == 200
    assert outside[0] == 403
    assert revoked[0] == 401  # and the server stays closed: it listens beyond loopback
    assert run_cli(capsys, "token", "revoke", store, "web")[0] == 1


def test_r39_r35_two_http_replicas_over_one_postgresql_store_and_one_worker(
    tmp_path: Path, pg: str
) -> None:
    from inbox_core.shell import PostgresStore
    from tests.shell.posts_support import pg_url

    url = pg_url(pg)
    agent = agent_name()
    a, b = port(), port()
    with children() as started:
        replicas = [
            Child(tmp_path, f"http-{n}", "http", url, "--bind", f"127.0.0.1:{p}")
            for n, p in ((1, a), (2, b))
        ]
        worker = Child(tmp_path, "worker", "serve", url, "--host", ECHO)
        started += [*replicas, worker]
        for child, at in zip(replicas, (a, b), strict=True):
            wait_serving(at, child)
        streams = [EventReader(at, f"/v1/agents/{agent}/events") for at in (a, b)]
        first = request(
            a,
            "POST",
            f"/v1/agents/{agent}/followup",
            FOLLOWUP,
            {"Prefer": "wait=20", "Idempotency-Key": "k1"},
        )
        second = request(b, "POST", f"/v1/agents/{agent}/followup", FOLLOWUP, {"Prefer": "wait=20"})
        again = request(
            b,
            "POST",
            f"/v1/agents/{agent}/followup",
            {"message": {"content": "x"}},
            {"Idempotency-Key": "k1"},
        )
        seen = [s.until(ended("completed", 2)) for s in streams]
        for s in streams:
            s.close()
        for child in started:
            assert child.stop() == 0
    assert first[0] == second[0] == 200
    assert again[0] == 200
    assert again[2] == first[2]  # the retry on the other replica: the first post, applied
    assert [e["seq"] for e in seen[0]] == [e["seq"] for e in seen[1]]
    assert contiguous(seen[0])
    store = PostgresStore(pg)
    try:
        log = store.log(agent).read()
        for answer in (first[2], second[2]):
            assert store.outcome(Receipt(agent, answer["post"])) == PostApplied()
    finally:
        store.close()
    kinds = {mid: type(f).__name__ for mid, f in fates(log).items()}
    assert kinds == {first[2]["messageId"]: "AdmittedFate", second[2]["messageId"]: "AdmittedFate"}
    check_durable_log(log)


def _spec(backend: str, tmp_path: Path, request_: pytest.FixtureRequest) -> tuple[str, AnyStore]:
    if backend == "sqlite":
        path = tmp_path / "agents.db"
        return f"sqlite:{path}", SqliteStore(path)
    from inbox_core.shell import PostgresStore
    from tests.shell.posts_support import pg_url

    conninfo = request_.getfixturevalue("pg")
    return pg_url(conninfo), PostgresStore(conninfo)


@pytest.mark.parametrize("backend", ["sqlite", pytest.param("postgres", marks=pytest.mark.slow)])
def test_r39_r27_a_worker_killed_mid_turn_streams_turn_end_interrupted_then_the_rest(
    tmp_path: Path, backend: str, request: pytest.FixtureRequest
) -> None:
    from .servers import request as http

    spec, store = _spec(backend, tmp_path, request)
    agent = agent_name()
    at = port()
    lease = ["--lease-seconds", "1"] if backend == "postgres" else []
    with children() as started:
        front = Child(tmp_path, "http", "http", spec, "--bind", f"127.0.0.1:{at}")
        doomed = Child(
            tmp_path,
            "worker-1",
            "serve",
            spec,
            "--host",
            ECHO,
            *lease,
            env={"INBOX_CORE_ECHO_DELAY": "60"},
        )
        started += [front, doomed]
        wait_serving(at, front)
        streams = [EventReader(at, f"/v1/agents/{agent}/events") for _ in range(2)]
        assert (
            http(at, "POST", f"/v1/agents/{agent}/followup", FOLLOWUP, {"Prefer": "wait=20"})[0]
            == 200
        )
        for s in streams:
            s.until(lambda events: any(e["type"] == "step/start" for e in events))
        queued = http(at, "POST", f"/v1/agents/{agent}/followup", {"message": {"content": "next"}})
        assert queued[0] == 202
        doomed.kill()  # kill -9 in the middle of turn 1's step
        heir = Child(tmp_path, "worker-2", "serve", spec, "--host", ECHO, "--poll-seconds", "0.2")
        started.append(heir)
        seen = [s.until(ended("completed", 2), timeout=60) for s in streams]
        for s in streams:
            s.close()
        assert heir.stop() == 0
        assert front.stop() == 0
    log = store.log(agent).read()
    store.close()
    for events in seen:
        assert contiguous(events)  # no gap, nothing twice
        types = [(e["type"], e["data"].get("reason", {}).get("kind")) for e in events]
        interrupted = types.index(("turn/end", "interrupted"))
        assert ("turn/start", None) in types[interrupted:]  # then the rest: turn 2 runs
        assert [{k: e[k] for k in ("type", "data")} for e in events] == [
            event_to_json(event) for event in log[: len(events)]
        ]
    check_durable_log(log)
    assert replay(log).status == "idle"
