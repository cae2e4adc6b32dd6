"""The HTTP client of a policy behind a server (`openai:URL`): one request with a connect timeout and a read
timeout in seconds, abandoned within a poll of a cancel check, following no redirect, with the URL's credentials
sent as a header and never shown.

Standard library only (http.client). The request runs on a helper thread while the caller waits in short
slices: a cancelled search or a passed deadline closes the socket, which ends the helper's blocked read, so a
server that accepts and never answers holds nobody longer than the read timeout, or a cancel poll once asked.
A redirect is an answer like any other status: credentials are never re-sent to an address the operator did not
name (a 307 from a compromised or misconfigured server would otherwise carry the API key anywhere)."""

from __future__ import annotations

import base64
import contextlib
import http.client
import socket
import ssl
import threading
import time
import urllib.parse
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, cast

PREFIX = "openai:"  # a policy spec naming a server: openai:URL
MAX_RESPONSE_BYTES = 64 * 2**20  # a JSON body of more than this is no completion of ours: refused, not read
WAIT_SLICE_S = 0.1  # how often a waiting caller looks at its cancel check and the deadline


# Who hears that this process waits on a server (the app's warm workers tell their pool, which does not count a
# worker that only waits against its compute limit): called with the time.time() the first request of this
# process began when none was under way, and with None when the last one ended.
class _Waiting:
    """How many requests of this process are under way, and who hears when that becomes some or none."""

    def __init__(self) -> None:
        self.count = 0
        self.listener: Callable[[float | None], None] | None = None
        self.lock = threading.Lock()

    def changed(self, delta: int) -> None:
        with self.lock:
            before, self.count = self.count, self.count + delta
            if self.listener is not None and (before == 0) != (self.count == 0):
                with contextlib.suppress(Exception):  # a listener that fails must not fail the request
                    self.listener(time.time() if self.count else None)


_WAITING = _Waiting()


def set_wait_listener(listener: Callable[[float | None], None] | None) -> None:
    """Install the process's listener (None: nobody listens)."""
    with _WAITING.lock:
        _WAITING.listener = listener


class Cancelled(Exception):
    """The cancel check said yes while the request was under way (the socket is closed)."""


class ReadTimeout(OSError):
    """The server accepted the connection but sent no whole answer within the read timeout."""


@dataclass(frozen=True)
class Endpoint:
    """A server's address without its credentials: `display` is what logs and errors may show, `headers` carry
    the credentials (HTTP Basic from `user:password@` in the URL)."""

    scheme: str
    host: str
    port: int
    path: str  # the API root, e.g. /v1
    headers: dict[str, str] = field(default_factory=dict)

    @property
    def display(self) -> str:
        default = 443 if self.scheme == "https" else 80
        port = "" if self.port == default else f":{self.port}"
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.scheme}://{host}{port}{self.path}"


def endpoint(url: str) -> Endpoint:
    """The Endpoint of an http(s) URL (already checked by _loading.normalise_url)."""
    parts = urllib.parse.urlsplit(url)
    headers: dict[str, str] = {}
    if parts.username is not None or parts.password is not None:
        user = urllib.parse.unquote(parts.username or "")
        password = urllib.parse.unquote(parts.password or "")
        token = base64.b64encode(f"{user}:{password}".encode()).decode()
        headers["Authorization"] = f"Basic {token}"
    port = parts.port or (443 if parts.scheme == "https" else 80)
    return Endpoint(parts.scheme, parts.hostname or "", port, parts.path.rstrip("/"), headers)


def redact_url(url: str) -> str:
    """The URL without `user:password@`, for anything shown or stored (the run log, an error, a log line)."""
    parts = urllib.parse.urlsplit(url)
    if "@" not in parts.netloc:
        return url
    return urllib.parse.urlunsplit(
        (parts.scheme, parts.netloc.rpartition("@")[2], parts.path, parts.query, parts.fragment)
    )


def policy_label(spec: str | None, opts: Mapping[str, Any]) -> str | None:
    """What a run stores and shows for its policy before the policy is loaded: a server's policy by its `name`
    option, else its URL without credentials; any other spec as it is. (Here, in a module of the standard library
    only, so the app's process can call it without loading torch.)"""
    if spec is None or not spec.startswith(PREFIX):
        return spec
    name = opts.get("name")
    return str(name) if name else PREFIX + redact_url(spec.removeprefix(PREFIX))


def _exchange(
    conn: http.client.HTTPConnection,
    read_timeout_s: float,
    method: str,
    target: str,
    body: bytes | None,
    headers: dict[str, str],
    out: dict[str, object],
) -> None:
    try:
        conn.connect()  # within the connection's timeout (the connect timeout); the answer gets the read timeout
        out["connected"] = True
        if out.get("abandoned"):  # the caller gave up while connecting: send nothing
            return
        if conn.sock is not None:
            conn.sock.settimeout(read_timeout_s)
        conn.request(method, target, body=body, headers=headers)
        resp = conn.getresponse()
        out["answer"] = (resp.status, resp.read(MAX_RESPONSE_BYTES))
    except BaseException as exc:  # noqa: BLE001 - handed to the waiting caller, which raises it
        out["error"] = exc


def call(
    ep: Endpoint,
    method: str,
    path: str,
    body: bytes | None,
    headers: dict[str, str],
    *,
    connect_timeout_s: float,
    read_timeout_s: float,
    cancelled: Callable[[], bool] = lambda: False,
) -> tuple[int, bytes]:
    """(HTTP status, body) of one request to `ep.path/path`; a 3xx comes back as it is (no redirect followed).
    Raises OSError when no answer came (refused, unreachable: as the OS says; ReadTimeout after the read
    timeout) and Cancelled once `cancelled()` says yes."""
    conn: http.client.HTTPConnection
    if ep.scheme == "https":
        conn = http.client.HTTPSConnection(
            ep.host, ep.port, timeout=connect_timeout_s, context=ssl.create_default_context()
        )
    else:
        conn = http.client.HTTPConnection(ep.host, ep.port, timeout=connect_timeout_s)
    out: dict[str, object] = {}
    deadline = time.monotonic() + connect_timeout_s + read_timeout_s
    _WAITING.changed(+1)
    try:
        if cancelled():
            raise Cancelled()
        helper = threading.Thread(
            target=_exchange,
            args=(conn, read_timeout_s, method, f"{ep.path}/{path}", body, {**headers, **ep.headers}, out),
            name="uats-policy-http",
            daemon=True,
        )
        helper.start()
        while helper.is_alive():
            helper.join(WAIT_SLICE_S)
            if not helper.is_alive():
                break
            if cancelled():
                raise Cancelled()
            if time.monotonic() > deadline:
                raise ReadTimeout(f"no answer within the read timeout ({read_timeout_s:g} s)")
    finally:
        out["abandoned"] = True
        _close(conn)
        _WAITING.changed(-1)
    if "error" in out:
        exc = out["error"]
        if isinstance(exc, socket.timeout) and not out.get("connected"):
            raise TimeoutError(f"no connection within the connect timeout ({connect_timeout_s:g} s)")
        if isinstance(exc, socket.timeout):
            raise ReadTimeout(f"no answer within the read timeout ({read_timeout_s:g} s)")
        raise exc if isinstance(exc, OSError) else OSError(f"{type(exc).__name__}: {exc}")
    status, data = cast(tuple[int, bytes], out["answer"])
    return int(status), bytes(data)


def _close(conn: http.client.HTTPConnection) -> None:
    """Close the socket under a helper that may be blocked reading it: shutdown wakes the read at once."""
    sock = conn.sock
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)
    conn.close()
