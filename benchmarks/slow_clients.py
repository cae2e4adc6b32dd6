"""`python -m benchmarks slow-clients`: what slow clients hold of the served app (issue 50, item 9). Over raw
sockets to the app served in this process as the launcher serves it: how long a request head sent a byte a second
is held, with the app's head clock (ui/slow_clients.py) and with uvicorn's own protocol (the app before it; capped
at --cap seconds, since it never ends), how long a stalled body is held (its 408, then the connection's end), that
Gradio's heartbeat stream (server-sent events) stays open past the head bound, and a normal GET. The machine's load
is printed beside the figures; the verdict is whether each bound held (held <= the bound plus --slack seconds),
not a speed."""

from __future__ import annotations

import argparse
import json
import os
import socket
import tempfile
import threading
import time
from pathlib import Path
from typing import Any


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "slow-clients",
        help="how long a slow request head and a stalled body hold a connection, with "
        "and without the app's head clock (benchmarks/slow_clients.py)",
    )
    p.add_argument(
        "--cap",
        type=float,
        default=60.0,
        help="give up on a connection after this many seconds (default 60: uvicorn's own protocol never ends one)",
    )
    p.add_argument("--slack", type=float, default=5.0, help="seconds past a bound still judged within it")
    p.set_defaults(func=run)


def trickle(address: tuple[str, int], first: bytes, data: bytes, cap_s: float) -> dict[str, Any]:
    """Send `first`, then `data` a byte a second until the server ends the connection or `cap_s` passes: seconds
    held, whether the server ended it, and the answer's status line (if any)."""
    start, got = time.monotonic(), b""
    with socket.create_connection(address, timeout=cap_s) as sock:
        sock.sendall(first)
        for byte in data:
            if time.monotonic() - start > cap_s:
                break
            try:
                sock.sendall(bytes([byte]))
                sock.settimeout(1.0)  # the trickle's pace
                chunk = sock.recv(4096)
            except TimeoutError:
                continue
            except (ConnectionResetError, BrokenPipeError):
                chunk = b""
            if not chunk:
                return {
                    "held_s": round(time.monotonic() - start, 1),
                    "ended_by_server": True,
                    "answer": got.split(b"\r\n")[0].decode("latin-1"),
                }
            got += chunk
    return {
        "held_s": round(time.monotonic() - start, 1),
        "ended_by_server": False,
        "answer": got.split(b"\r\n")[0].decode("latin-1"),
    }


def heartbeat(address: tuple[str, int], open_s: float) -> dict[str, Any]:
    """Gradio's heartbeat stream read for `open_s` seconds: its status and the events that came."""
    start, got = time.monotonic(), b""
    with socket.create_connection(address, timeout=open_s + 30) as sock:
        sock.sendall(f"GET /gradio_api/heartbeat/bench HTTP/1.1\r\nHost: {address[0]}:{address[1]}\r\n\r\n".encode())
        while time.monotonic() - start < open_s:
            chunk = sock.recv(4096)
            if not chunk:
                break
            got += chunk
    return {
        "open_s": round(time.monotonic() - start, 1),
        "status": got[9:12].decode("latin-1"),
        "events": got.count(b"data: ALIVE"),
    }


def measure(demo: Any, port: int, cap_s: float) -> dict[str, Any]:
    import httpx

    from ui.slow_clients import HEAD_TIMEOUT_S

    address = ("127.0.0.1", port)
    host = f"127.0.0.1:{port}".encode()
    slow_head = b"GET /config HTTP/1.1\r\nHost: " + host + b"\r\nX-Slow: " + b"a" * int(2 * cap_s)
    body = (
        b"POST /gradio_api/queue/join HTTP/1.1\r\nHost: " + host + b"\r\nContent-Type: application/json\r\n"
        b"Content-Length: 100000\r\n\r\n"
    )
    out: dict[str, Any] = {}
    stream = threading.Thread(target=lambda: out.update(stream=heartbeat(address, HEAD_TIMEOUT_S + 6)))
    stream.start()
    t0 = time.perf_counter()
    out["normal_get"] = {
        "status": httpx.get(f"http://127.0.0.1:{port}/config", timeout=60).status_code,
        "s": round(time.perf_counter() - t0, 3),
    }
    out["slow_head"] = trickle(address, b"", slow_head, cap_s)
    stream.join()
    out["stalled_body"] = trickle(address, body, b"{" * int(2 * cap_s), cap_s)
    config = demo.server.config  # uvicorn's own protocol again, as the app served it before the head clock
    config.http_protocol_class = config.http_protocol_class.__bases__[-1]
    out["slow_head_uvicorn_own"] = trickle(address, b"", slow_head, cap_s)
    return out


def run(args: argparse.Namespace) -> int:
    from storage import RunStore
    from testkit.browser import serve_app
    from ui.jobs.pool import WorkerPool
    from ui.request_body import BODY_TIMEOUT_S
    from ui.slow_clients import HEAD_TIMEOUT_S

    with tempfile.TemporaryDirectory() as tmp:
        store = RunStore(str(Path(tmp) / "runs.db"))
        pool = WorkerPool(store, max_workers=1)
        demo, port = serve_app(store, pool, Path(tmp) / "exports")
        load = os.getloadavg()
        try:
            got = measure(demo, port, args.cap)
        finally:
            demo.close()
            pool.shutdown(timeout_s=10)
            store.close()
        load_after = os.getloadavg()
    verdict = {
        "slow_head": got["slow_head"]["ended_by_server"] and got["slow_head"]["held_s"] <= HEAD_TIMEOUT_S + args.slack,
        "stalled_body": got["stalled_body"]["ended_by_server"]
        and got["stalled_body"]["answer"].startswith("HTTP/1.1 408")
        and got["stalled_body"]["held_s"] <= BODY_TIMEOUT_S + args.slack,
        "stream": got["stream"]["status"] == "200" and got["stream"]["open_s"] > HEAD_TIMEOUT_S,
        "normal_get": got["normal_get"]["status"] == 200,
    }
    print(
        json.dumps(
            {
                "head_timeout_s": HEAD_TIMEOUT_S,
                "body_timeout_s": BODY_TIMEOUT_S,
                "cap_s": args.cap,
                "cpus": os.cpu_count(),
                "load_1_5_15_before": [round(x, 2) for x in load],
                "load_1_5_15_after": [round(x, 2) for x in load_after],
                **got,
                "verdict": {k: "held" if v else "missed" for k, v in verdict.items()},
            },
            indent=1,
        )
    )
    return 0 if all(verdict.values()) else 1
