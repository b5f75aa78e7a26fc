"""Hostile web pages in Debian's Chromium (R39, R40, D43; issue 37 items 1 and 2) against a
real ``inbox-core serve --http`` process over a store with no token (the README's setup).

A small proxy plays the DNS: Chromium sends its requests through it, and it answers
``http://rebind.test:PORT/attack.html`` with the attacker's page (the name's first
address, the attacker's server) and forwards every other request for
``rebind.test:PORT`` to 127.0.0.1:PORT with its ``Host`` unchanged (the name re-resolved to
loopback: DNS rebinding). The page is then same-origin with the server and tries to read
the agents and to post. ``http://framer.test/frame.html`` is a page of another origin that
frames the inspector under a decoy (clickjacking), beside a frame of a page without the
headers (the control: framing itself works).

On c46a0f0 the attacker's page read the agent list (200) and posted (202), and the
inspector rendered inside the other origin's frame.
"""

from __future__ import annotations

import contextlib
import http.client
import http.server
import json
import threading
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import pytest

from tests.http_ui.conftest import chromium
from tests.http_ui.served import Served

ATTACK = """<!doctype html><title>cute cats</title><pre id="out">running</pre>
<script>
(async () => {
  const results = {};
  const list = await fetch("/v1/agents");
  results.list = [list.status, await list.text()];
  const post = await fetch("/v1/agents/victim/followup", {
    method: "POST",
    headers: {"Content-Type": "application/json"},
    body: JSON.stringify({message: {content: "steered by a web page"}}),
  });
  results.post = post.status;
  const cancel = await fetch("/v1/agents/victim/commands", {
    method: "POST",
    headers: {"Content-Type": "application/json"},
    body: JSON.stringify({type: "cancel", cause: {kind: "user"}, keepInbox: false}),
  });
  results.cancel = cancel.status;
  results.page = (await fetch("/")).status;
  document.getElementById("out").textContent = JSON.stringify(results);
})().catch((error) => { document.getElementById("out").textContent = "error: " + error; });
</script>"""

FRAMER = """<!doctype html><title>win a prize</title>
<button id="decoy" style="position:absolute;top:40px;left:40px">Claim your prize</button>
<iframe id="victim" name="victim" src="http://127.0.0.1:{port}/" width="900" height="600"
        style="opacity:0.01;position:absolute;top:0;left:0"></iframe>
<iframe id="plain" name="plain" src="http://framer.test/plain.html"></iframe>"""


class PlayedDns(http.server.BaseHTTPRequestHandler):
    """The proxy Chromium sends its requests to (absolute-form targets; loopback ones are
    passed on as they are)."""

    port = 0  # the served store's port, set per test

    def log_message(self, *args: Any) -> None:  # quiet
        pass

    def _answer(self, status: int, body: bytes, kind: str = "text/html") -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _forward(self, path: str) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else None
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        try:
            headers = {k: v for k, v in self.headers.items() if k.lower() != "proxy-connection"}
            conn.request(self.command, path, body=body, headers=headers)  # Host as sent
            answer = conn.getresponse()
            data = answer.read()
        finally:
            conn.close()
        self.send_response(answer.status)
        for name, value in answer.getheaders():
            if name.lower() not in ("transfer-encoding", "connection", "content-length"):
                self.send_header(name, value)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _route(self) -> None:
        target = urlsplit(self.path)
        path = target.path + (f"?{target.query}" if target.query else "")
        if target.hostname == "rebind.test" and target.port == self.port:
            if path == "/attack.html":
                self._answer(200, ATTACK.encode())
            else:
                self._forward(path)
        elif target.hostname in ("127.0.0.1", "localhost") and target.port == self.port:
            self._forward(path)  # loopback: as if straight to the server (Playwright proxies it)
        elif target.hostname == "framer.test" and path == "/frame.html":
            self._answer(200, FRAMER.format(port=self.port).encode())
        elif target.hostname == "framer.test" and path == "/plain.html":
            self._answer(200, b"<!doctype html><p id='plain'>a frame without the headers</p>")
        else:
            self._answer(404, b"not here")

    do_GET = _route
    do_POST = _route
    do_HEAD = _route


@contextlib.contextmanager
def played_dns(port: int) -> Iterator[int]:
    handler = type("Handler", (PlayedDns,), {"port": port})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield int(server.server_address[1])
    finally:
        server.shutdown()
        server.server_close()


def chromium_through(proxy: int) -> Any:
    """A Chromium whose requests go through ``proxy``."""
    return chromium(proxy={"server": f"http://127.0.0.1:{proxy}"})


def victim_state(served: Served) -> dict[str, Any]:
    conn = http.client.HTTPConnection("127.0.0.1", served.port, timeout=30)
    try:
        conn.request("GET", "/v1/agents/victim")
        return dict(json.loads(conn.getresponse().read()))
    finally:
        conn.close()


def test_r39_d43_a_rebinding_page_reads_nothing_and_posts_nothing(serve: Any) -> None:
    """Issue 37 item 1: the page at ``rebind.test`` (re-resolved to 127.0.0.1) gets 421 for
    the list, the posts and the inspector; the victim agent holds no post."""
    served = serve()
    with played_dns(served.port) as proxy, chromium_through(proxy) as browser:
        tab = browser.new_page()
        tab.goto(f"http://rebind.test:{served.port}/attack.html")
        tab.wait_for_function("document.getElementById('out').textContent !== 'running'")
        results = json.loads(tab.locator("#out").text_content() or "null")
    assert results["list"][0] == 421, results
    assert "victim" not in results["list"][1]
    assert results["post"] == results["cancel"] == results["page"] == 421
    state = victim_state(served)
    assert (state["seq"], state["pendingPosts"]) == (0, 0)


def test_r40_d43_a_page_of_another_origin_cannot_frame_the_inspector(serve: Any) -> None:
    """Issue 37 item 2: ``X-Frame-Options: DENY`` and ``frame-ancestors 'none'`` keep the
    inspector out of another origin's frame (a page without them is framed: the control),
    so no decoy over it can make a click on "Stop and clear"."""
    served = serve()
    with played_dns(served.port) as proxy, chromium_through(proxy) as browser:
        tab = browser.new_page()
        tab.goto("http://framer.test/frame.html")
        plain = tab.frame(name="plain")
        assert plain is not None
        plain.wait_for_selector("#plain")
        victim = tab.frame(name="victim")
        assert victim is not None
        tab.wait_for_load_state("load")
        framed_inspector = victim.locator("#agents-heading").count()
        victim_url = victim.url
    assert framed_inspector == 0, victim_url
    direct = served.page()
    with played_dns(served.port) as proxy, chromium_through(proxy) as browser:
        tab = browser.new_page()
        tab.goto(direct)  # the inspector itself loads (loopback: no proxy)
        tab.wait_for_selector("#agents-heading")


@pytest.mark.parametrize("host", ["localhost", "127.0.0.1"])
def test_r40_d43_the_inspector_still_works_at_its_loopback_names(serve: Any, host: str) -> None:
    """The rule keeps the inspector's own names: loaded at ``localhost:PORT`` or
    ``127.0.0.1:PORT``, its requests (same origin) are answered."""
    served = serve()
    with played_dns(served.port) as proxy, chromium_through(proxy) as browser:
        tab = browser.new_page()
        tab.goto(f"http://{host}:{served.port}/#/agents/victim")
        from playwright.sync_api import expect

        expect(tab.get_by_role("status", name="Status", exact=True)).to_contain_text("idle")
