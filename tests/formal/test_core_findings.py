"""Core bugs found by the stateful machine, as minimal regression tests.

Each test is the machine's shrunk command sequence. While a bug is open its
test is a strict xfail; once the core is fixed the mark goes.
"""

from __future__ import annotations

import pytest

from inbox_core import (
    AgentDisposed,
    AgentState,
    Cancel,
    Dispose,
    UserMessage,
    followup,
    reduce,
    steer,
)
from inbox_core.testing import NaiveInbox


def m(message_id: str) -> UserMessage:
    return UserMessage(message_id, message_id)


def test_dispose_after_a_cancel_disposes() -> None:
    """Shrunk by the machine: steer(m0); cancel(user); dispose().

    The cancel aborts turn 1 and empties the inbox; Dispose then had nothing
    to clear or abort and emitted no event, and ``_Tx.finish`` returned the old
    state, dropping ``disposed = True``: later commands were accepted (R25, D5).
    Fixed in 08a078c ("silent Dispose kept").
    """
    state = AgentState.initial()
    state = reduce(state, steer(m("m0"))).state
    state = reduce(state, Cancel()).state
    disposed = reduce(state, Dispose())
    assert disposed.state.disposed
    with pytest.raises(AgentDisposed):
        reduce(disposed.state, followup(m("m1")))


def test_the_oracle_disposes_after_a_cancel() -> None:
    """The oracle follows R25 on the same sequence (that is how the bug was found)."""
    oracle = NaiveInbox()
    oracle.apply(steer(m("m0")))
    oracle.apply(Cancel())
    oracle.apply(Dispose())
    assert oracle.disposed
    with pytest.raises(AgentDisposed):
        oracle.apply(followup(m("m1")))
