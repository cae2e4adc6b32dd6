"""`kill PID` ends a command-line run the way Ctrl-C does.

A cluster scheduler, `docker stop` or `timeout` sends SIGTERM, whose default action kills the process on
the spot: searches in flight would stay 'running' in the run log until a later run reclaimed them. Turned
into KeyboardInterrupt, SIGTERM takes Ctrl-C's path instead: each search in flight ends 'cancelled' with
every node written so far, and the command exits 130.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType


def _raise_interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt(f"signal {signal.Signals(signum).name}")


@contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """Within the block, SIGTERM raises KeyboardInterrupt in the main thread; the previous handler comes
    back afterwards (a CLI's main() also runs inside pytest). Off the main thread it does nothing: only
    the main thread may set handlers."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, _raise_interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
