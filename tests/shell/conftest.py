"""tests/shell: ``@pytest.mark.slow`` tests run only when asked for.

They run with ``-m slow`` (or any ``-m`` expression naming ``slow``) or with
``INBOX_CORE_SLOW=1``; otherwise they are skipped, so that the default run of
the shell tests stays short.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if "slow" in (config.getoption("markexpr", "") or "") or os.environ.get("INBOX_CORE_SLOW"):
        return
    skip = pytest.mark.skip(reason="slow: run with -m slow or INBOX_CORE_SLOW=1")
    for item in items:
        if item.get_closest_marker("slow") and HERE in Path(str(item.path)).resolve().parents:
            item.add_marker(skip)
