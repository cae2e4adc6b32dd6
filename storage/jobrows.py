"""The rows of the app's pool jobs that are not runs (shadow scoring, case batches): each table holds a job's
status (queued → running → finished, failed or cancelled), progress, cancel flag and the server that queued
it. These helpers act on any such table; storage.shadow and storage.batches name theirs."""

from __future__ import annotations

import os
import time
from typing import Any

import sqlalchemy as sa

from uats_core.status import ENDED, LIVE, RunStatus

from .connection import StorageError, process_gone


def get_job(store: Any, table: sa.Table, job_id: str, what: str) -> dict[str, Any]:
    """A job's row; StorageError(field='job') naming `what` (e.g. "shadow scoring job") when there is none."""
    with store.engine.connect() as conn:
        row = conn.execute(sa.select(table).where(table.c.job_id == job_id)).mappings().first()
    if row is None:
        raise StorageError(f"no {what} {job_id}", field="job")
    return dict(row)


def update_live(store: Any, table: sa.Table, job_id: str, **values: Any) -> bool:
    """Set columns of a job that has not ended; False when it had ended (or does not exist)."""
    with store.engine.begin() as conn:
        res = conn.execute(
            sa.update(table)
            .where(table.c.job_id == job_id, table.c.status.in_(LIVE))
            .values(updated_at=time.time(), **values)
        )
    return bool(res.rowcount)


def start_job(store: Any, table: sa.Table, job_id: str) -> bool:
    """A worker took the job: running, with its pid. False when it had ended (cancelled while queued)."""
    return update_live(store, table, job_id, status=RunStatus.RUNNING, worker_pid=os.getpid())


def cancel_flag(store: Any, table: sa.Table, job_id: str) -> bool:
    with store.engine.connect() as conn:
        return bool(
            conn.execute(sa.select(table.c.cancel_requested).where(table.c.job_id == job_id)).scalar_one_or_none()
        )


def end_job(store: Any, table: sa.Table, job_id: str, status: str, error: str | None = None) -> bool:
    """End a job (finished, failed or cancelled); leaves an ended one alone (returns False then)."""
    if status not in ENDED:
        raise StorageError(f"a job ends finished, failed or cancelled, not {status!r}", field="status")
    return update_live(store, table, job_id, status=status, error=error, ended_at=time.time())


def dead_jobs(store: Any, table: sa.Table) -> list[tuple[str, str]]:
    """(job id, server) of the unfinished jobs whose server is gone (for the app's start-up to end; a live
    server's pool notices its own dead workers)."""
    with store.engine.connect() as conn:
        rows = conn.execute(sa.select(table.c.job_id, table.c.server).where(table.c.status.in_(LIVE))).all()
    return [(r.job_id, r.server) for r in rows if process_gone(r.server)]
