"""A coroutine run to its end on an event loop of its own thread: in a pytest worker that ran the browser tests,
Playwright's sync API keeps a loop running in the main thread, where asyncio.run refuses to start."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

T = TypeVar("T")


def run_on_own_loop(coro: Coroutine[Any, Any, T]) -> T:
    """`coro`'s result, run by asyncio.run in a thread of its own."""
    with ThreadPoolExecutor(1) as own_loop:
        return own_loop.submit(asyncio.run, coro).result()
