"""How the command line starts (issue 37 item 8, issue 41): ``--help`` imports only the parser,
``--version`` says the installed version, and a signal while ``serve`` or ``http`` is still
importing and opening stops it cleanly (exit 0), never kills it.

The signal is sent by the child itself, from an audit hook, at the moment an ``import``
statement begins to import one of the modules named below (the parser, the command's module,
the shell, the store, the HTTP stack): so each test hits the start exactly where a user's
Ctrl-C or a supervisor's SIGTERM could, with no timing guess. Before the handlers were
installed first thing, every case died of the signal (status -15 or -2).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from tests.shell.pg import free_port

ROOT = Path(__file__).resolve().parents[2]

CHILD = """
import json, os, signal, sys, threading
target, signum, argv = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
fired = []
timer = threading.Timer(90, os._exit, (99,))  # never signalled: a failure, not a hang
timer.daemon = True
timer.start()

def hook(event, args):
    if event == "import" and args[0] == target and not fired:
        fired.append(target)
        os.kill(os.getpid(), signum)

sys.addaudithook(hook)
from inbox_core.cli import main
status = main(argv)
print(json.dumps({"fired": fired, "status": status}))
sys.exit(status)
"""


def _child(target: str, signum: int, *argv: str, tmp: Path) -> tuple[int, dict[str, object], str]:
    done = subprocess.run(
        [sys.executable, "-c", CHILD, target, str(int(signum)), *argv],
        capture_output=True,
        text=True,
        cwd=tmp,
        timeout=120,
        check=False,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    report = json.loads(done.stdout.splitlines()[-1]) if done.stdout.strip() else {}
    return done.returncode, report, done.stderr


SERVE_MODULES = [  # imported by an import statement (importlib.import_module raises no event)
    "inbox_core.cli.parser",
    "inbox_core.cli.frontdoor",
    "inbox_core.shell.worker",
    "inbox_core.shell.stores.sqlite.store",
    "uvicorn",
    "inbox_core.http.app",
]
HTTP_MODULES = [
    "inbox_core.cli.parser",
    "inbox_core.cli.stores",
    "inbox_core.shell.stores.sqlite.store",
    "uvicorn",
    "starlette.applications",
    "inbox_core.http.app",
]


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["TERM", "INT"])
@pytest.mark.parametrize("module", SERVE_MODULES)
def test_r37_r39_a_signal_while_serve_starts_stops_it_with_exit_0(
    tmp_path: Path, module: str, signum: int
) -> None:
    """R37, R39 (issue 37 item 8): ``serve --http`` signalled while it imports ``module``
    stops and exits 0 (its worker stopped before it served, its store closed)."""
    status, report, err = _child(
        module,
        signum,
        "serve",
        f"sqlite:{tmp_path / 'agents.db'}",
        "--host",
        "inbox_core.shell.echo:echo_host",
        "--http",
        f"127.0.0.1:{free_port()}",
        tmp=tmp_path,
    )
    assert report.get("fired") == [module], (status, err[-2000:])
    assert status == 0, err[-2000:]
    assert "Traceback" not in err


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["TERM", "INT"])
@pytest.mark.parametrize("module", HTTP_MODULES)
def test_r39_a_signal_while_http_starts_stops_it_with_exit_0(
    tmp_path: Path, module: str, signum: int
) -> None:
    """R39 (issue 37 item 8): ``http`` signalled while it imports ``module`` exits 0."""
    status, report, err = _child(
        module,
        signum,
        "http",
        f"sqlite:{tmp_path / 'agents.db'}",
        "--bind",
        f"127.0.0.1:{free_port()}",
        tmp=tmp_path,
    )
    assert report.get("fired") == [module], (status, err[-2000:])
    assert status == 0, err[-2000:]
    assert "Traceback" not in err


LISTING = """
import json, sys
from inbox_core.cli import main
before = set(sys.modules)
status = main(sys.argv[1:])
print(json.dumps({"status": status, "new": sorted(set(sys.modules) - before)}), file=sys.stderr)
"""

HEAVY = ("inbox_core.shell", "inbox_core.http", "inbox_core.port", "inbox_core.testing")
THIRD_PARTY = ("starlette", "uvicorn", "psycopg", "hypothesis", "pydantic_ai", "prometheus_client")


def _imported(*argv: str) -> tuple[int, list[str]]:
    done = subprocess.run(
        [sys.executable, "-c", LISTING, *argv],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
        check=False,
    )
    report = json.loads(done.stderr.strip().splitlines()[-1])
    return int(report["status"]), list(report["new"])


@pytest.mark.parametrize(
    "argv",
    [["--help"], ["post", "--help"], ["serve", "--help"], ["http", "--help"], ["nonsense"]],
    ids=["help", "post-help", "serve-help", "http-help", "usage-error"],
)
def test_issue41_help_and_usage_errors_import_no_command(argv: list[str]) -> None:
    """Issue 41 (start fast): ``--help``, a command's ``--help`` and a usage error import
    the parser and argparse's own modules, never a command's module, the shell, the HTTP
    stack, the port kit, the testing kit or an optional dependency (``serve --help`` reads
    one default from the shell, ``--checkpoint-every``'s; every help the front door's
    default bounds, ``inbox_core.http.defaults``, standard library only)."""
    status, new = _imported(*argv)
    assert status in (0, 2)
    ours = {name for name in new if name.startswith("inbox_core.cli.")}
    allowed = {"inbox_core.cli.arguments", "inbox_core.cli.help", "inbox_core.cli.output"}
    allowed.add("inbox_core.cli.parser")
    if argv[0] in ("serve", "http"):
        allowed.add("inbox_core.cli.shutdown")  # the signals are taken before parsing
    assert ours <= allowed, sorted(ours - allowed)
    light = {"inbox_core.http", "inbox_core.http.defaults"}  # the bounds the help shows
    if argv[0] != "serve":
        assert not [name for name in new if name.startswith(HEAVY) and name not in light], new
    assert not [name for name in new if name.split(".")[0] in THIRD_PARTY], new


def test_issue37_version_prints_the_installed_version(capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 37 (tried as a new user would): ``inbox-core --version`` prints the version of
    the installed distribution (pyproject.toml's) and exits 0."""
    from inbox_core.cli import main

    assert main(["--version"]) == 0
    version = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    assert capsys.readouterr().out == f"inbox-core {version}\n"
