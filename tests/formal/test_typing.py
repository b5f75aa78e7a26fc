"""Type-level tests: snippets mypy must accept, and snippets it must reject (R11, R12).

All snippets in ``typing_cases/`` go through one ``mypy --strict`` run
(``mypy.api``) with a fresh cache under a temporary directory. A snippet marks
each error it must produce with a trailing ``# E: [code] message`` comment
(several per line allowed); the test asserts that mypy reports exactly the
marked errors, on those lines, with that code and a message starting with the
marked text. ``pass_*`` snippets mark nothing, so they must type-check.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from mypy import api

CASES = Path(__file__).parent / "typing_cases"
ROOT = Path(__file__).parents[2]
ERROR = re.compile(r"^(?P<path>.+?):(?P<line>\d+): error: (?P<message>.*?)  \[(?P<code>[\w-]+)\]$")
MARK = re.compile(r"# E: \[(?P<code>[\w-]+)\] (?P<message>.*?)(?=\s+# E: |$)")

Error = tuple[int, str, str]  # line, code, message

# snippet name -> reason, for a gap the core has not closed yet (strict xfail)
KNOWN_GAPS: dict[str, str] = {}


def expected_errors(path: Path) -> list[Error]:
    marks = []
    for number, line in enumerate(path.read_text().splitlines(), 1):
        marks += [(number, m["code"], m["message"]) for m in MARK.finditer(line)]
    return marks


@pytest.fixture(scope="module")
def mypy_errors(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[Error]]:
    cache = tmp_path_factory.mktemp("mypy-cache")
    files = sorted(str(path) for path in CASES.glob("*.py"))
    stdout, stderr, status = api.run(
        [
            "--strict",
            "--config-file",
            str(ROOT / "pyproject.toml"),
            "--cache-dir",
            str(cache),
            "--show-error-codes",
            "--no-error-summary",
            "--hide-error-context",
            "--no-pretty",
            "--no-color-output",
            *files,
        ]
    )
    assert status in (0, 1), stderr
    found: dict[str, list[Error]] = {Path(f).name: [] for f in files}
    for line in stdout.splitlines():
        match = ERROR.match(line)
        if match:
            name = Path(match["path"]).name
            assert name in found, f"error outside the snippets: {line}"
            found[name].append((int(match["line"]), match["code"], match["message"]))
    return found


def case_params() -> list[object]:
    params: list[object] = []
    for path in sorted(CASES.glob("*.py")):
        marks = []
        if path.name in KNOWN_GAPS:
            marks.append(pytest.mark.xfail(strict=True, reason=KNOWN_GAPS[path.name]))
        params.append(pytest.param(path.name, marks=marks, id=path.stem))
    return params


@pytest.mark.parametrize("name", case_params())
def test_snippet(name: str, mypy_errors: dict[str, list[Error]]) -> None:
    expected = expected_errors(CASES / name)
    actual = mypy_errors[name]
    unmatched = list(actual)
    missing = []
    for line, code, message in expected:
        hit = next(
            (e for e in unmatched if e[0] == line and e[1] == code and e[2].startswith(message)),
            None,
        )
        if hit is None:
            missing.append((line, code, message))
        else:
            unmatched.remove(hit)
    assert not missing, f"mypy did not report {missing}; it reported {actual}"
    assert not unmatched, f"unexpected mypy errors {unmatched}"


def test_every_snippet_is_a_pass_or_reject_case() -> None:
    for path in CASES.glob("*.py"):
        assert path.name.startswith(("pass_", "reject_")), path.name
        assert bool(expected_errors(path)) == path.name.startswith("reject_"), path.name
