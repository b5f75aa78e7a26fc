"""A persistent, chunked sequence of entries addressed by order keys.

``KeyedSeq`` is the storage of one pending list (``inbox.Inbox`` holds two):
entries in chunks of at most ``CHUNK`` (tuples), each entry paired with an
*order key*. Keys are tuples of ints that increase along the list;
``keys_between`` always finds fresh keys between two neighbours, so an
insertion never renumbers anything, and an entry can be found again from its
key by two binary searches. Every edit returns a new sequence sharing all
untouched chunks with the old one; appending at the end and removing from the
head (sends and claims, the common edits) touch only the end chunk.

It knows nothing of the inbox's rules (ids, claims, normalization); it only
counts waking entries, which the inbox asks for at every boundary.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from itertools import accumulate, chain
from operator import itemgetter
from typing import Final, TypeAlias, TypeVar

from inbox_core.values import Entry

Key: TypeAlias = tuple[int, ...]
_T = TypeVar("_T")
CHUNK: Final = 128
KEY_GAP: Final = 1 << 32
MAX_KEY_LENGTH: Final = 4
"""Past this many components the list is re-keyed (rare: adversarial insert patterns)."""


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


class KeyedSeq:
    """One pending list: chunked entries sorted by order key, plus a waking count.

    ``items`` and ``keys`` are parallel tuples of chunks. The first and the
    last chunk are kept apart from the others (*fingers*), so that the common
    edits, appending at the end (a send) and removing from the head (a claim),
    copy one chunk and never the tuple of all chunks; ``items`` and ``keys``
    put the three parts together for every other edit, whose result has no
    fingers until the next send or claim takes one. Other edits re-cut the
    chunks they touch and a short run joins its right neighbour, so only the
    head chunk (which only shrinks) can stay short for long.
    """

    __slots__ = (
        "_head",
        "_head_keys",
        "_body",
        "_body_keys",
        "_tail",
        "_tail_keys",
        "length",
        "waking",
        "_joined",
    )

    def __init__(
        self,
        items: tuple[tuple[Entry, ...], ...],
        keys: tuple[tuple[Key, ...], ...],
        length: int,
        waking: int,
        head: tuple[tuple[Entry, ...], tuple[Key, ...]] = ((), ()),
        tail: tuple[tuple[Entry, ...], tuple[Key, ...]] = ((), ()),
    ) -> None:
        self._head, self._head_keys = head
        self._body = items
        self._body_keys = keys
        self._tail, self._tail_keys = tail
        self.length = length
        self.waking = waking
        self._joined: tuple[tuple[tuple[Entry, ...], ...], tuple[tuple[Key, ...], ...]] | None
        self._joined = None if head[0] or tail[0] else (items, keys)

    @property
    def items(self) -> tuple[tuple[Entry, ...], ...]:
        """The chunks of entries in order (fingers included; none is empty)."""
        return self._join()[0]

    @property
    def keys(self) -> tuple[tuple[Key, ...], ...]:
        """The order keys, chunk by chunk, parallel to ``items``."""
        return self._join()[1]

    def _join(self) -> tuple[tuple[tuple[Entry, ...], ...], tuple[tuple[Key, ...], ...]]:
        """Fingers and body as one tuple of chunks, built once per sequence (a cache)."""
        joined = self._joined
        if joined is None:
            joined = self._joined = (
                _with_fingers(self._head, self._body, self._tail),
                _with_fingers(self._head_keys, self._body_keys, self._tail_keys),
            )
        return joined

    def entries(self) -> tuple[Entry, ...]:
        items = self._join()[0]
        if len(items) < 2:  # empty, or one chunk: no copy (every claim reads next-step)
            return items[0] if items else ()
        return tuple(chain.from_iterable(items))

    def rekeyed(self) -> KeyedSeq:
        """The same entries with fresh one-component keys (bounds key length)."""
        keys: list[tuple[Key, ...]] = []
        position = 0
        items = self._join()[0]
        for chunk in items:
            keys.append(tuple((KEY_GAP * (position + i),) for i in range(len(chunk))))
            position += len(chunk)
        return KeyedSeq(items, tuple(keys), self.length, self.waking)

    def locate(self, key: Key) -> tuple[int, int, int]:
        """Chunk, offset in chunk, and list position of the entry with ``key``."""
        items, keys = self._join()
        chunk = bisect_left(keys, key, key=_last)
        offset = bisect_left(keys[chunk], key)
        return chunk, offset, sum(map(len, items[:chunk])) + offset

    def coordinates(self, position: int) -> tuple[int, int]:
        """Chunk and offset of list position ``position`` (``length`` = the end)."""
        items = self._join()[0]
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
    ) -> tuple[KeyedSeq, tuple[Entry, ...], list[Key]]:
        """Replace ``count`` entries from (chunk, offset) by ``inserted``.

        Returns the new list, the removed entries and the inserted entries' keys.
        """
        items, keys = self._join()
        if count == 0 and (not items or (chunk == len(items) - 1 and offset == len(items[-1]))):
            return self._append(inserted)
        if count and not inserted and not chunk and not offset:
            if count == self.length:
                return EMPTY_SEQ, self.entries(), []
            head = items[0]
            if count <= len(head):
                # a head drop (a claim) leaves a short head chunk short: it only
                # shrinks until it is gone, so re-cutting it would be wasted work
                removed = head[:count]
                waking = self.waking - sum(entry.wakeup for entry in removed)
                if count == len(head):
                    rest_items, rest_keys = items[1:], keys[1:]
                else:  # tuple concatenation copies once; (x, *rest) builds a list first
                    rest_items = (head[count:],) + items[1:]  # noqa: RUF005
                    rest_keys = (keys[0][count:],) + keys[1:]  # noqa: RUF005
                return KeyedSeq(rest_items, rest_keys, self.length - count, waking), removed, []
        if count == 1 and len(inserted) <= 1:
            return self._swap_one(chunk, offset, tuple(inserted))
        return self._recut(chunk, offset, count, inserted)

    def _swap_one(
        self, chunk: int, offset: int, inserted: tuple[Entry, ...]
    ) -> tuple[KeyedSeq, tuple[Entry, ...], list[Key]]:
        """Replace (a ``Replace``) or remove (a ``Remove``) one entry inside its chunk.

        A replacement takes the removed entry's key (it is still strictly between
        the neighbours), so the key chunks are shared. A removal that would leave
        its chunk under half full (with other chunks around) re-cuts instead.
        """
        items, keys = self._join()
        run, run_keys = items[chunk], keys[chunk]
        if not inserted and len(run) <= CHUNK // 2 and len(items) > 1:
            return self._recut(chunk, offset, 1, inserted)
        removed = run[offset]
        new_items = (
            *items[:chunk],
            run[:offset] + inserted + run[offset + 1 :],
            *items[chunk + 1 :],
        )
        if inserted:
            new_keys = keys  # the replacement keeps the removed entry's key
            inserted_keys = [run_keys[offset]]
        else:
            new_keys = (
                *keys[:chunk],
                run_keys[:offset] + run_keys[offset + 1 :],
                *keys[chunk + 1 :],
            )
            inserted_keys = []  # never empties a chunk: a lone entry is the head (see splice)
        waking = self.waking - removed.wakeup + sum(entry.wakeup for entry in inserted)
        length = self.length - 1 + len(inserted)
        return KeyedSeq(new_items, new_keys, length, waking), (removed,), inserted_keys

    def append(self, entry: Entry) -> tuple[KeyedSeq, Key]:
        """Add one entry at the end (a send): copies the tail chunk only; returns its key."""
        head, head_keys = self._head, self._head_keys
        body, body_keys = self._body, self._body_keys
        tail, tail_keys = self._tail, self._tail_keys
        if not tail:  # take the last chunk as the tail (once after any other edit)
            if body:
                tail, tail_keys = body[-1], body_keys[-1]
                body, body_keys = body[:-1], body_keys[:-1]
            else:
                tail, tail_keys, head, head_keys = head, head_keys, (), ()
        key = (tail_keys[-1][0] + KEY_GAP,) if tail_keys else (0,)  # keys_between(last, None, 1)
        # tuple concatenation copies once; (*rest, x) builds a list first
        if len(tail) < CHUNK:
            tail, tail_keys = tail + (entry,), tail_keys + (key,)  # noqa: RUF005
        else:  # a full tail joins the body: once every CHUNK sends
            body, body_keys = body + (tail,), body_keys + (tail_keys,)  # noqa: RUF005
            tail, tail_keys = (entry,), (key,)
        seq = KeyedSeq(
            body,
            body_keys,
            self.length + 1,
            self.waking + entry.wakeup,
            (head, head_keys),
            (tail, tail_keys),
        )
        return seq, key

    def drop_head(self, count: int) -> tuple[KeyedSeq, tuple[Entry, ...]]:
        """Remove the first ``count`` entries (a claim); one entry copies the head chunk only.

        pre: 0 < count <= self.length
        """
        if count != 1:
            seq, removed, _keys = self.splice(0, 0, count, ())
            return seq, removed
        head, head_keys = self._head, self._head_keys
        body, body_keys = self._body, self._body_keys
        tail, tail_keys = self._tail, self._tail_keys
        if not head:  # take the first chunk as the head (once per chunk)
            if body:
                head, head_keys = body[0], body_keys[0]
                body, body_keys = body[1:], body_keys[1:]
            else:
                head, head_keys, tail, tail_keys = tail, tail_keys, (), ()
        first = head[0]
        seq = KeyedSeq(
            body,
            body_keys,
            self.length - 1,
            self.waking - first.wakeup,
            (head[1:], head_keys[1:]),
            (tail, tail_keys),
        )
        return seq, (first,)

    def _append(self, inserted: Sequence[Entry]) -> tuple[KeyedSeq, tuple[Entry, ...], list[Key]]:
        items, keys = self._join()
        new_keys = keys_between(keys[-1][-1] if keys else None, None, len(inserted))
        waking = self.waking + sum(entry.wakeup for entry in inserted)
        length = self.length + len(inserted)
        if items and len(items[-1]) + len(inserted) <= CHUNK:
            seq = KeyedSeq(
                (*items[:-1], items[-1] + tuple(inserted)),
                (*keys[:-1], keys[-1] + tuple(new_keys)),
                length,
                waking,
            )
        else:
            new_items, new_key_chunks = _rechunk(list(inserted), new_keys)
            seq = KeyedSeq(items + new_items, keys + new_key_chunks, length, waking)
        return seq, (), new_keys

    def _recut(
        self, chunk: int, offset: int, count: int, inserted: Sequence[Entry]
    ) -> tuple[KeyedSeq, tuple[Entry, ...], list[Key]]:
        """The general case: flatten the touched chunks, edit, cut again."""
        items, keys = self._join()
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
        seq = KeyedSeq(
            items[:chunk] + new_items + items[last + 1 :],
            keys[:chunk] + new_key_chunks + keys[last + 1 :],
            self.length - len(removed) + len(inserted),
            waking,
        )
        return seq, removed, new_keys


def _with_fingers(
    head: tuple[_T, ...], body: tuple[tuple[_T, ...], ...], tail: tuple[_T, ...]
) -> tuple[tuple[_T, ...], ...]:
    """``body`` with the fingers that are not empty at either end."""
    if head:
        body = (head,) + body  # noqa: RUF005
    if tail:
        body = body + (tail,)  # noqa: RUF005
    return body


EMPTY_SEQ: Final = KeyedSeq((), (), 0, 0)
