"""How ``inbox-core serve`` and ``inbox-core http`` end (R37, R39): SIGTERM and SIGINT,
however many, whenever they come.

``Shutdown.install()`` takes SIGTERM and SIGINT for the rest of the process,
before anything else is done (``inbox_core.cli.main`` calls it before it imports
the parser, the shell or the HTTP stack, so this module imports only the
standard library's light modules): a signal then only asks what serves to stop
(``Worker.stop``, ``FrontServer.stop``; a second one makes a worker abandon the
hooks still running, and the server stop without waiting for requests) and never
kills the process with the default action, during startup, while it detaches or
in its last milliseconds (an asyncio handler would be removed, and the default
restored, when its loop closes). Python runs the handler in the main thread
between two bytecodes; ``stop`` hands the rest to the event loop thread-safely.
Once something has served and stopped, ``finish()`` ignores the signals for the
process's last moments (Python's finalization would restore the default action
before the process ends); if nothing served (a usage error), it puts the
previous handlers back.

A hook that blocks the event loop itself (a synchronous sleep) cannot be
abandoned from inside the loop: once a signal came, a watchdog thread exits
the process (status 1, without detaching: the next owner resumes its agents
as after a crash) when the loop has shown no sign of life for
``max(grace, STUCK_SECONDS)`` seconds.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
import time
from typing import Any, Final

from inbox_core.cli.output import err

__all__ = ["STUCK_SECONDS", "Shutdown", "exit_now"]

STUCK_SECONDS: Final = 5.0
"""The least time the event loop may stay unresponsive after a signal before the watchdog
gives up on it (a loop that works beats every ``_BEAT_SECONDS``)."""
_BEAT_SECONDS: Final = 0.25
_SIGNALS: Final = (signal.SIGTERM, signal.SIGINT)


def exit_now(code: int) -> None:
    """End the process at once, without waiting for abandoned tasks or threads (an abandoned
    hook may run in either): what must be durable is, and the logs were released."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(code)


class Shutdown:
    """The signals of one ``serve`` or ``http`` process: counted, forwarded to what serves
    (anything with a ``stop()`` that a signal handler may call)."""

    def __init__(self) -> None:
        self.signals = 0
        self._stuck_after = STUCK_SECONDS
        self._worker: Any = None
        self._previous: dict[int, Any] = {}
        self._beat: float | None = None  # the loop's last sign of life; None: no loop runs

    @classmethod
    def install(cls) -> Shutdown:
        shutdown = cls()
        for signum in _SIGNALS:
            with contextlib.suppress(ValueError):  # not the main thread: nothing to take
                shutdown._previous[signum] = signal.signal(signum, shutdown._on_signal)
        return shutdown

    def finish(self) -> None:
        """Nothing is left to stop: ignore the signals until the process ends (or, if no
        worker served, put the previous handlers back)."""
        for signum, previous in self._previous.items():
            with contextlib.suppress(ValueError):
                signal.signal(signum, signal.SIG_IGN if self._worker is not None else previous)

    def serve(self, worker: Any, grace: float = 0.0) -> None:
        """From now on signals stop ``worker`` (those that came before, at once); a loop
        that shows no sign of life for ``max(grace, STUCK_SECONDS)`` after a signal is given
        up (``beat``)."""
        self._stuck_after = max(grace, STUCK_SECONDS)
        self._worker = worker
        for _ in range(min(self.signals, 2)):
            worker.stop()

    def _on_signal(self, signum: int, frame: object) -> None:
        self.signals += 1
        if self._worker is not None:
            self._worker.stop()
        if self.signals == 1:
            watchdog = threading.Thread(target=self._watch, name="serve watchdog", daemon=True)
            watchdog.start()

    async def beat(self) -> None:
        """Show that the event loop runs (a task while the worker serves)."""
        import asyncio  # noqa: PLC0415 - the loop runs by now; the signals came first

        try:
            while True:
                self._beat = time.monotonic()
                await asyncio.sleep(_BEAT_SECONDS)
        finally:
            self._beat = None

    def _watch(self) -> None:
        while True:
            time.sleep(_BEAT_SECONDS)
            beat = self._beat
            if beat is not None and time.monotonic() - beat > self._stuck_after:
                err(
                    f"inbox-core serve: the event loop has not run for {self._stuck_after:g} s"
                    " after the signal (a hook blocks it); exiting without detaching: the next"
                    " owner resumes its agents as after a crash"
                )
                exit_now(1)
