"""Slow clients over raw sockets (issue 50, item 9): a request head that never ends and a body that stalls do not
hold a connection for good (ui/slow_clients.py, ui/web_guard.py), while a normal request and Gradio's long-lived
streams are untouched. The app is served in-process with the launcher's settings (tests/serving.py)."""

from __future__ import annotations

import socket
import threading
import time
from pathlib import Path
from typing import Any

import httpx

from storage import RunStore
from testkit.doubles import WorkerPoolDouble
from testkit.serving import served_app
from ui.slow_clients import HEAD_TIMEOUT_S

WAIT_S = 60.0  # the test's own patience: far above every bound, so only a server that never closes fails it


def _address(url: str) -> tuple[str, int]:
    host, port = url.split("//")[1].split(":")
    return host, int(port)


def _trickle(sock: socket.socket, data: bytes) -> dict[str, Any]:
    """Send `data` a byte a second until the server ends the connection (EOF or a reset) or WAIT_S passes: how
    long it took, whether the server ended it, and what it answered."""
    start, got = time.monotonic(), b""
    for byte in data:
        if time.monotonic() - start > WAIT_S:
            break
        try:
            sock.sendall(bytes([byte]))
            sock.settimeout(1.0)  # the pace of the trickle, not a wait for the server
            chunk = sock.recv(4096)
        except TimeoutError:
            continue
        except (ConnectionResetError, BrokenPipeError):
            return {"ended": True, "after_s": time.monotonic() - start, "answer": got}
        if not chunk:
            return {"ended": True, "after_s": time.monotonic() - start, "answer": got}
        got += chunk
    return {"ended": False, "after_s": time.monotonic() - start, "answer": got}


def _slow_head(url: str, out: dict[str, Any], first: bytes = b"") -> None:
    """A GET whose head never ends (a header line longer than WAIT_S bytes), sent a byte a second; `first`: a
    whole request sent (and answered) before it on the same connection."""
    host, port = _address(url)
    head = f"GET /config HTTP/1.1\r\nHost: {host}:{port}\r\nX-Slow: ".encode() + b"a" * int(2 * WAIT_S)
    with socket.create_connection((host, port), timeout=WAIT_S) as sock:
        if first:
            sock.sendall(first)
            answered = b""
            while b"\r\n\r\n" not in answered:
                answered += sock.recv(65536)
            head_part, _, body = answered.partition(b"\r\n\r\n")
            length = next(
                int(line.split(b":")[1])
                for line in head_part.lower().split(b"\r\n")
                if line.startswith(b"content-length:")
            )
            while len(body) < length:  # the whole answer, so that what comes next is the server's alone
                body += sock.recv(65536)
            out["first"] = head_part.split(b" ")[1]
        out.update(_trickle(sock, head))


def _stream(url: str, out: dict[str, Any]) -> None:
    """Gradio's heartbeat stream (server-sent events the page holds open all its life), read until it has been
    open past the head bound by a margin: how long, and how many events came."""
    host, port = _address(url)
    with socket.create_connection((host, port), timeout=WAIT_S) as sock:
        sock.sendall(f"GET /gradio_api/heartbeat/slowtest HTTP/1.1\r\nHost: {host}:{port}\r\n\r\n".encode())
        start, got = time.monotonic(), b""
        while time.monotonic() - start < HEAD_TIMEOUT_S + 2:
            chunk = sock.recv(4096)
            if not chunk:
                break
            got += chunk
        out.update(open_s=time.monotonic() - start, events=got.count(b"data: ALIVE"), status=got[9:12])


def test_a_slow_request_head_is_dropped_and_a_stream_is_not(tmp_path: Path) -> None:
    """A head sent a byte a second is dropped by the server within HEAD_TIMEOUT_S (today: held as long as the
    client likes), on a fresh connection and after a kept-alive request alike, with no answer (its request was
    never read); meanwhile a stream open longer than the bound keeps going, and a normal request works."""
    store = RunStore(str(tmp_path / "runs.db"))
    try:
        with served_app(store, WorkerPoolDouble(store), tmp_path) as url:
            host, port = _address(url)
            first = f"GET /config HTTP/1.1\r\nHost: {host}:{port}\r\n\r\n".encode()
            fresh, kept, stream = {}, {}, {}
            threads = [
                threading.Thread(target=_slow_head, args=(url, fresh)),
                threading.Thread(target=_slow_head, args=(url, kept, first)),
                threading.Thread(target=_stream, args=(url, stream)),
            ]
            for t in threads:
                t.start()
            for t in threads:
                t.join(3 * WAIT_S)
            for said in (fresh, kept):
                assert said["ended"], f"the server still held a slow head after {said['after_s']:.0f} s"
                assert said["answer"] == b"", said["answer"][:200]  # dropped, not refused as a malformed head
                assert said["after_s"] < WAIT_S
            # not before the bound: the server's clock starts at its accept, after the test's own start (the kept
            # connection's starts at the end of its first answer, which the test reads a moment later: no floor)
            assert fresh["after_s"] >= HEAD_TIMEOUT_S - 1
            assert kept["first"] == b"200"
            assert stream["status"] == b"200" and stream["open_s"] > HEAD_TIMEOUT_S and stream["events"] >= 2, stream
            assert httpx.get(f"{url}/config", timeout=30).status_code == 200
    finally:
        store.close()


def test_a_stalled_body_ends_its_connection(tmp_path: Path) -> None:
    """A body that stalls gets 408 once the guard's body timeout passes (a short one here, the launcher's layer
    otherwise as served) and the server ends the connection with it (today: the 408 left the connection open to a
    client that kept trickling)."""
    from ui.app_ui import guarded_app
    from ui.tabs.exports import downloads_folder
    from ui.web_guard import WebPolicy

    store = RunStore(str(tmp_path / "runs.db"))
    app = guarded_app(WebPolicy(body_timeout_s=1.0), None, downloads_folder(tmp_path / "exports"))
    try:
        with served_app(store, WorkerPoolDouble(store), tmp_path, _app=app) as url:
            host, port = _address(url)
            head = (
                f"POST /gradio_api/queue/join HTTP/1.1\r\nHost: {host}:{port}\r\n"
                "Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n"
            ).encode()
            with socket.create_connection((host, port), timeout=WAIT_S) as sock:
                sock.sendall(head)
                said = _trickle(sock, b"{" * 100)
            assert said["answer"].startswith(b"HTTP/1.1 408"), said["answer"][:200]
            assert b"connection: close" in said["answer"].lower()
            assert said["ended"] and said["after_s"] < WAIT_S
    finally:
        store.close()
