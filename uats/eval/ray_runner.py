"""Cells as Ray work: one actor per worker slot (CPU cores or a GPU), each loading its models once and
running chunks of cells with the same `EvalWorker` the serial path uses; every actor writes to the one
database (a SQLite file on one machine, a PostgreSQL URL across machines).

`--ray local` starts a private Ray on this machine; `--ray ADDRESS` joins a running cluster. The code and the
shipped models travel with the job as Ray's `runtime_env` working_dir (this checkout, less virtualenvs, git data and
run logs), so cluster nodes need no copy of their own; model paths inside the checkout are rewritten to where the
working_dir landed on each node. Other local model folders must exist at the same path on every node. An installed
uats-studio (a wheel, not a checkout) ships nothing: every node installs the same version.
"""

from __future__ import annotations

import logging
import math
import os
import socket
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from uats_core.eval.grid import WorkItem

from .worker import CellOutcome, EvalWorker

log = logging.getLogger(__name__)

REPO_ROOT = Path(__file__).resolve().parents[2]
# Left out of the working_dir Ray ships to the nodes: environments, history and outputs, none of which a search reads.
_SHIP_EXCLUDES = [
    ".git",
    ".venv",
    ".venv-vllm",
    ".cache",
    "runs",
    "exports",
    "artifacts",
    "docs",
    "*.db",
    "*.db-wal",
    "*.db-shm",
    "__pycache__",
    ".pytest_cache",
    ".hypothesis",
]


def ship_env(root: Path = REPO_ROOT) -> dict[str, Any]:
    """Ray's runtime_env: a checkout travels as the working_dir; an installed package ships nothing (three levels
    up from it is the interpreter's lib folder, not a project), so every node needs the same package installed."""
    if (root / "pyproject.toml").is_file() and (root / "uats_core").is_dir():
        return {"working_dir": str(root), "excludes": _SHIP_EXCLUDES}
    log.info(
        "uats_core is installed at %s, not a checkout: nothing ships with the Ray job; every node needs the same "
        "uats-studio installed",
        root,
    )
    return {}


def relocate(items: Sequence[WorkItem], driver_root: str, here: Path = REPO_ROOT) -> list[WorkItem]:
    """Model paths inside the driver's checkout, rewritten to this node's copy of it."""
    if str(here) == driver_root:
        return list(items)

    def move(spec: str) -> str:
        return str(here) + spec[len(driver_root) :] if spec.startswith(driver_root + os.sep) else spec

    def moved(it: WorkItem) -> WorkItem:
        cell = replace(it.cell, policy=move(it.cell.policy), prm=move(it.cell.prm))
        if it.search is None:
            return replace(it, cell=cell)
        request = replace(it.search.request, policy=cell.policy, prm=cell.prm)
        return replace(it, cell=cell, search=replace(it.search, request=request))

    return [moved(it) for it in items]


class EvalActor:
    """Lives in a Ray worker process; Ray wraps it with ray.remote at dispatch time (so importing this
    module never needs Ray)."""

    def __init__(
        self,
        db: str,
        lanes: int,
        torch_threads: int | None,
        policy_opts: dict[str, Any],
        prm_opts: dict[str, Any],
        log_level: int,
        merge_prm: bool = True,
        driver_root: str = str(REPO_ROOT),
    ) -> None:
        logging.basicConfig(level=log_level, format="%(levelname)s %(name)s: %(message)s")
        self.driver_root = driver_root
        self.worker = EvalWorker(
            db,
            lanes=lanes,
            torch_threads=torch_threads,
            policy_opts=policy_opts,
            prm_opts=prm_opts,
            merge_prm=merge_prm,
        )

    def run(self, items: Sequence[WorkItem]) -> list[CellOutcome]:
        return self.worker.run(relocate(items, self.driver_root), progress=False)

    def pid(self) -> int:
        return os.getpid()

    def where(self) -> tuple[str, int]:
        """(host, pid), as this actor's cells record them in `eval_cells`."""
        return socket.gethostname(), os.getpid()


def chunk_items(items: Sequence[WorkItem], chunk: int) -> list[list[WorkItem]]:
    """Consecutive chunks of the problem-major grid, dispatched in order: a stopped run leaves whole
    problems done. Each actor caches every model it meets (for several big pairs on small GPUs, run one
    pair per invocation)."""
    return [list(items[i : i + chunk]) for i in range(0, len(items), chunk)]


def check_resources(resources: dict[str, float], cpus_per_worker: float, gpus_per_worker: float) -> None:
    """Refuse a worker shape the cluster cannot place (Ray would otherwise wait for it forever)."""
    from uats_core.errors import ConfigError

    for flag, need, name in (("gpus-per-worker", gpus_per_worker, "GPU"), ("cpus-per-worker", cpus_per_worker, "CPU")):
        have = float(resources.get(name, 0.0))
        if need > have:
            raise ConfigError(
                flag,
                f"each worker asks for {need:g} {name}(s) but the Ray cluster has {have:g}; lower "
                f"--{flag}" + (" (0 runs on CPUs)" if name == "GPU" else "") + " or add nodes that have them",
            )


def run_ray(
    items: Sequence[WorkItem],
    db: str,
    address: str,
    *,
    workers: int | None = None,
    cpus_per_worker: float = 1.0,
    gpus_per_worker: float = 0.0,
    lanes: int = 1,
    merge_prm: bool = True,
    torch_threads: int | None = None,
    policy_opts: dict[str, Any] | None = None,
    prm_opts: dict[str, Any] | None = None,
    chunk: int | None = None,
    progress: bool = True,
) -> list[CellOutcome]:
    try:
        import ray
        from ray.util import ActorPool
    except ImportError:
        from uats_core.errors import ConfigError

        raise ConfigError("ray", "Ray is not installed; pip install -r requirements-eval.txt (or drop --ray)") from None
    if not items:
        return []
    runtime_env = ship_env()
    held: list[tuple[str, int]] = []  # (host, pid) of every actor: the cells they hold when the job stops
    try:
        return _run_ray(
            ray,
            ActorPool,
            items,
            db,
            address,
            runtime_env,
            held,
            workers=workers,
            cpus_per_worker=cpus_per_worker,
            gpus_per_worker=gpus_per_worker,
            lanes=lanes,
            merge_prm=merge_prm,
            torch_threads=torch_threads,
            policy_opts=policy_opts,
            prm_opts=prm_opts,
            chunk=chunk,
            progress=progress,
        )
    except BaseException as exc:
        # An actor died (or Ctrl-C, or another error): the actors were stopped mid-cell. Close their cells now;
        # left 'running', a rerun from another machine would wait out their heartbeats (--stale-after).
        release_cells(db, held, f"the Ray job stopped ({type(exc).__name__})")
        raise


def release_cells(db: str, held: Sequence[tuple[str, int]], why: str) -> None:
    if not held:
        return
    from storage import RunStore
    from storage.eval_cells import CellLedger

    try:
        store = RunStore(db)
        try:
            closed = CellLedger(store).release(held, why)
        finally:
            store.close()
    except Exception:  # never hide the error that stopped the job
        log.exception("could not close the stopped Ray actors' cells; a rerun reclaims them")
        return
    if closed:
        log.error(
            "Ray job stopped: %d cell(s) its actors held closed as failed (%s); rerun the same command to resume",
            len(closed),
            ", ".join(closed[:4]) + (" ..." if len(closed) > 4 else ""),
        )


def _run_ray(
    ray: Any,
    ActorPool: Any,
    items: Sequence[WorkItem],
    db: str,
    address: str,
    runtime_env: dict[str, Any],
    held: list[tuple[str, int]],
    *,
    workers: int | None,
    cpus_per_worker: float,
    gpus_per_worker: float,
    lanes: int,
    merge_prm: bool,
    torch_threads: int | None,
    policy_opts: dict[str, Any] | None,
    prm_opts: dict[str, Any] | None,
    chunk: int | None,
    progress: bool,
) -> list[CellOutcome]:
    started_here = False
    if not ray.is_initialized():
        if address == "local":
            n = workers or max(1, int((os.cpu_count() or 1) // max(cpus_per_worker, 1e-9)))
            ray.init(
                num_cpus=max(1, math.ceil(n * cpus_per_worker)),
                include_dashboard=False,
                runtime_env=runtime_env,
                object_store_memory=200 * 2**20,
                log_to_driver=True,
                configure_logging=False,
            )
        else:
            ray.init(address=address, runtime_env=runtime_env, log_to_driver=True, configure_logging=False)
        started_here = True
    try:
        resources = ray.cluster_resources()
        check_resources(resources, cpus_per_worker, gpus_per_worker)
        n_workers = workers or max(1, int(resources.get("CPU", 1.0) // max(cpus_per_worker, 1e-9)))
        if gpus_per_worker:
            n_workers = min(n_workers, int(resources.get("GPU", 0) // gpus_per_worker))
        threads = torch_threads if torch_threads is not None else max(1, int(cpus_per_worker))
        remote_cls = ray.remote(num_cpus=cpus_per_worker, num_gpus=gpus_per_worker)(EvalActor)
        actors = [
            remote_cls.remote(
                db,
                lanes,
                threads,
                dict(policy_opts or {}),
                dict(prm_opts or {}),
                logging.getLogger("uats_core").getEffectiveLevel(),
                merge_prm,
                str(REPO_ROOT),
            )
            for _ in range(n_workers)
        ]
        held.extend(ray.get([a.where.remote() for a in actors]))
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
