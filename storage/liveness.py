"""Whether a run's worker process is still there: the app's start-up, the CLI's `runs`/`show` and the
evaluation harness all decide 'died without ending its run' with this one check."""

from __future__ import annotations

import os


def pid_alive(pid: int) -> bool:
    """True when process `pid` exists on this host (one owned by another user exists too)."""
    if int(pid) <= 0:  # 0 and negative ids name process groups, never one worker
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    return True
