"""Quotas (R39, D45; issue 37 item 11) on SQLite and PostgreSQL: new agents per minute and
pending posts per agent, per token (its own, kept in the store beside it) or the server's
(and, with no token, for every client of the store together); past one a post is 429 with
``Retry-After`` and nothing is written. A tokens table of before the quotas still opens.

On c46a0f0 a post token for ``team-a/*`` made 1,000 agents in 19 s; here the token's
bound holds at its count, and the window slides.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from inbox_core import create_user_message
from inbox_core.cli import main
from inbox_core.errors import InvalidInput
from inbox_core.http import create_app
from inbox_core.http.app import door_of
from inbox_core.http.defaults import AGENTS_PER_MINUTE, PENDING_PER_AGENT
from inbox_core.http.quotas import Quota, Quotas
from inbox_core.shell.stores.tokens import TokenInfo
from tests.shell.posts_support import execute
from tests.shell.support import run_async

from .support import AnyStore, agent_name, front, message_body, owner, post_rows, problem


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def clocked(app: Any, agents_per_minute: int, pending_per_agent: int = 1000) -> Clock:
    """The app's quotas on a clock the test moves."""
    clock = Clock()
    door_of(app).quotas = Quotas(Quota(agents_per_minute, pending_per_agent), clock)
    return clock


async def queue(client: Any, agent: str, headers: dict[str, str] | None = None) -> Any:
    return await client.post(f"/v1/agents/{agent}/queue", json=message_body(), headers=headers)


@run_async
async def test_r39_d45_pending_posts_per_agent_are_bounded_429_and_nothing_written(
    store: AnyStore,
) -> None:
    agent = agent_name()
    async with front(store, pending_per_agent=2) as client:
        first = [(await queue(client, agent)).status_code for _ in range(2)]
        refused = await queue(client, agent)
        other = await queue(client, agent_name())
        commands = await client.post(
            f"/v1/agents/{agent}/commands",
            json={"type": "cancel", "cause": {"kind": "user"}, "keepInbox": False},
        )  # every posting path counts
        assert post_rows(store, agent) == 2
        async with owner(store, agent) as served:  # the owner applies the two
            await served.when_idle()
            while (await client.get(f"/v1/agents/{agent}")).json()["pendingPosts"]:
                await asyncio.sleep(0.02)
        again = await queue(client, agent)
    assert first == [202, 202]
    document = problem(refused, 429, "Too Many Requests")
    assert "2 posts waiting" in document["detail"]
    assert int(refused.headers["retry-after"]) >= 1
    problem(commands, 429, "Too Many Requests")
    assert other.status_code == 202  # another agent has its own count
    assert again.status_code == 202


@run_async
async def test_r39_d45_new_agents_per_minute_are_bounded_and_the_window_slides(
    store: AnyStore,
) -> None:
    made = [agent_name() for _ in range(3)]
    held = agent_name()
    async with owner(store, held) as served:  # events, no post: the store holds it
        served.followup(create_user_message("hello"))
        await served.when_idle()
    async with front(store) as client:
        clock = clocked(client.app, agents_per_minute=2)  # type: ignore[attr-defined]
        answers = [await queue(client, agent) for agent in made]
        clock.now += 20
        refused = await queue(client, agent_name())
        again = await queue(client, made[0])  # not new: no quota
        existing = await queue(client, held)  # its log holds events: not new
        clock.now += 40.5  # the first one made is a minute old
        later = await queue(client, made[2])
    assert [a.status_code for a in answers[:2]] == [202, 202]
    document = problem(answers[2], 429, "Too Many Requests")
    assert "new agents" in document["detail"]
    assert answers[2].headers["retry-after"] == "60"
    assert refused.headers["retry-after"] == "40"
    assert post_rows(store, made[2]) == 1  # from the later post only
    assert again.status_code == existing.status_code == later.status_code == 202


@run_async
async def test_r39_d45_each_token_has_its_own_window_and_its_own_bounds_win(
    fresh_store: AnyStore,
) -> None:
    """A token's own bound wins over the server's; ``0`` new agents: a token for the agents
    that exist only; another token's window is its own."""
    strict = fresh_store.tokens.add("strict", ["post"], "*", agents_per_minute=1)
    none = fresh_store.tokens.add("none", ["post"], "*", agents_per_minute=0)
    default = fresh_store.tokens.add("default", ["post"], "*")
    tight = fresh_store.tokens.add("tight", ["post"], "*", pending_per_agent=1)
    existing = agent_name()
    async with front(fresh_store, agents_per_minute=3) as client:
        await queue(client, existing, bearer(default))
        strict_answers = [(await queue(client, agent_name(), bearer(strict))).status_code]
        strict_answers.append((await queue(client, agent_name(), bearer(strict))).status_code)
        none_new = await queue(client, agent_name(), bearer(none))
        none_old = await queue(client, existing, bearer(none))
        defaults = [
            (await queue(client, agent_name(), bearer(default))).status_code for _ in range(3)
        ]
        tight_answer = await queue(client, existing, bearer(tight))  # two wait already
    assert strict_answers == [202, 429]
    problem(none_new, 429, "Too Many Requests")
    assert none_old.status_code == 202
    assert defaults == [202, 202, 429]  # the server's 3, one spent on `existing`
    problem(tight_answer, 429, "Too Many Requests")


@run_async
async def test_r39_d45_with_no_token_the_store_has_one_window_for_every_client(
    store: AnyStore,
) -> None:
    async with front(store, agents_per_minute=1) as client, front(store) as other_app:
        first = await queue(client, agent_name())
        second = await queue(client, agent_name())
        elsewhere = await queue(other_app, agent_name())  # another replica: its own window
    assert first.status_code == 202
    problem(second, 429, "Too Many Requests")
    assert elsewhere.status_code == 202


def test_r39_d45_the_server_defaults() -> None:
    app_defaults = create_app.__kwdefaults__
    assert app_defaults is not None
    assert app_defaults["agents_per_minute"] == AGENTS_PER_MINUTE == 600
    assert app_defaults["pending_per_agent"] == PENDING_PER_AGENT == 1000


@pytest.mark.parametrize("value", [-1, True, 1.5, "3", None])
def test_r39_d45_a_quota_that_is_no_count_is_invalid_input(store: AnyStore, value: Any) -> None:
    with pytest.raises(InvalidInput):
        create_app(store, agents_per_minute=value)
    with pytest.raises(InvalidInput):
        create_app(store, pending_per_agent=value)
    if value is not None:
        with pytest.raises(InvalidInput):
            store.tokens.add("bad-quota", ["read"], "*", agents_per_minute=value)
    assert [t.name for t in store.tokens.list() if t.name == "bad-quota"] == []


def test_r39_d45_a_tokens_table_of_before_the_quotas_opens_and_grows_them(
    fresh_store: AnyStore,
) -> None:
    """An older store's tokens table (no quota columns) reads as tokens without quotas,
    read-only; the first ``add`` adds the columns, and both tokens are found."""
    fresh_store.tokens.list()  # nothing yet
    execute(
        fresh_store,
        "CREATE TABLE inbox_core_tokens (name TEXT PRIMARY KEY, hash TEXT NOT NULL UNIQUE,"
        " scopes TEXT NOT NULL, pattern TEXT NOT NULL, created TEXT NOT NULL DEFAULT 'then')",
    )
    from inbox_core.shell.stores.tokens import token_hash

    execute(
        fresh_store,
        "INSERT INTO inbox_core_tokens (name, hash, scopes, pattern) VALUES (%s, %s, %s, %s)",
        "old",
        token_hash("ict_old"),
        "read,post",
        "team-a/*",
    )
    before = fresh_store.tokens.find("ict_old")
    fresh = fresh_store.tokens.add("new", ["read"], "*", agents_per_minute=5, pending_per_agent=7)
    assert before == TokenInfo("old", ("read", "post"), "team-a/*", "then")
    assert fresh_store.tokens.find("ict_old") == before
    found = fresh_store.tokens.find(fresh)
    assert found is not None
    assert (found.agents_per_minute, found.pending_per_agent) == (5, 7)
    assert [t.name for t in fresh_store.tokens.list()] == ["new", "old"]


def test_r39_d45_token_add_takes_its_quotas_and_list_shows_them(
    fresh: tuple[AnyStore, str], capsys: pytest.CaptureFixture[str]
) -> None:
    store, spec = fresh
    assert (
        main(["token", "add", spec, "bulk", "--agents-per-minute", "5", "--pending-per-agent", "0"])
        == 0
    )
    assert main(["token", "add", spec, "plain"]) == 0
    capsys.readouterr()
    assert main(["token", "list", spec]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split("\t")[4:] == ["agents-per-minute=5", "pending-per-agent=0"]
    assert len(lines[1].split("\t")) == 4  # no quota of its own: the line of before
    assert main(["token", "add", spec, "bad", "--agents-per-minute", "-1"]) == 2
    assert [t.name for t in store.tokens.list()] == ["bulk", "plain"]
