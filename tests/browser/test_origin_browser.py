"""Issue 42, item 1 in Chromium: with the user signed in to the app, a page served from another port of this
machine (same site, so the login cookie would go along) cannot call the app's API, neither as a CORS request
(the browser gets no permission) nor as a "simple" one the browser sends blindly (the app refuses it); the same
call from the app's own page works."""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest

from storage import RunStore
from testkit.doubles import WorkerPoolDouble
from testkit.serving import free_port, served_app

from .pages import patient

pytestmark = pytest.mark.browser

CALL_JS = """async ([app, fn]) => {
  const body = JSON.stringify({data: [], fn_index: fn, session_hash: 'ride0001', event_data: null, trigger_id: null});
  const out = {};
  try {
    const r = await fetch(app + '/gradio_api/queue/join', {method: 'POST', credentials: 'include',
                                                        headers: {'Content-Type': 'application/json'}, body});
    out.cors = r.status + ' ' + await r.text();
  } catch (e) { out.cors = 'blocked: ' + e.message; }
  try {  // no preflight, no readable answer: only the server can refuse it
    await fetch(app + '/gradio_api/queue/join', {method: 'POST', mode: 'no-cors', credentials: 'include',
                                                 headers: {'Content-Type': 'text/plain'}, body});
    out.blind = 'sent';
  } catch (e) { out.blind = 'blocked: ' + e.message; }
  return out;
}"""


class _Attacker(BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        page = b"<!doctype html><html><body><h1>another page on this machine</h1></body></html>"
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(page)))
        self.end_headers()
        self.wfile.write(page)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture()
def two_ports(tmp_path: Path) -> Iterator[tuple[str, str]]:
    """The app with a login on one loopback port, another page's server on another."""
    store = RunStore(str(tmp_path / "runs.db"))
    other = ThreadingHTTPServer(("127.0.0.1", free_port()), _Attacker)
    threading.Thread(target=other.serve_forever, daemon=True).start()
    try:
        with served_app(store, WorkerPoolDouble(store), tmp_path, auth=[("bob", "b-pass")]) as url:
            yield url, f"http://127.0.0.1:{other.server_address[1]}"
    finally:
        other.shutdown()
        store.close()


def test_a_page_on_another_port_cannot_call_the_api(
    browser: Any, two_ports: tuple[str, str], caplog: pytest.LogCaptureFixture
) -> None:
    app, other = two_ports
    caplog.set_level(logging.WARNING, logger="ui.web_guard")
    ctx = patient(browser.new_context(viewport={"width": 1280, "height": 800}))
    try:
        page = ctx.new_page()
        page.goto(app)
        page.fill("input[type=text]", "bob")
        page.fill("input[type=password]", "b-pass")
        page.get_by_role("button", name="Login").click()
        page.wait_for_selector("#run-btn")
        cookies = {c["name"]: c for c in ctx.cookies(app)}
        config = httpx.get(f"{app}/config", cookies={k: c["value"] for k, c in cookies.items()}, timeout=30).json()
        fn = next(i for i, d in enumerate(config["dependencies"]) if d.get("api_name") == "list_runs")

        own = page.evaluate(CALL_JS, [app, fn])
        assert own["cors"].startswith("200 ") and "event_id" in own["cors"], own  # the app's own page may

        caplog.clear()
        attacker = ctx.new_page()
        attacker.goto(other)
        ridden = attacker.evaluate(CALL_JS, [app, fn])
        assert ridden["cors"].startswith("blocked"), ridden  # no event id ever reaches the other page
        refused = [r.getMessage() for r in caplog.records if f"Origin '{other}'" in r.getMessage()]
        assert any(m.startswith("refused OPTIONS /gradio_api/queue/join") for m in refused), refused  # the preflight
        assert any(m.startswith("refused POST /gradio_api/queue/join") for m in refused), refused  # the blind call
        assert cookies and all(c["sameSite"] == "Lax" for c in cookies.values()), cookies  # not sent cross-site
    finally:
        ctx.close()
