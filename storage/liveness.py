"""Whether a run's worker process, or the server that registered the run, is still there: the app's start-up,
the CLI's `runs`/`show` and the evaluation harness all decide 'died without ending its run' with these checks.

A server is recorded as `host|pid|start token`: the token (the boot id and the process's start time, from
/proc) tells a restarted server that got the same pid (pid 1 in a container) from the one that registered
the run."""

from __future__ import annotations

import os
import socket
from pathlib import Path


def pid_alive(pid: int) -> bool:
    """True when process `pid` exists on this host (one owned by another user exists too) and has not
    exited: a zombie (exited, not yet reaped, as orphans stay where nothing reaps them) is not alive."""
    if int(pid) <= 0:  # 0 and negative ids name process groups, never one worker
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    return _proc_state(int(pid)) != "Z"


def _stat_fields(pid: int) -> list[str]:
    """/proc/<pid>/stat after the command name (which may hold spaces and parentheses): the state first,
    the start time 20th; [] where /proc does not say (not Linux, or the process is gone)."""
    try:
        stat = Path(f"/proc/{int(pid)}/stat").read_text()
    except OSError:
        return []
    return stat.rsplit(")", 1)[-1].split()


def _proc_state(pid: int) -> str:
    """The state letter ('R', 'S', 'Z', ...) of process `pid`, '' where /proc does not say."""
    fields = _stat_fields(pid)
    return fields[0] if fields else ""


def start_token(pid: int) -> str:
    """'<boot id>:<start time in clock ticks>' of process `pid`, or '' where /proc does not say."""
    fields = _stat_fields(pid)
    try:
        boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return ""
    return f"{boot}:{fields[19]}" if len(fields) > 19 else ""


def this_process() -> str:
    """This process's identity, as recorded on the runs it registers."""
    return f"{socket.gethostname()}|{os.getpid()}|{start_token(os.getpid())}"


def process_gone(identity: str | None) -> bool:
    """True when the process `identity` (this_process() of some earlier process) names is known to be gone:
    it ran on this host, and its pid is free or now belongs to a process started later. Unknown (another
    host, no identity recorded): False."""
    host, _, rest = (identity or "").partition("|")
    pid_text, _, token = rest.partition("|")
    if host != socket.gethostname() or not pid_text.isdigit():
        return False
    pid = int(pid_text)
    if not pid_alive(pid):
        return True
    return bool(token) and start_token(pid) not in ("", token)
