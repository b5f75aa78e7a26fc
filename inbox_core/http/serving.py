"""The app served by uvicorn (R39, D37, D44): ``FrontServer``, and the connections a server
keeps, which a slow or silent client cannot exhaust.

uvicorn closes a connection left idle after an answer (``timeout_keep_alive``, 5 s) but never
one that sends nothing, or part of a request head, before its first request: 1,100 such
connections took every file descriptor of a server and nobody could connect. So the server
speaks HTTP/1.1 through ``h11`` (uvicorn's own implementation, with two additions, here):

- a request line or head that is no HTTP/1.1 is answered a 400 problem (uvicorn's is
  plain text), with the headers of every answer;
- a request head must be complete within ``head_seconds`` (10 s by default) of the
  connection's start, or of the end of the previous answer on a kept-alive connection;
  bytes trickling in do not restart that clock (a slowloris); the connection is closed;
- at most ``max_connections`` are open (by default ``min(2048, RLIMIT_NOFILE - headroom)``,
  the headroom ``max(256, RLIMIT_NOFILE / 4)`` descriptors for the store, the worker and
  the logs; the soft ``RLIMIT_NOFILE`` is first raised to 4,096 where the hard one
  allows); a connection beyond it closes the one that has waited longest for a head
  (idle or trickling: a client with a request in flight is never dropped), and when every
  connection is busy it is answered ``503`` (a problem, ``Retry-After``) and closed.

The proxy headers (``X-Forwarded-For``, ``-Proto``) are not trusted: a client's address and
scheme are those of its connection.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator
from typing import Any, Final

from inbox_core.http.defaults import HEAD_SECONDS

__all__ = [
    "GRACE_SECONDS",
    "HEAD_SECONDS",
    "Connections",
    "FrontServer",
    "default_max_connections",
    "raise_descriptor_limit",
]

GRACE_SECONDS: Final = 5
"""How long a stopping server waits for requests in flight (event streams and waits for a
post's outcome end at once)."""
KEEP_ALIVE_SECONDS: Final = 5
"""How long a connection may stay idle after an answer (uvicorn's default)."""
MOST_CONNECTIONS: Final = 2048
"""The default bound on open connections when the descriptor limit allows more."""


WANTED_DESCRIPTORS: Final = 4096
"""The descriptor limit a server raises its own soft limit to, within the hard one: room for
``MOST_CONNECTIONS`` and the headroom (a shell's default soft limit is often 1,024)."""


def default_max_connections() -> int:
    """``min(MOST_CONNECTIONS, RLIMIT_NOFILE - headroom)``: the process keeps descriptors for
    the rest of its work (the store's connections, a worker's logs)."""
    try:
        import resource  # noqa: PLC0415 - POSIX only
    except ImportError:  # pragma: no cover - not POSIX
        return 512
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY or soft > 1 << 20:
        soft = 1 << 20
    return max(16, min(MOST_CONNECTIONS, soft - max(256, soft // 4)))


def raise_descriptor_limit(wanted: int = WANTED_DESCRIPTORS) -> None:
    """The process's soft descriptor limit raised to ``wanted`` where the hard limit allows
    (as servers do: the soft limit is a shell's default, not the system's bound)."""
    try:
        import resource  # noqa: PLC0415 - POSIX only
    except ImportError:  # pragma: no cover - not POSIX
        return
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY or soft >= wanted:
        return
    target = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
    if target > soft:
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))


def _problem(status: int, detail: str, *extra: tuple[bytes, bytes]) -> tuple[list[Any], bytes]:
    """The headers and body of a problem the server writes itself (no app saw the request),
    with the headers of every answer (D43) and ``Connection: close``."""
    from inbox_core.http.guard import SECURITY_HEADERS  # noqa: PLC0415
    from inbox_core.http.problem import Problem, json_bytes  # noqa: PLC0415

    body = json_bytes(Problem(status, detail).document())
    headers = [
        (b"content-type", b"application/problem+json"),
        (b"content-length", str(len(body)).encode()),
        *extra,
        (b"connection", b"close"),
        *SECURITY_HEADERS,
    ]
    return headers, body


def _refusal() -> bytes:
    headers, body = _problem(
        503, "every connection this server keeps is busy", (b"retry-after", b"1")
    )
    head = b"".join(name + b": " + value + b"\r\n" for name, value in headers)
    return b"HTTP/1.1 503 Service Unavailable\r\n" + head + b"\r\n" + body


REFUSAL: Final = _refusal()
"""What a connection gets when every other one is busy (written by the server itself)."""
MALFORMED: Final = _problem(400, "the request is no HTTP/1.1 request (its line or its head)")
"""What a request h11 cannot parse gets (uvicorn's own answer is text/plain)."""


class Connections:
    """The connections of one server: how many may be open, how long a head may take, and
    which ones wait for a head (oldest first). Counts what it did, for tests and logs."""

    def __init__(self, max_connections: int, head_seconds: float) -> None:
        self.limit = max_connections
        self.head_seconds = head_seconds
        self.waiting: dict[Any, None] = {}  # insertion order: the oldest wait first
        self.evicted = 0
        self.refused = 0
        self.timed_out = 0

    def admit(self, protocol: Any, open_count: int) -> bool:
        """Whether a new connection may stay (``open_count`` counts it): if the server is
        full, the connection waiting longest for a head is closed for it, if any."""
        if open_count <= self.limit:
            return True
        for victim in self.waiting:
            if victim is not protocol:
                self.evicted += 1
                victim.drop()
                return True
        self.refused += 1
        return False


def protocol_class(connections: Connections) -> type[asyncio.Protocol]:
    """uvicorn's h11 protocol with the head deadline and the connection bound of
    ``connections``."""
    from uvicorn.protocols.http.h11_impl import H11Protocol  # noqa: PLC0415 - the http extra

    class Guarded(H11Protocol):
        _timer: asyncio.TimerHandle | None = None

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            if not connections.admit(self, len(self.connections)):
                transport.write(REFUSAL)
                transport.close()
                return
            self._await_head()

        def _await_head(self) -> None:
            self._head_came()
            connections.waiting[self] = None
            self._timer = self.loop.call_later(connections.head_seconds, self._head_late)

        def _head_came(self) -> None:
            connections.waiting.pop(self, None)
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None

        def _head_late(self) -> None:
            if self in connections.waiting:
                connections.timed_out += 1
                self.drop()

        def drop(self) -> None:
            """Close this connection (it has no request in flight)."""
            self._head_came()
            if not self.transport.is_closing():
                self.transport.close()

        def handle_events(self) -> None:
            cycle = self.cycle
            super().handle_events()
            if self.cycle is not cycle:  # a request head arrived: its request runs
                self._head_came()

        def on_response_complete(self) -> None:
            if not self.transport.is_closing():
                self._await_head()  # the next head, on a kept-alive connection
            super().on_response_complete()

        def connection_lost(self, exc: Exception | None) -> None:
            self._head_came()
            super().connection_lost(exc)

        def send_400_response(self, msg: str) -> None:
            """A request line or head h11 refuses: a 400 problem like every other error."""
            import h11  # noqa: PLC0415 - uvicorn's own dependency

            self._head_came()
            headers, body = MALFORMED
            for event in (
                h11.Response(status_code=400, headers=headers, reason=b"Bad Request"),
                h11.Data(data=body),
                h11.EndOfMessage(),
            ):
                self.transport.write(self.conn.send(event))
            self.transport.close()

    return Guarded


class FrontServer:
    """uvicorn serving one app in the caller's event loop; signals are the caller's.
    ``bind`` has ``host`` and ``port`` (``str(bind)`` names it in errors)."""

    def __init__(
        self,
        app: Any,
        bind: Any,
        *,
        quiet: bool = False,
        head_seconds: float = HEAD_SECONDS,
        max_connections: int | None = None,
    ) -> None:
        import uvicorn  # noqa: PLC0415 - the http extra, on demand

        class Server(uvicorn.Server):
            @contextlib.contextmanager
            def capture_signals(self) -> Iterator[None]:  # the caller's handlers stay
                yield

        self.app = app
        self.bind = bind
        raise_descriptor_limit()
        self.connections = Connections(
            default_max_connections() if max_connections is None else max_connections,
            head_seconds,
        )
        config = uvicorn.Config(
            app,
            host=bind.host,
            port=bind.port,
            http=protocol_class(self.connections),
            lifespan="on",
            log_level="warning" if quiet else "info",
            timeout_graceful_shutdown=GRACE_SECONDS,
            timeout_keep_alive=KEEP_ALIVE_SECONDS,
            proxy_headers=False,
            server_header=False,
            log_config=None,
        )
        self.server = Server(config)
        self._loop: asyncio.AbstractEventLoop | None = None

    def stop(self, *, now: bool = False) -> None:
        """End the event streams and the waits, and stop listening; ``now``: without
        waiting for requests in flight. Safe from a signal handler or another thread (it sets
        flags and hands the rest to the server's loop)."""
        self.server.should_exit = True
        self.server.force_exit = self.server.force_exit or now
        if self._loop is not None:
            with contextlib.suppress(RuntimeError):  # the loop is closed: it has ended
                self._loop.call_soon_threadsafe(self._close_streams)

    def _close_streams(self) -> None:
        self.app.state.door.close()

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
