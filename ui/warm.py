"""Warm workers: a worker process that stays alive between runs and keeps the last (policy, PRM) pair
loaded, so a run does not pay for a fresh interpreter, torch's import and the model loads every time.

A run's models are keyed by everything that shapes them (specs, kind, options, dropout); the same key
reuses the loaded pair, a different one releases it first (one pair in memory per worker). Searches
still write every event to the database as they go, so a cancelled or crashed run keeps its nodes."""

from __future__ import annotations

import gc
import json
import logging
import sys
from dataclasses import dataclass
from typing import Any, Callable

log = logging.getLogger(__name__)

STOP = None  # the message that ends a worker's loop


def model_key(req: Any) -> str:
    """What identifies a loaded pair: two runs with the same key can share the models."""
    cfg = req.config or {}
    return json.dumps({"policy": req.policy, "prm": req.prm, "prm_kind": req.prm_kind,
                       "policy_opts": req.policy_opts, "prm_opts": req.prm_opts, "world": bool(req.world_problem),
                       "dropout_p": cfg.get("dropout_p"), "dropout_mode": cfg.get("dropout_mode")},
                      sort_keys=True, default=str)


def load_pair(req: Any) -> tuple[Any, Any]:
    """Load the request's policy and PRM (the real loader; tests hand ModelCache a counting one)."""
    from uats_core.config import SearchConfig
    from uats_core.runner import build_backends

    config = SearchConfig.from_dict(req.config)  # validated where the run was submitted (ui.service.build_config)
    return build_backends(req.policy, req.prm, config, prm_kind=req.prm_kind, policy_opts=req.policy_opts,
                          prm_opts=req.prm_opts, world_problem=req.world_problem)


class ModelCache:
    """The one (policy, PRM) pair a worker holds, by model_key. `loads` counts real loads."""

    def __init__(self, loader: Callable[[Any], tuple[Any, Any]] = load_pair) -> None:
        self.loader = loader
        self.key: str | None = None
        self.pair: tuple[Any, Any] | None = None
        self.loads = 0

    def get(self, req: Any) -> tuple[Any, Any]:
        key = model_key(req)
        if self.pair is not None and key == self.key:
            policy, prm = self.pair
            if hasattr(prm, "clear_cache"):  # a run must score as if the PRM were fresh
                prm.clear_cache()
            return self.pair
        self.release()
        self.pair = self.loader(req)
        self.key = key
        self.loads += 1
        return self.pair

    def release(self) -> None:
        """Drop the loaded pair and hand its memory back (the GPU's too) before another is loaded."""
        if self.pair is None:
            return
        self.pair, self.key = None, None
        gc.collect()
        torch = sys.modules.get("torch")  # only if a loader imported it: never import torch just to free
        if torch is not None and torch.cuda.is_available():
            torch.cuda.empty_cache()


def execute(req: Any, cache: ModelCache, store: Any) -> None:
    """One run in this process with the cached models; every exception ends the run row (failed, or
    cancelled when it was stopped before its search began) instead of leaving it queued or running."""
    try:
        from uats_core.config import SearchConfig
        from uats_core.problems import Problem
        from uats_core.runner import prepare_search

        config = SearchConfig.from_dict(req.config)  # validated where the run was submitted (ui.service.build_config)
        problem = Problem(**req.problem)
        if store.cancel_requested(req.run_id):
            store.mark_failed(req.run_id, "cancelled before the search started", status="cancelled")
            return
        search = prepare_search(config, prm=req.prm, models=cache.get(req))
        search.run(problem, subscribers=[store.subscriber()], run_id=req.run_id,
                   should_cancel=lambda: store.wait_turn(req.run_id),
                   cancel_requested=lambda: store.cancel_requested(req.run_id))  # polled inside iterations too
    except Exception as exc:  # noqa: BLE001 - the run row must not stay 'queued'/'running' forever
        # Once RunStarted was written, run_search already ended the run (failed/cancelled) with its nodes;
        # mark_failed only touches runs that never got that far (model loading, a bad spec).
        reason = f"{type(exc).__name__}: {exc}"
        if store.cancel_requested(req.run_id) and store.get_run(req.run_id)["status"] == "queued":
            store.mark_failed(req.run_id, f"cancelled before the search started ({reason})", status="cancelled")
        else:
            store.mark_failed(req.run_id, reason)
        log.error("run %s ended with %s", req.run_id, reason)


@dataclass(frozen=True)
class Warm:
    """Ask a worker to load a pair ahead of any run (the app's default pair at start-up)."""

    request: Any


def warm_worker_main(db: str, inbox: Any, outbox: Any, slot: int) -> None:
    """A warm worker's loop: take a RunRequest (or Warm) from `inbox`, run it, report on `outbox`:
    ("loaded", slot, key, loads) after a load, ("done", slot, run_id) after each run."""
    from storage import RunStore

    logging.basicConfig(level=logging.INFO, format=f"%(asctime)s warm worker {slot} %(levelname)s %(name)s: %(message)s")
    store = RunStore(db)
    cache = ModelCache()
    try:
        while True:
            msg = inbox.get()
            if msg is STOP:
                break
            before = cache.loads
            if isinstance(msg, Warm):
                try:
                    cache.get(msg.request)
                except Exception as exc:  # noqa: BLE001 - a failed pre-warm only costs the first run its load
                    log.warning("pre-warming failed: %s: %s", type(exc).__name__, exc)
            else:
                execute(msg, cache, store)
            if cache.loads != before:
                outbox.put(("loaded", slot, cache.key, cache.loads))
            if not isinstance(msg, Warm):
                outbox.put(("done", slot, msg.run_id))
    except KeyboardInterrupt:
        pass  # app shutdown: the pool marks what was left
    finally:
        cache.release()
        store.close()
