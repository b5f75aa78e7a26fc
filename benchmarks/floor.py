"""B6: the floor. A minimal *mutable* agent doing the B1 work, as a yardstick only.

It keeps the two pending lists in ``collections.deque`` and the MessageId index
in a ``dict``, mutates them in place, and still does what the core must do per
command: check ids for uniqueness, keep waking counts, claim at boundaries,
check that a report answers what is awaited, and emit durable events and live
notifications (as plain tuples, into fresh lists per command, like a
``Transition``). It validates nothing else, keeps no history, cannot replay and
is not a correct implementation of the brief: it is the cheapest plausible way
to do the same bookkeeping in Python, so that every core figure can be given as
a multiple of it, measured in the same run on the same machine.
"""

from __future__ import annotations

from collections import deque
from typing import Any

Event = tuple[Any, ...]


class FloorAgent:
    """Mutable deque + dict implementation of send / claim / step / turn end."""

    __slots__ = (
        "next_turn",
        "next_step",
        "index",
        "waking_turn",
        "waking_step",
        "status",
        "last_turn",
        "step",
        "awaiting",
    )

    def __init__(self) -> None:
        self.next_turn: deque[tuple[Any, tuple[Any, ...], bool]] = deque()
        self.next_step: deque[tuple[Any, tuple[Any, ...], bool]] = deque()
        self.index: dict[str, str] = {}
        self.waking_turn = 0
        self.waking_step = 0
        self.status = "idle"
        self.last_turn = 0
        self.step = 0
        self.awaiting: tuple[Any, ...] | None = None

    # ------------------------------------------------------------- commands

    def send(
        self, target: str, message: Any, contexts: tuple[Any, ...], wakeup: bool
    ) -> tuple[list[Event], list[Event]]:
        """Append one entry (unique ids), then wake if idle: the work of ``Send``."""
        index = self.index
        for m in (*contexts, message):
            if m.id in index:
                raise ValueError(f"duplicate id {m.id}")
        for m in (*contexts, message):
            index[m.id] = target
        entry = (message, contexts, wakeup)
        durable: list[Event] = []
        notes: list[Event] = []
        if target == "next-turn":
            durable.append(("spliced", target, len(self.next_turn), 0, (entry,), None))
            self.next_turn.append(entry)
            self.waking_turn += wakeup
        else:
            durable.append(("spliced", target, len(self.next_step), 0, (entry,), None))
            self.next_step.append(entry)
            self.waking_step += wakeup
        notes.extend(("inserted", m) for m in (*contexts, message))
        if self.status == "idle" and (self.waking_turn or self.waking_step):
            self._open_turn(durable, notes)
        return durable, notes

    def pre_step_decided(
        self, turn: int, step: int, messages: tuple[Any, ...]
    ) -> tuple[list[Event], list[Event]]:
        """``PreStepDecided(Enter(messages))``: step/start and one user/message each."""
        awaiting = self.awaiting
        if awaiting is None or awaiting[:3] != ("pre-step", turn, step):
            raise ValueError("unexpected report")
        durable: list[Event] = [("step/start", turn, step)]
        durable.extend(("user/message", m) for m in messages)
        self.step = step
        self.awaiting = ("step", turn, step)
        return durable, []

    def step_finished(self, turn: int, step: int) -> tuple[list[Event], list[Event]]:
        """``StepFinished(Completed())``: step/end, then steer or turn-stopping."""
        if self.awaiting != ("step", turn, step):
            raise ValueError("unexpected report")
        durable: list[Event] = [("step/end", turn, step)]
        notes: list[Event] = []
        if self.waking_step:
            self._claim(durable, notes, at_turn_start=False)
        else:
            self.awaiting = ("turn-stopping", turn)
        return durable, notes

    def turn_stopping_done(self, turn: int) -> tuple[list[Event], list[Event]]:
        """``TurnStoppingDone``: end the turn, open the next one for waking work."""
        if self.awaiting != ("turn-stopping", turn):
            raise ValueError("unexpected report")
        durable: list[Event] = []
        notes: list[Event] = []
        if self.waking_step:
            self._claim(durable, notes, at_turn_start=False)
            return durable, notes
        durable.append(("turn/end", turn, "completed"))
        self.awaiting = None
        if self.waking_turn or self.waking_step:
            self._open_turn(durable, notes)
        else:
            self.status = "idle"
            notes.append(("status", "idle"))
        return durable, notes

    def replace(self, message_id: str, message: Any) -> bool:
        """Swap one pending entry's message in place (linear search: a deque has no index)."""
        target = self.index.get(message_id)
        if target is None:
            return False
        entries = self.next_turn if target == "next-turn" else self.next_step
        for position, entry in enumerate(entries):
            if entry[0].id == message_id:
                entries[position] = (message, entry[1], entry[2])
                del self.index[message_id]
                self.index[message.id] = target
                return True
        raise AssertionError("index out of sync")  # pragma: no cover

    # ------------------------------------------------------------- internals

    def _open_turn(self, durable: list[Event], notes: list[Event]) -> None:
        if self.status != "running":
            self.status = "running"
            notes.append(("status", "running"))
        self.last_turn += 1
        self.step = 0
        durable.append(("turn/start", self.last_turn))
        self._claim(durable, notes, at_turn_start=True)

    def _claim(self, durable: list[Event], notes: list[Event], *, at_turn_start: bool) -> None:
        index = self.index
        turn = self.last_turn
        batch: list[Any] = []
        if self.next_step:
            claimed = tuple(self.next_step)
            self.next_step.clear()
            self.waking_step = 0
            durable.append(("spliced", "next-step", 0, len(claimed), (), None))
            for _message, contexts, _wakeup in claimed:
                batch.extend(contexts)
                batch.append(_message)
        if at_turn_start and self.next_turn:
            message, contexts, wakeup = self.next_turn.popleft()
            self.waking_turn -= wakeup
            durable.append(("spliced", "next-turn", 0, 1, (), None))
            batch.extend(contexts)
            batch.append(message)
        for m in batch:
            del index[m.id]
            notes.append(("claimed", m, turn))
        self.awaiting = ("pre-step", turn, self.step + 1, tuple(batch))
