"""The ``inbox-core`` command line: ``demo``, ``replay``, ``vectors``, ``fuzz``, ``conform``,
``post``, ``watch``, ``serve``, ``http`` and ``token``.

``main(argv)`` parses the arguments, runs one subcommand and returns the exit
status (0 success, 1 failure or invalid input, 2 usage error); it writes to
``sys.stdout``/``sys.stderr`` only. The console script ``inbox-core`` and
``python -m inbox_core`` call it. It imports only what the command it runs uses:
the parser (``inbox_core.cli.parser``, its texts in ``inbox_core.cli.help``) is
standard library only, so ``--help`` and a usage error start at once; each
subcommand's module is imported once its arguments parsed: ``demo`` the asyncio
shell, ``fuzz`` the Hypothesis suite of ``inbox_core.testing`` (a development
dependency), ``conform`` the port kit, ``post``, ``watch``, ``serve`` and
``token`` a store (PostgreSQL needs psycopg), ``http`` and ``serve --http`` the
HTTP stack (the ``http`` extra). ``serve`` and ``http`` take SIGTERM and SIGINT
before anything else is imported (``inbox_core.cli.shutdown``): a signal during
their start stops them cleanly (exit 0), never kills them.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from typing import Any, Final, cast

__all__ = ["main"]

SIGNALLED: Final = ("serve", "http")
"""The commands that serve until a signal: they take the signals first thing."""


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status (0 ok, 1 failure, 2 usage)."""
    arguments = list(sys.argv[1:] if argv is None else argv)
    shutdown = None
    if arguments[:1] and arguments[0] in SIGNALLED:
        from inbox_core.cli.shutdown import Shutdown  # noqa: PLC0415 - before anything else

        shutdown = Shutdown.install()
    try:
        return _run(arguments, shutdown)
    finally:
        if shutdown is not None:
            shutdown.finish()


def _run(arguments: list[str], shutdown: Any) -> int:
    from inbox_core.cli.arguments import Deferred, resolve  # noqa: PLC0415
    from inbox_core.cli.output import EXIT_OK, EXIT_USAGE, err  # noqa: PLC0415
    from inbox_core.cli.parser import build_parser  # noqa: PLC0415

    try:
        args = build_parser().parse_args(arguments)
    except SystemExit as exit_:  # --help or --version (0), or a usage error (2)
        return exit_.code if isinstance(exit_.code, int) else EXIT_USAGE
    for name, value in vars(args).items():
        if isinstance(value, Deferred):
            setattr(args, name, value.value())
    args.shutdown = shutdown
    try:
        handler = cast(Callable[[Any], int], resolve(args.handler))
        return handler(args)
    except BrokenPipeError:  # pragma: no cover - e.g. piped into head
        return EXIT_OK
    except KeyboardInterrupt:  # pragma: no cover
        err("interrupted")
        return 130
