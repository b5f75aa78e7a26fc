"""B8's system under test: inbox_core's mailbox store (issue 19). A slot, to be filled in.

The harness needs exactly what ``base.Mailbox`` names. The intended mapping, once
issue 19's stores land (``SqliteStore(path)``, ``PostgresStore(conninfo)``):

- ``producer().post(agent, payload)``: ``store.post(agent, followup(message))``, the
  payload as the message's text (``json.dumps``), durable when it returns;
- ``consumer().serve(expected, applied)``: one ``LoopAgent`` per agent over the
  store's log, serving its posts; ``applied(agent, json.loads(text))`` when the
  post's ``user/message`` is appended (a subscriber or the store's outcome);
- ``appender()``/``watcher()``: appends to an agent's log by its owner, and
  ``store.watch(agent, since=0)`` in the other process.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, NoReturn

from .base import Appender, Backend, Consumer, Producer, Target, Watcher

MISSING = "InboxCoreMailbox needs issue 19's PostgresStore (and SqliteStore)"


def _missing() -> NoReturn:
    raise NotImplementedError(MISSING)


@dataclass(frozen=True)
class InboxCoreMailbox:
    name: ClassVar[str] = "inbox_core"
    backends: ClassVar[frozenset[Backend]] = frozenset({"postgres", "sqlite"})
    target: Target
    text: str = ""

    def prepare(self) -> None:
        _missing()

    def producer(self) -> Producer:
        _missing()

    def consumer(self) -> Consumer:
        _missing()

    def appender(self) -> Appender | None:
        _missing()

    def watcher(self) -> Watcher | None:
        _missing()

    def describe(self) -> dict[str, str]:
        return {"store": "issue 19 (not built yet)"}
