"""A post's owner decodes it off the event loop, and reduces a bounded amount per turn of
the loop (R35, R37, D47): an agent's big command never stalls the other agents of its
loop beyond that command's own reduction (asserted by order, never by time); and its big
events are written in steps, what decides it read from the sizes values know."""

from __future__ import annotations

import asyncio
import json

import pytest

from inbox_core import UserMessage, create_user_message
from inbox_core.commands import queue
from inbox_core.shell import EchoHost, LoopAgent, PostApplied, serving
from inbox_core.shell.serving import decode_posts
from inbox_core.shell.stores.posts import PendingPost, encode_post

from .posts_support import AnyStore, agent_name
from .support import Held, run_async

BIG = 300_000
"""Characters of the big post's text: past anything a small post holds."""


@run_async
async def test_d47_r37_a_post_is_decoded_off_the_loop_while_other_agents_are_served(
    store: AnyStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Agent a's big post is held in its decoding; agent b, owned in the same loop, gets
    its post applied meanwhile (on the loop, the hold would have stopped b too)."""
    a, b = agent_name(), agent_name()
    hold = Held()
    monkeypatch.setattr(
        serving, "decode_post", hold.wrap(serving.decode_post, lambda text: len(str(text)) > BIG)
    )
    first = LoopAgent(EchoHost(), log=store.log(a))
    second = LoopAgent(EchoHost(), log=store.log(b))
    try:
        big = queue(create_user_message("x" * (BIG + 1)))
        held = await asyncio.to_thread(store.post, a, big)
        await hold.until_entered()
        small = await asyncio.to_thread(store.post, b, queue(create_user_message("b")))
        assert await store.wait(small, timeout=20) == PostApplied()
        hold.release()
        assert await store.wait(held, timeout=20) == PostApplied()
    finally:
        await first.detach()
        await second.detach()
    assert hold.order == ["answered meanwhile", "released"]


def test_d47_a_read_decodes_posts_until_their_texts_come_to_its_bound() -> None:
    """Posts are decoded in order until their texts reach ``chars``, the first always (a
    big command alone), and the read says that some were left for the next one."""
    texts = [encode_post(queue(create_user_message(str(n) * 10))) for n in range(5)]
    posts = [PendingPost(n + 1, text) for n, text in enumerate(texts)]
    every, left = decode_posts(posts, 10**6)
    assert [d.post_id for d in every] == [1, 2, 3, 4, 5]
    assert not left
    some, left = decode_posts(posts, len(texts[0]) + 1)
    assert [d.post_id for d in some] == [1, 2]
    assert left
    one, left = decode_posts(posts, 1)
    assert [d.post_id for d in one] == [1]
    assert left


@run_async
async def test_d47_r35_posts_read_in_several_bounded_batches_are_all_applied_in_order(
    store: AnyStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With a bound of one post per read, an owner's posts are still all applied, once each
    and in their order (R35), each read after the last write is durable."""
    monkeypatch.setattr(serving, "BATCH_CHARS", 1)
    agent = agent_name()
    receipts = [store.post(agent, queue(UserMessage(f"m{n}", f"m{n}"))) for n in range(6)]
    served = LoopAgent(EchoHost(), log=store.log(agent))
    try:
        for receipt in receipts:
            assert await store.wait(receipt, timeout=20) == PostApplied()
        ids = [str(entry.message.id) for entry in served.inbox.next_turn]
    finally:
        await served.detach()
    assert ids == [f"m{n}" for n in range(6)]


def test_d47_payload_size_reads_the_sizes_values_know() -> None:
    """What decides whether an event or a command is written in steps: its messages', its
    entries' and its JSON values' sizes, and its strings' lengths; nothing for the rest."""
    from inbox_core import HostRecord, Send
    from inbox_core.events import ErrorReason, InboxSpliced, MessageAdmitted, TurnEnded, TurnStarted
    from inbox_core.json_values import JsonObject, json_size
    from inbox_core.shell.stores.rows import payload_size
    from inbox_core.values import Entry, entries_size

    message = create_user_message("hello", metadata={"k": [1.5, 2, "x"]})
    entry = Entry(message, (create_user_message("c"),), True)
    data = JsonObject({"a": [1, 2.5]})
    assert payload_size(MessageAdmitted(message)) == message.size
    assert payload_size(InboxSpliced("next-turn", 0, 0, (entry,), None)) == entries_size([entry])
    assert payload_size(HostRecord("host/x", data)) == len("host/x") + json_size(data)
    assert payload_size(HostRecord("host/x", (1.5, 2.5))) == len("host/x") + json_size((1.5, 2.5))
    assert payload_size(TurnEnded(1, ErrorReason("boom", "E1"))) == len("boom") + len("E1")
    assert payload_size(TurnStarted(1)) == 0
    send = queue(message)
    assert isinstance(send, Send)
    assert message.size <= payload_size(send) <= message.size + 32  # and its few texts


def test_d47_a_big_event_is_written_in_steps_and_reads_back(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An event past ``limits.LONG_SIZE`` is written a value at a time (``json_text.dump``),
    to the same text; a small one by ``json.dumps``."""
    from inbox_core import json_text, limits
    from inbox_core.events import MessageAdmitted
    from inbox_core.shell.stores.rows import decode_record, encode_event

    stepped: list[object] = []
    original = json_text.dump
    monkeypatch.setattr(json_text, "dump", lambda doc: stepped.append(doc) or original(doc))
    floats = [1.2345678901234567e-300] * (limits.LONG_SIZE // 24 + 1)
    big = MessageAdmitted(create_user_message("x", metadata={"k": floats}))
    small = MessageAdmitted(create_user_message("x"))
    assert decode_record(0, encode_event(small)) == small
    assert stepped == []
    text = encode_event(big)
    assert len(stepped) == 1
    assert decode_record(0, text) == big
    assert text == limits.dump_json(json.loads(text))
