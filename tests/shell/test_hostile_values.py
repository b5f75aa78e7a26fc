"""Hostile values at the shell (issue 17 items 1 and 7): a refused value changes nothing,
an agent is never bricked, and a host's bad record is the host's error (R33, R26, I11)."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from inbox_core import (
    AgentState,
    Completed,
    DecodeError,
    Failed,
    HostRecord,
    InvalidInput,
    PreStepFailed,
    UserMessage,
    create_user_message,
    limits,
    queue,
    reduce,
)
from inbox_core.shell import (
    CorruptLog,
    LoopAgent,
    MemoryLog,
    PostApplied,
    Recorded,
    SqliteLog,
    SqliteStore,
    from_json_lines,
    to_json_lines,
)
from inbox_core.shell.host import describe_failure
from inbox_core.shell.stores.posts import decode_post
from inbox_core.testing import hostile
from inbox_core.testing.hostile import nested

from .support import ScriptedHost, check_invariants, msg, run_async, turn_ends


def test_item1_a_330_deep_message_is_refused_and_the_agent_reopens(tmp_path: Path) -> None:
    """Issue 17 item 1: the 330-deep content of the report is InvalidInput before anything is
    written; the agent (reopened on the same file, also deep in a stack) reads its log."""
    path = tmp_path / "a.db"

    async def first() -> None:
        agent = LoopAgent(ScriptedHost(), log=SqliteLog(path, agent_id="alice"))
        agent.queue(UserMessage("ok", "kept"))
        before = len(agent.log.read())  # type: ignore[union-attr]
        with pytest.raises(InvalidInput, match="levels deep"):
            agent.queue(create_user_message([{"type": "x", "v": nested(330)}]))
        assert len(agent.log.read()) == before  # type: ignore[union-attr]
        await agent.detach()

    asyncio.run(first())

    def reopen(depth: int) -> list[str]:
        if depth:
            return reopen(depth - 1)

        async def again() -> list[str]:
            agent = LoopAgent(ScriptedHost(), log=SqliteLog(path, agent_id="alice"))
            ids = [entry.message.id for entry in agent.inbox.next_turn]
            await agent.detach()
            return ids

        return asyncio.run(again())

    assert reopen(0) == ["ok"]
    assert reopen(800) == ["ok"]


@run_async
async def test_item7_a_record_with_a_truncated_emoji_fails_the_step_not_the_driver() -> None:
    """Issue 17 item 7, R33: a host that builds a record from half an emoji gets InvalidInput
    in its own hook, so the turn ends error with that code and the driver goes on."""
    host = ScriptedHost()
    agent = LoopAgent(host)
    agent.followup(msg("f1"))
    agent.followup(msg("f2"))
    (await host.next("pre_step")).enter()
    step = await host.next("run_step")
    try:
        Recorded(Completed(), [HostRecord("host/reply", {"text": "hello \ud83d"})])
    except InvalidInput as error:
        step.fail(error)
    else:  # pragma: no cover - the record must be refused
        pytest.fail("a lone surrogate was accepted")
    assert await host.complete_turn() == ["f2"]
    await agent.when_idle()
    (turn, reason), _second = turn_ends(agent)
    assert turn == 1
    assert reason["kind"] == "error"
    assert reason["error"]["code"] == "InvalidInput"  # type: ignore[index]
    check_invariants(agent)


@pytest.mark.parametrize("agent_id", ["\ud800", "a" * (limits.MAX_AGENT_ID_LENGTH + 1), "a\x00b"])
def test_item7_bad_agent_ids_are_refused_when_the_log_is_built(
    tmp_path: Path, agent_id: str
) -> None:
    """Issue 17 items 7 and 12: the same agent-id limits on every store, at construction."""
    with pytest.raises(InvalidInput):
        SqliteLog(tmp_path / "x.db", agent_id=agent_id)
    assert not (tmp_path / "x.db").exists()


# ----------------------------------------------------- sizes (audit of issue 17, G8)


def test_g8_a_message_too_big_for_any_store_is_refused_before_anything_is_written(
    tmp_path: Path,
) -> None:
    """Issue 17 (audit G8), R26, I11: 61 blocks of 16 MiB were accepted, then the store's
    append failed with LogUnavailable (which reads as 'retry later'); now the message is
    InvalidInput when built, the log is untouched and the agent goes on."""
    block = {"type": "text", "text": "x" * (limits.MAX_JSON_SIZE - 100)}

    async def main() -> None:
        agent = LoopAgent(ScriptedHost(), log=SqliteLog(tmp_path / "a.db", agent_id="a"))
        agent.queue(UserMessage("before", "kept"))
        with pytest.raises(InvalidInput, match="must have a size of at most"):
            agent.queue(create_user_message([block] * 61))
        agent.queue(UserMessage("after", "kept too"))
        assert [entry.message.id for entry in agent.inbox.next_turn] == ["before", "after"]
        assert len(agent.log.read()) == 2  # type: ignore[union-attr]
        await agent.detach()

    asyncio.run(main())


def test_g8_a_message_at_the_size_limit_posts_and_is_applied(tmp_path: Path) -> None:
    """Issue 17 (audit G8), R35: a message within maxValueSize whose post text is longer than
    maxJsonSize was refused by store.post (DecodeError from its own check); any command of
    accepted values now fits a post (maxDocumentSize), and its owner applies it."""
    text = "x" * (limits.MAX_JSON_SIZE - 400)
    message = UserMessage("big", [{"type": "text", "text": text}] * 2)
    assert limits.MAX_JSON_SIZE < message.size <= limits.MAX_VALUE_SIZE
    store = SqliteStore(tmp_path / "a.db")
    try:
        receipt = store.post("a", queue(message))

        async def serve() -> object:
            agent = LoopAgent(ScriptedHost(), log=store.log("a"))
            try:
                outcome = await store.wait(receipt, timeout=20)
                assert [entry.message for entry in agent.inbox.next_turn] == [message]
                return outcome
            finally:
                await agent.detach()

        assert asyncio.run(serve()) == PostApplied()
    finally:
        store.close()


def test_g8_a_post_row_longer_than_max_document_size_is_decode_error() -> None:
    """maxDocumentSize: a row no reference writer produces (a producer in another language)
    is refused by its length before it is parsed."""
    with pytest.raises(DecodeError, match="characters long"):
        decode_post(" " * (limits.MAX_DOCUMENT_SIZE + 1))


# ------------------------------------ what a hook raises never stops the driver (G1)


class _Shouting(str):
    """A str whose own methods raise: describe_failure must never call them."""

    def __len__(self) -> int:
        raise RuntimeError("len")

    def isascii(self) -> bool:
        raise RuntimeError("isascii")


class _Loud(Exception):
    def __str__(self) -> str:
        return _Shouting("loud \ud800")


class _Mute(Exception):
    def __str__(self) -> str:
        raise RuntimeError("no str")

    def __repr__(self) -> str:
        return "mute \udfff"


def _long_named() -> type[Exception]:
    return type("E" * (limits.MAX_JSON_SIZE + 1), (Exception,), {})


RAISED: dict[str, Callable[[], BaseException]] = {
    "lone surrogate": lambda: RuntimeError("reply cut mid-emoji \ud83d"),
    "only surrogates": lambda: RuntimeError("\udfff\ud800"),
    "past maxJsonSize": lambda: RuntimeError("x" * (limits.MAX_JSON_SIZE + 1)),
    "past maxJsonSize once escaped": lambda: RuntimeError("\ud800" * (limits.MAX_JSON_SIZE // 4)),
    "class name past maxJsonSize": lambda: _long_named()("m"),
    "str subclass with raising methods": _Loud,
    "repr with a surrogate": _Mute,
}


@pytest.mark.parametrize("raised", sorted(RAISED))
@pytest.mark.parametrize("hook", ["pre_step", "run_step"])
@pytest.mark.parametrize("store", ["memory", "sqlite"])
def test_g1_a_hook_raising_unstorable_text_ends_the_turn_error_and_the_driver_goes_on(
    tmp_path: Path, raised: str, hook: str, store: str
) -> None:
    """R33, R18, issue 17 (audit G1): an exception whose str holds a lone surrogate, or is
    past maxJsonSize, or whose class name does, stopped the driver (DriverStopped: the
    Failed/PreStepFailed built from it was refused); now its message and code are made
    storable (surrogates escaped, cut with a marker), the turn ends error, the next turn
    runs and the log reads back (I5)."""
    log = MemoryLog() if store == "memory" else SqliteLog(tmp_path / "a.db", agent_id="a")
    error = RAISED[raised]()
    message, code = describe_failure(error)

    async def main() -> None:
        host = ScriptedHost()
        agent = LoopAgent(host, log=log)
        agent.followup(msg("f1"))
        agent.followup(msg("f2"))
        pre = await host.next("pre_step")
        if hook == "pre_step":
            pre.fail(error)
        else:
            pre.enter()
            (await host.next("run_step")).fail(error)
        assert await host.complete_turn() == ["f2"]
        await agent.when_idle()
        (turn, reason), second = turn_ends(agent)
        assert (turn, reason["kind"], second) == (1, "error", (2, {"kind": "completed"}))
        assert reason["error"] == {"message": message, "code": code}  # type: ignore[index]
        check_invariants(agent)
        await agent.detach()

    asyncio.run(main())
    events = log.read()
    assert from_json_lines(to_json_lines(events)) == events
    for text in (message, code):
        text.encode("utf-8")  # no lone surrogate is left
        assert 0 < len(text) <= limits.MAX_JSON_SIZE


@settings(max_examples=200, deadline=None)
@given(
    text=st.text(st.one_of(st.characters(), st.sampled_from(hostile.LONE_SURROGATES))),
    name=st.text(st.characters(exclude_characters="\x00")),  # type() refuses NUL, surrogates
)
def test_g1_describe_failure_always_gives_a_storable_message_and_code(text: str, name: str) -> None:
    """R33 (audit G1): for any exception text and class name, the failure report builds
    (Failed and PreStepFailed accept both); storable text is kept as it is."""
    error = type(name or "E", (Exception,), {})(text)
    message, code = describe_failure(error)
    Failed(message, code)
    PreStepFailed(1, 1, message, code)
    if not any("\ud800" <= char <= "\udfff" for char in text):
        assert message == (text or code)
    assert code == (name or "E")


def test_g1_storable_text_escapes_surrogates_and_cuts_with_a_marker() -> None:
    """limits.storable_text: an escape per lone surrogate; past the limit, cut to exactly the
    limit, ending with a marker naming the original length."""
    assert limits.storable_text("a\ud83db") == "a\\ud83db"
    assert limits.storable_text("é😀") == "é😀"
    cut = limits.storable_text("y" * 100, limit=40)
    assert len(cut) == 40
    assert cut.startswith("y")
    assert cut.endswith("[cut: 100 characters]")
    assert limits.storable_text("z" * 10, limit=3) == "… ["


# --------------------------------------------- untyped argument errors (audit G9)

SHELL_JUNK = st.one_of(
    st.none(),
    st.integers(),
    st.floats(),
    st.builds(object),
    st.lists(st.one_of(st.none(), st.integers(), st.text(max_size=2)), min_size=1, max_size=3),
    st.dictionaries(st.text(max_size=2), st.integers(), min_size=1, max_size=2),
    st.text(min_size=1, max_size=3),
)


def _append(junk: object) -> None:
    log = MemoryLog([HostRecord("host/kept")])
    log.acquire()
    try:
        log.append(junk)  # type: ignore[arg-type]
    finally:
        assert log.read() == [HostRecord("host/kept")]  # nothing appended (I11)


SHELL_PUBLIC: dict[str, Callable[[Any], object]] = {
    "MemoryLog": MemoryLog,
    "MemoryLog.append": _append,
    "to_json_lines": to_json_lines,
    "to_json_lines (start)": lambda junk: to_json_lines([], start=junk),
    "from_json_lines": from_json_lines,
    "Recorded (records)": lambda junk: Recorded(Completed(), junk),
}


@settings(max_examples=200, deadline=None)
@given(name=st.sampled_from(sorted(SHELL_PUBLIC)), junk=SHELL_JUNK)
def test_g9_shell_functions_refuse_arguments_of_the_wrong_type_with_invalid_input(
    name: str, junk: Any
) -> None:
    """R26, I11, issue 17 (audit G9): from_json_lines(None) was AttributeError, MemoryLog(None)
    and to_json_lines([5]) TypeError, MemoryLog([5]) accepted then ReplayError in LoopAgent;
    each is InvalidInput where the argument is given, and a refused append appends nothing."""
    valid_type = {("from_json_lines", str), ("to_json_lines (start)", int)}
    try:
        SHELL_PUBLIC[name](junk)
    except InvalidInput:
        return
    except CorruptLog:  # text that is not JSON Lines: the reader's typed error
        assert (name, type(junk)) in valid_type
        return
    assert (name, type(junk)) in valid_type  # accepted: valid after all


def test_g9_json_lines_read_utf8_bytes_and_name_a_line_that_is_not() -> None:
    """Issue 17 (audit G9): from_json_lines also takes the bytes of a file; a line that is
    not UTF-8 is CorruptLog naming its seq and line, after the good prefix."""
    events = [HostRecord("host/a", "é\u2028"), HostRecord("host/b", 2)]
    text = to_json_lines(events)
    assert from_json_lines(text.encode()) == from_json_lines(text) == events
    with pytest.raises(CorruptLog, match="line 2 is not UTF-8") as caught:
        from_json_lines(text.encode().replace(b'"host/b"', b'"host/\xff"'))
    assert caught.value.seq == 1
    with pytest.raises(InvalidInput, match="start"):
        to_json_lines(events, start=True)  # type: ignore[arg-type]


@run_async
async def test_g9_a_memory_log_of_non_events_is_refused_before_an_agent_replays_it() -> None:
    """Issue 17 (audit G9): MemoryLog([5]) is InvalidInput when built, not a ReplayError
    from the LoopAgent built over it later."""
    with pytest.raises(InvalidInput, match="item 0 is not a durable event"):
        MemoryLog([5])  # type: ignore[list-item]


# ------------------------------- every store takes back what a value accepts (issue 17)


def _storable_events(content: Any, metadata: Any, text: str) -> list[Any]:
    """A message event and two records built from storable values (odd strings, int64
    bounds, nesting at the limit): what every store must give back equal."""
    message = create_user_message([{"type": text, "v": content}], metadata={"m": metadata})
    (inserted,) = reduce(AgentState.initial(), queue(message)).durable
    return [
        inserted,
        HostRecord("host/" + (text or "x"), {"text": text, "content": content}),
        HostRecord("host/deep", nested(limits.MAX_DEPTH - 1, leaf=[2**63 - 1, -(2**63), text])),
    ]


@pytest.mark.parametrize("store", ["postgres", "memory"])
def test_storable_values_round_trip_through_postgres_and_memory(store: str, request: Any) -> None:
    """Issue 17: any accepted value (odd strings: U+2028, U+0085, NUL, astral characters;
    int64 bounds; nesting at maxDepth) is stored and read back equal by PostgresLog and
    MemoryLog too, as by the codecs, JSON Lines and SQLite (test_hostile_input). Under
    CI=true a missing PostgreSQL server fails this test instead of skipping it."""
    if store == "postgres":
        from inbox_core.shell import PostgresLog

        log: Any = PostgresLog(request.getfixturevalue("pg"), f"hostile-{uuid.uuid4()}")
    else:
        log = MemoryLog()
    log.acquire()

    @settings(max_examples=40, deadline=None)
    @given(
        content=hostile.storable_json(),
        metadata=hostile.storable_json(),
        text=hostile.storable_strings(),
    )
    def round_trip(content: Any, metadata: Any, text: str) -> None:
        events = _storable_events(content, metadata, text)
        before = len(log.read())
        log.append(events)
        assert log.read()[before:] == events
        assert from_json_lines(to_json_lines(log.read())) == log.read()

    try:
        round_trip()
    finally:
        log.release()
        if store == "postgres":
            log.close()
