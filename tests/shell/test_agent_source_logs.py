"""The source kind ``agent`` in the stores: what a log or a post written before v5 becomes
(R2 v5, D52), on SQLite and PostgreSQL.

Before v5 ``agent`` was a kind like any other a host could give an extension source. A
v4 writer is played here by writing an extension of kind ``x-agent`` and renaming the
kind in the stored rows, as a foreign producer would (raw SQL): the rows then hold what
a v4 host that named its own kind ``agent`` wrote.
"""

from __future__ import annotations

import pytest

from inbox_core import AgentSource, ExtensionSource, MessageAdmitted, UserMessage
from inbox_core.commands import followup, queue
from inbox_core.events import InboxSpliced
from inbox_core.shell import CorruptLog, EchoHost, LoopAgent, PostApplied, PostRejected
from inbox_core.shell.stores.rows import encode_event

from .posts_support import AnyStore, agent_name, execute, posts_table
from .support import msg, run_async

V4_KIND = '"kind":"agent"'
V5_EXTENSION = '"kind":"x-agent"'
REASON = "a built-in kind since v5"


def events_table(store: AnyStore) -> str:
    return "inbox_core_events" if posts_table(store).startswith("inbox_core_") else "events"


def rename_kind(store: AnyStore, table: str, column: str, agent: str, old: str, new: str) -> None:
    """A foreign writer's edit of every stored row of ``agent``: ``old`` text made ``new``."""
    execute(
        store,
        f"UPDATE {table} SET {column} = REPLACE({column}, %s, %s) WHERE agent_id = %s",
        old,
        new,
        agent,
    )


def stored_events(store: AnyStore, agent: str) -> list[str]:
    rows = execute(
        store, f"SELECT event FROM {events_table(store)} WHERE agent_id = %s ORDER BY seq", agent
    )
    return [text for (text,) in rows]


@run_async
async def write_v4_log(store: AnyStore, agent: str, message: UserMessage) -> None:
    """Agent ``agent``'s log with ``message`` queued, then the kind renamed as v4 wrote it."""
    loop_agent = LoopAgent(EchoHost(), log=store.log(agent))
    loop_agent.queue(message)
    await loop_agent.detach()
    rename_kind(store, events_table(store), "event", agent, V5_EXTENSION, V4_KIND)


@run_async
async def open_and_close(store: AnyStore, agent: str) -> None:
    await LoopAgent(EchoHost(), log=store.log(agent)).aclose()


def test_d52_a_v4_log_with_an_agent_extension_is_a_corrupt_log_saying_why(
    store: AnyStore,
) -> None:
    """D52: a host-defined source of kind agent (not the v5 form) in a log written before
    v5 is refused with the typed error of a bad row: CorruptLog at its seq, its text naming
    the reservation; the agent does not open, and nothing is written. Renamed to a kind of
    the host's own, the same log reads and opens again (the way out D52 documents)."""
    agent = agent_name()
    write_v4_log(store, agent, msg("hi", source=ExtensionSource("x-agent", {"name": "planner"})))
    before = stored_events(store, agent)
    assert len(before) == 1
    assert V4_KIND in before[0]
    with pytest.raises(CorruptLog) as info:
        store.log(agent).read()
    assert info.value.seq == 0
    assert REASON in str(info.value)
    assert "DecodeError" in str(info.value)
    with pytest.raises(CorruptLog):
        LoopAgent(EchoHost(), log=store.log(agent))
    assert stored_events(store, agent) == before

    rename_kind(store, events_table(store), "event", agent, V4_KIND, V5_EXTENSION)
    (event,) = store.log(agent).read()
    assert isinstance(event, InboxSpliced)
    assert event.inserted[0].message.source == ExtensionSource("x-agent", {"name": "planner"})
    open_and_close(store, agent)


def test_d52_a_v4_agent_extension_of_the_v5_form_reads_as_an_agent_source_unchanged(
    store: AnyStore,
) -> None:
    """D52, R2 v5: a v4 extension of kind agent whose fields are exactly a valid agentId
    and turn reads as an AgentSource, and writing the event back gives the stored text
    byte for byte (the same JSON): the log is unchanged, the agent opens."""
    agent = agent_name()
    fields = {"agentId": "planner", "turn": 2}
    write_v4_log(store, agent, msg("hi", source=ExtensionSource("x-agent", fields)))
    texts = stored_events(store, agent)
    events = store.log(agent).read()
    assert [encode_event(event) for event in events] == texts
    (event,) = events
    assert isinstance(event, InboxSpliced)
    assert event.inserted[0].message.source == AgentSource("planner", 2)
    open_and_close(store, agent)


@run_async
async def serve(store: AnyStore, agent: str, receipts: list[object]) -> list[object]:
    loop_agent = LoopAgent(EchoHost(), log=store.log(agent))
    try:
        outcomes = [await store.wait(r, timeout=10) for r in receipts]  # type: ignore[arg-type]
        await loop_agent.when_idle()
        return outcomes
    finally:
        await loop_agent.aclose()


def test_d52_a_post_waiting_since_v4_with_an_agent_extension_is_rejected_saying_why(
    store: AnyStore,
) -> None:
    """D52, R35: a post written before v5 whose message has a host-defined source of kind
    agent is rejected (DecodeError, saying why) when the owner reads it; the agent's next
    post, with a v5 agent source, is applied, and nothing of the first reaches the log."""
    agent = agent_name()
    old = store.post(agent, queue(msg("old", source=ExtensionSource("x-agent", {"n": 1}))))
    rename_kind(store, posts_table(store), "command", agent, V5_EXTENSION, V4_KIND)
    sent = msg("new", source=AgentSource("planner", 1))
    new = store.post(agent, followup(sent))
    first, second = serve(store, agent, [old, new])
    assert isinstance(first, PostRejected)
    assert first.error == "DecodeError"
    assert REASON in first.message
    assert second == PostApplied()
    admitted = [e for e in store.log(agent).read() if isinstance(e, MessageAdmitted)]
    assert [e.message for e in admitted] == [sent]
