"""The commands that work on a store (``post``, ``watch``, ``token``, ``http``): open it, run,
close it, and say a store's failure the same way everywhere.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from inbox_core.cli.output import EXIT_FAILURE, err
from inbox_core.errors import InboxCoreError

__all__ = ["failed", "on_store"]


def failed(command: str, error: BaseException) -> int:
    """``inbox-core COMMAND: ErrorName: text`` on standard error; exit status 1."""
    err(f"inbox-core {command}: {type(error).__name__}: {error}")
    return EXIT_FAILURE


def on_store(command: str, spec: str, body: Callable[[Any], int]) -> int:
    """``body(store)`` over the store ``spec`` names, closed afterwards; a typed error of
    opening it or of ``body`` (one that ``body`` does not answer itself) is ``failed``."""
    from inbox_core.shell.stores.opening import open_store  # noqa: PLC0415 - the shell, on demand

    try:
        store = open_store(spec)
    except InboxCoreError as error:
        return failed(command, error)
    try:
        return body(store)
    except InboxCoreError as error:
        return failed(command, error)
    finally:
        store.close()
