"""tests/benchmarks: the PostgreSQL server fixture of tests/shell, for B8's smoke test."""

from tests.shell.conftest import pg_server  # noqa: F401 - a fixture, found by name
