"""R41, R39: the agent resource folds the log from its newest checkpoint (the events after it)
and answers exactly what the whole log's replay answers (R39's keys of the projection):
with its checkpoint, without any, and with one that must be ignored."""

from __future__ import annotations

from typing import Any

import pytest

from inbox_core import GoalSource, replay
from inbox_core.codec import projection_to_json
from inbox_core.http import reading
from inbox_core.shell import EchoHost, LoopAgent
from inbox_core.shell.stores.sqlite.schema import SQLITE_CHECKPOINTS
from tests.shell.posts_support import execute
from tests.shell.support import msg, run_async

from .support import AnyStore, agent_name, front


async def _served(store: AnyStore, agent: str) -> None:
    served = LoopAgent(EchoHost(), log=store.log(agent, checkpoint_every=5))
    for n in range(4):
        served.followup(msg(f"f{n}"))
        served.steer(msg(f"goal {n}", source=GoalSource("g", n + 1)))
        await served.when_idle()
    served.queue(msg("pending"))
    await served.detach()


@run_async
async def test_r41_r39_the_agent_resource_is_the_same_with_and_without_checkpoints(
    store: AnyStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With a good checkpoint the log is not read whole; with a bad one (ignored) or none, it
    is; the answer is the same every time."""
    whole_reads: list[str] = []
    read_log = reading.read_log

    def counted(store: Any, agent: str) -> Any:
        whole_reads.append(agent)
        return read_log(store, agent)

    monkeypatch.setattr(reading, "read_log", counted)
    agent = agent_name()
    await _served(store, agent)
    assert (
        execute(store, f"SELECT COUNT(*) FROM {SQLITE_CHECKPOINTS} WHERE agent_id = %s", agent)[0][
            0
        ]
        == 1
    )
    events = store.log(agent).read()
    projection = projection_to_json(replay(events))
    expected: dict[str, Any] = {
        "agent": agent,
        "seq": len(events),
        **{key: projection[key] for key in reading.AGENT_STATE_KEYS},
        "pendingPosts": 0,
    }
    assert expected["nextTurn"]  # the pending queue is in the answer
    async with front(store) as client:
        with_checkpoint = (await client.get(f"/v1/agents/{agent}")).json()
        assert whole_reads == []
        execute(
            store,
            f"UPDATE {SQLITE_CHECKPOINTS} SET checkpoint = %s WHERE agent_id = %s",
            "{not json",
            agent,
        )
        ignored = (await client.get(f"/v1/agents/{agent}")).json()
        execute(store, f"DELETE FROM {SQLITE_CHECKPOINTS} WHERE agent_id = %s", agent)
        without = (await client.get(f"/v1/agents/{agent}")).json()
    assert with_checkpoint == ignored == without == expected
    assert whole_reads == [agent]  # the ignored one; without any, the tail is the whole log
