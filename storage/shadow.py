"""Shadow scores of a run's nodes (schema.shadow_scores): written once per (run, node), replaced when
scored again; reading them never touches the run's own nodes or cost. And the jobs that compute them
(schema.shadow_jobs): queued, running, ended, with their progress and cancel flag."""

from __future__ import annotations

import os
import time
from typing import Any, Sequence

import sqlalchemy as sa

from . import schema as S
from .connection import StorageError, process_gone, this_process

_FIELDS = ("mc_scores", "mean", "var", "ucb", "ood", "tau", "prm")


def write_shadow(store: Any, run_id: str, rows: Sequence[dict[str, Any]]) -> int:
    """Store shadow rows ({node_id, mc_scores, mean, var, ucb, ood, tau, prm}) for run_id, replacing any
    earlier ones of the same nodes. Returns how many were written."""
    store.get_run(run_id)  # a missing run is an error, as everywhere in storage
    now = time.time()
    values = [{"run_id": run_id, "node_id": int(r["node_id"]), **{k: r.get(k) for k in _FIELDS}, "written_at": now}
              for r in rows]
    ids = [v["node_id"] for v in values]
    with store.engine.begin() as conn:
        if ids:
            conn.execute(sa.delete(S.shadow_scores).where(S.shadow_scores.c.run_id == run_id,
                                                          S.shadow_scores.c.node_id.in_(ids)))
            conn.execute(sa.insert(S.shadow_scores), values)
    return len(values)


def read_shadow(store: Any, run_id: str) -> dict[int, dict[str, Any]]:
    """node id -> shadow row of run_id ({} when never shadow-scored)."""
    t = S.shadow_scores
    with store.engine.connect() as conn:
        rows = conn.execute(sa.select(t).where(t.c.run_id == run_id)).mappings().all()
    return {int(r["node_id"]): {k: r[k] for k in ("node_id", *_FIELDS, "written_at")} for r in rows}


# ------------------------------------------------------------------ shadow scoring jobs
_LIVE = ("queued", "running")


def create_shadow_job(store: Any, job_id: str, run_id: str, k: int, prm: str | None, total: int) -> None:
    """A queued job row (the app's pool then hands the job to a worker), recorded as this process's."""
    store.get_run(run_id)
    now = time.time()
    with store.engine.begin() as conn:
        conn.execute(sa.insert(S.shadow_jobs), [dict(job_id=job_id, run_id=run_id, k=int(k), prm=prm, status="queued",
                                                     done=0, total=int(total), cancel_requested=False,
                                                     server=this_process(), created_at=now, updated_at=now)])


def get_shadow_job(store: Any, job_id: str) -> dict[str, Any]:
    with store.engine.connect() as conn:
        row = conn.execute(sa.select(S.shadow_jobs).where(S.shadow_jobs.c.job_id == job_id)).mappings().first()
    if row is None:
        raise StorageError(f"no shadow scoring job {job_id}", field="job")
    return dict(row)


def _update_live(store: Any, job_id: str, **values: Any) -> bool:
    """Set columns of a job that has not ended; False when it had ended (or does not exist)."""
    t = S.shadow_jobs
    with store.engine.begin() as conn:
        res = conn.execute(sa.update(t).where(t.c.job_id == job_id, t.c.status.in_(_LIVE))
                           .values(updated_at=time.time(), **values))
    return bool(res.rowcount)


def start_shadow_job(store: Any, job_id: str) -> bool:
    """The worker took the job: running, with its pid. False when it had ended (cancelled while queued)."""
    return _update_live(store, job_id, status="running", worker_pid=os.getpid())


def shadow_job_progress(store: Any, job_id: str, done: int, total: int) -> None:
    _update_live(store, job_id, done=int(done), total=int(total))


def request_shadow_cancel(store: Any, job_id: str) -> bool:
    """Ask the job to stop after its current batch. False when it had ended."""
    return _update_live(store, job_id, cancel_requested=True)


def shadow_cancel_requested(store: Any, job_id: str) -> bool:
    t = S.shadow_jobs
    with store.engine.connect() as conn:
        return bool(conn.execute(sa.select(t.c.cancel_requested).where(t.c.job_id == job_id)).scalar_one_or_none())


def end_shadow_job(store: Any, job_id: str, status: str, error: str | None = None) -> bool:
    """End a job (finished, failed or cancelled); leaves an ended one alone (returns False then)."""
    if status not in S.ENDED_STATUSES:
        raise StorageError(f"a job ends finished, failed or cancelled, not {status!r}", field="status")
    return _update_live(store, job_id, status=status, error=error, ended_at=time.time())


def mark_dead_shadow_jobs(store: Any) -> list[str]:
    """Fail the unfinished jobs whose server is gone (the app's start-up; a live server's pool notices its own
    dead workers). Their ids."""
    t = S.shadow_jobs
    with store.engine.connect() as conn:
        rows = conn.execute(sa.select(t.c.job_id, t.c.server).where(t.c.status.in_(_LIVE))).all()
    return [r.job_id for r in rows if process_gone(r.server)
            and end_shadow_job(store, r.job_id, "failed", f"the server that ran it ({r.server}) stopped")]
