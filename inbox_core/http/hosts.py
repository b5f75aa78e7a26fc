"""Which ``Host`` a request may name (R39, D43): the front door's answer to DNS rebinding.

A web page whose name its attacker re-resolves to 127.0.0.1 becomes same-origin with a
server on loopback, and its requests arrive there with ``Host: evil.example:PORT``. So a
store served without a token (R39: on loopback only) answers only requests that name the
server as loopback does: ``localhost``, a loopback address (``127.0.0.1``, ``[::1]``) or the
address the connection reached (``scope["server"]``), each with the server's port (the
scheme's default when none is written), plus the names ``--allowed-host`` lists. A store
with tokens accepts any ``Host`` (a token is asked for anyway) unless ``--allowed-host``
names some. A request target in absolute form (``GET http://name:port/path``) names its
host there (RFC 9112 section 3.2.2): that authority is judged too, and so is ``Host``.

Spellings are taken as RFC 3986 writes them and nothing more: a name is compared without
case; a trailing dot, an IPv4 address in another notation (``127.1``, ``0x7f.0.0.1``,
``2130706433``), an IPv6 address without brackets, an IPv4-mapped IPv6 address, a zone id,
user information or anything but digits after the colon is no loopback name (421 for a
well-formed host that is not ours, 400 for one that is not a host at all, none or two).
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable, Sequence
from typing import Any, Final

import attrs

__all__ = [
    "BadHost",
    "HostRule",
    "Hostname",
    "absolute_target",
    "check_origin",
    "is_loopback",
    "parse_host",
]

DEFAULT_PORTS: Final = {"http": 80, "https": 443}
_REG_NAME: Final = re.compile(r"[a-z0-9\-._~!$&'()*+,;=]+")
"""An RFC 3986 reg-name, lowercased, without percent-encoding (no name we accept has one)."""
_ABSOLUTE: Final = re.compile(rb"(?i)(https?)://([^/?#]*)")


class BadHost(ValueError):
    """A ``Host`` (or authority) that is no ``host[:port]`` at all."""


@attrs.frozen
class Hostname:
    """A ``host[:port]`` as written: ``name`` lowercased (an IPv6 literal in brackets), and
    ``port`` or None when none was written."""

    name: str
    port: int | None

    def __str__(self) -> str:
        return self.name if self.port is None else f"{self.name}:{self.port}"


def parse_host(text: str) -> Hostname:
    """The ``Hostname`` of a ``Host`` value or an authority; ``BadHost`` if it is none."""
    if not text or not text.isascii() or text != text.strip():
        raise BadHost(f"{text[:80]!r} is no host")
    if text.startswith("["):
        end = text.find("]")
        if end < 0:
            raise BadHost(f"{text[:80]!r}: an IPv6 address ends with ]")
        name, rest = text[: end + 1].lower(), text[end + 1 :]
        try:
            if "%" in name:  # a zone id (RFC 6874): no address of this host's
                raise ValueError(name)
            ipaddress.IPv6Address(name[1:-1])
        except ValueError:
            raise BadHost(f"{text[:80]!r}: no IPv6 address in the brackets") from None
    else:
        name, colon, port = text.lower().partition(":")
        rest = colon + port
        if _REG_NAME.fullmatch(name) is None:
            raise BadHost(f"{text[:80]!r} is no host name")
    if not rest or rest == ":":
        return Hostname(name, None)
    digits = rest[1:]
    if rest[0] != ":" or not digits.isdigit() or len(digits) > 5 or int(digits) > 65535:
        raise BadHost(f"{text[:80]!r}: a port is a number up to 65535")
    return Hostname(name, int(digits))


def check_origin(text: str) -> str:
    """A CORS origin as browsers send it: ``*``, ``null`` or ``scheme://host[:port]`` with
    no path (``BadHost`` otherwise: one with a path or a slash never matches)."""
    if text in ("*", "null"):
        return text
    scheme, sep, authority = text.partition("://")
    if not sep or scheme not in DEFAULT_PORTS or not authority:
        raise BadHost(f"an origin is http(s)://host[:port], got {text[:80]!r}")
    parse_host(authority)
    return text


def is_loopback(name: str) -> bool:
    """``localhost`` or a loopback address written the one way a browser writes it."""
    if name == "localhost":
        return True
    literal = name[1:-1] if name.startswith("[") else name
    try:
        address = ipaddress.ip_address(literal)
    except ValueError:
        return False
    if address.version == 6:  # bracketed, and ::1 itself (never an IPv4-mapped address)
        return name.startswith("[") and address.is_loopback and address.ipv4_mapped is None
    return address.is_loopback and str(address) == literal


def _own(server: Any) -> Hostname | None:
    """The address the connection reached (``scope["server"]``), as a ``Hostname``."""
    if not isinstance(server, (tuple, list)) or len(server) != 2:
        return None
    host, port = server
    if not isinstance(host, str) or not isinstance(port, (int, type(None))):
        return None
    name = f"[{host.lower()}]" if ":" in host else host.lower()
    return Hostname(name, port)


class HostRule:
    """Which hosts one app answers to: loopback and its own address (always, with the
    server's port), and ``allowed`` (an ``--allowed-host`` list: any port unless one is
    given)."""

    def __init__(self, allowed: Iterable[str | Hostname] = ()) -> None:
        self.allowed: tuple[Hostname, ...] = tuple(
            host if isinstance(host, Hostname) else parse_host(host) for host in allowed
        )
        for host in self.allowed:
            if "*" in host.name:  # a name, never a pattern: "*" is no "any"
                raise BadHost(f"{str(host)[:80]!r}: a host name, not a pattern")

    def accepts(self, host: Hostname, scope: Any) -> bool:
        own = _own(scope.get("server"))
        scheme = str(scope.get("scheme", "http"))
        port = host.port if host.port is not None else DEFAULT_PORTS.get(scheme)
        for entry in self.allowed:
            if entry.name == host.name and entry.port in (None, port):
                return True
        if own is not None and own.port is not None and port != own.port:
            return False
        return is_loopback(host.name) or (own is not None and host.name == own.name)

    def refusal(self, scope: Any) -> tuple[int, str] | None:
        """Why the request's host is refused (its status and detail), or None. Every host
        it names is judged: its one ``Host`` header and an absolute-form target's. A request
        that names none (HTTP/1.0 allows it; an in-process ASGI call) is no page of another
        name: a browser always sends ``Host``."""
        headers: Sequence[tuple[bytes, bytes]] = scope.get("headers") or []
        named = [value.decode("latin-1") for name, value in headers if name.lower() == b"host"]
        if len(named) > 1:
            return 400, f"a request names its host in one Host header, this one in {len(named)}"
        raw = scope.get("raw_path")
        target = _ABSOLUTE.match(raw) if isinstance(raw, bytes) else None
        if target is not None:
            named.append(target.group(2).decode("latin-1"))
        for text in named:
            try:
                host = parse_host(text)
            except BadHost as error:
                return 400, str(error)
            if not self.accepts(host, scope):
                return 421, (
                    f"this server does not answer to {str(host)[:120]!r}: with no token in the"
                    " store it answers to localhost, 127.0.0.1 and [::1] at its own port only"
                    " (a page of another name that reached it is refused: DNS rebinding)"
                    if not self.allowed
                    else f"this server does not answer to {str(host)[:120]!r} (see --allowed-host)"
                )
        return None


def absolute_target(raw: bytes) -> bytes | None:
    """The origin-form path of an absolute-form target (``http://host/path`` -> ``/path``)."""
    match = _ABSOLUTE.match(raw)
    if match is None:
        return None
    return raw[match.end() :] or b"/"
