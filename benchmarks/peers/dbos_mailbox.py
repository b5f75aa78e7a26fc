"""B8's peer: DBOS Transact's ``send``/``recv`` on the same PostgreSQL server.

Requires ``pip install dbos``.

A benchmark-only dependency: not in the package's dependencies nor in the dev
extra. Without it, ``prepare`` raises ``Skipped`` and the harness prints one line.
The DBOS code itself lives in ``_dbos_app`` (imported only where it runs); see there
for the shape: one workflow per agent looping on ``DBOS.recv``, posters as
``DBOSClient.send``, the watched log as a DBOS stream.
"""

from __future__ import annotations

import importlib.metadata
from dataclasses import dataclass
from typing import ClassVar
from urllib.parse import quote

from .base import Appender, Backend, Consumer, Producer, Skipped, Target, Watcher

REQUIREMENT = "pip install dbos"


def database_url(conninfo: str) -> str:
    """A libpq conninfo as the ``postgresql://`` URL DBOS's ``system_database_url`` takes."""
    from psycopg.conninfo import conninfo_to_dict  # noqa: PLC0415 - the postgres extra

    parts = conninfo_to_dict(conninfo)
    user = quote(str(parts.get("user", "postgres")), safe="")
    password = parts.get("password")
    auth = f"{user}:{quote(str(password), safe='')}" if password else user
    host = parts.get("host", "localhost")
    port = parts.get("port", 5432)
    return f"postgresql://{auth}@{host}:{port}/{quote(str(parts['dbname']), safe='')}"


@dataclass(frozen=True)
class DbosMailbox:
    name: ClassVar[str] = "dbos"
    backends: ClassVar[frozenset[Backend]] = frozenset({"postgres"})
    target: Target
    text: str = ""

    @property
    def url(self) -> str:
        return database_url(self.target.location)

    def prepare(self) -> None:
        try:
            import dbos  # noqa: F401, PLC0415 - only to know it is there
        except ImportError:
            raise Skipped(f"dbos is not installed ({REQUIREMENT})") from None

    def producer(self) -> Producer:
        from . import _dbos_app  # noqa: PLC0415 - needs dbos

        return _dbos_app.Producer(self.url)

    def consumer(self) -> Consumer:
        from . import _dbos_app  # noqa: PLC0415

        return _dbos_app.Consumer(self.url, self.text)

    def appender(self) -> Appender:
        from . import _dbos_app  # noqa: PLC0415

        return _dbos_app.Appender(self.url, self.text)

    def watcher(self) -> Watcher:
        from . import _dbos_app  # noqa: PLC0415

        return _dbos_app.Watcher(self.url)

    def describe(self) -> dict[str, str]:
        return {
            "dbos": importlib.metadata.version("dbos"),
            "consumer": "one workflow per agent looping on DBOS.recv (LISTEN/NOTIFY listener)",
            "posters": "DBOSClient.send (DBOS.send outside a workflow)",
            "watch": "DBOS.write_stream in a workflow / DBOSClient.read_stream (listen_notify)",
        }
