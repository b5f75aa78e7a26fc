"""Bearer tokens (R39) on SQLite and PostgreSQL: kept hashed in the store, asked for once a
store has one (401 with ``WWW-Authenticate: Bearer``), scopes and agent patterns (403, the
filtered list), revocation within seconds, and the loopback rule of a store with none."""

from __future__ import annotations

import asyncio
import re
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from inbox_core import InvalidInput
from inbox_core.shell.stores.tokens import TokenExists, glob_matches, token_hash
from tests.shell.posts_support import execute
from tests.shell.support import run_async

from .support import (
    AnyStore,
    client_of,
    front,
    message_body,
    post_rows,
    prepared,
    problem,
    stream,
)


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def table(store: AnyStore) -> str:
    return "inbox_core_tokens"  # the same name in both stores


def test_r39_a_token_is_stored_only_as_its_hash_and_listed_without_it(
    fresh_store: AnyStore,
) -> None:
    tokens = fresh_store.tokens
    assert tokens.list() == []
    assert tokens.count() == 0
    secret = tokens.add("web", ["post", "read"], "team-a/*")
    assert re.fullmatch(r"ict_[A-Za-z0-9_-]{43}", secret)
    rows = execute(fresh_store, f"SELECT name, hash, scopes, pattern FROM {table(fresh_store)}")
    assert rows == [("web", token_hash(secret), "read,post", "team-a/*")]
    assert all(secret not in str(value) for row in rows for value in row)
    (info,) = tokens.list()
    assert (info.name, info.scopes, info.pattern) == ("web", ("read", "post"), "team-a/*")
    assert tokens.find(secret) == info
    assert tokens.find(secret + "x") is None
    with pytest.raises(TokenExists):
        tokens.add("web", ["read"], "*")
    assert tokens.revoke("web")
    assert not tokens.revoke("web")
    assert tokens.count() == 0


@pytest.mark.parametrize(
    ("name", "scopes", "pattern"),
    [
        ("", ["read"], "*"),
        ("a b", ["read"], "*"),
        ("x", [], "*"),
        ("x", ["write"], "*"),
        ("x", ["read"], ""),
        ("x", ["read"], "a\x00"),
        ("x" * 200, ["read"], "*"),
    ],
)
def test_r39_a_bad_name_scope_or_pattern_is_invalid_input_and_nothing_written(
    fresh_store: AnyStore, name: str, scopes: list[str], pattern: str
) -> None:
    with pytest.raises(InvalidInput):
        fresh_store.tokens.add(name, scopes, pattern)
    assert fresh_store.tokens.count() == 0


@given(st.text(max_size=20), st.text(max_size=20), st.text(max_size=20))
def test_r39_a_pattern_star_matches_any_characters_slash_included(a: str, b: str, c: str) -> None:
    assert glob_matches(f"{a}*{c}", a + b + c)
    assert glob_matches("*", a)
    assert glob_matches(a.replace("*", ""), a.replace("*", ""))
    literal = a.replace("*", "")
    assert glob_matches(literal, b) == (literal == b)  # nothing but * is special


@run_async
async def test_r39_with_tokens_every_request_needs_one_401_with_www_authenticate(
    fresh_store: AnyStore,
) -> None:
    store = fresh_store
    async with front(store) as client:
        open_before = await client.get("/v1/agents/a")  # no token yet: open (loopback)
        secret = store.tokens.add("all", ["read", "post"], "*")
        async with front(store) as asked:
            missing = await asked.get("/v1/agents/a")
            wrong = await asked.get("/v1/agents/a", headers=bearer(secret + "x"))
            basic = await asked.get("/v1/agents/a", headers={"Authorization": "Basic eDp5"})
            posted = await asked.post("/v1/agents/a/queue", json=message_body())
            good = await asked.get("/v1/agents/a", headers=bearer(secret))
            lower = await asked.get("/v1/agents/a", headers={"authorization": f"bearer {secret}"})
            free = [await asked.get(path) for path in ("/healthz", "/openapi.json")]
            metrics = await asked.get("/metrics")
    assert open_before.status_code == 200
    for response in (missing, wrong, basic, posted, metrics):
        problem(response, 401, "Unauthorized")
        assert response.headers["www-authenticate"] == "Bearer"  # as R39 words it
    assert post_rows(store, "a") == 0
    assert good.status_code == lower.status_code == 200
    assert [r.status_code for r in free] == [200, 200]


@run_async
async def test_r39_a_token_outside_its_scopes_or_pattern_is_403(fresh_store: AnyStore) -> None:
    store = fresh_store
    reader = store.tokens.add("reader", ["read"], "team-a/*")
    poster = store.tokens.add("poster", ["post"], "team-a/*")
    async with front(store) as client:
        read_ok = await client.get("/v1/agents/team-a%2Fx", headers=bearer(reader))
        read_other = await client.get("/v1/agents/team-b%2Fx", headers=bearer(reader))
        read_events = await client.get("/v1/agents/team-b/events", headers=bearer(reader))
        post_by_reader = await client.post(
            "/v1/agents/team-a%2Fx/queue", json=message_body(), headers=bearer(reader)
        )
        post_ok = await client.post(
            "/v1/agents/team-a%2Fx/queue", json=message_body(), headers=bearer(poster)
        )
        post_other = await client.post(
            "/v1/agents/team-b%2Fx/queue", json=message_body(), headers=bearer(poster)
        )
        read_by_poster = await client.get("/v1/agents/team-a%2Fx", headers=bearer(poster))
        tricks = [
            await client.post(
                f"/v1/agents/{path}/queue", json=message_body(), headers=bearer(poster)
            )
            for path in ("team-a%2F..%2F..%2Fteam-b", "team-a", "team-b%2Fteam-a%2Fx")
        ]
    assert read_ok.status_code == 200
    assert post_ok.status_code == 202
    for response in (read_other, read_events, post_by_reader, post_other, read_by_poster):
        problem(response, 403, "Forbidden")
    assert tricks[0].status_code == 202  # "team-a/../../team-b" is an id under team-a/
    assert [t.status_code for t in tricks[1:]] == [403, 403]
    assert post_rows(store, "team-b/x") == 0
    assert post_rows(store, "team-a/x") == 1


@run_async
async def test_r39_the_agent_list_shows_only_the_tokens_pattern(fresh_store: AnyStore) -> None:
    from inbox_core.commands import queue
    from tests.shell.support import msg

    store = fresh_store
    for agent in ("team-a/1", "team-a/2", "team-b/1", "team-a/3", "z"):
        store.post(agent, queue(msg("x")))
    secret = store.tokens.add("a", ["read"], "team-a/*")
    async with front(store) as client:
        page = (await client.get("/v1/agents?limit=2", headers=bearer(secret))).json()
        rest = (await client.get(f"/v1/agents?after={page['next']}", headers=bearer(secret))).json()
    assert [a["id"] for a in page["agents"]] == ["team-a/1", "team-a/2"]
    assert [a["id"] for a in rest["agents"]] == ["team-a/3"]
    assert rest["next"] is None


@run_async
async def test_r39_revocation_takes_effect_within_seconds_also_for_open_streams(
    fresh_store: AnyStore,
) -> None:
    store = fresh_store
    secret = store.tokens.add("gone", ["read"], "*")
    store.tokens.add("stays", ["read"], "*")
    async with front(store, token_ttl=0.2, check_seconds=0.1) as client:
        assert (await client.get("/v1/agents/a", headers=bearer(secret))).status_code == 200
        events = await stream(client.app, "/v1/agents/a/events", *bearer(secret).items())  # type: ignore[attr-defined]
        assert events.status == 200
        store.tokens.revoke("gone")
        await events.finished(timeout=5)  # the stream ends on its own
        await asyncio.sleep(0.3)
        refused = await client.get("/v1/agents/a", headers=bearer(secret))
    problem(refused, 401, "Unauthorized")


@run_async
async def test_r39_revoking_the_last_token_opens_a_loopback_app_but_never_a_public_one(
    fresh_store: AnyStore,
) -> None:
    store = fresh_store
    store.tokens.add("only", ["read"], "*")
    async with (
        front(store, token_ttl=0.1) as local,
        front(store, public=True, token_ttl=0.1) as public,
    ):
        assert (await local.get("/v1/agents/a")).status_code == 401
        store.tokens.revoke("only")
        await asyncio.sleep(0.2)
        assert (await local.get("/v1/agents/a")).status_code == 200
        refused = await public.get("/v1/agents/a")
        anything = await public.get("/v1/agents/a", headers=bearer("ict_anything"))
    problem(refused, 401, "Unauthorized")
    problem(anything, 401, "Unauthorized")


@pytest.fixture(scope="module")
def guarded(tmp_path_factory: pytest.TempPathFactory) -> Any:
    from inbox_core.http import create_app
    from inbox_core.shell import SqliteStore

    store = prepared(SqliteStore(tmp_path_factory.mktemp("guarded") / "agents.db"))
    secret = store.tokens.add("only", ["read", "post"], "*")
    yield store, secret, create_app(store)
    store.close()


@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(header=st.text(max_size=80).filter(lambda t: t.isprintable() and t.isascii()))
def test_r39_any_authorization_header_but_the_token_is_401_and_writes_nothing(
    guarded: Any, header: str
) -> None:
    store, secret, app = guarded

    async def attempt() -> tuple[int, str]:
        async with client_of(app) as client:
            response = await client.post(
                "/v1/agents/x/queue", json=message_body(), headers={"Authorization": header}
            )
        return response.status_code, response.headers.get("www-authenticate", "")

    before = post_rows(store, "x")
    status, challenge = asyncio.run(attempt())
    if header.strip().partition(" ")[2].strip() == secret and header.lower().startswith("bearer"):
        assert status == 202
    else:
        assert status == 401
        assert challenge.startswith("Bearer")
        assert post_rows(store, "x") == before


@run_async
async def test_r39_r40_the_inspectors_files_at_root_need_no_token(
    fresh_store: AnyStore, tmp_path: Any
) -> None:
    ui = tmp_path / "ui"
    ui.mkdir()
    (ui / "index.html").write_text("<!doctype html><title>inspector</title>")
    (ui / "app.js").write_text("export {}")
    fresh_store.tokens.add("only", ["read"], "*")
    async with front(fresh_store, ui_directory=ui) as client:
        page = await client.get("/")
        script = await client.get("/app.js")
        api = await client.get("/v1/agents")
        missing = await client.get("/nothing.js")
    assert page.status_code == 200
    assert "inspector" in page.text
    assert script.status_code == 200
    problem(api, 401, "Unauthorized")
    problem(missing, 404, "Not Found")
