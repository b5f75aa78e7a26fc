"""A post's owner decodes it off the event loop, and reduces a bounded amount per turn of
the loop (R35, R37, D47): an agent's big command never stalls the other agents of its
loop beyond that command's own reduction. Asserted by order, never by time."""

from __future__ import annotations

import asyncio

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
