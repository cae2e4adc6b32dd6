"""Shadow scoring is a job of the worker pool: bounded before anything is written, run in a worker (never in
the app's process: k=1000000 once took a core of the app until a restart), its progress in the run log,
cancellable between batches keeping what it scored."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from storage import RunStore
from storage.shadow import get_shadow_job, read_shadow, request_shadow_cancel
from testkit.doubles import CallbackPRMDouble, record_synthetic
from testkit.polling import until
from uats_core.config import ConfigError
from ui.jobs.pool import PoolLimits, WorkerPool
from ui.jobs.shadow_job import ShadowRequest, execute_shadow, submit_shadow
from ui.jobs.warm import ModelCache

RUN = "c0" * 16


def _store(path: Path, n_nodes: int = 40) -> RunStore:
    store = RunStore(str(path / "runs.db"))
    record_synthetic(store, RUN, n_nodes=n_nodes, seed=3, method="rebase", problem_id="synthetic-3")
    return store


def test_an_unbounded_k_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    store = _store(tmp_path)
    pool = WorkerPool(store, drive=False)
    try:
        with pytest.raises(ConfigError, match=r"^shadow_k: 1,000,000 is above the maximum of 8,192 passes per node"):
            submit_shadow(store, pool, RUN, 1_000_000, None, None, "s")
        with pytest.raises(ConfigError, match=r"^shadow_k: must be a whole number"):
            submit_shadow(store, pool, RUN, 2.5, None, None, "s")
        assert pool.queued() == []
        with store.engine.connect() as conn:
            assert conn.exec_driver_sql("SELECT count(*) FROM shadow_jobs").scalar() == 0
    finally:
        pool.shutdown(timeout_s=5)


def test_shadow_scoring_runs_as_a_queued_job_in_a_worker(tmp_path: Path) -> None:
    store = _store(tmp_path)
    pool = WorkerPool(store, max_workers=1, poll_s=0.2, limits=PoolLimits(max_queued_per_session=1))
    try:
        job = submit_shadow(store, pool, RUN, 4.0, None, None, "s")  # gr.Number's float
        assert get_shadow_job(store, job)["status"] in ("queued", "running")
        assert until(lambda: get_shadow_job(store, job)["status"] not in ("queued", "running"), 240)
        row = get_shadow_job(store, job)
        n = len(store.get_nodes(RUN)) - 1  # every node but the root
        assert row["status"] == "finished" and row["done"] == row["total"] == n and row["k"] == 4
        assert row["worker_pid"] not in (None, os.getpid())  # scored in a worker, not in the app
        rows = read_shadow(store, RUN)
        assert len(rows) == n and all(len(r["mc_scores"]) == 4 for r in rows.values())
    finally:
        pool.shutdown(cancel=True, timeout_s=30)


def test_a_cancelled_shadow_job_stops_after_its_batch_and_keeps_it(tmp_path: Path) -> None:
    """The worker's own code with a PRM double that asks the job to stop while it scores the first batch:
    the job ends 'cancelled' after that batch, whose 64 rows are kept."""
    store = _store(tmp_path, n_nodes=160)
    pool = WorkerPool(store, drive=False)
    try:
        job = submit_shadow(store, pool, RUN, 5, None, None, None)
        req = pool._pending[0]
        assert isinstance(req, ShadowRequest) and req.job_id == job
        prm = CallbackPRMDouble(lambda n: n == 1 and request_shadow_cancel(store, job))
        assert execute_shadow(req, ModelCache(lambda _: (None, prm)), store) is None
        row = get_shadow_job(store, job)
        n = len(store.get_nodes(RUN)) - 1
        assert n > 128 and row["status"] == "cancelled" and f"after 64 of {n} nodes" in row["error"]
        assert row["done"] == 64 and len(read_shadow(store, RUN)) == 64 and prm.calls == 1
    finally:
        pool.shutdown(timeout_s=5)
