"""A case batch as one job of the app's worker pool: the searches the case finder asks for (problems × policies ×
H-UATS and REBASE), run one after another in one worker, each a run of its own in the run log (its label names
the batch), so the case finder reads them like any stored pair. Bounded before it is queued (at most
MAX_BATCH_RUNS searches, each checked against the limits like the Run button's; one batch at a time per
server), queued within the pool's limits, cancellable: the running search stops within about a second (it
stays in the run log, cancelled, with its nodes) and no further search starts."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from storage import RunStore, StorageError
from storage.batches import (
    batch_cancel_requested,
    batch_job_progress,
    create_batch_job,
    end_batch_job,
    get_batch_job,
    live_batch_jobs,
    request_batch_cancel,
    start_batch_job,
)
from uats_core.config import ConfigError
from uats_core.status import RunStatus

from .pool import RunRequest
from .warm import ModelCache, Unrecorded, end_or_report, execute

log = logging.getLogger(__name__)

MAX_BATCH_PROBLEMS = 50  # the case finder's problems field
BATCH_FIELD = "problems in a batch"  # that field as the page names it, in messages about it
MAX_BATCH_RUNS = 4 * MAX_BATCH_PROBLEMS  # two policies × two methods a problem
MAX_BATCHES_PER_OWNER = 1  # a batch holds one worker for its whole length: one each, so workers stay for others


def batch_label(job_id: str) -> str:
    """What runs.label says for a batch's runs."""
    return f"case batch {job_id[:8]}"


@dataclass(frozen=True)
class CaseBatchRequest:
    """One batch, picklable for the worker; the job interface of ui.jobs.pool.RunRequest. `runs` are checked
    requests, registered one by one as the worker reaches them (a cancelled batch leaves no queued rows)."""

    job_id: str
    runs: tuple[RunRequest, ...]
    owner: str | None = None

    def models_key(self) -> str:
        return self.runs[0].models_key()  # the first search's pair: the worker switches when a search needs another

    def load_models(self) -> tuple[Any, Any]:
        return self.runs[0].load_models()

    def run(self, cache: ModelCache, store: RunStore, pause_timeout_s: float | None = None) -> Unrecorded | None:
        return execute_batch(self, cache, store)

    def status(self, store: RunStore) -> str:
        return str(get_batch_job(store, self.job_id)["status"])

    def cancel_requested(self, store: RunStore) -> bool:
        return batch_cancel_requested(store, self.job_id)

    def request_cancel(self, store: RunStore) -> bool:
        return cancel_batch(store, self.job_id)

    def end(self, store: RunStore, reason: str, status: str = RunStatus.FAILED) -> bool:
        """End the batch and the search it was on (a worker that died leaves that run 'running' otherwise)."""
        current = get_batch_job(store, self.job_id).get("current_run")
        if current:
            store.mark_failed(current, reason, status=status)
        return end_batch_job(store, self.job_id, status, reason)

    def paused(self, store: RunStore) -> bool:
        return False

    def waiting_paused(self, store: RunStore) -> bool:
        return False


def cancel_batch(store: RunStore, job_id: str) -> bool:
    """Stop a batch: its flag (no further search starts) and a cancel of the search it is on. False when the
    batch had ended."""
    if not request_batch_cancel(store, job_id):
        return False
    current = get_batch_job(store, job_id).get("current_run")
    if current:
        store.request_cancel(current)
    return True


def execute_batch(req: CaseBatchRequest, cache: ModelCache, store: RunStore) -> Unrecorded | None:
    """Run the batch's searches in this worker, one after another, with the cached models (execute() switches
    the pair when a search needs another). Returns an end it could not write."""

    def end(reason: str | None, status: str) -> None:
        end_batch_job(store, req.job_id, status, reason)

    total, failed, first_error = len(req.runs), 0, None
    try:
        if not start_batch_job(store, req.job_id):
            return None  # ended while queued (cancelled)
        for i, run in enumerate(req.runs):
            if batch_cancel_requested(store, req.job_id):
                return end_or_report(
                    f"case batch {req.job_id}", end, RunStatus.CANCELLED, f"cancelled after {i} of {total} searches"
                )
            run.register(store, label=batch_label(req.job_id), owner=req.owner)
            batch_job_progress(store, req.job_id, i, failed, run.run_id)
            if batch_cancel_requested(store, req.job_id):  # asked between the check above and naming the run
                store.request_cancel(run.run_id)
            unrecorded = execute(run, cache, store)
            if unrecorded is not None:  # the run log refused the search's end: the batch cannot go on either
                return unrecorded
            row = store.get_run(run.run_id)
            if row["status"] == RunStatus.FAILED:
                failed += 1
                first_error = first_error or f"run {run.run_id[:8]}: {row.get('error')}"
            batch_job_progress(store, req.job_id, i + 1, failed, None)
        note = None if not failed else f"{failed} of {total} searches failed (first: {first_error})"
        end_batch_job(store, req.job_id, RunStatus.FINISHED, note)
        return None
    except Exception as exc:  # noqa: BLE001 - the job must not stay 'running'
        return end_or_report(f"case batch {req.job_id}", end, RunStatus.FAILED, f"{type(exc).__name__}: {exc}")


def cancel_owned_batches(store: RunStore, owner: str) -> list[str]:
    """Cancel every batch of `owner` still going on this server (the case finder's Cancel, from any page of
    theirs): the ids it stopped."""
    return [job for job in live_batch_jobs(store, owner) if cancel_batch(store, job)]


def cancel_owned_batch(store: RunStore, owner: str, job_id: str) -> bool:
    """Cancel the one batch `job_id` if it is `owner`'s and still going (the case finder's list, a row picked);
    False otherwise, whoever's it is (another owner's batch is neither cancelled nor said to exist)."""
    try:
        row = get_batch_job(store, job_id)
    except StorageError:
        return False
    return row.get("owner") == owner and cancel_batch(store, job_id)


def queue_case_batch(
    store: RunStore,
    pool: Any,
    runs: Sequence[RunRequest],
    spec: dict[str, Any],
    owner: str | None = None,
    session: str | None = None,
) -> str:
    """Queue checked searches as one batch of `owner` (ui.access.requester; its row written only once the pool's
    queue limits admit it). Its id. ConfigError (or QueueFull) names what to change: no search, too many, or
    MAX_BATCHES_PER_OWNER of the owner's already going (another owner's batches do not count)."""
    if not runs:
        raise ConfigError(BATCH_FIELD, "the batch holds no search; give at least one problem")
    if len(runs) > MAX_BATCH_RUNS:
        raise ConfigError(
            BATCH_FIELD, f"{len(runs)} searches is above the maximum of {MAX_BATCH_RUNS} a batch; give fewer problems"
        )
    going = live_batch_jobs(store, owner)
    if len(going) >= MAX_BATCHES_PER_OWNER:
        raise ConfigError(
            "batch",
            f"your case batch {going[0][:8]} is still going (at most "
            f"{MAX_BATCHES_PER_OWNER} a user); wait for it or cancel it first",
        )
    req = CaseBatchRequest(job_id=uuid.uuid4().hex, runs=tuple(runs), owner=owner)
    pool.submit(req, session=session, register=lambda: create_batch_job(store, req.job_id, len(runs), spec, owner))
    log.info("case batch %s queued: %d searches", req.job_id, len(runs))
    return req.job_id
