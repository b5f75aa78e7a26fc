"""inbox_core.http: every agent of a store over HTTP (R39; specs/http.md).

``create_app(store, ...)`` is an ASGI application (Starlette) that posts commands with
the guarantees of ``store.post`` and follows logs with those of ``store.watch``: the four
intent paths and ``/commands`` with ``Idempotency-Key`` and ``Prefer: wait``, the post, the
agent, its events (a JSON page or Server-Sent Events), its fates and transcript, the list of
agents, ``/openapi.json``, ``/healthz`` and ``/metrics``; errors as RFC 9457 problems; bearer
tokens kept hashed in the store. ``inbox-core http STORE`` serves it with uvicorn, and
``inbox-core serve STORE --host ... --http HOST:PORT`` beside a worker. Needs the ``http``
extra (``pip install -e '.[http]'`` from a checkout). Importing this package imports
nothing of that extra until ``create_app`` is used (``inbox_core.http.defaults`` is read by
the command line's help).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from inbox_core.http.app import create_app

__all__ = ["create_app"]


def __getattr__(name: str) -> Any:
    if name != "create_app":
        raise AttributeError(f"module 'inbox_core.http' has no attribute {name!r}")
    try:
        from inbox_core.http.app import create_app  # noqa: PLC0415 - the extra, on demand
    except ImportError as error:  # pragma: no cover - the extra is installed in tests
        if error.name not in ("starlette", "prometheus_client", "anyio"):
            raise
        raise ImportError(
            f"inbox_core.http needs the http extra ({error.name} is missing): "
            "pip install -e '.[http]' from a checkout"
        ) from error
    return create_app
