"""Shadow scores of a run's nodes (schema.shadow_scores): written once per (run, node), replaced when
scored again; reading them never touches the run's own nodes or cost. And the jobs that compute them
(schema.shadow_jobs): queued, running, ended, with their progress and cancel flag."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa

from uats_core.status import RunStatus

from . import schema as S
from .connection import this_process
from .jobrows import cancel_flag, dead_jobs, end_job, get_job, start_job, update_live

_FIELDS = ("mc_scores", "mean", "var", "ucb", "ood", "tau", "prm")


def write_shadow(store: Any, run_id: str, rows: Sequence[dict[str, Any]]) -> int:
    """Store shadow rows ({node_id, mc_scores, mean, var, ucb, ood, tau, prm}) for run_id, replacing any
    earlier ones of the same nodes. Returns how many were written."""
    store.get_run(run_id)  # a missing run is an error, as everywhere in storage
    now = time.time()
    values = [
        {"run_id": run_id, "node_id": int(r["node_id"]), **{k: r.get(k) for k in _FIELDS}, "written_at": now}
        for r in rows
    ]
    ids = [v["node_id"] for v in values]
    with store.engine.begin() as conn:
        if ids:
            conn.execute(
                sa.delete(S.shadow_scores).where(S.shadow_scores.c.run_id == run_id, S.shadow_scores.c.node_id.in_(ids))
            )
            conn.execute(sa.insert(S.shadow_scores), values)
    return len(values)


def read_shadow(store: Any, run_id: str) -> dict[int, dict[str, Any]]:
    """node id -> shadow row of run_id ({} when never shadow-scored)."""
    t = S.shadow_scores
    with store.engine.connect() as conn:
        rows = conn.execute(sa.select(t).where(t.c.run_id == run_id)).mappings().all()
    return {int(r["node_id"]): {k: r[k] for k in ("node_id", *_FIELDS, "written_at")} for r in rows}


# ------------------------------------------------------------------ shadow scoring jobs
def create_shadow_job(store: Any, job_id: str, run_id: str, k: int, prm: str | None, total: int) -> None:
    """A queued job row (the app's pool then hands the job to a worker), recorded as this process's."""
    store.get_run(run_id)
    now = time.time()
    with store.engine.begin() as conn:
        conn.execute(
            sa.insert(S.shadow_jobs),
            [
                dict(
                    job_id=job_id,
                    run_id=run_id,
                    k=int(k),
                    prm=prm,
                    status=RunStatus.QUEUED,
                    done=0,
                    total=int(total),
                    cancel_requested=False,
                    server=this_process(),
                    created_at=now,
                    updated_at=now,
                )
            ],
        )


def get_shadow_job(store: Any, job_id: str) -> dict[str, Any]:
    return get_job(store, S.shadow_jobs, job_id, "shadow scoring job")


def start_shadow_job(store: Any, job_id: str) -> bool:
    """The worker took the job: running, with its pid. False when it had ended (cancelled while queued)."""
    return start_job(store, S.shadow_jobs, job_id)


def shadow_job_progress(store: Any, job_id: str, done: int, total: int) -> None:
    update_live(store, S.shadow_jobs, job_id, done=int(done), total=int(total))


def request_shadow_cancel(store: Any, job_id: str) -> bool:
    """Ask the job to stop after its current batch. False when it had ended."""
    return update_live(store, S.shadow_jobs, job_id, cancel_requested=True)


def shadow_cancel_requested(store: Any, job_id: str) -> bool:
    return cancel_flag(store, S.shadow_jobs, job_id)


def end_shadow_job(store: Any, job_id: str, status: str, error: str | None = None) -> bool:
    """End a job (finished, failed or cancelled); leaves an ended one alone (returns False then)."""
    return end_job(store, S.shadow_jobs, job_id, status, error)


def mark_dead_shadow_jobs(store: Any) -> list[str]:
    """Fail the unfinished jobs whose server is gone (the app's start-up; a live server's pool notices its own
    dead workers). Their ids."""
    return [
        job
        for job, server in dead_jobs(store, S.shadow_jobs)
        if end_shadow_job(store, job, RunStatus.FAILED, f"the server that ran it ({server}) stopped")
    ]
