"""Checkpoints beside a log (R41): opening from the newest one, the owner's keeping of them,
what a host restores from, and the check of every stored one against the replay.

A checkpoint (``inbox_core.checkpoint``) is a cache of replay's fold after the first ``seq``
events; the log stays the only authority (R10). So:

- **Opening** (``open_log``, ``open_tail``) reads the newest checkpoint and the events from
  the one it follows on (``Tail``, one read), and folds only those. A checkpoint that does
  not decode (not UTF-8, not JSON, another shape, a version this code does not know,
  taken for another agent), lies beyond the log's end, does not match the event it
  follows (its digest), or from which the events after it do not replay, is ignored with
  one warning (logger ``inbox_core.shell``) and the whole log is folded: deleting every
  checkpoint changes nothing but speed. A log without ``read_tail`` (a host's own) is read
  whole.
- **Keeping** (``Keeper``): the owner folds every durable event it adopts (about a
  microsecond each) and hands a checkpoint of what is durable to the background writer
  (``writers.CheckpointWriter``, never in the way of an append a caller waits on) about
  every ``checkpoint_every`` events, and, once the newest checkpoint is ``REOPEN_TAIL``
  events behind (or ``checkpoint_every``, if fewer), right after an opening and at detach
  or release: a shorter tail costs an opening less than a checkpoint costs to write. A
  ``MemoryLog``'s events are Python objects already: its owner folds them at release.
- **Hosts** restore from a bounded tail (``LogHistory``, SH11): the events read at opening
  and the earlier ones read backwards in pages, as far back as the host needs.
- **Checking** (``verify``): every stored checkpoint against the state replay has at its seq
  (``inbox-core replay --check-checkpoints``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Final

import attrs

from inbox_core import limits
from inbox_core.checkpoint import checkpoint_from_json, matches, take
from inbox_core.errors import InboxCoreError, InvalidInput, ReplayError, shown
from inbox_core.events import DurableEvent
from inbox_core.replay import Checkpoint, LogFold
from inbox_core.shell.stores.base import Tail

__all__ = [
    "DEFAULT_EVERY",
    "REOPEN_TAIL",
    "Keeper",
    "LogHistory",
    "Opened",
    "Verdict",
    "agent_of",
    "checkpoint_every",
    "open_log",
    "open_tail",
    "verify",
]

logger: Final = logging.getLogger("inbox_core.shell")

DEFAULT_EVERY: Final = 1024
"""Events between two checkpoints of an owner (a log's ``checkpoint_every`` by default): an
opening folds at most about this many events after the newest one."""
MAX_EVERY: Final = 2**31
REOPEN_TAIL: Final = 256
"""How far behind the newest checkpoint may be at an opening or a release before the owner
writes one (fewer events fold faster than a checkpoint is written and read); an opening
that folded that many writes one at once, so that the next opening (after a crash, a
takeover) need not fold them again."""
DEFAULT_AGENT: Final = "default"
"""What a log without an ``agent_id`` (a ``MemoryLog``) names in its checkpoints."""
HISTORY_PAGE: Final = 1000
"""Events per page when a host reads a log backwards (``LogHistory.pages``)."""


def checkpoint_every(value: object) -> int | None:
    """A log's ``checkpoint_every``: an int in [1, 2**31], or None (its owner writes none)."""
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= MAX_EVERY:
        raise InvalidInput(
            f"checkpoint_every must be an int in [1, {MAX_EVERY}] or None, got {shown(value)}"
        )
    return value


def agent_of(log: object) -> str:
    """The agent a log's checkpoints name."""
    agent = getattr(log, "agent_id", None)
    return agent if isinstance(agent, str) else DEFAULT_AGENT


# --------------------------------------------------------------------- opening


@attrs.frozen(slots=True)
class Opened:
    """A log as opened: the fold of the whole log, and the events read after ``start``."""

    fold: LogFold
    start: int
    """The seq of ``events[0]``: the checkpoint's ``seq``, or 0 (the whole log was read)."""
    events: Sequence[DurableEvent]
    checkpoint: Checkpoint | None
    """The checkpoint opened from (None: the whole log was folded)."""


class _Ignored(Exception):
    """Why a stored checkpoint is not used (the log is folded whole)."""


def _whole(events: Sequence[DurableEvent]) -> Opened:
    return Opened(LogFold().feed(events), 0, events, None)


def open_log(log: Any, *, whole: bool = False) -> Opened:
    """Read and fold ``log`` from its newest checkpoint (blocking: the log's reads). ``whole``
    (or a log without ``read_tail``): every event, from seq 0. ``ReplayError`` (``CorruptLog``
    for a bad row) when the log does not replay."""
    read_tail = None if whole else getattr(log, "read_tail", None)
    if read_tail is None:
        return _whole(log.read())
    return open_tail(read_tail(), agent_of(log), log.read)


def open_tail(tail: Tail, agent: str, read_whole: Callable[[], Sequence[DurableEvent]]) -> Opened:
    """Fold a ``Tail`` read for ``agent``: from its checkpoint when it is usable, else (one
    warning) the whole log, which ``read_whole`` reads unless the tail holds it already."""
    if tail.checkpoint is None:
        return _whole(tail.events if tail.start == 0 else read_whole())
    try:
        checkpoint = _usable(tail, agent)
        after = tail.events[1:]
        return Opened(LogFold.resume(checkpoint).feed(after), checkpoint.seq, after, checkpoint)
    except _Ignored as why:
        reason = str(why)
    except ReplayError as error:  # a checkpoint no fold of this log could have kept
        reason = f"the events after it do not replay from it ({error})"
    logger.warning(
        "agent %s: its checkpoint is ignored (%s); the whole log is replayed", shown(agent), reason
    )
    return _whole(tail.events if tail.start == 0 else read_whole())


def decode_stored(stored: object, agent: str) -> Checkpoint:
    """The checkpoint a stored cell holds for ``agent``; ``_Ignored`` saying why not."""
    if isinstance(stored, bytes):
        try:
            stored = stored.decode("utf-8")
        except UnicodeDecodeError:
            raise _Ignored("it is not UTF-8 text") from None
    if not isinstance(stored, str):
        raise _Ignored(f"it is not text: {type(stored).__name__}")
    try:
        document = limits.parse_json(stored)
    except (ValueError, InboxCoreError) as error:
        raise _Ignored(f"it is not JSON: {error}") from None
    try:
        return checkpoint_from_json(document, agent)
    except InboxCoreError as error:  # DecodeError: another shape, version or agent
        raise _Ignored(str(error)) from None


def _usable(tail: Tail, agent: str) -> Checkpoint:
    checkpoint = decode_stored(tail.checkpoint, agent)
    if checkpoint.seq - 1 != tail.start:
        raise _Ignored(f"stored at seq {tail.start + 1}, it says seq {checkpoint.seq}")
    if not tail.events:
        raise _Ignored(f"its seq {checkpoint.seq} lies beyond the log's end")
    if not matches(checkpoint, tail.events[0]):
        raise _Ignored(f"it does not match the log's event at seq {checkpoint.seq - 1}")
    return checkpoint


# --------------------------------------------------------------------- keeping


Submit = Callable[[Any, "Checkpoint | None", "Callable[[BaseException | None], None] | None"], None]
"""``submit(log, checkpoint, done)``: hand a checkpoint to a background writer; ``done(error)``
(if given) runs in the submitting event loop once it is written (None) or not; a checkpoint
None is a barrier, done once every earlier one is (``writers.CheckpointWriter``)."""


class Keeper:
    """The owner's checkpoints of one log (R41): a fold of its durable events, and when to
    write what. ``adopt`` is called with every durable write, in order (an eager keeper);
    a lazy one (a ``MemoryLog``) folds the log's own events at ``final``. Never raises into
    the commit path: a checkpoint is a cache, so a failure only stops the keeping."""

    __slots__ = (
        "agent",
        "every",
        "fold",
        "lazy",
        "log",
        "submit",
        "threshold",
        "writing",
        "written",
    )

    def __init__(self, log: Any, opened: Opened, submit: Submit, *, every: int, lazy: bool) -> None:
        self.log = log
        self.agent = agent_of(log)
        self.fold: LogFold | None = opened.fold
        self.submit = submit
        self.every = every
        self.threshold = min(REOPEN_TAIL, every)
        self.lazy = lazy
        self.written = 0 if opened.checkpoint is None else opened.checkpoint.seq
        self.writing = 0  # checkpoints handed to the writer, not written yet

    def adopt(self, events: Sequence[DurableEvent]) -> None:
        """Fold one durable write's events; write a checkpoint every ``every`` events."""
        fold = self.fold
        if fold is None or self.lazy:
            return
        try:
            fold.feed(events)
        except Exception as error:  # a core bug: stop keeping, the log is the authority
            self._stop(error)
            return
        if fold.seq - self.written >= self.every:
            self.write()

    def opened(self) -> None:
        """After opening: write a checkpoint now if the opening folded a long tail."""
        fold = self.fold
        if fold is not None and not self.lazy and fold.seq - self.written >= self.threshold:
            self.write()

    def final(self, done: Callable[[BaseException | None], None]) -> bool:
        """At detach or release: hand the checkpoint of everything durable to the writer if
        the last is ``threshold`` events behind, else a barrier if one may be on its way
        (``done`` runs once it is written, so that nothing is written after the release);
        False: nothing to wait for."""
        fold = self.fold
        if fold is None:
            return self._barrier(done)
        if self.lazy:
            try:
                fold.feed(self.log.read(fold.seq))
            except Exception as error:
                self._stop(error)
                return self._barrier(done)
        if fold.seq - self.written < self.threshold:
            return self._barrier(done)
        return self.write(done)

    def _barrier(self, done: Callable[[BaseException | None], None]) -> bool:
        if not self.writing:
            return False
        self.submit(self.log, None, done)
        return True

    def write(self, done: Callable[[BaseException | None], None] | None = None) -> bool:
        fold = self.fold
        assert fold is not None
        try:
            checkpoint = take(fold)
        except Exception as error:
            self._stop(error)
            return False
        self.written = checkpoint.seq
        self.writing += 1

        def written(error: BaseException | None) -> None:
            self.writing -= 1
            if done is not None:
                done(error)

        self.submit(self.log, checkpoint, written)
        return True

    def _stop(self, error: BaseException) -> None:
        self.fold = None
        logger.error(
            "agent %s: keeping checkpoints failed; none is written from now on",
            shown(self.agent),
            exc_info=error,
        )


# ----------------------------------------------------------------------- hosts


class LogHistory:
    """What a host restores from (SH11, R41): the events read when the agent was opened,
    ``events`` (from seq ``start`` to the log's end then, ``end``), and the earlier ones on
    demand (``before``, ``pages`` of ``page`` events), read from the log (blocking)."""

    __slots__ = ("end", "events", "log", "page", "start")

    def __init__(
        self, log: Any, start: int, events: Sequence[DurableEvent], *, page: int = HISTORY_PAGE
    ) -> None:
        self.log = log
        self.start = start
        self.events = events
        self.end = start + len(events)
        self.page = page

    def before(self, seq: int, count: int) -> list[DurableEvent]:
        """Up to ``count`` events right before seq ``seq``, in log order."""
        first = max(0, seq - count)
        return list(self.log.read(first, seq)) if first < seq else []

    def pages(self) -> Iterator[Sequence[DurableEvent]]:
        """The log backwards: ``events`` first, then pages of ``page`` events before them,
        each in log order, down to seq 0. Stop when you have read enough."""
        if self.events:
            yield self.events
        seq = self.start
        while seq > 0:
            page = self.before(seq, self.page)
            if not page:
                return
            yield page
            seq -= len(page)


# -------------------------------------------------------------------- checking


@attrs.frozen(slots=True)
class Verdict:
    """One stored checkpoint against the replay: ``ok``, else ``why`` it differs."""

    stored_seq: object
    ok: bool
    why: str = ""

    def line(self) -> str:
        where = f"checkpoint at seq {shown(self.stored_seq)}"
        return f"{where}: ok" if self.ok else f"{where}: MISMATCH: {self.why}"


def verify(
    events: Sequence[DurableEvent], stored: Sequence[tuple[object, object]], agent: str
) -> list[Verdict]:
    """Each stored ``(seq, checkpoint)`` of ``agent`` against the fold of ``events`` (a log
    that replays) at that seq: what a reader would use must be exactly what replay keeps."""
    verdicts = []
    for seq, text in stored:
        try:
            checkpoint = decode_stored(text, agent)
        except _Ignored as why:
            verdicts.append(Verdict(seq, False, f"unusable: {why}"))
            continue
        verdicts.append(_compare(events, seq, checkpoint))
    return verdicts


def _compare(events: Sequence[DurableEvent], seq: object, checkpoint: Checkpoint) -> Verdict:
    if seq != checkpoint.seq:
        return Verdict(seq, False, f"stored at seq {shown(seq)}, it says seq {checkpoint.seq}")
    if checkpoint.seq > len(events):
        return Verdict(seq, False, f"beyond the log's end ({len(events)} events)")
    replayed = take(LogFold().feed(events[: checkpoint.seq]))
    if replayed == checkpoint:
        return Verdict(seq, True)
    differ = [
        field.name
        for field in attrs.fields(Checkpoint)
        if getattr(replayed, field.name) != getattr(checkpoint, field.name)
    ]
    return Verdict(seq, False, f"differs from the replay in {', '.join(differ)}")
