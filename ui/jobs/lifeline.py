"""A worker process dies with the app that started it. `kill -9` of the app used to leave its workers
(400-470 MB each) alive for 45 minutes and more, still holding paused runs 'running'.

Two guards, called first thing in the worker: Linux's PR_SET_PDEATHSIG (prctl via ctypes) has the kernel
send SIGKILL when the thread that started the worker ends, and a watch thread, for other systems or a
missed signal, exits once the worker has been re-parented (its parent id is no longer the app's). The
pool starts workers from its own thread, which lives until the pool has shut down."""

from __future__ import annotations

import ctypes
import logging
import os
import signal
import sys
import threading
import time

log = logging.getLogger(__name__)

PR_SET_PDEATHSIG = 1  # <linux/prctl.h>
WATCH_S = 1.0  # how often the fallback looks at the parent id


def _kernel_guard() -> bool:
    """Ask Linux to SIGKILL this process when its parent thread ends; False where that is not available."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0) != 0:
            log.warning("prctl(PR_SET_PDEATHSIG) failed: %s", os.strerror(ctypes.get_errno()))
            return False
    except (OSError, AttributeError) as exc:
        log.warning("prctl is not available (%s); relying on the parent watch", exc)
        return False
    return True


def _watch(parent_pid: int, every_s: float) -> None:
    while True:
        time.sleep(every_s)
        if os.getppid() != parent_pid:
            log.warning("the app (pid %s) is gone; this worker exits", parent_pid)
            os._exit(1)  # nothing to tidy: the run log keeps what was written, a restart ends the run


def die_with_parent(parent_pid: int, every_s: float = WATCH_S) -> bool:
    """Make this process end when `parent_pid` (the app) does. Returns whether the kernel guard is set."""
    guarded = _kernel_guard()
    if os.getppid() != parent_pid:  # the app died before the guard was set: nobody would send the signal
        os._exit(1)
    threading.Thread(target=_watch, args=(parent_pid, every_s), name="uats-parent-watch", daemon=True).start()
    return guarded
