"""A throwaway PostgreSQL cluster on loopback, for the PostgresLog tests and benchmark B7.

``Cluster.start()`` runs ``initdb`` and ``pg_ctl start`` with the server
binaries on PATH, in a fresh data directory under the temp dir, listening on
127.0.0.1 at a free port (no Unix socket). PostgreSQL refuses to run as root:
as root, the server runs as the unprivileged user ``inbox_pg`` (created with
``useradd`` if missing). ``python -m tests.shell.pg`` starts one and prints
``export`` lines (``.ci/run`` uses it); ``conninfo`` is what
``INBOX_CORE_TEST_PG`` holds.
"""

from __future__ import annotations

import os
import pwd
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

SERVER_USER = "inbox_pg"
ENV = "INBOX_CORE_TEST_PG"


def binaries_missing() -> str | None:
    """None when ``initdb`` and ``pg_ctl`` are on PATH, else a one-line reason."""
    missing = [name for name in ("initdb", "pg_ctl", "postgres") if shutil.which(name) is None]
    if missing:
        return f"no PostgreSQL server binaries on PATH ({', '.join(missing)}); set {ENV}"
    return None


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _server_user() -> pwd.struct_passwd | None:
    """The user the server runs as: None (ourselves) unless we are root."""
    if os.geteuid() != 0:
        return None
    try:
        return pwd.getpwnam(SERVER_USER)
    except KeyError:
        subprocess.run(
            [
                "useradd",
                "--system",
                "--no-create-home",
                "--shell",
                "/usr/sbin/nologin",
                SERVER_USER,
            ],
            check=True,
            capture_output=True,
        )
        return pwd.getpwnam(SERVER_USER)


class Cluster:
    """One throwaway cluster: ``start``, ``stop``, ``restart``, ``kill``; ``conninfo``."""

    def __init__(self, *, fsync: bool = False, max_connections: int = 200) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="inbox-core-pg-"))
        self.data = self.root / "data"
        self.port = free_port()
        self.fsync = fsync
        self.max_connections = max_connections
        self.user = _server_user()
        self.conninfo = f"host=127.0.0.1 port={self.port} user=postgres dbname=postgres"

    def _run(self, *argv: str, timeout: float = 120) -> None:
        kwargs: dict[str, Any] = {}
        if self.user is not None:
            kwargs = {"user": self.user.pw_uid, "group": self.user.pw_gid, "extra_groups": []}
        proc = subprocess.run(
            list(argv), capture_output=True, text=True, timeout=timeout, check=False, **kwargs
        )
        if proc.returncode != 0:
            log = self.root / "server.log"
            tail = log.read_text(errors="replace")[-2000:] if log.exists() else ""
            raise RuntimeError(
                f"{' '.join(argv)} failed ({proc.returncode}):\n{proc.stdout}{proc.stderr}{tail}"
            )

    def start(self) -> Cluster:
        if self.user is not None:
            os.chown(self.root, self.user.pw_uid, self.user.pw_gid)
        if not self.data.exists():
            self._run(
                "initdb",
                "-D",
                str(self.data),
                "-U",
                "postgres",
                "--auth=trust",
                "-E",
                "UTF8",
                "--no-sync",
                "--no-instructions",
            )
        self._pg_ctl_start()
        return self

    def _pg_ctl_start(self) -> None:
        options = (
            f"-p {self.port} -c listen_addresses=127.0.0.1 -c unix_socket_directories='' "
            f"-c max_connections={self.max_connections} -c fsync={'on' if self.fsync else 'off'}"
        )
        self._run(
            "pg_ctl",
            "-D",
            str(self.data),
            "-l",
            str(self.root / "server.log"),
            "-o",
            options,
            "-w",
            "-t",
            "60",
            "start",
        )

    def stop(self, mode: str = "fast") -> None:
        self._run("pg_ctl", "-D", str(self.data), "-m", mode, "-w", "-t", "60", "stop")

    def restart(self) -> None:
        """Stop (fast: every connection is terminated) and start again on the same port."""
        self.stop("fast")
        self._pg_ctl_start()

    def destroy(self) -> None:
        try:
            pid_file = self.data / "postmaster.pid"
            if pid_file.exists():
                self.stop("immediate")
        finally:
            shutil.rmtree(self.root, ignore_errors=True)


def create_database(conninfo: str, name: str) -> str:
    """Create database ``name`` (fresh: dropped first) and return its conninfo."""
    import psycopg

    with psycopg.connect(conninfo, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')
    return f"{conninfo} dbname={name}"


def wait_ready(conninfo: str, timeout: float = 30.0) -> None:
    import psycopg

    deadline = time.monotonic() + timeout
    while True:
        try:
            psycopg.connect(conninfo, connect_timeout=2).close()
            return
        except psycopg.OperationalError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


def main() -> None:
    """Start a cluster, print ``export`` lines for a shell, wait for SIGTERM, then stop it."""
    reason = binaries_missing()
    if reason:
        sys.exit(reason)
    cluster = Cluster().start()
    print(f"export {ENV}='{cluster.conninfo}'", flush=True)
    print(f"export {ENV}_DATA='{cluster.data}'", flush=True)
    stopping = False

    def stop(_signo: int, _frame: object) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    sys.stdout.close()
    try:
        while not stopping:
            time.sleep(0.2)
    finally:
        cluster.destroy()


if __name__ == "__main__":
    main()
