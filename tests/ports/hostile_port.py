"""A port that shakes hands, then answers every request with one hostile line (issue 17,
audit G4): ``python -m tests.ports.hostile_port MODE``. What it writes is valid JSON Lines
(or, for ``badutf8``, not UTF-8) that no honest port writes; the kit must report it as a
divergence or a protocol error, never print it raw or crash."""

from __future__ import annotations

import json
import sys
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


def main(mode: str) -> int:
    out = sys.stdout.buffer
    for line in sys.stdin.buffer:
        op = json.loads(line)["op"]
        if op == "hello":
            out.write(HELLO % NAMES.get(mode, b"hostile"))
        elif op == "bye":
            out.write(b'{"ok":true}\n')
            out.flush()
            return 0
        else:
            out.write(ANSWERS.get(mode, b'{"ok":false,"error":"Nope","message":"m"}\n'))
        out.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
