"""The app's front door: one ASGI layer around Gradio's whole app, outside Gradio's own CORS handling, that decides
before any route runs (or any body is parsed) whether a request is answered at all. Who may act on a run once a
request is in is ui/access.py's.

- **Host.** Only the names the server was started for (WebPolicy.hosts): the loopback names; the --host it listens
  on; with a wildcard address (0.0.0.0, ::) any IP literal and this machine's name; each --allowed-host (the
  reverse proxy's public name). A DNS-rebinding page reaches the port under its own name: 400.
- **Origin.** A request carrying an Origin is answered only when the origin is the server's own (the one the
  browser used: scheme://host:port matching the request's Host, which the Host check bounds) or one of
  --allowed-origin; any other gets 403, preflights included, so no other page (another site, or another port of
  this machine) can make a call with the user's login. A state-changing request with no Origin but a browser's
  `Sec-Fetch-Site: cross-site | same-site` is refused too. CORS headers are this layer's only: Gradio reflects any
  origin when the Host is not a localhost name, which is what let every site ride a logged-in user.
- **Login cookie.** Gradio sets it `SameSite=None`; it leaves as `SameSite=Lax`: another site's page cannot send it.
- **Bodies.** At most MAX_BODY_BYTES for the routes that carry an event's inputs, MAX_SMALL_BODY_BYTES for every
  other route (cancel, reset and login answer without a login), counted as they arrive and refused (413) before
  Gradio reads them.
- **Logins.** Failed ones are limited per client and per user (ui.auth.LoginLimiter): 429 with Retry-After,
  logged with the client and the user name.
- **Downloads.** Exports are served from copies under one folder of Gradio's cache (DownloadGuard): with a login,
  a copy is answered only to the user whose export it is (404 to anyone else); the export folder itself is never
  served (ui.app_ui.launch_kwargs blocks it).
- **Plotly.** The page's plotly.js is served at PLOTLY_URL, so the page names no server path (Gradio's static
  route takes a file's absolute path), gzip-compressed to browsers that accept it (ui/static_asset.py)."""

from __future__ import annotations

import ipaddress
import json
import logging
import os
import socket
from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from .auth import AuthError, LoginLimiter, is_loopback
from .request_body import BODY_TIMEOUT_S, BufferedBody, Message, Receive, Send, SlowBody, bad_event_body, read_body
from .static_asset import send_asset

log = logging.getLogger(__name__)

Scope = MutableMapping[str, Any]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

MAX_BODY_BYTES = 1 << 20  # an event's inputs: a 20,000-character question is 80 kB at most
MAX_SMALL_BODY_BYTES = 16 << 10  # a login form, a cancel, a reset
EVENT_ROUTES = ("/gradio_api/queue/join", "/gradio_api/call/", "/gradio_api/run/", "/gradio_api/api/")
LOOPBACK_NAMES = ("localhost", "127.0.0.1", "::1")
WILDCARDS = ("0.0.0.0", "::", "")
SAFE_METHODS = ("GET", "HEAD", "OPTIONS")
DEFAULT_PORTS = {"http": 80, "https": 443}
PLOTLY_URL = "/uats-static/plotly.min.js"
# the page's bundle: plotly.js's basic build, the Python package's version (ui/static/README.md)
PAGE_PLOTLY_JS = Path(__file__).resolve().parent / "static" / "plotly-basic.min.js"
# what a proxy tells the app about the browser's address; from anyone else, a lie Gradio would believe (its /config
# root and /logout's redirect took X-Forwarded-Host as the site)
FORWARDED_HEADERS = (b"x-forwarded-host", b"x-forwarded-proto", b"x-forwarded-port", b"forwarded")
FRAME_HEADERS = [(b"x-frame-options", b"SAMEORIGIN")]
FRAME_POLICY = b"frame-ancestors 'self'"


def split_host(value: str) -> tuple[str, int | None]:
    """A Host header or a --host value -> (lower-case name, port or None): 'Ex.org:8080' -> ('ex.org', 8080),
    '[::1]:7860' -> ('::1', 7860). ValueError when it is not one."""
    text = value.strip().lower()
    if text.startswith("["):
        name, _, rest = text[1:].partition("]")
        port = rest[1:] if rest.startswith(":") else None
        if rest and port is None:
            raise ValueError(value)
    elif text.count(":") == 1:
        name, port = text.split(":")
    else:  # a bare name, or an IPv6 address without brackets (a --host value)
        name, port = text, None
    bad_port = port is not None and not (port.isascii() and port.isdigit() and len(port) <= 5)
    if not name or any(c in name for c in "/@ \\?#") or bad_port:
        raise ValueError(value)
    return name.rstrip("."), int(port) if port is not None else None


def split_origin(value: str) -> tuple[str, str, int] | None:
    """An Origin header -> (scheme, lower-case host, port, its scheme's default when absent); None for 'null' or a
    malformed one."""
    try:
        parts = urlsplit(value.strip())
        name, port = split_host(parts.netloc)
    except ValueError:
        return None
    if parts.scheme not in DEFAULT_PORTS or parts.path not in ("", "/") or parts.query or parts.fragment:
        return None
    return parts.scheme, name, port if port is not None else DEFAULT_PORTS[parts.scheme]


def _is_ip(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


@dataclass(frozen=True)
class WebPolicy:
    """Which requests the app answers: Host names, other origins, body sizes (see the module's doc)."""

    hosts: frozenset[str] = frozenset(LOOPBACK_NAMES)
    any_ip: bool = False  # a wildcard --host: every address of this machine is the server's
    origins: frozenset[tuple[str, str, int]] = frozenset()  # --allowed-origin, as split_origin gives them
    max_body_bytes: int = MAX_BODY_BYTES
    max_small_body_bytes: int = MAX_SMALL_BODY_BYTES
    trusted_proxies: frozenset[str] = frozenset()  # --trusted-proxy: whose X-Forwarded-* headers count at all
    body_timeout_s: float = BODY_TIMEOUT_S

    def host_allowed(self, host: str) -> bool:
        try:
            name, _ = split_host(host)
        except ValueError:
            return False
        return name in self.hosts or is_loopback(name) or (self.any_ip and _is_ip(name))

    def origin_allowed(self, origin: str, host: str) -> bool:
        """The server's own origin (scheme://Host, a Host without a port meaning the scheme's default), or a
        listed one."""
        parsed = split_origin(origin)
        if parsed is None:
            return False
        if parsed in self.origins:
            return True
        try:
            name, port = split_host(host)
        except ValueError:
            return False
        return parsed[1] == name and parsed[2] == (port if port is not None else DEFAULT_PORTS[parsed[0]])

    def body_limit(self, path: str) -> int:
        return self.max_body_bytes if path.startswith(EVENT_ROUTES) else self.max_small_body_bytes


def web_policy(
    listen: str = "127.0.0.1",
    allowed_hosts: Iterable[str] = (),
    allowed_origins: Iterable[str] = (),
    trusted_proxies: Iterable[str] = (),
) -> WebPolicy:
    """The policy for a server listening on `listen` with the launcher's --allowed-host, --allowed-origin and
    --trusted-proxy values; AuthError names a malformed flag."""
    proxies = set()
    for value in trusted_proxies:
        if not _is_ip(value.strip()):
            raise AuthError(
                "trusted-proxy",
                f"{value!r} is not an IP address; give the address your reverse proxy "
                "connects from (e.g. 127.0.0.1), one flag per address",
            )
        proxies.add(value.strip())
    hosts = set(LOOPBACK_NAMES)
    bind = listen.strip().strip("[]").lower()
    any_ip = bind in WILDCARDS
    if any_ip:
        hosts.add(socket.gethostname().lower())
    else:
        hosts.add(bind)
    for value in allowed_hosts:
        try:
            name, port = split_host(value)
        except ValueError:
            name, port = "", None
        if not name or port is not None or name.startswith("*"):
            raise AuthError(
                "allowed-host",
                f"{value!r} is not a host name; give the name alone, as clients type it "
                "(e.g. uats.team.example), one flag per name",
            )
        hosts.add(name)
    origins = set()
    for value in allowed_origins:
        parsed = split_origin(value)
        if parsed is None:
            raise AuthError(
                "allowed-origin",
                f"{value!r} is not an origin; give scheme://host[:port] with http or "
                "https and no path (e.g. https://portal.team.example)",
            )
        origins.add(parsed)
    return WebPolicy(
        hosts=frozenset(hosts), any_ip=any_ip, origins=frozenset(origins), trusted_proxies=frozenset(proxies)
    )


def _headers(scope: Scope) -> dict[str, str]:
    return {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}


async def _answer(send: Send, status: int, detail: str, extra: list[tuple[bytes, bytes]] = ()) -> None:
    body = json.dumps({"detail": detail}).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()), *extra],
        }
    )
    await send({"type": "http.response.body", "body": body})


@dataclass(frozen=True)
class DownloadGuard:
    """Who may read the exports served from `folder` (<folder>/<owner's folder>/<random>/<name>, written by
    ui.views.export.store_export): with a login on (`login_on()`), only the signed-in user (`user_of(cookies)`) whose
    folder it is (`folder_of(user)`); without one, whoever holds the address, whose random part only its owner's
    page was given."""

    folder: Path
    folder_of: Callable[[str], str]
    user_of: Callable[[dict[str, str]], str | None]
    login_on: Callable[[], bool]

    def refusal(self, path: str, headers: dict[str, str]) -> str | None:
        """Why a file request may not read what it names; None when it may (or names no export)."""
        _, sep, target = path.partition("/file=")
        if not sep:
            return None
        root = os.path.realpath(self.folder)
        wanted = os.path.realpath(target)
        if os.path.commonpath([root, wanted]) != root:
            return None  # not an export: Gradio's own rules apply
        if not self.login_on():
            return None
        from starlette.requests import cookie_parser

        user = self.user_of(cookie_parser(headers.get("cookie", "")))
        owner = os.path.relpath(wanted, root).split(os.sep)[0]
        if user is None or owner != self.folder_of(user):
            return f"no export for {user or 'a client without a login'} at that address"
        return None


class WebGuard:
    """The ASGI layer (see the module's doc) around `app`, Gradio's whole app."""

    def __init__(
        self,
        app: ASGIApp,
        policy: WebPolicy,
        logins: LoginLimiter,
        plotly_js: Path,
        downloads: DownloadGuard | None = None,
    ) -> None:
        self.app, self.policy, self.logins, self.plotly_js = app, policy, logins, plotly_js
        self.downloads = downloads

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):  # lifespan
            await self.app(scope, receive, send)
            return
        headers = _headers(scope)
        client = (scope.get("client") or ("?", 0))[0]
        refusal = self._refusal(scope, headers)
        if refusal is not None:
            status, detail = refusal
            log.warning(
                "refused %s %s from %s (Host %r, Origin %r): %s",
                scope.get("method", "WS"),
                scope.get("path", "")[:200],
                client,
                headers.get("host", "")[:100],
                headers.get("origin", "")[:100],
                detail,
            )
            if scope["type"] == "websocket":
                await send({"type": "websocket.close", "code": 1008})
            else:
                await _answer(send, status, detail)
            return
        if scope["type"] == "websocket":
            await self.app(scope, receive, send)
            return
        origin = headers.get("origin")
        if scope["method"] == "OPTIONS" and "access-control-request-method" in headers and origin is not None:
            await self._preflight(send, origin, headers)
            return
        if scope["path"].rstrip("/") == "/logout":
            if scope["method"] != "POST" or origin is None:
                log.warning(
                    "refused %s /logout from %s: log out by POST from the app's own page", scope["method"], client
                )
                await _answer(
                    send,
                    405,
                    "log out with a POST from the app's own page; a link cannot sign you out",
                    [(b"allow", b"POST")],
                )
                return
            scope = {**scope, "method": "GET"}  # Gradio's logout route is a GET; it is reached only this way
        scope = self._forwarded(scope, headers)
        denied = self.downloads.refusal(scope["path"], headers) if self.downloads is not None else None
        if denied is not None:
            log.warning("refused %s %s from %s: %s", scope["method"], scope["path"][:200], client, denied)
            await _answer(send, 404, "not found")
            return
        if scope["method"] in ("GET", "HEAD") and scope["path"] == PLOTLY_URL:
            accept = headers.get("accept-encoding", "")
            await send_asset(
                self.plotly_js, "text/javascript", accept, scope["method"] == "HEAD", _rewriting_send(send, origin)
            )
            return
        await self._forward(scope, receive, send, headers, origin, client)

    def _forwarded(self, scope: Scope, headers: dict[str, str]) -> Scope:
        """The scope without X-Forwarded-Host/Proto/Port and Forwarded unless a --trusted-proxy is named, and then
        without a forwarded host that is not one of the server's own names (uvicorn takes X-Forwarded-For and
        -Proto only from the named proxies: ui.launch sets FORWARDED_ALLOW_IPS)."""
        forwarded_host = headers.get("x-forwarded-host")
        keep = bool(self.policy.trusted_proxies) and (
            forwarded_host is None or all(self.policy.host_allowed(h.strip()) for h in forwarded_host.split(","))
        )
        if keep or not any(k.lower() in FORWARDED_HEADERS for k, _ in scope.get("headers", [])):
            return scope
        return {**scope, "headers": [(k, v) for k, v in scope["headers"] if k.lower() not in FORWARDED_HEADERS]}

    def _refusal(self, scope: Scope, headers: dict[str, str]) -> tuple[int, str] | None:
        if not self.policy.host_allowed(headers.get("host", "")):
            return 400, (
                "this server does not answer to that host name; use the address it was started for (or "
                "start it with --allowed-host NAME)"
            )
        origin = headers.get("origin")
        method = scope.get("method", "GET")
        if origin is not None and not self.policy.origin_allowed(origin, headers["host"]):
            return 403, "requests from another origin are refused; open the app at its own address"
        if (
            origin is None
            and method not in SAFE_METHODS
            and headers.get("sec-fetch-site") in ("cross-site", "same-site")
        ):
            return 403, "requests from another site are refused; open the app at its own address"
        if scope["type"] == "http" and scope["path"].rstrip("/").endswith("/upload"):
            return 403, "uploads are off: this app takes no files"
        return None

    async def _preflight(self, send: Send, origin: str, headers: dict[str, str]) -> None:
        allow = [
            (b"access-control-allow-origin", origin.encode("latin-1")),
            (b"access-control-allow-credentials", b"true"),
            (b"access-control-allow-methods", b"GET, POST, OPTIONS"),
            (b"access-control-max-age", b"600"),
            (b"vary", b"Origin"),
        ]
        wanted = headers.get("access-control-request-headers")
        if wanted:
            allow.append((b"access-control-allow-headers", wanted[:500].encode("latin-1")))
        await send({"type": "http.response.start", "status": 204, "headers": allow})
        await send({"type": "http.response.body", "body": b""})

    async def _forward(
        self, scope: Scope, receive: Receive, send: Send, headers: dict[str, str], origin: str | None, client: str
    ) -> None:
        limit = self.policy.body_limit(scope["path"])
        declared = headers.get("content-length")
        if declared is not None and (not (declared.isascii() and declared.isdigit()) or int(declared) > limit):
            await _answer(send, 413, f"the request body is over this route's limit of {limit:,} bytes")
            return
        body = None
        if scope["method"] not in SAFE_METHODS or declared not in (None, "0"):
            try:
                data = await read_body(receive, limit, self.policy.body_timeout_s)
            except SlowBody:
                log.warning(
                    "refused %s %s from %s: the body was not whole within %g s",
                    scope["method"],
                    scope["path"][:200],
                    client,
                    self.policy.body_timeout_s,
                )
                await _answer(
                    send,
                    408,
                    f"the request body did not arrive within {self.policy.body_timeout_s:g} s",
                    [(b"connection", b"close")],
                )  # the server ends the connection: the rest is not read
                return
            if data is None:
                await _answer(send, 413, f"the request body is over this route's limit of {limit:,} bytes")
                return
            body = BufferedBody(data, receive)
            bad = bad_event_body(data) if scope["path"].startswith(EVENT_ROUTES) else None
            if bad is not None:
                log.warning("refused %s %s from %s: %s", scope["method"], scope["path"][:200], client, bad)
                await _answer(send, 400, bad)
                return
        out = _rewriting_send(send, origin)
        if scope["method"] == "POST" and scope["path"].rstrip("/").endswith("/login"):
            await self._login(scope, body or BufferedBody(b"", receive), out, client)
            return
        await self.app(scope, body.replay if body is not None else receive, out)

    async def _login(self, scope: Scope, body: BufferedBody, send: Send, client: str) -> None:
        from starlette.requests import Request

        try:
            user = str((await Request(scope, body.fresh().replay).form()).get("username") or "").strip()[:200]
        except Exception:  # noqa: BLE001 - a malformed form: Gradio answers it; no user to count
            user = ""
        wait = self.logins.retry_after(client, user)
        if wait is not None:
            seconds = max(1, int(wait + 0.999))
            log.warning(
                "login refused for user %r from %s: too many failed logins; retry in %d s", user, client, seconds
            )
            await _answer(
                send, 429, f"too many failed logins; retry in {seconds} s", [(b"retry-after", str(seconds).encode())]
            )
            return
        status: list[int] = []

        async def watching(message: Message) -> None:
            if message["type"] == "http.response.start":
                status.append(message["status"])
            await send(message)

        await self.app(scope, body.fresh().replay, watching)
        if status and status[0] == 200:
            self.logins.succeeded(user)
        elif status and 400 <= status[0] < 500:
            n = self.logins.failed(client, user)
            log.warning(
                "failed login for user %r from %s (%d for this user in the last %g s)",
                user,
                client,
                n,
                self.logins.limits.window_s,
            )


def _rewriting_send(send: Send, origin: str | None) -> Send:
    """The app's response with this layer's CORS headers instead of Gradio's, its login cookie SameSite=Lax, and
    frame protection (X-Frame-Options, CSP frame-ancestors 'self': no other site's page frames it to steer clicks).
    Only allowed origins get this far."""

    async def rewritten(message: Message) -> None:
        if message["type"] == "http.response.start":
            kept, framed = [], False
            for name, value in message.get("headers", []):
                lower = name.lower()
                if lower.startswith(b"access-control-") or lower == b"x-frame-options":
                    continue
                if lower == b"set-cookie":
                    value = _lax(value)
                if lower == b"content-security-policy" and b"frame-ancestors" not in value:
                    value, framed = value + b"; " + FRAME_POLICY, True
                elif lower == b"content-security-policy":
                    framed = True
                kept.append((name, value))
            kept += FRAME_HEADERS + ([] if framed else [(b"content-security-policy", FRAME_POLICY)])
            if origin is not None:
                kept += [
                    (b"access-control-allow-origin", origin.encode("latin-1")),
                    (b"access-control-allow-credentials", b"true"),
                    (b"vary", b"Origin"),
                ]
            message = {**message, "headers": kept}
        await send(message)

    return rewritten


def _lax(cookie: bytes) -> bytes:
    """A Set-Cookie value with SameSite=None (or none given) made SameSite=Lax."""
    parts = [p.strip() for p in cookie.split(b";")]
    kept = [p for p in parts if not p.lower().startswith(b"samesite")]
    return b"; ".join([*kept, b"SameSite=Lax"])
