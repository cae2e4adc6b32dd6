"""Cancelling a search inside an iteration, within about a second.

The iteration boundary check (SearchContext.begin_iteration) may block (step mode) and comes only once an
iteration ends, which took minutes for large budgets. So run_search also installs a cheap, non-blocking
check for its thread, and the backends poll it between batches: the policy per generated token, the PRM
between its forward batches. A positive poll raises SearchCancelled; the run ends 'cancelled' with every
node written so far."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator

POLL_INTERVAL_S = 0.25  # the app's check is a database read: a few a second is plenty for a 2 s promise

_local = threading.local()


class SearchCancelled(Exception):
    """Raised when the caller asked to stop: at an iteration boundary or at a check point inside one."""


class CancelCheck:
    """`requested` polled at most every `interval_s` seconds; once it said yes, the answer stays yes."""

    def __init__(self, requested: Callable[[], bool], interval_s: float = POLL_INTERVAL_S) -> None:
        self.requested = requested
        self.interval_s = interval_s
        self._last = float("-inf")
        self._yes = False

    def __call__(self) -> bool:
        if not self._yes:
            now = time.monotonic()
            if now - self._last >= self.interval_s:
                self._last = now
                self._yes = bool(self.requested())
        return self._yes


@contextlib.contextmanager
def cancellable(requested: Callable[[], bool] | None, interval_s: float = POLL_INTERVAL_S) -> Iterator[None]:
    """Within the block, check points on this thread poll `requested` (None: nothing to poll)."""
    previous = getattr(_local, "check", None)
    _local.check = CancelCheck(requested, interval_s) if requested is not None else None
    try:
        yield
    finally:
        _local.check = previous


def cancel_pending() -> bool:
    """True when this thread's search was asked to stop (polls, throttled)."""
    check = getattr(_local, "check", None)
    return bool(check is not None and check())


def current_check() -> Callable[[], bool]:
    """This thread's check as a callable another thread may poll (a backend's helper threads: the check is
    per thread, so a request sent from a thread pool would otherwise never see the cancel)."""
    check = getattr(_local, "check", None)
    return check if check is not None else (lambda: False)


def checkpoint(where: str) -> None:
    """Raise SearchCancelled when this thread's search was asked to stop."""
    if cancel_pending():
        raise SearchCancelled(f"cancelled {where}")
