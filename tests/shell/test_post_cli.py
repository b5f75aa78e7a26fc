"""``inbox-core post`` and ``inbox-core watch`` (R35, R36) against a live owner."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from inbox_core import Completed
from inbox_core.cli import main
from inbox_core.shell import LoopAgent, SqliteStore

from .posts_support import AnyStore, agent_name, execute, pg_url, posts_table
from .support import ScriptedHost, run_async, text_of

ECHO = "inbox_core.shell.echo:echo_host"


def _cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


async def _cli_async(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """The CLI in a thread (``--wait`` runs its own event loop) while this loop serves."""
    code = await asyncio.to_thread(main, list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_r35_post_each_intent_with_wait_is_applied_by_the_live_owner(
    backend: tuple[AnyStore, str], capsys: pytest.CaptureFixture[str]
) -> None:
    store, spec = backend
    agent = agent_name()

    async def scenario() -> None:
        host = ScriptedHost()
        owner = LoopAgent(host, log=store.log(agent))
        code, out, _ = await _cli_async(
            capsys, "post", spec, agent, "--queue", "parked", "--id", "q1", "--wait"
        )
        assert (code, out.splitlines()[-1]) == (0, "applied")
        assert out.startswith("posted ")
        assert [str(e.message.id) for e in owner.inbox.next_turn] == ["q1"]
        code, out, _ = await _cli_async(capsys, "post", spec, agent, "--followup", "go", "--wait")
        assert code == 0
        call = await host.next("pre_step")
        assert owner.status == "running"
        code, out, _ = await _cli_async(
            capsys, "post", spec, agent, "--followup", "again", "--expect", "idle", "--wait"
        )
        assert code == 1
        assert out.splitlines()[-1].startswith("rejected: AgentBusy: ")
        code, out, _ = await _cli_async(
            capsys, "post", spec, agent, "--steer", "mid", "--expect", "turn:1", "--wait"
        )
        assert (code, out.splitlines()[-1]) == (0, "applied")
        assert [text_of(e.message) for e in owner.inbox.next_step] == ["mid"]
        code, out, _ = await _cli_async(
            capsys, "post", spec, agent, "--cancel", "--keep-inbox", "--wait"
        )
        assert (code, out.splitlines()[-1]) == (0, "applied")
        call.enter()  # turn 1 was aborted: the kept steer opens turn 2 (R22)
        second = await host.next("pre_step")
        assert second.turn == 2
        assert "mid" in second.texts
        second.enter()
        (await host.next("run_step")).answer(Completed())
        (await host.next("turn_stopping")).answer()
        await owner.when_idle()
        await owner.detach()

    run_async(scenario)()


def test_r35_post_with_a_key_twice_is_one_post(
    backend: tuple[AnyStore, str], capsys: pytest.CaptureFixture[str]
) -> None:
    _, spec = backend
    agent = agent_name()
    first = _cli(capsys, "post", spec, agent, "--queue", "x", "--key", "ui-1")
    second = _cli(capsys, "post", spec, agent, "--queue", "y", "--key", "ui-1")
    assert first[0] == second[0] == 0
    assert first[1] == second[1]  # the same receipt


@pytest.mark.parametrize(
    "argv",
    [
        ["alice"],  # no intent
        ["alice", "--queue", "x", "--cancel"],
        ["alice", "--queue", "x", "--keep-inbox"],
        ["alice", "--cancel", "--id", "m"],
        ["alice", "--cancel", "--expect", "turn:0"],
        ["alice", "--cancel", "--expect", "busy"],
        ["alice", "--queue", "x", "--wait", "--timeout", "-1"],
    ],
)
def test_post_usage_errors_exit_2_and_post_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    path = tmp_path / "a.db"
    code, _, err = _cli(capsys, "post", f"sqlite:{path}", *argv)
    assert code == 2
    assert err
    assert not path.exists()


@pytest.mark.parametrize("store", ["agents.db", "mysql://x/y", "sqlite:"])
def test_post_and_watch_refuse_what_is_no_store(
    capsys: pytest.CaptureFixture[str], store: str
) -> None:
    for command in (["post", store, "a", "--cancel"], ["watch", store, "a"]):
        code, _, err = _cli(capsys, *command)
        assert code == 2
        assert "argument STORE: " in err


def test_post_invalid_input_is_a_one_line_error_exit_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = _cli(capsys, "post", f"sqlite:{tmp_path / 'a.db'}", "", "--queue", "x")
    assert code == 1
    assert out == ""
    assert err.startswith("inbox-core post: InvalidInput:")
    assert "Traceback" not in err


def test_post_wait_times_out_when_nobody_serves(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = _cli(
        capsys,
        "post",
        f"sqlite:{tmp_path / 'a.db'}",
        "bob",
        "--queue",
        "x",
        "--wait",
        "--timeout",
        "0.2",
    )
    assert code == 1
    assert out.startswith("posted ")
    assert "PostTimeout" in err


def test_r36_watch_no_follow_prints_the_timeline_and_a_missing_file_is_an_error(
    backend: tuple[AnyStore, str], capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    store, spec = backend
    agent = agent_name()

    async def fill() -> int:
        owner = LoopAgent(ScriptedHost(), log=store.log(agent))
        owner.queue(_message("parked"))
        count = len(owner.log.read())
        await owner.detach()
        return count

    count = run_async(fill)()
    code, out, _ = _cli(capsys, "watch", spec, agent, "--no-follow")
    assert code == 0
    lines = out.splitlines()
    assert len(lines) == count
    assert lines[0].split()[:2] == ["#0", "agent/inbox/spliced"]
    code, out, _ = _cli(capsys, "watch", spec, agent, "--no-follow", "--json", "--since", "1")
    assert code == 0
    assert len(out.splitlines()) == count - 1
    missing = tmp_path / "missing.db"
    code, _, err = _cli(capsys, "watch", f"sqlite:{missing}", agent)
    assert code == 1
    assert "no such file" in err
    assert not missing.exists()


def test_r36_watch_follows_live_in_another_process(backend: tuple[AnyStore, str]) -> None:
    """``inbox-core watch`` as a child: each append shows up as a line while it runs."""
    store, spec = backend
    agent = agent_name()
    if isinstance(store, SqliteStore):
        LoopAgent(ScriptedHost(), log=store.log(agent)).log.release()  # the file has the agent

    async def scenario() -> None:
        watcher = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "inbox_core",
            "watch",
            spec,
            agent,
            stdout=subprocess.PIPE,
        )
        assert watcher.stdout is not None
        try:
            owner = LoopAgent(ScriptedHost(), log=store.log(agent))
            owner.queue(_message("one"))
            first = await asyncio.wait_for(watcher.stdout.readline(), 20)
            assert b"#0" in first
            assert b"agent/inbox/spliced" in first
            owner.queue(_message("two"))
            second = await asyncio.wait_for(watcher.stdout.readline(), 20)
            assert b"#1" in second
            await owner.detach()
        finally:
            watcher.terminate()
            await watcher.wait()

    run_async(scenario)()


def _message(text: str) -> Any:
    from inbox_core import create_user_message

    return create_user_message(text)


def test_pg_url_form_is_what_the_cli_takes(pg: str) -> None:
    assert pg_url(pg).startswith("postgresql://")


# ------------------------------------------------------- issue 28, item 25


def test_r35_post_and_watch_take_a_libpq_connection_string(
    pg: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """R35, R36 (issue 28 item 25): STORE may be the libpq keyword/value string
    PostgresStore takes ("host=... dbname=..."), not only a URL."""
    assert "=" in pg
    assert not pg.startswith("postgres")
    agent = agent_name()
    code, out, err = _cli(capsys, "post", pg, agent, "--queue", "x")
    assert code == 0, err
    assert out.startswith("posted ")
    code, out, err = _cli(capsys, "post", pg, agent, "--pending")
    assert code == 0, err
    assert len(out.splitlines()) == 1


def test_r35_post_wait_says_that_nobody_serves_the_agent(
    backend: tuple[AnyStore, str], capsys: pytest.CaptureFixture[str]
) -> None:
    """R35 (issue 28 item 25): ``post --wait`` for an agent no live process took up says
    so when it gives up, instead of only "still pending" (and not before: issue 37)."""
    _, spec = backend
    agent = agent_name()
    code, out, err = _cli(capsys, "post", spec, agent, "--queue", "x", "--wait", "--timeout", "0.2")
    assert code == 1
    assert out.startswith("posted ")
    assert "PostTimeout" in err
    assert err.count(f"nobody serves agent {agent!r}") == 1, err
    assert len(err.strip().splitlines()) == 1, err


def test_r35_r37_post_wait_to_an_agent_a_worker_takes_up_says_nothing_of_nobody(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 37 (tried as a new user would): with ``inbox-core serve`` running over the
    store, ``post --wait`` to an agent the worker has not opened yet prints "applied" and
    never that nobody serves it (on c46a0f0 it said so first, then "applied")."""
    spec = f"sqlite:{tmp_path / 'agents.db'}"
    assert main(["post", spec, "warm-up", "--queue", "x"]) == 0  # the store's file is made
    worker = subprocess.Popen(
        [sys.executable, "-m", "inbox_core", "serve", spec, "--host", ECHO, "-q"],
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        code, out, err = _cli(capsys, "post", spec, agent_name(), "--followup", "hi", "--wait")
    finally:
        worker.terminate()
        worker.communicate(timeout=60)
    assert (code, out.splitlines()[-1]) == (0, "applied"), err
    assert "nobody" not in err


def test_r35_post_wait_says_when_the_agent_is_served_but_undecided(
    backend: tuple[AnyStore, str], capsys: pytest.CaptureFixture[str]
) -> None:
    """R35, R29: with a live owner that has not decided the post (its event loop is not
    running) the timeout says the agent is served; ``store.has_owner`` follows the owner."""
    store, spec = backend
    agent = agent_name()
    assert not store.has_owner(agent)
    owner = LoopAgent(ScriptedHost(), log=store.log(agent))  # owns the log, no loop runs
    try:
        assert store.has_owner(agent)
        code, _, err = _cli(
            capsys, "post", spec, agent, "--queue", "x", "--wait", "--timeout", "0.2"
        )
        assert code == 1
        assert "nobody serves" not in err
        assert f"agent {agent!r} is served" in err
    finally:
        asyncio.run(owner.detach())
        owner.log.close()
    assert not store.has_owner(agent)


def test_r35_post_receipt_shows_an_outcome_again(
    backend: tuple[AnyStore, str], capsys: pytest.CaptureFixture[str]
) -> None:
    """R35 (issue 28 item 25): ``post --receipt N`` posts nothing and prints post N's outcome
    (``pending``, ``applied``, ``rejected: E: text``; exit 0 only for applied); with
    ``--wait`` it waits for it; an unknown N is UnknownReceipt (exit 1)."""
    store, spec = backend
    agent = agent_name()
    parked = store.post(agent, queue_of("parked"))
    guarded = store.post(agent, queue_of("guarded", expect_turn=5))
    assert _cli(capsys, "post", spec, agent, "--receipt", str(parked.post_id))[:2] == (
        1,
        "pending\n",
    )

    async def serve_then_ask() -> None:
        owner = LoopAgent(ScriptedHost(), log=store.log(agent))
        try:
            code, out, _ = await _cli_async(
                capsys, "post", spec, agent, "--receipt", str(parked.post_id), "--wait"
            )
            assert (code, out) == (0, "applied\n")
            code, out, _ = await _cli_async(
                capsys, "post", spec, agent, "--receipt", str(guarded.post_id)
            )
            assert code == 1
            assert out.startswith("rejected: TurnMismatch: ")
        finally:
            await owner.detach()
            owner.log.close()

    run_async(serve_then_ask)()
    code, out, err = _cli(capsys, "post", spec, agent, "--receipt", str(2**52))
    assert (code, out) == (1, "")
    assert err.startswith("inbox-core post: UnknownReceipt:")
    assert [p.post_id for p in store.pending(agent)] == []  # --receipt posted nothing


def test_r35_post_pending_lists_the_agent_s_posts_oldest_first(
    backend: tuple[AnyStore, str], capsys: pytest.CaptureFixture[str]
) -> None:
    """R35 (issue 28 item 25): ``post --pending`` lists the unconsumed posts (number and
    command as stored, one line each, a producer's control characters escaped) and says
    whether anyone serves the agent."""
    store, spec = backend
    agent = agent_name()
    first = store.post(agent, queue_of("one"))
    second = store.post(agent, queue_of("two"))
    execute(
        store,
        f"INSERT INTO {posts_table(store)} (agent_id, command) VALUES (%s, %s)",
        agent,
        "not json\n\x1b[31mred",
    )
    code, out, err = _cli(capsys, "post", spec, agent, "--pending")
    assert code == 0, err
    lines = out.splitlines()
    assert len(lines) == 3
    assert lines[0].startswith(f"{first.post_id} {{")
    assert '"one"' in lines[0]
    assert lines[1].startswith(f"{second.post_id} ")
    assert "\x1b" not in lines[2]
    assert lines[2].endswith("not json\\u000a\\u001b[31mred")
    assert f"3 pending post(s) for agent {agent!r} (nobody serves it)" in err
    assert [p.post_id for p in store.pending(agent, limit=2)] == [first.post_id, second.post_id]


@pytest.mark.parametrize(
    "argv",
    [
        ["--receipt", "0"],
        ["--receipt", "x"],
        ["--receipt", str(2**53)],
        ["--receipt", "1", "--queue", "x"],
        ["--receipt", "1", "--key", "k"],
        ["--pending", "--wait"],
        ["--pending", "--cancel"],
        ["--pending", "--expect", "idle"],
    ],
)
def test_post_receipt_and_pending_usage_errors_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    path = tmp_path / "a.db"
    code, _, err = _cli(capsys, "post", f"sqlite:{path}", "alice", *argv)
    assert code == 2
    assert err
    assert not path.exists()


def queue_of(text: str, *, expect_turn: int | None = None) -> Any:
    from inbox_core import ExpectTurn, queue

    return queue(_message(text), expect=None if expect_turn is None else ExpectTurn(expect_turn))
