"""An evaluation worker: loads each model once, runs cells one after another (or several at once through
the batching hub), and writes every search to the run log as an ordinary run.

The same class runs in the serial CLI, in each `--shard` process and inside every Ray actor, so the three
paths cannot drift apart. Non-batched cells are isolated from whatever the worker ran before: the search
seeds torch/numpy/random itself (`run_search`), the PRM's prefix cache is emptied first (a hit changes the
order of floating-point sums, and so could change a sampled step) and A-UATS gets a fresh controller
object. A cell's result then depends only on the cell, never on the worker or the order, which is what
makes serial == --shard == Ray hold exactly (given the same torch thread count and hardware).
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from storage.eval_cells import CellLedger
from uats.model_flags import load_policy_spec, load_prm_spec
from uats_core.backends._loading import FACTORY_PREFIX  # py:module:function: uats/model_flags.py loads it
from uats_core.config import SearchConfig
from uats_core.eval.batching import BatchingHub, LanePolicy, LanePRM, LockedEmbedder, mix_seed
from uats_core.eval.grid import WorkItem
from uats_core.grading import Grader
from uats_core.methods import method_class
from uats_core.runner import prepare_search
from uats_core.status import RunStatus

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class CellOutcome:
    key: str
    status: str  # finished | failed | skipped (another worker holds it)
    run_id: str | None
    correct: bool | None = None
    cost: float = 0.0
    wall_s: float = 0.0
    error: str | None = None


class BackendCache:
    """Policies by spec, PRMs by (spec, dropout p, dropout mode), one embedder, controller networks: each
    loaded once per worker process, however many cells use it."""

    def __init__(self, policy_opts: dict[str, Any] | None = None, prm_opts: dict[str, Any] | None = None) -> None:
        self.policy_opts = dict(policy_opts or {})
        self.prm_opts = dict(prm_opts or {})
        self._policies: dict[str, Any] = {}
        self._prms: dict[tuple[str, float, str], Any] = {}
        self._embedder: Any = None
        self._controller_nets: dict[tuple[str | None, bool], tuple[Any, bool]] = {}
        self._lock = threading.Lock()

    def policy(self, spec: str, prm_spec: str | None = None) -> Any:
        """prm_spec: the PRM the policy will work with; a vLLM policy then leaves room for it on a shared GPU."""
        with self._lock:
            if spec not in self._policies:
                t0 = time.perf_counter()
                self._policies[spec] = load_policy_spec(spec, self._policy_opts_for(spec, prm_spec))
                log.info("policy %s loaded in %.1f s", spec, time.perf_counter() - t0)
            return self._policies[spec]

    def _policy_opts_for(self, spec: str, prm_spec: str | None) -> dict[str, Any]:
        if not spec.startswith("vllm:") or prm_spec is None or prm_spec.startswith(FACTORY_PREFIX):
            return self.policy_opts
        from uats_core.backends.plan import memory_planned_opts, plan_models

        prm_opts = {k: v for k, v in self.prm_opts.items() if k != "kind"}
        plan = plan_models(
            spec, prm_spec, prm_kind=self.prm_opts.get("kind"), policy_opts=self.policy_opts, prm_opts=prm_opts
        )
        return memory_planned_opts(plan, dict(plan.policy_opts))

    def prm(self, spec: str, dropout_p: float, dropout_mode: str) -> Any:
        key = (spec, float(dropout_p), dropout_mode)
        with self._lock:
            if key not in self._prms:
                t0 = time.perf_counter()
                self._prms[key] = load_prm_spec(spec, dict(self.prm_opts), dropout_p, dropout_mode)
                log.info(
                    "PRM %s (dropout %s p=%s) loaded in %.1f s", spec, dropout_mode, dropout_p, time.perf_counter() - t0
                )
            return self._prms[key]

    def backends(self, item: WorkItem) -> tuple[Any, Any]:
        cell, cfg = item.cell, item.checked.config
        return self.policy(cell.policy, cell.prm), self.prm(cell.prm, cfg.dropout_p, cfg.dropout_mode)

    def embedder(self) -> Any:
        with self._lock:
            if self._embedder is None:
                from uats_core.embedders import default_embedder

                self._embedder = default_embedder()
            return self._embedder

    def controller(self, config: SearchConfig) -> Any:
        """A fresh LearnedController per search (it keeps a per-episode history) over a network loaded once."""
        from uats_core.controller import LearnedController, load_controller

        key = (config.controller, bool(config.controller_uncertainty_features))
        with self._lock:
            if key not in self._controller_nets:
                loaded = load_controller(config.controller, config)
                self._controller_nets[key] = (loaded.net, loaded.uncertainty_features)
            net, unc = self._controller_nets[key]
        return LearnedController(net, uncertainty_features=unc)


def _set_torch_threads(n: int | None) -> None:
    if n is None:
        return
    try:
        import torch

        torch.set_num_threads(int(n))
    except ImportError:
        pass


class EvalWorker:
    """Runs WorkItems against one database. `lanes` > 1 turns on cross-problem batching."""

    def __init__(
        self,
        db: str,
        *,
        lanes: int = 1,
        torch_threads: int | None = None,
        policy_opts: dict[str, Any] | None = None,
        prm_opts: dict[str, Any] | None = None,
        backends: BackendCache | None = None,
        merge_prm: bool = True,
    ) -> None:
        from storage import RunStore

        self.store = RunStore(db)
        self.ledger = CellLedger(self.store)
        self.lanes = max(1, int(lanes))
        self.merge_prm = merge_prm  # batched PRM calls merged across searches (policy calls always are)
        _set_torch_threads(torch_threads)
        self.cache = backends or BackendCache(policy_opts, prm_opts)
        self.grader = Grader()  # one per worker: its math-verify process pool is not free to start
        self.hub_stats: list[Any] = []
        # Set on Ctrl-C while lanes run: their searches stop at the next iteration boundary (run_search's
        # should_cancel), so they end as 'cancelled' runs instead of being cut off mid-write.
        self._stop = threading.Event()

    def close(self) -> None:
        self.grader.close()
        self.store.close()

    # ------------------------------------------------------------------ one cell
    def _run_cell(self, item: WorkItem, policy: Any, prm: Any, batched: bool, embedder: Any = None) -> CellOutcome:
        cell, checked = item.cell, item.checked
        run_id = uuid.uuid4().hex
        if not self.ledger.claim(cell, run_id, batched):
            return CellOutcome(cell.key, "skipped", None)
        t0 = time.perf_counter()
        try:
            search = prepare_search(
                checked,
                models=(policy, prm),
                controller=self.cache.controller,
                embedder=(lambda: embedder) if embedder is not None else self.cache.embedder,
            )
            self.store.register_run(
                run_id,
                **checked.run_fields(),
                policy=getattr(policy, "name", None),
                prm=getattr(prm, "name", None),
                label=f"eval {cell.key}",
            )
            if not batched and hasattr(prm, "clear_cache"):
                prm.clear_cache()
            result = search.run(
                subscribers=[self.store.subscriber()],
                run_id=run_id,
                grader=self.grader,
                should_cancel=self._stop.is_set,
                cancel_requested=self._stop.is_set,
            )
        except Exception as exc:  # run_search has already closed the run as failed (or never opened it)
            wall = time.perf_counter() - t0
            err = f"{type(exc).__name__}: {exc}"
            self.store.mark_failed(run_id, err)
            self.ledger.finish(cell.key, run_id, RunStatus.FAILED, wall, err)
            log.warning("cell %s failed: %s", cell.key, err)
            return CellOutcome(cell.key, RunStatus.FAILED, run_id, wall_s=wall, error=err)
        wall = time.perf_counter() - t0
        if result.status != RunStatus.FINISHED:
            self.ledger.finish(cell.key, run_id, RunStatus.FAILED, wall, result.error or result.status)
            if result.status == RunStatus.CANCELLED:
                raise KeyboardInterrupt(f"cell {cell.key} cancelled")
            return CellOutcome(cell.key, RunStatus.FAILED, run_id, wall_s=wall, error=result.error)
        self.ledger.finish(cell.key, run_id, RunStatus.FINISHED, wall)
        return CellOutcome(cell.key, RunStatus.FINISHED, run_id, result.correct, result.cost, wall)

    # ------------------------------------------------------------------ many cells
    def run(self, items: Sequence[WorkItem], *, progress: bool = True, desc: str = "cells") -> list[CellOutcome]:
        """Run items in the given (problem-major) order; every model is loaded once, on first use."""
        bar = None
        if progress and items:
            from tqdm import tqdm

            bar = tqdm(total=len(items), desc=desc, unit="search", smoothing=0.05)
        try:
            if self.lanes > 1 and len(items) > 1:
                return self._run_batched(items, bar)
            out: list[CellOutcome] = []
            for it in items:
                policy, prm = self.cache.backends(it)
                out.append(self._run_cell(it, policy, prm, batched=False))
                if bar is not None:
                    bar.update(1)
            return out
        finally:
            if bar is not None:
                bar.close()

    def _run_batched(self, items: Sequence[WorkItem], bar: Any) -> list[CellOutcome]:
        """`lanes` threads, lane j taking items j, j+lanes, ... (static, so a round's composition never
        depends on which thread was quicker). The group seed names the exact cell list, so the same cells
        with the same lane count reproduce."""
        lanes = min(self.lanes, len(items))
        hub = BatchingHub(lanes, group_seed=mix_seed(*(it.cell.key for it in items), lanes))
        needs_embedder = any(method_class(it.cell.method).needs_embedder for it in items)
        embedder = LockedEmbedder(self.cache.embedder()) if needs_embedder else None
        results: list[list[CellOutcome]] = [[] for _ in range(lanes)]
        errors: list[BaseException] = []
        bar_lock = threading.Lock()

        def lane_main(lane: int) -> None:
            try:
                for it in items[lane::lanes]:
                    if errors:
                        break  # another lane was interrupted: stop starting new searches
                    policy, prm = self.cache.backends(it)
                    cfg = it.checked.config
                    lp = LanePolicy(hub, lane, policy, it.cell.policy)
                    lr = LanePRM(hub, lane, prm, f"{it.cell.prm}|{cfg.dropout_mode}|{cfg.dropout_p!r}", self.merge_prm)
                    results[lane].append(self._run_cell(it, lp, lr, batched=True, embedder=embedder))
                    if bar is not None:
                        with bar_lock:
                            bar.update(1)
            except BaseException as exc:  # KeyboardInterrupt from a cancelled run: stop everything
                errors.append(exc)
            finally:
                hub.leave(lane)
                lane_done[lane].set()

        # The main thread waits on events, not Thread.join: on Python 3.11 a KeyboardInterrupt landing inside
        # join() can mark a still-running thread as stopped (bpo-46726), and a second join() then returns at
        # once - the process would exit with a lane mid-search and its cell left 'running'.
        lane_done = [threading.Event() for _ in range(lanes)]
        threads = [
            threading.Thread(target=lane_main, args=(j,), name=f"eval-lane-{j}", daemon=True) for j in range(lanes)
        ]
        for t in threads:
            t.start()
        try:
            for done in lane_done:
                while not done.wait(0.5):  # short waits keep the main thread responsive to Ctrl-C
                    pass
        except KeyboardInterrupt:
            errors.append(KeyboardInterrupt())
            self._stop.set()
            for j, done in enumerate(lane_done):
                if not done.wait(120):  # a cancelled search stops at its next iteration boundary
                    log.warning("lane %d did not stop within 120 s; its cell stays 'running' for a rerun to reclaim", j)
            raise
        self.hub_stats.append(hub.stats)
        if errors:
            raise errors[0]
        return [o for lane_out in results for o in lane_out]
