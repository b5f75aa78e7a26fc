"""The two pending lists as one persistent value (R3, R4, R5, R9).

``Inbox`` is immutable: every edit returns a new inbox sharing most of its
structure with the old one, so the reducer can keep old states intact and
still pay a cost that does not grow with the number of pending entries.

Representation
--------------
Each list is a ``_Seq``: entries in chunks of at most ``CHUNK`` (tuples), each
entry paired with an *order key*. Keys are tuples of ints that increase along
the list; ``keys_between`` always finds fresh keys between two neighbours, so
an insertion never renumbers anything. A persistent hash map
(``immutables.Map``) records every pending MessageId (contexts included, R4)
and, for primary messages, the list and key of their entry. Finding an entry
by id is then a map lookup plus two binary searches; no list is scanned.

Edits rebuild only the chunks they touch plus the (short) chunk directory.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Iterator, Sequence
from itertools import accumulate, chain
from operator import itemgetter
from typing import Final, NamedTuple, TypeAlias

import immutables

from inbox_core.errors import DuplicateMessageId
from inbox_core.values import Entry, MessageId, Target, UserMessage

Key: TypeAlias = tuple[int, ...]
CHUNK: Final = 128
KEY_GAP: Final = 1 << 32
MAX_KEY_LENGTH: Final = 4
"""Past this many components the list is re-keyed (rare: adversarial insert patterns)."""


def normalize_splice(length: int, start: int, delete_count: int) -> tuple[int, int]:
    """List-splice coordinates: a negative start counts from the end; both clamp (R5).

    pre: length >= 0
    post: 0 <= __return__[0] <= length
    post: 0 <= __return__[1] <= length - __return__[0]
    post: (start < 0) or __return__[0] == min(start, length)
    post: (start >= 0) or __return__[0] == max(length + start, 0)
    post: __return__[1] == min(max(delete_count, 0), length - __return__[0])
    """
    first = max(length + start, 0) if start < 0 else min(start, length)
    return first, min(max(delete_count, 0), length - first)


def keys_between(low: Key | None, high: Key | None, count: int) -> list[Key]:
    """``count`` strictly increasing keys, all strictly between ``low`` and ``high``.

    ``None`` means unbounded on that side. Keys are non-empty tuples of ints
    compared lexicographically, so a gap always exists. New keys are spaced
    ``KEY_GAP`` apart where there is room and are never longer than needed:
    at most one component longer than ``low`` or ``high``.

    pre: count >= 0
    pre: low is None or len(low) > 0
    pre: high is None or len(high) > 0
    pre: low is None or high is None or low < high
    post: len(__return__) == count
    post: all(a < b for a, b in zip(__return__, __return__[1:]))
    post: low is None or all(low < k for k in __return__)
    post: high is None or all(k < high for k in __return__)
    post: all(len(k) <= 1 + max(len(low or ()), len(high or ())) for k in __return__)
    """
    if low is None:
        if high is None:
            return [(KEY_GAP * i,) for i in range(count)]
        return [(high[0] - KEY_GAP * (count - i),) for i in range(count)]
    if high is None:
        return [(low[0] + KEY_GAP * (i + 1),) for i in range(count)]
    depth = 0
    while depth < len(low) and low[depth] == high[depth]:
        depth += 1
    prefix = low[:depth]
    if depth == len(low):
        # high extends low: below high's next component
        top = high[depth]
        return [(*prefix, top - KEY_GAP * (count - i)) for i in range(count)]
    room = high[depth] - low[depth]
    if room > count:
        # room in the first differing component: stay as short as low
        step = room // (count + 1)
        return [(*prefix, low[depth] + step * (i + 1)) for i in range(count)]
    if depth + 1 < len(low):
        # above low's next component, under high's prefix
        after = low[depth + 1]
        return [(*low[: depth + 1], after + KEY_GAP * (i + 1)) for i in range(count)]
    return [(*low, KEY_GAP * i) for i in range(count)]


def _rechunk(
    items: list[Entry], keys: list[Key]
) -> tuple[tuple[tuple[Entry, ...], ...], tuple[tuple[Key, ...], ...]]:
    """Cut a run into near-equal chunks of at most CHUNK."""
    if not items:
        return (), ()
    pieces = -(-len(items) // CHUNK)
    size = -(-len(items) // pieces)
    bounds = range(0, len(items), size)
    return (
        tuple(tuple(items[i : i + size]) for i in bounds),
        tuple(tuple(keys[i : i + size]) for i in bounds),
    )


_last = itemgetter(-1)


class _Seq:
    """One pending list: chunked entries sorted by order key, plus a waking count.

    ``items`` and ``keys`` are parallel tuples of chunks. Appending at the end
    and removing from the head (the common edits: sends and claims) touch only
    the end chunk; other edits re-cut the chunks they touch.
    """

    __slots__ = ("items", "keys", "length", "waking")

    def __init__(
        self,
        items: tuple[tuple[Entry, ...], ...],
        keys: tuple[tuple[Key, ...], ...],
        length: int,
        waking: int,
    ) -> None:
        self.items = items
        self.keys = keys
        self.length = length
        self.waking = waking

    def entries(self) -> tuple[Entry, ...]:
        return tuple(chain.from_iterable(self.items))

    def rekeyed(self) -> _Seq:
        """The same entries with fresh one-component keys (bounds key length)."""
        keys: list[tuple[Key, ...]] = []
        position = 0
        for chunk in self.items:
            keys.append(tuple((KEY_GAP * (position + i),) for i in range(len(chunk))))
            position += len(chunk)
        return _Seq(self.items, tuple(keys), self.length, self.waking)

    def locate(self, key: Key) -> tuple[int, int, int]:
        """Chunk, offset in chunk, and list position of the entry with ``key``."""
        chunk = bisect_left(self.keys, key, key=_last)
        offset = bisect_left(self.keys[chunk], key)
        return chunk, offset, sum(map(len, self.items[:chunk])) + offset

    def coordinates(self, position: int) -> tuple[int, int]:
        """Chunk and offset of list position ``position`` (``length`` = the end)."""
        items = self.items
        if not items:
            return 0, 0
        if position < len(items[0]):
            return 0, position
        if position == self.length:
            return len(items) - 1, len(items[-1])
        ends = list(accumulate(map(len, items)))
        chunk = bisect_right(ends, position)
        return chunk, position - ends[chunk - 1]

    def splice(
        self, chunk: int, offset: int, count: int, inserted: Sequence[Entry]
    ) -> tuple[_Seq, tuple[Entry, ...], list[Key]]:
        """Replace ``count`` entries from (chunk, offset) by ``inserted``.

        Returns the new list, the removed entries and the inserted entries' keys.
        """
        items, keys = self.items, self.keys
        if count == 0 and (not items or (chunk == len(items) - 1 and offset == len(items[-1]))):
            return self._append(inserted)
        if count and not inserted and not chunk and not offset:
            if count == self.length:
                return _EMPTY_SEQ, self.entries(), []
            head = items[0]
            if count < len(head) and (len(head) - count >= CHUNK // 2 or len(items) == 1):
                removed = head[:count]
                waking = self.waking - sum(entry.wakeup for entry in removed)
                return (
                    _Seq(
                        (head[count:], *items[1:]),
                        (keys[0][count:], *keys[1:]),
                        self.length - count,
                        waking,
                    ),
                    removed,
                    [],
                )
        return self._recut(chunk, offset, count, inserted)

    def _append(self, inserted: Sequence[Entry]) -> tuple[_Seq, tuple[Entry, ...], list[Key]]:
        items, keys = self.items, self.keys
        new_keys = keys_between(keys[-1][-1] if keys else None, None, len(inserted))
        waking = self.waking + sum(entry.wakeup for entry in inserted)
        length = self.length + len(inserted)
        if items and len(items[-1]) + len(inserted) <= CHUNK:
            seq = _Seq(
                (*items[:-1], items[-1] + tuple(inserted)),
                (*keys[:-1], keys[-1] + tuple(new_keys)),
                length,
                waking,
            )
        else:
            new_items, new_key_chunks = _rechunk(list(inserted), new_keys)
            seq = _Seq(items + new_items, keys + new_key_chunks, length, waking)
        return seq, (), new_keys

    def _recut(
        self, chunk: int, offset: int, count: int, inserted: Sequence[Entry]
    ) -> tuple[_Seq, tuple[Entry, ...], list[Key]]:
        """The general case: flatten the touched chunks, edit, cut again."""
        items, keys = self.items, self.keys
        last = chunk
        run_items: list[Entry] = list(items[chunk])
        run_keys: list[Key] = list(keys[chunk])
        while len(run_items) < offset + count:
            last += 1
            run_items.extend(items[last])
            run_keys.extend(keys[last])
        end = offset + count
        removed = tuple(run_items[offset:end])
        low = run_keys[offset - 1] if offset else (keys[chunk - 1][-1] if chunk else None)
        if end < len(run_keys):
            high: Key | None = run_keys[end]
        else:
            high = keys[last + 1][0] if last + 1 < len(keys) else None
        new_keys = keys_between(low, high, len(inserted))
        run_items[offset:end] = inserted
        run_keys[offset:end] = new_keys
        if len(run_items) < CHUNK // 2 and last + 1 < len(items):
            # a small run joins its right neighbour so chunks do not fragment
            last += 1
            run_items.extend(items[last])
            run_keys.extend(keys[last])
        new_items, new_key_chunks = _rechunk(run_items, run_keys)
        waking = self.waking
        waking -= sum(entry.wakeup for entry in removed)
        waking += sum(entry.wakeup for entry in inserted)
        seq = _Seq(
            items[:chunk] + new_items + items[last + 1 :],
            keys[:chunk] + new_key_chunks + keys[last + 1 :],
            self.length - len(removed) + len(inserted),
            waking,
        )
        return seq, removed, new_keys


_EMPTY_SEQ: Final = _Seq((), (), 0, 0)

_Slot: TypeAlias = "tuple[Target, Key] | None"
"""Index value: (list, order key) for a primary message, None for a context."""


class Found(NamedTuple):
    """Where a pending entry sits: its list, its position and the entry itself."""

    target: Target
    position: int
    entry: Entry
    chunk: int
    offset: int


class Claimed(NamedTuple):
    """Result of a claim: the new inbox and what left each list (R9)."""

    inbox: Inbox
    next_step: tuple[Entry, ...]
    next_turn: tuple[Entry, ...]

    @property
    def batch(self) -> tuple[UserMessage, ...]:
        """The pre-step batch: next-step before next-turn, each entry's contexts first."""
        return batch_of(self.next_step + self.next_turn)


class Spliced(NamedTuple):
    """Result of one inbox splice: the new inbox and the normalized facts (R5)."""

    inbox: Inbox
    start: int
    removed: tuple[Entry, ...]


class Inbox:
    """Both pending lists and the MessageId index, as one immutable value."""

    __slots__ = ("_turn", "_step", "_index")

    def __init__(
        self,
        turn: _Seq = _EMPTY_SEQ,
        step: _Seq = _EMPTY_SEQ,
        index: immutables.Map[MessageId, _Slot] | None = None,
    ) -> None:
        self._turn = turn
        self._step = step
        self._index: immutables.Map[MessageId, _Slot] = immutables.Map() if index is None else index

    @classmethod
    def of(cls, next_turn: Sequence[Entry] = (), next_step: Sequence[Entry] = ()) -> Inbox:
        """An inbox holding these entries (raises ``DuplicateMessageId`` like any splice)."""
        inbox = cls()
        inbox = inbox.splice("next-turn", 0, 0, next_turn).inbox
        return inbox.splice("next-step", 0, 0, next_step).inbox

    # ------------------------------------------------------------------ reading

    @property
    def next_turn(self) -> tuple[Entry, ...]:
        """Entries waiting for a turn of their own, oldest first."""
        return self._turn.entries()

    @property
    def next_step(self) -> tuple[Entry, ...]:
        """Entries waiting for the next step boundary, oldest first."""
        return self._step.entries()

    def entries(self, target: Target) -> tuple[Entry, ...]:
        return self._seq(target).entries()

    def size(self, target: Target) -> int:
        return self._seq(target).length

    @property
    def is_empty(self) -> bool:
        return not (self._turn.length or self._step.length)

    @property
    def has_waking(self) -> bool:
        """Whether any pending entry, in either list, asks the model to run."""
        return bool(self._turn.waking or self._step.waking)

    @property
    def has_waking_step(self) -> bool:
        return bool(self._step.waking)

    def __contains__(self, message_id: object) -> bool:
        """Whether ``message_id`` is pending, as a primary message or a context."""
        return message_id in self._index

    def message_ids(self) -> Iterator[MessageId]:
        return iter(self._index)

    def find(self, message_id: MessageId) -> Found | None:
        """The entry whose primary message has this id, or None (contexts are not entries).

        post: _ is None or _.entry == self.entries(_.target)[_.position]
        post: _ is None or _.entry.message.id == message_id
        post: _ is not None or all(e.message.id != message_id for e in self.next_turn)
        post: _ is not None or all(e.message.id != message_id for e in self.next_step)
        """
        slot = self._index.get(message_id)
        if slot is None:
            return None
        target, key = slot
        seq = self._seq(target)
        chunk, offset, position = seq.locate(key)
        return Found(target, position, seq.items[chunk][offset], chunk, offset)

    # ---------------------------------------------------------------- editing

    def splice(
        self, target: Target, start: int, delete_count: int, inserted: Sequence[Entry]
    ) -> Spliced:
        """Apply a list splice with normalized coordinates (R5); ids stay unique (R4)."""
        seq = self._seq(target)
        first, count = normalize_splice(seq.length, start, delete_count)
        chunk, offset = seq.coordinates(first)
        return self._splice(target, seq, chunk, offset, first, count, inserted)

    def splice_found(self, found: Found, inserted: Sequence[Entry]) -> Spliced:
        """Replace exactly the entry ``find`` returned (no second lookup)."""
        seq = self._seq(found.target)
        return self._splice(
            found.target, seq, found.chunk, found.offset, found.position, 1, inserted
        )

    def claim(self, *, at_turn_start: bool) -> Claimed:
        """Take all of next-step, then (at a turn boundary) the first next-turn entry (R9).

        post: __return__.inbox.size("next-step") == 0
        post: len(__return__.next_turn) <= (1 if at_turn_start else 0)
        post: len(__return__.next_step) == self.size("next-step")
        post: __return__.next_turn == self.next_turn[: len(__return__.next_turn)]
        """
        inbox = self
        step = (
            self.splice("next-step", 0, self.size("next-step"), ()) if self._step.length else None
        )
        if step is not None:
            inbox = step.inbox
        turn = None
        if at_turn_start and self._turn.length:
            turn = inbox.splice("next-turn", 0, 1, ())
            inbox = turn.inbox
        return Claimed(
            inbox,
            step.removed if step is not None else (),
            turn.removed if turn is not None else (),
        )

    def _splice(
        self,
        target: Target,
        seq: _Seq,
        chunk: int,
        offset: int,
        start: int,
        count: int,
        inserted: Sequence[Entry],
    ) -> Spliced:
        new_seq, removed, new_keys = seq.splice(chunk, offset, count, inserted)
        index = self._index
        if inserted:
            self._check_unique(inserted, removed)
        rekey = any(len(key) > MAX_KEY_LENGTH for key in new_keys)
        if rekey:
            new_seq = new_seq.rekeyed()
        single = len(removed) + len(inserted) == 1 and not rekey
        if single and not (removed or inserted)[0].contexts:
            # one entry without contexts (a send, a claim, a remove): one map operation
            if removed:
                index = index.delete(removed[0].message.id)
            else:
                index = index.set(inserted[0].message.id, (target, new_keys[0]))
        elif removed or inserted:
            with index.mutate() as edit:
                for entry in removed:
                    for message in entry.messages:
                        del edit[message.id]
                for entry, key in zip(inserted, new_keys, strict=True):
                    for context in entry.contexts:
                        edit[context.id] = None
                    edit[entry.message.id] = (target, key)
                if rekey:
                    for chunk_items, chunk_keys in zip(new_seq.items, new_seq.keys, strict=True):
                        for entry, key in zip(chunk_items, chunk_keys, strict=True):
                            edit[entry.message.id] = (target, key)
                index = edit.finish()
        if target == "next-turn":
            return Spliced(Inbox(new_seq, self._step, index), start, removed)
        return Spliced(Inbox(self._turn, new_seq, index), start, removed)

    def _check_unique(self, inserted: Sequence[Entry], removed: tuple[Entry, ...]) -> None:
        if not removed and len(inserted) == 1 and not inserted[0].contexts:
            message_id = inserted[0].message.id  # a send: one lookup, no sets
            if message_id in self._index:
                raise DuplicateMessageId(message_id)
            return
        freed = {message.id for entry in removed for message in entry.messages}
        seen: set[MessageId] = set()
        index = self._index
        for entry in inserted:
            for message in entry.messages:
                message_id = message.id
                if message_id in seen or (message_id in index and message_id not in freed):
                    raise DuplicateMessageId(message_id)
                seen.add(message_id)

    def _seq(self, target: Target) -> _Seq:
        return self._turn if target == "next-turn" else self._step

    # ------------------------------------------------------------------- value

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Inbox):
            return NotImplemented
        return self.next_turn == other.next_turn and self.next_step == other.next_step

    def __hash__(self) -> int:
        return hash((self.next_turn, self.next_step))

    def __repr__(self) -> str:
        return f"Inbox(next_turn={self.next_turn!r}, next_step={self.next_step!r})"


def batch_of(entries: Sequence[Entry]) -> tuple[UserMessage, ...]:
    """Messages of claimed entries in admission order: each entry's contexts, then it (R9).

    post: len(_) == sum(len(entry.contexts) + 1 for entry in entries)
    post: [m for m in _ if any(m is e.message for e in entries)] == [e.message for e in entries]
    """
    return tuple(message for entry in entries for message in entry.messages)


EMPTY_INBOX: Final = Inbox()
