"""The port kit (R38, specs/ports.md): the protocol a port in any language speaks on its
standard input and output (``protocol``), and the reference speaking it (``server``,
``python -m inbox_core.port``; with ``--mutant NAME`` a seeded fault, ``mutants``).
``inbox-core conform --port CMD`` drives a port with it (``inbox_core.cli.conform``): the
vectors and random runs (``generate``, ``sequences``) compared step by step
(``conformance``) through a bounded child process (``client``)."""

from inbox_core.port.protocol import PARTS, PROTOCOL_VERSION, ProtocolError
from inbox_core.port.server import ReferencePort, serve

__all__ = ["PARTS", "PROTOCOL_VERSION", "ProtocolError", "ReferencePort", "serve"]
