"""Ports that break the protocol on purpose: ``python -m tests.ports.hostile_port MODE``.

Each shakes hands, then misbehaves on the requests after: the kit must report it as a
divergence or a protocol error (exit 1 or 2), never print it raw, crash, hang past its
``--timeout`` or hold more than a fixed amount of memory (issue 17 audit G4; R38 v4).

- ``ANSWERS`` modes answer every request with one hostile line (valid JSON Lines, or
  for ``badutf8`` not UTF-8) that no honest port writes;
- ``crash`` exits at the first ``apply``; ``hang`` never answers it; ``garbage`` writes
  a line that is not JSON before its answer;
- ``endless`` answers with a line that never ends; ``flood`` is the reference, writing
  ``FLOOD`` bytes to standard error before each answer; ``deaf`` stops reading its input
  after the handshake (a large request then fills the pipe).
"""

from __future__ import annotations

import json
import sys
import time
from typing import Final

HELLO: Final = b'{"ok":true,"protocol":1,"name":"%s","parts":["inbox","core"]}\n'

ANSWERS: Final = {
    "surrogate-error": b'{"ok":false,"error":"\\ud800","message":"\\udc00 half \\ud83d"}\n',
    "line-separators": '{"ok":false,"error":"X\u2028Y","message":"a\u2029b\x85c"}\n'.encode(),
    "controls": b'{"ok":false,"error":"\\u001b[2J\\u001b[31mred","message":"\\u202eevil"}\n',
    "badutf8": b'{"ok":false,"error":"\xff","message":"x"}\n',
    "huge": b'{"ok":false,"error":"' + b"E" * 5_000_000 + b'","message":""}\n',
}
NAMES: Final = {"surrogate-name": b"p\\ud800", "huge-name": b"N" * 1_000_000}
BROKEN: Final = ("crash", "hang", "garbage")
FLOOD: Final = 256 * 1024


def _reference(mode: str) -> int:
    """The reference port, broken by ``mode`` (``crash``, ``hang``, ``garbage``, ``flood``)."""
    from inbox_core.port.server import ReferencePort

    port, out = ReferencePort(), sys.stdout.buffer
    for line in sys.stdin.buffer:
        request = json.loads(line)
        if request.get("op") == "apply" and mode in BROKEN:
            if mode == "crash":
                print("hostile port: giving up", file=sys.stderr)
                return 3
            if mode == "hang":
                time.sleep(3600)
            out.write(b"this is not JSON\n")
        if mode == "flood":
            sys.stderr.buffer.write(b"x" * FLOOD)
            sys.stderr.buffer.flush()
        if request.get("op") == "bye":
            return 0
        out.write(json.dumps(port.handle(request)).encode() + b"\n")
        out.flush()
    return 0


def main(mode: str) -> int:
    if mode in (*BROKEN, "flood"):
        return _reference(mode)
    out = sys.stdout.buffer
    for line in sys.stdin.buffer:
        op = json.loads(line)["op"]
        if op == "hello":
            out.write(HELLO % NAMES.get(mode, b"hostile"))
            if mode == "deaf":  # reads nothing more: the pipe fills up
                out.flush()
                time.sleep(3600)
        elif op == "bye":
            out.write(b'{"ok":true}\n')
            out.flush()
            return 0
        elif mode == "endless":
            out.write(b'{"ok":false,"error":"')
            while True:
                out.write(b"E" * 65536)
        else:
            out.write(ANSWERS.get(mode, b'{"ok":false,"error":"Nope","message":"m"}\n'))
        out.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
