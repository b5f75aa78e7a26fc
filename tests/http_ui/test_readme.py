"""README shows the inspector (R40): the one command that opens it, and the picture the
browser test takes (tests/http_ui/test_inspector.py writes it under INBOX_CORE_SCREENSHOT),
which must exist, be a PNG of a desktop-wide page, and be where the test writes it."""

from __future__ import annotations

import re
import struct

from tests.http_ui.node import ROOT
from tests.http_ui.test_inspector import SCREENSHOT


def inspector_section() -> str:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    found = re.search(r"^## The inspector\n(.*?)(?=^## )", readme, re.M | re.S)
    assert found is not None, "README has no section '## The inspector'"
    return found.group(1)


def test_r40_readme_gives_the_one_command_that_opens_the_inspector() -> None:
    block = re.search(r"```sh\n(.*?)```", inspector_section(), re.S)
    assert block is not None
    commands = [line for line in block.group(1).splitlines() if line.strip()]
    assert len(commands) == 1
    assert "inbox-core serve sqlite:" in commands[0]
    assert "--host inbox_core.shell.echo:echo_host --http 127.0.0.1:8000" in commands[0]
    assert "http://127.0.0.1:8000/" in inspector_section()


def test_r40_readme_shows_the_screenshot_the_browser_test_writes() -> None:
    images = re.findall(r"!\[[^\]]+\]\(([^)]+)\)", inspector_section())
    assert images == [SCREENSHOT.relative_to(ROOT).as_posix()]
    data = SCREENSHOT.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", data[16:24])  # the IHDR chunk
    assert width >= 1000
    assert height >= 600


def test_r44_readme_shows_the_chat_the_browser_test_pictures_and_the_agui_client() -> None:
    from tests.http_ui.test_chat import CHAT_PICTURE

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    found = re.search(r"^## The chat and AG-UI\n(.*?)(?=^## )", readme, re.M | re.S)
    assert found is not None, "README has no section '## The chat and AG-UI'"
    section = found.group(1)
    images = re.findall(r"!\[[^\]]+\]\(([^)]+)\)", section)
    assert images == [CHAT_PICTURE.relative_to(ROOT).as_posix()]
    data = CHAT_PICTURE.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    assert struct.unpack(">II", data[16:24])[0] >= 1000
    (command,) = re.findall(r"```sh\n(.*?)```", section, re.S)
    assert "node say.mjs http://127.0.0.1:8000 " in command
    assert (ROOT / "tests" / "http_ui" / "agui" / "say.mjs").exists()
