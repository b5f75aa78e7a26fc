"""Running a Python child as a user who may not write (or read) what root may (SH9, O1).

Root bypasses file permissions, so the tests of read-only directories run their
reader as the unprivileged user ``inbox_pg`` (``setpriv``; created with
``useradd`` if missing, as tests/shell/pg.py does). That user must not depend on
the permissions of the directories above the clone: a clone (and its virtualenv)
in a private directory (``mktemp -d``, ``/root``) is unreadable to it. So the
child runs from a *runtime* this module prepares once per session, in a
world-readable temporary directory: a copy of the ``inbox_core`` package and of
every third-party package it imports when loaded, as the child's
``PYTHONPATH``, run by an interpreter of the same version that user can execute:
the base interpreter behind ``sys.executable`` (a venv's ``bin/python`` is a link
into the clone), else the system's. If there is none, the test skips naming the
cause, or fails under ``CI=true``, where it must run.
"""

from __future__ import annotations

import atexit
import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Final

import pytest

__all__ = ["as_unprivileged"]

ROOT: Final = Path(__file__).resolve().parents[2]
_PROBE: Final = """
import sys
import inbox_core.cli, inbox_core.shell, inbox_core.shell.stores.sqlite.log
names = set()
for name, module in list(sys.modules.items()):
    parts = set((getattr(module, "__file__", None) or "").replace("\\\\", "/").split("/"))
    top = name.partition(".")[0]
    if parts & {"site-packages", "dist-packages"} and not top.startswith("__editable__"):
        names.add(top)
print(" ".join(sorted(names - {"inbox_core"})))
"""
_cache: dict[str, tuple[str, str]] = {}


def _fail_or_skip(reason: str) -> None:
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"under CI=true the unprivileged tests must run: {reason}", pytrace=False)
    pytest.skip(reason)


def _user_ids() -> list[str]:
    from .pg import _server_user  # the same user the PostgreSQL server runs as

    try:
        user = _server_user()
    except (OSError, subprocess.CalledProcessError) as error:
        _fail_or_skip(f"running as root with no unprivileged user inbox_pg ({error})")
        raise AssertionError("unreachable") from None
    assert user is not None  # only asked as root
    return [f"--reuid={user.pw_uid}", f"--regid={user.pw_gid}", "--clear-groups"]


def _copy_module(name: str, into: Path) -> None:
    spec = importlib.util.find_spec(name)
    if spec is None:
        raise RuntimeError(f"cannot find module {name!r} to copy")
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    if spec.submodule_search_locations:
        shutil.copytree(next(iter(spec.submodule_search_locations)), into / name, ignore=ignore)
    elif spec.origin:
        shutil.copy2(spec.origin, into / Path(spec.origin).name)


_CHECK: Final = (
    "import sys, inbox_core.cli, inbox_core.shell; "
    f"assert sys.version_info[:2] == {tuple(sys.version_info[:2])!r}"
)


def _interpreters() -> list[str]:
    """Pythons of this version to try, the one behind ``sys.executable`` first (it may live
    in a private directory: a pyenv under /root), then the system's."""
    version = f"python{sys.version_info[0]}.{sys.version_info[1]}"
    found = [
        os.path.realpath(getattr(sys, "_base_executable", None) or sys.executable),
        sys.executable,
        *(os.path.join(folder, version) for folder in ("/usr/local/bin", "/usr/bin", "/bin")),
    ]
    return [path for index, path in enumerate(found) if path not in found[:index]]


def _with_path(pythonpath: str, python: str) -> list[str]:
    """``python`` with ``PYTHONPATH`` set to ``pythonpath``, whatever the caller's is."""
    return [shutil.which("env") or "/usr/bin/env", f"PYTHONPATH={pythonpath}", python]


def _runtime(setpriv: str, ids: list[str]) -> tuple[str, str]:
    """``(python, pythonpath)`` the unprivileged user can run: prepared once, checked once."""
    if "runtime" in _cache:
        return _cache["runtime"]
    probe = subprocess.run(
        [sys.executable, "-c", _PROBE], capture_output=True, text=True, check=True, timeout=60
    )
    folder = Path(tempfile.mkdtemp(prefix="inbox-core-unprivileged-", dir="/tmp"))
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    shutil.copytree(
        ROOT / "inbox_core", folder / "inbox_core", ignore=shutil.ignore_patterns("__pycache__")
    )
    for name in probe.stdout.split():
        _copy_module(name, folder)
    for path in (folder, *folder.rglob("*")):
        path.chmod(0o755 if path.is_dir() else 0o644)
    python, problems = None, []
    for candidate in _interpreters():
        check = subprocess.run(
            [setpriv, *ids, *_with_path(str(folder), candidate), "-c", _CHECK],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
            cwd="/",
        )
        if check.returncode == 0:
            python = candidate
            break
        problems.append(f"{candidate}: {(check.stderr.strip().splitlines() or ['?'])[-1]}")
    if python is None:
        _fail_or_skip(f"the unprivileged user can run no Python with inbox_core: {problems}")
        raise AssertionError("unreachable")
    _cache["runtime"] = (python, str(folder))
    return _cache["runtime"]


def as_unprivileged(argv: list[str]) -> list[str]:
    """``argv`` run as a user who cannot write the test's files (root bypasses permissions).
    A Python child (``argv[0]`` is ``sys.executable``) runs from the session's runtime: its
    ``PYTHONPATH`` (whatever the caller's environment says) is the readable copy."""
    if os.geteuid() != 0:
        return argv
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        _fail_or_skip("running as root without setpriv (util-linux) to drop privileges")
        raise AssertionError("unreachable")
    ids = _user_ids()
    if argv and argv[0] == sys.executable:
        python, path = _runtime(setpriv, ids)
        argv = [*_with_path(path, python), *argv[1:]]
    return [setpriv, *ids, *argv]
