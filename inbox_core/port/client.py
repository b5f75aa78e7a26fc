"""A port as a child process: one request, one response line, within a timeout.

``PortProcess`` is what ``inbox-core conform`` talks to. Anything the port does
outside the protocol (it exits, it stays silent past the timeout, it answers
what is not a response) is a ``PortFailure`` whose message says what happened
and shows the end of the port's standard error, never a traceback.
"""

from __future__ import annotations

import queue
import shlex
import subprocess
import tempfile
import threading
from types import TracebackType
from typing import IO, Any, Final

from inbox_core.errors import InboxCoreError, shown
from inbox_core.port.protocol import (
    PARTS,
    PROTOCOL_VERSION,
    ProtocolError,
    check_response,
    decode,
    encode,
    request,
)

_EOF: Final = object()


class PortFailure(InboxCoreError):
    """The port broke the protocol: it crashed, hung past the timeout, or answered
    malformed JSON. ``inbox-core conform`` exits 2 with this message."""


class PortProcess:
    """A running port: ``call(op, **fields)`` returns its checked response document."""

    def __init__(self, command: str, *, timeout: float = 10.0) -> None:
        self.command, self.timeout = command, timeout
        self.parts: tuple[str, ...] = ()
        self.name = command
        try:
            argv = shlex.split(command)
        except ValueError as error:
            raise PortFailure(f"cannot parse the port command {command!r}: {error}") from None
        if not argv:
            raise PortFailure("the port command is empty")
        self._stderr = tempfile.TemporaryFile(  # noqa: SIM115 - closed by close()
            mode="w+", encoding="utf-8", errors="replace"
        )
        try:
            self._process = subprocess.Popen(
                argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=self._stderr,
                text=True,
                encoding="utf-8",
                errors="replace",
                bufsize=1,
            )
        except OSError as error:
            self._stderr.close()
            raise PortFailure(f"cannot start the port {command!r}: {error}") from None
        self._lines: queue.Queue[object] = queue.Queue()
        self._reader = threading.Thread(
            target=self._read, args=(self._process.stdout,), daemon=True
        )
        self._reader.start()

    def _read(self, stream: IO[str] | None) -> None:
        assert stream is not None
        for line in stream:
            self._lines.put(line)
        self._lines.put(_EOF)

    def handshake(self) -> tuple[str, ...]:
        """``hello``: the port's name and the parts it implements (a subset of PARTS)."""
        answer = self.call("hello", protocol=PROTOCOL_VERSION)
        if not answer["ok"]:
            raise PortFailure(
                f"the port refused the handshake: {answer['error']}: {answer['message']}"
            )
        if answer["protocol"] != PROTOCOL_VERSION:
            raise PortFailure(
                f"the port speaks protocol {answer['protocol']}, this kit {PROTOCOL_VERSION}"
            )
        self.name = answer["name"]
        self.parts = tuple(part for part in PARTS if part in answer["parts"])
        if not self.parts:
            raise PortFailure("the port declares no part (one of: " + ", ".join(PARTS) + ")")
        return self.parts

    def call(self, op: str, **fields: Any) -> dict[str, Any]:
        line = encode(request(op, **fields))
        try:
            assert self._process.stdin is not None
            self._process.stdin.write(line)
            self._process.stdin.flush()
        except (BrokenPipeError, OSError):
            raise self._failure(f"the port stopped reading its input at {op!r}") from None
        try:
            answer = self._lines.get(timeout=self.timeout)
        except queue.Empty:
            raise self._failure(f"no answer to {op!r} within {self.timeout:g} s") from None
        if answer is _EOF:
            raise self._failure(f"the port exited before answering {op!r}")
        try:
            return check_response(op, decode(str(answer)), self.parts or PARTS)
        except ProtocolError as error:
            raise self._failure(f"malformed answer to {op!r}: {error}") from None

    def _failure(self, what: str) -> PortFailure:
        code = self._process.poll()
        status = "" if code is None else f" (exit status {code})"
        self._stderr.flush()
        self._stderr.seek(0)
        tail = self._stderr.read()[-1500:].strip()
        said = f"\nits standard error ends with:\n{tail}" if tail else ""
        return PortFailure(f"port {shown(self.command)}: {what}{status}{said}")

    def close(self) -> None:
        """Say ``bye``, then stop the process if it does not exit by itself."""
        if self._process.poll() is None:
            try:
                assert self._process.stdin is not None
                self._process.stdin.write(encode(request("bye")))
                self._process.stdin.close()
                self._process.wait(timeout=min(self.timeout, 2.0))
            except (OSError, subprocess.TimeoutExpired, ValueError):
                self._process.kill()
                self._process.wait()
        self._stderr.close()

    def __enter__(self) -> PortProcess:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()
