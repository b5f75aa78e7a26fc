"""A port as a child process: one request, one response line, bounded in time and memory.

``PortProcess`` is what ``inbox-core conform`` talks to. Anything the port does
outside the protocol (it exits, it stays silent or stops reading past the timeout,
it answers what is not a response, a line longer than ``maxDocumentSize``) is a
``PortFailure`` whose message says what happened and shows the end of the port's
standard error, never a traceback. Whatever the port does, the kit holds at most
one response line of ``maxDocumentSize`` bytes and the last ``STDERR_TAIL`` bytes
of its standard error, and no request waits longer than the timeout: a reader
thread per output stream, and a writer thread, so a port that stops reading in the
middle of a large request cannot block the kit.

``InProcessPort`` holds a port object of this process (the reference, a seeded
fault) behind the same interface, every message through its JSON line: what the
kit's own tests use.
"""

from __future__ import annotations

import contextlib
import os
import queue
import shlex
import subprocess
import threading
from collections.abc import Callable
from types import TracebackType
from typing import IO, Any, Final, Protocol

from inbox_core import limits
from inbox_core.errors import InboxCoreError, shown
from inbox_core.port.protocol import (
    PARTS,
    PROTOCOL_VERSION,
    ProtocolError,
    check_response,
    decode,
    encode,
    failure,
    request,
)

STDERR_TAIL: Final = 64 * 1024
"""Bytes of a port's standard error the kit keeps (the end: where a crash says why)."""
SHOWN_STDERR: Final = 1500
"""Characters of that tail a failure message shows."""
_CHUNK: Final = 64 * 1024
_EOF: Final = object()


class PortFailure(InboxCoreError):
    """The port broke the protocol: it crashed, hung past the timeout, stopped reading, or
    answered malformed JSON. ``inbox-core conform`` exits 2 with this message."""


class Port(Protocol):
    """What the kit drives: a started port after its handshake."""

    name: str
    parts: tuple[str, ...]

    def call(self, op: str, **fields: Any) -> dict[str, Any]: ...


class _TooLong:
    """What the reader hands over instead of a line past the limit."""

    def __init__(self, size: int) -> None:
        self.size = size


def _lines(stream: IO[bytes], out: queue.Queue[object], limit: int) -> None:
    """Split ``stream`` into lines for ``out``; stop at the first line past ``limit`` bytes
    (the kit gives up on the port then, so nothing more is read or kept)."""
    pending = bytearray()
    while chunk := stream.read1(_CHUNK):  # type: ignore[attr-defined]
        start = 0
        while (end := chunk.find(b"\n", start)) >= 0:
            pending += chunk[start:end]
            if len(pending) > limit:
                break
            out.put(bytes(pending))
            pending.clear()
            start = end + 1
        else:
            pending += chunk[start:]
        if len(pending) > limit:
            out.put(_TooLong(len(pending)))
            return
    if pending:  # a last line without its newline
        out.put(bytes(pending))
    out.put(_EOF)


def _tail(stream: IO[bytes], keep: bytearray, lock: threading.Lock) -> None:
    """Keep the last ``STDERR_TAIL`` bytes of ``stream`` in ``keep``, read to its end."""
    while chunk := stream.read1(_CHUNK):  # type: ignore[attr-defined]
        with lock:
            keep += chunk
            if len(keep) > 2 * STDERR_TAIL:
                del keep[:-STDERR_TAIL]


class PortProcess:
    """A running port: ``call(op, **fields)`` returns its checked response document."""

    def __init__(
        self, command: str, *, timeout: float = 10.0, max_line: int = limits.MAX_DOCUMENT_SIZE
    ) -> None:
        self.command, self.timeout = command, timeout
        self.parts: tuple[str, ...] = ()
        self.name = command
        try:
            argv = shlex.split(command)
        except ValueError as error:
            raise PortFailure(f"cannot parse the port command {command!r}: {error}") from None
        if not argv:
            raise PortFailure("the port command is empty")
        try:
            self._process = subprocess.Popen(
                argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
            )
        except OSError as error:
            raise PortFailure(f"cannot start the port {command!r}: {error}") from None
        assert self._process.stdin is not None
        self._stdin = self._process.stdin
        self._answers: queue.Queue[object] = queue.Queue()
        self._stderr, self._stderr_lock = bytearray(), threading.Lock()
        self._requests: queue.Queue[bytes | None] = queue.Queue()
        self._written = 0  # bytes of requests the port has taken so far
        self._write_error: str | None = None
        self._readers = [
            threading.Thread(target=target, args=args, daemon=True)
            for target, args in (
                (_lines, (self._process.stdout, self._answers, max_line)),
                (_tail, (self._process.stderr, self._stderr, self._stderr_lock)),
            )
        ]  # Popen made both pipes
        for thread in [*self._readers, threading.Thread(target=self._write, daemon=True)]:
            thread.start()

    def _write(self) -> None:
        """Hand each request to the port, chunk by chunk; a port that stops reading blocks
        this thread only, until ``close`` kills it."""
        fd = self._stdin.fileno()
        while (data := self._requests.get()) is not None:
            try:
                for start in range(0, len(data), _CHUNK):
                    self._written += os.write(fd, data[start : start + _CHUNK])
            except OSError as error:
                self._write_error = str(error)
                break
        with contextlib.suppress(OSError):  # the file object closes its descriptor, once
            self._stdin.close()

    def handshake(self) -> tuple[str, ...]:
        """``hello``: the port's name and the parts it implements (a subset of PARTS)."""
        return handshake(self)

    def call(self, op: str, **fields: Any) -> dict[str, Any]:
        data = encode(request(op, **fields)).encode("utf-8")
        sent = self._written + len(data)
        self._requests.put(data)
        try:
            answer = self._answers.get(timeout=self.timeout)
        except queue.Empty:
            if self._write_error is not None or self._written < sent:
                taken = len(data) - (sent - self._written)
                what = f"the port stopped reading its input ({taken:,} of {len(data):,} bytes"
                raise self._failure(f"{what} of {op!r} taken within {self.timeout:g} s)") from None
            raise self._failure(f"no answer to {op!r} within {self.timeout:g} s") from None
        if answer is _EOF:
            raise self._failure(f"the port exited before answering {op!r}")
        if isinstance(answer, _TooLong):
            raise self._failure(
                f"an answer to {op!r} longer than {limits.MAX_DOCUMENT_SIZE:,} bytes"
                " (maxDocumentSize)"
            )
        assert isinstance(answer, bytes)
        try:
            return check_response(
                op, decode(answer.decode("utf-8", errors="replace")), self.parts or PARTS
            )
        except ProtocolError as error:
            raise self._failure(f"malformed answer to {op!r}: {error}") from None

    def stderr_tail(self) -> str:
        with self._stderr_lock:
            return self._stderr[-STDERR_TAIL:].decode("utf-8", errors="replace")

    def _failure(self, what: str) -> PortFailure:
        code = self._process.poll()
        status = "" if code is None else f" (exit status {code})"
        if code is not None:  # what a crashing port wrote last is on its way
            self._readers[1].join(timeout=1.0)
        tail = self.stderr_tail()[-SHOWN_STDERR:].strip()
        said = f"\nits standard error ends with:\n{tail}" if tail else ""
        return PortFailure(f"port {shown(self.command)}: {what}{status}{said}")

    def close(self) -> None:
        """Say ``bye``, then stop the process if it does not exit by itself within a
        moment (a port that stopped reading never gets the ``bye``)."""
        if self._process.poll() is None:
            self._requests.put(encode(request("bye")).encode("utf-8"))
            self._requests.put(None)
            try:
                self._process.wait(timeout=min(self.timeout, 2.0))
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
        else:
            self._requests.put(None)
        streams = (self._process.stdout, self._process.stderr)
        for thread, stream in zip(self._readers, streams, strict=True):
            thread.join(timeout=1.0)  # at the end of its stream now, unless a child holds it
            if stream is not None and not thread.is_alive():
                stream.close()

    def __enter__(self) -> PortProcess:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()


def handshake(port: Port) -> tuple[str, ...]:
    """``hello`` on ``port``: its name and parts are set; ``PortFailure`` if it refuses,
    speaks another version or declares no known part."""
    answer = port.call("hello", protocol=PROTOCOL_VERSION)
    if not answer["ok"]:
        raise PortFailure(f"the port refused the handshake: {answer['error']}: {answer['message']}")
    if answer["protocol"] != PROTOCOL_VERSION:
        raise PortFailure(
            f"the port speaks protocol {answer['protocol']}, this kit {PROTOCOL_VERSION}"
        )
    port.name = answer["name"]
    port.parts = tuple(part for part in PARTS if part in answer["parts"])
    if not port.parts:
        raise PortFailure("the port declares no part (one of: " + ", ".join(PARTS) + ")")
    return port.parts


class InProcessPort:
    """A port object of this process (``handle(document) -> response``) behind the same
    interface as a process, each request and answer through its JSON line."""

    def __init__(
        self, handle: Callable[[object], dict[str, Any]], name: str = "in-process"
    ) -> None:
        self._handle, self.name = handle, name
        self.parts: tuple[str, ...] = ()

    def call(self, op: str, **fields: Any) -> dict[str, Any]:
        try:
            answer = self._handle(decode(encode(request(op, **fields))))
        except InboxCoreError as error:
            answer = failure(error)
        try:
            return check_response(op, decode(encode(answer)), self.parts or PARTS)
        except ProtocolError as error:
            raise PortFailure(f"malformed answer to {op!r}: {error}") from None

    def handshake(self) -> tuple[str, ...]:
        return handshake(self)
