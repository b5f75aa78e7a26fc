"""Hypothesis strategies for inbox_core's values, inputs, commands, host reports and records."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from hypothesis import strategies as st

from inbox_core.commands import (
    BeginMaintenance,
    Cancel,
    Clear,
    Command,
    Completed,
    Continue,
    Decision,
    Dispose,
    EndMaintenance,
    Enter,
    Expectation,
    ExpectIdle,
    ExpectTurn,
    Failed,
    MaxTokens,
    Move,
    PreStepDecided,
    PreStepFailed,
    Reject,
    Remove,
    Replace,
    Report,
    Resume,
    Send,
    Splice,
    StepFinished,
    StepOutcome,
    TurnStoppingDone,
)
from inbox_core.events import HostRecord
from inbox_core.values import (
    PLUGIN_FORMS,
    AgentSource,
    Entry,
    ExtensionSource,
    GoalSource,
    HookCause,
    InjectInput,
    MessageId,
    NextTurnInput,
    ParentCause,
    PluginSource,
    ResolvedAgentInput,
    SnapshotSection,
    Source,
    SteerInput,
    Target,
    ToolSource,
    UserCause,
    UserMessage,
    UserSource,
)

TARGET_NAMES: Final[tuple[Target, Target]] = ("next-turn", "next-step")


DEFAULT_ID_POOL: Final[tuple[MessageId, ...]] = tuple(f"m{i}" for i in range(10))
"""The MessageIds the strategies draw from: small, so duplicates (R4) happen."""

_WORDS: Final = st.sampled_from(["", "a", "go", "hi", "ok?"])
_ODD_WORDS: Final = st.sampled_from(["é", "a\u2028b", "c\u2029", "\x85", "😀", "n\x00l", "\r\n"])
"""Storable text that naive line readers and encoders mishandle (issue 17; ``hostile``)."""
_TEXTS: Final = st.one_of(_WORDS, _ODD_WORDS)
_JSON_SCALARS: Final = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 3),
    st.sampled_from([2**63 - 1, -(2**63)]),
    st.floats(-2, 2, allow_nan=False),
    _TEXTS,
)


def _json_objects() -> st.SearchStrategy[dict[str, object]]:
    return st.dictionaries(
        st.sampled_from(["a", "b", "note"]),
        st.one_of(_JSON_SCALARS, st.lists(_JSON_SCALARS, max_size=2)),
        max_size=2,
    )


_AGENT_IDS: Final = st.sampled_from(["planner", "worker-1", "..", "a/b", "é😀", "x" * 256])
"""Agent ids at the edges of ``limits.agent_id``: dot segments, a slash, non-ASCII, the
longest."""


def message_ids(pool: Sequence[MessageId] = DEFAULT_ID_POOL) -> st.SearchStrategy[MessageId]:
    """MessageIds from a small pool, so that duplicates are common."""
    return st.sampled_from(tuple(pool))


def _plugin_sources() -> st.SearchStrategy[PluginSource]:
    names = st.sampled_from(["memory", "clock"])
    plain = st.builds(
        PluginSource,
        names,
        st.sampled_from([None, *(f for f in PLUGIN_FORMS if f not in ("snapshot", "notice"))]),
    )
    sections = st.lists(st.builds(SnapshotSection, _WORDS, _WORDS), max_size=2).map(tuple)
    snapshot = st.builds(PluginSource, names, st.just("snapshot"), sections)
    summaries = st.one_of(_WORDS, st.just("x" * 120))
    notice = st.builds(
        lambda plugin, summary: PluginSource(plugin, "notice", summary=summary), names, summaries
    )
    return st.one_of(plain, snapshot, notice)


def sources() -> st.SearchStrategy[Source]:
    """Every source variant of R2, including host-defined extension kinds, goal round 0 and
    (v5) agent sources."""
    return st.one_of(
        st.just(UserSource()),
        _plugin_sources(),
        st.builds(GoalSource, st.sampled_from(["g1", "g2"]), st.integers(0, 3)),  # R2 v2: round 0
        st.builds(ToolSource, st.sampled_from(["call-1", "call-2"])),
        st.builds(AgentSource, _AGENT_IDS, st.one_of(st.integers(1, 3), st.just(2**53 - 1))),
        st.builds(ExtensionSource, st.sampled_from(["x-host", "memo"]), _json_objects()),
    )


def _contents() -> st.SearchStrategy[str | list[dict[str, object]]]:
    blocks = st.one_of(
        st.builds(lambda text: {"type": "text", "text": text}, _TEXTS),
        st.builds(lambda data: {"type": "image", "data": data}, _json_objects()),
    )
    return st.one_of(_TEXTS, st.lists(blocks, max_size=2))


def messages(
    ids: st.SearchStrategy[MessageId] | None = None,
) -> st.SearchStrategy[UserMessage]:
    """User messages with ids from ``ids`` (default: the small pool) and any source."""
    return st.builds(
        UserMessage,
        message_ids() if ids is None else ids,
        _contents(),
        sources(),
        st.one_of(st.none(), _json_objects()),
    )


def _contexts(
    ids: st.SearchStrategy[MessageId] | None, max_size: int
) -> st.SearchStrategy[tuple[UserMessage, ...]]:
    return st.lists(messages(ids), max_size=max_size).map(tuple)


def entries(
    ids: st.SearchStrategy[MessageId] | None = None, *, max_contexts: int = 2
) -> st.SearchStrategy[Entry]:
    """Pending entries (R3): a message, 0..max_contexts contexts, either wakeup."""
    return st.builds(Entry, messages(ids), _contexts(ids, max_contexts), st.booleans())


def resolved_inputs(
    ids: st.SearchStrategy[MessageId] | None = None, *, max_contexts: int = 2
) -> st.SearchStrategy[ResolvedAgentInput]:
    """All three input classes of R11 (so all four intents of R12)."""
    return st.one_of(
        st.builds(
            NextTurnInput,
            messages(ids),
            _contexts(ids, max_contexts),
            st.just("next-turn"),
            st.booleans(),
        ),
        st.builds(
            SteerInput,
            messages(ids),
            _contexts(ids, max_contexts),
            st.just("next-step"),
            st.just(True),
        ),
        st.builds(InjectInput, messages(ids), st.just(()), st.just("next-step"), st.just(False)),
    )


def causes() -> st.SearchStrategy[UserCause | ParentCause | HookCause]:
    """The causes a caller may give ``Cancel`` (``DisposedCause`` is Dispose's own)."""
    return st.one_of(st.just(UserCause()), st.just(ParentCause()), st.builds(HookCause, _WORDS))


def decisions(ids: st.SearchStrategy[MessageId] | None = None) -> st.SearchStrategy[Decision]:
    """Pre-step decisions: Reject, or Enter with any batch (duplicates included)."""
    return st.one_of(
        st.just(Reject()), st.builds(Enter, st.lists(messages(ids), max_size=3).map(tuple))
    )


def outcomes() -> st.SearchStrategy[StepOutcome]:
    """Every step outcome of R16."""
    return st.one_of(
        st.just(Continue()),
        st.just(Completed()),
        st.just(MaxTokens()),
        st.builds(Failed, _WORDS, st.sampled_from(["E1", "rate-limit"])),
    )


def expectations(*, max_turn: int = 4) -> st.SearchStrategy[Expectation | None]:
    """A guarded command's ``expect`` (R34): mostly None, else idle or a turn number."""
    return st.one_of(
        st.none(),
        st.none(),
        st.just(ExpectIdle()),
        st.builds(ExpectTurn, st.integers(1, max_turn)),
    )


def caller_commands(ids: st.SearchStrategy[MessageId] | None = None) -> st.SearchStrategy[Command]:
    """Every caller command: sends, edits, cancels (guarded or not, R34), dispose, Resume
    and BeginMaintenance."""
    pool = message_ids() if ids is None else ids
    targets = st.sampled_from(TARGET_NAMES)
    return st.one_of(
        st.builds(Send, resolved_inputs(ids), expectations()),
        st.builds(
            Splice,
            targets,
            st.integers(-4, 5),
            st.integers(-1, 4),
            st.lists(entries(ids), max_size=2).map(tuple),
        ),
        st.just(Clear()),
        st.builds(Replace, pool, messages(ids)),
        st.builds(Remove, pool),
        st.builds(Move, pool, targets, expectations()),
        st.builds(Cancel, causes(), st.booleans(), expectations()),
        st.just(Dispose()),
        st.just(Resume()),
        st.just(BeginMaintenance()),
    )


_RECORD_NAMES: Final = st.sampled_from(["host/reply", "host/tool", "host/compaction", "host/x"])


def host_records(*, max_size: int = 2) -> st.SearchStrategy[tuple[HostRecord, ...]]:
    """Host records (R30): ``host/<name>`` events with any JSON data, mostly none at all."""
    record = st.builds(
        HostRecord,
        _RECORD_NAMES,
        st.one_of(_JSON_SCALARS, _json_objects(), st.lists(_JSON_SCALARS, max_size=2)),
    )
    return st.one_of(st.just(()), st.lists(record, min_size=1, max_size=max_size).map(tuple))


def host_reports(*, max_turn: int = 4, max_step: int = 3) -> st.SearchStrategy[Report]:
    """Host reports with arbitrary turn/step numbers and records: mostly stale or wrong-phase
    (``EndMaintenance`` included: stale unless a maintenance job runs)."""
    turns = st.integers(1, max_turn)
    steps = st.integers(1, max_step)
    records = host_records()
    return st.one_of(
        st.builds(PreStepDecided, turns, steps, decisions(), records),
        st.builds(PreStepFailed, turns, steps, _WORDS, _WORDS, records),
        st.builds(StepFinished, turns, steps, outcomes(), records),
        st.builds(TurnStoppingDone, turns, records),
        st.builds(EndMaintenance, records),
    )


def commands(ids: st.SearchStrategy[MessageId] | None = None) -> st.SearchStrategy[Command]:
    """Any command at all: caller commands and host reports."""
    return st.one_of(caller_commands(ids), host_reports())
