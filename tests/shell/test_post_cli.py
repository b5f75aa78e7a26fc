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

from .posts_support import AnyStore, agent_name, pg_url
from .support import ScriptedHost, run_async, text_of


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
