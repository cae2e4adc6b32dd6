"""A request body read by the front door (ui/web_guard.py) before Gradio sees it: whole, within a byte limit and a
time limit, then handed on as it came; an event's JSON body checked for what Gradio's parsing would raise on."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass, field
from typing import Any

Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

BODY_TIMEOUT_S = 30.0  # a request body not whole by then gets 408: a slow client holds no connection for good


@dataclass
class BufferedBody:
    """A request body read whole (within its limit) before the app sees it, handed on as it came."""

    data: bytes
    receive: Receive
    sent: bool = field(default=False)

    async def replay(self) -> Message:
        if not self.sent:
            self.sent = True
            return {"type": "http.request", "body": self.data, "more_body": False}
        return await self.receive()  # after the body: the client's disconnect, as the server reports it

    def fresh(self) -> BufferedBody:
        return BufferedBody(self.data, self.receive)


class SlowBody(Exception):
    """The body did not arrive within the policy's body_timeout_s."""


async def read_body(receive: Receive, limit: int, timeout_s: float = BODY_TIMEOUT_S) -> bytes | None:
    """The body, or None once it passes `limit` bytes (or the client left); SlowBody when it is not whole within
    `timeout_s`."""
    import asyncio

    chunks, size = [], 0
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    while True:
        try:
            message = await asyncio.wait_for(receive(), max(0.0, deadline - loop.time()))
        except asyncio.TimeoutError:
            raise SlowBody from None
        if message["type"] == "http.disconnect":
            return None
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            return None
        chunks.append(chunk)
        if not message.get("more_body", False):
            return b"".join(chunks)


def _no_constant(name: str) -> Any:
    raise ValueError(name)


def bad_event_body(data: bytes) -> str | None:
    """Why an event's JSON body is refused before Gradio parses it, in one line naming the input; None when it is
    fine (or not JSON: Gradio answers that). NaN and infinity, which Python's JSON reads as numbers, reached number
    fields (a rounding gr.Number raised on them); JSON nested past Python's recursion limit raised too; both
    became a bare {'error': None}."""
    try:
        json.loads(data, parse_constant=_no_constant)
    except RecursionError:
        return "the request body nests its JSON too deep; send the values the page sends"
    except ValueError as exc:
        if str(exc) in ("NaN", "Infinity", "-Infinity"):
            where = next((f"data[{i}]" for i, v in enumerate(_event_inputs(data)) if v == str(exc)), "an input")
            return f"{where}: {exc} is not a number this app takes; give a finite number"
        return None
    return None


def _event_inputs(data: bytes) -> list[Any]:
    """An event body's inputs with NaN and infinity kept as text, to name the one that holds them."""
    try:
        body = json.loads(data, parse_constant=str)
    except (ValueError, RecursionError):
        return []
    inputs = body.get("data") if isinstance(body, dict) else None
    return inputs if isinstance(inputs, list) else []
