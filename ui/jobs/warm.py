"""Warm workers: a worker process that stays alive between runs and keeps the last (policy, PRM) pair
loaded, so a run does not pay for a fresh interpreter, torch's import and the model loads every time.

A run's models are keyed by everything that shapes them (specs, kind, options, dropout); the same key
reuses the loaded pair, a different one releases it first (one pair in memory per worker). Searches
still write every event to the database as they go, so a cancelled or crashed run keeps its nodes.

A worker runs jobs: a search (ui.jobs.pool.RunRequest), shadow scoring (ui.jobs.shadow_job.ShadowRequest), an
import (ui.jobs.import_job.ImportRequest) or a case batch of searches (ui.jobs.case_batch.CaseBatchRequest); each
says which models it needs (`models_key`, `load_models`) and runs itself (`run`). A job whose end the worker
could not write (the run log's disk full) is reported back, and the pool writes it once it can."""

from __future__ import annotations

import gc
import json
import logging
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from uats_core.status import RunStatus

log = logging.getLogger(__name__)

STOP = None  # the message that ends a worker's loop


def model_key(job: Any) -> str:
    """What identifies a loaded pair: two runs with the same key can share the models."""
    req, cfg = job.search.request, job.search.config
    return json.dumps(
        {
            "policy": req.policy,
            "prm": req.prm,
            "prm_kind": req.prm_kind,
            "policy_opts": req.policy_opts,
            "prm_opts": req.prm_opts,
            "world": bool(req.world_problem),
            "dropout_p": cfg.dropout_p,
            "dropout_mode": cfg.dropout_mode,
        },
        sort_keys=True,
        default=str,
    )


def load_pair(job: Any) -> tuple[Any, Any]:
    """Load the search's policy and PRM (the real loader; tests hand ModelCache a counting one). The options are
    checked again here, where they would take effect: no request makes a worker run a model's own code."""
    from uats_core.runner import build_backends

    from ..choices import APP_POLICY_OPTIONS, APP_PRM_OPTIONS, SERVER_NAME_OPTION, check_app_options

    req = job.search.request
    # `name` is the server's, set by the app from its own list (ui.choices.server_policy_opts), never a client's
    check_app_options(
        {k: v for k, v in req.policy_opts.items() if k != SERVER_NAME_OPTION}, "policy_opts", APP_POLICY_OPTIONS
    )
    check_app_options(req.prm_opts, "prm_opts", APP_PRM_OPTIONS)
    return build_backends(
        req.policy,
        req.prm,
        job.search.config,
        prm_kind=req.prm_kind,
        policy_opts=dict(req.policy_opts),
        prm_opts=dict(req.prm_opts),
        world_problem=req.world_problem,
    )


def load_models(req: Any) -> tuple[Any, Any]:
    """The models a job asks for (its own loader: a search's pair, shadow scoring's PRM)."""
    return req.load_models()


class ModelCache:
    """The one (policy, PRM) pair a worker holds, by the job's models_key(). `loads` counts real loads."""

    def __init__(self, loader: Callable[[Any], tuple[Any, Any]] = load_models) -> None:
        self.loader = loader
        self.key: str | None = None
        self.pair: tuple[Any, Any] | None = None
        self.loads = 0

    def get(self, req: Any) -> tuple[Any, Any]:
        key = req.models_key()
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


Unrecorded = tuple[str, str]  # (status, reason) of a job whose end could not be written


def end_or_report(what: str, end: Callable[[str, str], Any], status: str, reason: str) -> Unrecorded | None:
    """Write a job's end and say it in one line; when the run log refuses (disk full), hand (status, reason)
    back for the pool to write later."""
    try:
        end(reason, status)
    except Exception as exc:  # noqa: BLE001 - StorageError (disk full) or a lost database: the pool retries
        why = "" if str(exc) in reason else f": {exc}"
        log.error("%s ended %s: %s (not recorded yet%s; the app's pool retries)", what, status, reason, why)
        return status, reason
    log.log(logging.ERROR if status == RunStatus.FAILED else logging.WARNING, "%s ended %s: %s", what, status, reason)
    return None


def execute(req: Any, cache: ModelCache, store: Any, pause_timeout_s: float | None = None) -> Unrecorded | None:
    """One run in this process with the cached models; every exception ends the run row (failed, or
    cancelled when it was stopped before its search began) instead of leaving it queued or running. A run
    left paused `pause_timeout_s` without a step ends cancelled. Returns the end it could not write, if any."""
    try:
        from uats_core.cancel import cancellable
        from uats_core.runner import prepare_search

        if store.cancel_requested(req.run_id):
            store.mark_failed(req.run_id, "cancelled before the search started", status=RunStatus.CANCELLED)
            return None
        # req.search was checked where the run was submitted (validate_request): a request comes from this server.
        # Loading may wait on a policy server: a cancel reaches it there too (uats_core.cancel), not only once
        # the search runs.
        with cancellable(lambda: store.cancel_requested(req.run_id)):
            search = prepare_search(req.search, models=cache.get(req))
        search.run(
            subscribers=[store.subscriber()],
            run_id=req.run_id,
            should_cancel=lambda: store.wait_turn(req.run_id, pause_timeout_s=pause_timeout_s),
            cancel_requested=lambda: store.cancel_requested(req.run_id),
        )  # polled inside iterations too
        return None
    except Exception as exc:  # noqa: BLE001 - the run row must not stay 'queued'/'running' forever
        # Once RunStarted was written, run_search already ended the run (failed/cancelled) with its nodes;
        # mark_failed only touches runs that never got that far (model loading, a bad spec) or whose end
        # could not be written then.
        reason = f"{type(exc).__name__}: {exc}"
        status = RunStatus.FAILED
        try:
            if store.cancel_requested(req.run_id) and store.get_run(req.run_id)["status"] == RunStatus.QUEUED:
                status, reason = RunStatus.CANCELLED, f"cancelled before the search started ({reason})"
        except Exception:  # noqa: BLE001 - unreadable too: end it failed with the first reason
            pass
        return end_or_report(
            f"run {req.run_id}", lambda why, st: store.mark_failed(req.run_id, why, status=st), status, reason
        )


@dataclass(frozen=True)
class Warm:
    """Ask a worker to load a pair ahead of any run (the app's default pair at start-up)."""

    request: Any


def warm_worker_main(
    db: str,
    inbox: Any,
    outbox: Any,
    slot: int,
    parent_pid: int | None = None,
    pause_timeout_s: float | None = None,
    torch_threads: int | None = None,
) -> None:
    """A warm worker's loop: take a job (or Warm) from `inbox`, run it, report on `outbox`:
    ("loaded", slot, key, loads) after a load, ("done", slot, job_id, unrecorded) after each job, where
    unrecorded is the (status, reason) its end could not be written with, or None. The worker ends with the
    app (`parent_pid`, ui.jobs.lifeline)."""
    from storage import RunStore

    from .lifeline import die_with_parent

    if parent_pid is not None:
        die_with_parent(parent_pid)
    logging.basicConfig(
        level=logging.INFO, format=f"%(asctime)s warm worker {slot} %(levelname)s %(name)s: %(message)s"
    )
    if torch_threads:
        import torch

        torch.set_num_threads(torch_threads)
    store = RunStore(db)
    cache = ModelCache()
    # a job waiting on a policy server computes nothing here: the pool hears of it (ui.jobs.pool_state, stalled)
    from uats_core.http_client import set_wait_listener

    set_wait_listener(lambda since: outbox.put(("upstream", slot, since)))
    try:
        while True:
            msg = inbox.get()
            if msg is STOP:
                break
            before = cache.loads
            unrecorded = None
            if isinstance(msg, Warm):
                try:
                    cache.get(msg.request)
                except Exception as exc:  # noqa: BLE001 - a failed pre-warm only costs the first run its load
                    log.warning("pre-warming failed: %s: %s", type(exc).__name__, exc)
            else:
                unrecorded = msg.run(cache, store, pause_timeout_s)
            if cache.loads != before:
                outbox.put(("loaded", slot, cache.key, cache.loads))
            if not isinstance(msg, Warm):
                outbox.put(("done", slot, msg.job_id, unrecorded))
    except KeyboardInterrupt:
        pass  # app shutdown: the pool marks what was left
    finally:
        cache.release()
        store.close()
