"""The two pending lists as one persistent value (R3, R4, R5, R9).

``Inbox`` is immutable: every edit returns a new inbox sharing most of its
structure with the old one, so the reducer can keep old states intact and
still pay a cost that does not grow with the number of pending entries.

Representation
--------------
Each list is a ``sequence.KeyedSeq``: chunked entries, each paired with an
order key that never changes while the entry is pending. A persistent hash map
(``immutables.Map``) records every pending MessageId (contexts included, R4)
and, for primary messages, the list and key of their entry. Finding an entry
by id is then a map lookup plus two binary searches; no list is scanned.

Edits rebuild only the chunks they touch plus the (short) chunk directory.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Final, NamedTuple, TypeAlias

import immutables

from inbox_core.errors import DuplicateMessageId
from inbox_core.sequence import EMPTY_SEQ, MAX_KEY_LENGTH, Key, KeyedSeq
from inbox_core.validators import tuple_of
from inbox_core.values import Entry, MessageId, Target, UserMessage

_entries = tuple_of(Entry, what="Entry")


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
        entries = self.next_step + self.next_turn
        if len(entries) == 1 and not entries[0].contexts:
            return (entries[0].message,)
        return batch_of(entries)


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
        turn: KeyedSeq = EMPTY_SEQ,
        step: KeyedSeq = EMPTY_SEQ,
        index: immutables.Map[MessageId, _Slot] | None = None,
    ) -> None:
        self._turn = turn
        self._step = step
        self._index: immutables.Map[MessageId, _Slot] = immutables.Map() if index is None else index

    @classmethod
    def of(cls, next_turn: Sequence[Entry] = (), next_step: Sequence[Entry] = ()) -> Inbox:
        """An inbox holding these entries (raises ``DuplicateMessageId`` like any splice, and
        ``InvalidInput`` for anything but sequences of ``Entry``)."""
        inbox = cls()
        inbox = inbox.splice("next-turn", 0, 0, _entries(next_turn)).inbox
        return inbox.splice("next-step", 0, 0, _entries(next_step)).inbox

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

    def append(self, target: Target, entry: Entry) -> Spliced:
        """Add one entry at the end of a list (a send, R13); ids stay unique (R4).

        post: __return__.inbox.entries(target) == self.entries(target) + (entry,)
        post: __return__.start == self.size(target)
        """
        if entry.contexts:
            return self.splice(target, self.size(target), 0, (entry,))
        message_id = entry.message.id
        if message_id in self._index:
            raise DuplicateMessageId(message_id)
        seq = self._seq(target)
        new_seq, key = seq.append(entry)
        return Spliced(
            self._with(target, new_seq, self._index.set(message_id, (target, key))), seq.length, ()
        )

    def claim(self, *, at_turn_start: bool) -> Claimed:
        """Take all of next-step, then (at a turn boundary) the first next-turn entry (R9).

        post: __return__.inbox.size("next-step") == 0
        post: len(__return__.next_turn) <= (1 if at_turn_start else 0)
        post: len(__return__.next_step) == self.size("next-step")
        post: __return__.next_turn == self.next_turn[: len(__return__.next_turn)]
        """
        turn_seq = self._turn
        next_step = self._step.entries()
        next_turn: tuple[Entry, ...] = ()
        if at_turn_start and turn_seq.length:
            turn_seq, next_turn = turn_seq.drop_head(1)
        claimed = next_step + next_turn
        if not claimed:
            return Claimed(self, (), ())
        index = self._index
        if len(claimed) == 1 and not claimed[0].contexts:
            index = index.delete(claimed[0].message.id)  # the common claim: one map operation
        else:
            with index.mutate() as edit:
                for entry in claimed:
                    for message in entry.messages:
                        del edit[message.id]
                index = edit.finish()
        return Claimed(Inbox(turn_seq, EMPTY_SEQ, index), next_step, next_turn)

    def _splice(
        self,
        target: Target,
        seq: KeyedSeq,
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
        elif (
            len(removed) == len(inserted) == 1
            and not removed[0].contexts
            and not inserted[0].contexts
            and not rekey
        ):
            # a replacement without contexts (Replace): two map operations
            index = index.delete(removed[0].message.id)
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
        return Spliced(self._with(target, new_seq, index), start, removed)

    def _with(
        self, target: Target, seq: KeyedSeq, index: immutables.Map[MessageId, _Slot]
    ) -> Inbox:
        if target == "next-turn":
            return Inbox(seq, self._step, index)
        return Inbox(self._turn, seq, index)

    def _check_unique(self, inserted: Sequence[Entry], removed: tuple[Entry, ...]) -> None:
        if not removed and len(inserted) == 1 and not inserted[0].contexts:
            message_id = inserted[0].message.id  # a send: one lookup, no sets
            if message_id in self._index:
                raise DuplicateMessageId(message_id)
            return
        if (
            len(removed) == len(inserted) == 1
            and not removed[0].contexts
            and not inserted[0].contexts
        ):
            message_id = inserted[0].message.id  # a replace: the removed id is free again
            if message_id in self._index and message_id != removed[0].message.id:
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

    def _seq(self, target: Target) -> KeyedSeq:
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
