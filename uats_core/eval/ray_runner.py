"""Cells as Ray work: one actor per worker slot (CPU cores or a GPU), each loading its models once and
running chunks of cells with the same `EvalWorker` the serial path uses; every actor writes to the one
database (a SQLite file on one machine, a PostgreSQL URL across machines).

`--ray local` starts a private Ray on this machine; `--ray ADDRESS` joins a running cluster, whose nodes
must see this checkout (and the model folders) at the same path - PYTHONPATH is set to it for the actors.
"""

from __future__ import annotations

import logging
import math
import os
from pathlib import Path
from typing import Any, Sequence

from .grid import WorkItem
from .worker import CellOutcome, EvalWorker

log = logging.getLogger(__name__)

REPO_ROOT = Path(__file__).resolve().parents[2]


class EvalActor:
    """Lives in a Ray worker process; Ray wraps it with ray.remote at dispatch time (so importing this
    module never needs Ray)."""

    def __init__(self, db: str, lanes: int, torch_threads: int | None, policy_opts: dict[str, Any],
                 prm_opts: dict[str, Any], log_level: int, merge_prm: bool = True) -> None:
        logging.basicConfig(level=log_level, format="%(levelname)s %(name)s: %(message)s")
        self.worker = EvalWorker(db, lanes=lanes, torch_threads=torch_threads, policy_opts=policy_opts, prm_opts=prm_opts,
                                 merge_prm=merge_prm)

    def run(self, items: Sequence[WorkItem]) -> list[CellOutcome]:
        return self.worker.run(items, progress=False)

    def pid(self) -> int:
        return os.getpid()


def chunk_items(items: Sequence[WorkItem], chunk: int) -> list[list[WorkItem]]:
    """Consecutive chunks of the problem-major grid, dispatched in order: a stopped run leaves whole
    problems done. Each actor caches every model it meets (for several big pairs on small GPUs, run one
    pair per invocation)."""
    return [list(items[i:i + chunk]) for i in range(0, len(items), chunk)]


def run_ray(items: Sequence[WorkItem], db: str, address: str, *, workers: int | None = None,
            cpus_per_worker: float = 1.0, gpus_per_worker: float = 0.0, lanes: int = 1, merge_prm: bool = True,
            torch_threads: int | None = None, policy_opts: dict[str, Any] | None = None,
            prm_opts: dict[str, Any] | None = None, chunk: int | None = None, progress: bool = True) -> list[CellOutcome]:
    try:
        import ray
        from ray.util import ActorPool
    except ImportError:
        from ..config import ConfigError

        raise ConfigError("ray", "Ray is not installed; pip install -r requirements-eval.txt (or drop --ray)") from None
    if not items:
        return []
    env = {"PYTHONPATH": os.pathsep.join(p for p in (str(REPO_ROOT), os.environ.get("PYTHONPATH", "")) if p)}
    started_here = False
    if not ray.is_initialized():
        if address == "local":
            n = workers or max(1, int((os.cpu_count() or 1) // max(cpus_per_worker, 1e-9)))
            ray.init(num_cpus=max(1, math.ceil(n * cpus_per_worker)), include_dashboard=False,
                     runtime_env={"env_vars": env}, object_store_memory=200 * 2**20, log_to_driver=True,
                     configure_logging=False)
        else:
            ray.init(address=address, runtime_env={"env_vars": env}, log_to_driver=True, configure_logging=False)
        started_here = True
    try:
        total_cpus = ray.cluster_resources().get("CPU", 1.0)
        n_workers = workers or max(1, int(total_cpus // max(cpus_per_worker, 1e-9)))
        if gpus_per_worker:
            n_workers = min(n_workers, max(1, int(ray.cluster_resources().get("GPU", 0) // gpus_per_worker)))
        threads = torch_threads if torch_threads is not None else max(1, int(cpus_per_worker))
        remote_cls = ray.remote(num_cpus=cpus_per_worker, num_gpus=gpus_per_worker)(EvalActor)
        actors = [remote_cls.remote(db, lanes, threads, dict(policy_opts or {}), dict(prm_opts or {}),
                                    logging.getLogger("uats_core").getEffectiveLevel(), merge_prm)
                  for _ in range(n_workers)]
        size = chunk or max(1, min(64, math.ceil(len(items) / (n_workers * 4))))
        chunks = chunk_items(items, size)
        log.info("Ray: %d actors, %d chunks of up to %d cells", n_workers, len(chunks), size)
        bar = None
        if progress:
            from tqdm import tqdm

            bar = tqdm(total=len(items), desc="cells (ray)", unit="search", smoothing=0.05)
        out: list[CellOutcome] = []
        try:
            pool = ActorPool(actors)
            for outcomes in pool.map_unordered(lambda a, ch: a.run.remote(ch), chunks):
                out.extend(outcomes)
                if bar is not None:
                    bar.update(len(outcomes))
        finally:
            if bar is not None:
                bar.close()
            for a in actors:
                ray.kill(a)
        return out
    finally:
        if started_here:
            ray.shutdown()
