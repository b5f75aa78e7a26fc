"""B12: amplification across tenants (issue 37, item 3; R39, R35).

``python -m benchmarks.amplify [--config tiny|quick|full] [--bodies NAME,...] [--core DIR]
[--out PATH]``

One real server process, ``inbox-core serve sqlite:PATH --host echo --http`` (the embedded
default: the worker and the front door on one event loop), over a store with two tokens:
tenant ``a`` (agents ``a/*``) and tenant ``b`` (agents ``b/*``). Tenant ``b`` keeps probing
all along, from threads of this process: ``GET /healthz`` and a followup to ``b/probe``
with ``Prefer: wait=30`` (answered once the worker applied it), one after the other with
a short pause. The run is a series of phases, side by side: a *quiet* phase before each
*hostile* one, ``rounds`` times per body, where tenant ``a`` posts one hostile body
(``inbox_core.testing.bodies``) to an agent of its own, waits for its answer, then, if it
was accepted, waits until it is applied and opens the agent's event stream from seq 0,
reading until the echo turn it started has ended (every event carrying the body has been
sent). Tenant ``a`` runs in a process of its own (its body made before its phase
starts): its work never holds the probes' GIL.

Per body, over the samples of its rounds pooled, quiet and hostile apart: the probes' p50 /
p99 / max latency (``healthz``, ``post``); per round, the hostile post's status and the
seconds to its answer, to applied and to the stream's end; the slowest probe that
overlapped each of those three stages; the server's CPU seconds per phase and its RSS (its
peak over the run too). The extra p99 of a body is its hostile p99 minus its quiet one.
``--core DIR`` runs the server from another tree (the bodies are this tree's): before and
after a change, with the same bodies. The load average of the machine is recorded at the
start and the end. No assertion is made on any figure (tests/benchmarks/
test_amplify_smoke.py checks the shape only).
"""

from __future__ import annotations

import argparse
import concurrent.futures
import contextlib
import dataclasses
import http.client
import json
import multiprocessing
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

from benchmarks.front_door import free_port, percentiles, rss_kb
from inbox_core.shell import SqliteStore
from inbox_core.testing.bodies import ISSUE_BODIES, at_the_limit, body, command_values_of, values_of

ROOT = Path(__file__).resolve().parents[1]
SCHEMA = "inbox-core-bench-b11/1"
DEFAULT_OUT = Path(__file__).resolve().parent / "results" / "b11.json"
ECHO = "inbox_core.shell.echo:echo_host"


@dataclass(frozen=True)
class Config:
    name: str
    bodies: tuple[tuple[str, str, int], ...]  # (name, kind, count)
    quiet_seconds: float  # the least a phase lasts (a quiet one exactly this)
    pause: float  # between a probe's requests
    timeout: float  # the longest a hostile action may take
    rounds: int  # a quiet and a hostile phase per body, this many times (samples pooled)


def _worst() -> tuple[tuple[str, str, int], ...]:
    """Bodies whose command is at ``maxCommandValues`` (accepted: the costliest kinds per
    value to parse, to build and to write back), and one past it (refused once built)."""
    rows = [(f"{kind} at the limit", kind, at_the_limit(kind)) for kind in WORST]
    return (*rows, ("objects past the limit", "objects", at_the_limit("objects") + 1))


WORST = ("objects", "floats", "contexts")


def _issue() -> tuple[tuple[str, str, int], ...]:
    return tuple((name, kind, count) for name, (kind, count) in ISSUE_BODIES.items())


def config(name: str) -> Config:
    if name == "tiny":
        small = (("objects x2000", "objects", 2000), ("contexts x500", "contexts", 500))
        return Config("tiny", small, 1.0, 0.02, 60.0, 1)
    if name == "quick":
        return Config("quick", (*_issue(), *_worst()), 3.0, 0.01, 300.0, 1)
    return Config("full", (*_issue(), *_worst()), 4.0, 0.01, 600.0, 3)


CONFIGS = ("tiny", "quick", "full")


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def peak_rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    return 0


# --------------------------------------------------------------------- clients


class Client:
    """One keep-alive connection with a token (reopened after any failure)."""

    def __init__(self, port: int, token: str, timeout: float) -> None:
        self.port, self.token, self.timeout = port, token, timeout
        self.conn: http.client.HTTPConnection | None = None

    def request(
        self,
        method: str,
        path: str,
        data: bytes | None = None,
        headers: dict[str, str] | None = None,
    ) -> tuple[int, bytes]:
        sent = {"Authorization": f"Bearer {self.token}", **(headers or {})}
        if data is not None:
            sent["Content-Type"] = "application/json"
        for attempt in (0, 1):
            if self.conn is None:
                self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=self.timeout)
            try:
                self.conn.request(method, path, body=data, headers=sent)
                response = self.conn.getresponse()
                return response.status, response.read()
            except (OSError, http.client.HTTPException):
                self.conn.close()
                self.conn = None
                if attempt:
                    raise
        raise AssertionError("unreachable")  # pragma: no cover


def agent_path(agent: str) -> str:
    return "/v1/agents/" + quote(agent, safe="")


class Prober:
    """Tenant ``b``: ``GET /healthz`` and a waited followup, each in a thread of its own,
    one request after another; every latency kept with its start time."""

    def __init__(self, port: int, token: str, pause: float) -> None:
        self.samples: dict[str, list[tuple[float, float]]] = {"healthz": [], "post": []}
        self.asking: dict[str, float | None] = dict.fromkeys(self.samples)
        self.failures: list[str] = []
        self._stop = threading.Event()
        self._threads = [
            threading.Thread(target=self._run, args=(kind, port, token, pause), daemon=True)
            for kind in self.samples
        ]

    def start(self) -> None:
        for thread in self._threads:
            thread.start()

    def stop(self) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(120)

    def _run(self, kind: str, port: int, token: str, pause: float) -> None:
        client = Client(port, token, 120.0)
        post = agent_path("b/probe") + "/followup"
        n = 0
        while not self._stop.is_set():
            n += 1
            started = self.asking[kind] = time.monotonic()
            try:
                if kind == "healthz":
                    status, _ = client.request("GET", "/healthz")
                else:
                    data = json.dumps({"message": {"content": f"probe {n}"}}).encode()
                    status, _ = client.request("POST", post, data, {"Prefer": "wait=30"})
            except OSError as error:
                self.failures.append(f"{kind}: {error}")
                self.asking[kind] = None
                continue
            if status != 200:
                self.failures.append(f"{kind}: {status}")
            self.samples[kind].append((started, time.monotonic() - started))
            self.asking[kind] = None
            self._stop.wait(pause)

    def settle(self, end: float, timeout: float) -> None:
        """Until no request that started before ``end`` is still on its way."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and any(
            at is not None and at <= end for at in self.asking.values()
        ):
            time.sleep(0.01)

    def between(self, kind: str, start: float, end: float) -> list[float]:
        """The latencies of requests that ran, whole or in part, within [start, end]."""
        return [lat for at, lat in self.samples[kind] if at <= end and at + lat >= start]


_PREPARED: list[bytes] = []


def prepare(kind: str, count: int) -> int:
    """In the hostile poster's process: make the body of the next ``hostile`` (before its
    phase starts); its length."""
    _PREPARED[:] = [body(kind, count)]
    return len(_PREPARED[0])


def hostile(port: int, token: str, agent: str, timeout: float) -> dict[str, Any]:
    """In the hostile poster's process (its own GIL: the probes are not slowed by it),
    tenant ``a`` posts the prepared body; if accepted, waits until applied, then reads the
    agent's event stream from 0 until the turn the post started has ended."""
    data = _PREPARED.pop()
    client = Client(port, token, timeout)
    started = time.monotonic()
    status, answer = client.request("POST", agent_path(agent) + "/followup", data)
    answered = time.monotonic()
    result: dict[str, Any] = {"status": status, "answer_s": answered - started}
    result["stages"] = {"answer": (started, answered)}
    if status not in (200, 202):
        result["detail"] = answer[:200].decode(errors="replace")
        return result
    post = json.loads(answer)["post"]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        _, raw = client.request("GET", f"{agent_path(agent)}/posts/{post}")
        if json.loads(raw)["outcome"]["kind"] != "pending":
            break
        time.sleep(0.05)
    opened = time.monotonic()
    result["applied_s"] = opened - started
    result["stream_bytes"] = read_stream(port, token, agent, deadline)
    result["stream_s"] = time.monotonic() - opened
    result["stages"] |= {"apply": (answered, opened), "stream": (opened, time.monotonic())}
    return result


def read_stream(port: int, token: str, agent: str, deadline: float) -> int:
    """Read the agent's event stream from seq 0 until a ``turn/end``; the bytes read."""
    conn = http.client.HTTPConnection(
        "127.0.0.1", port, timeout=max(1.0, deadline - time.monotonic())
    )
    try:
        headers = {"Authorization": f"Bearer {token}", "Accept": "text/event-stream"}
        conn.request("GET", f"{agent_path(agent)}/events?since=0", headers=headers)
        response = conn.getresponse()
        total = 0
        while time.monotonic() < deadline:
            line = response.readline()
            if not line:
                break
            total += len(line)
            if line.startswith(b"event: turn/end"):
                break
        return total
    finally:
        conn.close()


# ---------------------------------------------------------------------- server


@contextlib.contextmanager
def server(path: Path, port: int, core: Path = ROOT) -> Iterator[subprocess.Popen[bytes]]:
    """``serve --http`` of the tree ``core`` (this one by default: another to compare)."""
    env = {**os.environ, "PYTHONPATH": str(core)}
    if core != ROOT:  # another checkout: read it, write nothing into it
        env["PYTHONDONTWRITEBYTECODE"] = "1"
    proc = subprocess.Popen(
        [sys.executable, "-m", "inbox_core", "serve", f"sqlite:{path}", "--host", ECHO,
         "--http", f"127.0.0.1:{port}", "-q", "--idle-seconds", "600"],
        cwd=core, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise RuntimeError(f"the server exited: {proc.stderr.read().decode()[-2000:]}")  # type: ignore[union-attr]
            with contextlib.suppress(OSError):
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
                conn.request("GET", "/healthz")
                if conn.getresponse().status == 200:
                    break
            time.sleep(0.1)
        yield proc
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)


def tokens(path: Path) -> dict[str, str]:
    store = SqliteStore(path)
    try:
        return {t: store.tokens.add(t, ["read", "post"], f"{t}/*") for t in ("a", "b")}
    finally:
        store.close()


Span = tuple[float, float]


def measure(cfg: Config, log: Any = print, core: Path = ROOT) -> dict[str, Any]:
    load_start = os.getloadavg()
    phases: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "agents.db"
        secrets = tokens(path)
        port = free_port()
        spawn = multiprocessing.get_context("spawn")
        with (
            server(path, port, core) as proc,
            concurrent.futures.ProcessPoolExecutor(1, mp_context=spawn) as poster,
        ):
            prober = Prober(port, secrets["b"], cfg.pause)
            prober.start()
            time.sleep(cfg.quiet_seconds)  # warm up: the probe agent opened, caches filled
            try:
                for index, (name, kind, count) in enumerate(cfg.bodies):
                    quiet: dict[str, Any] = {"phase": f"quiet before {name}", "spans": []}
                    row: dict[str, Any] = {
                        "phase": name,
                        "kind": kind,
                        "count": count,
                        "values": values_of(kind, count),
                        "command_values": command_values_of(kind, count),
                        "spans": [],
                        "rounds": [],
                        "stalls": {},
                    }
                    cpu = {"quiet": 0.0, "hostile": 0.0}
                    for round_ in range(cfg.rounds):
                        for hostile_phase in (False, True):
                            if hostile_phase:
                                row["bytes"] = poster.submit(prepare, kind, count).result()
                            used, start = cpu_seconds(proc.pid), time.monotonic()
                            done: dict[str, Any] = {}
                            if hostile_phase:
                                agent = f"a/{index}.{round_}"
                                args = (port, secrets["a"], agent, cfg.timeout)
                                done = poster.submit(hostile, *args).result()
                            time.sleep(max(0.0, start + cfg.quiet_seconds - time.monotonic()))
                            end = time.monotonic()
                            prober.settle(end, cfg.timeout)
                            cpu["hostile" if hostile_phase else "quiet"] += (
                                cpu_seconds(proc.pid) - used
                            )
                            (row if hostile_phase else quiet)["spans"].append((start, end))
                            if hostile_phase:
                                _stalls(row["stalls"], prober, done.pop("stages"))
                                row["rounds"].append(done)
                    for target, key in ((quiet, "quiet"), (row, "hostile")):
                        spans: list[Span] = target.pop("spans")
                        target["server_cpu_s"] = cpu[key] / cfg.rounds
                        target["seconds"] = sum(end - start for start, end in spans) / cfg.rounds
                        for probe in ("healthz", "post"):
                            target[probe] = percentiles(
                                [lat for at in spans for lat in prober.between(probe, *at)]
                            )
                    row |= row["rounds"][-1]  # the answer of the last round, for the table
                    row["server_rss_mb"] = rss_kb(proc.pid) / 1024
                    for probe in ("healthz", "post"):
                        row[probe]["extra_p99"] = row[probe]["p99"] - quiet[probe]["p99"]
                    log(summary(quiet))
                    log(summary(row))
                    phases += [quiet, row]
            finally:
                prober.stop()
            peak = peak_rss_kb(proc.pid) / 1024
    return {
        "schema": SCHEMA,
        "config": cfg.name,
        "core": str(core),
        "load_start": load_start,
        "load_end": os.getloadavg(),
        "server_peak_rss_mb": peak,
        "probe_failures": prober.failures[:20],
        "phases": phases,
    }


def _stalls(stalls: dict[str, float], prober: Prober, stages: dict[str, Span]) -> None:
    """The slowest probe of either kind that overlapped each stage, the most of the rounds."""
    for stage, at in stages.items():
        slowest = max([*prober.between("healthz", *at), *prober.between("post", *at)], default=0.0)
        stalls[stage] = max(stalls.get(stage, 0.0), slowest)


def _ms(value: float) -> str:
    return f"{value * 1000:.1f}"


def summary(row: dict[str, Any]) -> str:
    h, p = row["healthz"], row["post"]
    text = (
        f"{row['phase']:>28}: healthz p50 {_ms(h['p50'])} p99 {_ms(h['p99'])} max "
        f"{_ms(h['max'])} ms (n {h['n']}); post p50 {_ms(p['p50'])} p99 {_ms(p['p99'])} max "
        f"{_ms(p['max'])} ms (n {p['n']}); server CPU {row['server_cpu_s']:.2f} s"
    )
    if "status" in row:
        text += f"; hostile {row['status']} in {row['answer_s']:.3f} s"
        if "stream_s" in row:
            text += f", applied {row['applied_s']:.3f} s, stream {row['stream_s']:.3f} s"
        stalls = ", ".join(f"{k} {_ms(v)}" for k, v in row["stalls"].items())
        text += f"; slowest probe per stage (ms): {stalls}"
    return text


def table(result: dict[str, Any]) -> str:
    """The README's table: one row per body, its hostile phases beside the quiet ones before
    them (samples pooled over the rounds; the answer's seconds the most of the rounds)."""
    lines = [
        "| body | values (body / command) | bytes | answer | healthz p50 / p99 (quiet p99) |"
        " post p50 / p99 (quiet p99) | server CPU s |",
        "|---|---|---|---|---|---|---|",
    ]
    phases = result["phases"]
    for quiet, row in zip(phases[::2], phases[1::2], strict=True):
        rounds = row["rounds"]
        answer = f"{row['status']} in {_most(rounds, 'answer_s')} s"
        if "stream_s" in row:
            applied, stream = _most(rounds, "applied_s"), _most(rounds, "stream_s")
            answer += f" (applied {applied} s, stream {stream} s)"
        cells = [
            row["phase"],
            f"{row['values']:,} / {row['command_values']:,}",
            f"{row['bytes']:,}",
            answer,
            *(
                f"{_ms(row[p]['p50'])} / {_ms(row[p]['p99'])} ({_ms(quiet[p]['p99'])}) ms"
                for p in ("healthz", "post")
            ),
            f"{row['server_cpu_s']:.2f}",
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _most(rounds: list[dict[str, Any]], key: str) -> str:
    """The most seconds of ``key`` over the rounds."""
    return f"{max(r[key] for r in rounds):.2f}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", choices=CONFIGS, default="quick")
    parser.add_argument("--bodies", help="only these bodies (names, comma-separated)")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument(
        "--core", type=Path, default=ROOT, help="the tree whose server runs (before/after)"
    )
    args = parser.parse_args(argv)
    cfg = config(args.config)
    if args.bodies:
        wanted = set(args.bodies.split(","))
        cfg = dataclasses.replace(cfg, bodies=tuple(b for b in cfg.bodies if b[0] in wanted))
    result = measure(cfg, core=args.core.resolve())
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(table(result))
    print(f"load average {result['load_start']} -> {result['load_end']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
