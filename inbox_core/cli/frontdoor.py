"""``inbox-core http`` and ``serve --http``: the front door of a store as a server (R39).

``inbox-core http STORE [--bind HOST:PORT] [--cors-origin ORIGIN ...]`` serves
``inbox_core.http.create_app(store)`` with uvicorn; ``inbox-core serve STORE --host
MODULE:FACTORY --http HOST:PORT`` serves it in the event loop of a worker (one process runs
the agents and the API). A store with no token is served on a loopback address only: any
other bind is a usage error (exit 2, one line). SIGTERM or SIGINT ends every open event
stream and stops the server (and the worker, which detaches its agents); exit 0.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import ipaddress
import logging
import signal
import sys
from collections.abc import Awaitable, Callable, Iterator
from typing import Any, Final

from inbox_core.cli.render import EXIT_FAILURE, EXIT_OK, EXIT_USAGE, err, printable
from inbox_core.errors import InboxCoreError

__all__ = [
    "DEFAULT_BIND",
    "HTTP_HELP",
    "Bind",
    "FrontServer",
    "RefusedBind",
    "WithFront",
    "front_server",
    "parse_bind",
    "run_http",
    "run_together",
]

DEFAULT_BIND: Final = "127.0.0.1:8000"
GRACE_SECONDS: Final = 5
"""How long a stopping server waits for requests in flight (event streams end at once)."""

HTTP_HELP: Final = (
    "serve every agent of a store over HTTP (API, event streams, inspector)",
    """\
Serve the front door of STORE (sqlite:PATH or a postgresql:// URL) over HTTP at --bind
(default 127.0.0.1:8000) until SIGTERM or SIGINT: post to any agent
(POST /v1/agents/AGENT/followup, /queue, /steer, /inject, /commands), read it
(GET /v1/agents/AGENT, its /events as JSON or Server-Sent Events, /fates,
/transcript, /posts/POST), list the agents (GET /v1/agents), and /openapi.json,
/healthz, /metrics; the inspector at /. The server holds no state: any number of
them serve one store, beside any number of workers (inbox-core serve), which apply
the posts. With no token in the store (inbox-core token add) it serves a loopback
address only; with tokens every request needs one (Authorization: Bearer). See
specs/http.md.""",
    """\
examples:
  inbox-core http sqlite:agents.db
  inbox-core token add postgresql://app@db/agents web --scopes read,post --agents 'team-a/*'
  inbox-core http postgresql://app@db/agents --bind 0.0.0.0:8080 --cors-origin https://app.example
  curl -s localhost:8000/v1/agents/alice/followup -H 'content-type: application/json' \\
       -d '{"message": {"content": "hello"}}'""",
)


class RefusedBind(Exception):
    """The bind address may not serve this store (its one-line reason)."""


class Bind:
    """A ``HOST:PORT`` to listen on (``[::1]:8000`` for IPv6)."""

    def __init__(self, host: str, port: int) -> None:
        self.host = host
        self.port = port

    @property
    def loopback(self) -> bool:
        if self.host == "localhost":
            return True
        try:
            return ipaddress.ip_address(self.host).is_loopback
        except ValueError:
            return False  # a name: it may resolve to anything

    def __str__(self) -> str:
        return f"[{self.host}]:{self.port}" if ":" in self.host else f"{self.host}:{self.port}"


def parse_bind(text: str) -> Bind:
    """argparse's type for ``--bind`` and ``--http``: ``HOST:PORT``."""
    host, sep, port = text.rpartition(":")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    if not sep or not host or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise argparse.ArgumentTypeError(f"expected HOST:PORT (e.g. 127.0.0.1:8000), got {text!r}")
    return Bind(host, int(port))


def check_bind(bind: Bind, store: Any) -> bool:
    """Whether the app is public (bound beyond loopback); ``RefusedBind`` for a store with no
    token on such an address."""
    if bind.loopback:
        return False
    if store.tokens.count() == 0:
        raise RefusedBind(
            f"the store has no token, so it is served on a loopback address only (127.0.0.1,"
            f" ::1, localhost), not {printable(bind.host)}; add one first: inbox-core token"
            " add STORE NAME --scopes read,post --agents '*'"
        )
    return True


# ------------------------------------------------------------------- the server


class FrontServer:
    """uvicorn serving one app in the caller's event loop; signals are the caller's."""

    def __init__(self, app: Any, bind: Bind, *, quiet: bool = False) -> None:
        import uvicorn  # noqa: PLC0415 - the http extra, on demand

        class Server(uvicorn.Server):
            @contextlib.contextmanager
            def capture_signals(self) -> Iterator[None]:  # the caller's handlers stay
                yield

        self.app = app
        self.bind = bind
        config = uvicorn.Config(
            app,
            host=bind.host,
            port=bind.port,
            lifespan="on",
            log_level="warning" if quiet else "info",
            timeout_graceful_shutdown=GRACE_SECONDS,
            server_header=False,
            log_config=None,
        )
        self.server = Server(config)
        self._loop: asyncio.AbstractEventLoop | None = None

    def stop(self, *, now: bool = False) -> None:
        """End the event streams and stop listening; ``now``: without waiting for requests
        in flight. Safe from a signal handler or another thread (it sets flags and hands
        the rest to the server's loop)."""
        self.server.should_exit = True
        self.server.force_exit = self.server.force_exit or now
        if self._loop is not None:
            with contextlib.suppress(RuntimeError):  # the loop is closed: it has ended
                self._loop.call_soon_threadsafe(self._close_streams)

    def _close_streams(self) -> None:
        from inbox_core.http.app import door_of  # noqa: PLC0415

        door_of(self.app).close()

    async def serve(self) -> None:
        """Serve until ``stop``; ``OSError`` when the address cannot be bound."""
        self._loop = asyncio.get_running_loop()
        if self.server.should_exit:  # stopped before it started
            self._close_streams()
        try:
            await self.server.serve()
        except SystemExit:  # uvicorn's way of saying it could not bind
            raise OSError(f"cannot listen on {self.bind} (see the line above)") from None
        if not self.server.started and not self.server.should_exit:
            raise OSError(f"cannot listen on {self.bind}")


def front_server(
    bind: Bind,
    store: Any,
    *,
    cors_origins: list[str] | None = None,
    worker_stats: Callable[[], object] | None = None,
    quiet: bool = False,
) -> FrontServer:
    """The server of ``store`` at ``bind``: ``RefusedBind``, or the store's typed error."""
    from inbox_core.http import create_app  # noqa: PLC0415 - the http extra, on demand

    public = check_bind(bind, store)
    app = create_app(
        store, public=public, cors_origins=cors_origins or (), worker_stats=worker_stats
    )
    return FrontServer(app, bind, quiet=quiet)


class WithFront:
    """What a signal stops in ``serve --http`` (``cli.shutdown.Shutdown`` calls ``stop`` from
    its handler): the worker and the front door beside it; a second signal stops the front
    door without waiting for requests in flight (and the worker abandons its hooks)."""

    def __init__(self, worker: Any, front: FrontServer) -> None:
        self.worker = worker
        self.front = front
        self.stops = 0

    def stop(self) -> None:
        self.stops += 1
        self.worker.stop()
        self.front.stop(now=self.stops > 1)


async def run_together(
    front: FrontServer,
    beside: Callable[[], Awaitable[None]] | None = None,
    on_stop: Callable[[], None] | None = None,
) -> None:
    """Serve ``front`` and run ``beside()`` (a worker); when one ends (stopped, or failed),
    the other is stopped too (``front.stop``, ``on_stop``); the first failure is raised."""
    tasks = [asyncio.ensure_future(front.serve())]
    if beside is not None:
        tasks.append(asyncio.ensure_future(beside()))
    await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
    front.stop()
    if on_stop is not None:
        on_stop()
    await asyncio.wait(tasks)
    for task in tasks:
        task.result()


async def serve_until_signal(front: FrontServer) -> None:
    """Serve ``front`` until SIGTERM or SIGINT (a second one: without waiting)."""
    loop = asyncio.get_running_loop()
    signals = 0

    def signalled() -> None:
        nonlocal signals
        signals += 1
        front.stop(now=signals > 1)

    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, signalled)
    try:
        await run_together(front)
    finally:
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.remove_signal_handler(signum)


def register(commands: Any, formatter: type[argparse.HelpFormatter], store_type: Any) -> None:
    """Add ``http`` and ``token`` to the subcommands of ``inbox-core``."""
    from inbox_core.cli.tokens import TOKEN_HELP, add_token_arguments, run_token  # noqa: PLC0415

    def command(name: str, texts: tuple[str, str, str], handler: Any) -> argparse.ArgumentParser:
        summary, description, epilog = texts
        sub: argparse.ArgumentParser = commands.add_parser(
            name, help=summary, description=description, epilog=epilog, formatter_class=formatter
        )
        sub.set_defaults(handler=handler)
        return sub

    http = command("http", HTTP_HELP, run_http)
    http.add_argument(
        "store", type=store_type, metavar="STORE", help="sqlite:PATH or postgresql://..."
    )
    http.add_argument(
        "--bind",
        type=parse_bind,
        default=parse_bind(DEFAULT_BIND),
        metavar="HOST:PORT",
        help=f"the address to listen on (default {DEFAULT_BIND}; beyond loopback only with tokens)",
    )
    http.add_argument(
        "--cors-origin",
        action="append",
        default=[],
        metavar="ORIGIN",
        help="let browsers call from ORIGIN (repeatable; default: CORS off)",
    )
    http.add_argument("-q", "--quiet", action="store_true", help="log warnings only")
    add_token_arguments(command("token", TOKEN_HELP, run_token), store_type)


SWITCH_SECONDS: Final = 0.001
"""How often a serving process (``http``, ``serve``) hands the GIL to a thread that waits for
it (``sys.setswitchinterval``; Python's default is 5 ms): the event loop waits at most this
while a thread does a request's JSON work or a store call, where the default made a request
wait up to 5 ms at each step it takes on the loop (another tenant's p99 +40-120 ms beside a
body at maxCommandValues, -4 to +20 ms with 1 ms: D47, benchmarks/README.md, B11)."""


def responsive() -> None:
    """Switch threads every ``SWITCH_SECONDS`` in this process (a serving one)."""
    sys.setswitchinterval(SWITCH_SECONDS)


def run_http(args: argparse.Namespace) -> int:
    from inbox_core.shell.stores.opening import open_store  # noqa: PLC0415 - the shell, on demand

    responsive()

    logging.basicConfig(
        level=logging.WARNING if args.quiet else logging.INFO,
        format="inbox-core http: %(message)s",
        stream=sys.stderr,
    )
    try:
        store = open_store(args.store)
    except InboxCoreError as error:
        err(f"inbox-core http: {type(error).__name__}: {error}")
        return EXIT_FAILURE
    try:
        front = front_server(args.bind, store, cors_origins=args.cors_origin, quiet=args.quiet)
    except RefusedBind as why:
        err(f"inbox-core http: {why}")
        store.close()
        return EXIT_USAGE
    except ImportError as error:
        err(f"inbox-core http: {error}")
        store.close()
        return EXIT_FAILURE
    except InboxCoreError as error:
        err(f"inbox-core http: {type(error).__name__}: {error}")
        store.close()
        return EXIT_FAILURE
    try:
        asyncio.run(serve_until_signal(front))
    except OSError as error:
        err(f"inbox-core http: {error}")
        return EXIT_FAILURE
    finally:
        store.close()
    return EXIT_OK
