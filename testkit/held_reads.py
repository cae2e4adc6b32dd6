"""Reads a test stands in for on the server, counted as they run: how many at once now and at most, and held until the
test lets them go (the node page's and a click's bounds: tests/test_node_page.py, tests/test_click_off_queue.py)."""

from __future__ import annotations

import threading
import time


class HeldReads:
    """`reading` the reads under way now, `most` the most at once; `read(hold_s)` is one read that lasts `hold_s`,
    or until `release` is set when None."""

    def __init__(self) -> None:
        self.reading = self.most = 0
        self.release = threading.Event()
        self._lock = threading.Lock()

    def read(self, hold_s: float | None = None) -> None:
        with self._lock:
            self.reading += 1
            self.most = max(self.most, self.reading)
        try:
            if hold_s is None:
                self.release.wait(120)  # the test sets release; a failing test's reads end by themselves
            else:
                time.sleep(hold_s)
        finally:
            with self._lock:
                self.reading -= 1

    def wait_for(self, n: int, timeout_s: float = 60) -> None:
        """Until `n` reads are under way (or `timeout_s` passed: the test's assertions then say what happened)."""
        deadline = time.monotonic() + timeout_s
        while self.reading < n and time.monotonic() < deadline:
            time.sleep(0.05)
