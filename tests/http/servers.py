"""Real server processes for the front door tests (R39): the CLI started as a child, a
blocking HTTP client (what curl does) and an event-stream reader in a thread."""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tests.shell.pg import free_port

ROOT = Path(__file__).resolve().parents[2]
ECHO = "inbox_core.shell.echo:echo_host"


class Child:
    """``python -m inbox_core ARGS``; its standard error goes to a file shown on failure."""

    def __init__(
        self,
        tmp: Path,
        name: str,
        *args: str,
        env: dict[str, str] | None = None,
        nofile: int | None = None,
    ) -> None:
        self.name = name
        self.log = tmp / f"{name}.err"
        self.args = args

        argv = [sys.executable, "-m", "inbox_core", *args]
        if nofile is not None:  # the child's descriptor limit, as ``ulimit -n`` sets it
            argv = ["sh", "-c", 'ulimit -n "$0" && exec "$@"', str(nofile), *argv]
        with self.log.open("wb") as err:
            self.proc = subprocess.Popen(
                argv,
                stdout=subprocess.PIPE,
                stderr=err,
                cwd=ROOT,
                env={**os.environ, **(env or {})},
            )

    def stderr(self) -> str:
        return self.log.read_text(errors="replace")

    def stop(self, timeout: float = 20) -> int:
        """SIGTERM, and the exit status."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            raise AssertionError(
                f"{self.name} did not stop on SIGTERM:\n{self.stderr()[-3000:]}"
            ) from None

    def kill(self) -> None:
        self.proc.kill()
        self.proc.wait(10)


@contextlib.contextmanager
def children() -> Iterator[list[Child]]:
    """Children started in the block are killed at its end (a failing test leaves none);
    the standard error of every one is printed when the block fails."""
    started: list[Child] = []
    try:
        yield started
    except BaseException:
        for child in started:
            print(f"--- {child.name} {' '.join(child.args)}\n{child.stderr()[-4000:]}")
        raise
    finally:
        for child in started:
            if child.proc.poll() is None:
                child.kill()


def request(
    port: int,
    method: str,
    path: str,
    body: Any = None,
    headers: dict[str, str] | None = None,
    timeout: float = 30,
) -> tuple[int, dict[str, str], Any]:
    """One request (status, headers, the JSON answer or the text)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        sent = dict(headers or {})
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            sent.setdefault("Content-Type", "application/json")
        conn.request(method, path, body=data, headers=sent)
        response = conn.getresponse()
        raw = response.read()
        answer: Any = raw.decode()
        if response.getheader("content-type", "").endswith("json"):
            answer = json.loads(raw)
        return response.status, {k.lower(): v for k, v in response.getheaders()}, answer
    finally:
        conn.close()


def wait_serving(port: int, child: Child, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if child.proc.poll() is not None:
            raise AssertionError(f"{child.name} exited {child.proc.returncode}:\n{child.stderr()}")
        with contextlib.suppress(OSError):
            if request(port, "GET", "/healthz", timeout=2)[0] == 200:
                return
        time.sleep(0.1)
    raise AssertionError(f"{child.name} is not serving on {port}:\n{child.stderr()}")


class EventReader:
    """An SSE client in a thread (the way curl -N or EventSource reads): parsed events in
    ``events``, a queue that ``until`` waits on."""

    def __init__(self, port: int, path: str, headers: dict[str, str] | None = None) -> None:
        self.events: list[dict[str, Any]] = []
        self.arrived: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        self.conn.request("GET", path, headers={"Accept": "text/event-stream", **(headers or {})})
        self.response = self.conn.getresponse()
        assert self.response.status == 200, self.response.read()
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self) -> None:
        fields: dict[str, str] = {}
        try:
            for raw in self.response:
                line = raw.decode().rstrip("\n")
                if line == "":
                    if "data" in fields:
                        event = json.loads(fields["data"]) | {"event": fields.get("event")}
                        self.arrived.put(event)
                    fields = {}
                elif not line.startswith(":"):
                    name, _, value = line.partition(": ")
                    fields[name] = value
        except Exception:  # closed under the reader (close(), or the server went away)
            pass
        self.arrived.put(None)  # the stream ended

    def until(self, check: Any, timeout: float = 30) -> list[dict[str, Any]]:
        deadline = time.monotonic() + timeout
        while not check(self.events):
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"stream: not there after {timeout} s: {self.types()}")
            try:
                event = self.arrived.get(timeout=left)
            except queue.Empty:
                continue
            if event is None:
                raise AssertionError(f"stream ended: {self.types()}")
            self.events.append(event)
        return self.events

    def types(self) -> list[str]:
        return [f"{e['seq']}:{e['type']}" for e in self.events]

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.conn.sock.shutdown(2)  # type: ignore[union-attr]
        self.conn.close()


def port() -> int:
    return free_port()


@contextlib.contextmanager
def serving(tmp: Path, delay: float = 0.0) -> Iterator[int]:
    """``inbox-core serve`` with the echo host (``delay`` s per step) on its own SQLite file
    in ``tmp``: the port it answers on; it must stop with exit 0 on SIGTERM."""
    at = port()
    with children() as started:
        serve = Child(
            tmp,
            "serve",
            "serve",
            f"sqlite:{tmp / 'agents.db'}",
            "--host",
            ECHO,
            "--http",
            f"127.0.0.1:{at}",
            "-q",
            env={"INBOX_CORE_ECHO_DELAY": str(delay)},
        )
        started.append(serve)
        wait_serving(at, serve)
        yield at
        assert serve.stop() == 0
