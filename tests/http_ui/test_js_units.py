"""The inspector's JavaScript unit tests (tests/http_ui/js/*.test.mjs) under node's test
runner, so README's test command covers them: the SSE parser, the log fold against every
conformance vector (R10, R30, R32), the paths and command forms (R39, R34), the client's
token, posts and resuming stream (R40), and the words the page shows."""

from __future__ import annotations

import subprocess

from tests.http_ui.node import JS_TESTS, ROOT, node


def test_r40_javascript_units_pass_under_node() -> None:
    files = sorted(str(path) for path in JS_TESTS.glob("*.test.mjs"))
    assert len(files) >= 5
    result = subprocess.run(
        [node(), "--test", *files],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    summary = [line for line in result.stdout.splitlines() if line.startswith("# ")]
    assert result.returncode == 0, result.stdout[-8000:] + result.stderr[-4000:]
    assert "# fail 0" in summary, summary
    passed = next(int(line.split()[-1]) for line in summary if line.startswith("# pass"))
    assert passed >= 150, summary  # every vector is a test of its own
