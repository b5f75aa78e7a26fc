"""Host hook failures and bad return values become reports (R16, R18, D7, D15, D21)."""

from __future__ import annotations

import asyncio
import logging

import pytest

from inbox_core import Completed, Enter, MaxTokens
from inbox_core.shell import LoopAgent
from inbox_core.shell.host import closing

from .support import (
    ScriptedHost,
    capture_loop_errors,
    check_invariants,
    log_types,
    msg,
    run_async,
    steps_of,
    turn_ends,
)


def error_reason(message: str, code: str) -> dict[str, object]:
    return {"kind": "error", "error": {"message": message, "code": code}}


@run_async
async def test_R18_pre_step_exception_ends_the_turn_error_with_no_step() -> None:
    """SH4, R18: PreStepFailed(message, class name); no step events; the claim stays removed."""
    host = ScriptedHost()
    agent = LoopAgent(host)
    agent.followup(msg("f1"))
    (await host.next("pre_step")).fail(ValueError("bad decision"))
    await agent.when_idle()
    assert turn_ends(agent) == [(1, error_reason("bad decision", "ValueError"))]
    assert steps_of(agent) == []
    assert agent.inbox.next_turn == ()
    check_invariants(agent)


@run_async
async def test_R18_run_step_exception_closes_step_then_turn_error() -> None:
    """SH4, R16, R18: Failed(message, class name): step/end always closes the opened step."""
    host = ScriptedHost()
    agent = LoopAgent(host)
    agent.followup(msg("f1"))
    (await host.next("pre_step")).enter()
    (await host.next("run_step")).fail(RuntimeError("model down"))
    await agent.when_idle()
    assert log_types(agent)[-2:] == ["step/end", "turn/end"]
    assert turn_ends(agent) == [(1, error_reason("model down", "RuntimeError"))]
    check_invariants(agent)


@run_async
async def test_turn_stopping_exception_is_reported_and_the_turn_ends_normally() -> None:
    """SH4, R17: a turn_stopping error goes to the loop's exception handler; the turn completes."""
    errors = capture_loop_errors()
    host = ScriptedHost()
    agent = LoopAgent(host)
    agent.followup(msg("f1"))
    agent.followup(msg("f2"))
    (await host.next("pre_step")).enter()
    (await host.next("run_step")).answer(MaxTokens())
    (await host.next("turn_stopping")).fail(KeyError("listener"))
    assert await host.complete_turn() == ["f2"]  # the driver goes on (R19)
    await agent.when_idle()
    assert turn_ends(agent) == [(1, {"kind": "max-tokens"}), (2, {"kind": "completed"})]
    assert len(errors) == 1
    assert isinstance(errors[0]["exception"], KeyError)
    assert errors[0]["turn"] == 1
    assert errors[0]["agent"] is agent
    check_invariants(agent)


@run_async
async def test_D21_failed_step_ends_turn_error_and_pending_steer_opens_the_next() -> None:
    """D21, R19: a failing step ends the turn even with a steer pending; the steer gets turn 2."""
    host = ScriptedHost()
    agent = LoopAgent(host)
    agent.followup(msg("f1"))
    (await host.next("pre_step")).enter()
    step = await host.next("run_step")
    agent.steer(msg("s"))
    step.fail(OSError("io"))
    assert await host.complete_turn() == ["s"]
    await agent.when_idle()
    assert turn_ends(agent) == [(1, error_reason("io", "OSError")), (2, {"kind": "completed"})]
    check_invariants(agent)


class _Unusual(BaseException):
    """Neither an Exception nor SystemExit/KeyboardInterrupt."""


class _Unshowable:
    """A return value whose repr (which a rejection's message shows) raises ``raised``."""

    def __init__(self, raised: BaseException) -> None:
        self.raised = raised

    def __repr__(self) -> str:
        raise self.raised


@pytest.mark.parametrize(
    ("hook", "value", "code"),
    [
        ("pre_step", "not a decision", "InvalidInput"),
        ("pre_step", None, "InvalidInput"),
        ("run_step", None, "InvalidInput"),
        ("run_step", Enter(()), "InvalidInput"),
        # R33: the driver died (and was restarted, asking the hook again, for ever)
        ("run_step", _Unshowable(_Unusual("repr")), "_Unusual"),
        ("pre_step", _Unshowable(GeneratorExit("repr")), "GeneratorExit"),
    ],
)
@run_async
async def test_R26_bad_hook_return_values_are_reported_as_failures(
    hook: str, value: object, code: str
) -> None:
    """R26, R11: a value that does not make a valid report is a failure with its error's class."""
    host = ScriptedHost()
    agent = LoopAgent(host)
    agent.followup(msg("f1"))
    pre = await host.next("pre_step")
    if hook == "pre_step":
        pre.answer(value)
    else:
        pre.enter()
        (await host.next("run_step")).answer(value)
    await agent.when_idle()
    [(_, reason)] = turn_ends(agent)
    assert reason["kind"] == "error"
    assert reason["error"]["code"] == code
    assert steps_of(agent) == ([] if hook == "pre_step" else [(1, 1)])
    check_invariants(agent)


@run_async
async def test_D7_duplicate_ids_in_the_entering_batch_fail_the_pre_step() -> None:
    """SH4, D7: Enter with the same MessageId twice is rejected by the core -> PreStepFailed."""
    host = ScriptedHost()
    agent = LoopAgent(host)
    m = msg("twice")
    agent.followup(m)
    (await host.next("pre_step")).answer(Enter((m, m)))
    await agent.when_idle()
    [(_, reason)] = turn_ends(agent)
    assert reason["error"]["code"] == "DuplicateMessageId"
    assert steps_of(agent) == []
    check_invariants(agent)


@run_async
async def test_host_cancelled_error_and_empty_messages_use_the_class_name() -> None:
    """SH4: a hook raising CancelledError (the driver itself not cancelled) is a failure too."""
    host = ScriptedHost()
    agent = LoopAgent(host)
    agent.followup(msg("f1"))
    (await host.next("pre_step")).enter()
    (await host.next("run_step")).fail(asyncio.CancelledError())
    agent.followup(msg("f2"))
    (await host.next("pre_step")).fail(LookupError())
    await agent.when_idle()
    assert turn_ends(agent) == [
        (1, error_reason("CancelledError", "CancelledError")),
        (2, error_reason("LookupError", "LookupError")),
    ]
    check_invariants(agent)


@run_async
async def test_R33_R37_a_hook_raising_generator_exit_ends_its_turn_error() -> None:
    """R33, R37 v4: a ``GeneratorExit`` a hook raises while the driver runs it is the hook's
    failure like any other (before, the driver let it through as if its coroutine were being
    closed: the driver task died, the turn stayed open and the agent ran forever)."""
    host = ScriptedHost()
    agent = LoopAgent(host)
    agent.followup(msg("f1"))
    (await host.next("pre_step")).fail(GeneratorExit("pre"))
    agent.followup(msg("f2"))
    (await host.next("pre_step")).enter()
    (await host.next("run_step")).fail(GeneratorExit())
    await asyncio.wait_for(agent.when_idle(), 10)
    assert turn_ends(agent) == [
        (1, error_reason("pre", "GeneratorExit")),
        (2, error_reason("GeneratorExit", "GeneratorExit")),
    ]
    check_invariants(agent)


def test_R37_closing_tells_a_closed_coroutine_from_a_raised_generator_exit() -> None:
    """The one ``GeneratorExit`` to let through is a coroutine being closed: thrown in while
    its task does not run (or with no loop at all)."""
    assert closing(GeneratorExit(), None) is True  # no running loop
    assert closing(ValueError(), None) is False

    async def main() -> None:
        me = asyncio.current_task()
        assert closing(GeneratorExit(), me) is False  # raised while this task runs
        other = asyncio.ensure_future(asyncio.sleep(0))
        assert closing(GeneratorExit(), other) is True
        await other

    asyncio.run(main())


@run_async
async def test_D15_host_failure_on_an_aborted_turn_closes_it_aborted() -> None:
    """D15, D6: after a cancel, a failing hook still closes the turn aborted, not error."""
    host = ScriptedHost()
    agent = LoopAgent(host)
    agent.followup(msg("f1"))
    pre = await host.next("pre_step")
    agent.cancel(keep_inbox=True)
    pre.fail(RuntimeError("while aborting"))
    await agent.when_idle()
    assert turn_ends(agent) == [(1, {"kind": "aborted", "reason": {"kind": "user"}})]
    check_invariants(agent)


class SyncHost:
    """A broken host: ``run_step`` is not a coroutine function."""

    async def pre_step(
        self, turn: int, step: int, messages: tuple[object, ...], signal: object
    ) -> Enter:
        return Enter(messages)

    def run_step(self, turn: int, step: int, signal: object) -> Completed:
        return Completed()

    async def turn_stopping(self, turn: int, signal: object) -> None:
        return None


@run_async
async def test_non_awaitable_hook_is_a_host_error(caplog: pytest.LogCaptureFixture) -> None:
    """SH4: a hook that cannot be awaited fails the step (TypeError), logged with traceback."""
    agent = LoopAgent(SyncHost())  # type: ignore[arg-type]
    with caplog.at_level(logging.WARNING, logger="inbox_core.shell"):
        agent.followup(msg("f1"))
        await agent.when_idle()
    [(_, reason)] = turn_ends(agent)
    assert reason["error"]["code"] == "TypeError"
    assert any(r.exc_info for r in caplog.records if r.name == "inbox_core.shell")
    check_invariants(agent)
