"""Hosts for the worker failure tests (test_workers_crash.py, R37) and their posting child.

``make_host(agent_id)`` is the factory ``inbox-core serve STORE --host
tests.shell.worker_hosts:make_host`` imports. Its ``RecordingHost`` answers like
``EchoHost`` (enter every batch, complete every step) and logs, in the same
atomic append as each report (``Recorded(answer, records)``, R30), one
``HostRecord("host/owner", {...})`` naming the process and the host object that
drove the step: ``pid``, ``host`` (one id per opening of the agent), ``hook``,
``turn``, ``step`` and the wall-clock time ``t``. A log then shows which process
drove each step, and, through the ``turn_stopping`` record that lands with
``turn/end``, which one closed each completed turn.

Environment (each worker process gets its own):

- ``WORKER_HOSTS_DELAY``: seconds each ``run_step`` takes (cut short by the
  turn's abort signal); default 0.
- ``WORKER_HOSTS_BLOCK``: ``pre_step`` or ``run_step``: that hook blocks until
  its ``AbortSignal`` trips (or the file ``WORKER_HOSTS_GATE`` exists).
- ``WORKER_HOSTS_TRACE``: a file to which every hook appends a JSON line when it
  starts (``enter``) and, when blocking, once its signal tripped (``tripped``,
  with the cause) or the gate opened (``gate``): what a detached agent cannot
  write to its log (its in-flight report is discarded, R29).
- ``WORKER_HOSTS_IGNORE``: ``run_step`` ignores its abort signal (R37's grace):
  ``sleep`` sleeps an hour (a cancel ends it), ``swallow`` sleeps and swallows
  every cancel, ``thread`` sleeps in a worker thread, ``loop`` blocks the event
  loop itself (``time.sleep``). Each traces ``enter`` first, and ``cancelled``
  for each cancel it sees.
- ``WORKER_HOSTS_RAISE``: a JSON object ``{agent: "factory:SystemExit" | "run_step:
  KeyboardInterrupt" | ...}``: the factory, or that hook, raises that exception
  (a builtin's name) for that agent (R37: it costs only that agent).

``python -m tests.shell.worker_hosts post STORE PLAN OUT`` is a posting process:
PLAN is a JSON file ``{"posts": [[agent, key, text], ...], "pace": seconds,
"retry_every": n}``; it posts each as a followup whose message id is the key,
with that key, in the plan's order, posting every ``retry_every``-th one a
second time (an idempotent retry: the same receipt, R35), retrying with the
same key when the store fails (``LogUnavailable``), and appends ``key agent
post_id`` to OUT after each. It prints ``POSTED n`` when done.
"""

from __future__ import annotations

import asyncio
import builtins
import contextlib
import json
import os
import sys
import time
import uuid
from pathlib import Path
from typing import Any

from inbox_core import Completed, Enter, HostRecord, UserMessage
from inbox_core.commands import Decision, StepOutcome, followup
from inbox_core.shell import AbortSignal, Recorded

OWNER = "host/owner"


def trace(path: str | None, **fields: Any) -> None:
    """Append one JSON line to the trace file (O_APPEND: whole lines from any process)."""
    if not path:
        return
    line = json.dumps({"pid": os.getpid(), "t": time.time(), **fields}) + "\n"
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line.encode())
    finally:
        os.close(fd)


def read_trace(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    file = Path(path)
    if not file.exists():
        return []
    whole = file.read_text().split("\n")[:-1]  # a line still being written is left out
    return [json.loads(line) for line in whole if line.strip()]


class RecordingHost:
    """Enters every batch, completes every step, and records who drove it (see the module)."""

    def __init__(
        self,
        agent_id: str,
        *,
        delay: float = 0.0,
        block: str = "",
        gate: str | None = None,
        trace_path: str | None = None,
        ignore: str = "",
    ) -> None:
        self.agent_id = agent_id
        self.delay = delay
        self.block = block
        self.gate = gate
        self.trace_path = trace_path
        self.ignore = ignore
        self.instance = uuid.uuid4().hex[:12]

    async def _ignore(self, turn: int, step: int) -> None:
        """Ignore the abort signal (``WORKER_HOSTS_IGNORE``), for an hour."""
        if self.ignore == "loop":
            time.sleep(3600)
        elif self.ignore == "thread":
            await asyncio.to_thread(time.sleep, 3600)
        elif self.ignore == "swallow":
            while True:
                try:
                    await asyncio.sleep(3600)
                except asyncio.CancelledError:
                    self._trace("cancelled", "run_step", turn, step)
        else:
            try:
                await asyncio.sleep(3600)
            except asyncio.CancelledError:
                self._trace("cancelled", "run_step", turn, step)
                raise

    def _record(self, hook: str, turn: int, step: int, **extra: Any) -> HostRecord:
        data = {
            "pid": os.getpid(),
            "host": self.instance,
            "agent": self.agent_id,
            "hook": hook,
            "turn": turn,
            "step": step,
            "t": time.time(),
            **extra,
        }
        return HostRecord(OWNER, data)

    def _trace(self, event: str, hook: str, turn: int, step: int, **extra: Any) -> None:
        trace(
            self.trace_path,
            event=event,
            agent=self.agent_id,
            host=self.instance,
            hook=hook,
            turn=turn,
            step=step,
            **extra,
        )

    async def _block(self, hook: str, turn: int, step: int, signal: AbortSignal) -> None:
        """Until the signal trips (traced with its cause) or the gate file exists."""
        while not signal.aborted:
            if self.gate and os.path.exists(self.gate):
                self._trace("gate", hook, turn, step)
                return
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(signal.wait(), 0.05)
        self._trace("tripped", hook, turn, step, cause=type(signal.cause).__name__)

    async def pre_step(
        self, turn: int, step: int, batch: tuple[UserMessage, ...], signal: AbortSignal
    ) -> Recorded[Decision]:
        self._trace("enter", "pre_step", turn, step, batch=[str(m.id) for m in batch])
        _raise_for(self.agent_id, "pre_step")
        if self.block == "pre_step":
            await self._block("pre_step", turn, step, signal)
        ids = [str(m.id) for m in batch]
        return Recorded(Enter(batch), [self._record("pre_step", turn, step, batch=ids)])

    async def run_step(self, turn: int, step: int, signal: AbortSignal) -> Recorded[StepOutcome]:
        self._trace("enter", "run_step", turn, step)
        _raise_for(self.agent_id, "run_step")
        if self.ignore:
            await self._ignore(turn, step)
        if self.block == "run_step":
            await self._block("run_step", turn, step, signal)
        elif self.delay > 0 and not signal.aborted:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(signal.wait(), self.delay)
        else:
            await asyncio.sleep(0)
        return Recorded(Completed(), [self._record("run_step", turn, step)])

    async def turn_stopping(self, turn: int, signal: AbortSignal) -> Recorded[None]:
        return Recorded(None, [self._record("turn_stopping", turn, 0)])

    def __repr__(self) -> str:
        return f"RecordingHost({self.agent_id!r}, pid={os.getpid()}, host={self.instance})"


def _raise_for(agent_id: str, where: str) -> None:
    """Raise what ``WORKER_HOSTS_RAISE`` names for this agent at ``where``, if anything."""
    plan = json.loads(os.environ.get("WORKER_HOSTS_RAISE") or "{}")
    hook, _, name = str(plan.get(agent_id, "")).partition(":")
    if hook == where:
        raise getattr(builtins, name)(f"{name} from {where} of {agent_id}")


def make_host(agent_id: str) -> RecordingHost:
    """The worker's factory: a ``RecordingHost`` configured by the environment."""
    _raise_for(agent_id, "factory")
    return RecordingHost(
        agent_id,
        delay=float(os.environ.get("WORKER_HOSTS_DELAY", "0")),
        block=os.environ.get("WORKER_HOSTS_BLOCK", ""),
        gate=os.environ.get("WORKER_HOSTS_GATE") or None,
        trace_path=os.environ.get("WORKER_HOSTS_TRACE") or None,
        ignore=os.environ.get("WORKER_HOSTS_IGNORE", ""),
    )


# ------------------------------------------------------------------ the poster


def message(key: str, text: str) -> UserMessage:
    return UserMessage(key, [{"type": "text", "text": text}])


def post_plan(spec: str, plan_path: str, out_path: str) -> int:
    from inbox_core.shell import LogUnavailable
    from inbox_core.shell.stores.opening import open_store

    plan = json.loads(Path(plan_path).read_text())
    pace = float(plan.get("pace", 0.0))
    retry_every = int(plan.get("retry_every", 0))
    store = None
    posted = 0
    with open(out_path, "a", buffering=1) as out:
        for index, (agent, key, text) in enumerate(plan["posts"]):
            command = followup(message(key, text))
            times = 2 if retry_every and index % retry_every == 0 else 1
            receipts = []
            for _ in range(times):
                deadline = time.monotonic() + 60
                while True:
                    try:
                        if store is None:
                            store = open_store(spec)
                        receipts.append(store.post(agent, command, key=key))
                        break
                    except LogUnavailable:  # may have landed: the same key tells (R35)
                        if time.monotonic() > deadline:
                            raise
                        time.sleep(0.1)
            if len({(r.agent_id, r.post_id) for r in receipts}) != 1:
                sys.stderr.write(f"IDEMPOTENCY key {key}: receipts {receipts}\n")
                return 3
            out.write(f"{key} {agent} {receipts[0].post_id}\n")
            posted += 1
            if pace:
                time.sleep(pace)
    sys.stdout.write(f"POSTED {posted}\n")
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    if sys.argv[1] != "post":
        sys.exit(f"usage: {sys.argv[0]} post STORE PLAN OUT")
    sys.exit(post_plan(*sys.argv[2:5]))
