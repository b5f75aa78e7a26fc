"""The reading endpoints (R39 over R32, R30, R35, R37) on SQLite and PostgreSQL: the agent,
a post, the events page, fates and transcript, the agent list, /healthz, /metrics."""

from __future__ import annotations

import pytest

from inbox_core import replay
from inbox_core.codec import event_to_json, projection_to_json
from inbox_core.commands import followup, queue
from inbox_core.port.server import reference_folds
from inbox_core.shell import Receipt
from tests.shell.support import msg, run_async

from .support import AnyStore, agent_name, front, message_body, owner, problem

AGENT_KEYS = (
    "agent",
    "seq",
    "status",
    "lastTurn",
    "awaiting",
    "abortCause",
    "nextTurn",
    "nextStep",
    "pendingPosts",
)
"""The agent resource's keys as R39 lists them (the brief's words, not the vectors'
``disposed``, ``openTurn``, ``openStep`` or ``goalRounds``)."""


@run_async
async def test_r39_an_agent_nobody_wrote_to_is_idle_and_empty_not_404(store: AnyStore) -> None:
    agent = agent_name()
    async with front(store) as client:
        response = await client.get(f"/v1/agents/{agent}")
    assert response.status_code == 200
    assert response.json() == {
        "agent": agent,
        "seq": 0,
        "status": "idle",
        "lastTurn": 0,
        "awaiting": None,
        "abortCause": None,
        "nextTurn": [],
        "nextStep": [],
        "pendingPosts": 0,
    }


@run_async
async def test_r39_the_agent_resource_is_the_projection_of_its_log_with_seq_and_pending_posts(
    store: AnyStore,
) -> None:
    agent = agent_name()
    async with front(store) as client:
        for text in ("a", "b"):
            await client.post(f"/v1/agents/{agent}/queue", json=message_body(text))
        before = (await client.get(f"/v1/agents/{agent}")).json()
        assert before["pendingPosts"] == 2
        assert before["seq"] == 0
        async with owner(store, agent) as served:
            await served.when_idle()
            await client.post(
                f"/v1/agents/{agent}/followup",
                json=message_body("c"),
                headers={"Prefer": "wait=10"},
            )
            await served.when_idle()
            after = (await client.get(f"/v1/agents/{agent}")).json()
    log = store.log(agent).read()
    final = projection_to_json(replay(log), log)  # a vector's final of this log
    assert list(after) == [*AGENT_KEYS]  # exactly the brief's keys, in its order
    assert after == {
        "agent": agent,
        "seq": len(log),
        **{key: final[key] for key in AGENT_KEYS[2:-1]},
        "pendingPosts": 0,
    }
    assert after["lastTurn"] == 3  # one turn per next-turn entry (R20): a, b, then c


@run_async
async def test_r39_events_page_since_limit_and_next(store: AnyStore) -> None:
    agent = agent_name()
    async with front(store) as client, owner(store, agent) as served:
        await client.post(
            f"/v1/agents/{agent}/followup", json=message_body(), headers={"Prefer": "wait=10"}
        )
        await served.when_idle()
        log = store.log(agent).read()
        records = [{"seq": seq, **event_to_json(event)} for seq, event in enumerate(log)]
        whole = (await client.get(f"/v1/agents/{agent}/events")).json()
        first = (await client.get(f"/v1/agents/{agent}/events?limit=2")).json()
        rest = (
            await client.get(f"/v1/agents/{agent}/events?since={first['next']}&limit=1000")
        ).json()
        beyond = (await client.get(f"/v1/agents/{agent}/events?since=999")).json()
        bad = [
            await client.get(f"/v1/agents/{agent}/events?{query}")
            for query in ("since=-1", "since=x", "limit=0", "limit=1.5", "since=" + "9" * 40)
        ]
    assert whole == {"events": records, "next": len(log)}
    assert first == {"events": records[:2], "next": 2}
    assert rest == {"events": records[2:], "next": len(log)}
    assert beyond == {"events": [], "next": 999}
    for response in bad:
        problem(response, 400, "Bad Request")


@run_async
async def test_r39_fates_and_transcript_are_the_folds_the_port_protocol_answers(
    store: AnyStore,
) -> None:
    agent = agent_name()
    async with front(store) as client, owner(store, agent) as served:
        await client.post(f"/v1/agents/{agent}/queue", json=message_body("q"))
        await client.post(
            f"/v1/agents/{agent}/followup", json=message_body("f"), headers={"Prefer": "wait=10"}
        )
        await served.when_idle()
        fates = (await client.get(f"/v1/agents/{agent}/fates")).json()
        transcript = (await client.get(f"/v1/agents/{agent}/transcript")).json()
        empty = (await client.get(f"/v1/agents/{agent_name()}/fates")).json()
    folds = reference_folds(store.log(agent).read())
    assert fates == {"fates": folds["fates"]}
    assert len(fates["fates"]) == 2
    assert transcript == {"transcript": folds["transcript"]}
    assert transcript["transcript"]
    assert empty == {"fates": {}}


@run_async
async def test_r39_a_post_resource_answers_its_outcome_and_404_otherwise(store: AnyStore) -> None:
    agent, other = agent_name(), agent_name()
    async with front(store) as client:
        posted = (await client.post(f"/v1/agents/{agent}/queue", json=message_body())).json()
        foreign = store.post(other, queue(msg("x")))
        pending = await client.get(f"/v1/agents/{agent}/posts/{posted['post']}")
        async with owner(store, agent) as served:
            await served.when_idle()
            await store.wait(Receipt(agent, posted["post"]), timeout=10)
            applied = await client.get(f"/v1/agents/{agent}/posts/{posted['post']}")
        missing = [
            await client.get(f"/v1/agents/{agent}/posts/{post}")
            for post in (foreign.post_id, 10**12, 0, "x", "-1", "9" * 30)
        ]
        store.prune(older_than=0)
        pruned = await client.get(f"/v1/agents/{agent}/posts/{posted['post']}")
    assert pending.json() == {
        "agent": agent,
        "post": posted["post"],
        "outcome": {"kind": "pending"},
    }
    assert applied.json()["outcome"] == {"kind": "applied"}
    for response in [*missing, pruned]:  # another agent's, never made, not a post id, pruned
        problem(response, 404, "Not Found")


@run_async
async def test_r39_r37_the_agent_list_pages_by_id_with_work_and_pending_posts(
    fresh_store: AnyStore,
) -> None:
    store = fresh_store
    names = ["a-1", "a-2", "b/1", "c"]
    store.post("a-1", queue(msg("x")))
    store.post("a-1", followup(msg("y")))
    store.post("b/1", queue(msg("z")))
    async with front(store) as client:
        async with owner(store, "c") as served:
            served.queue(msg("quiet"))  # a log with events, no work, no post
            await served.durable()
        async with owner(store, "a-2") as served:
            served.queue(msg("q"))
            await served.durable()
        first = (await client.get("/v1/agents?limit=3")).json()
        second = (await client.get(f"/v1/agents?limit=3&after={first['next']}")).json()
        whole = (await client.get("/v1/agents")).json()
        bad = [await client.get(f"/v1/agents?{q}") for q in ("limit=0", "limit=x", "after=")]
    assert [a["id"] for a in first["agents"]] == names[:3]
    assert first["next"] == "b/1"
    assert [a["id"] for a in second["agents"]] == names[3:]
    assert second["next"] is None
    listed = {a["id"]: (a["work"], a["pendingPosts"]) for a in whole["agents"]}
    assert listed == {"a-1": (True, 2), "a-2": (False, 0), "b/1": (True, 1), "c": (False, 0)}
    assert whole["next"] is None
    for response in bad:
        problem(response, 400, "Bad Request")


@run_async
async def test_r39_healthz_and_metrics(store: AnyStore) -> None:
    agent = agent_name()
    async with front(store) as client:
        health = await client.get("/healthz")
        await client.post(f"/v1/agents/{agent}/queue", json=message_body())
        await client.post(
            f"/v1/agents/{agent}/queue", content=b"{", headers={"content-type": "application/json"}
        )
        metrics = await client.get("/metrics")
    assert health.json() == {"status": "ok"}
    assert metrics.headers["content-type"].startswith("text/plain")
    text = metrics.text
    assert 'inbox_core_http_posts_total{path="queue"} 1.0' in text
    assert 'inbox_core_http_post_outcomes_total{outcome="pending"} 1.0' in text
    assert 'inbox_core_http_requests_total{endpoint="queue",method="POST",status="400"} 1.0' in text
    assert "inbox_core_http_request_seconds_bucket" in text
    assert "inbox_core_http_event_streams 0.0" in text


def test_r39_metrics_add_a_worker_statistics() -> None:
    import attrs

    from inbox_core.http.metrics import Metrics
    from inbox_core.shell.stores.writers import WriteStats
    from inbox_core.shell.worker import WorkerStats

    writes = WriteStats(**{f.name: 0 for f in attrs.fields(WriteStats)})
    fields = {f.name: 0 for f in attrs.fields(WorkerStats)} | {"name": "w", "writes": writes}
    stats = WorkerStats(**(fields | {"agents": 7, "posts": 3}))
    text = Metrics(lambda: stats).text().decode()
    assert "inbox_core_worker_agents 7.0" in text
    assert "inbox_core_worker_posts 3.0" in text
    assert "inbox_core_worker_writes_" in text


@pytest.mark.parametrize("path", ["/nope", "/v1", "/v1/agents/a/nope", "/v1/agents/a/posts"])
@run_async
async def test_r39_an_unknown_path_is_a_404_problem(store: AnyStore, path: str) -> None:
    async with front(store) as client:
        response = await client.get(path)
    problem(response, 404, "Not Found")


@run_async
async def test_r39_a_known_path_with_another_method_is_a_405_problem(store: AnyStore) -> None:
    async with front(store) as client:
        get_a_post = await client.get("/v1/agents/a/followup")
        post_an_agent = await client.post("/v1/agents/a", json={})
    for response in (get_a_post, post_an_agent):
        problem(response, 405, "Method Not Allowed")
        assert response.headers["allow"]


@run_async
async def test_r39_cors_is_off_unless_origins_are_named(store: AnyStore) -> None:
    origin = {"Origin": "https://app.example"}
    preflight = {
        **origin,
        "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "content-type,idempotency-key,prefer",
    }
    async with front(store) as closed:
        plain = await closed.get("/healthz", headers=origin)
        refused = await closed.options("/v1/agents/a/followup", headers=preflight)
    async with front(store, cors_origins=["https://app.example"]) as open_:
        allowed = await open_.options("/v1/agents/a/followup", headers=preflight)
        answered = await open_.get("/healthz", headers=origin)
        other = await open_.get("/healthz", headers={"Origin": "https://evil.example"})
    assert "access-control-allow-origin" not in plain.headers
    assert refused.status_code == 405
    assert allowed.status_code == 200
    assert allowed.headers["access-control-allow-origin"] == "https://app.example"
    assert "idempotency-key" in allowed.headers["access-control-allow-headers"].lower()
    assert answered.headers["access-control-allow-origin"] == "https://app.example"
    assert "location" in answered.headers["access-control-expose-headers"].lower()
    assert "access-control-allow-origin" not in other.headers
