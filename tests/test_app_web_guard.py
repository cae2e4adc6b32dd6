"""The app's front door over raw HTTP (ui/web_guard.py), as another web page, a DNS-rebinding page or a client
on the network would call it: which Host names and origins are answered, the login cookie, request bodies limited
before they are parsed, and failed logins limited. The app is served in-process with the launcher's own settings
(ui.launch.main's recorded call) on loopback; the Host and Origin a browser would send are set by hand."""

from __future__ import annotations

import logging
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import gradio as gr
import httpx
import pytest

from storage import RunStore
from testkit.doubles import WorkerPoolDouble
from testkit.serving import free_port, launch_served, served_app
from ui import launch

PLOTLY_PATH = "/uats-static/plotly.min.js"
TEAM = "uats.team.example"  # the reverse proxy's public name, given with --allowed-host
PORTAL = "https://portal.team.example"  # another origin the operator lists with --allowed-origin


def _launched(tmp: Path, argv: list[str]) -> Iterator[str]:
    """ui.launch.main(argv) with a double for the pool, its server then run on a free loopback port: its URL."""
    calls: list[dict[str, Any]] = []
    with pytest.MonkeyPatch.context() as mp:
        for name in ("UATS_AUTH", "GRADIO_SERVER_NAME", "GRADIO_SERVER_PORT"):
            mp.delenv(name, raising=False)
        mp.setattr("ui.jobs.pool.WorkerPool", WorkerPoolDouble)
        mp.setattr("ui.jobs.pool.default_pair_request", lambda: None)
        mp.setattr(gr.Blocks, "launch", lambda self, **kw: calls.append({"demo": self, **kw}))
        mp.setattr("ui.launch.wait_until_answering", lambda url: None)  # nothing was served to wait for
        assert launch.main([*argv, "--db", str(tmp / "runs.db"), "--export-dir", str(tmp / "exports")]) == 0
    [call] = calls
    demo, port = call.pop("demo"), free_port()
    url = launch_served(demo, port, **call)
    try:
        yield url
    finally:
        demo.close()


@pytest.fixture(scope="module")
def team(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A team server as docs/app.md's recipe runs it behind a proxy: a login, the proxy's name, a listed origin."""
    tmp = tmp_path_factory.mktemp("team")
    (tmp / "users").write_text("alice:a-pass\nbob:b-pass\n")
    yield from _launched(tmp, ["--auth-file", str(tmp / "users"), "--allowed-host", TEAM, "--allowed-origin", PORTAL])


def _login(url: str, user: str, password: str, **headers: str) -> httpx.Response:
    return httpx.post(f"{url}/login", data={"username": user, "password": password}, headers=headers, timeout=30)


def _join(url: str, cookies: Any, fn_index: int, **headers: str) -> httpx.Response:
    """Gradio's queue/join of event `fn_index` (no inputs), with a login cookie and the headers a page would send."""
    body = {"data": [], "fn_index": fn_index, "session_hash": "attackr1", "event_data": None, "trigger_id": None}
    return httpx.post(f"{url}/gradio_api/queue/join", json=body, cookies=cookies, headers=headers, timeout=30)


def _fn_index(url: str, cookies: Any, api_name: str) -> int:
    config = httpx.get(f"{url}/config", cookies=cookies, timeout=30).json()
    return next(i for i, d in enumerate(config["dependencies"]) if d.get("api_name") == api_name)


def _refused_everywhere(url: str, cookies: Any, fn: int, origin: str, host: str) -> None:
    """`origin`'s preflight and its POST with the login cookie: 403, no CORS permission, no event started."""
    pre = httpx.options(
        f"{url}/gradio_api/queue/join",
        timeout=30,
        headers={"Host": host, "Origin": origin, "Access-Control-Request-Method": "POST"},
    )
    assert pre.status_code == 403 and "access-control-allow-origin" not in pre.headers, (origin, pre.headers)
    call = _join(url, cookies, fn, Host=host, Origin=origin)
    assert call.status_code == 403 and "event_id" not in call.text, (origin, call.text)
    assert "access-control-allow-origin" not in call.headers


def test_a_page_of_another_port_cannot_ride_a_login(tmp_path: Path) -> None:
    """Issue 42, item 1 on a loopback app with a login: the cookie is SameSite=Lax, and a page of another port of
    this machine (same site: the cookie goes along) or of another site gets no answer; the app's own page does."""
    store = RunStore(str(tmp_path / "runs.db"))
    try:
        with served_app(store, WorkerPoolDouble(store), tmp_path, auth=[("bob", "b-pass")]) as url:
            bob = _login(url, "bob", "b-pass")
            cookies = [c for c in bob.headers.get_list("set-cookie") if c.startswith("access-token")]
            assert len(cookies) == 2 and all("samesite=lax" in c.lower() for c in cookies), cookies
            assert not any("samesite=none" in c.lower() for c in cookies), cookies
            fn, host = _fn_index(url, bob.cookies, "list_runs"), url.split("//")[1]
            for origin in ("http://127.0.0.1:9", "http://localhost:9", "https://evil.example", "null"):
                _refused_everywhere(url, bob.cookies, fn, origin, host)
            own = _join(url, bob.cookies, fn, Host=host, Origin=url)
            assert own.status_code == 200 and "event_id" in own.json()
    finally:
        store.close()


def test_no_other_origin_rides_a_logged_in_user_behind_the_proxy(team: str) -> None:
    """Issue 42, item 1 as the issue met it: behind the proxy (Host: the team name), another site's preflight and
    its POST with bob's cookie are refused; the app's own origin and the listed one work."""
    bob = _login(team, "bob", "b-pass", Host=TEAM)
    assert bob.status_code == 200
    fn = _fn_index(team, bob.cookies, "list_runs")
    for evil in ("https://evil.example", f"https://{TEAM}.evil.example", f"https://{TEAM}:8443", "null"):
        _refused_everywhere(team, bob.cookies, fn, evil, TEAM)
    # a form posted from another site carries no Origin in old browsers, but Sec-Fetch-Site in every current one
    assert _join(team, bob.cookies, fn, Host=TEAM, **{"Sec-Fetch-Site": "cross-site"}).status_code == 403
    own = _join(team, bob.cookies, fn, Host=TEAM, Origin=f"https://{TEAM}")
    assert own.status_code == 200 and "event_id" in own.json()
    listed = _join(team, bob.cookies, fn, Host=TEAM, Origin=PORTAL)
    assert listed.status_code == 200 and listed.headers["access-control-allow-origin"] == PORTAL
    assert listed.headers["access-control-allow-credentials"] == "true"
    pre = httpx.options(
        f"{team}/gradio_api/queue/join",
        timeout=30,
        headers={"Host": TEAM, "Origin": PORTAL, "Access-Control-Request-Method": "POST"},
    )
    assert pre.status_code == 204 and pre.headers["access-control-allow-origin"] == PORTAL


def test_a_loopback_app_answers_no_other_host_name(tmp_path: Path) -> None:
    """Issue 42, item 2 as the issue met it: a loopback app without a login, `Host: rebind.attacker.example:PORT`
    (what a DNS-rebinding page sends) gets 400 and no CORS permission; its own address is answered."""
    store = RunStore(str(tmp_path / "runs.db"))
    try:
        with served_app(store, WorkerPoolDouble(store), tmp_path) as url:
            port = url.rsplit(":", 1)[1]
            fn = _fn_index(url, None, "list_runs")
            rebind = f"rebind.attacker.example:{port}"
            r = _join(url, None, fn, Host=rebind, Origin=f"http://{rebind}")
            assert r.status_code == 400 and "access-control-allow-origin" not in r.headers, r.headers
            assert httpx.get(f"{url}/config", headers={"Host": rebind}, timeout=30).status_code == 400
            assert _join(url, None, fn, Origin=url).status_code == 200
    finally:
        store.close()


def test_only_the_servers_host_names_are_answered(tmp_path: Path) -> None:
    """Issue 42, item 2 with the flag: loopback names, a started-for name with --allowed-host, nothing else."""
    gen = _launched(tmp_path, ["--allowed-host", TEAM])
    url = next(gen)
    try:
        port = url.rsplit(":", 1)[1]
        fn = _fn_index(url, None, "list_runs")
        for host in (
            f"rebind.attacker.example:{port}",
            "rebind.attacker.example",
            f"{TEAM}.attacker.example",
            "",
            "a b",
        ):
            origin = f"http://{host}"
            for r in (
                httpx.get(f"{url}/config", headers={"Host": host}, timeout=30),
                httpx.get(f"{url}/", headers={"Host": host}, timeout=30),
                _join(url, None, fn, Host=host, Origin=origin),
            ):
                assert r.status_code == 400 and "access-control-allow-origin" not in r.headers, (host, r.status_code)
        for host in (f"127.0.0.1:{port}", f"localhost:{port}", f"[::1]:{port}", f"{TEAM}:{port}", TEAM):
            assert httpx.get(f"{url}/config", headers={"Host": host}, timeout=30).status_code == 200, host
            assert _join(url, None, fn, Host=host, Origin=f"http://{host}").status_code == 200, host
    finally:
        gen.close()


def _answer_to(url: str, head: str, body_start: bytes = b"") -> int:
    """Send a request's head and the start of its body by hand, then wait: the status the server answers with
    before the rest of the body (a server that reads the whole body first never answers, and this times out)."""
    host, port = url.split("//")[1].split(":")
    with socket.create_connection((host, int(port)), timeout=120) as sock:
        sock.sendall(head.encode() + body_start)
        return int(sock.recv(200).split(b" ")[1])


def test_bodies_are_limited_before_they_are_parsed(tmp_path: Path) -> None:
    """Issue 42, item 4: a 100 MB queue/join body and 50 MB bodies to the routes that answer without a login
    (cancel, reset) get 413 before the server reads more than its limit: from the declared length alone, and from
    a chunked body without one as soon as it passes the limit. A normal call still works."""
    store = RunStore(str(tmp_path / "runs.db"))
    try:
        with served_app(store, WorkerPoolDouble(store), tmp_path, auth=[("alice", "a-pass")]) as url:
            host = url.split("//")[1]
            routes = {"/gradio_api/queue/join": 100 << 20, "/gradio_api/cancel": 50 << 20, "/reset": 50 << 20}
            for path, size in routes.items():
                head = f"POST {path} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
                assert _answer_to(url, head + f"Content-Length: {size}\r\n\r\n") == 413, path
            from ui.web_guard import MAX_BODY_BYTES, MAX_SMALL_BODY_BYTES

            for path, limit in zip(routes, (MAX_BODY_BYTES, MAX_SMALL_BODY_BYTES, MAX_SMALL_BODY_BYTES)):
                head = f"POST {path} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
                chunk = 1 << 14
                chunks = b"".join(b"%x\r\n%s\r\n" % (chunk, b"x" * chunk) for _ in range(limit // chunk + 2))
                assert _answer_to(url, head + "Transfer-Encoding: chunked\r\n\r\n", chunks) == 413, path
            alice = _login(url, "alice", "a-pass")
            assert _join(url, alice.cookies, _fn_index(url, alice.cookies, "list_runs")).status_code == 200
    finally:
        store.close()


def test_nan_and_deep_json_in_an_events_inputs_are_one_line_before_gradio_parses_them(tmp_path: Path) -> None:
    """Issue 50, item 10: NaN in a number field (a rounding gr.Number raised on it) and JSON nested past Python's
    recursion limit each ended as {'error': None} with a traceback in the log. Now 400, one line naming the input."""
    store = RunStore(str(tmp_path / "runs.db"))
    try:
        with served_app(store, WorkerPoolDouble(store), tmp_path) as url:
            fn = _fn_index(url, None, "inspect_node")
            for constant in ("NaN", "Infinity", "-Infinity"):
                body = '{"data": [null, %s], "fn_index": %d, "session_hash": "nan00001"}' % (constant, fn)
                said = httpx.post(
                    f"{url}/gradio_api/queue/join",
                    content=body,
                    timeout=60,
                    headers={"content-type": "application/json"},
                )
                assert said.status_code == 400 and said.json()["detail"] == (
                    f"data[1]: {constant} is not a number this app takes; give a finite number"
                )
            deep = '{"data": [%s], "fn_index": %d, "session_hash": "deep0001"}' % ("[" * 50_000 + "]" * 50_000, fn)
            said = httpx.post(
                f"{url}/gradio_api/queue/join", content=deep, timeout=60, headers={"content-type": "application/json"}
            )
            assert said.status_code == 400 and "nests its JSON too deep" in said.json()["detail"]
            assert _join(url, None, fn).status_code == 200  # the same event with ordinary values goes through
    finally:
        store.close()


def test_logout_is_a_post_of_the_apps_own_page(tmp_path: Path) -> None:
    """Issue 50, item 9: a top-level GET /logout from another site (a link, an <img>) signed the user out
    everywhere. Only a POST carrying the app's own Origin logs out."""
    store = RunStore(str(tmp_path / "runs.db"))
    try:
        with served_app(store, WorkerPoolDouble(store), tmp_path, auth=[("alice", "a-pass")]) as url:
            alice = _login(url, "alice", "a-pass").cookies
            fn = _fn_index(url, alice, "list_runs")
            for how in ({"headers": {"Sec-Fetch-Site": "cross-site"}}, {}):
                said = httpx.get(f"{url}/logout", cookies=alice, timeout=30, **how)
                assert said.status_code == 405 and "POST from the app's own page" in said.json()["detail"]
            assert (
                httpx.post(
                    f"{url}/logout", cookies=alice, timeout=30, headers={"Origin": "https://evil.example"}
                ).status_code
                == 403
            )
            assert _join(url, alice, fn).status_code == 200  # still signed in
            out = httpx.post(f"{url}/logout", cookies=alice, timeout=30, headers={"Origin": url})
            assert out.status_code == 302
            assert _join(url, alice, fn).status_code == 401  # signed out
    finally:
        store.close()


def test_forwarded_headers_count_only_from_a_named_proxy(tmp_path: Path) -> None:
    """Issue 50, item 9: after the Host check Gradio took X-Forwarded-Host as the site (its /config root became
    another site). Without --trusted-proxy the app ignores X-Forwarded-*; with one, a forwarded host must still be
    one of the server's names."""
    for argv, root_of in (
        ([], "http://127.0.0.1"),
        (["--trusted-proxy", "127.0.0.1", "--allowed-host", TEAM], f"https://{TEAM}"),
    ):
        (tmp_path / str(len(argv))).mkdir()
        with contextmanager(_launched)(tmp_path / str(len(argv)), argv) as url:
            evil = httpx.get(
                f"{url}/config", timeout=30, headers={"X-Forwarded-Host": "evil.example", "X-Forwarded-Proto": "https"}
            ).json()
            assert "evil.example" not in evil["root"]
            team = httpx.get(
                f"{url}/config", timeout=30, headers={"X-Forwarded-Host": TEAM, "X-Forwarded-Proto": "https"}
            ).json()
            assert team["root"].startswith(root_of), team["root"]


def test_no_other_site_frames_the_page(tmp_path: Path) -> None:
    """Issue 50, item 9: no frame protection. Every answer says only the app's own pages may frame it."""
    store = RunStore(str(tmp_path / "runs.db"))
    try:
        with served_app(store, WorkerPoolDouble(store), tmp_path) as url:
            for path in ("/", "/config", PLOTLY_PATH):
                said = httpx.get(f"{url}{path}", timeout=30)
                assert said.headers["x-frame-options"] == "SAMEORIGIN", path
                assert "frame-ancestors 'self'" in said.headers["content-security-policy"], path
    finally:
        store.close()


def test_a_slow_body_is_not_held_for_good(tmp_path: Path) -> None:
    """Issue 50, item 9: a client that sends a body slowly held its connection forever. Its body must be whole
    within the guard's timeout: 408 then (a policy with a short timeout, the launcher's layer otherwise as served)."""
    import asyncio

    from testkit.own_loop import run_on_own_loop
    from ui.auth import LoginLimiter
    from ui.web_guard import WebGuard, WebPolicy

    async def never_called(scope, receive, send):  # noqa: ANN001 - an ASGI app
        raise AssertionError("the app was reached")

    sent: list[dict] = []

    async def trickle() -> dict:
        await asyncio.sleep(3600)  # the rest of the body never comes
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict) -> None:
        sent.append(message)

    guard = WebGuard(never_called, WebPolicy(body_timeout_s=0.2), LoginLimiter(), Path("/dev/null"))
    scope = {
        "type": "http",
        "method": "POST",
        "path": "/gradio_api/queue/join",
        "client": ("127.0.0.1", 1),
        "headers": [(b"host", b"127.0.0.1:7860"), (b"content-type", b"application/json")],
    }
    # a loop of its own: in a worker that ran the browser tests, asyncio.run refused to start here
    run_on_own_loop(asyncio.wait_for(guard(scope, trickle, send), 30))
    assert sent[0]["status"] == 408


def test_failed_logins_are_limited_per_client_and_user(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """Issue 42, item 5: wrong passwords are answered 400 up to the per-client limit, then 429 with Retry-After
    (the right password too, until the wait is over), and each failure is logged with the user and the client."""
    store = RunStore(str(tmp_path / "runs.db"))
    caplog.set_level(logging.WARNING, logger="ui.web_guard")
    try:
        with served_app(store, WorkerPoolDouble(store), tmp_path, auth=[("alice", "a-pass"), ("bob", "b-pass")]) as url:
            codes = [_login(url, "bob", f"guess-{i}").status_code for i in range(30)]
            assert 429 in codes, codes  # 200 wrong passwords were all answered 400
            from ui.auth import LoginLimiter

            limits = LoginLimiter().limits
            assert codes == [400] * limits.per_client + [429] * (30 - limits.per_client), codes
            late = _login(url, "bob", "b-pass")
            wait = int(late.headers["retry-after"])
            assert late.status_code == 429 and 0 < wait <= limits.window_s and f"retry in {wait} s" in late.text
            failed = [r.getMessage() for r in caplog.records if r.getMessage().startswith("failed login")]
            assert len(failed) == limits.per_client and all("'bob'" in m and "127.0.0.1" in m for m in failed)
            assert any(r.getMessage().startswith("login refused for user 'bob'") for r in caplog.records)
    finally:
        store.close()


def test_the_login_limits_window_per_client_and_per_user() -> None:
    """The limiter's rules on a clock the test moves: per client, per user across clients, the wait it names,
    a success forgiving the user's failures but not the client's."""
    from ui.auth import LoginLimiter, LoginLimits

    now = [0.0]
    lim = LoginLimiter(LoginLimits(per_client=3, per_user=5, window_s=100), clock=lambda: now[0])
    for _ in range(3):
        assert lim.retry_after("10.0.0.1", "bob") is None
        lim.failed("10.0.0.1", "bob")
        now[0] += 10
    assert lim.retry_after("10.0.0.1", "bob") == pytest.approx(70)  # the first failure, at 0, leaves at 100
    assert lim.retry_after("10.0.0.1", "carol") == pytest.approx(70)  # the client is at its limit
    lim.failed("10.0.0.2", "bob")
    lim.failed("10.0.0.3", "bob")
    assert lim.retry_after("10.0.0.4", "bob") == pytest.approx(70)  # five for bob from anywhere
    assert lim.retry_after("10.0.0.4", "carol") is None
    lim.succeeded("bob")
    assert lim.retry_after("10.0.0.4", "bob") is None and lim.retry_after("10.0.0.1", "alice") is not None
    now[0] = 125.0
    assert lim.retry_after("10.0.0.1", "bob") is None  # all three left the window


def test_flags_that_name_no_host_or_origin_are_one_line(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    for flag, value in (
        ("--allowed-host", "https://x.example"),
        ("--allowed-host", "x.example:80"),
        ("--allowed-origin", "x.example"),
        ("--allowed-origin", "https://x.example/path"),
        ("--allowed-origin", "ftp://x.example"),
        ("--export-quota-mb", "nan"),
        ("--export-session-quota-mb", "0"),
    ):
        rc = launch.main([flag, value, "--db", str(tmp_path / "r.db")])
        err = capsys.readouterr().err.strip().splitlines()
        assert rc == 2 and len(err) == 1 and err[0].startswith(f"error: {flag.lstrip('-')}: "), (flag, err)
    assert not (tmp_path / "r.db").exists()


def test_the_page_names_no_server_path_for_plotly(tmp_path: Path) -> None:
    """The page loads plotly.js from a fixed address, not Gradio's file route with the package's absolute path."""
    store = RunStore(str(tmp_path / "runs.db"))
    try:
        with served_app(store, WorkerPoolDouble(store), tmp_path) as url:
            config = httpx.get(f"{url}/config", timeout=30).text
            assert "plotly.min.js" in config and "file=/" not in config and str(Path.cwd()) not in config
            from ui.web_guard import PAGE_PLOTLY_JS, PLOTLY_URL

            js = httpx.get(f"{url}{PLOTLY_URL}", timeout=30)  # httpx asks for gzip and unpacks it
            assert js.status_code == 200 and js.text.lstrip().startswith("/**") and len(js.content) > 1_000_000
            assert js.headers["content-encoding"] == "gzip" and js.headers["vary"].startswith("Accept-Encoding")
            assert int(js.headers["content-length"]) < len(js.content) / 2  # a third of the bundle on the wire
            plain = httpx.get(f"{url}{PLOTLY_URL}", headers={"accept-encoding": "identity"}, timeout=30)
            assert "content-encoding" not in plain.headers and plain.content == PAGE_PLOTLY_JS.read_bytes()
            assert plain.content == js.content and plain.headers["cache-control"] == "public, max-age=86400"
            refused = httpx.get(f"{url}{PLOTLY_URL}", headers={"accept-encoding": "gzip;q=0"}, timeout=30)
            assert "content-encoding" not in refused.headers and refused.content == plain.content
            head = httpx.head(f"{url}{PLOTLY_URL}", timeout=30)
            assert head.status_code == 200 and head.content == b""
            assert head.headers["content-length"] == js.headers["content-length"]
    finally:
        store.close()
