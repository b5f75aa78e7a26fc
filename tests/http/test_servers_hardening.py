"""The front door's hardening as real server processes (R39, D43-D45; issue 37 items 1, 4-7
and 11): raw requests naming another host, connections that send nothing or part of a head,
a thousand idle connections against a descriptor limit, a signal while a post waits, heads
announcing the largest body, and the command line's refusals."""

from __future__ import annotations

import contextlib
import json
import resource
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from inbox_core import limits
from inbox_core.http.defaults import HEAD_SECONDS

from .servers import ECHO, Child, children, port, request, wait_serving
from .test_servers import run_cli

FOLLOWUP = {"message": {"content": "hello"}}


def raw(at: int, data: bytes, timeout: float = 30) -> tuple[int, dict[str, str], bytes]:
    """``data`` written as is on a new connection; the answer's status, headers and body
    (``(0, {}, b"")`` for a connection closed with no answer)."""
    with socket.create_connection(("127.0.0.1", at), timeout=timeout) as sock:
        sock.sendall(data)
        received = b""
        with contextlib.suppress(ConnectionResetError):
            while chunk := sock.recv(65536):
                received += chunk
    if not received:
        return 0, {}, b""
    head, _, body = received.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    fields = [line.split(": ", 1) for line in lines[1:]]
    headers = {name.lower(): value for name, value in fields}
    return int(lines[0].split()[1]), headers, body


def closed_by_server(sock: socket.socket, timeout: float) -> bool:
    """Whether the server closes ``sock`` within ``timeout`` s (a generous bound, never a
    measure: the test only asks that it happens)."""
    sock.settimeout(timeout)
    try:
        while sock.recv(65536):  # the rest of an answer, if any
            pass
    except (ConnectionResetError, BrokenPipeError):
        return True
    except TimeoutError:
        return False
    return True


@contextlib.contextmanager
def http_server(
    tmp_path: Path, *args: str, nofile: int | None = None
) -> Iterator[tuple[int, Child]]:
    """``inbox-core http`` over a fresh SQLite store on loopback (and ``args``)."""
    at = port()
    store = f"sqlite:{tmp_path / 'agents.db'}"
    with children() as started:
        child = Child(
            tmp_path, "http", "http", store, "--bind", f"127.0.0.1:{at}", *args, nofile=nofile
        )
        started.append(child)
        wait_serving(at, child)
        yield at, child


# ---------------------------------------------------------------- item 1: the Host


def _get(path: str, host: bytes, version: bytes = b"1.1") -> bytes:
    return (
        b"GET "
        + path.encode()
        + b" HTTP/"
        + version
        + b"\r\nHost: "
        + host
        + b"\r\nConnection: close\r\n\r\n"
    )


def test_r39_d43_a_server_with_no_token_answers_only_its_loopback_names(tmp_path: Path) -> None:
    """Issue 37 item 1 against a real server, as ``curl -H 'Host: evil.example'`` and a raw
    client send it: every spelling of another host is refused and no post is written (on
    c46a0f0 the read was 200 and the post 202)."""
    with http_server(tmp_path) as (at, child):
        here = f"127.0.0.1:{at}".encode()
        ours = [
            raw(at, _get("/v1/agents", host))[0]
            for host in (here, f"localhost:{at}".encode(), f"LOCALHOST:{at}".encode())
        ]
        refused = {
            host: raw(at, _get("/v1/agents", host))[0]
            for host in (
                b"evil.example",
                f"evil.example:{at}".encode(),
                f"localhost.:{at}".encode(),  # trailing dot
                b"localhost",  # no port
                f"[::ffff:127.0.0.1]:{at}".encode(),
                f"127.1:{at}".encode(),
                f"::1:{at}".encode(),  # no brackets
            )
        }
        absolute_evil = raw(
            at, b"GET http://evil.example/v1/agents HTTP/1.1\r\nHost: " + here + b"\r\n\r\n"
        )
        absolute_ours = raw(
            at, b"GET http://" + here + b"/v1/agents HTTP/1.1\r\nHost: evil.example\r\n\r\n"
        )
        absolute_fine = raw(
            at,
            b"GET http://"
            + here
            + b"/v1/agents HTTP/1.1\r\nHost: "
            + here
            + b"\r\nConnection: close\r\n\r\n",
        )
        http10 = raw(at, b"GET http://evil.example/v1/agents HTTP/1.0\r\n\r\n")
        twice = raw(
            at, b"GET /v1/agents HTTP/1.1\r\nHost: " + here + b"\r\nHost: evil.example\r\n\r\n"
        )
        body = json.dumps(FOLLOWUP).encode()
        posted = raw(
            at,
            b"POST /v1/agents/victim/followup HTTP/1.1\r\nHost: evil.example:"
            + str(at).encode()
            + b"\r\nContent-Type: application/json\r\nContent-Length: "
            + str(len(body)).encode()
            + b"\r\nConnection: close\r\n\r\n"
            + body,
        )
        victim = request(at, "GET", "/v1/agents/victim")[2]
        assert child.stop() == 0
    assert ours == [200, 200, 200]
    assert set(refused.values()) <= {400, 421}, refused
    assert refused[b"evil.example"] == refused[f"localhost.:{at}".encode()] == 421
    assert refused[f"::1:{at}".encode()] == 400
    assert absolute_evil[0] == absolute_ours[0] == 421
    assert absolute_fine[0] == 200
    assert http10[0] == 421
    assert twice[0] == 400
    assert twice[1]["content-type"] == "application/problem+json"  # h11 refused it: ours too
    assert posted[0] == 421
    assert posted[1]["content-type"] == "application/problem+json"
    assert victim["pendingPosts"] == 0


# -------------------------------------------------- item 4: slow and silent clients


def test_r39_d44_a_connection_must_send_its_head_in_time(tmp_path: Path) -> None:
    """Issue 37 item 4: a connection that sends nothing, or trickles a head a line at a
    time, is closed once ``--head-timeout`` passes (on c46a0f0 never); one that asks in
    time is answered, and an idle kept-alive one is closed too."""
    with http_server(tmp_path, "--head-timeout", "1") as (at, child):
        silent = socket.create_connection(("127.0.0.1", at))
        trickling = socket.create_connection(("127.0.0.1", at))
        trickling.sendall(b"GET /healthz HTTP/1.1\r\n")
        stop = threading.Event()

        def trickle() -> None:
            with contextlib.suppress(OSError):
                while not stop.wait(0.2):
                    trickling.sendall(b"X-Slow: 1\r\n")

        feeder = threading.Thread(target=trickle, daemon=True)
        feeder.start()
        kept = socket.create_connection(("127.0.0.1", at))
        kept.sendall(f"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:{at}\r\n\r\n".encode())
        kept.settimeout(30)
        answered = kept.recv(12)
        try:
            closed = [closed_by_server(sock, 60) for sock in (silent, trickling, kept)]
        finally:
            stop.set()
            for sock in (silent, trickling, kept):
                sock.close()
        fine = request(at, "GET", "/healthz")
        assert child.stop() == 0
    assert closed == [True, True, True]  # silent, trickling, idle after its answer
    assert answered.startswith(b"HTTP/1.1 200")
    assert fine[0] == 200


def test_r39_d44_a_thousand_idle_connections_leave_room_for_a_client(tmp_path: Path) -> None:
    """Issue 37 item 4: 1,100 connections that send nothing, against a server whose
    descriptor limit is 256, do not keep a client out: the server keeps at most its bound
    (here 16, the limit less its headroom), closes the connection that waited longest for a
    head to make room, and still has descriptors for its store (on c46a0f0 accept failed
    with EMFILE and nobody could connect)."""
    with http_server(tmp_path, nofile=256) as (at, child):
        idle = []
        try:
            for _ in range(1100):
                idle.append(socket.create_connection(("127.0.0.1", at), timeout=30))
            answers = [request(at, "POST", "/v1/agents/a/queue", FOLLOWUP, timeout=30)[0]]
            answers.append(request(at, "GET", "/v1/agents/a", timeout=30)[0])
        finally:
            for sock in idle:
                sock.close()
        assert child.stop() == 0
    assert answers == [202, 200]


def test_d44_a_server_raises_its_soft_descriptor_limit_within_the_hard_one() -> None:
    """D44: a shell's soft limit (often 1,024) is not the system's bound: a server raises
    it to 4,096 where the hard limit allows, never past the hard one."""
    script = (
        "import resource; from inbox_core.http.serving import raise_descriptor_limit;"
        " raise_descriptor_limit(); print(*resource.getrlimit(resource.RLIMIT_NOFILE))"
    )
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    ceiling = min(8192, hard if hard != resource.RLIM_INFINITY else 8192)
    for start, limit in ((256, 256), (1024, ceiling), (5000, ceiling)):
        if start > limit:  # a machine whose hard limit is below 5,000
            continue
        done = subprocess.run(
            [
                "sh",
                "-c",
                f'ulimit -S -n {start} && ulimit -H -n {limit} && exec "$0" -c "$1"',
                sys.executable,
                script,
            ],
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        )
        now, hard_now = (int(x) for x in done.stdout.split())
        assert hard_now == limit
        assert now == max(start, min(4096, limit)), (start, limit, done.stdout)


def test_d44_the_default_head_timeout_is_10_s_and_the_bound_keeps_headroom() -> None:
    from inbox_core.http.serving import FrontServer, default_max_connections

    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    assert HEAD_SECONDS == 10
    assert FrontServer.__init__.__kwdefaults__["head_seconds"] == HEAD_SECONDS  # type: ignore[index]
    assert 16 <= default_max_connections() <= min(2048, max(16, soft - max(256, soft // 4)))


# ------------------------------------------------------------- item 5: at a signal


def test_r39_issue37_at_sigterm_a_waiting_post_is_202_and_a_cut_one_a_503_problem(
    tmp_path: Path,
) -> None:
    """Issue 37 item 5: SIGTERM while a durable post waits for its outcome (nobody serves
    the agent) answers it at once: 202 pending with its ``Location`` (on c46a0f0, 500 in
    text/plain after the 5 s grace); a request still reading its body when the grace runs
    out is a 503 problem; the server exits 0."""
    with http_server(tmp_path) as (at, child):
        answers: dict[str, Any] = {}

        def waiting() -> None:
            answers["wait"] = request(
                at, "POST", "/v1/agents/w/followup", FOLLOWUP, {"Prefer": "wait=60"}, timeout=60
            )

        def slow_body() -> None:
            answers["slow"] = raw(
                at,
                f"POST /v1/agents/s/queue HTTP/1.1\r\nHost: 127.0.0.1:{at}\r\n"
                "Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{".encode(),
                timeout=60,
            )

        threads = [threading.Thread(target=waiting), threading.Thread(target=slow_body)]
        for thread in threads:
            thread.start()
        while request(at, "GET", "/v1/agents/w")[2]["pendingPosts"] != 1:
            time.sleep(0.05)
        time.sleep(0.2)  # the slow body's head is in
        status = child.stop(timeout=60)
        for thread in threads:
            thread.join(60)
    assert status == 0, child.stderr()
    wait_status, headers, body = answers["wait"]
    assert wait_status == 202
    assert body["outcome"] == {"kind": "pending"}
    assert headers["location"] == f"/v1/agents/w/posts/{body['post']}"
    slow_status, slow_headers, slow_answer = answers["slow"]
    assert slow_status == 503
    assert slow_headers["content-type"] == "application/problem+json"
    assert json.loads(slow_answer)["status"] == 503


# ------------------------------------------------------- item 6: heads of fat bodies


def test_r39_issue37_heads_announcing_the_largest_body_hold_no_one_elses_budget(
    tmp_path: Path,
) -> None:
    """Issue 37 item 6: two connections that send only a head with the largest
    ``Content-Length`` leave other clients their posts (on c46a0f0 every post was 429)."""
    head = (
        "POST /v1/agents/a/queue HTTP/1.1\r\nHost: 127.0.0.1:{at}\r\nContent-Type:"
        f" application/json\r\nContent-Length: {limits.MAX_DOCUMENT_SIZE}\r\n\r\n"
    )
    with http_server(tmp_path) as (at, child):
        holders = [socket.create_connection(("127.0.0.1", at)) for _ in range(2)]
        try:
            for sock in holders:
                sock.sendall(head.format(at=at).encode())
            time.sleep(0.3)
            answer = request(at, "POST", "/v1/agents/a/queue", FOLLOWUP)
        finally:
            for sock in holders:
                sock.close()
        assert child.stop() == 0
    assert answer[0] == 202


# ------------------------------------------------- item 7 and the front door options


@pytest.mark.parametrize("origin", ["*", "null"])
@pytest.mark.parametrize("command", ["http", "serve"])
def test_r39_issue37_cors_origin_star_without_a_token_is_a_usage_error(
    tmp_path: Path, command: str, origin: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 37 item 7: ``--cors-origin '*'`` (or ``null``) on a store with no token would
    let any page read and post; the command refuses to start (exit 2, one line)."""
    store = f"sqlite:{tmp_path / 'agents.db'}"
    where = f"127.0.0.1:{port()}"
    args = (
        ["http", store, "--bind", where]
        if command == "http"
        else ["serve", store, "--host", ECHO, "--http", where]
    )
    status, out, err = run_cli(
        capsys, *args, "--cors-origin", "https://ok.example", "--cors-origin", origin
    )
    assert status == 2
    assert len(err.strip().splitlines()) == 1, err
    assert "no token" in err
    assert out == ""


@pytest.mark.parametrize(
    "options",
    [
        ["--cors-origin", "https://app.example/"],
        ["--allowed-host", "*"],
        ["--allowed-host", "a b"],
        ["--agents-per-minute", "-1"],
        ["--max-connections", "0"],
        ["--head-timeout", "0"],
    ],
)
def test_r39_issue37_a_front_door_option_out_of_range_is_a_usage_error(
    tmp_path: Path, options: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    store = f"sqlite:{tmp_path / 'agents.db'}"
    status, _, err = run_cli(capsys, "http", store, "--bind", f"127.0.0.1:{port()}", *options)
    assert status == 2, err


def test_r39_issue37_front_door_options_go_with_serve_http(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = f"sqlite:{tmp_path / 'agents.db'}"
    status, _, err = run_cli(capsys, "serve", store, "--host", ECHO, "--allowed-host", "x")
    assert status == 2
    assert "--allowed-host goes with --http" in err


def test_r39_issue37_with_a_token_cors_star_serves_and_always_asks_for_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """With a token ``--cors-origin '*'`` serves, and keeps asking for a token after the
    last one is revoked (the app is public, like a server bound beyond loopback)."""
    store = f"sqlite:{tmp_path / 'agents.db'}"
    status, token, _ = run_cli(capsys, "token", "add", store, "web")
    assert status == 0
    at = port()
    with children() as started:
        http = Child(
            tmp_path, "http", "http", store, "--bind", f"127.0.0.1:{at}", "--cors-origin", "*"
        )
        started.append(http)
        wait_serving(at, http)
        bearer = {"Authorization": f"Bearer {token.strip()}"}
        allowed = request(at, "GET", "/v1/agents/a", headers=bearer)
        assert run_cli(capsys, "token", "revoke", store, "web")[0] == 0
        time.sleep(2.5)  # a server trusts a lookup for 2 s
        after = request(at, "GET", "/v1/agents/a")
        assert http.stop() == 0
    assert allowed[0] == 200
    assert after[0] == 401


def test_r39_d45_http_pending_per_agent_bounds_posts(tmp_path: Path) -> None:
    """Issue 37 item 11 through the command line: ``http --pending-per-agent 1``."""
    with http_server(tmp_path, "--pending-per-agent", "1", "--agents-per-minute", "2") as (
        at,
        child,
    ):
        first = request(at, "POST", "/v1/agents/a/queue", FOLLOWUP)
        second = request(at, "POST", "/v1/agents/a/queue", FOLLOWUP)
        new_b = request(at, "POST", "/v1/agents/b/queue", FOLLOWUP)
        new_c = request(at, "POST", "/v1/agents/c/queue", FOLLOWUP)
        assert child.stop() == 0
    assert first[0] == 202
    assert second[0] == 429
    assert int(second[1]["retry-after"]) >= 1
    assert new_b[0] == 202
    assert new_c[0] == 429
    assert second[2]["title"] == new_c[2]["title"] == "Too Many Requests"
