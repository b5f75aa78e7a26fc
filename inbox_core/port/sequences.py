"""Random runs against a port: ``generate`` draws them, ``compare_run`` judges them (R38).

``search`` plays ``examples`` runs, each drawn from its own ``random.Random`` seeded
with the kit's seed and the run's number, so a search is a pure function of port and
seed (and the kit's version): no Hypothesis, no example database, nothing read from
the environment. On the first divergence the run is shrunk (``shrink``): cut after
the diverging step, then blocks of steps dropped, halves first, while the run still
diverges, then each step made simpler (no records, the first answer, one corruption
of a log); the specs are resolved against the reference as they are played, so a
host answer dropped before another leaves the later one answering what is awaited
then. What is left is printed and saved as a vector.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from typing import Any, Final

import attrs

from inbox_core.port.client import Port, PortFailure
from inbox_core.port.conformance import Divergence, ReferenceRun, compare_run
from inbox_core.port.generate import Spec, draw_run, resolve

Json = Any


@attrs.frozen
class SearchResult:
    """How a search ended: ``runs`` played; the shrunk failing ``steps`` (concrete) and
    their ``divergence`` if the port differed (both None when it agreed throughout)."""

    runs: int
    steps: list[Json] | None = None
    divergence: Divergence | None = None


def run_random(seed: int, run: int) -> random.Random:
    """The generator of run number ``run`` (from 0) of a search with ``seed``."""
    return random.Random(f"inbox-core conform {seed} {run}")


def play(port: Port, specs: list[Spec]) -> tuple[list[Json], Divergence | None]:
    """``specs`` resolved and compared step by step (``compare_run``)."""
    parts = port.parts

    def concrete(spec: Spec, reference: ReferenceRun) -> Json:
        return resolve(spec, reference, parts)

    return compare_run(port, specs, concrete)


def search(
    port: Port,
    *,
    examples: int,
    seed: int,
    max_steps: int,
    progress: Callable[[int], None] = lambda runs: None,
) -> SearchResult:
    """Play ``examples`` random runs on ``port``; the shrunk first divergence, if any.
    ``PortFailure`` if the port breaks the protocol."""
    for run in range(examples):
        specs = draw_run(run_random(seed, run), port.parts, max_steps)
        _, divergence = play(port, specs)
        progress(run + 1)
        if divergence is not None:
            steps, divergence = shrink(port, specs, divergence)
            return SearchResult(run + 1, steps, divergence)
    return SearchResult(examples)


def shrink(port: Port, specs: list[Spec], divergence: Divergence) -> tuple[list[Json], Divergence]:
    """The shortest, simplest run this finds that still diverges, as concrete steps."""

    def diverges(candidate: list[Spec]) -> Divergence | None:
        if not candidate:
            return None
        try:
            return play(port, candidate)[1]
        except PortFailure:  # a candidate the port cannot take is no simpler run
            return None

    def reduce(specs: list[Spec], found: Divergence) -> list[Spec]:
        """Candidates that are smaller (fewer steps, then fewer records, corruptions and
        picks), accepted while they diverge: this ends."""
        best = specs if found.step is None else specs[: found.step + 1]
        improved = True
        while improved:
            improved = False
            for candidate in _smaller(best):
                if (found := diverges(candidate)) is not None:  # type: ignore[assignment]
                    best = candidate if found.step is None else candidate[: found.step + 1]
                    improved = True
                    break
        return best

    best = reduce(specs, divergence)
    improved = True
    while improved:  # another host answer may let later steps go (a failure for an enter)
        improved = False
        for index, pick, candidate in _other_answers(best):
            found = diverges(candidate)
            if found is not None and len(shorter := reduce(candidate, found)) < len(best):
                best, improved = shorter, True
                break
            del index, pick
    steps, found = play(port, best)
    if found is None:  # a port that answers the same run differently each time
        steps, found = play(port, specs)
    return steps, found or divergence


def _smaller(specs: list[Spec]) -> Iterator[list[Spec]]:
    """Runs smaller than ``specs``: blocks of steps dropped (halves, quarters, ..., single
    steps, the later first), then one step made simpler."""
    size = len(specs) // 2
    while size >= 1:
        for start in reversed(range(len(specs) - size + 1)):
            yield specs[:start] + specs[start + size :]
        size //= 2
    for index, spec in enumerate(specs):
        for simpler in _simpler(spec):
            yield [*specs[:index], simpler, *specs[index + 1 :]]


_PLAIN_LOAD: Final = [["none", 0, 0]]


def _simpler(spec: Spec) -> Iterator[Spec]:
    """``spec`` made simpler one way (each way ends: records go, a guard or a pick goes, a
    send becomes a followup without contexts of a plain message, a load loses its
    corruptions, then becomes a crash)."""
    if spec.get("records"):
        yield {**spec, "records": []}
    kind = spec["kind"]
    if kind == "caller":
        command = spec["command"]
        if "pick" in spec:
            yield {key: value for key, value in spec.items() if key != "pick"}
        if "expect" in command:
            yield {**spec, "command": {k: v for k, v in command.items() if k != "expect"}}
        if command["type"] == "send":
            data = command["input"]
            plain = _plain(data["message"])
            followup = {"message": plain, "contexts": [], "target": "next-turn", "wakeup": True}
            for simpler in ({**data, "contexts": []}, {**data, "message": plain}, followup):
                if simpler != data and (simpler is not followup or not data["contexts"]):
                    yield {**spec, "command": {**command, "input": simpler}}
    if kind == "load" and spec["ops"] != _PLAIN_LOAD:
        yield from ({**spec, "ops": [op]} for op in spec["ops"] if len(spec["ops"]) > 1)
        yield {**spec, "ops": _PLAIN_LOAD}
    if kind == "load" and spec["ops"] == _PLAIN_LOAD:
        yield {"kind": "crash"}


def _plain(message: Json) -> Json:
    """The message with its id only: its id as text, a user's."""
    text = [{"type": "text", "text": message["id"]}]
    return {"id": message["id"], "role": "user", "content": text, "source": {"kind": "user"}}


def _other_answers(specs: list[Spec]) -> Iterator[tuple[int, int, list[Spec]]]:
    """``specs`` with one host answer swapped for another (not smaller by itself: kept only
    when the run then shrinks further)."""
    for index, spec in enumerate(specs):
        if spec["kind"] == "answer":
            for pick in range(5):
                if pick != spec["pick"] % 5:
                    yield index, pick, [*specs[:index], {**spec, "pick": pick}, *specs[index + 1 :]]
