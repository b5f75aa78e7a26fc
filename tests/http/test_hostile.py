"""Hostile requests (R39, the limits of formats §1): any bytes as a body, any JSON, bad
headers, tokens and query strings get a 4xx problem, never a traceback, and write nothing
unless the answer says the post is durable (2xx, 409)."""

from __future__ import annotations

import asyncio
import json
import threading
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from inbox_core.http import create_app
from inbox_core.shell import SqliteStore
from tests.shell.support import run_async

from .support import AnyStore, client_of, post_rows, prepared, raw_request

PATHS = ("followup", "queue", "steer", "inject", "commands")
AGENT = "hostile"

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4)
    ),
    max_leaves=20,
)
# near misses: an intent body's keys with any values
intent_like = st.fixed_dictionaries(
    {},
    optional={
        "message": json_values
        | st.fixed_dictionaries(
            {"content": json_values},
            optional={"id": json_values, "role": json_values, "source": json_values},
        ),
        "contexts": json_values,
        "expect": json_values,
    },
)


@pytest.fixture(scope="module")
def sqlite_app(tmp_path_factory: pytest.TempPathFactory) -> Any:
    store = prepared(SqliteStore(tmp_path_factory.mktemp("hostile") / "agents.db"))
    yield store, create_app(store, max_body_size=4096)
    store.close()


def run(coroutine: Any) -> Any:
    return asyncio.run(coroutine)


async def _post(
    app: Any, path: str, body: bytes, content_type: str = "application/json"
) -> tuple[int, dict[str, str], Any]:
    async with client_of(app) as client:
        response = await client.post(
            f"/v1/agents/{AGENT}/{path}", content=body, headers={"content-type": content_type}
        )
    return response.status_code, dict(response.headers), response.content


def _check(store: AnyStore, before: int, status: int, headers: dict[str, str], body: bytes) -> None:
    after = post_rows(store, AGENT)
    if status in (200, 202, 409):
        assert after == before + 1  # durable when 2xx or 409 is sent
        return
    assert 400 <= status < 500, (status, body[:300])
    assert headers["content-type"] == "application/problem+json"
    document = json.loads(body)
    assert document["status"] == status
    assert isinstance(document["title"], str)
    assert after == before  # never written on another 4xx


@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(path=st.sampled_from(PATHS), body=st.binary(max_size=300))
def test_r39_any_bytes_as_a_body_get_a_4xx_problem_and_nothing_written(
    sqlite_app: Any, path: str, body: bytes
) -> None:
    store, app = sqlite_app
    before = post_rows(store, AGENT)
    status, headers, content = run(_post(app, path, body))
    assert status != 202
    assert status != 200
    _check(store, before, status, headers, content)


@settings(max_examples=80, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(path=st.sampled_from(PATHS), document=json_values | intent_like)
def test_r39_any_json_is_a_post_or_a_4xx_problem_and_nothing_written(
    sqlite_app: Any, path: str, document: Any
) -> None:
    store, app = sqlite_app
    before = post_rows(store, AGENT)
    body = json.dumps(document).encode()
    status, headers, content = run(_post(app, path, body))
    _check(store, before, status, headers, content)


@settings(max_examples=30, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    content_type=st.text(max_size=40).filter(
        lambda t: t.isascii() and "\n" not in t and "\r" not in t
    )
)
def test_r39_any_content_type_but_json_is_415(sqlite_app: Any, content_type: str) -> None:
    store, app = sqlite_app
    kind = content_type.split(";", maxsplit=1)[0].strip().lower()
    before = post_rows(store, AGENT)
    status, headers, content = run(
        _post(app, "queue", b'{"message": {"content": "x"}}', content_type)
    )
    if kind != "application/json":
        assert status == 415
    else:  # a charset parameter other than UTF-8 is 415 too
        assert status == 202 or (status == 415 and "charset" in content_type.lower())
    _check(store, before, status, headers, content)


@pytest.mark.parametrize(
    ("headers", "status"),
    [
        ([("x-a", "b" * 40_000)], 431),
        ([(f"x-{i}", "v") for i in range(150)], 431),
        ([("content-length", "12abc")], 400),
        ([("content-length", "9" * 40)], 413),
        ([("prefer", "wait=" + "x" * 5000), ("content-type", "application/json")], 202),
        ([("authorization", "Bearer " + "x" * 5000), ("content-type", "application/json")], 202),
    ],
)
@run_async
async def test_r39_bounded_and_malformed_headers(
    headers: list[tuple[str, str]], status: int, tmp_path: Any
) -> None:
    store = prepared(SqliteStore(tmp_path / "agents.db"))
    try:
        app = create_app(store)
        body = b'{"message": {"content": "x"}}'
        sent = [*headers]
        if not any(name == "content-type" for name, _ in headers):
            sent.append(("content-type", "application/json"))
        if not any(name == "content-length" for name, _ in headers):
            sent.append(("content-length", str(len(body))))
        got, answer_headers, data = await raw_request(
            app, "POST", "/v1/agents/h/queue", body, *sent
        )
        assert got == status, data
        if status >= 400:
            assert answer_headers["content-type"] == "application/problem+json"
            assert post_rows(store, "h") == 0
        else:
            assert post_rows(store, "h") == 1  # an unparsable Prefer is ignored (RFC 7240)
    finally:
        store.close()


@settings(max_examples=40, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(query=st.text(max_size=40))
def test_r39_any_query_string_is_an_answer_or_a_400_problem(sqlite_app: Any, query: str) -> None:
    _, app = sqlite_app

    async def get() -> list[int]:
        async with client_of(app) as client:
            statuses = []
            for path in (f"/v1/agents/{AGENT}/events", "/v1/agents"):
                response = await client.get(
                    path, params={"since": query, "limit": query, "after": query}
                )
                statuses.append(response.status_code)
                if response.status_code != 200:
                    assert response.headers["content-type"] == "application/problem+json"
            return statuses

    assert set(run(get())) <= {200, 400}


class _HeldStore:
    """A store whose ``pending_count`` waits for ``release`` (a slow read in a thread)."""

    def __init__(self, store: Any) -> None:
        self._store = store
        self.entered = threading.Event()
        self.release = threading.Event()
        self.finished = threading.Event()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    def pending_count(self, agent_id: str) -> int:
        self.entered.set()
        self.release.wait(30)
        self.finished.set()
        return int(self._store.pending_count(agent_id))


@run_async
async def test_r39_a_cancelled_request_ends_only_after_its_store_call(store: AnyStore) -> None:
    """A request cancelled while its store call runs in a thread (its client left, the
    server stopped) ends only once that call did: nothing of a request outlives it, so the
    store, closed after the last request, is never in use by a thread of one."""
    from .support import Stream

    held = _HeldStore(store)
    app = create_app(held)  # type: ignore[arg-type]
    request = Stream(app, "/v1/agents/a")
    task = asyncio.ensure_future(app(request.scope, request._receive, request._send))
    await asyncio.to_thread(held.entered.wait, 10)
    task.cancel()
    await asyncio.sleep(0.2)
    ended_early = task.done()
    held.release.set()
    await asyncio.wait({task}, timeout=10)
    assert not ended_early  # it waited for its thread
    assert held.finished.is_set()
    assert task.cancelled()
