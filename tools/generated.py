"""Writing or checking generated files: the one helper behind every generator's ``--check``.

A generator renders the files it owns as ``{name: text}``; ``sync_directory``
then either writes them (removing stale files of the same pattern) or, with
``check``, reports which ones differ and returns 1 without writing.
"""

from __future__ import annotations

from pathlib import Path


def stale(directory: Path, files: dict[str, str], pattern: str) -> list[str]:
    """Names that differ between ``files`` and the ``pattern`` files stored in ``directory``."""
    stored = {p.name for p in directory.glob(pattern)} if directory.is_dir() else set()
    changed = [
        name
        for name, text in files.items()
        if name not in stored or (directory / name).read_text(encoding="utf-8") != text
    ]
    return sorted(changed + sorted(stored - set(files)))


def sync_directory(
    directory: Path, files: dict[str, str], *, pattern: str, what: str, tool: str, check: bool
) -> int:
    """Write ``files`` into ``directory`` (or only compare them, with ``check``); 0 when fresh."""
    if check:
        names = stale(directory, files, pattern)
        if names:
            print(f"stale {what} in {directory}: {', '.join(names)}")
            print(f"run: python {tool}")
            return 1
        print(f"{len(files)} {what} up to date")
        return 0
    directory.mkdir(parents=True, exist_ok=True)
    for path in directory.glob(pattern):
        if path.name not in files:
            path.unlink()
    for name, text in files.items():
        path = directory / name
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")
    print(f"wrote {len(files)} {what} to {directory}")
    return 0


def replace_between(text: str, marker: str, body: str) -> str:
    """``text`` with what stands between ``<!-- marker:start -->`` and ``<!-- marker:end -->``
    replaced by ``body`` (a generated block inside a hand-written document)."""
    start, end = f"<!-- {marker}:start -->", f"<!-- {marker}:end -->"
    head, found, rest = text.partition(start)
    if not found:
        raise SystemExit(f"marker {start} not found")
    _old, found, tail = rest.partition(end)
    if not found:
        raise SystemExit(f"marker {end} not found")
    return f"{head}{start}\n{body}\n{end}{tail}"
