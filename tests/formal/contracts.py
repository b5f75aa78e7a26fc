"""CrossHair support: how to build core values symbolically, and contract-carrying wrappers.

``nox -s crosshair`` runs ``crosshair check`` on this file first, then on the
contracts in ``inbox_core/inbox.py`` and ``inbox_core/values.py``. Importing
this module registers creators for the values CrossHair cannot build on its
own: ``UserMessage`` (its ``Literal`` role field), the input classes, ``Entry``
and ``Inbox`` (an ``immutables.Map`` inside). Generated ids come from small
ranges so that duplicates (R4) are reachable.

The wrappers below are pure functions with PEP 316 contracts around parts of
the real code that need a hand-built structure: ``seq_splice`` splices a
``KeyedSeq`` cut into *small* chunks (the real chunk size is 128, far beyond what
a symbolic list reaches), ``splice_rejects_duplicates`` states exactly when an
inbox splice must raise ``DuplicateMessageId``.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

from crosshair import SymbolicFactory, register_type
from crosshair.tracers import ResumedTracing

from inbox_core.errors import DuplicateMessageId
from inbox_core.inbox import Inbox, normalize_splice
from inbox_core.sequence import KEY_GAP, Key, KeyedSeq
from inbox_core.values import (
    Entry,
    InjectInput,
    NextTurnInput,
    SteerInput,
    Target,
    UserMessage,
)


def _message(message_id: str) -> UserMessage:
    return UserMessage(message_id, "text")


def _contexts(prefix: str, count: int) -> tuple[UserMessage, ...]:
    return tuple(_message(f"{prefix}c{j}") for j in range(count % 3))


def _entries(prefix: str, wakeups: Sequence[bool], contexts: Sequence[int]) -> list[Entry]:
    return [
        Entry(
            _message(f"{prefix}{i}"),
            _contexts(f"{prefix}{i}", contexts[i] if i < len(contexts) else 0),
            w,
        )
        for i, w in enumerate(wakeups)
    ]


def _make_entry(factory: SymbolicFactory) -> Entry:
    # ids t0..t3: they collide with the entries of a generated inbox (R4)
    number, contexts, wakeup = factory(int, "_id"), factory(int, "_ctx"), factory(bool, "_wake")
    with ResumedTracing():
        name = f"t{number % 4}"
        return Entry(_message(name), _contexts(f"x{name}", contexts), wakeup)


def _make_inbox(factory: SymbolicFactory) -> Inbox:
    turn, turn_contexts = factory(list[bool], "_turn"), factory(list[int], "_turn_ctx")
    step, step_contexts = factory(list[bool], "_step"), factory(list[int], "_step_ctx")
    with ResumedTracing():
        return Inbox.of(_entries("t", turn, turn_contexts), _entries("s", step, step_contexts))


def _make_next_turn(factory: SymbolicFactory) -> NextTurnInput:
    contexts, wakeup = factory(int, "_ctx"), factory(bool, "_wake")
    with ResumedTracing():
        return NextTurnInput(_message("n"), _contexts("n", contexts), "next-turn", wakeup)


def _make_steer(factory: SymbolicFactory) -> SteerInput:
    contexts = factory(int, "_ctx")
    with ResumedTracing():
        return SteerInput(_message("s"), _contexts("s", contexts), "next-step", True)


def _make_inject(factory: SymbolicFactory) -> InjectInput:
    return InjectInput(_message("i"), (), "next-step", False)


def _make_message(factory: SymbolicFactory) -> UserMessage:
    number = factory(int, "_id")
    with ResumedTracing():
        return _message(f"t{number % 4}")


register_type(UserMessage, _make_message)
register_type(Entry, _make_entry)
register_type(Inbox, _make_inbox)
register_type(NextTurnInput, _make_next_turn)
register_type(SteerInput, _make_steer)
register_type(InjectInput, _make_inject)


# ------------------------------------------------------------------- wrappers


def _seq(sizes: Sequence[int], wakeups: Sequence[bool]) -> tuple[KeyedSeq, list[Entry]]:
    """A ``KeyedSeq`` whose chunks have the given sizes, keys spaced KEY_GAP apart."""
    flat: list[Entry] = []
    items: list[tuple[Entry, ...]] = []
    keys: list[tuple[Key, ...]] = []
    for size in sizes:
        chunk = [
            Entry(_message(f"e{len(flat) + i}"), (), wakeups[(len(flat) + i) % len(wakeups)])
            for i in range(size)
        ]
        keys.append(tuple((KEY_GAP * (len(flat) + i),) for i in range(size)))
        items.append(tuple(chunk))
        flat += chunk
    return KeyedSeq(tuple(items), tuple(keys), len(flat), sum(e.wakeup for e in flat)), flat


def seq_splice(
    sizes: list[int], wakeups: list[bool], start: int, delete_count: int, inserted: int
) -> dict[str, bool]:
    """Splice a multi-chunk list: the result is exactly the list splice (R5).

    pre: 0 < len(sizes) <= 3 and all(0 < s <= 3 for s in sizes)
    pre: 0 < len(wakeups) <= 3
    pre: 0 <= inserted <= 3
    post: __return__["entries"]
    post: __return__["removed"]
    post: __return__["counts"]
    post: __return__["chunks"]
    post: __return__["keys"]
    post: __return__["located"]
    """
    seq, flat = _seq(sizes, wakeups)
    new_entries = [Entry(_message(f"n{i}"), (), i % 2 == 0) for i in range(inserted)]
    first, count = normalize_splice(seq.length, start, delete_count)
    chunk, offset = seq.coordinates(first)
    new, removed, new_keys = seq.splice(chunk, offset, count, new_entries)
    expected = flat[:first] + new_entries + flat[first + count :]
    all_keys = [k for chunk_keys in new.keys for k in chunk_keys]
    return {
        "entries": list(new.entries()) == expected,
        "removed": list(removed) == flat[first : first + count],
        "counts": new.length == len(expected)
        and new.waking == sum(e.wakeup for e in expected)
        and len(new_keys) == inserted,
        "chunks": [len(c) for c in new.items] == [len(c) for c in new.keys] and all(new.items),
        "keys": all(a < b for a, b in itertools.pairwise(all_keys)),
        "located": all(new.locate(key)[2] == position for position, key in enumerate(all_keys)),
    }


def _repeats(pending: int, delete_count: int, inserted: list[int], context: int) -> bool:
    """The naive answer: an id twice among the inserted ones, or one still pending."""
    ids = [f"p{context}", *(f"p{i}" for i in inserted)] if inserted else []
    kept = {f"p{i}" for i in range(delete_count, pending)}
    return len(set(ids)) < len(ids) or bool(set(ids) & kept)


def splice_rejects_duplicates(
    pending: int, delete_count: int, inserted: list[int], context: int
) -> bool:
    """Whether splicing next-turn raises DuplicateMessageId: exactly on a repeated id (R4).

    Pending entries are ``p0..p{pending-1}``; the splice removes the first
    ``delete_count`` and inserts ``p{i}`` for each ``i`` in ``inserted``, the
    first one carrying the context ``p{context}``.

    pre: 0 <= pending <= 3 and 0 <= delete_count <= pending
    pre: len(inserted) <= 3 and all(0 <= i < 6 for i in inserted) and 0 <= context < 6
    post: __return__ == _repeats(pending, delete_count, inserted, context)
    """
    inbox = Inbox.of([Entry(_message(f"p{i}"), (), False) for i in range(pending)])
    entries = [
        Entry(_message(f"p{i}"), (_message(f"p{context}"),) if n == 0 else (), True)
        for n, i in enumerate(inserted)
    ]
    try:
        inbox.splice("next-turn", 0, delete_count, entries)
    except DuplicateMessageId:
        return True
    return False


def inbox_splice(
    turn: list[bool],
    step: list[bool],
    to_turn: bool,
    start: int,
    delete_count: int,
    inserted: list[Entry],
) -> dict[str, bool]:
    """``Inbox.splice`` is a normalized list splice that keeps ids unique (R4, R5).

    (A wrapper because CrossHair cannot build the ``Literal`` target argument.)

    pre: len(turn) <= 3 and len(step) <= 3 and len(inserted) <= 2
    post: __return__["coordinates"]
    post: __return__["removed"]
    post: __return__["list"]
    post: __return__["other list"]
    post: __return__["index"]
    """
    inbox = Inbox.of(_entries("t", turn, []), _entries("s", step, []))
    target: Target = "next-turn" if to_turn else "next-step"
    other: Target = "next-step" if to_turn else "next-turn"
    before = list(inbox.entries(target))
    try:
        result = inbox.splice(target, start, delete_count, inserted)
    except DuplicateMessageId:
        kept = [m.id for e in before + list(inbox.entries(other)) for m in e.messages]
        first, count = normalize_splice(len(before), start, delete_count)
        freed = {m.id for e in before[first : first + count] for m in e.messages}
        new = [m.id for e in inserted for m in e.messages]
        repeated = len(set(new)) < len(new) or bool(set(new) & (set(kept) - freed))
        return dict.fromkeys(("coordinates", "removed", "list", "other list"), True) | {
            "index": repeated
        }
    first, count = result.start, len(result.removed)
    after = result.inbox
    pending = [m.id for e in after.next_turn + after.next_step for m in e.messages]
    return {
        "coordinates": (first, count) == normalize_splice(len(before), start, delete_count),
        "removed": list(result.removed) == before[first : first + count],
        "list": list(after.entries(target)) == before[:first] + inserted + before[first + count :],
        "other list": after.entries(other) == inbox.entries(other),
        "index": sorted(after.message_ids()) == sorted(pending)
        and len(set(pending)) == len(pending),
    }
