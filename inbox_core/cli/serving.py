"""``inbox-core serve``: a worker process over a store (R37).

``inbox-core serve STORE --host MODULE:FACTORY`` imports ``FACTORY`` from
``MODULE`` (the current directory is on the import path, as for ``python -m``),
builds a ``Worker`` over ``STORE`` and serves until SIGTERM or SIGINT, which
detach every agent (their inboxes stay in the log) and exit 0. It logs to
standard error: a line when it starts, one line of statistics per
``--stats-seconds``, each agent it takes over, loses or cannot open, and a
summary when it stops.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import importlib
import logging
import os
import signal
import sys
from collections.abc import Callable
from typing import Any

from inbox_core.cli.frontdoor import FrontServer, RefusedBind, front_server, serve_until_signal
from inbox_core.cli.render import EXIT_FAILURE, EXIT_OK, EXIT_USAGE, err
from inbox_core.errors import InboxCoreError

__all__ = ["load_factory", "run_serve"]


class FactoryError(Exception):
    """``--host`` does not name a callable: what is wrong, for the usage message."""


def load_factory(spec: str) -> Callable[[str], Any]:
    """The callable ``MODULE:FACTORY`` names (``FACTORY`` may be dotted: ``mod:Class.make``).
    The current directory is searched first, as ``python -m`` does."""
    module_name, sep, attribute = spec.partition(":")
    if not sep or not module_name or not attribute:
        raise FactoryError(f"--host takes MODULE:FACTORY (e.g. myhosts:make_host), got {spec!r}")
    if "" not in sys.path and os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        target: Any = importlib.import_module(module_name)
    except ImportError as error:
        raise FactoryError(f"cannot import module {module_name!r}: {error}") from None
    except (Exception, SystemExit) as error:  # its own bug, not a traceback of ours
        raise FactoryError(
            f"importing {module_name!r} raised {type(error).__name__}: {error}"
        ) from None
    for name in attribute.split("."):
        try:
            target = getattr(target, name)
        except AttributeError:
            raise FactoryError(f"{module_name!r} has no attribute {attribute!r}") from None
    if not callable(target):
        raise FactoryError(f"{spec!r} is not callable (FACTORY(agent_id) must return a Host)")
    return target  # type: ignore[no-any-return]


def run_serve(args: argparse.Namespace) -> int:
    try:
        factory = load_factory(args.host)
    except FactoryError as error:
        err(f"inbox-core serve: {error}")
        return EXIT_USAGE
    from inbox_core.shell.stores import open_store  # noqa: PLC0415 - the shell, on demand
    from inbox_core.shell.worker import Worker  # noqa: PLC0415

    logging.basicConfig(
        level=logging.WARNING if args.quiet else logging.INFO,
        format="inbox-core serve: %(message)s",
        stream=sys.stderr,
    )
    try:
        store = open_store(args.store)
        worker = Worker(
            store,
            factory,
            max_agents=args.max_agents,
            idle_seconds=args.idle_seconds,
            poll_seconds=args.poll_seconds,
            lease_seconds=args.lease_seconds,
            name=args.name,
        )
        front = None if args.http is None else http_front(args, store, worker)
    except InboxCoreError as error:
        err(f"inbox-core serve: {type(error).__name__}: {error}")
        return EXIT_FAILURE
    except (RefusedBind, ImportError) as why:  # a bind the store may not use; no http extra
        err(f"inbox-core serve: {why}")
        store.close()
        return EXIT_USAGE if isinstance(why, RefusedBind) else EXIT_FAILURE
    try:
        asyncio.run(_serve(worker, args.stats_seconds, front))
    except OSError as error:  # the HTTP address could not be bound
        err(f"inbox-core serve: {error}")
        return EXIT_FAILURE
    finally:
        store.close()
    return EXIT_OK


def http_front(args: argparse.Namespace, store: Any, worker: Any) -> FrontServer:
    return front_server(args.http, store, worker_stats=worker.stats, quiet=args.quiet)


async def _serve(worker: Any, stats_seconds: float, front: FrontServer | None = None) -> None:
    loop = asyncio.get_running_loop()
    log = logging.getLogger("inbox_core.worker")

    async def report() -> None:
        while True:
            await asyncio.sleep(stats_seconds)
            log.info("%s", worker.stats().line())

    reporter = asyncio.create_task(report())
    try:
        if front is not None:  # the worker and the front door in this loop (R39)
            await serve_until_signal(front, beside=worker.run, on_stop=worker.stop)
        else:
            for signum in (signal.SIGTERM, signal.SIGINT):
                loop.add_signal_handler(signum, worker.stop)
            await worker.run()
    finally:
        reporter.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await reporter
