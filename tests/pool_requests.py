"""Registering a worker-pool request's run row as the app's Run button does, for the pool tests."""

from __future__ import annotations

from storage.store import RunStore
from ui.jobs.worker import RunRequest


def register_request(store: RunStore, req: RunRequest, paused: bool = False) -> None:
    cfg = req.config
    store.register_run(req.run_id, method=cfg["method"], problem_id=req.problem["id"], question=req.problem["question"],
                       gold_answer=req.problem["answer"], seed=cfg["seed"], config=cfg, paused=paused)
