"""A fixed file the page loads (plotly.js, ui/static/README.md), answered gzip-compressed to a browser that accepts
it: the 1.2 MB bundle is a third of that on the wire, and a link opened in a browser that never saw the app waits
for it before anything is drawn (over loopback the plain file took 0.1 to 0.9 s while the server read the run)."""

from __future__ import annotations

import asyncio
import gzip
from functools import cache
from pathlib import Path

from .request_body import Send

CACHE_CONTROL = b"public, max-age=86400"  # a day: the file changes only with the app's version


@cache
def _bodies(path: Path) -> tuple[bytes, bytes]:
    """The file and its gzip (mtime 0: the same bytes at every start), read and compressed once per process."""
    raw = path.read_bytes()
    return raw, gzip.compress(raw, compresslevel=9, mtime=0)


def accepts_gzip(accept_encoding: str) -> bool:
    """Whether an Accept-Encoding header admits gzip (a q of 0 refuses it: RFC 9110 §12.5.3)."""
    for item in accept_encoding.lower().split(","):
        name, _, params = item.partition(";")
        if name.strip() in ("gzip", "*"):
            param = params.strip()
            q = param.removeprefix("q=").strip() if param.startswith("q=") else "1"
            try:
                return float(q) > 0
            except ValueError:
                return False
    return False


async def send_asset(path: Path, media_type: str, accept_encoding: str, head: bool, send: Send) -> None:
    """Answer 200 with the file at `path`, gzip-encoded when `accept_encoding` admits it (the first answer reads and
    compresses it, off the event loop); `head`: the headers alone."""
    raw, packed = await asyncio.to_thread(_bodies, path)
    zipped = accepts_gzip(accept_encoding)
    body = packed if zipped else raw
    headers = [
        (b"content-type", media_type.encode("latin-1")),
        (b"content-length", str(len(body)).encode("latin-1")),
        (b"cache-control", CACHE_CONTROL),
        (b"vary", b"Accept-Encoding"),
    ] + ([(b"content-encoding", b"gzip")] if zipped else [])
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    await send({"type": "http.response.body", "body": b"" if head else body})
