"""Shadow scoring as a job of the app's worker pool, like a search: bounded before it is queued (K passes and
the candidates, uats_core.limits.check_shadow), queued within the pool's limits, run in a worker (never in
the app's process: k=1000000 once took a core of the app for good), cancellable between batches, its
progress and end in storage's shadow_jobs table and its scores in shadow_scores, batch by batch."""

from __future__ import annotations

import json
import logging
import uuid
from dataclasses import dataclass
from typing import Any

from storage import RunStore
from storage.shadow import (
    create_shadow_job,
    end_shadow_job,
    get_shadow_job,
    request_shadow_cancel,
    shadow_cancel_requested,
    shadow_job_progress,
    start_shadow_job,
)
from uats_core.cancel import SearchCancelled, cancellable
from uats_core.config import ConfigError
from uats_core.limits import check_shadow
from uats_core.status import RunStatus

from .pool import QUEUED_PRM
from .warm import ModelCache, Unrecorded, end_or_report

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ShadowRequest:
    """One shadow scoring job, picklable for the worker; the same job interface as ui.jobs.pool.RunRequest."""

    job_id: str
    run_id: str
    k: int
    prm: str | None = None  # None: the embedded arithmetic PRM
    prm_kind: str | None = None

    def models_key(self) -> str:
        return json.dumps({"shadow_prm": self.prm, "prm_kind": self.prm_kind}, sort_keys=True)

    def load_models(self) -> tuple[Any, Any]:
        from .shadow import load_shadow_prm

        return None, load_shadow_prm(self.prm, self.prm_kind)

    def run(self, cache: ModelCache, store: RunStore, pause_timeout_s: float | None = None) -> Unrecorded | None:
        return execute_shadow(self, cache, store)

    def status(self, store: RunStore) -> str:
        return str(get_shadow_job(store, self.job_id)["status"])

    def cancel_requested(self, store: RunStore) -> bool:
        return shadow_cancel_requested(store, self.job_id)

    def request_cancel(self, store: RunStore) -> bool:
        return request_shadow_cancel(store, self.job_id)

    def end(self, store: RunStore, reason: str, status: str = RunStatus.FAILED) -> bool:
        return end_shadow_job(store, self.job_id, status, reason)

    def paused(self, store: RunStore) -> bool:
        return False

    def waiting_paused(self, store: RunStore) -> bool:
        return False


def execute_shadow(req: ShadowRequest, cache: ModelCache, store: RunStore) -> Unrecorded | None:
    """Run one job in this worker: load (or reuse) the PRM, score batch by batch, write progress and rows;
    a cancel lands between batches and between the PRM's pass groups. Returns an end it could not write."""
    from ..views.treedata import RunData
    from .shadow import run_shadow, shadow_candidates

    def end(reason: str | None, status: str) -> None:
        end_shadow_job(store, req.job_id, status, reason)

    try:
        if not start_shadow_job(store, req.job_id):
            return None  # ended while queued (cancelled)
        total = len(shadow_candidates(RunData.load(store, req.run_id)))
        check_shadow(req.k, total)  # again here: the limits in the worker's environment are the server's
        shadow_job_progress(store, req.job_id, 0, total)
        _, prm = cache.get(req)

        def progress(done: int, n: int) -> None:  # after each batch, its rows written: the check costs one read
            shadow_job_progress(store, req.job_id, done, n)
            if done < n and shadow_cancel_requested(store, req.job_id):
                raise SearchCancelled(f"cancelled after {done} of {n} nodes")

        with cancellable(lambda: shadow_cancel_requested(store, req.job_id)):  # inside a batch: the PRM polls
            run_shadow(store, req.run_id, prm, req.k, progress=progress)
        end_shadow_job(store, req.job_id, RunStatus.FINISHED)
        return None
    except SearchCancelled as exc:
        return end_or_report(f"shadow job {req.job_id}", end, RunStatus.CANCELLED, str(exc))
    except Exception as exc:  # noqa: BLE001 - the job must not stay 'running'
        return end_or_report(f"shadow job {req.job_id}", end, RunStatus.FAILED, f"{type(exc).__name__}: {exc}")


def submit_shadow(
    store: RunStore, pool: Any, run_id: str, k: Any, prm: str | None, prm_kind: str | None, session: str | None = None
) -> str:
    """Check the job against the limits, then queue it on the pool (its row written only once the pool's
    queue limits admit it). Its id. ConfigError (or QueueFull) names the field to fix."""
    from ..views.treedata import RunData
    from .shadow import shadow_candidates

    if isinstance(k, float) and k.is_integer():
        k = int(k)  # gr.Number hands whole numbers over as floats
    if isinstance(k, bool) or not isinstance(k, int):
        raise ConfigError("shadow_k", f"must be a whole number of passes; got {k!r}")
    total = len(shadow_candidates(RunData.load(store, run_id)))
    check_shadow(k, total)
    prm = (prm or "").strip() or None
    kind = None if prm_kind in (None, "", "detect") else prm_kind
    req = ShadowRequest(job_id=uuid.uuid4().hex, run_id=run_id, k=k, prm=prm, prm_kind=kind)
    pool.submit(
        req, session=session, register=lambda: create_shadow_job(store, req.job_id, run_id, k, prm or QUEUED_PRM, total)
    )
    log.info("shadow job %s queued: run %s, K=%d, %d candidates", req.job_id, run_id, k, total)
    return req.job_id
