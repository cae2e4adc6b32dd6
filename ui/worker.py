"""Searches run in worker processes (multiprocessing, spawn) that write to the database; the page only
reads. So a closed tab, a slow tick or a second user never stops or blocks a search, and a worker that
dies is noticed (its process is gone) and its run marked failed."""

from __future__ import annotations

import logging
import multiprocessing as mp
import threading
import time
from collections import deque
from dataclasses import asdict, dataclass, field
from typing import Any

from storage import RunStore, StorageError

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RunRequest:
    """Everything a worker needs, picklable (spawn sends it to a fresh interpreter)."""

    run_id: str
    db: str  # SQLAlchemy URL of the run log
    problem: dict[str, Any]  # uats_core.problems.Problem fields
    config: dict[str, Any]  # SearchConfig.to_dict()
    policy: str | None = None  # None: the embedded arithmetic world's policy
    prm: str | None = None
    prm_kind: str | None = None  # None: detected from the PRM
    policy_opts: dict[str, Any] = field(default_factory=dict)  # --policy-opt's KEY=VALUE, parsed
    prm_opts: dict[str, Any] = field(default_factory=dict)
    world_problem: bool = True  # the problem comes from the embedded world (its models serve only those)


def worker_main(req: RunRequest) -> None:
    """Entry point of a worker process: load models, search, write every event to the database."""
    logging.basicConfig(level=logging.INFO, format=f"%(asctime)s worker {req.run_id[:8]} %(levelname)s %(name)s: %(message)s")
    store = RunStore(req.db)
    try:
        from uats_core.config import SearchConfig
        from uats_core.problems import Problem
        from uats_core.runner import build_backends, run_search

        config = SearchConfig.from_dict(req.config).validate()
        problem = Problem(**req.problem)
        policy, prm = build_backends(req.policy, req.prm, config, prm_kind=req.prm_kind, policy_opts=req.policy_opts,
                                     prm_opts=req.prm_opts, world_problem=req.world_problem)
        controller = None
        if config.method == "a-uats":
            from uats_core.controller import load_controller  # the learned budget controller

            controller = load_controller(config.controller, config)
        run_search(problem, config, policy, prm, subscribers=[store.subscriber()], run_id=req.run_id,
                   should_cancel=lambda: store.wait_turn(req.run_id), controller=controller,
                   cancel_requested=lambda: store.cancel_requested(req.run_id))  # polled inside iterations too
    except BaseException as exc:  # noqa: BLE001 - the run row must not stay 'queued'/'running' forever
        # Once RunStarted was written, run_search already ended the run (failed/cancelled) with its nodes;
        # mark_failed only touches runs that never got that far (model loading, a bad spec).
        reason = f"{type(exc).__name__}: {exc}"
        if store.cancel_requested(req.run_id) and store.get_run(req.run_id)["status"] == "queued":
            store.mark_failed(req.run_id, f"cancelled before the search started ({reason})", status="cancelled")
        else:
            store.mark_failed(req.run_id, reason)
        if not isinstance(exc, (SystemExit, KeyboardInterrupt)):
            log.error("run %s ended with %s", req.run_id, reason)
        raise SystemExit(1) from None
    finally:
        store.close()


class WorkerPool:
    """Starts at most `max_workers` searches at once (each loads its own models; more than the cores can
    feed only slows all of them), queues the rest in the database as 'queued', reaps dead workers."""

    def __init__(self, store: RunStore, max_workers: int = 2, poll_s: float = 1.0) -> None:
        self.store = store
        self.max_workers = max(1, int(max_workers))
        self._ctx = mp.get_context("spawn")
        self._procs: dict[str, Any] = {}
        self._pending: deque[RunRequest] = deque()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, args=(poll_s,), name="uats-worker-pool", daemon=True)
        self._thread.start()

    def submit(self, req: RunRequest) -> None:
        """The run row must already exist (store.register_run) so the page can follow it at once."""
        with self._lock:
            self._pending.append(req)
        self.pump()

    def pump(self) -> list[str]:
        """Reap finished workers, mark dead ones failed, start queued runs. Returns runs marked failed."""
        failed: list[str] = []
        with self._lock:
            for run_id, proc in list(self._procs.items()):
                if proc.is_alive():
                    continue
                proc.join(0)
                del self._procs[run_id]
                try:
                    if self.store.mark_failed(run_id, f"worker process exited (code {proc.exitcode}) before the run ended"):
                        failed.append(run_id)
                except StorageError:
                    log.warning("run %s vanished from the database", run_id)
            waiting: deque[RunRequest] = deque()
            for req in self._pending:  # end what was cancelled while waiting, whether or not a slot is free
                try:
                    if self.store.get_run(req.run_id)["status"] != "queued":
                        continue
                except StorageError:
                    continue
                if self.store.cancel_requested(req.run_id):
                    self.store.mark_failed(req.run_id, "cancelled while queued", status="cancelled")
                    continue
                waiting.append(req)
            self._pending = waiting
            while self._pending and len(self._procs) < self.max_workers:
                req = self._pending.popleft()
                proc = self._ctx.Process(target=worker_main, args=(req,), name=f"uats-run-{req.run_id[:8]}")
                proc.start()
                self._procs[req.run_id] = proc
                log.info("worker pid %s started for run %s", proc.pid, req.run_id)
        return failed

    def active(self) -> list[str]:
        with self._lock:
            return [r for r, p in self._procs.items() if p.is_alive()]

    def queued(self) -> list[str]:
        with self._lock:
            return [r.run_id for r in self._pending]

    def _loop(self, poll_s: float) -> None:
        # Without a tab open, nobody's timer would reap or start workers: this thread does.
        while not self._stop.wait(poll_s):
            try:
                self.pump()
            except Exception:  # noqa: BLE001 - keep the pool alive; the next tick retries
                log.exception("worker pool tick failed")

    def shutdown(self, cancel: bool = True, timeout_s: float = 30.0) -> None:
        """Stop the pool; with cancel=True ask running searches to stop (they end 'cancelled' with all
        their nodes written) and wait for them up to timeout_s."""
        self._stop.set()
        with self._lock:
            procs = dict(self._procs)
            pending = list(self._pending)
            self._pending.clear()
        for req in pending:
            self.store.mark_failed(req.run_id, "the app shut down before this run started")
        if cancel:
            for run_id in procs:
                try:
                    self.store.request_cancel(run_id)
                except StorageError:
                    pass
        deadline = time.time() + timeout_s
        for run_id, proc in procs.items():
            proc.join(max(0.0, deadline - time.time()))
            if proc.is_alive():
                log.warning("worker for run %s still running after shutdown; terminating it", run_id)
                proc.terminate()
                proc.join(5)
            self.store.mark_failed(run_id, f"worker stopped at app shutdown (code {proc.exitcode})")


def request_dict(problem: Any) -> dict[str, Any]:
    """A Problem as plain fields for RunRequest."""
    return asdict(problem)
