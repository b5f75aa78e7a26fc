"""``GET /metrics`` (R39): Prometheus text from ``prometheus_client``, one registry per app.

Requests by endpoint and status with their latency; posts made durable by path and the
outcome each answer carried; the time from a post to its applied answer when the client
waited (``Prefer: wait``); open event streams. A worker in the same process (``inbox-core
serve --http``) adds its ``WorkerStats``: each number of it, and of its writer's
``WriteStats``, as a gauge named after the field.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, Final

import attrs
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client import generate_latest as _generate
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

__all__ = ["CONTENT_TYPE", "Metrics"]

CONTENT_TYPE: Final = CONTENT_TYPE_LATEST
_LATENCY: Final = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10, 60)


class Metrics:
    """The instruments of one app."""

    def __init__(self, worker_stats: Callable[[], object] | None = None) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        r = self.registry
        self.requests = Counter(
            "inbox_core_http_requests",
            "HTTP requests answered, by endpoint, method and status",
            ("endpoint", "method", "status"),
            registry=r,
        )
        self.latency = Histogram(
            "inbox_core_http_request_seconds",
            "Time to answer a request (event streams: to open), by endpoint",
            ("endpoint",),
            buckets=_LATENCY,
            registry=r,
        )
        self.posts = Counter(
            "inbox_core_http_posts",
            "Posts made durable (2xx or 409 answers, retries included), by path",
            ("path",),
            registry=r,
        )
        self.outcomes = Counter(
            "inbox_core_http_post_outcomes",
            "Outcomes the answers to posts carried: pending, applied, rejected",
            ("outcome",),
            registry=r,
        )
        self.applied = Histogram(
            "inbox_core_http_post_applied_seconds",
            "From a post's arrival to its applied answer, for clients that waited",
            buckets=_LATENCY,
            registry=r,
        )
        self.streams = Gauge(
            "inbox_core_http_event_streams", "Server-Sent Event streams open now", registry=r
        )
        if worker_stats is not None:
            r.register(_WorkerCollector(worker_stats))

    def answered(self, endpoint: str, method: str, status: int, seconds: float) -> None:
        self.requests.labels(endpoint, method, str(status)).inc()
        self.latency.labels(endpoint).observe(seconds)

    def text(self) -> bytes:
        return _generate(self.registry)


class _WorkerCollector(Collector):
    """Every number of a ``WorkerStats`` (and of its nested ``WriteStats``) as a gauge."""

    def __init__(self, stats: Callable[[], object]) -> None:
        self._stats = stats

    def collect(self) -> Iterator[GaugeMetricFamily]:
        yield from _gauges("inbox_core_worker", self._stats())

    def describe(self) -> Iterator[GaugeMetricFamily]:
        return iter(())


def _gauges(prefix: str, value: Any) -> Iterator[GaugeMetricFamily]:
    if not attrs.has(type(value)):
        return
    for field in attrs.fields(type(value)):
        item = getattr(value, field.name)
        name = f"{prefix}_{field.name}"
        if isinstance(item, bool):
            continue
        if isinstance(item, int | float):
            yield GaugeMetricFamily(name, f"WorkerStats {field.name}", value=float(item))
        else:
            yield from _gauges(name, item)
