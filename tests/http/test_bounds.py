"""Requests at and past their bounds (R39 v5, issue 37 item 9; D46): query values judged by
value against the bounds the OpenAPI document declares (a page size past its maximum is
400, never clamped; a seq past 2^53 - 1 is 400 at 16 digits as at 17), a post number past
2^53 - 1 is 404 like any post never made, a path with a trailing slash is a 404 problem
(no redirect built from the Host), and an integer too long to read is valid JSON out of
bounds (422), not malformed JSON (400)."""

from __future__ import annotations

from typing import Any

import pytest

from inbox_core import limits
from inbox_core.http.openapi import openapi_document
from tests.shell.support import run_async

from .support import AnyStore, agent_name, front, message_body, owner, post_rows, problem, stream

SAFE = limits.MAX_SAFE_INTEGER


def query_bounds() -> list[tuple[str, str, int, int]]:
    """(path, parameter, minimum, maximum) of every integer query parameter of the
    document."""
    found = []
    for path, item in openapi_document()["paths"].items():
        for parameter in item["get"]["parameters"] if "get" in item else []:
            schema = parameter["schema"]
            if parameter["in"] == "query" and schema.get("type") == "integer":
                found.append((path, parameter["name"], schema["minimum"], schema["maximum"]))
    return found


def test_d46_the_document_declares_the_bounds_of_every_integer_query() -> None:
    assert sorted((path, name, low, high) for path, name, low, high in query_bounds()) == [
        ("/v1/agents", "limit", 1, 1000),
        ("/v1/agents/{agent}/events", "limit", 1, 1000),
        ("/v1/agents/{agent}/events", "since", 0, SAFE),
    ]


def spellings(low: int, high: int) -> tuple[list[str], list[str]]:
    """(inside, outside) the bounds: the ends, leading zeros, one past each end, past the
    maximum at its own width and one digit more, and what is no number at all."""
    width = len(str(high))
    inside = [str(low), str(high), "0" * 20 + str(high), str((low + high) // 2)]
    outside = [
        str(high + 1),
        "9" * width if int("9" * width) > high else "1" + "0" * width,
        "9" * (width + 1),
        "9" * 4400,
        "+1",
        "1.0",
        " 1",
        "",
        "0x10",
        "\uff11",  # a fullwidth digit: a digit, not ASCII
    ]
    if low > 0:
        outside.append(str(low - 1))
    else:
        outside.append("-1")
    return inside, outside


@pytest.mark.parametrize(("path", "name", "low", "high"), query_bounds())
@run_async
async def test_r39_v5_a_query_value_is_judged_against_its_declared_bounds(
    store: AnyStore, path: str, name: str, low: int, high: int
) -> None:
    target = path.replace("{agent}", agent_name())
    inside, outside = spellings(low, high)
    async with front(store) as client:
        good = {text: await client.get(target, params={name: text}) for text in inside}
        bad = {text: await client.get(target, params={name: text}) for text in outside}
    for text, response in good.items():
        assert response.status_code == 200, (name, text, response.text)
    for text, response in bad.items():
        found = problem(response, 400, "Bad Request")
        assert name in found["detail"], found
        assert text[:40] in found["detail"] or len(text) > 40, found


@run_async
async def test_r39_v5_a_page_size_past_its_maximum_is_400_and_within_it_is_honoured(
    store: AnyStore,
) -> None:
    agent = agent_name()
    async with front(store) as client, owner(store, agent) as served:
        await client.post(
            f"/v1/agents/{agent}/followup", json=message_body(), headers={"Prefer": "wait=10"}
        )
        await served.when_idle()
        count = len(store.log(agent).read())
        whole = await client.get(f"/v1/agents/{agent}/events", params={"limit": "1000"})
        over = await client.get(f"/v1/agents/{agent}/events", params={"limit": "1001"})
        far = await client.get(f"/v1/agents/{agent}/events", params={"since": str(SAFE)})
    assert len(whole.json()["events"]) == count
    problem(over, 400, "Bad Request")
    assert far.json() == {"events": [], "next": SAFE}


@pytest.mark.parametrize(
    "last",
    [str(SAFE + 1), "9" * 16, "9" * 17, "9" * 400, "-1", "1.5", "x"],
)
@run_async
async def test_r39_v5_a_last_event_id_past_the_largest_seq_is_400_at_any_width(
    store: AnyStore, last: str
) -> None:
    async with front(store) as client:
        response = await client.get(
            f"/v1/agents/{agent_name()}/events",
            headers={"Accept": "text/event-stream", "Last-Event-ID": last},
        )
    problem(response, 400, "Bad Request")


@run_async
async def test_r39_v5_the_largest_last_event_id_starts_a_stream(store: AnyStore) -> None:
    async with front(store) as client:
        live = await stream(
            client.app,  # type: ignore[attr-defined]
            f"/v1/agents/{agent_name()}/events",
            ("last-event-id", "0" * 10 + str(SAFE)),
        )
        await live.leave()
    assert live.status == 200


@pytest.mark.parametrize(
    "post",
    [SAFE, SAFE + 1, 2**63 - 1, 2**63, 10**30, "9" * 4400, "0", "-1", "1.0", "x"],
)
@run_async
async def test_r39_v5_a_post_number_past_the_safe_range_is_404_like_a_post_never_made(
    store: AnyStore, post: Any
) -> None:
    async with front(store) as client:
        response = await client.get(f"/v1/agents/{agent_name()}/posts/{post}")
    problem(response, 404, "Not Found")


@run_async
async def test_r39_v5_a_post_number_with_leading_zeros_is_that_post(store: AnyStore) -> None:
    agent = agent_name()
    async with front(store) as client:
        posted = (await client.post(f"/v1/agents/{agent}/queue", json=message_body())).json()
        found = await client.get(f"/v1/agents/{agent}/posts/000{posted['post']}")
    assert found.json()["post"] == posted["post"]


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", "/v1/agents/"),
        ("GET", "/v1/agents/{a}/"),
        ("GET", "/v1/agents/{a}/events/"),
        ("GET", "/v1/agents/{a}/posts/1/"),
        ("GET", "/healthz/"),
        ("GET", "/openapi.json/"),
        ("GET", "/metrics/"),
        ("POST", "/v1/agents/{a}/followup/"),
        ("POST", "/v1/agents/{a}/commands/"),
    ],
)
@run_async
async def test_r39_v5_a_trailing_slash_is_a_404_problem_never_a_redirect(
    store: AnyStore, method: str, path: str
) -> None:
    agent = agent_name()
    async with front(store) as client:
        response = await client.request(method, path.replace("{a}", agent), json=message_body())
    problem(response, 404, "Not Found")
    assert "location" not in response.headers
    assert post_rows(store, agent) == 0


LONG = "1" * 4400


@pytest.mark.parametrize(
    ("body", "status", "title"),
    [
        (LONG, 422, "InvalidInput"),
        (f'{{"message": {{"content": "x", "metadata": {{"n": {LONG}}}}}}}', 422, "InvalidInput"),
        (f'{{"message": {{"content": "x", "metadata": {{"n": -{LONG}}}}}}}', 422, "InvalidInput"),
        (f'{{"message": {{"content": "x"}}, "x": [{LONG},]}}', 400, "Bad Request"),
        ('{"message": {"content": "x", "metadata": {"n": 1e999}}}', 422, "InvalidInput"),
    ],
    ids=["alone", "in-metadata", "negative", "malformed-beside-it", "float-overflow"],
)
@run_async
async def test_r39_v5_an_integer_too_long_to_read_is_422_valid_json_out_of_bounds(
    store: AnyStore, body: str, status: int, title: str
) -> None:
    agent = agent_name()
    async with front(store) as client:
        response = await client.post(
            f"/v1/agents/{agent}/followup",
            content=body.encode(),
            headers={"Content-Type": "application/json"},
        )
    problem(response, status, title)
    assert post_rows(store, agent) == 0
