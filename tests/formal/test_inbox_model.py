"""The persistent ``Inbox`` against plain lists: big lists, chunk seams, deep keys (R4, R5, R9).

The reducer's tests keep the lists short; these drive one ``Inbox`` through
bulk appends past the chunk size, splices across chunk seams, head claims and
adversarial inserts at one position (which deepen the order keys until the
list is re-keyed), checking after every edit that both lists, the id index,
``find`` and the waking counts agree with a naive model.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Literal

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from inbox_core import DuplicateMessageId, Entry, UserMessage
from inbox_core.inbox import EMPTY_INBOX, Inbox
from inbox_core.sequence import CHUNK, EMPTY_SEQ, KEY_GAP, MAX_KEY_LENGTH, keys_between

Target = Literal["next-turn", "next-step"]
TARGETS: tuple[Target, Target] = ("next-turn", "next-step")


def entry(name: str, *, wakeup: bool = False, contexts: int = 0) -> Entry:
    return Entry(
        UserMessage(name, name),
        tuple(UserMessage(f"{name}.c{i}", "c") for i in range(contexts)),
        wakeup,
    )


def check(inbox: Inbox, model: dict[str, list[Entry]]) -> None:
    assert list(inbox.next_turn) == model["next-turn"]
    assert list(inbox.next_step) == model["next-step"]
    ids = [m.id for t in TARGETS for e in model[t] for m in e.messages]
    assert sorted(inbox.message_ids()) == sorted(ids)
    assert inbox.has_waking == any(e.wakeup for t in TARGETS for e in model[t])
    assert inbox.has_waking_step == any(e.wakeup for e in model["next-step"])
    assert inbox.is_empty == (not ids)
    for target in TARGETS:
        assert inbox.size(target) == len(model[target])
        assert inbox.entries(target) == tuple(model[target])
        for position, e in enumerate(model[target]):
            found = inbox.find(e.message.id)
            assert found is not None
            assert (found.target, found.position, found.entry) == (target, position, e)
            for context in e.contexts:
                assert context.id in inbox
                assert inbox.find(context.id) is None


class InboxModel(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.inbox = EMPTY_INBOX
        self.model: dict[str, list[Entry]] = {"next-turn": [], "next-step": []}
        self.minted = 0

    def fresh(self, count: int, wakeups: list[bool], contexts: int) -> list[Entry]:
        made = []
        for i in range(count):
            self.minted += 1
            made.append(
                entry(
                    f"e{self.minted}",
                    wakeup=wakeups[i % len(wakeups)] if wakeups else False,
                    contexts=contexts if i == 0 else 0,
                )
            )
        return made

    def splice(self, target: Target, start: int, delete_count: int, inserted: list[Entry]) -> None:
        lst = self.model[target]
        first = max(len(lst) + start, 0) if start < 0 else min(start, len(lst))
        count = min(max(delete_count, 0), len(lst) - first)
        result = self.inbox.splice(target, start, delete_count, inserted)
        assert (result.start, list(result.removed)) == (first, lst[first : first + count])
        lst[first : first + count] = inserted
        self.inbox = result.inbox

    @rule(
        which=st.sampled_from(TARGETS),
        count=st.integers(1, 2 * CHUNK),
        wakeups=st.lists(st.booleans(), max_size=3),
    )
    def bulk_append(self, which: Target, count: int, wakeups: list[bool]) -> None:
        self.splice(which, self.inbox.size(which), 0, self.fresh(count, wakeups, 1))

    @rule(
        which=st.sampled_from(TARGETS),
        start=st.integers(-3 * CHUNK, 3 * CHUNK),
        delete_count=st.integers(-1, 2 * CHUNK),
        inserted=st.integers(0, 3),
        wakeups=st.lists(st.booleans(), max_size=3),
    )
    def splice_anywhere(
        self, which: Target, start: int, delete_count: int, inserted: int, wakeups: list[bool]
    ) -> None:
        self.splice(which, start, delete_count, self.fresh(inserted, wakeups, 2))

    @rule(which=st.sampled_from(TARGETS), count=st.integers(1, CHUNK + 5))
    def remove_head(self, which: Target, count: int) -> None:
        self.splice(which, 0, count, [])

    @rule(
        which=st.sampled_from(TARGETS),
        position=st.integers(0, 3 * CHUNK),
        times=st.integers(1, 60),
    )
    def hammer_one_position(self, which: Target, position: int, times: int) -> None:
        """Insert again and again at one position: keys deepen until the list is re-keyed."""
        for _ in range(times):
            self.splice(which, min(position, self.inbox.size(which)), 0, self.fresh(1, [True], 0))

    @rule(
        which=st.sampled_from(TARGETS),
        times=st.integers(1, 2 * CHUNK + 3),
        wakeups=st.lists(st.booleans(), max_size=3),
    )
    def send_many(self, which: Target, times: int, wakeups: list[bool]) -> None:
        """One ``append`` per entry (the send path): the tail finger fills and joins the body."""
        for made in self.fresh(times, wakeups, 0):
            result = self.inbox.append(which, made)
            assert result.start == len(self.model[which])
            self.model[which].append(made)
            self.inbox = result.inbox

    @rule(times=st.integers(1, 2 * CHUNK + 3))
    def claim_many(self, times: int) -> None:
        """Turn-start claims one after another: the head finger empties and takes the next."""
        for _ in range(times):
            self.claim(True)

    @rule(at_turn_start=st.booleans())
    def claim(self, at_turn_start: bool) -> None:
        claimed = self.inbox.claim(at_turn_start=at_turn_start)
        step, turn = self.model["next-step"], self.model["next-turn"]
        taken_turn = turn[:1] if at_turn_start else []
        assert list(claimed.next_step) == step
        assert list(claimed.next_turn) == taken_turn
        assert list(claimed.batch) == [m for e in step + taken_turn for m in e.messages]
        self.model["next-step"] = []
        del turn[: len(taken_turn)]
        self.inbox = claimed.inbox

    @rule(which=st.sampled_from(TARGETS), pick=st.integers(0, 10**6))
    def replace_found(self, which: Target, pick: int) -> None:
        lst = self.model[which]
        if not lst:
            return
        old = lst[pick % len(lst)]
        found = self.inbox.find(old.message.id)
        assert found is not None
        new = Entry(UserMessage(old.message.id, "replaced"), old.contexts, not old.wakeup)
        result = self.inbox.splice_found(found, (new,))
        assert result.removed == (old,)
        assert result.start == found.position == pick % len(lst)
        lst[pick % len(lst)] = new
        self.inbox = result.inbox

    @rule(which=st.sampled_from(TARGETS), pick=st.integers(0, 10**6))
    def duplicate_is_rejected(self, which: Target, pick: int) -> None:
        ids = [m.id for t in TARGETS for e in self.model[t] for m in e.messages]
        if not ids:
            return
        before = self.inbox
        try:
            self.inbox.splice(which, 0, 0, [entry(ids[pick % len(ids)])])
        except DuplicateMessageId:
            pass
        else:
            raise AssertionError("a pending id was accepted twice")
        assert self.inbox is before

    @invariant()
    def agrees_with_the_model(self) -> None:
        check(self.inbox, self.model)
        for target in TARGETS:
            structure(self.inbox, target)


InboxModel.TestCase.settings = settings(
    max_examples=30,
    stateful_step_count=15,
    deadline=None,
    database=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
TestInboxModel = InboxModel.TestCase


def structure(inbox: Inbox, target: Target = "next-turn") -> list[tuple[int, ...]]:
    """The internal shape must hold: chunks not empty nor over CHUNK, keys strictly
    increasing and bounded."""
    seq = inbox._turn if target == "next-turn" else inbox._step
    assert all(0 < len(chunk) <= CHUNK for chunk in seq.items)
    assert [len(c) for c in seq.items] == [len(c) for c in seq.keys]
    keys = [k for chunk in seq.keys for k in chunk]
    assert all(a < b for a, b in itertools.pairwise(keys))
    assert all(len(k) <= MAX_KEY_LENGTH for k in keys)
    assert seq.length == len(keys)
    return keys


def layout(mode: str, size: int, waking: int) -> tuple[Inbox, list[str]]:
    """A next-turn list of ``size`` entries, cut into chunks in one of three ways."""
    names = [f"n{i}" for i in range(size)]
    made = [entry(n, wakeup=i == waking) for i, n in enumerate(names)]
    if mode == "bulk":  # one splice: near-equal chunks
        inbox = Inbox.of(made)
    elif mode == "appends":  # one at a time: full chunks and a short last one
        inbox = EMPTY_INBOX
        for e in made:
            inbox = inbox.splice("next-turn", inbox.size("next-turn"), 0, [e]).inbox
    else:  # appends in the middle of a bulk list, then head claims
        inbox = Inbox.of(made[: size // 2] + made[-10:])
        for i, e in enumerate(made[size // 2 : -10]):
            inbox = inbox.splice("next-turn", size // 2 + i, 0, [e]).inbox
    assert [e.message.id for e in inbox.next_turn] == names
    assert len(inbox._turn.items) >= 3
    return inbox, names


# (delete_count, inserted): (1, 3) at a chunk's last entry takes its upper key
# bound from the next chunk's first key, the one case no other edit reaches
EDITS = ((0, 1), (1, 0), (3, 0), (2, 1), (0, 2), (1, 3), (CHUNK + 3, 0))


@pytest.mark.parametrize("mode", ["bulk", "appends", "mixed"])
def test_every_position_of_a_multi_chunk_list(mode: str) -> None:
    size, waking = 3 * CHUNK - 40, CHUNK + 5
    inbox, names = layout(mode, size, waking)
    structure(inbox)
    for position in range(size + 1):
        for count, inserting in EDITS:
            new = [entry(f"new{position}.{j}") for j in range(inserting)]
            result = inbox.splice("next-turn", position, count, new)
            expected = names[:position] + [e.message.id for e in new] + names[position + count :]
            assert [e.message.id for e in result.inbox.next_turn] == expected
            assert [e.message.id for e in result.removed] == names[position : position + count]
            assert result.inbox.has_waking == (f"n{waking}" in expected)
            structure(result.inbox)
            for name in {*expected[max(position - 1, 0) : position + inserting + 1], expected[-1]}:
                found = result.inbox.find(name)
                assert found is not None
                assert found.position == expected.index(name)


@pytest.mark.parametrize("mode", ["bulk", "appends", "mixed"])
def test_head_claims_across_chunks(mode: str) -> None:
    inbox, names = layout(mode, 3 * CHUNK - 40, CHUNK + 5)
    head = len(inbox._turn.items[0])
    for count in (1, head - 1, head, head + 1, 2 * head + 1, len(names) - 1, len(names)):
        result = inbox.splice("next-turn", 0, count, [])
        assert [e.message.id for e in result.inbox.next_turn] == names[count:]
        assert result.inbox.has_waking == (count <= CHUNK + 5)
        structure(result.inbox)
        for name in names[count : count + 2]:
            found = result.inbox.find(name)
            assert found is not None
            assert found.position == names.index(name) - count


def test_adversarial_inserts_rekey_and_keep_order() -> None:
    """Halve one gap until it is gone, one level deeper each round: keys grow past
    MAX_KEY_LENGTH, so the list is re-keyed (R5 order and ``find`` must survive)."""
    inbox, names = layout("appends", 3 * CHUNK, 0)
    newest = CHUNK + 10
    plan = []
    for _ in range(MAX_KEY_LENGTH + 2):
        plan += ["after"] + ["before"] * 40
    for i, move in enumerate(plan):
        position = newest if move == "before" else newest + 1
        inbox = inbox.splice("next-turn", position, 0, [entry(f"x{i}")]).inbox
        names.insert(position, f"x{i}")
        newest = position
        structure(inbox)
    assert [e.message.id for e in inbox.next_turn] == names
    for position, name in enumerate(names):
        found = inbox.find(name)
        assert found is not None
        assert found.position == position


def test_keys_between_when_high_extends_low() -> None:
    keys = keys_between((5,), (5, 7), 3)
    assert keys == sorted(keys)
    assert all((5,) < k < (5, 7) for k in keys)
    keys = keys_between((5, 1), (6,), 2)
    assert all((5, 1) < k < (6,) for k in keys)
    keys = keys_between((5, 1, 9), (5, 2), 2)
    assert all((5, 1, 9) < k < (5, 2) for k in keys)


def test_inbox_value_semantics() -> None:
    a = Inbox.of([entry("q")], [entry("i", wakeup=True)])
    b = EMPTY_INBOX.splice("next-step", 0, 0, [entry("i", wakeup=True)]).inbox
    b = b.splice("next-turn", 0, 0, [entry("q")]).inbox
    assert a == b
    assert hash(a) == hash(b)
    assert a != EMPTY_INBOX
    assert (a == "inbox") is False
    assert a.__eq__("inbox") is NotImplemented
    assert repr(a).startswith("Inbox(next_turn=(Entry(")


COMPONENTS = st.one_of(st.integers(-3, 3), st.integers(-3, 3).map(lambda c: c * KEY_GAP))
KEYS = st.lists(COMPONENTS, min_size=1, max_size=5).map(tuple)


@settings(max_examples=300, deadline=None, database=None, derandomize=True)
@given(st.one_of(st.none(), KEYS), st.one_of(st.none(), KEYS), st.integers(0, 5))
def test_keys_between_property(
    a: tuple[int, ...] | None, b: tuple[int, ...] | None, count: int
) -> None:
    """The contract of ``keys_between`` (also checked by CrossHair), as a property."""
    low, high = (a, b) if a is None or b is None or a < b else (b, a)
    if low is not None and low == high:
        return
    keys = keys_between(low, high, count)
    assert len(keys) == count
    assert all(isinstance(c, int) and not isinstance(c, bool) for k in keys for c in k)
    assert all(x < y for x, y in itertools.pairwise(keys))
    assert low is None or all(low < k for k in keys)
    assert high is None or all(k < high for k in keys)
    longest = max(len(low or ()), len(high or ()))
    assert all(len(k) <= 1 + longest for k in keys)


def test_inbox_of_fills_both_lists() -> None:
    inbox = Inbox.of([entry("t1"), entry("t2")], [entry("s1", wakeup=True)])
    found = inbox.find("s1")
    assert found is not None
    assert (found.target, found.position) == ("next-step", 0)
    found = inbox.find("t2")
    assert found is not None
    assert (found.target, found.position) == ("next-turn", 1)
    assert inbox.entries("next-turn") == (entry("t1"), entry("t2"))


def test_removing_one_entry_from_a_short_chunk_recuts_it() -> None:
    """R7: a Remove that would leave a chunk under half full (not the only chunk) re-cuts it
    with its neighbour; removing one from a fuller chunk edits that chunk alone. Either
    way the order, the keys and every lookup hold."""
    names = [f"n{i}" for i in range(2 * CHUNK + 10)]
    inbox = EMPTY_INBOX
    for name in names:  # appends: two full chunks and a short last one
        inbox = inbox.splice("next-turn", inbox.size("next-turn"), 0, [entry(name)]).inbox
    assert [len(chunk) for chunk in inbox._turn.items] == [CHUNK, CHUNK, 10]
    for position in (CHUNK - 1, CHUNK, 2 * CHUNK, 2 * CHUNK + 5, 2 * CHUNK + 9):
        result = inbox.splice("next-turn", position, 1, [])
        expected = names[:position] + names[position + 1 :]
        assert [e.message.id for e in result.inbox.next_turn] == expected
        assert [e.message.id for e in result.removed] == [names[position]]
        structure(result.inbox)
        for name in (expected[position - 1], expected[-1]):
            found = result.inbox.find(name)
            assert found is not None
            assert found.position == expected.index(name)
        assert names[position] not in result.inbox


def test_sends_and_claims_through_the_fingers_keep_order_and_structure() -> None:
    """R4, R5, R9: sends fill the tail chunk, claims empty the head chunk, and any other
    edit in between sees one list: across several chunk seams, in both directions."""
    model: list[Entry] = []
    inbox = EMPTY_INBOX
    minted = itertools.count()

    def send(times: int) -> None:
        nonlocal inbox
        for _ in range(times):
            made = entry(f"s{next(minted)}", wakeup=True)
            inbox = inbox.append("next-turn", made).inbox
            model.append(made)

    def claim(times: int) -> None:
        nonlocal inbox
        for _ in range(times):
            claimed = inbox.claim(at_turn_start=True)
            assert claimed.next_turn == tuple(model[:1])
            del model[:1]
            inbox = claimed.inbox

    def edit_middle(_times: int) -> None:
        nonlocal inbox
        middle = len(model) // 2
        made = entry(f"m{next(minted)}")
        inbox = inbox.splice("next-turn", middle, 1, [made]).inbox
        model[middle : middle + 1] = [made]

    plan: list[tuple[Callable[[int], None], int]] = [
        (send, 3 * CHUNK + 7),  # the tail fills and joins the body three times
        (claim, CHUNK + 3),  # the head empties once and takes the next chunk
        (edit_middle, 1),  # fingers and body as one list
        (send, 5),  # the tail is taken from the last chunk again
        (claim, 1),
        (edit_middle, 1),
        (claim, 2 * CHUNK),  # through the body into the tail
        (send, 2),
    ]
    for action, times in plan:
        action(times)
        check(inbox, {"next-turn": model, "next-step": []})
        structure(inbox)
    claim(len(model))  # the head is taken from the tail when the body is empty
    check(inbox, {"next-turn": [], "next-step": []})
    assert inbox.size("next-turn") == 0
    assert not inbox.has_waking
    send(1)
    check(inbox, {"next-turn": model, "next-step": []})


def test_drop_head_takes_one_through_the_fingers_and_more_through_splice() -> None:
    """R9: the one-entry claim and the general head removal agree."""
    three = EMPTY_SEQ
    for name in ("a", "b", "c"):
        three = three.append(entry(name, wakeup=name == "b"))[0]
    one, removed = three.drop_head(1)
    assert [e.message.id for e in removed] == ["a"]
    assert [e.message.id for e in one.entries()] == ["b", "c"]
    assert (one.length, one.waking) == (2, 1)
    two, removed = three.drop_head(2)
    assert [e.message.id for e in removed] == ["a", "b"]
    assert (two.length, two.waking, [e.message.id for e in two.entries()]) == (1, 0, ["c"])
    empty, removed = one.drop_head(1)[0].drop_head(1)
    assert (empty.length, empty.waking, empty.entries(), removed[0].message.id) == (0, 0, (), "c")
