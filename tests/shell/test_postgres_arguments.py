"""``PostgresLog`` refuses bad arguments when it is built (R26, R29, SH9): permanent bad input is
``InvalidInput`` at once, before any connection, never a late ``LogUnavailable`` (which reads as
"retry later") or an ``AttributeError``; agent ids have the limits of every store."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from inbox_core import InvalidInput, TurnStarted, limits
from inbox_core.shell import LogUnavailable, PostgresLog, SqliteLog

# nothing listens there: an argument check that needed the server would fail differently
UNREACHABLE = "host=127.0.0.1 port=1 connect_timeout=1"

BAD: dict[str, tuple[Any, Any, dict[str, Any]]] = {
    "agent id past the limit": (UNREACHABLE, "a" * (limits.MAX_AGENT_ID_LENGTH + 1), {}),
    "agent id of 10 MB": (UNREACHABLE, "a" * 10_000_000, {}),
    "NUL in the agent id": (UNREACHABLE, "a\x00b", {}),
    "lone surrogate agent id": (UNREACHABLE, "\udc80", {}),
    "empty agent id": (UNREACHABLE, "", {}),
    "int agent id": (UNREACHABLE, 5, {}),
    "None agent id": (UNREACHABLE, None, {}),
    "lease inf": (UNREACHABLE, "a", {"lease_seconds": float("inf")}),
    "lease nan": (UNREACHABLE, "a", {"lease_seconds": float("nan")}),
    "lease 0": (UNREACHABLE, "a", {"lease_seconds": 0}),
    "lease negative": (UNREACHABLE, "a", {"lease_seconds": -1.0}),
    "lease past a day": (UNREACHABLE, "a", {"lease_seconds": 86_401}),
    "lease of a nanosecond": (UNREACHABLE, "a", {"lease_seconds": 1e-9}),
    "lease str": (UNREACHABLE, "a", {"lease_seconds": "30"}),
    "lease bool": (UNREACHABLE, "a", {"lease_seconds": True}),
    "conninfo None": (None, "a", {}),
    "conninfo int": (5, "a", {}),
    "conninfo bytes": (b"host=x", "a", {}),
    "conninfo malformed": ("not a conninfo", "a", {}),
    "conninfo with NUL": ("host=x\x00", "a", {}),
}


@pytest.mark.parametrize(("conninfo", "agent_id", "options"), BAD.values(), ids=BAD.keys())
def test_R26_bad_arguments_are_invalid_input_before_connecting(
    conninfo: Any, agent_id: Any, options: dict[str, Any]
) -> None:
    """R26, R29: every bad argument raises InvalidInput when the object is built (the server
    is never asked: the conninfo points nowhere), not LogUnavailable or AttributeError."""
    pytest.importorskip("psycopg")
    with pytest.raises(InvalidInput):
        PostgresLog(conninfo, agent_id, **options)


def test_R29_good_arguments_then_reach_the_server() -> None:
    """R29: the same unreachable conninfo with good arguments is LogUnavailable: the checks
    above came first, and a store that cannot be reached is still the typed retryable error."""
    pytest.importorskip("psycopg")
    with pytest.raises(LogUnavailable):
        PostgresLog(UNREACHABLE, "a", lease_seconds=0.5)


def test_R29_a_shared_connection_must_be_autocommit(pg: str) -> None:
    """R29: a shared connection that is not in autocommit mode is InvalidInput."""
    import psycopg

    with psycopg.connect(pg) as conn, pytest.raises(InvalidInput, match="autocommit"):
        PostgresLog(conn, "a")


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(agent_id=st.text(max_size=300))
def test_R29_an_agent_id_works_on_every_store_or_on_none(
    pg: str, tmp_path_factory: pytest.TempPathFactory, agent_id: str
) -> None:
    """R29 (property): the same agent id limits on every store: SqliteLog and PostgresLog both
    refuse it with InvalidInput when built, or both store and read back its events."""
    import psycopg

    sqlite_path = tmp_path_factory.mktemp("ids") / "ids.db"
    outcomes = []
    with psycopg.connect(pg, autocommit=True) as conn:
        for build in (
            lambda: SqliteLog(sqlite_path, agent_id=agent_id),
            lambda: PostgresLog(conn, agent_id),
        ):
            try:
                log = build()
            except InvalidInput:
                outcomes.append("refused")
                continue
            if isinstance(log, PostgresLog):  # an earlier example may have used this id
                for table in ("inbox_core_events", "inbox_core_owners"):
                    conn.execute(f"DELETE FROM {table} WHERE agent_id = %s", (agent_id,))
            log.acquire()
            log.append([TurnStarted(1)])
            assert log.read() == [TurnStarted(1)]
            log.close()
            outcomes.append("stored")
    assert outcomes[0] == outcomes[1]
