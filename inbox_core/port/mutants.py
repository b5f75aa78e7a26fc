"""Seeded faults: the reference with one fault each (R38 v4), ``--mutant NAME``.

``python -m inbox_core.port --mutant NAME`` is the reference port with the fault
``NAME``: the kind a port author makes (a request read wrong, an answer with a
piece missing, a projection or a fold off by a little, a log loaded too kindly, a
malformed command given the wrong error). They are the kit's proof: its random
phase finds each within 50 runs on any seed and shrinks it to at most three steps
(``tests/ports/test_mutants.py``). Never a port to ship.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

from inbox_core.codec import COMMAND
from inbox_core.errors import InboxCoreError
from inbox_core.port.server import ReferencePort

Document = dict[str, Any]
Mutation = Callable[[ReferencePort, Document], Document]


def _without(kind: str, key: str) -> Mutation:
    """Answers whose ``key`` list lacks every item of type ``kind``."""

    def mutate(port: ReferencePort, request: Document) -> Document:
        answer = ReferencePort.handle(port, request)
        if request.get("op") == "apply" and answer["ok"]:
            answer[key] = [item for item in answer[key] if item["type"] != kind]
        return answer

    return mutate


def _rewrite(change: Callable[[Document], None]) -> Mutation:
    """Commands read wrong: ``change`` edits a well-formed command before it is applied."""

    def mutate(port: ReferencePort, request: Document) -> Document:
        if request.get("op") == "apply" and isinstance(request.get("command"), dict):
            change(request["command"])
        return ReferencePort.handle(port, request)

    return mutate


def _answer(op: str, change: Callable[[Document], None]) -> Mutation:
    """Answers to ``op`` edited by ``change``."""

    def mutate(port: ReferencePort, request: Document) -> Document:
        answer = ReferencePort.handle(port, request)
        if request.get("op") == op:
            change(answer)
        return answer

    return mutate


def _discarding_cancel(command: Document) -> None:
    if command.get("type") == "cancel" and command.get("keepInbox") is True:
        command["keepInbox"] = False


def _unguarded(command: Document) -> None:
    command.pop("expect", None)


def _error_name(answer: Document) -> None:
    if not answer["ok"] and answer["error"] == "DuplicateMessageId":
        answer["error"] = "InvalidInput"


def _last_turn(answer: Document) -> None:
    if answer["ok"] and answer["projection"]["lastTurn"]:
        answer["projection"]["lastTurn"] += 1


def _open_step(answer: Document) -> None:
    """A port that counts the step a pre-step decides about as open already."""
    awaiting = answer["projection"]["awaiting"] if answer["ok"] else None
    if awaiting and awaiting["kind"] == "pre-step":
        answer["projection"]["openStep"] = awaiting["step"]


def _first_fate_dropped(answer: Document) -> None:
    if answer["ok"]:
        answer["fates"] = dict(list(answer["fates"].items())[1:])


def _transcript_reversed(answer: Document) -> None:
    if answer["ok"]:
        answer["transcript"].reverse()


def _seq_off_by_one(answer: Document) -> None:
    if not answer["ok"] and answer["error"] == "ReplayError":
        answer["seq"] += 1


def _drops_last_event(port: ReferencePort, request: Document) -> Document:
    if request.get("op") == "load" and request.get("log"):
        request = {**request, "log": request["log"][:-1]}
    return ReferencePort.handle(port, request)


def _ignores_seq(port: ReferencePort, request: Document) -> Document:
    """A port that reads log records without looking at their seq."""
    if request.get("op") == "load" and isinstance(request.get("log"), list):
        log = [_no_seq(record) for record in request["log"]]
        request = {**request, "log": log}
    return ReferencePort.handle(port, request)


def _no_seq(record: object) -> object:
    if isinstance(record, dict):
        return {key: value for key, value in record.items() if key != "seq"}
    return record


def _shape_is_invalid_input(answer: Document) -> None:
    """A port that names every rejection of a command it knows ``InvalidInput``, shape
    errors included (what the JavaScript example did before D40)."""
    if not answer["ok"] and answer["error"] == "DecodeError":
        answer["error"] = "InvalidInput"


def _first_error_wins(port: ReferencePort, request: Document) -> Document:
    """A port that decodes field by field and reports the first error it meets, so a value
    error before a shape error hides it (D40 says the shape wins)."""
    if request.get("op") == "apply" and isinstance(request.get("command"), dict):
        try:
            COMMAND.build(request["command"])
        except InboxCoreError as error:
            return {"ok": False, "error": type(error).__name__, "message": str(error)}
    return ReferencePort.handle(port, request)


MUTANTS: Final[dict[str, Mutation]] = {
    "no-turn-abort": _without("turn/abort", "durable"),
    "no-agent-error": _without("agent/error", "notifications"),
    "silent-discard": _without("agent/inbox/discarded", "notifications"),
    "keep-inbox-discards": _rewrite(_discarding_cancel),
    "expect-ignored": _rewrite(_unguarded),
    "duplicate-is-invalid-input": _answer("apply", _error_name),
    "last-turn-off-by-one": _answer("projection", _last_turn),
    "open-step-at-pre-step": _answer("projection", _open_step),
    "fate-dropped": _answer("fold", _first_fate_dropped),
    "transcript-reversed": _answer("fold", _transcript_reversed),
    "load-drops-last-event": _drops_last_event,
    "load-ignores-seq": _ignores_seq,
    "replay-error-seq-off-by-one": _answer("load", _seq_off_by_one),
    "shape-error-is-invalid-input": _answer("apply", _shape_is_invalid_input),
    "first-error-wins": _first_error_wins,
}
"""The seeded faults: each makes ``conform`` exit 1 with a short shrunk run."""


class MutantPort(ReferencePort):
    """The reference with the fault ``MUTANTS[name]``."""

    def __init__(self, name: str) -> None:
        super().__init__()
        self.name = f"inbox-core reference with the seeded fault {name}"
        self.mutation = MUTANTS[name]

    def handle(self, document: object) -> Document:
        if not isinstance(document, dict):
            return ReferencePort.handle(self, document)
        return self.mutation(self, document)
