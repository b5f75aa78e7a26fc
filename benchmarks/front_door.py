"""B10: the front door (issue 30, R39) against the store it fronts.

``python -m benchmarks.front_door [--quick | --config tiny|quick|full]
[--backends sqlite,postgres] [--pg CONNINFO | --pg-cluster] [--out PATH]``

Per backend (a fresh SQLite file, a fresh PostgreSQL database), three processes: a worker
(``inbox-core serve STORE --host inbox_core.shell.echo:echo_host``), the app under uvicorn
(``create_app(store)``, run by this module so that it can count the store's event reads),
and this process, the clients.

*Posting*: each of 1 and 16 clients keeps one ``queue`` post in flight to an agent of its
own; post-to-applied latency p50 / p99 through HTTP (``POST .../queue`` with ``Prefer:
wait=30``, answered 200 once applied) and directly (``store.post`` in a worker thread, then
``await store.wait``) on the same store in the same run, the two taking turns round by
round; posts per second of the 16-client phase.

*Fan-out*: ``streams`` Server-Sent Event streams over ``agents`` agents (raw HTTP/1.1
clients in this process); an owner process appends to the agents' logs at ``rate``
commits per second (``LoopAgent.queue`` of a message whose text is ``time.monotonic_ns()``
just before the call: one commit each); latency from that stamp to a client having parsed
the event, p50 / p99 over every delivery; the server's RSS per open stream (RSS with the
streams open minus before, over their number); store reads per commit (the app process
counts calls of the store's event read). The same owner and agents with ``store.watch``
iterators in this process instead of streams give the reference latency.

Every time is ``time.monotonic_ns()``, one clock for all processes. No assertion is made on
any figure (tests/benchmarks/test_front_door_smoke.py checks the shape only).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import httpx
import uvicorn
from starlette.responses import JSONResponse
from starlette.routing import Route

from benchmarks.mailbox import fresh_databases, postgres_server
from inbox_core import create_user_message
from inbox_core.codec import event_to_json
from inbox_core.commands import queue
from inbox_core.http import create_app
from inbox_core.http.store import read_log
from inbox_core.shell import EchoHost, LoopAgent, PostgresStore, SqliteStore
from inbox_core.shell.stores.opening import open_store

ROOT = Path(__file__).resolve().parents[1]
SCHEMA = "inbox-core-bench-b10/1"
DEFAULT_OUT = Path(__file__).resolve().parent / "results" / "b10.json"
ECHO = "inbox_core.shell.echo:echo_host"


@dataclass(frozen=True)
class Config:
    name: str
    clients: tuple[int, ...]
    posts: int  # per client and path
    rounds: int  # HTTP and direct alternate this many times
    agents: int  # fan-out
    streams: int  # fan-out, over the agents
    commits: int  # fan-out appends
    rate: float  # fan-out appends per second


TINY = Config("tiny", (1, 2), 4, 2, 2, 4, 6, 50.0)
QUICK = Config("quick", (1, 16), 20, 3, 10, 100, 100, 50.0)
FULL = Config("full", (1, 16), 60, 5, 100, 1000, 1000, 100.0)
CONFIGS = {c.name: c for c in (TINY, QUICK, FULL)}


def percentiles(values: Sequence[float]) -> dict[str, float]:
    ordered = sorted(values)
    if not ordered:
        return {"p50": float("nan"), "p99": float("nan"), "max": float("nan"), "n": 0}
    pick = lambda q: ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]  # noqa: E731
    return {"p50": pick(0.5), "p99": pick(0.99), "max": ordered[-1], "n": len(ordered)}


def rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


# ------------------------------------------------------------ the app process


def serve(spec: str, port: int) -> None:
    """The app process: ``create_app`` under uvicorn, its store's event reads counted and
    answered at ``GET /bench/reads``."""

    reads = [0]
    for cls in (SqliteStore, PostgresStore):  # before any store exists: shared readers too
        name = "_read_events" if hasattr(cls, "_read_events") else "_events"  # its event read
        original = getattr(cls, name)

        def counted(self: Any, *args: Any, _original: Any = original) -> Any:
            reads[0] += 1
            return _original(self, *args)

        setattr(cls, name, counted)
    store = open_store(spec)
    app = create_app(store, max_streams=100_000)

    async def read_count(_request: Any) -> JSONResponse:
        return JSONResponse({"reads": reads[0]})

    app.router.routes.insert(0, Route("/bench/reads", read_count))
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning", lifespan="on")


# ---------------------------------------------------------- the owner process


def own(spec: str, agents: int, commits: int, rate: float) -> None:
    """The owner process: a ``LoopAgent`` per agent; on a line on stdin, ``commits`` queue
    sends at ``rate`` per second, round robin, each message's text its monotonic stamp."""

    async def main() -> None:
        store = open_store(spec)
        owned = [LoopAgent(EchoHost(), log=store.log(f"fan-{i}")) for i in range(agents)]
        print("ready", flush=True)
        await asyncio.to_thread(sys.stdin.readline)
        start = time.monotonic()
        for n in range(commits):
            delay = start + n / rate - time.monotonic()
            if delay > 0:
                await asyncio.sleep(delay)
            owned[n % agents].queue(create_user_message(str(time.monotonic_ns())))
        print("done", flush=True)
        await asyncio.to_thread(sys.stdin.readline)
        for agent in owned:
            await agent.detach()
        store.close()

    asyncio.run(main())


def stamp_of(document: dict[str, Any]) -> int | None:
    """The owner's stamp in an ``agent/inbox/spliced`` record (None for any other)."""
    if document.get("type") != "agent/inbox/spliced":
        return None
    inserted = document["data"].get("inserted") or []
    return int(inserted[0]["message"]["content"][0]["text"]) if inserted else None


# ----------------------------------------------------------------- clients


class SseClient:
    """A raw HTTP/1.1 event-stream client (chunked transfer), light enough for 1,000."""

    def __init__(self, latencies: list[float]) -> None:
        self.latencies = latencies
        self.connected = asyncio.get_running_loop().create_future()

    async def run(self, port: int, agent: str) -> None:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(
            f"GET /v1/agents/{agent}/events HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
            "Accept: text/event-stream\r\n\r\n".encode()
        )
        await writer.drain()
        head = await reader.readuntil(b"\r\n\r\n")
        if b" 200 " not in head.split(b"\r\n", 1)[0]:
            raise RuntimeError(f"stream refused: {head[:200]!r}")
        self.connected.set_result(None)
        buffer = b""
        try:
            while True:
                size = int((await reader.readuntil(b"\r\n")).strip(), 16)
                chunk = await reader.readexactly(size + 2)
                buffer += chunk[:-2]
                while b"\n\n" in buffer:
                    block, buffer = buffer.split(b"\n\n", 1)
                    for line in block.split(b"\n"):
                        if line.startswith(b"data: "):
                            stamp = stamp_of(json.loads(line[6:]))
                            if stamp is not None:
                                self.latencies.append((time.monotonic_ns() - stamp) / 1e6)
        finally:
            writer.close()


@contextlib.contextmanager
def child(*argv: str) -> Iterator[subprocess.Popen[str]]:
    proc = subprocess.Popen(
        [sys.executable, *argv], cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


async def wait_http(port: int, timeout: float = 60) -> None:

    deadline = time.monotonic() + timeout
    async with httpx.AsyncClient() as client:
        while True:
            with contextlib.suppress(httpx.HTTPError):
                if (await client.get(f"http://127.0.0.1:{port}/healthz")).status_code == 200:
                    return
            if time.monotonic() > deadline:
                raise RuntimeError(f"no server on {port}")
            await asyncio.sleep(0.1)


def free_port() -> int:

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


# ------------------------------------------------------------------ posting


async def posting(config: Config, spec: str, port: int, run_id: str) -> dict[str, Any]:

    store = open_store(spec)
    limits = httpx.Limits(max_connections=64, max_keepalive_connections=64)
    results: dict[str, Any] = {}
    async with httpx.AsyncClient(
        base_url=f"http://127.0.0.1:{port}", limits=limits, timeout=60
    ) as http:

        async def via_http(agent: str) -> float:
            started = time.monotonic_ns()
            answer = await http.post(
                f"/v1/agents/{agent}/queue",
                json={"message": {"content": "x" * 200}},
                headers={"Prefer": "wait=30"},
            )
            if answer.status_code != 200:
                raise RuntimeError(f"HTTP post: {answer.status_code} {answer.text[:200]}")
            return (time.monotonic_ns() - started) / 1e6

        async def direct(agent: str) -> float:
            started = time.monotonic_ns()
            message = create_user_message("x" * 200)
            receipt = await asyncio.to_thread(store.post, agent, queue(message))
            await store.wait(receipt, timeout=30)
            return (time.monotonic_ns() - started) / 1e6

        paths: dict[str, Callable[[str], Any]] = {"http": via_http, "direct": direct}
        for clients in config.clients:
            latencies: dict[str, list[float]] = {"http": [], "direct": []}
            seconds = {"http": 0.0, "direct": 0.0}
            for agent_round in range(config.rounds):
                order = list(paths) if agent_round % 2 == 0 else list(paths)[::-1]
                for path in order:
                    per_client = max(1, config.posts // config.rounds)

                    async def client(
                        k: int,
                        path: str = path,
                        n: int = per_client,
                        into: list[float] = latencies[path],
                    ) -> None:
                        agent = f"{run_id}-{path}-{k}"
                        for _ in range(n):
                            into.append(await paths[path](agent))

                    await paths[path](f"{run_id}-warm-{path}")
                    started = time.monotonic()
                    await asyncio.gather(*(client(k) for k in range(clients)))
                    seconds[path] += time.monotonic() - started
            results[str(clients)] = {
                path: percentiles(latencies[path])
                | {"per_second": len(latencies[path]) / seconds[path] if seconds[path] else 0.0}
                for path in paths
            }
    store.close()
    return results


# ------------------------------------------------------------------ fan-out


@contextlib.asynccontextmanager
async def owner_process(config: Config, spec: str) -> AsyncIterator[Callable[[], Awaitable[None]]]:
    """The owner process, ready; the function it yields starts its appends and returns once
    they are all committed."""
    argv = [str(config.agents), str(config.commits), str(config.rate)]
    with child("-m", "benchmarks.front_door", "own", spec, *argv) as owner:
        assert owner.stdout is not None
        assert owner.stdin is not None
        if owner.stdout.readline().strip() != "ready":
            raise RuntimeError("the owner process did not start")

        async def go() -> None:
            owner.stdin.write("go\n")  # type: ignore[union-attr]
            owner.stdin.flush()  # type: ignore[union-attr]
            await asyncio.to_thread(owner.stdout.readline)  # type: ignore[union-attr]

        yield go
        owner.stdin.write("stop\n")
        owner.stdin.flush()
        owner.wait(60)


async def delivered(latencies: list[float], expected: int, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while len(latencies) < expected and time.monotonic() < deadline:
        await asyncio.sleep(0.05)


async def finish(tasks: Sequence[asyncio.Future[Any]]) -> None:
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)


async def fan_out(config: Config, spec: str, port: int, server_pid: int) -> dict[str, Any]:
    agents = [f"fan-{i}" for i in range(config.agents)]
    expected = config.commits * (config.streams // config.agents)

    async def reads() -> int:
        async with httpx.AsyncClient() as client:
            answer = await client.get(f"http://127.0.0.1:{port}/bench/reads")
            return int(answer.json()["reads"])

    async with owner_process(config, spec) as go:
        before_rss = rss_kb(server_pid)
        latencies: list[float] = []
        clients = [SseClient(latencies) for _ in range(config.streams)]
        tasks = [
            asyncio.ensure_future(c.run(port, agents[n % config.agents]))
            for n, c in enumerate(clients)
        ]
        await asyncio.wait_for(asyncio.gather(*(c.connected for c in clients)), 120)
        await asyncio.sleep(1.0)  # the first reads of every stream are done
        open_rss = rss_kb(server_pid)
        reads_before = await reads()
        await go()
        await delivered(latencies, expected)
        reads_after = await reads()
        await finish(tasks)
    sse = percentiles(latencies) | {
        "expected": expected,
        "rss_per_stream_kb": (open_rss - before_rss) / config.streams,
        "rss_before_kb": before_rss,
        "rss_open_kb": open_rss,
        "reads_per_commit": (reads_after - reads_before) / config.commits,
    }

    # the reference: one store.watch per stream, in this process, the same owner workload
    store = open_store(spec)
    watched: list[float] = []

    async def watcher(agent: str, since: int) -> None:
        async for _seq, event in store.watch(agent, since):
            stamp = stamp_of(event_to_json(event))
            if stamp is not None:
                watched.append((time.monotonic_ns() - stamp) / 1e6)

    async with owner_process(config, spec) as go:
        start = {a: len(read_log(store, a)) for a in agents}
        tasks = [
            asyncio.ensure_future(watcher(agent, start[agent]))
            for agent in (agents[n % config.agents] for n in range(config.streams))
        ]
        await asyncio.sleep(1.0)
        await go()
        await delivered(watched, expected)
        await finish(tasks)
    store.close()
    return {"sse": sse, "watch": percentiles(watched) | {"expected": expected}}


# ---------------------------------------------------------------------- run


@contextlib.contextmanager
def backend_spec(backend: str, server: str | None) -> Iterator[str]:
    if backend == "sqlite":
        with tempfile.TemporaryDirectory() as directory:
            yield f"sqlite:{directory}/b10.db"
        return
    sys.path.insert(0, str(ROOT))
    from tests.shell.posts_support import pg_url  # noqa: PLC0415 - the repo's test helper

    assert server is not None
    with fresh_databases(server, ["front_door"]) as databases:
        yield pg_url(databases["front_door"])


async def measure(config: Config, spec: str, log: Callable[[str], None]) -> dict[str, Any]:
    port = free_port()
    with (
        child("-m", "inbox_core", "serve", spec, "--host", ECHO, "--poll-seconds", "0.2", "-q"),
        child("-m", "benchmarks.front_door", "serve", spec, str(port)) as app,
    ):
        await wait_http(port)
        log("posting")
        posted = await posting(config, spec, port, f"b10-{os.getpid()}")
        log("fan-out")
        fanned = await fan_out(config, spec, port, app.pid)
    return {"posting": posted, "fan_out": fanned}


def run(
    config: Config,
    backends: Sequence[str],
    *,
    conninfo: str | None,
    private_cluster: bool,
    log: Callable[[str], None],
) -> dict[str, Any]:
    result: dict[str, Any] = {
        "schema": SCHEMA,
        "config": asdict(config),
        "python": sys.version.split()[0],
        "loadavg_at_start": os.getloadavg(),
        "backends": {},
    }
    with contextlib.ExitStack() as stack:
        server = None
        if "postgres" in backends:
            server = stack.enter_context(postgres_server(conninfo, private_cluster))
        for backend in backends:
            log(backend)
            with backend_spec(backend, server) as spec:
                result["backends"][backend] = asyncio.run(measure(config, spec, log))
    result["loadavg_at_end"] = os.getloadavg()
    return result


def table(result: dict[str, Any]) -> str:
    """The two tables of benchmarks/README.md (B10)."""
    rows = [
        "| backend | clients | HTTP p50 / p99 ms | direct p50 / p99 ms | +p50 ms | p99 x "
        "| HTTP/s | direct/s |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for backend, measured in result["backends"].items():
        for clients, paths in measured["posting"].items():
            h, d = paths["http"], paths["direct"]
            rows.append(
                f"| {backend} | {clients} | {h['p50']:.1f} / {h['p99']:.1f} "
                f"| {d['p50']:.1f} / {d['p99']:.1f} | {h['p50'] - d['p50']:+.1f} "
                f"| {h['p99'] / d['p99']:.2f} | {h['per_second']:,.0f} | {d['per_second']:,.0f} |"
            )
    rows += [
        "",
        "| backend | streams | SSE p50 / p99 ms | watch p50 / p99 ms | RSS per stream KB "
        "| reads per commit | delivered |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for backend, measured in result["backends"].items():
        sse, watch = measured["fan_out"]["sse"], measured["fan_out"]["watch"]
        rows.append(
            f"| {backend} | {result['config']['streams']} | {sse['p50']:.1f} / {sse['p99']:.1f} "
            f"| {watch['p50']:.1f} / {watch['p99']:.1f} | {sse['rss_per_stream_kb']:.1f} "
            f"| {sse['reads_per_commit']:.1f} | {sse['n']}/{sse['expected']} |"
        )
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["serve"]:
        serve(argv[1], int(argv[2]))
        return 0
    if argv[:1] == ["own"]:
        own(argv[1], int(argv[2]), int(argv[3]), float(argv[4]))
        return 0
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.front_door",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--quick", action="store_true", help="the quick config")
    parser.add_argument("--config", choices=sorted(CONFIGS), help="sizes by name")
    parser.add_argument("--backends", default="sqlite,postgres", help="comma-separated")
    parser.add_argument("--pg", default=None, help="server conninfo ($INBOX_CORE_TEST_PG)")
    parser.add_argument("--pg-cluster", action="store_true", help="a private throwaway cluster")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="JSON result file")
    args = parser.parse_args(argv)
    config = CONFIGS[args.config or ("quick" if args.quick else "full")]
    backends = [b.strip() for b in args.backends.split(",") if b.strip()]
    if not set(backends) <= {"postgres", "sqlite"}:
        parser.error("backends are postgres, sqlite")
    result = run(
        config,
        backends,
        conninfo=args.pg,
        private_cluster=args.pg_cluster,
        log=lambda line: print(f"... {line}", file=sys.stderr, flush=True),
    )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2, allow_nan=True) + "\n")
    print(table(result))
    print(f"written: {args.out}")
    return 0


if __name__ == "__main__":
    from benchmarks.front_door import main as _main  # children import this module by name

    raise SystemExit(_main())
