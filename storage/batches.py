"""Case batches (schema.batch_jobs): a list of searches the app's pool runs as one job, one after another in
one worker; each search is a run of its own in `runs`. Here: the job's row, its progress and cancel flag."""

from __future__ import annotations

import time
from typing import Any

import sqlalchemy as sa

from uats_core.status import RunStatus

from . import schema as S
from .connection import this_process
from .jobrows import LIVE, cancel_flag, dead_jobs, end_job, get_job, start_job, update_live


def create_batch_job(store: Any, job_id: str, total: int, spec: dict[str, Any], owner: str | None = None) -> None:
    """A queued batch row (the app's pool then hands the job to a worker), recorded as this process's."""
    now = time.time()
    with store.engine.begin() as conn:
        conn.execute(
            sa.insert(S.batch_jobs),
            [
                dict(
                    job_id=job_id,
                    spec=spec,
                    status=RunStatus.QUEUED,
                    done=0,
                    total=int(total),
                    failed=0,
                    cancel_requested=False,
                    owner=owner,
                    server=this_process(),
                    created_at=now,
                    updated_at=now,
                )
            ],
        )


def get_batch_job(store: Any, job_id: str) -> dict[str, Any]:
    return get_job(store, S.batch_jobs, job_id, "case batch")


ANY_OWNER = "*"  # live_batch_jobs: every owner's (not an owner value: requesters are user:... or session:...)


def live_batch_jobs(store: Any, owner: str | None = ANY_OWNER) -> list[str]:
    """The batches of this server that are queued or running, oldest first: `owner`'s (None: those without one,
    queued outside a page), or everyone's."""
    t = S.batch_jobs
    query = sa.select(t.c.job_id).where(t.c.status.in_(LIVE), t.c.server == this_process())
    if owner != ANY_OWNER:
        query = query.where(t.c.owner.is_(None) if owner is None else t.c.owner == owner)
    with store.engine.connect() as conn:
        return list(conn.execute(query.order_by(t.c.created_at)).scalars())


BATCH_LIST_ROWS = 20  # a user's batches the case finder lists, newest first


def owner_batch_jobs(store: Any, owner: str, limit: int = BATCH_LIST_ROWS) -> list[dict[str, Any]]:
    """`owner`'s batches, past and going (any server's), newest first: id, status, counts, times and error. Only
    theirs: `owner` is a requester (user:... or session:...), never None or ANY_OWNER here."""
    if not owner or owner == ANY_OWNER:
        raise ValueError("owner_batch_jobs lists one requester's batches")
    t = S.batch_jobs
    cols = (
        t.c.job_id,
        t.c.status,
        t.c.done,
        t.c.total,
        t.c.failed,
        t.c.cancel_requested,
        t.c.created_at,
        t.c.ended_at,
        t.c.error,
    )
    query = sa.select(*cols).where(t.c.owner == owner).order_by(t.c.created_at.desc()).limit(int(limit))
    with store.engine.connect() as conn:
        return [dict(r) for r in conn.execute(query).mappings()]


def start_batch_job(store: Any, job_id: str) -> bool:
    """The worker took the batch. False when it had ended (cancelled while queued)."""
    return start_job(store, S.batch_jobs, job_id)


def batch_job_progress(store: Any, job_id: str, done: int, failed: int, current_run: str | None) -> bool:
    """Runs ended so far, how many of them failed, and the run now going; False when the batch had ended."""
    return update_live(store, S.batch_jobs, job_id, done=int(done), failed=int(failed), current_run=current_run)


def request_batch_cancel(store: Any, job_id: str) -> bool:
    """Raise the batch's cancel flag (its worker stops before its next run). False when it had ended."""
    return update_live(store, S.batch_jobs, job_id, cancel_requested=True)


def batch_cancel_requested(store: Any, job_id: str) -> bool:
    return cancel_flag(store, S.batch_jobs, job_id)


def end_batch_job(store: Any, job_id: str, status: str, error: str | None = None) -> bool:
    """End a batch (finished, failed or cancelled); leaves an ended one alone (returns False then)."""
    return end_job(store, S.batch_jobs, job_id, status, error)


def mark_dead_batch_jobs(store: Any) -> list[str]:
    """Fail the unfinished batches whose server is gone (the app's start-up). Their ids; their runs are ended
    by RunStore.mark_dead_workers like any other."""
    return [
        job
        for job, server in dead_jobs(store, S.batch_jobs)
        if end_batch_job(store, job, RunStatus.FAILED, f"the server that ran it ({server}) stopped")
    ]
