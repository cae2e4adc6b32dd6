"""Run control, the part of RunStore a front end and a worker talk through: cancel, pause, single steps,
and ending runs whose worker died."""

from __future__ import annotations

import logging
import socket
import time
from typing import Any

import sqlalchemy as sa

from uats_core.cancel import SearchCancelled
from uats_core.status import ENDED, LIVE, RunStatus

from . import schema as S
from .connection import StorageError, pid_alive, process_gone

log = logging.getLogger(__name__)


class RunControl:
    """Mixed into RunStore (it supplies `engine`)."""

    engine: sa.Engine

    def request_cancel(self, run_id: str) -> bool:
        """Ask the worker to stop after its current iteration. False when the run had already ended."""
        if not self._control(run_id, cancel_requested=True):
            return False
        log.info("cancel requested for run %s", run_id)
        return True

    def cancel_requested(self, run_id: str) -> bool:
        with self.engine.connect() as conn:
            flag = conn.execute(
                sa.select(S.runs.c.cancel_requested).where(S.runs.c.run_id == run_id)
            ).scalar_one_or_none()
        return bool(flag)

    def _control(self, run_id: str, **values: Any) -> bool:
        """Set control columns of a run that has not ended (cancel, pause, steps); False when it had ended."""
        with self.engine.begin() as conn:
            status = conn.execute(sa.select(S.runs.c.status).where(S.runs.c.run_id == run_id)).scalar_one_or_none()
            if status is None:
                raise StorageError(f"no run {run_id}", field="run")
            if status in ENDED:
                return False
            conn.execute(sa.update(S.runs).where(S.runs.c.run_id == run_id).values(**values))
        return True

    def pause_run(self, run_id: str) -> bool:
        """Hold the run before its next iteration (the current one completes). False when it had ended."""
        return self._control(run_id, paused=True, step_credits=0)

    def resume_run(self, run_id: str) -> bool:
        """Let a paused run go on to its end. False when it had ended."""
        return self._control(run_id, paused=False, step_credits=0)

    def step_run(self, run_id: str, steps: int = 1) -> bool:
        """Let a paused run (pausing it if it was not) do `steps` more iterations, then wait again."""
        if int(steps) < 1:
            raise StorageError(f"steps must be >= 1, got {steps}", field="steps")
        return self._control(run_id, paused=True, step_credits=S.runs.c.step_credits + int(steps))

    def is_paused(self, run_id: str) -> bool:
        with self.engine.connect() as conn:
            flag = conn.execute(sa.select(S.runs.c.paused).where(S.runs.c.run_id == run_id)).scalar_one_or_none()
        return bool(flag)

    def wait_turn(self, run_id: str, poll_s: float = 0.2, pause_timeout_s: float | None = None) -> bool:
        """What a worker calls before each iteration: returns True when the run should stop (cancel
        requested), False when it may do one iteration; while the run is paused with no step granted it
        waits. A granted step is used up here, atomically, so two clicks give exactly two iterations.
        pause_timeout_s: a run left paused that long without a step or resume ends (SearchCancelled with the
        reason), so that a forgotten pause does not hold its worker forever."""
        waited_since: float | None = None
        while True:
            with self.engine.begin() as conn:
                row = conn.execute(
                    sa.select(S.runs.c.cancel_requested, S.runs.c.paused, S.runs.c.step_credits).where(
                        S.runs.c.run_id == run_id
                    )
                ).first()
                if row is None:
                    raise StorageError(f"no run {run_id}", field="run")
                if row.cancel_requested:
                    return True
                if not row.paused:
                    return False
                if row.step_credits > 0:
                    conn.execute(
                        sa.update(S.runs)
                        .where(S.runs.c.run_id == run_id)
                        .values(step_credits=S.runs.c.step_credits - 1)
                    )
                    return False
            now = time.monotonic()
            waited_since = now if waited_since is None else waited_since
            if pause_timeout_s is not None and now - waited_since >= pause_timeout_s:
                raise SearchCancelled(
                    f"cancelled: paused for {pause_timeout_s:g} s without a step or resume (the server's pause timeout)"
                )
            # No heartbeat write while waiting: pages redraw when updated_at moves, and a paused worker's
            # liveness is its process (mark_dead_workers), not this row.
            time.sleep(poll_s)

    def waiting_paused(self, run_id: str) -> bool:
        """True while the run is paused with no step granted: its worker computes nothing (the pool does not
        count it against the searches running at once)."""
        with self.engine.connect() as conn:
            row = conn.execute(
                sa.select(S.runs.c.status, S.runs.c.paused, S.runs.c.step_credits).where(S.runs.c.run_id == run_id)
            ).first()
        return row is not None and row.status == RunStatus.RUNNING and bool(row.paused) and not row.step_credits

    def mark_failed(self, run_id: str, error: str, status: str = RunStatus.FAILED) -> bool:
        """End a run whose worker died (or never started) without RunEnded; status 'cancelled' when the
        user stopped it before its search began. Leaves ended runs alone (returns False then)."""
        if status not in (RunStatus.FAILED, RunStatus.CANCELLED):
            raise StorageError(f"mark_failed takes status 'failed' or 'cancelled', not {status!r}", field="status")
        with self.engine.begin() as conn:
            res = conn.execute(
                sa.update(S.runs)
                .where(S.runs.c.run_id == run_id, S.runs.c.status.in_(LIVE))
                .values(status=status, error=error, ended_at=time.time())
            )
        if res.rowcount:
            log.warning("run %s marked %s: %s", run_id, status, error)
        return bool(res.rowcount)

    def mark_dead_workers(self, queued_grace_s: float = 600.0) -> list[str]:
        """Mark failed the unfinished runs whose server (the process that registered them) is gone, those of
        this host whose worker process is gone, and queued runs no worker picked up within `queued_grace_s`.
        Returns their ids. For a front end at start-up."""
        host = socket.gethostname()
        now = time.time()
        dead: list[str] = []
        with self.engine.connect() as conn:
            rows = conn.execute(
                sa.select(
                    S.runs.c.run_id,
                    S.runs.c.status,
                    S.runs.c.worker_pid,
                    S.runs.c.worker_host,
                    S.runs.c.updated_at,
                    S.runs.c.server,
                ).where(S.runs.c.status.in_(LIVE))
            ).all()
        for r in rows:
            if process_gone(r.server):  # an orphaned worker may live on; the run is over all the same
                why = f"the server that ran it ({r.server}) stopped before the run ended"
            elif r.worker_pid is not None and r.worker_host == host and not pid_alive(r.worker_pid):
                why = f"worker process {r.worker_pid} died before the run ended"
            elif r.status == RunStatus.QUEUED and r.worker_pid is None and now - (r.updated_at or 0) > queued_grace_s:
                why = f"no worker started the run within {queued_grace_s:.0f} s"
            else:
                continue
            if self.mark_failed(r.run_id, why):
                dead.append(r.run_id)
        return dead

    def delete_run(self, run_id: str) -> None:
        with self.engine.begin() as conn:
            for t in (
                S.stars,
                S.shadow_scores,
                S.shadow_jobs,
                S.iterations,
                S.node_history,
                S.nodes,
            ):  # explicit: not every db enforces CASCADE
                conn.execute(sa.delete(t).where(t.c.run_id == run_id))
            res = conn.execute(sa.delete(S.runs).where(S.runs.c.run_id == run_id))
        if not res.rowcount:
            raise StorageError(f"no run {run_id}", field="run")
