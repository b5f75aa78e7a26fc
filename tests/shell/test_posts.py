"""Delivery from any process (R35, R36) on SQLite and PostgreSQL: posts, keys, outcomes,
serving, watch. Crash, restart and multi-process tests are in test_posts_crash.py."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest

from inbox_core import (
    BeginMaintenance,
    Cancel,
    Completed,
    Dispose,
    EndMaintenance,
    ExpectIdle,
    ExpectTurn,
    InvalidInput,
    Move,
    PreStepDecided,
    Reject,
    Resume,
    StepFinished,
    TurnStoppingDone,
    create_user_message,
)
from inbox_core.commands import followup, inject, queue, steer
from inbox_core.shell import (
    EchoHost,
    LoopAgent,
    MemoryLog,
    NotPostable,
    PostApplied,
    PostPending,
    PostRejected,
    PostTimeout,
    Receipt,
    SqliteStore,
    UnknownReceipt,
)
from inbox_core.shell.stores.opening import open_store, parse_store

from .posts_support import (
    AnyStore,
    agent_name,
    execute,
    fate_kinds,
    post_rows,
    posts_table,
    ready,
    until,
)
from .support import ScriptedHost, log_json, msg, run_async, text_of

# ------------------------------------------------------------------- posting


def test_r35_post_is_durable_pending_and_seen_by_another_store_object(store: AnyStore) -> None:
    agent = agent_name()
    receipt = store.post(agent, followup(msg("hello")))
    assert receipt == Receipt(agent, receipt.post_id)
    assert store.outcome(receipt) == PostPending()
    other = open_store(f"sqlite:{store.path}") if isinstance(store, SqliteStore) else None
    if other is None:
        from inbox_core.shell import PostgresStore

        other = PostgresStore(store.conninfo)
    try:
        assert other.outcome(receipt) == PostPending()  # what another process sees
    finally:
        other.close()
    assert post_rows(store, agent) == 1
    assert len(store.log(agent).read()) == 0  # nothing applied: nobody serves it


@pytest.mark.parametrize(
    "command",
    [
        Dispose(),
        Resume(),
        BeginMaintenance(),
        EndMaintenance(),
        PreStepDecided(1, 1, Reject()),
        StepFinished(1, 1, Completed()),
        TurnStoppingDone(1),
        "followup",
        {"type": "send"},
    ],
    ids=repr,
)
def test_r35_post_refuses_what_is_not_a_caller_command_and_writes_nothing(
    store: AnyStore, command: Any
) -> None:
    agent = agent_name()
    with pytest.raises(NotPostable):
        store.post(agent, command)
    assert post_rows(store, agent) == 0


@pytest.mark.parametrize(
    ("agent", "key"),
    [("", None), ("a" * 257, None), ("a\x00b", None), (7, None), ("ok", ""), ("ok", 3)],
)
def test_r35_post_checks_agent_id_and_key_limits_with_invalid_input(
    store: AnyStore, agent: Any, key: Any
) -> None:
    with pytest.raises(InvalidInput):
        store.post(agent, followup(msg("x")), key=key)
    if agent == "ok":
        assert post_rows(store, agent) == 0


def test_r35_every_postable_command_round_trips_with_its_expectation(store: AnyStore) -> None:
    agent = agent_name()
    m = msg("m")
    commands = [
        followup(m, expect=ExpectIdle()),
        steer(msg("s"), expect=ExpectTurn(3)),
        Move(m.id, "next-step", ExpectTurn(2)),
        Cancel(keep_inbox=True, expect=ExpectTurn(5)),
    ]
    for command in commands:
        store.post(agent, command)
    from inbox_core.shell.stores.posts import decode_post

    texts = execute(
        store,
        f"SELECT command FROM {posts_table(store)} WHERE agent_id = %s ORDER BY post_id",
        agent,
    )
    assert [decode_post(text) for (text,) in texts] == commands


# ------------------------------------------------------------------ applying


@run_async
async def _serve_and_wait(store: AnyStore, agent: str, receipts: list[Receipt]) -> list[Any]:
    loop_agent = LoopAgent(EchoHost(), log=store.log(agent))
    try:
        outcomes = [await store.wait(r, timeout=5) for r in receipts]
        await loop_agent.when_idle()
        return outcomes
    finally:
        await loop_agent.aclose()


def test_r35_posts_to_an_unowned_agent_wait_then_the_next_owner_applies_them_in_order(
    store: AnyStore,
) -> None:
    agent = agent_name()
    messages = [msg(f"p{i}") for i in range(5)]
    receipts = [store.post(agent, queue(m)) for m in messages]
    receipts.append(store.post(agent, followup(msg("go"))))
    assert all(store.outcome(r) == PostPending() for r in receipts)
    assert _serve_and_wait(store, agent, receipts) == [PostApplied()] * 6
    events = log_json(store.log(agent).read())
    admitted = [e["data"]["content"][0]["text"] for e in events if e["type"] == "user/message"]
    assert admitted == [f"p{i}" for i in range(5)] + ["go"]


def test_r35_same_key_before_and_after_applied_is_one_receipt_one_application(
    store: AnyStore,
) -> None:
    agent = agent_name()
    m = msg("once")
    first = store.post(agent, followup(m), key="k-1")
    assert store.post(agent, followup(m), key="k-1") == first  # before it was applied
    assert post_rows(store, agent) == 1
    assert _serve_and_wait(store, agent, [first]) == [PostApplied()]
    again = store.post(agent, followup(msg("other")), key="k-1")  # after: still the first
    assert again == first
    assert store.outcome(again) == PostApplied()
    other = store.post(agent, followup(msg("two")), key="k-2")
    assert other != first
    assert post_rows(store, agent) == 2
    kinds = fate_kinds(store.log(agent))
    assert list(kinds.values()) == ["AdmittedFate"]
    assert str(m.id) in kinds


def test_r35_rejected_posts_record_the_error_and_leave_the_log_untouched(store: AnyStore) -> None:
    agent = agent_name()

    async def main() -> None:
        host = ScriptedHost()
        loop_agent = LoopAgent(host, log=store.log(agent))
        queued = msg("queued")
        loop_agent.followup(msg("run"))
        loop_agent.queue(queued)  # pending in next-turn while turn 1 runs (R32)
        call = await host.next("pre_step")
        before = log_json(loop_agent.log.read())
        state = loop_agent.state
        rejected = [
            store.post(agent, queue(queued)),  # DuplicateMessageId
            store.post(agent, followup(msg("x"), expect=ExpectIdle())),  # AgentBusy
            store.post(agent, steer(msg("y"), expect=ExpectTurn(7))),  # TurnMismatch
        ]
        outcomes = [await store.wait(r, timeout=5) for r in rejected]
        assert [o.error for o in outcomes] == ["DuplicateMessageId", "AgentBusy", "TurnMismatch"]
        assert all(isinstance(o, PostRejected) and o.message for o in outcomes)
        assert log_json(loop_agent.log.read()) == before
        assert loop_agent.state == state
        call.enter()
        (await host.next("run_step")).answer(Completed())
        (await host.next("turn_stopping")).answer()
        await loop_agent.when_idle()
        later = msg("later")
        loop_agent.queue(later)
        promote = store.post(agent, Move(later.id, "next-step"))  # idle: no live turn (R8)
        outcome = await store.wait(promote, timeout=5)
        assert outcome == PostRejected("SteerUnavailable", outcome.message)
        await loop_agent.aclose()

    run_async(main)()


def test_r35_a_malformed_row_is_rejected_with_a_reason_and_the_agent_keeps_serving(
    store: AnyStore,
) -> None:
    agent = agent_name()
    table = posts_table(store)
    hostile = ["[" * 100_000, '"' + "x" * (2**24 + 1) + '"']  # nested deep; too long
    for text in ["{not json", '{"type":"dispose"}', '{"type":"send"}', "[]", '"x"', *hostile]:
        execute(store, f"INSERT INTO {table} (agent_id, command) VALUES (%s, %s)", agent, text)
    good = store.post(agent, followup(msg("fine")))
    assert _serve_and_wait(store, agent, [good]) == [PostApplied()]
    rows = execute(
        store,
        f"SELECT outcome, error, message FROM {table} WHERE agent_id = %s ORDER BY post_id",
        agent,
    )
    assert [row[0] for row in rows] == ["rejected"] * 7 + ["applied"]
    assert [row[1] for row in rows[:7]] == ["DecodeError", "NotPostable"] + ["DecodeError"] * 5
    assert "not JSON" in rows[0][2]
    assert "Dispose" in rows[1][2]
    assert [e["type"] for e in log_json(store.log(agent).read())].count("user/message") == 1


def test_r35_a_posted_steer_during_a_step_is_exactly_an_in_process_steer(store: AnyStore) -> None:
    """The same session twice, steer in-process vs posted mid-step: identical logs."""
    first, steered = msg("first"), msg("steered")

    async def session(post: bool) -> list[dict[str, Any]]:
        agent = agent_name()
        host = ScriptedHost()
        loop_agent = LoopAgent(host, log=store.log(agent))
        loop_agent.followup(first)
        (await host.next("pre_step")).enter()
        run = await host.next("run_step")
        if post:
            outcome = await store.wait(store.post(agent, steer(steered)), timeout=5)
            assert outcome == PostApplied()
        else:
            loop_agent.steer(steered)
        assert [text_of(e.message) for e in loop_agent.inbox.next_step] == ["steered"]
        run.answer(Completed())
        pre = await host.next("pre_step")
        assert pre.texts == ["steered"]
        pre.enter()
        (await host.next("run_step")).answer(Completed())
        (await host.next("turn_stopping")).answer()
        await loop_agent.when_idle()
        await loop_agent.aclose()
        return log_json(loop_agent.log.read())

    assert run_async(session)(True) == run_async(session)(False)


def test_r35_posts_and_own_commands_interleave_each_applied_whole(store: AnyStore) -> None:
    agent = agent_name()

    async def main() -> None:
        loop_agent = LoopAgent(ScriptedHost(), log=store.log(agent))
        loop_agent.queue(msg("own-1"))
        await store.wait(store.post(agent, queue(msg("posted-1"))), timeout=5)
        loop_agent.queue(msg("own-2"))
        await store.wait(store.post(agent, inject(msg("posted-2"))), timeout=5)
        assert [text_of(e.message) for e in loop_agent.inbox.next_turn] == [
            "own-1",
            "posted-1",
            "own-2",
        ]
        assert [text_of(e.message) for e in loop_agent.inbox.next_step] == ["posted-2"]
        await loop_agent.detach()

    run_async(main)()


def test_r35_a_memory_log_serves_nothing_and_dispose_stops_serving(store: AnyStore) -> None:
    agent = agent_name()

    async def main() -> None:
        plain = LoopAgent(EchoHost(), log=MemoryLog())
        await plain.aclose()
        loop_agent = LoopAgent(EchoHost(), log=store.log(agent))
        await loop_agent.aclose()  # disposed: the posts wait for the next owner
        receipt = store.post(agent, followup(msg("after")))
        await asyncio.sleep(0.1)
        assert store.outcome(receipt) == PostPending()
        assert await _applied_by_next_owner(store, agent, receipt)

    run_async(main)()


async def _applied_by_next_owner(store: AnyStore, agent: str, receipt: Receipt) -> bool:
    loop_agent = LoopAgent(EchoHost(), log=store.log(agent))
    try:
        return await store.wait(receipt, timeout=5) == PostApplied()
    finally:
        await loop_agent.aclose()


def test_r35_a_failed_consuming_transaction_leaves_the_post_pending_and_the_log_as_it_was(
    tmp_path: Any,
) -> None:
    """Consuming and appending are one transaction: an append that fails consumes nothing."""
    store = ready(SqliteStore(tmp_path / "a.db"))
    agent = agent_name()
    execute(
        store,
        "CREATE TRIGGER refuse BEFORE INSERT ON events BEGIN SELECT RAISE(ABORT, 'injected'); END",
    )

    async def main() -> None:
        loop_agent = LoopAgent(EchoHost(), log=store.log(agent))
        receipt = store.post(agent, followup(msg("m")))
        await asyncio.sleep(0.2)
        assert store.outcome(receipt) == PostPending()
        assert loop_agent.log.read() == []
        assert loop_agent.status == "idle"
        execute(store, "DROP TRIGGER refuse")
        assert await store.wait(receipt, timeout=5) == PostApplied()  # the server retried
        await loop_agent.aclose()

    run_async(main)()
    assert list(fate_kinds(store.log(agent)).values()) == ["AdmittedFate"]
    store.close()


# -------------------------------------------------------------- wait, watch


def test_r35_wait_times_out_typed_and_unknown_receipts_are_typed(store: AnyStore) -> None:
    agent = agent_name()
    receipt = store.post(agent, followup(msg("m")))

    async def main() -> None:
        with pytest.raises(PostTimeout):
            await store.wait(receipt, timeout=0.05)
        with pytest.raises(UnknownReceipt):
            await store.wait(Receipt(agent, receipt.post_id + 1000))
        with pytest.raises(InvalidInput):
            await store.wait(receipt, timeout=-1)

    run_async(main)()
    with pytest.raises(UnknownReceipt):
        store.outcome(Receipt("someone-else", receipt.post_id))
    with pytest.raises(InvalidInput):
        store.outcome("receipt")  # type: ignore[arg-type]


def test_r35_prune_deletes_old_outcomes_and_keys_never_pending_posts(store: AnyStore) -> None:
    agent = agent_name()
    done = store.post(agent, followup(msg("a")), key="old")
    assert _serve_and_wait(store, agent, [done]) == [PostApplied()]
    waiting = store.post(agent, followup(msg("b")))
    assert store.prune(older_than=3600) == 0  # decided just now: kept
    assert store.prune(older_than=0) >= 1
    with pytest.raises(UnknownReceipt):
        store.outcome(done)
    assert store.outcome(waiting) == PostPending()
    assert store.post(agent, followup(msg("c")), key="old") != done  # the key was pruned
    with pytest.raises(InvalidInput):
        store.prune(older_than=float("nan"))


def test_r36_watch_follows_an_agent_live_without_owning_it_and_across_a_takeover(
    store: AnyStore,
) -> None:
    agent = agent_name()

    async def main() -> None:
        seen: list[tuple[int, str]] = []

        async def follow() -> None:
            async for seq, event in store.watch(agent, since=0):
                seen.append((seq, event.type))

        watcher = asyncio.create_task(follow())
        first = LoopAgent(EchoHost(), log=store.log(agent))
        first.followup(msg("one"))
        await first.when_idle()
        count = len(first.log.read())
        await until(lambda: len(seen) == count, what="the watcher to see the first turn")
        await first.detach()
        second = LoopAgent(EchoHost(), log=store.log(agent))  # takeover
        second.followup(msg("two"))
        await second.when_idle()
        total = len(second.log.read())
        await until(lambda: len(seen) == total, what="the watcher to see the second turn")
        assert [seq for seq, _ in seen] == list(range(total))
        assert [t for _, t in seen] == [e.type for e in second.log.read()]
        later: list[int] = []
        async for seq, _ in store.watch(agent, since=total - 2):
            later.append(seq)
            if len(later) == 2:
                break
        assert later == [total - 2, total - 1]
        watcher.cancel()
        await second.aclose()

    run_async(main)()


def test_r36_watch_refuses_bad_arguments(store: AnyStore) -> None:
    async def main() -> None:
        with pytest.raises(InvalidInput):
            async for _ in store.watch("", 0):
                pass
        with pytest.raises(InvalidInput):
            async for _ in store.watch("a", -1):
                pass

    run_async(main)()


# --------------------------------------------------------------- concurrency


def test_r35_concurrent_threads_posting_get_one_order_that_keeps_each_posters_order(
    store: AnyStore,
) -> None:
    agent = agent_name()
    per_thread, threads = 15, 4

    def poster(name: str) -> None:
        for i in range(per_thread):
            store.post(agent, queue(create_user_message(f"{name}-{i}")))

    async def main() -> list[str]:
        loop_agent = LoopAgent(ScriptedHost(), log=store.log(agent))
        workers = [threading.Thread(target=poster, args=(f"t{n}",)) for n in range(threads)]
        for worker in workers:
            worker.start()
        await asyncio.to_thread(lambda: [w.join() for w in workers])
        await until(lambda: len(loop_agent.inbox.next_turn) == per_thread * threads)
        texts = [text_of(e.message) for e in loop_agent.inbox.next_turn]
        await loop_agent.detach()
        return texts

    texts = run_async(main)()
    for n in range(threads):
        mine = [t for t in texts if t.startswith(f"t{n}-")]
        assert mine == [f"t{n}-{i}" for i in range(per_thread)]


# ---------------------------------------------------------------- the STORE form


@pytest.mark.parametrize(
    ("spec", "parsed"),
    [
        ("sqlite:agents.db", ("sqlite", "agents.db")),
        ("sqlite:///tmp/a.db", ("sqlite", "/tmp/a.db")),
        ("postgresql://u@h:5/d", ("postgresql", "postgresql://u@h:5/d")),
        ("postgres://h/d", ("postgresql", "postgres://h/d")),
    ],
)
def test_r35_store_form_parses(spec: str, parsed: tuple[str, str]) -> None:
    assert parse_store(spec) == parsed


@pytest.mark.parametrize("spec", ["", "agents.db", "sqlite:", "mysql://x", None])
def test_r35_store_form_refuses_anything_else(spec: Any) -> None:
    with pytest.raises(InvalidInput):
        parse_store(spec)


# ------------------------------------------------------------ the documented table


def test_r35_specs_shell_md_documents_the_exact_table_and_insert() -> None:
    """specs/shell.md section 12 shows the statements a producer in another language runs:
    they are the ones the stores execute (each store's schema.py, their one source)."""
    from pathlib import Path

    from inbox_core.shell.stores.postgres import schema as pg
    from inbox_core.shell.stores.sqlite import schema as sqlite

    text = (Path(__file__).resolve().parents[2] / "specs" / "shell.md").read_text()
    for statement in (*sqlite.SQLITE_DDL, *pg.PG_DDL, sqlite.SQLITE_INSERT):
        assert statement + ("" if statement is sqlite.SQLITE_INSERT else ";") in text, statement
    documented_pg = pg.PG_INSERT.replace("%(agent)s", "$1").replace("%(command)s", "$2")
    assert documented_pg.replace("%(key)s", "$3") in text


# ------------------------------------------------------------------ hostile input


@pytest.mark.parametrize(
    ("agent", "post_id"), [("", 1), ("a", 0), ("a", "1"), ("a", True), ("a", 2**70), (None, 1)]
)
def test_r35_a_receipt_no_store_could_return_is_invalid_input(agent: Any, post_id: Any) -> None:
    with pytest.raises(InvalidInput):
        Receipt(agent, post_id)


def test_r35_outcome_and_wait_refuse_what_is_no_receipt(store: AnyStore) -> None:
    for bad in (None, ("a", 1), "a:1"):
        with pytest.raises(InvalidInput):
            store.outcome(bad)  # type: ignore[arg-type]

    async def main() -> None:
        with pytest.raises(InvalidInput):
            await store.wait(Receipt("a", 1), timeout=float("nan"))

    run_async(main)()


def test_r36_watch_reports_a_garbage_event_row_as_corrupt_log_naming_its_seq(
    store: AnyStore,
) -> None:
    """A row no writer of ours could have written (another program's, say) stops the watch
    with CorruptLog at that seq, after the good events before it."""
    from inbox_core.shell import CorruptLog

    agent = agent_name()

    async def main() -> None:
        owner = LoopAgent(ScriptedHost(), log=store.log(agent))
        owner.queue(msg("fine"))
        await owner.detach()
        table = "events" if isinstance(store, SqliteStore) else "inbox_core_events"
        execute(
            store,
            f"INSERT INTO {table} (agent_id, seq, event) VALUES (%s, 1, %s)",
            agent,
            '{"type": "agent/inbox/spliced", "data": ' + "[" * 5000 + "]" * 5000 + "}",
        )
        seen: list[int] = []

        async def follow() -> None:
            async for seq, _ in store.watch(agent):
                seen.append(seq)

        with pytest.raises(CorruptLog) as info:
            await follow()
        assert seen == [0]
        assert info.value.seq == 1

    run_async(main)()
