"""Seeded faults behind the port protocol: ``python -m tests.ports.mutant_port NAME``.

Each mutant is the reference port with one small fault, the kind a port author
makes (R38's proof that the kit finds them): a request read wrong, an answer
with a piece missing, a fold or a projection off by a little. Three more are
broken processes rather than wrong ones (``crash``, ``hang``, ``garbage``),
for the protocol errors of exit 2.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import Any

from inbox_core.port.server import ReferencePort, serve

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
    """Commands read wrong: ``change`` edits the command before the reference applies it."""

    def mutate(port: ReferencePort, request: Document) -> Document:
        if request.get("op") == "apply" and isinstance(request.get("command"), dict):
            change(request["command"])
        return ReferencePort.handle(port, request)

    return mutate


def _answer(op: str, change: Callable[[Document], None]) -> Mutation:
    """Successful answers to ``op`` edited by ``change``."""

    def mutate(port: ReferencePort, request: Document) -> Document:
        answer = ReferencePort.handle(port, request)
        if request.get("op") == op and answer["ok"]:
            change(answer)
        return answer

    return mutate


def _discarding_cancel(command: Document) -> None:
    if command.get("type") == "cancel":
        command["keepInbox"] = False


def _unguarded(command: Document) -> None:
    command.pop("expect", None)


def _clamped_start(command: Document) -> None:
    if command.get("type") == "splice" and isinstance(command.get("start"), int):
        command["start"] = max(command["start"], 0)


def _error_name(port: ReferencePort, request: Document) -> Document:
    answer = ReferencePort.handle(port, request)
    if not answer["ok"] and answer["error"] == "DuplicateMessageId":
        answer["error"] = "InvalidInput"
    return answer


def _last_turn(answer: Document) -> None:
    if answer["projection"]["lastTurn"]:
        answer["projection"]["lastTurn"] += 1


def _first_fate_dropped(answer: Document) -> None:
    answer["fates"] = dict(list(answer["fates"].items())[1:])


def _transcript_reversed(answer: Document) -> None:
    answer["transcript"].reverse()


def _load_drops_last(port: ReferencePort, request: Document) -> Document:
    if request.get("op") == "load" and request.get("log"):
        request = {**request, "log": request["log"][:-1]}
    return ReferencePort.handle(port, request)


MUTANTS: dict[str, Mutation] = {
    "no-turn-abort": _without("turn/abort", "durable"),
    "no-agent-error": _without("agent/error", "notifications"),
    "silent-discard": _without("agent/inbox/discarded", "notifications"),
    "keep-inbox-discards": _rewrite(_discarding_cancel),
    "expect-ignored": _rewrite(_unguarded),
    "duplicate-is-invalid-input": _error_name,
    "last-turn-off-by-one": _answer("projection", _last_turn),
    "fate-dropped": _answer("fold", _first_fate_dropped),
    "transcript-reversed": _answer("fold", _transcript_reversed),
    "load-drops-last-event": _load_drops_last,
}
"""Wrong ports: each must make ``conform`` exit 1 with a short shrunk run."""

VECTORS_ONLY: dict[str, Mutation] = {"splice-start-clamped": _rewrite(_clamped_start)}
"""Wrong ports the vectors find and the default random budget does not (a negative splice
start only differs from 0 on a list of two or more)."""


def _broken(name: str) -> Mutation:
    def mutate(port: ReferencePort, request: Document) -> Document:
        if request.get("op") == "apply":
            if name == "crash":
                print("mutant: giving up", file=sys.stderr)
                sys.exit(3)
            if name == "hang":
                time.sleep(3600)
            if name == "garbage":
                sys.stdout.write("this is not JSON\n")
                sys.stdout.flush()
                return ReferencePort.handle(port, request)
        return ReferencePort.handle(port, request)

    return mutate


BROKEN = ("crash", "hang", "garbage")
"""Broken ports: each must make ``conform`` exit 2 with a one-line reason."""


class MutantPort(ReferencePort):
    name = "mutant"

    def __init__(self, mutation: Mutation) -> None:
        super().__init__()
        self.mutation = mutation

    def handle(self, document: object) -> Document:
        if not isinstance(document, dict):
            return ReferencePort.handle(self, document)
        return self.mutation(self, document)


if __name__ == "__main__":
    chosen = sys.argv[1]
    known = MUTANTS | VECTORS_ONLY
    mutation = known[chosen] if chosen in known else _broken(chosen)
    sys.exit(serve(MutantPort(mutation), sys.stdin, sys.stdout))
