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
import logging
import sys
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any, Final

from inbox_core.cli.arguments import Bind
from inbox_core.cli.output import EXIT_FAILURE, EXIT_OK, EXIT_USAGE, err, printable
from inbox_core.cli.stores import on_store
from inbox_core.errors import InvalidInput

if TYPE_CHECKING:
    from inbox_core.http.serving import FrontServer

ANY_ORIGIN: Final = ("*", "null")
"""CORS origins that let a page of any site in (as ``inbox_core.http.app`` counts them)."""

__all__ = [
    "Refused",
    "WithFront",
    "front_server",
    "run_http",
    "run_together",
]


class Refused(Exception):
    """The options may not serve this store (its one-line reason): a usage error."""


def check_serving(bind: Bind, store: Any, cors_origins: Sequence[str]) -> bool:
    """Whether the app is public (bound beyond loopback); ``Refused`` for a store with no
    token on such an address, or with a CORS origin that lets any page in (``*``, ``null``:
    a page of any site could read every agent and post to it)."""
    if bind.loopback and not any(origin in ANY_ORIGIN for origin in cors_origins):
        return False
    if store.tokens.count() == 0:
        if not bind.loopback:
            raise Refused(
                f"the store has no token, so it is served on a loopback address only"
                f" (127.0.0.1, ::1, localhost), not {printable(bind.host)}; add one first:"
                " inbox-core token add STORE NAME --scopes read,post --agents '*'"
            )
        raise Refused(
            "--cors-origin * (or null) lets a page of any site read and post to every agent;"
            " the store has no token: name the origins, or add a token first: inbox-core"
            " token add STORE NAME --scopes read,post --agents '*'"
        )
    return not bind.loopback


def front_server(
    bind: Bind,
    store: Any,
    options: argparse.Namespace,
    *,
    worker_stats: Callable[[], object] | None = None,
) -> FrontServer:
    """The server of ``store`` at ``bind`` with the front door's ``options`` (those of
    ``http``, or of ``serve`` with ``--http``): ``Refused``, or the store's typed error."""
    from inbox_core.http import create_app  # noqa: PLC0415 - the http extra, on demand
    from inbox_core.http.serving import FrontServer  # noqa: PLC0415

    public = check_serving(bind, store, options.cors_origin)
    given = {
        name: value
        for name, value in (
            ("agents_per_minute", options.agents_per_minute),
            ("pending_per_agent", options.pending_per_agent),
        )
        if value is not None
    }
    try:
        app = create_app(
            store,
            public=public,
            cors_origins=options.cors_origin,
            allowed_hosts=options.allowed_host,
            worker_stats=worker_stats,
            **given,
        )
    except InvalidInput as error:
        raise Refused(str(error)) from None
    server = {} if options.head_timeout is None else {"head_seconds": options.head_timeout}
    return FrontServer(
        app, bind, quiet=options.quiet, max_connections=options.max_connections, **server
    )


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


SWITCH_SECONDS: Final = 0.001
"""How often a serving process (``http``, ``serve``) hands the GIL to a thread that waits for
it (``sys.setswitchinterval``; Python's default is 5 ms): the event loop waits at most this
while a thread does a request's JSON work or a store call, where the default made a request
wait up to 5 ms at each step it takes on the loop (another tenant's p99 +40-120 ms beside a
body at maxCommandValues, -4 to +20 ms with 1 ms: D47, benchmarks/README.md, B12)."""


def responsive() -> None:
    """Switch threads every ``SWITCH_SECONDS`` in this process (a serving one)."""
    sys.setswitchinterval(SWITCH_SECONDS)


def run_http(args: argparse.Namespace) -> int:
    """``inbox-core http``; ``args.shutdown`` holds the signals since the process started."""
    responsive()
    logging.basicConfig(
        level=logging.WARNING if args.quiet else logging.INFO,
        format="inbox-core http: %(message)s",
        stream=sys.stderr,
    )
    return on_store("http", args.store, lambda store: _serve(store, args))


def _serve(store: Any, args: argparse.Namespace) -> int:
    try:
        front = front_server(args.bind, store, args)
    except Refused as why:
        err(f"inbox-core http: {why}")
        return EXIT_USAGE
    except ImportError as error:
        err(f"inbox-core http: {error}")
        return EXIT_FAILURE
    args.shutdown.serve(WithFront(None, front))
    try:
        asyncio.run(run_together(front))
    except OSError as error:
        err(f"inbox-core http: {error}")
        return EXIT_FAILURE
    return EXIT_OK
