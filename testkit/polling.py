"""Waiting on a condition in tests: poll until it holds; the deadline only bounds a hung test, it is never
what a test asserts."""

from __future__ import annotations

import time
from collections.abc import Callable


def until(done: Callable[[], bool], timeout_s: float, tick_s: float = 0.1) -> bool:
    """Poll `done` every tick_s until it holds or timeout_s passed; its last answer."""
    deadline = time.time() + timeout_s
    while not done() and time.time() < deadline:
        time.sleep(tick_s)
    return done()
