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
import logging
import sys
from collections.abc import Awaitable, Callable, Iterator
from typing import Any, Final

from inbox_core.cli.arguments import Bind
from inbox_core.cli.output import EXIT_FAILURE, EXIT_OK, EXIT_USAGE, err, printable
from inbox_core.cli.stores import on_store

__all__ = [
    "FrontServer",
    "RefusedBind",
    "WithFront",
    "front_server",
    "run_http",
    "run_together",
]

GRACE_SECONDS: Final = 5
"""How long a stopping server waits for requests in flight (event streams end at once)."""


class RefusedBind(Exception):
    """The bind address may not serve this store (its one-line reason)."""


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
    """What a signal stops in ``http`` and ``serve --http`` (``cli.shutdown.Shutdown`` calls
    ``stop`` from its handler): the front door and the worker beside it, if any; a second
    signal stops the front door without waiting for requests in flight (and the worker
    abandons its hooks)."""

    def __init__(self, worker: Any, front: FrontServer) -> None:
        self.worker = worker
        self.front = front
        self.stops = 0

    def stop(self) -> None:
        self.stops += 1
        if self.worker is not None:
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


def run_http(args: argparse.Namespace) -> int:
    """``inbox-core http``; ``args.shutdown`` holds the signals since the process started."""
    logging.basicConfig(
        level=logging.WARNING if args.quiet else logging.INFO,
        format="inbox-core http: %(message)s",
        stream=sys.stderr,
    )
    return on_store("http", args.store, lambda store: _serve(store, args))


def _serve(store: Any, args: argparse.Namespace) -> int:
    try:
        front = front_server(args.bind, store, cors_origins=args.cors_origin, quiet=args.quiet)
    except RefusedBind as why:
        err(f"inbox-core http: {why}")
        return EXIT_USAGE
    except ImportError as error:
        err(f"inbox-core http: {error}")
        return EXIT_FAILURE
    args.shutdown.serve(WithFront(None, front), GRACE_SECONDS)
    try:
        asyncio.run(run_together(front))
    except OSError as error:
        err(f"inbox-core http: {error}")
        return EXIT_FAILURE
    return EXIT_OK
