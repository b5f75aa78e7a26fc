"""The DBOS side of B8, imported only in processes that run it (it needs ``pip install dbos``).

One DBOS application per consumer process (``launch``): one workflow per agent
(``serve_agent``) loops on ``DBOS.recv(TOPIC)``, woken by DBOS's LISTEN/NOTIFY
listener, and reports each message to the harness as it returns; the watched
log is a DBOS stream written by a workflow (``write_log``). Posters and
watchers are ``DBOSClient``s: ``DBOSClient.send`` is ``DBOS.send`` called
outside a workflow (both are ``SystemDatabase.send_bulk`` with no workflow id),
without a DBOS runtime in every poster, whose launch would also run recovery
of the consumer's pending workflows.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

from dbos import DBOS, DBOSClient, SetWorkflowID, WorkflowHandle

from .base import Applied, Payload, stamp

APP = "inbox-core-b8"
TOPIC = "mail"
GO = "go"
STREAM = "log"
TIMEOUT_S = 300.0  # how long a workflow waits for its next message (only a lost one waits so long)
TERMINAL = {"SUCCESS", "ERROR", "CANCELLED", "MAX_RECOVERY_ATTEMPTS_EXCEEDED"}

# The harness's callbacks in this process: a workflow's arguments are serialized,
# a callable cannot be one.
_applied: Applied | None = None
_text = ""


@DBOS.workflow()
def serve_agent(agent: str, expected: int, timeout: float) -> int:
    """The agent's consumer: ``expected`` messages, each reported once ``recv`` returned it."""
    for n in range(expected):
        payload: Payload | None = DBOS.recv(TOPIC, timeout_seconds=timeout)
        if payload is None:  # timed out: the harness reports the missing posts
            return n
        assert _applied is not None
        _applied(agent, payload)
    return expected


@DBOS.workflow()
def write_log(agent: str, timeout: float) -> int:
    """The watched log: waits for ``{"count", "interval"}`` on GO, then streams that many."""
    go: dict[str, Any] | None = DBOS.recv(GO, timeout_seconds=timeout)
    if go is None:
        return 0
    for i in range(go["count"]):
        DBOS.write_stream(STREAM, stamp(-1, i, _text))
        time.sleep(go["interval"])
    DBOS.close_stream(STREAM)
    return int(go["count"])


_launched: str | None = None


def launch(url: str, text: str) -> None:
    """This process's DBOS application (once; migrates the system database on first use)."""
    global _launched, _text  # noqa: PLW0603 - one DBOS runtime per process
    _text = text
    if _launched is None:
        DBOS(config={"name": APP, "system_database_url": url, "log_level": "WARNING"})
        DBOS.launch()
        _launched = url
    assert _launched == url, "one DBOS system database per process"


class Consumer:
    def __init__(self, url: str, text: str) -> None:
        launch(url, text)
        self.handles: list[WorkflowHandle[int]] = []

    def serve(self, expected: Mapping[str, int], applied: Applied) -> None:
        global _applied  # noqa: PLW0603 - see above
        _applied = applied
        self.handles = []
        for agent, count in expected.items():
            if count:
                with SetWorkflowID(agent):
                    self.handles.append(DBOS.start_workflow(serve_agent, agent, count, TIMEOUT_S))

    def stop(self, timeout: float) -> None:
        """Wait for the workflows to return (they end after their last message); cancel the rest."""
        deadline = time.monotonic() + timeout
        for handle in self.handles:
            while handle.get_status().status not in TERMINAL:
                if time.monotonic() > deadline:
                    DBOS.cancel_workflow(handle.get_workflow_id())
                    break
                time.sleep(0.005)
        self.handles = []

    def close(self) -> None:
        DBOS.destroy()


class Producer:
    def __init__(self, url: str) -> None:
        self.client = DBOSClient(system_database_url=url)

    def post(self, agent: str, payload: Payload) -> None:
        self.client.send(agent, payload, TOPIC)

    def close(self) -> None:
        self.client.destroy()


class Appender:
    def __init__(self, url: str, text: str) -> None:
        launch(url, text)
        self.handles: dict[str, WorkflowHandle[int]] = {}

    def open(self, agent: str) -> None:
        with SetWorkflowID(agent):
            self.handles[agent] = DBOS.start_workflow(write_log, agent, TIMEOUT_S)

    def write(self, agent: str, count: int, interval: float) -> None:
        DBOS.send(agent, {"count": count, "interval": interval}, GO)
        self.handles.pop(agent).get_result()

    def close(self) -> None:
        return None  # the consumer's close destroys the runtime


class Watcher:
    def __init__(self, url: str) -> None:
        self.client = DBOSClient(system_database_url=url, use_listen_notify=True)

    def watch(
        self,
        agent: str,
        count: int,
        seen: Applied,
        ready: Callable[[], None],
        timeout: float,
    ) -> None:
        ready()
        for n, value in enumerate(self.client.read_stream(agent, STREAM, timeout_seconds=timeout)):
            seen(agent, value)
            if n + 1 == count:
                return

    def close(self) -> None:
        self.client.destroy()
