"""Every Worker and serve option is range-checked when given (R37 v4, R26; issue 28 items 15
and 25): a typed ``InvalidInput`` from the Python API, a one-line usage error (exit 2)
from ``inbox-core serve``, both before the store is opened; ``--host`` takes a module or a
file; ``STORE`` takes a libpq connection string too."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from inbox_core import InvalidInput
from inbox_core.cli import main
from inbox_core.cli.serving import FactoryError, load_factory
from inbox_core.shell import EchoHost, PostgresStore, SqliteStore, Worker, open_store
from inbox_core.shell.durations import MAX_SECONDS
from inbox_core.shell.stores.base import MAX_LEASE_SECONDS, MIN_LEASE_SECONDS
from inbox_core.shell.stores.opening import parse_store
from inbox_core.shell.worker import MAX_AGENTS, MIN_POLL_SECONDS

ROOT = Path(__file__).resolve().parents[2]


def echo(agent_id: str) -> EchoHost:
    return EchoHost()


RANGES: dict[str, tuple[float, float, bool]] = {
    # option: (low, high, low included)
    "idle_seconds": (0.0, MAX_SECONDS, False),
    "poll_seconds": (MIN_POLL_SECONDS, MAX_SECONDS, True),
    "grace": (0.0, MAX_SECONDS, True),
    "lease_seconds": (MIN_LEASE_SECONDS, MAX_LEASE_SECONDS, True),
}


def inside(option: str, value: float) -> bool:
    low, high, closed = RANGES[option]
    return (low <= value if closed else low < value) and value <= high


numbers = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(min_value=-(2**1100), max_value=2**1100),
    st.sampled_from([0, 0.0, -0.0, 1e9, 1e9 + 1, 86_400, 86_400.5, 2**1100, 1e-4, 1e-3]),
)


@settings(max_examples=60, deadline=None)
@given(option=st.sampled_from(sorted(RANGES)), value=numbers)
def test_R26_R37_a_duration_option_is_accepted_exactly_inside_its_range(
    tmp_path_factory: pytest.TempPathFactory, option: str, value: float
) -> None:
    """R26, R37: any int or float for a duration option of ``Worker`` is accepted exactly
    when it lies in the option's documented range, else ``InvalidInput`` naming the
    option (never OverflowError, whatever its size), and the store is not opened."""
    path = tmp_path_factory.mktemp("w") / "a.db"
    if inside(option, value):
        worker = Worker(f"sqlite:{path}", echo, **{option: value})
        worker.store.close()
    else:
        with pytest.raises(InvalidInput, match=option):
            Worker(f"sqlite:{path}", echo, **{option: value})
        assert not path.exists(), "the store is opened only once the options are good"


@pytest.mark.parametrize(
    ("options", "says"),
    [
        ({"max_agents": 0}, "max_agents"),
        ({"max_agents": MAX_AGENTS + 1}, "max_agents"),
        ({"max_agents": 10**30}, "max_agents"),
        ({"max_agents": 2.0}, "max_agents"),
        ({"idle_seconds": 2**1100}, "idle_seconds"),
        ({"poll_seconds": 1e-9}, "poll_seconds"),
        ({"grace": -1}, "grace"),
        ({"grace": "30"}, "grace"),
        ({"lease_seconds": 1e9}, "lease_seconds"),
        ({"lease_seconds": 1e-9}, "lease_seconds"),
        ({"name": ""}, "name"),
        ({"name": "a\nb"}, "name"),
        ({"name": "\ud800"}, "name"),
        ({"name": "x" * 201}, "name"),
        ({"name": 7}, "name"),
    ],
)
def test_R26_R37_out_of_range_worker_options_are_invalid_input(
    tmp_path: Path, options: dict[str, Any], says: str
) -> None:
    """R26, R37: each option out of its range is InvalidInput naming it, the store text
    never opened."""
    with pytest.raises(InvalidInput, match=says):
        Worker(f"sqlite:{tmp_path / 'a.db'}", echo, **options)
    assert not (tmp_path / "a.db").exists()


@pytest.mark.postgres
def test_R37_a_lease_postgres_cannot_hold_is_refused_when_the_worker_is_built(pg: str) -> None:
    """R37 (issue 28 item 15): ``Worker(PostgresStore, lease_seconds=1e9)`` used to be
    accepted and then fail every opening; it is InvalidInput at once. A day is accepted."""
    store = PostgresStore(pg)
    try:
        with pytest.raises(InvalidInput, match="lease_seconds"):
            Worker(store, echo, lease_seconds=1e9)
        Worker(store, echo, lease_seconds=MAX_LEASE_SECONDS)
    finally:
        store.close()


@pytest.mark.parametrize(
    "option",
    [
        ["--lease-seconds", "1e9"],
        ["--lease-seconds", "1e-9"],
        ["--max-agents", "1" + "0" * 30],
        ["--idle-seconds", "1e300"],
        ["--poll-seconds", "1e-9"],
        ["--stats-seconds", "1e10"],
        ["--stats-seconds", "1e-9"],
        ["--grace", "-1"],
        ["--grace", "nan"],
        ["--name", ""],
    ],
    ids=lambda option: " ".join(option)[:24],
)
def test_R37_serve_refuses_an_option_out_of_range_with_one_line_exit_2(
    tmp_path: Path, option: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    """R37 (issue 28 item 15): an option out of range is a usage error (exit 2) with one
    line on standard error, no traceback, and the store is not touched; the signal
    handlers serve installs are put back."""
    path = tmp_path / "agents.db"
    handlers = [signal.getsignal(signum) for signum in (signal.SIGTERM, signal.SIGINT)]
    code = main(["serve", f"sqlite:{path}", "--host", "inbox_core.shell.echo:EchoHost", *option])
    err = capsys.readouterr().err
    assert code == 2, err
    said = [line for line in err.splitlines() if line.startswith("inbox-core serve:")]
    assert len(said) == 1, err  # one line (argparse prints its usage before it)
    assert err.rstrip("\n").splitlines()[-1] == said[0]
    assert "Traceback" not in err
    assert not path.exists()
    assert [signal.getsignal(signum) for signum in (signal.SIGTERM, signal.SIGINT)] == handlers


# ------------------------------------------------------------------------ --host


def test_R37_host_takes_a_path_to_a_python_file(tmp_path: Path) -> None:
    """R37 (issue 28 item 25): ``--host path/to/file.py:FACTORY`` loads that file (its
    directory importable, for its own imports) instead of failing with "the 'package'
    argument is required"."""
    folder = tmp_path / "hosts"
    folder.mkdir()
    (folder / "helper_for_hosts_xyz.py").write_text("VALUE = 41\n")
    (folder / "file_hosts_xyz.py").write_text(
        "import helper_for_hosts_xyz\n"
        "from inbox_core.shell import EchoHost\n"
        "class Made:\n"
        "    @staticmethod\n"
        "    def host(agent_id):\n"
        "        return EchoHost(delay=helper_for_hosts_xyz.VALUE - 41)\n"
    )
    factory = load_factory(f"{folder / 'file_hosts_xyz.py'}:Made.host")
    assert isinstance(factory("a"), EchoHost)
    again = load_factory(f"{folder / 'file_hosts_xyz.py'}:Made.host")  # the same module
    assert again is factory


@pytest.mark.parametrize(
    ("spec", "says"),
    [
        ("./no_such_file.py:make", "is not a Python file"),
        (".relative:make", "relative module name"),
        ("json.py:loads", "is not a Python file"),
        ("nothing", "MODULE:FACTORY (an importable module"),
    ],
)
def test_R37_host_says_what_form_is_expected(spec: str, says: str) -> None:
    """R37: a --host that is neither form says which forms are expected."""
    with pytest.raises(FactoryError, match=re.escape(says)):
        load_factory(spec)


def test_R37_a_host_file_that_shadows_an_imported_module_is_refused(tmp_path: Path) -> None:
    """R37: a file named like a module already imported (json.py) would load the wrong
    code: refused, saying so."""
    (tmp_path / "json.py").write_text("def make(agent_id):\n    return None\n")
    with pytest.raises(FactoryError, match="already imported"):
        load_factory(f"{tmp_path / 'json.py'}:make")


def test_R37_serve_runs_a_factory_from_a_file_path(tmp_path: Path) -> None:
    """R37: ``inbox-core serve STORE --host sub/hosts.py:FACTORY`` from another directory
    serves (its post is applied), then exits 0 on SIGTERM."""
    import time

    from inbox_core import followup
    from inbox_core.shell import PostApplied

    from .support import msg

    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "path_hosts_abc.py").write_text(
        "from inbox_core.shell import EchoHost\ndef make(agent_id):\n    return EchoHost()\n"
    )
    path = tmp_path / "agents.db"
    store = SqliteStore(path)
    proc = subprocess.Popen(
        [
            *(sys.executable, "-m", "inbox_core", "serve", f"sqlite:{path}"),
            *("--host", "sub/path_hosts_abc.py:make", "--poll-seconds", "0.05"),
        ],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        receipt = store.post("a", followup(msg("hi")))
        deadline = time.monotonic() + 30
        while store.outcome(receipt) != PostApplied() and proc.poll() is None:
            assert time.monotonic() < deadline, "not served"
            time.sleep(0.05)
        assert proc.poll() is None, proc.communicate()[1]
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
        assert proc.returncode == 0, err
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        store.close()


# ----------------------------------------------------------------------- STORE


@pytest.mark.parametrize(
    ("spec", "kind"),
    [
        ("host=db dbname=agents", "postgresql"),
        ("  dbname=agents user=app", "postgresql"),
        ("postgresql://app@db/agents", "postgresql"),
        ("postgres://db", "postgresql"),
        ("sqlite:a=b.db", "sqlite"),
    ],
)
def test_R35_a_store_is_named_by_a_url_or_a_libpq_string(spec: str, kind: str) -> None:
    """R35 (issue 28 item 25): ``parse_store`` takes both forms ``PostgresStore`` takes."""
    assert parse_store(spec)[0] == kind


@pytest.mark.parametrize(
    "spec",
    ["agents.db", "mysql://x", "= nothing", "", 10**5000, None],
    ids=["path", "mysql", "equals", "empty", "huge-int", "none"],
)
def test_R26_what_is_no_store_is_invalid_input(spec: Any) -> None:
    """R26: anything else is InvalidInput (a huge int included: no ValueError from repr)."""
    with pytest.raises(InvalidInput, match="a store is"):
        parse_store(spec)


@pytest.mark.postgres
def test_R35_open_store_and_the_worker_take_a_libpq_string(pg: str) -> None:
    """R35, R37: the conninfo the tests' server has (``host=... dbname=...``) opens a
    PostgresStore through ``open_store`` and ``Worker``, as a URL does."""
    assert not pg.startswith("postgres")
    store = open_store(pg)
    try:
        assert isinstance(store, PostgresStore)
    finally:
        store.close()
    worker = Worker(pg, echo)
    assert isinstance(worker.store, PostgresStore)
    worker.store.close()
