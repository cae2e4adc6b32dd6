"""The worker pool's bookkeeping (ui.jobs.pool.WorkerPool is assembled from it): its workers, what they report,
the jobs of workers that died, and the ends of jobs that could not be written yet.

Every run-log access here survives a failing database (a full disk): it is logged once, in one line, the
tick goes on, and an end that could not be written is kept and written by a later tick, so no job stays
'queued' or 'running' once the database takes writes again."""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from storage import RunStore
from uats_core.status import LIVE, RunStatus

from .warm import STOP, Unrecorded

log = logging.getLogger(__name__)

T = TypeVar("T")

# A worker whose job has waited this long on a policy server (a request under way, no answer yet) is stalled: it
# computes nothing, so like a paused run it does not count against max_workers (issue 50, item 1: a server that
# accepts and never answers held every worker). Short, because waiting is all such a worker does.
STALL_AFTER_S = 0.5


IDLE_STOP_S = 0.5  # how long shutdown waits for a worker without a job to stop by itself


@dataclass
class Slot:
    """One warm worker process: its inbox, the job it is on (None: idle), the model key it holds."""

    proc: Any
    inbox: Any
    job: Any = None
    key: str | None = None
    loads: int = 0
    retiring: bool = False  # sent STOP: takes no more jobs
    session: str | None = None  # the client session whose job it runs
    upstream_since: float | None = None  # time.time() its job began waiting on a policy server (None: not waiting)

    def stalled(self) -> bool:
        return self.upstream_since is not None and time.time() - self.upstream_since >= STALL_AFTER_S


class PoolState:
    """The base of WorkerPool, which supplies the lock, the outbox, the queue and the limits; every method
    here runs under the lock. Jobs are ui.jobs.pool.RunRequest, ui.jobs.shadow_job.ShadowRequest,
    ui.jobs.import_job.ImportRequest or ui.jobs.case_batch.CaseBatchRequest."""

    _lock: threading.Lock
    _outbox: Any
    _pending: deque[Any]
    limits: Any

    def __init__(self, store: RunStore) -> None:
        self.store = store
        self._slots: dict[int, Slot] = {}
        self._unrecorded: dict[str, tuple[Any, Unrecorded]] = {}  # job id -> (job, (status, reason))
        self._said: dict[str, str] = {}  # what each failing access last logged: a full disk logs once

    # ------------------------------------------------------------------ a failing run log, tolerated
    def _read(self, job: Any, what: Callable[[Any], T], default: T) -> T:
        try:
            value = what(job)
        except Exception as exc:  # noqa: BLE001 - StorageError (full, lost) or a database error: retried next tick
            self._say(job.job_id, f"cannot read job {job.job_id[:8]} from the run log: {exc}")
            return default
        self._said.pop(job.job_id, None)
        return value

    def _end(self, job: Any, reason: str, status: str = RunStatus.FAILED) -> bool:
        """End a job now, or keep the end for a later tick when the run log refuses the write."""
        try:
            ended = job.end(self.store, reason, status)
        except Exception as exc:  # noqa: BLE001 - see _read
            self._unrecorded[job.job_id] = (job, (status, reason))
            self._say(job.job_id, f"cannot end job {job.job_id[:8]} yet ({exc}); retrying every tick")
            return False
        self._unrecorded.pop(job.job_id, None)
        self._said.pop(job.job_id, None)
        if ended:
            log.info("job %s ended %s: %s", job.job_id[:8], status, reason)
        return bool(ended)

    def _say(self, key: str, line: str) -> None:
        if self._said.get(key) != line:
            self._said[key] = line
            log.warning("%s", line)

    def _record_unrecorded(self) -> None:
        for job, (status, reason) in list(self._unrecorded.values()):
            self._end(job, reason, status)

    # ------------------------------------------------------------------ workers
    def _drain(self) -> None:
        while True:
            try:
                msg = self._outbox.get_nowait()
            except queue.Empty:
                return
            kind, sid = msg[0], msg[1]
            slot = self._slots.get(sid)
            if slot is None:
                continue
            if kind == "done" and slot.job is not None and slot.job.job_id == msg[2]:
                job, slot.job, slot.session, slot.upstream_since = slot.job, None, None, None
                if msg[3] is not None:  # the worker could not write the end: this pool writes it
                    self._end(job, msg[3][1], msg[3][0])
                elif self._read(job, lambda j: j.status(self.store), default=RunStatus.FINISHED) in LIVE:
                    self._end(job, "the worker finished without recording the end")
            elif kind == "loaded":
                slot.key, slot.loads = msg[2], msg[3]
            elif kind == "upstream":
                slot.upstream_since = msg[2]

    def _reap(self) -> list[str]:
        failed: list[str] = []
        for sid, slot in list(self._slots.items()):
            if slot.proc.is_alive():
                continue
            slot.proc.join(0)
            del self._slots[sid]
            if slot.job is not None and self._end(
                slot.job, f"worker process exited (code {slot.proc.exitcode}) before the job ended"
            ):
                failed.append(slot.job.job_id)
        return failed

    def _census(self) -> tuple[list[Slot], list[Slot], list[Slot]]:
        """(idle, computing, paused) workers. Idle: no job, or its job already ended in the database (the
        worker is only tidying up; its inbox holds the next job until then). Paused: a run paused with no
        step granted, or a job stalled on its policy server (Slot.stalled): it computes nothing and does not
        count against max_workers."""
        idle, computing, paused = [], [], []
        for s in self._slots.values():
            if not s.proc.is_alive() or s.retiring:
                continue
            if (
                s.job is None
                or self._read(s.job, lambda j: j.status(self.store), default=RunStatus.RUNNING) not in LIVE
            ):
                idle.append(s)
            elif s.stalled() or self._read(s.job, lambda j: j.waiting_paused(self.store), default=False):
                paused.append(s)
            else:
                computing.append(s)
        return idle, computing, paused

    def _paused_runs(self) -> set[str]:
        """Runs of this pool that are paused (started or queued paused): each holds, or will hold, a worker."""
        jobs = [s.job for s in self._slots.values() if s.job is not None] + list(self._pending)
        return {
            j.job_id
            for j in jobs
            if self._read(j, lambda r: r.paused(self.store) and r.status(self.store) in LIVE, default=False)
        }

    def _stop_workers(self, slots: dict[int, Slot], cancel: bool, timeout_s: float) -> None:
        for slot in slots.values():
            if cancel and slot.job is not None:
                try:
                    slot.job.request_cancel(self.store)
                except Exception as exc:  # noqa: BLE001 - ended meanwhile, or the run log is failing
                    log.warning("could not ask job %s to stop: %s", slot.job.job_id[:8], exc)
            slot.inbox.put(STOP)
        deadline = time.time() + timeout_s
        # a worker with no job has nothing to write: it gets a moment to read STOP, then is ended (one still
        # loading its pre-warm models reads nothing until loaded, which on a loaded machine took 30 s and more)
        idle_deadline = time.time() + min(timeout_s, IDLE_STOP_S)
        for sid, slot in slots.items():
            slot.proc.join(max(0.0, (idle_deadline if slot.job is None else deadline) - time.time()))
            if slot.proc.is_alive():
                log.warning("worker %s still running after shutdown; terminating it", sid)
                slot.proc.terminate()
                slot.proc.join(5)
        with self._lock:
            self._drain()  # jobs that ended while their workers stopped
            for slot in slots.values():
                if slot.job is not None:
                    self._end(slot.job, f"worker stopped at app shutdown (code {slot.proc.exitcode})")
