"""``create_app(store, ...)``: the front door of one store as an ASGI application (R39).

Starlette's routing and responses, behind ``RawPath`` (agent ids are routed as the client
encoded them, ``inbox_core.http.paths``) and, when origins are given, Starlette's CORS
middleware. Every endpoint is wrapped by ``door.endpoint``: errors are problems
(``inbox_core.http.problem``). ``GET /`` and the files beside it are the inspector's
(``inbox_core/http/ui/``, R40), served when that directory exists and without a token.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import AsyncIterator, Callable, Sequence
from pathlib import Path
from typing import Any, Final

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Match, Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import Scope

from inbox_core import limits
from inbox_core.errors import InvalidInput
from inbox_core.http import reading
from inbox_core.http.agui_stream import post_agui
from inbox_core.http.auth import TTL_SECONDS
from inbox_core.http.bodies import BODY_SECONDS
from inbox_core.http.defaults import AGENTS_PER_MINUTE, PENDING_PER_AGENT
from inbox_core.http.door import FrontDoor, Handler, Limits, endpoint
from inbox_core.http.guard import Guard
from inbox_core.http.hosts import BadHost, HostRule, check_origin
from inbox_core.http.metrics import Metrics
from inbox_core.http.openapi import openapi_document
from inbox_core.http.paths import RawPath
from inbox_core.http.posting import INTENTS, post_command, post_intent
from inbox_core.http.problem import Problem, problem_response
from inbox_core.http.quotas import Quota
from inbox_core.shell.stores.base import Store

__all__ = ["UI_DIRECTORY", "create_app", "door_of", "host_rule"]

UI_DIRECTORY: Final = Path(__file__).resolve().parent / "ui"
"""The inspector's static files (issue 31): ``GET /`` serves ``index.html`` from here."""

CORS_HEADERS: Final = (
    "Authorization",
    "Content-Type",
    "Idempotency-Key",
    "Prefer",
    "Last-Event-ID",
)
CORS_EXPOSED: Final = ("Location", "Preference-Applied", "WWW-Authenticate", "Retry-After")
ANY_ORIGIN: Final = ("*", "null")
"""CORS origins that let any page read the answers (``null``: a sandboxed frame's, a file's)."""


def host_rule(allowed_hosts: Sequence[str], cors_origins: Sequence[str] = ()) -> HostRule:
    """The ``HostRule`` of ``--allowed-host`` values; ``InvalidInput`` for one that is no
    ``NAME[:PORT]``, or for a CORS origin that is none."""
    try:
        for origin in cors_origins:
            check_origin(origin)
    except BadHost as error:
        raise InvalidInput(f"a CORS origin: {error}") from None
    try:
        return HostRule(allowed_hosts)
    except BadHost as error:
        raise InvalidInput(f"an allowed host is NAME or NAME:PORT: {error}") from None


def create_app(
    store: Store,
    *,
    public: bool = False,
    cors_origins: Sequence[str] = (),
    worker_stats: Callable[[], object] | None = None,
    max_body_size: int = limits.MAX_DOCUMENT_SIZE,
    body_budget: int | None = None,
    body_seconds: float = BODY_SECONDS,
    max_streams: int = 1024,
    keepalive_seconds: float = 10.0,
    check_seconds: float = TTL_SECONDS,
    token_ttl: float = TTL_SECONDS,
    ui_directory: str | os.PathLike[str] | None = UI_DIRECTORY,
    allowed_hosts: Sequence[str] = (),
    agents_per_minute: int = AGENTS_PER_MINUTE,
    pending_per_agent: int = PENDING_PER_AGENT,
) -> Starlette:
    """The ASGI application serving every agent of ``store`` (a ``SqliteStore``, a
    ``PostgresStore``, or anything with ``Store``'s methods).

    ``public``: the server listens on an address other than loopback, so a token is always
    asked for (with none in the store, every request is 401); otherwise a store with no token
    is served to anyone who can reach the address. ``cors_origins``: the origins a browser may
    call from (none: CORS off). ``worker_stats``: a worker of this process whose statistics
    ``/metrics`` adds (``Worker.stats``). Bounds: ``max_body_size`` bytes per body (413
    above; ``maxDocumentSize`` by default), ``body_budget`` bytes of bodies in flight per
    token (twice that by default; 429 above), sent within ``body_seconds`` (408 after),
    ``max_streams`` open event streams per token
    (429 above); a stream writes a comment after ``keepalive_seconds`` of silence and checks
    its token every ``check_seconds``; token lookups are cached for ``token_ttl`` seconds.
    ``agents_per_minute`` and ``pending_per_agent``: the quotas of a token that has none of
    its own, and of every request to a store with no token (``inbox_core.http.quotas``; 429
    past them). ``allowed_hosts``: the ``Host`` names (``NAME`` or ``NAME:PORT``) it answers
    to beyond loopback (a proxy's); with no token in the store it answers to loopback names
    at its own port only, and with tokens to any name unless some are given
    (``inbox_core.http.hosts``; ``InvalidInput`` for one that is no host). ``cors_origins``
    holding ``*`` or ``null`` (any page, a sandboxed one) makes the app public: it asks for a
    token always.
    ``app.state.door.close()`` ends every open event stream and every post's wait (a server
    shutting down).
    """
    hosts = host_rule(allowed_hosts, cors_origins)
    public = public or any(origin in ANY_ORIGIN for origin in cors_origins)
    bounds = Limits(
        max_body_size=max_body_size,
        body_budget=2 * max_body_size if body_budget is None else body_budget,
        body_seconds=body_seconds,
        max_streams=max_streams,
        keepalive_seconds=keepalive_seconds,
        check_seconds=check_seconds,
        quota=Quota(agents_per_minute, pending_per_agent),
    )
    door = FrontDoor(store, Metrics(worker_stats), bounds, public=public, token_ttl=token_ttl)
    document = openapi_document()

    async def openapi(_door: FrontDoor, _request: Request) -> Response:
        return reading.json_response(document)

    def route(path: str, name: str, handler: Handler, method: str = "GET") -> Route:
        return Route(path, endpoint(door, name, handler), methods=[method], name=name)

    agent = "/v1/agents/{agent}"
    routes: list[BaseRoute] = [
        route("/openapi.json", "openapi", openapi),
        route("/healthz", "healthz", reading.healthz),
        route("/metrics", "metrics", reading.metrics),
        route("/v1/agents", "agents", reading.get_agents),
        route(agent, "agent", reading.get_agent),
        route(f"{agent}/events", "events", reading.get_events),
        route(f"{agent}/fates", "fates", reading.get_fates),
        route(f"{agent}/transcript", "transcript", reading.get_transcript),
        route(f"{agent}/posts/{{post}}", "post", reading.get_post),
        *(route(f"{agent}/{intent}", intent, post_intent(intent), "POST") for intent in INTENTS),
        route(f"{agent}/commands", "commands", post_command, "POST"),
        route(f"{agent}/ag-ui", "ag-ui", post_agui, "POST"),
    ]
    if ui_directory is not None and Path(ui_directory).is_dir():
        routes.append(_Pages("/", app=StaticFiles(directory=ui_directory, html=True), name="ui"))

    middleware = [Middleware(Guard, door=door, hosts=hosts), Middleware(RawPath)]
    if cors_origins:
        middleware.append(
            Middleware(
                CORSMiddleware,
                allow_origins=list(cors_origins),
                allow_methods=["GET", "POST"],
                allow_headers=list(CORS_HEADERS),
                expose_headers=list(CORS_EXPOSED),
                max_age=600,
            )
        )

    @contextlib.asynccontextmanager
    async def lifespan(_app: Starlette) -> AsyncIterator[None]:
        yield
        door.close()

    app = Starlette(
        routes=routes,
        middleware=middleware,
        exception_handlers={HTTPException: _http_problem},
        lifespan=lifespan,
    )
    app.router.redirect_slashes = False  # a 307 to a Location built from the Host: no (a 404)
    app.state.door = door
    return app


class _Pages(Mount):
    """The inspector's files at ``/``, never a path under ``/v1``: the API's own 404 and 405
    stay its own (a POST to ``/v1/agents//queue`` is no static file to refuse)."""

    def matches(self, scope: Scope) -> tuple[Match, Scope]:
        path = str(scope.get("path", ""))
        if path == "/v1" or path.startswith("/v1/"):
            return Match.NONE, {}
        return super().matches(scope)


def door_of(app: Any) -> FrontDoor:
    """The ``FrontDoor`` of an app ``create_app`` made."""
    door = app.state.door
    assert isinstance(door, FrontDoor)
    return door


async def _http_problem(_request: Request, error: Exception) -> Response:
    """Starlette's own errors (no route: 404; a route without the method: 405) as problems."""
    assert isinstance(error, HTTPException)
    headers = dict(error.headers or {})
    detail = {404: "no such resource", 405: "the resource does not take this method"}
    return problem_response(
        Problem(
            error.status_code, detail.get(error.status_code, str(error.detail)), headers=headers
        )
    )
