"""Benchmarks for inbox_core (issue 6): ``python -m benchmarks`` or ``nox -s bench``.

See ``benchmarks/README.md`` for what is measured, how, and the latest results.
"""
