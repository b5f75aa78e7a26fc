"""Random runs against a port: Hypothesis draws them, ``compare_run`` judges them (R38).

A run is drawn step by step while a reference agent plays it, so a host answer
can answer what the reference awaits (the batch of a pre-step, the step, the
turn-stopping listeners, a maintenance job) rather than being stale by chance;
caller commands come from ``inbox_core.testing.strategies`` (every intent, with
contexts and expectations, edits, cancels both ways, dispose, Resume,
maintenance), host reports with records, and for a ``core`` port crashes
(reload from the log, then Resume). An ``inbox``-only port gets only the steps
it declared (``conformance.is_inbox_step``).

On a divergence Hypothesis shrinks the run; the last failing run it plays is
the shrunk one, which ``search`` returns with its divergence. Nothing here
stores examples between runs: a search is a pure function of port and seed.
"""

from __future__ import annotations

import contextlib
import importlib
from collections.abc import Callable, Iterator
from typing import Any, Final

import attrs
import hypothesis
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from inbox_core.codec import command_to_json
from inbox_core.commands import (
    BeginMaintenance,
    Cancel,
    Clear,
    Dispose,
    EndMaintenance,
    Enter,
    Move,
    Remove,
    Replace,
    Resume,
    Send,
    Splice,
)
from inbox_core.port.client import PortFailure, PortProcess
from inbox_core.port.conformance import CRASH, Divergence, ReferenceRun, compare_run, is_inbox_step
from inbox_core.state import AwaitPreStep, AwaitStep, AwaitTurnStopping
from inbox_core.testing import strategies

Json = Any


class _PortBroke(BaseException):
    """Stops the search at once: a broken port is no divergence to shrink (exit 2)."""


class _Diverged(Exception):
    """A run on which the port differs: what Hypothesis shrinks."""


@attrs.frozen
class SearchResult:
    """How a search ended: ``runs`` played; the shrunk failing ``steps`` and their
    ``divergence`` if the port differed (both None when it agreed throughout)."""

    runs: int
    steps: list[Json] | None = None
    divergence: Divergence | None = None


def _host_answer(data: st.DataObject, reference: ReferenceRun) -> Json:
    """A host report: the answer to what the reference awaits, else a stale report."""
    state, records = reference.state, data.draw(strategies.host_records(), label="records")
    awaiting = state.awaiting
    if isinstance(awaiting, AwaitPreStep):
        if data.draw(st.integers(0, 7), label="fail the pre-step") == 0:
            report: Any = awaiting.fail("pre-step failed", "E1", records)
        else:
            decision = data.draw(
                st.one_of(st.just(Enter(awaiting.batch)), strategies.decisions()), label="decision"
            )
            report = awaiting.answer(decision, records)
    elif isinstance(awaiting, AwaitStep):
        report = awaiting.answer(data.draw(strategies.outcomes(), label="outcome"), records)
    elif isinstance(awaiting, AwaitTurnStopping):
        report = awaiting.answer(records)
    elif state.status == "maintenance":
        report = EndMaintenance(records)
    else:
        report = data.draw(strategies.host_reports(), label="stale report")
    return command_to_json(report)


_IDS: Final = strategies.message_ids(tuple(f"m{i}" for i in range(24)))
"""Ids for new messages: a pool large enough that most sends are accepted, small enough
that duplicates (R4) still happen."""
_TARGETS: Final = st.sampled_from(strategies.TARGET_NAMES)
_BY_ID: Final = frozenset({"remove", "replace", "move"})

_CALLER: Final[dict[str, st.SearchStrategy[Any]]] = {
    "send": st.builds(Send, strategies.resolved_inputs(_IDS), strategies.expectations()),
    "splice": st.builds(
        Splice,
        _TARGETS,
        st.integers(-4, 5),
        st.integers(-1, 4),
        st.lists(strategies.entries(_IDS), max_size=2).map(tuple),
    ),
    "clear": st.just(Clear()),
    "replace": st.builds(Replace, _IDS, strategies.messages(_IDS)),
    "remove": st.builds(Remove, _IDS),
    "move": st.builds(Move, _IDS, _TARGETS, strategies.expectations()),
    "cancel": st.builds(Cancel, strategies.causes(), st.booleans(), strategies.expectations()),
    "dispose": st.just(Dispose()),
    "resume": st.just(Resume()),
    "maintenance": st.just(BeginMaintenance()),
}
"""Every caller command of ``strategies.caller_commands``, one strategy per kind so that a
run can weigh them (``_CALLER_MIX``)."""

_CALLER_MIX: Final = st.sampled_from(
    ["send"] * 8
    + ["splice", "splice", "clear", "replace", "remove", "remove"]
    + ["move", "move", "cancel", "cancel", "cancel", "dispose", "resume", "maintenance"]
)
"""Sends most, so lists fill and turns open; dispose (final) and maintenance seldom."""

_INBOX_CALLER: Final = (
    st.one_of(
        _CALLER["send"], _CALLER["splice"], _CALLER["clear"], _CALLER["replace"], _CALLER["remove"]
    )
    .map(command_to_json)
    .filter(is_inbox_step)
)


def _caller_command(data: st.DataObject, reference: ReferenceRun, core: bool) -> Json:
    """A caller command; an edit by id mostly names a message that is pending."""
    if core:
        kind = data.draw(_CALLER_MIX, label="command kind")
        step: Json = command_to_json(data.draw(_CALLER[kind], label=kind))
    else:
        step = data.draw(_INBOX_CALLER, label="inbox command")
    pending = sorted(reference.state.inbox.message_ids())
    if step["type"] in _BY_ID and pending and data.draw(st.booleans(), label="a pending id"):
        step["messageId"] = data.draw(st.sampled_from(pending), label="pending id")
    return step


_AWAITED_KINDS: Final = st.sampled_from(["host"] * 5 + ["caller"] * 4 + ["crash"])
_IDLE_KINDS: Final = st.sampled_from(["caller"] * 8 + ["host", "crash"])
"""A host mostly answers what the core awaits; a stale report (or one while idle) is rarer."""


def draw_run(data: st.DataObject, parts: tuple[str, ...], max_steps: int) -> list[Json]:
    """One run for a port with ``parts``, at most ``max_steps`` long."""
    core = "core" in parts
    reference, steps = ReferenceRun(), []
    for _ in range(data.draw(st.integers(0, max_steps), label="length")):
        state = reference.state
        busy = state.awaiting is not None or state.status == "maintenance"
        kind = data.draw(_AWAITED_KINDS if busy else _IDLE_KINDS) if core else "caller"
        if kind == "crash":
            steps.append(CRASH)
            reference = ReferenceRun(reference.log)
            step: Json = {"type": "resume"}
        elif kind == "host":
            step = _host_answer(data, reference)
            steps.append(step)
        else:
            step = _caller_command(data, reference, core)
            steps.append(step)
        reference.apply(step)
    return steps


@contextlib.contextmanager
def _no_local_constants() -> Iterator[None]:
    """Hypothesis (6.131 and later) mixes literals of the "local" modules it finds imported
    (anything outside site-packages and the stdlib: inbox_core itself when installed
    editable) into what it draws. Runs would then depend on how inbox_core is installed and
    on its own source text, not on the seed alone; they are drawn without them."""
    try:
        providers: Any = importlib.import_module("hypothesis.internal.conjecture.providers")
        original = providers._get_local_constants
        empty = type(providers._local_constants)()
    except (ImportError, AttributeError):  # another Hypothesis: nothing to switch off
        yield
        return
    providers._get_local_constants = lambda: empty
    providers.CONSTANTS_CACHE.cache.clear()
    try:
        yield
    finally:
        providers._get_local_constants = original
        providers.CONSTANTS_CACHE.cache.clear()


def search(
    port: PortProcess,
    *,
    examples: int,
    seed: int,
    max_steps: int,
    progress: Callable[[int], None] = lambda runs: None,
) -> SearchResult:
    """Play ``examples`` random runs on ``port`` (deterministic in ``seed``); the shrunk
    first divergence, if any. ``PortFailure`` if the port breaks the protocol."""
    runs = 0
    failing: list[tuple[list[Json], Divergence]] = []
    broke: list[PortFailure] = []

    @hypothesis.seed(seed)
    @settings(
        max_examples=examples,
        database=None,
        deadline=None,
        phases=(Phase.generate, Phase.shrink),
        suppress_health_check=list(HealthCheck),
        report_multiple_bugs=False,
    )
    @given(st.data())
    def play(data: st.DataObject) -> None:
        nonlocal runs
        steps = draw_run(data, port.parts, max_steps)
        runs += 1
        progress(runs)
        try:
            divergence = compare_run(port, steps)
        except PortFailure as error:
            broke.append(error)
            raise _PortBroke from None
        if divergence is not None:
            failing.append((steps, divergence))
            raise _Diverged(divergence.describe(steps))

    try:
        with _no_local_constants():
            play()
    except _PortBroke:
        raise broke[-1] from None
    except _Diverged:
        steps, divergence = minimize(port, *failing[-1])
        return SearchResult(runs, steps, divergence)
    return SearchResult(runs)


def minimize(
    port: PortProcess, steps: list[Json], divergence: Divergence
) -> tuple[list[Json], Divergence]:
    """Shorten a diverging run after Hypothesis shrank it, deterministically: cut it after
    the diverging step, then drop one step at a time (the last first) while the run still
    diverges, until no single step can go. How far Hypothesis shrinks a run whose steps
    depend on each other varies with its version; this leaves a run in which every step
    is needed (a step whose removal breaks the port's protocol is kept)."""
    if divergence.step is not None:
        steps = steps[: divergence.step + 1]
    shortened = True
    while shortened:
        shortened = False
        for index in reversed(range(len(steps))):
            candidate = steps[:index] + steps[index + 1 :]
            if not candidate:
                continue
            try:
                found = compare_run(port, candidate)
            except PortFailure:
                continue
            if found is not None:
                cut = len(candidate) if found.step is None else found.step + 1
                steps, divergence, shortened = candidate[:cut], found, True
                break
    return steps, divergence
