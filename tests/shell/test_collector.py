"""The worker's use of the cyclic garbage collector (R37, issue 32; specs/shell.md section 13):
``collector.Freezer`` freezes what openings and full collections leave, and gives it back
once enough agents were let go (what died frozen is kept no longer than that)."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator

import pytest

from inbox_core import InvalidInput
from inbox_core.shell import Worker
from inbox_core.shell.collector import UNFREEZE_AFTER, Freezer


@pytest.fixture(autouse=True)
def unfrozen() -> Iterator[None]:
    gc.unfreeze()
    yield
    gc.unfreeze()


def test_R37_an_opening_freezes_the_tracked_objects() -> None:
    freezer = Freezer()
    freezer.look(opened=0, served=0)
    assert gc.get_freeze_count() == 0  # nothing opened, no full collection: nothing to do
    freezer.look(opened=3, served=3)
    assert gc.get_freeze_count() > 0
    freezer.close()
    assert gc.get_freeze_count() == 0


def test_R37_a_full_collection_freezes_its_survivors() -> None:
    freezer = Freezer()
    gc.collect()  # a full collection: what survived it is long-lived
    freezer.look(opened=0, served=10)
    assert gc.get_freeze_count() > 0


def test_R37_agents_let_go_unfreeze_so_their_cycles_can_be_collected() -> None:
    """What died frozen (an agent let go holds cycles) is kept only until enough agents were
    let go: then everything goes back to the collector, and is frozen again after the next
    full collection."""
    freezer = Freezer()
    freezer.look(opened=1, served=1)

    class Cycle:
        def __init__(self) -> None:
            self.me = self

    for _ in range(UNFREEZE_AFTER - 1):
        freezer.let_go()
    freezer.look(opened=0, served=1)
    assert gc.get_freeze_count() > 0
    cycle = Cycle()
    gone = weakref.ref(cycle)
    gc.freeze()  # as if the cycle had been frozen with its agent
    del cycle
    gc.collect()
    assert gone() is not None  # frozen: no collection looks at it
    freezer.let_go()
    freezer.look(opened=0, served=1)
    assert gc.get_freeze_count() == 0
    gc.collect()  # the next full collection
    assert gone() is None
    freezer.look(opened=0, served=1)
    assert gc.get_freeze_count() > 0  # frozen again after that full collection


def test_R37_a_disabled_freezer_leaves_the_collector_alone() -> None:
    freezer = Freezer(enabled=False)
    gc.collect()
    freezer.look(opened=5, served=5)
    assert gc.get_freeze_count() == 0


@pytest.mark.parametrize("bad", [None, 1, "yes"])
def test_R37_freeze_gc_is_a_bool(bad: object, tmp_path: object) -> None:
    with pytest.raises(InvalidInput):
        Worker(f"sqlite:{tmp_path}/w.db", lambda _agent: None, freeze_gc=bad)  # type: ignore[arg-type]
