"""Agent ids in paths (R39): one percent-encoded segment; ``.`` and ``..`` are ids; no
spelling (``%2F``, dot segments, mixed-case escapes, overlong UTF-8, NUL, lone surrogates)
reaches another agent than the one its bytes spell, and ``Location`` encodes ids back."""

from __future__ import annotations

import json
from urllib.parse import quote

import pytest
from hypothesis import given
from hypothesis import strategies as st

from inbox_core import InvalidInput, limits
from inbox_core.http.paths import agent_id, post_location, segment
from inbox_core.http.problem import Problem
from tests.shell.support import run_async

from .support import AnyStore, front, message_body, post_rows, raw_request

agent_ids = st.text(
    st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"),
    min_size=1,
    max_size=limits.MAX_AGENT_ID_LENGTH,
)


@given(agent_ids)
def test_r39_an_id_encoded_as_a_segment_decodes_to_itself(agent: str) -> None:
    encoded = segment(agent)
    assert encoded.isascii()
    assert "/" not in encoded
    assert encoded not in (".", "..")
    assert not any(c in encoded for c in "\r\n\x00 ?#")  # never breaks a header or a path
    assert agent_id(encoded) == agent
    assert post_location(agent, 7) == f"/v1/agents/{encoded}/posts/7"


@given(agent_ids, agent_ids)
def test_r39_two_ids_have_two_segments(a: str, b: str) -> None:
    assert (segment(a) == segment(b)) == (a == b)


@given(st.binary(max_size=64))
def test_r39_any_bytes_in_a_segment_spell_one_id_or_none(data: bytes) -> None:
    raw = quote(data, safe="")
    try:
        text = data.decode("utf-8")
        valid = text == limits.agent_id(text)
    except (UnicodeDecodeError, InvalidInput):
        valid = False
    if not valid:
        with pytest.raises(Problem) as caught:
            agent_id(raw)
        assert caught.value.status == 404
        return
    found = agent_id(raw)
    assert found.encode("utf-8") == data  # exactly the bytes sent, strictly decoded
    assert agent_id(segment(found)) == found


@pytest.mark.parametrize(
    "raw",
    [
        "%C0%AF",  # an overlong "/"
        "%E0%80%AE",  # an overlong "."
        "%ED%A0%80",  # a lone surrogate's UTF-8 form
        "a%00b",
        "%00",
        "%FF",
        "x" * 257,
    ],
)
def test_r39_a_segment_that_is_no_agent_id_is_404(raw: str) -> None:
    with pytest.raises(Problem) as caught:
        agent_id(raw)
    assert caught.value.status == 404


@pytest.mark.parametrize(
    ("raw", "agent"),
    [
        ("a%2Fb", "a/b"),
        ("a%2fb", "a/b"),  # the same id: escapes are case-insensitive
        ("%2E%2E", ".."),
        ("..", ".."),
        (".", "."),
        ("%2e", "."),
        ("a%252Fb", "a%2Fb"),  # decoded once, never twice
        ("%C3%A9t%C3%A9", "été"),
        ("100%", "100%"),
    ],
)
@run_async
async def test_r39_a_post_reaches_exactly_the_agent_its_segment_spells(
    store: AnyStore, raw: str, agent: str
) -> None:
    async with front(store) as client:
        app = client.app  # type: ignore[attr-defined]
        body = json.dumps(message_body()).encode()
        status, headers, data = await raw_request(app, "POST", f"/v1/agents/{raw}/queue", body)
        assert status == 202, data
        posted = json.loads(data)
        read = await raw_request(app, "GET", f"/v1/agents/{raw}")
    assert posted["agent"] == agent
    assert headers["location"] == f"/v1/agents/{segment(agent)}/posts/{posted['post']}"
    assert json.loads(read[2])["pendingPosts"] >= 1
    assert post_rows(store, agent) >= 1
    for neighbour in {"a", "b", "", "v1", agent.split("/", maxsplit=1)[0]} - {agent}:
        assert post_rows(store, neighbour) == 0


@pytest.mark.parametrize(
    "path",
    [
        "/v1/agents/%C0%AF/queue",
        "/v1/agents/%ED%A0%80/queue",
        "/v1/agents/a%00/queue",
        "/v1/agents//queue",
        "/v1/agents/a/b/queue",
        "/v1/agents/" + "x" * 300 + "/queue",
    ],
)
@run_async
async def test_r39_a_path_that_names_no_agent_is_404_and_writes_nothing(
    store: AnyStore, path: str
) -> None:
    async with front(store) as client:
        body = json.dumps(message_body()).encode()
        status, _, data = await raw_request(client.app, "POST", path, body)  # type: ignore[attr-defined]
    assert status == 404
    assert json.loads(data)["title"] == "Not Found"
    for agent in ("a", "b", "x" * 256, "a\x00"):
        if "\x00" not in agent:
            assert post_rows(store, agent) == 0
