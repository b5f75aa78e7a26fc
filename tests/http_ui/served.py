"""A real ``inbox-core serve STORE --host inbox_core.shell.echo:echo_host --http`` process
for the inspector's browser tests: one command runs the agents, the API and the page
(R39), with the echo host holding each step ``INBOX_CORE_ECHO_DELAY`` seconds (honouring
its abort signal) so a test can act while a turn runs."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any
from urllib.parse import quote

from tests.http_ui.node import ROOT

ECHO_HOST = "inbox_core.shell.echo:echo_host"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    """``inbox-core ARGS``, checked."""
    return subprocess.run(
        [sys.executable, "-m", "inbox_core", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )


class Served:
    """One store served by one process at a fixed port, which survives a restart."""

    def __init__(self, directory: Path, *, delay: float = 0.0, host: str = ECHO_HOST) -> None:
        self.store = f"sqlite:{directory / 'agents.db'}"
        self.port = free_port()
        self.delay = delay
        self.host = host
        self.log_path = directory / "serve.log"
        self.process: subprocess.Popen[bytes] | None = None
        self.token: str | None = None  # the bearer token of this test's own API calls

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def page(self, agent: str | None = None) -> str:
        """The inspector's URL, on agent ``agent``'s page (``/#/agents/<id encoded>``)."""
        return f"{self.base}/" if agent is None else f"{self.base}/#/agents/{quote(agent, safe='')}"

    def start(self) -> Served:
        env = {**os.environ, "INBOX_CORE_ECHO_DELAY": str(self.delay)}
        with self.log_path.open("ab") as log:
            self.process = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "inbox_core",
                    "serve",
                    self.store,
                    "--host",
                    self.host,
                    "--http",
                    f"127.0.0.1:{self.port}",
                ],
                cwd=ROOT,
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise AssertionError(
                    f"inbox-core serve exited {self.process.returncode}:\n{self.tail()}"
                )
            with (
                contextlib.suppress(OSError),
                urllib.request.urlopen(f"{self.base}/healthz", timeout=2) as answer,
            ):
                if answer.status == 200:
                    return self
            time.sleep(0.05)
        raise AssertionError(f"inbox-core serve did not answer /healthz:\n{self.tail()}")

    def kill(self) -> None:
        """SIGKILL: a crash in the middle of whatever runs (R27 on the next start)."""
        assert self.process is not None
        self.process.kill()
        self.process.wait(timeout=30)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=30)

    def tail(self) -> str:
        return self.log_path.read_text(errors="replace")[-4000:] if self.log_path.exists() else ""

    # -------------------------------------------------------------- the API, as curl would

    def call(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        """One request to the API (JSON in and out): the status and the decoded answer."""
        headers = {"Accept": "application/json"}
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
            headers["Prefer"] = "wait=10"
        if self.token is not None:
            headers["Authorization"] = f"Bearer {self.token}"
        request = urllib.request.Request(f"{self.base}{path}", data, headers, method=method)
        try:
            with urllib.request.urlopen(request, timeout=30) as answer:
                return answer.status, json.loads(answer.read() or b"null")
        except urllib.error.HTTPError as error:
            return error.code, json.loads(error.read() or b"null")

    def agent_path(self, agent: str, suffix: str = "") -> str:
        return f"/v1/agents/{quote(agent, safe='')}{suffix}"

    def post(self, agent: str, what: str, body: Any) -> Any:
        """POST ``/v1/agents/{agent}/{what}`` and expect it applied."""
        status, answer = self.call("POST", self.agent_path(agent, f"/{what}"), body)
        assert status == 200, (status, answer)
        assert answer["outcome"] == {"kind": "applied"}, answer
        return answer

    def get(self, agent: str, suffix: str = "") -> Any:
        status, answer = self.call("GET", self.agent_path(agent, suffix))
        assert status == 200, (status, answer)
        return answer

    def events(self, agent: str) -> list[Any]:
        """The agent's whole log, paged as ``GET .../events?since=N`` answers it."""
        events: list[Any] = []
        while True:
            page = self.get(agent, f"/events?since={len(events)}")
            events.extend(page["events"])
            if not page["events"]:
                return events

    def wait_until(self, agent: str, check: Any, timeout: float = 30) -> Any:
        """Poll ``GET /v1/agents/{agent}`` until ``check(answer)``; the answer."""
        deadline = time.monotonic() + timeout
        while True:
            answer = self.get(agent)
            if check(answer):
                return answer
            if time.monotonic() > deadline:
                raise AssertionError(f"{agent} never got there: {answer}")
            time.sleep(0.05)
