"""``inbox-core serve``: a worker process over a store (R37).

``inbox-core serve STORE --host MODULE:FACTORY`` imports ``FACTORY`` from
``MODULE`` (the current directory is on the import path, as for ``python -m``;
``--host path/to/hosts.py:FACTORY`` loads a file), builds a ``Worker`` over
``STORE`` and serves until SIGTERM or SIGINT, which detach every agent (their
inboxes stay in the log) and exit 0; a hook that ignores its abort signal is
abandoned after ``--grace`` seconds, or at once on a second signal
(``inbox_core.cli.shutdown``). Every option is range-checked before the store
is opened (exit 2). It logs to standard error: a line when it starts, one line
of statistics per ``--stats-seconds``, each agent it takes over, loses, cannot
open or abandons, and a summary when it stops. With ``--http HOST:PORT`` the front door
of the store (R39, ``inbox_core.cli.frontdoor``) runs in the worker's event loop, and a
signal stops both.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import importlib
import importlib.util
import logging
import os
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, Final

from inbox_core.cli.frontdoor import Refused, WithFront, front_server, responsive, run_together
from inbox_core.cli.output import EXIT_FAILURE, EXIT_OK, EXIT_USAGE, err
from inbox_core.cli.parser import FRONT_DOOR_OPTIONS
from inbox_core.cli.shutdown import Shutdown, exit_now
from inbox_core.errors import InboxCoreError, InvalidInput

if TYPE_CHECKING:
    from inbox_core.http.serving import FrontServer

__all__ = ["HOST_FORMS", "load_factory", "run_serve"]

STATS_FLOOR: Final = 0.001
"""The shortest ``--stats-seconds``, like ``poll_seconds``'s: 1e-9 wrote some 4,000 lines a
second, spinning the event loop."""

HOST_FORMS: Final = (
    "MODULE:FACTORY (an importable module, e.g. myhosts:make_host) or PATH.py:FACTORY"
    " (a file, e.g. ./hosts.py:make_host)"
)


class FactoryError(Exception):
    """``--host`` does not name a callable: what is wrong, for the usage message."""


def load_factory(spec: str) -> Callable[[str], Any]:
    """The callable ``MODULE:FACTORY`` or ``PATH.py:FACTORY`` names (``FACTORY`` may be
    dotted: ``mod:Class.make``). The current directory is searched first, as ``python -m``
    does; a file is loaded as the module its name says, its directory importable."""
    where, sep, attribute = spec.rpartition(":")
    if not sep or not where or not attribute:
        raise FactoryError(f"--host takes {HOST_FORMS}; got {spec!r}")
    if where.endswith(".py") or os.sep in where or (os.altsep and os.altsep in where):
        target: Any = _load_file(where)
    elif where.startswith("."):
        raise FactoryError(
            f"--host: a relative module name ({where!r}) cannot be imported; give {HOST_FORMS}"
        )
    else:
        target = _import(where)
    for name in attribute.split("."):
        try:
            target = getattr(target, name)
        except AttributeError:
            raise FactoryError(f"{where!r} has no attribute {attribute!r}") from None
    if not callable(target):
        raise FactoryError(f"{spec!r} is not callable (FACTORY(agent_id) must return a Host)")
    return target  # type: ignore[no-any-return]


def _import(module_name: str) -> ModuleType:
    if "" not in sys.path and os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        return importlib.import_module(module_name)
    except ImportError as error:
        raise FactoryError(f"cannot import module {module_name!r}: {error}") from None
    except (Exception, SystemExit) as error:  # its own bug, not a traceback of ours
        raise FactoryError(
            f"importing {module_name!r} raised {type(error).__name__}: {error}"
        ) from None


def _load_file(where: str) -> ModuleType:
    """The module of the Python file ``where`` (as ``python FILE`` would see its imports)."""
    path = Path(where)
    if path.suffix != ".py" or not path.is_file():
        raise FactoryError(f"--host: {where!r} is not a Python file (PATH.py:FACTORY)")
    name = path.stem
    loaded = sys.modules.get(name)
    if loaded is not None:
        if Path(getattr(loaded, "__file__", "") or "").resolve() == path.resolve():
            return loaded
        raise FactoryError(
            f"--host: {where!r} would be module {name!r}, which is already imported from "
            "elsewhere; rename the file"
        )
    if not name.isidentifier():
        raise FactoryError(f"--host: {path.name!r} is not a module name; rename the file")
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:  # pragma: no cover - a .py file always has one
        raise FactoryError(f"--host: cannot load {where!r}")
    module = importlib.util.module_from_spec(spec)
    folder = str(path.resolve().parent)
    if folder not in sys.path:
        sys.path.insert(0, folder)  # its own imports, as when it runs as a program
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except (Exception, SystemExit) as error:
        del sys.modules[name]
        raise FactoryError(f"loading {where!r} raised {type(error).__name__}: {error}") from None
    return module


def run_serve(args: argparse.Namespace) -> int:
    """``inbox-core serve``; ``args.shutdown`` holds the signals since the process started
    (``inbox_core.cli.main`` took them first)."""
    shutdown: Shutdown = args.shutdown
    from inbox_core.shell import durations  # noqa: PLC0415 - the shell, on demand
    from inbox_core.shell.worker import Worker  # noqa: PLC0415

    alone = [name for name in FRONT_DOOR_OPTIONS if getattr(args, name) not in (None, [])]
    if args.http is None and alone:
        err(f"inbox-core serve: --{alone[0].replace('_', '-')} goes with --http")
        return EXIT_USAGE
    responsive()  # its agents' loop waits for the GIL 1 ms at most, not 5 (D47)

    try:
        durations.seconds(  # a shorter period only floods standard error
            args.stats_seconds, "--stats-seconds", low=STATS_FLOOR, zero=True
        )
        factory = load_factory(args.host)
    except (InvalidInput, FactoryError) as error:
        err(f"inbox-core serve: {error}")
        return EXIT_USAGE
    logging.basicConfig(
        level=logging.WARNING if args.quiet else logging.INFO,
        format="inbox-core serve: %(message)s",
        stream=sys.stderr,
    )
    try:  # the options are checked before the store is opened (a usage error: exit 2)
        worker = Worker(
            args.store,
            factory,
            max_agents=args.max_agents,
            idle_seconds=args.idle_seconds,
            poll_seconds=args.poll_seconds,
            lease_seconds=args.lease_seconds,
            grace=args.grace,
            name=args.name,
            checkpoint_every=args.checkpoint_every,
        )
    except InvalidInput as error:
        err(f"inbox-core serve: {error}")
        return EXIT_USAGE
    except InboxCoreError as error:
        err(f"inbox-core serve: {type(error).__name__}: {error}")
        return EXIT_FAILURE
    try:
        front = None if args.http is None else http_front(args, worker)
    except (InboxCoreError, Refused, ImportError) as why:  # no http extra, a bad bind
        shown = f"{type(why).__name__}: {why}" if isinstance(why, InboxCoreError) else str(why)
        err(f"inbox-core serve: {shown}")
        worker.store.close()
        return EXIT_USAGE if isinstance(why, Refused) else EXIT_FAILURE
    try:
        shutdown.serve(worker if front is None else WithFront(worker, front), args.grace)
        asyncio.run(_serve(worker, shutdown, args.stats_seconds, front))
    except OSError as error:  # the HTTP address could not be bound
        err(f"inbox-core serve: {error}")
        return EXIT_FAILURE
    finally:
        worker.store.close()
    return EXIT_OK


def http_front(args: argparse.Namespace, worker: Any) -> FrontServer:
    """The front door of the worker's store at ``--http`` (R39), beside the worker."""
    return front_server(args.http, worker.store, args, worker_stats=worker.stats)


async def _serve(
    worker: Any, shutdown: Shutdown, stats_seconds: float, front: FrontServer | None = None
) -> None:
    log = logging.getLogger("inbox_core.worker")

    async def report() -> None:
        while True:
            await asyncio.sleep(stats_seconds)
            log.info("%s", worker.stats().line())

    helpers = [asyncio.create_task(report()), asyncio.create_task(shutdown.beat())]
    try:
        if front is None:
            await worker.run()
        else:  # the worker and the front door in this loop (R39)
            await run_together(front, worker.run, worker.stop)
    finally:
        for task in helpers:
            task.cancel()
        for task in helpers:
            with contextlib.suppress(asyncio.CancelledError):
                await task
    abandoned = worker.stats().abandoned
    if abandoned:  # their tasks or threads may never end: do not wait for them at exit
        worker.store.close()
        log.warning("%d abandoned hook(s) left running; exiting without them", abandoned)
        exit_now(EXIT_OK)
