"""Slow clients: the HTTP server drops a connection whose request head is not whole within HEAD_TIMEOUT_S.

uvicorn parses a request's head before any ASGI layer sees the request (ui/web_guard.py bounds the body from
there on: ui/request_body.py's BODY_TIMEOUT_S), and it has no clock on a head: its keep-alive timer (5 s) runs
only between requests and is reset by every byte, so a client that sends a header a byte every few seconds held
its connection for good
(slowloris). Gradio builds uvicorn's Config itself and passes none of its settings through, but uvicorn's server
makes each connection's protocol from `config.http_protocol_class` at accept time (uvicorn/server.py,
Server.startup's create_protocol), so the app's server is given a subclass of the class uvicorn chose (h11,
httptools or zttp alike) right after it starts (bound_request_heads). Connections accepted before that, in the
milliseconds between the server listening and the swap, keep uvicorn's own class.

The clock starts when a connection is made and again when a response is complete (the next request's head is due
from then: a client that trickles a body the app never read is dropped too), and stops when a head is whole or
the connection became a WebSocket. Answers that stream for minutes (the queue's server-sent events, Gradio's
heartbeat) run after their head, off the clock."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

log = logging.getLogger(__name__)

# Any real client sends a head (a few hundred bytes to a few kB) in one packet; 10 s still covers a packet lost
# three times (TCP's first retransmission waits 1 s, then 2 s, then 4 s: RFC 6298), and a client that needs longer
# is a slow-header attack (nginx and Node bound heads too: client_header_timeout, headersTimeout).
HEAD_TIMEOUT_S = 10.0


class HeadDeadline:
    """A mixin over one of uvicorn's HTTP protocol classes (see the module's doc): `head_timeout_s` from the
    connection, or from the end of the last response, to a whole request head, or the connection is closed."""

    head_timeout_s: float = HEAD_TIMEOUT_S
    _head_timer: asyncio.TimerHandle | None = None

    # the protocol classes' own attributes, as uvicorn's h11, httptools and zttp protocols all have them
    transport: asyncio.Transport
    loop: asyncio.AbstractEventLoop
    cycle: Any
    client: Any

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)  # type: ignore[misc]
        self._arm_head_clock()

    def data_received(self, data: bytes) -> None:
        before = self.cycle
        super().data_received(data)  # type: ignore[misc]
        self._stop_when_head_whole(before)

    def on_response_complete(self) -> None:
        before = self.cycle
        self._arm_head_clock()
        super().on_response_complete()  # type: ignore[misc]  # may start a pipelined request already received
        self._stop_when_head_whole(before)

    def connection_lost(self, exc: Exception | None) -> None:
        self._stop_head_clock()
        super().connection_lost(exc)  # type: ignore[misc]

    def _arm_head_clock(self) -> None:
        self._stop_head_clock()
        self._head_timer = self.loop.call_later(self.head_timeout_s, self._head_too_slow)

    def _stop_head_clock(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _stop_when_head_whole(self, before: Any) -> None:
        """A new request cycle (its head parsed) or another protocol on the transport (a WebSocket): off the clock."""
        if self.cycle is not before or self.transport.get_protocol() is not self:
            self._stop_head_clock()

    def _head_too_slow(self) -> None:
        self._head_timer = None
        if self.transport.is_closing():
            return
        where = "%s:%d" % tuple(self.client) if self.client else "a client"
        log.warning(
            "closed the connection of %s: no whole request head (or only the rest of a body already "
            "answered) within %g s",
            where,
            self.head_timeout_s,
        )
        self.transport.close()


def bound_request_heads(server: Any) -> bool:
    """Give a started uvicorn server (Gradio's Blocks.server) the head clock for every connection it accepts from
    now on. False when there is no such server (a launch that a test recorded instead of serving)."""
    config = getattr(server, "config", None)
    base = getattr(config, "http_protocol_class", None)
    if base is None:
        return False
    if not issubclass(base, HeadDeadline):
        config.http_protocol_class = type(f"HeadDeadline{base.__name__}", (HeadDeadline, base), {})
    return True
