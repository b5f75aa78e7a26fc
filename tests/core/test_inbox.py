"""The persistent two-list inbox as a pure value (R3, R4, R5, R9).

Hypothesis checks the pure helpers (normalize_splice, keys_between) and the
chunked inbox against a plain Python list model, across chunk boundaries.
"""

from __future__ import annotations

import itertools

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from inbox_core import DuplicateMessageId, Entry
from inbox_core.inbox import EMPTY_INBOX, Inbox, batch_of, normalize_splice
from inbox_core.sequence import CHUNK, keys_between
from tests.core.helpers import msg

FAST = settings(
    max_examples=60, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow]
)


def entry(mid: str, *contexts: str, wakeup: bool = False) -> Entry:
    return Entry(msg(mid), tuple(msg(c) for c in contexts), wakeup)


# --------------------------------------------------------------- normalize


@pytest.mark.parametrize(
    ("length", "start", "delete", "expected"),
    [
        (5, 1, 2, (1, 2)),
        (5, -1, 1, (4, 1)),
        (5, -2, 10, (3, 2)),
        (5, -10, 1, (0, 1)),
        (5, 7, 3, (5, 0)),
        (5, 2, -4, (2, 0)),
        (5, 5, 1, (5, 0)),
        (0, 0, 3, (0, 0)),
        (0, -3, 3, (0, 0)),
        (3, 0, 3, (0, 3)),
    ],
)
def test_r5_normalize_splice_examples(length, start, delete, expected):
    """R5: negative start counts from the end; start and delete count are clamped."""
    assert normalize_splice(length, start, delete) == expected


@FAST
@given(st.integers(0, 40), st.integers(-60, 60), st.integers(-60, 60))
def test_r5_normalize_splice_matches_python_slices(length, start, delete):
    """R5: the normalized splice removes exactly what a list splice would."""
    model = list(range(length))
    first, count = normalize_splice(length, start, delete)
    expected_first = slice(start, None).indices(length)[0]
    assert first == expected_first
    assert model[first : first + count] == model[expected_first : expected_first + max(delete, 0)]
    assert 0 <= first <= length
    assert 0 <= count <= length - first


keys = st.lists(st.integers(-5, 5), min_size=1, max_size=4).map(tuple)


@FAST
@given(st.one_of(st.none(), keys), st.one_of(st.none(), keys), st.integers(0, 12))
def test_r5_keys_between_are_strictly_increasing_and_inside_bounds(low, high, count):
    """R5: keys_between always finds fresh ordered keys between two neighbours."""
    if low is not None and high is not None:
        if low == high:
            return
        low, high = min(low, high), max(low, high)
    got = keys_between(low, high, count)
    assert len(got) == count
    assert all(a < b for a, b in itertools.pairwise(got))
    assert all(len(k) > 0 for k in got)
    if low is not None:
        assert all(low < k for k in got)
    if high is not None:
        assert all(k < high for k in got)


# -------------------------------------------------------- inbox vs a model

operation = st.one_of(
    st.tuples(
        st.just("splice"),
        st.sampled_from(["next-turn", "next-step"]),
        st.integers(-80, 160),
        st.integers(-3, 70),
        st.integers(0, 70),
        st.booleans(),
    ),
    st.tuples(st.just("claim"), st.booleans()),
    st.tuples(st.just("found"), st.integers(0, 10_000), st.booleans()),
    # sends and claims: one-by-one appends fill whole chunks; head pops take a prefix
    st.tuples(
        st.just("appends"),
        st.sampled_from(["next-turn", "next-step"]),
        st.integers(1, 2 * CHUNK + 3),
        st.booleans(),
    ),
    st.tuples(
        st.just("pop"), st.sampled_from(["next-turn", "next-step"]), st.integers(1, CHUNK + 2)
    ),
)


@settings(
    max_examples=40, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow]
)
@given(st.lists(operation, min_size=1, max_size=20))
def test_r5_r9_inbox_edits_match_a_plain_list_model(ops):
    """R4, R5, R9: chunked splices, claims and in-place edits equal list operations."""
    inbox = EMPTY_INBOX
    model: dict[str, list[Entry]] = {"next-turn": [], "next-step": []}
    counter = 0

    def fresh(n: int, wakeup: bool) -> list[Entry]:
        nonlocal counter
        made = []
        for _ in range(n):
            counter += 1
            contexts = (f"c{counter}",) if counter % 5 == 0 else ()
            made.append(entry(f"m{counter}", *contexts, wakeup=wakeup and counter % 2 == 0))
        return made

    for op in ops:
        if op[0] == "splice":
            _, target, start, delete, count, wakeup = op
            new = fresh(count, wakeup)
            result = inbox.splice(target, start, delete, new)
            lst = model[target]
            first = slice(start, None).indices(len(lst))[0]
            removed = lst[first : first + max(delete, 0)]
            lst[first : first + max(delete, 0)] = new
            assert result.start == first
            assert result.removed == tuple(removed)
            inbox = result.inbox
        elif op[0] == "appends":
            _, target, count, wakeup = op
            for new in fresh(count, wakeup):
                result = inbox.splice(target, inbox.size(target), 0, [new])
                assert result.removed == ()
                assert result.start == len(model[target])
                model[target].append(new)
                inbox = result.inbox
        elif op[0] == "pop":
            _, target, count = op
            result = inbox.splice(target, 0, count, ())
            assert result.removed == tuple(model[target][:count])
            del model[target][:count]
            inbox = result.inbox
        elif op[0] == "claim":
            at_turn_start = op[1]
            result = inbox.claim(at_turn_start=at_turn_start)
            step_taken = model["next-step"][:]
            turn_taken = model["next-turn"][:1] if at_turn_start else []
            model["next-step"].clear()
            del model["next-turn"][: len(turn_taken)]
            assert result.next_step == tuple(step_taken)
            assert result.next_turn == tuple(turn_taken)
            assert result.batch == batch_of(step_taken + turn_taken)
            inbox = result.inbox
        else:
            _, pick, replace = op
            everything = [(t, e) for t in ("next-turn", "next-step") for e in model[t]]
            if not everything:
                continue
            target, picked = everything[pick % len(everything)]
            found = inbox.find(picked.message.id)
            assert found is not None
            assert (found.target, found.entry) == (target, picked)
            position = model[target].index(picked)
            assert found.position == position
            new = fresh(1, True) if replace else []
            result = inbox.splice_found(found, new)
            model[target][position : position + 1] = new
            assert result.removed == (picked,)
            inbox = result.inbox

        assert inbox.next_turn == tuple(model["next-turn"])
        assert inbox.next_step == tuple(model["next-step"])
        assert inbox.size("next-turn") == len(model["next-turn"])
        assert inbox.size("next-step") == len(model["next-step"])
        all_entries = model["next-turn"] + model["next-step"]
        assert inbox.has_waking == any(e.wakeup for e in all_entries)
        assert inbox.has_waking_step == any(e.wakeup for e in model["next-step"])
        assert inbox.is_empty == (not all_entries)
        ids = {m.id for e in all_entries for m in e.messages}
        assert set(inbox.message_ids()) == ids
        for target in ("next-turn", "next-step"):
            for position, e in enumerate(model[target]):
                found = inbox.find(e.message.id)
                assert found is not None
                assert (found.target, found.position, found.entry) == (target, position, e)
                for c in e.contexts:
                    assert c.id in inbox
                    assert inbox.find(c.id) is None


def test_r5_inbox_crosses_many_chunks_in_order():
    """R5: thousands of appends, prepends and middle inserts keep list order."""
    inbox = EMPTY_INBOX
    model: list[Entry] = []
    for i in range(5 * CHUNK):
        e = entry(f"m{i}")
        position = (i * 7) % (len(model) + 1)
        inbox = inbox.splice("next-turn", position, 0, [e]).inbox
        model.insert(position, e)
    assert inbox.next_turn == tuple(model)
    for position in (0, CHUNK - 1, CHUNK, 3 * CHUNK + 5, len(model) - 1):
        found = inbox.find(model[position].message.id)
        assert found is not None
        assert found.position == position


def test_r4_inbox_value_is_persistent():
    """R4, R5: an edit returns a new inbox and leaves the old one intact."""
    a = Inbox.of([entry("t1")], [entry("s1")])
    b = a.splice("next-turn", 0, 1, [entry("t2")]).inbox
    assert a.next_turn == (entry("t1"),)
    assert "t1" in a
    assert "t2" not in a
    assert b.next_turn == (entry("t2"),)
    assert "t1" not in b
    assert a != b
    assert a == Inbox.of([entry("t1")], [entry("s1")])


# ---------------------------------------------------------------------- R4


@pytest.mark.parametrize(
    ("existing_turn", "existing_step", "target", "new", "dup"),
    [
        pytest.param([], [], "next-turn", [entry("a"), entry("a")], "a", id="within-splice"),
        pytest.param([], [], "next-step", [entry("a", "a")], "a", id="context-equals-message"),
        pytest.param([], [], "next-step", [entry("a", "c", "c")], "c", id="two-equal-contexts"),
        pytest.param([entry("a")], [], "next-step", [entry("a")], "a", id="across-lists"),
        pytest.param([entry("a", "c")], [], "next-turn", [entry("c")], "c", id="vs-context"),
        pytest.param(
            [entry("a")], [], "next-step", [entry("b", "a")], "a", id="context-vs-pending"
        ),
        pytest.param(
            [],
            [entry("a")],
            "next-turn",
            [entry("x"), entry("y", "x")],
            "x",
            id="context-vs-sibling",
        ),
    ],
)
def test_r4_duplicate_message_id_raises_and_inbox_is_unchanged(
    existing_turn, existing_step, target, new, dup
):
    """R4, I1: a splice that would duplicate a pending id raises DuplicateMessageId."""
    inbox = Inbox.of(existing_turn, existing_step)
    before = (inbox.next_turn, inbox.next_step, set(inbox.message_ids()))
    with pytest.raises(DuplicateMessageId) as info:
        inbox.splice(target, 0, 0, new)
    assert info.value.message_id == dup
    assert (inbox.next_turn, inbox.next_step, set(inbox.message_ids())) == before


def test_r4_ids_freed_by_the_same_splice_may_be_reinserted():
    """R4: removing an entry and inserting one with the same id in one splice is fine."""
    inbox = Inbox.of([entry("a", "c"), entry("b")])
    result = inbox.splice("next-turn", 0, 1, [entry("c", "a")])
    assert result.inbox.next_turn == (entry("c", "a"), entry("b"))
    assert result.removed == (entry("a", "c"),)


# ---------------------------------------------------------------------- R9


def test_r9_claim_at_turn_boundary_takes_all_next_step_then_first_next_turn():
    """R9: all next-step entries, then the first next-turn entry; batch contexts first."""
    s1, s2 = entry("s1", "sc", wakeup=True), entry("s2")
    t1, t2 = entry("t1", "tc"), entry("t2", wakeup=True)
    inbox = Inbox.of([t1, t2], [s1, s2])
    result = inbox.claim(at_turn_start=True)
    assert result.next_step == (s1, s2)
    assert result.next_turn == (t1,)
    assert [m.id for m in result.batch] == ["sc", "s1", "s2", "tc", "t1"]
    assert result.inbox.next_step == ()
    assert result.inbox.next_turn == (t2,)
    assert "sc" not in result.inbox
    assert "t2" in result.inbox


def test_r9_claim_between_steps_takes_next_step_only():
    """R9: between steps only next-step entries are claimed."""
    inbox = Inbox.of([entry("t1", wakeup=True)], [entry("s1")])
    result = inbox.claim(at_turn_start=False)
    assert result.next_step == (entry("s1"),)
    assert result.next_turn == ()
    assert result.inbox.next_turn == (entry("t1", wakeup=True),)
    assert [m.id for m in result.batch] == ["s1"]


def test_r9_claim_of_empty_inbox_is_empty():
    """R9: a claim with nothing pending takes nothing."""
    result = EMPTY_INBOX.claim(at_turn_start=True)
    assert result.next_step == ()
    assert result.next_turn == ()
    assert result.batch == ()
    assert result.inbox == EMPTY_INBOX
