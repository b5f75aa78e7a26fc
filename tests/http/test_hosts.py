"""The front door against a hostile web page (R39, R40, D43; issue 37 items 1 and 2), in
process: the ``Host`` a request names decides whether a store with no token answers it
(DNS rebinding), and every answer forbids framing and sniffing.

The app is reached as a server bound to 127.0.0.1:8000 is (``scope["server"]``); each
spelling of a host an attacker might try is sent as the ``Host`` header, and for those the
app refuses a post is made too, which must write nothing. The same rule is held against a
real server process, raw requests included, in ``test_servers_hardening.py``, and against
Chromium in ``tests/http_ui/test_hostile_pages.py``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from inbox_core.errors import InvalidInput
from inbox_core.http import create_app
from inbox_core.http.guard import CONTENT_SECURITY_POLICY
from inbox_core.http.hosts import BadHost, HostRule, is_loopback, parse_host
from tests.shell.support import run_async

from .support import AnyStore, Stream, agent_name, message_body, post_rows, problem

BASE = "http://127.0.0.1:8000"

ANSWERED = [
    "127.0.0.1:8000",
    "localhost:8000",
    "LOCALHOST:8000",
    "LocalHost:8000",
    "[::1]:8000",
    "[0:0:0:0:0:0:0:1]:8000",
    "127.0.0.2:8000",
]
MISDIRECTED = [
    "evil.example",
    "evil.example:8000",
    "EVIL.example:8000",
    "evil.example.:8000",
    "localhost.:8000",  # a trailing dot: no name we answer to
    "127.0.0.1.:8000",
    "localhost",  # no port: 80, not ours
    "localhost:",
    "localhost:80",
    "localhost:8001",
    "127.0.0.1",
    "[::1]",
    "127.1:8000",  # IPv4 in the notations a browser rewrites
    "2130706433:8000",
    "0x7f.0.0.1:8000",
    "0177.0.0.1:8000",
    "127.000.000.001:8000",
    "[::ffff:127.0.0.1]:8000",
    "[::2]:8000",
    "localhost.evil.example:8000",
    "evil.localhost:8000",
    "127.0.0.1.nip.io:8000",
]
MALFORMED = [
    "::1:8000",  # IPv6 without brackets
    "[::1:8000",
    "[fe80::1%25eth0]:8000",
    "[evil.example]:8000",
    "user@localhost:8000",
    "localhost:8000:8000",
    "localhost:http",
    "localhost:99999",
    "localhost:+8000",
    "%6cocalhost:8000",
    "local host:8000",
]


@contextlib.asynccontextmanager
async def at_loopback(store: AnyStore, **options: Any) -> AsyncIterator[httpx.AsyncClient]:
    """A client of the app as a server bound to 127.0.0.1:8000 sees it."""
    app = create_app(store, **options)
    transport = httpx.ASGITransport(app)
    async with httpx.AsyncClient(transport=transport, base_url=BASE, timeout=30) as client:
        client.app = app  # type: ignore[attr-defined]
        yield client


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


# --------------------------------------------------------------------- the spellings


@pytest.mark.parametrize("host", ANSWERED)
def test_d43_loopback_spellings_are_loopback(host: str) -> None:
    parsed = parse_host(host)
    assert is_loopback(parsed.name)
    assert parsed.port == 8000


@pytest.mark.parametrize("host", MISDIRECTED)
def test_d43_other_names_are_no_loopback_at_port_8000(host: str) -> None:
    parsed = parse_host(host)
    assert not (is_loopback(parsed.name) and parsed.port == 8000)


@pytest.mark.parametrize("host", MALFORMED)
def test_d43_a_malformed_host_is_no_host(host: str) -> None:
    with pytest.raises(BadHost):
        parse_host(host)


def test_d43_the_rule_follows_the_address_the_connection_reached() -> None:
    """D43: a name is ours at the port of ``scope["server"]`` (the scheme's default when
    the host names none); an in-process client that addressed the app by a name of its own
    (``http://front``) is answered under that name."""
    rule = HostRule()
    server = {"server": ("127.0.0.1", 80), "scheme": "http"}
    assert rule.accepts(parse_host("localhost"), server)
    assert not rule.accepts(parse_host("localhost"), {**server, "scheme": "https"})
    assert rule.accepts(parse_host("front"), {"server": ("front", None)})
    assert not rule.accepts(parse_host("evil"), {"server": ("front", None)})
    assert rule.accepts(parse_host("[::1]:9"), {"server": ("::1", 9)})
    listed = HostRule(["proxy.internal", "api.example:443"])
    assert listed.accepts(parse_host("proxy.internal:1234"), server)
    assert listed.accepts(parse_host("API.example:443"), server)
    assert not listed.accepts(parse_host("api.example:8443"), server)


# ------------------------------------------------------------------- a store, no token


@pytest.mark.parametrize("host", ANSWERED)
@run_async
async def test_r39_d43_with_no_token_loopback_names_are_answered(
    store: AnyStore, host: str
) -> None:
    agent = agent_name()
    async with at_loopback(store) as client:
        read = await client.get(f"/v1/agents/{agent}", headers={"Host": host})
        posted = await client.post(
            f"/v1/agents/{agent}/queue", json=message_body(), headers={"Host": host}
        )
    assert read.status_code == 200
    assert posted.status_code == 202
    assert post_rows(store, agent) == 1


@pytest.mark.parametrize(
    ("host", "status"),
    [(host, 421) for host in MISDIRECTED] + [(host, 400) for host in MALFORMED],
)
@run_async
async def test_r39_d43_with_no_token_another_host_is_refused_and_nothing_written(
    store: AnyStore, host: str, status: int
) -> None:
    """Issue 37 item 1: a page whose name was re-resolved to 127.0.0.1 reads nothing and
    posts nothing (on c46a0f0 ``Host: evil.example`` read the list, 200, and posted, 202)."""
    agent = agent_name()
    title = "Misdirected Request" if status == 421 else "Bad Request"
    async with at_loopback(store) as client:
        answers = [
            await client.get(path, headers={"Host": host})
            for path in ("/v1/agents", f"/v1/agents/{agent}", "/", "/healthz", "/openapi.json")
        ]
        posted = await client.post(
            f"/v1/agents/{agent}/followup", json=message_body(), headers={"Host": host}
        )
        events = await client.get(
            f"/v1/agents/{agent}/events",
            headers={"Host": host, "Accept": "text/event-stream"},
        )
    for answer in (*answers, posted, events):
        problem(answer, status, title)
    assert post_rows(store, agent) == 0


@run_async
async def test_r39_d43_an_absolute_form_target_names_its_host_too(store: AnyStore) -> None:
    """RFC 9112 3.2.2: ``GET http://name/path`` names ``name``; both it and ``Host`` must
    be ours, and such a request is routed by its path."""
    agent = agent_name()
    app = create_app(store)
    server = ("127.0.0.1", 8000)

    async def ask(target: str, host: str, method: str = "GET") -> int:
        body = json.dumps(message_body()).encode() if method == "POST" else None
        headers = [("host", host)]
        if body is not None:
            headers += [("content-type", "application/json"), ("content-length", str(len(body)))]
        request = await Stream(
            app, target, headers, method=method, body=body, server=server
        ).start()
        await request.body()
        assert request.status is not None
        return request.status

    ours = f"http://127.0.0.1:8000/v1/agents/{agent}"
    assert await ask(ours, "127.0.0.1:8000") == 200
    assert await ask(f"HTTP://localhost:8000/v1/agents/{agent}", "localhost:8000") == 200
    assert await ask(f"http://evil.example:8000/v1/agents/{agent}", "127.0.0.1:8000") == 421
    assert await ask(ours, "evil.example:8000") == 421
    assert await ask(f"http://user@127.0.0.1:8000/v1/agents/{agent}", "127.0.0.1:8000") == 400
    assert (
        await ask(f"http://evil.example:8000/v1/agents/{agent}/queue", "127.0.0.1:8000", "POST")
        == 421
    )
    assert post_rows(store, agent) == 0
    assert await ask(f"{ours}/queue", "127.0.0.1:8000", "POST") == 202
    assert post_rows(store, agent) == 1


@run_async
async def test_r39_d43_two_host_headers_are_400_and_none_is_no_page(store: AnyStore) -> None:
    agent = agent_name()
    app = create_app(store)
    server = ("127.0.0.1", 8000)
    two = await Stream(
        app, f"/v1/agents/{agent}", [("host", "127.0.0.1:8000"), ("host", "evil")], server=server
    ).start()
    await two.body()
    none = await Stream(app, f"/v1/agents/{agent}", [], server=server).start()  # HTTP/1.0
    await none.body()
    assert two.status == 400
    assert none.status == 200  # a browser always names its host: no page sent this


# ---------------------------------------------------------------- with tokens, listed


@run_async
async def test_r39_d43_with_tokens_any_host_is_answered_unless_hosts_are_listed(
    fresh_store: AnyStore,
) -> None:
    agent = agent_name()
    token = bearer(fresh_store.tokens.add("web", ["read", "post"], "*"))
    async with at_loopback(fresh_store) as any_host:
        evil = await any_host.get(f"/v1/agents/{agent}", headers={"Host": "evil.example", **token})
        anonymous = await any_host.get(f"/v1/agents/{agent}", headers={"Host": "evil.example"})
    async with at_loopback(fresh_store, allowed_hosts=["api.example", "proxy:9000"]) as listed:
        named = await listed.get(f"/v1/agents/{agent}", headers={"Host": "API.example", **token})
        port = await listed.get(f"/v1/agents/{agent}", headers={"Host": "proxy:9000", **token})
        other_port = await listed.get(
            f"/v1/agents/{agent}", headers={"Host": "proxy:9001", **token}
        )
        local = await listed.get(f"/v1/agents/{agent}", headers={"Host": "localhost:8000", **token})
        refused = await listed.get(f"/v1/agents/{agent}", headers={"Host": "evil.example", **token})
    assert evil.status_code == 200
    problem(anonymous, 401, "Unauthorized")
    assert [named.status_code, port.status_code, local.status_code] == [200, 200, 200]
    problem(other_port, 421, "Misdirected Request")
    problem(refused, 421, "Misdirected Request")


@run_async
async def test_r39_d43_with_no_token_listed_hosts_are_answered_too(store: AnyStore) -> None:
    agent = agent_name()
    async with at_loopback(store, allowed_hosts=["inbox.internal"]) as client:
        listed = await client.get(f"/v1/agents/{agent}", headers={"Host": "inbox.internal"})
        other = await client.get(f"/v1/agents/{agent}", headers={"Host": "evil.example"})
    assert listed.status_code == 200
    problem(other, 421, "Misdirected Request")


@run_async
async def test_r39_d43_revoking_the_last_token_brings_the_loopback_rule_back(
    fresh_store: AnyStore,
) -> None:
    agent = agent_name()
    fresh_store.tokens.add("only", ["read"], "*")
    async with at_loopback(fresh_store, token_ttl=0.05) as client:
        before = await client.get(f"/v1/agents/{agent}", headers={"Host": "evil.example"})
        fresh_store.tokens.revoke("only")
        await asyncio.sleep(0.1)
        after = await client.get(f"/v1/agents/{agent}", headers={"Host": "evil.example"})
    problem(before, 401, "Unauthorized")  # asked for a token: no rebinding to fear
    problem(after, 421, "Misdirected Request")


@pytest.mark.parametrize("host", ["", "a b", "user@host", "host:99999", "[::1", "*", "*.example"])
def test_d43_an_allowed_host_that_is_none_is_invalid_input(store: AnyStore, host: str) -> None:
    """An ``--allowed-host`` is a name, with a port or not: no pattern (with tokens, every
    name is answered when none is listed)."""
    with pytest.raises(InvalidInput):
        create_app(store, allowed_hosts=["fine.example", host])


@pytest.mark.parametrize(
    "origin", ["https://app.example/", "ftp://app.example", "app.example", "https://a b", ""]
)
def test_d43_a_cors_origin_with_a_path_or_another_scheme_is_invalid_input(
    store: AnyStore, origin: str
) -> None:
    with pytest.raises(InvalidInput):
        create_app(store, cors_origins=[origin])


# ------------------------------------------------------------------------ the headers


@run_async
async def test_r40_issue37_every_answer_forbids_framing_and_sniffing(store: AnyStore) -> None:
    """Issue 37 item 2: ``GET /``, the inspector's files, the API, its problems (404, 405,
    421, 431), a CORS preflight and an event stream all carry ``X-Frame-Options: DENY``,
    ``X-Content-Type-Options: nosniff`` and the CSP whose ``frame-ancestors 'none'`` no
    ``<meta>`` can carry (on c46a0f0 none of them)."""
    agent = agent_name()
    async with at_loopback(store, cors_origins=["https://app.example"]) as client:
        answers = [
            await client.get("/"),
            await client.get("/main.js"),
            await client.get("/inspector.css"),
            await client.get("/v1/agents"),
            await client.get("/nothing"),
            await client.put("/v1/agents"),
            await client.get("/v1/agents", headers={"Host": "evil.example"}),
            await client.get("/v1/agents", headers={f"x-{i}": "v" for i in range(120)}),
            await client.options(
                "/v1/agents",
                headers={
                    "Origin": "https://app.example",
                    "Access-Control-Request-Method": "POST",
                },
            ),
            await client.post(f"/v1/agents/{agent}/queue", json=message_body()),
        ]
        stream = await Stream(
            client.app,  # type: ignore[attr-defined]
            f"/v1/agents/{agent}/events",
            [("accept", "text/event-stream"), ("host", "127.0.0.1:8000")],
            server=("127.0.0.1", 8000),
        ).start()
        await stream.leave()
    statuses = [answer.status_code for answer in answers]
    assert statuses == [200, 200, 200, 200, 404, 405, 421, 431, 200, 202]
    for headers in [answer.headers for answer in answers] + [stream.headers]:
        assert headers["x-frame-options"] == "DENY"
        assert headers["x-content-type-options"] == "nosniff"
        assert headers["content-security-policy"] == CONTENT_SECURITY_POLICY
    assert "frame-ancestors 'none'" in CONTENT_SECURITY_POLICY
    assert "http-equiv" not in answers[0].text  # one policy, the header's
