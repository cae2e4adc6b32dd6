"""`run_eval`: check the grid, plan against the database (skip finished cells, reclaim orphans), then run
what is left serially, as one `--shard`, or on Ray."""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from storage.eval_cells import CellLedger, Plan
from uats_core.errors import ConfigError
from uats_core.eval.grid import GridSpec, WorkItem, build_cells, check_cells, shard
from uats_core.methods import method_class
from uats_core.status import RunStatus

from .worker import FACTORY_PREFIX, CellOutcome, EvalWorker

log = logging.getLogger(__name__)


@dataclass
class EvalOptions:
    db: str
    shard: str | None = None  # "i/n"
    ray: str | None = None  # "local" or a cluster address
    workers: int | None = None  # Ray actors (default: CPUs // cpus_per_worker)
    cpus_per_worker: float = 1.0
    gpus_per_worker: float = 0.0
    lanes: int = 1  # cross-problem batching: searches per worker sharing model calls (1 = off)
    merge_prm: bool = True  # batched PRM calls merged across searches too (policy calls always are)
    torch_threads: int | None = None
    policy_opts: dict[str, Any] = field(default_factory=dict)
    prm_opts: dict[str, Any] = field(default_factory=dict)
    trust_remote_code: bool = False  # the options may run a model's own code (--trust-remote-code)
    max_attempts: int = 3
    stale_after_s: float = 900.0
    chunk: int | None = None
    progress: bool = True
    dry_run: bool = False
    ledger: str | None = None  # a results ledger folder (storage.results_ledger): its cells are done


@dataclass
class EvalSummary:
    cells: int  # in this grid (this shard's part when sharded)
    done_before: int
    busy: int
    given_up: int
    orphans: int
    ran: int
    finished: int
    failed: int
    skipped: int
    wall_s: float
    outcomes: list[CellOutcome] = field(default_factory=list)
    to_run: int = 0  # what the plan found left to do
    in_ledger: int = 0  # cells skipped because the results ledger holds them

    @property
    def searches_per_minute(self) -> float:
        return 60.0 * (self.finished + self.failed) / self.wall_s if self.wall_s > 0 else 0.0

    def line(self) -> str:
        return (
            f"{self.cells} cells: {self.in_ledger} in the ledger, {self.done_before} already finished, "
            f"{self.ran} run now ({self.finished} finished, "
            f"{self.failed} failed, {self.skipped} held by another worker), {self.busy} busy elsewhere, "
            f"{self.orphans} orphaned runs reclaimed, {self.given_up} given up; {self.wall_s:.1f} s, "
            f"{self.searches_per_minute:.1f} searches/min"
        )


def preflight(items: Sequence[WorkItem], opts: EvalOptions) -> list[WorkItem]:
    """Fail with one line naming the field before anything is written; the items with their checked searches."""
    items = check_cells(items, opts.policy_opts, opts.prm_opts, opts.trust_remote_code)
    specs = {(it.cell.pair, "policy", it.cell.policy) for it in items} | {
        (it.cell.pair, "prm", it.cell.prm) for it in items
    }
    for pair, role, spec in sorted(specs):
        if spec.startswith(FACTORY_PREFIX) or spec.startswith(("hf:", "vllm:")):
            continue
        if not Path(spec).expanduser().exists():
            hint = (
                " (the arithmetic world's models: python -m uats.arith.train)" if "assets/models/arith" in spec else ""
            )
            raise ConfigError("pairs", f"pair {pair}: the {role} {spec} does not exist{hint}")
    controllers = {}  # each controller the cells need, loaded once here: a missing one fails before any cell runs
    for it in items:
        cfg = it.checked.config
        if method_class(cfg.method).needs_controller:
            controllers.setdefault((cfg.controller, cfg.controller_uncertainty_features), (cfg.method, cfg))
    if controllers:
        from uats_core.controller import load_controller

        for method, cfg in controllers.values():
            try:
                load_controller(cfg.controller, cfg)
            except ValueError as exc:
                raise ConfigError("methods", f"{method} needs its controller: {exc}") from None
    return items


def run_eval(spec: GridSpec, opts: EvalOptions) -> EvalSummary:
    from storage import RunStore

    items = build_cells(spec)
    if opts.shard:
        items = shard(items, opts.shard)
    results, in_ledger = None, 0
    if opts.ledger:
        from storage.results_ledger import ResultsLedger

        results = ResultsLedger(opts.ledger)
        done = results.keys()
        kept = [it for it in items if it.cell.key not in done]
        in_ledger, items = len(items) - len(kept), kept
        log.info("results ledger %s: %d of the grid's cells are in it", opts.ledger, in_ledger)
    items = preflight(items, opts)
    local = "://" not in opts.db
    if opts.dry_run and local and not Path(opts.db).expanduser().exists():
        log.info("%d cells; no database yet: all to run (dry run, nothing written)", len(items))
        return EvalSummary(len(items) + in_ledger, 0, 0, 0, 0, 0, 0, 0, 0, 0.0, to_run=len(items), in_ledger=in_ledger)
    if local:
        Path(opts.db).expanduser().absolute().parent.mkdir(parents=True, exist_ok=True)
    store = RunStore(opts.db)
    db_url = store.location
    try:
        ledger = CellLedger(store)
        plan: Plan = ledger.plan(
            items, max_attempts=opts.max_attempts, stale_after_s=opts.stale_after_s, write=not opts.dry_run
        )
    finally:
        store.close()
    log.info(
        "%d cells; %d finished before, %d to run (%d orphans reclaimed), %d busy elsewhere, %d given up",
        len(items),
        plan.done,
        len(plan.todo),
        len(plan.orphans),
        plan.busy,
        plan.given_up,
    )
    summary = EvalSummary(
        len(items) + in_ledger,
        plan.done,
        plan.busy,
        plan.given_up,
        len(plan.orphans),
        0,
        0,
        0,
        0,
        0.0,
        to_run=len(plan.todo),
        in_ledger=in_ledger,
    )
    if opts.dry_run:
        return summary
    with LedgerSync(results, db_url):
        if plan.todo:
            _run_todo(plan, db_url, opts, summary)
    return summary


def _run_todo(plan: Plan, db_url: str, opts: EvalOptions, summary: EvalSummary) -> None:
    t0 = time.perf_counter()
    if opts.ray:
        from .ray_runner import run_ray

        outcomes = run_ray(
            plan.todo,
            db_url,
            opts.ray,
            workers=opts.workers,
            cpus_per_worker=opts.cpus_per_worker,
            gpus_per_worker=opts.gpus_per_worker,
            lanes=opts.lanes,
            merge_prm=opts.merge_prm,
            torch_threads=opts.torch_threads,
            policy_opts=opts.policy_opts,
            prm_opts=opts.prm_opts,
            chunk=opts.chunk,
            progress=opts.progress,
        )
    else:
        worker = EvalWorker(
            db_url,
            lanes=opts.lanes,
            torch_threads=opts.torch_threads,
            policy_opts=opts.policy_opts,
            prm_opts=opts.prm_opts,
            merge_prm=opts.merge_prm,
        )
        try:
            outcomes = worker.run(
                plan.todo, progress=opts.progress, desc=f"cells{' shard ' + opts.shard if opts.shard else ''}"
            )
        finally:
            worker.close()
    summary.wall_s = time.perf_counter() - t0
    summary.outcomes = outcomes
    summary.ran = len(outcomes)
    summary.finished = sum(o.status == RunStatus.FINISHED for o in outcomes)
    summary.failed = sum(o.status == RunStatus.FAILED for o in outcomes)
    summary.skipped = sum(o.status == "skipped" for o in outcomes)


def code_version(root: Path | None = None) -> str:
    """The git commit of the checkout at `root` (default: this one), with '+dirty' where its code differs from the
    commit: a changed tracked file or an untracked Python file, outside `results/` (the ledger being written is
    not code); else the installed package's version."""
    import subprocess
    from importlib.metadata import PackageNotFoundError, version

    from reports.provenance import DIRTY

    root = Path(__file__).resolve().parents[2] if root is None else root
    if (root / ".git").exists():  # a checkout; installed, site-packages is none (nor the repo it may sit in)
        try:
            head = subprocess.run(
                ["git", "-C", str(root), "rev-parse", "--short=12", "HEAD"],
                capture_output=True,
                text=True,
                timeout=10,
                check=True,
            ).stdout.strip()
            changed = subprocess.run(
                [
                    "git",
                    "-C",
                    str(root),
                    "status",
                    "--porcelain",
                    "--untracked-files=all",
                    "--",
                    ".",
                    ":(exclude)results",
                ],
                capture_output=True,
                text=True,
                timeout=10,
                check=True,
            ).stdout.splitlines()
            # an untracked note changes no code; an untracked module may (ignored files are never listed)
            dirty = [line for line in changed if not line.startswith("??") or line.rstrip().endswith(".py")]
            return head + (DIRTY if dirty else "")
        except (OSError, subprocess.SubprocessError):
            pass
    try:
        return "uats-studio " + version("uats-studio")
    except PackageNotFoundError:
        return "unknown"


def sync_run_log(ledger: Any, db_url: str, version: str | None, fill: bool = False) -> int:
    """Copy a run log's finished cells that the ledger lacks into it (with their step records and duplicate
    counts, rows labelled with code `version`; None: the code is not known, so none are copied); with fill, also
    the duplicate counts and controller steps of the cells the ledger holds without them
    (storage.results_ledger.fill_traces, fill_controller). Returns the rows added."""
    from reports.duplicates import trace_counts
    from reports.steps import step_records
    from storage.results_ledger import fill_controller, fill_traces, sync_ledger
    from uats_core.paths import portable_path

    added = 0
    if version is not None:
        added = sync_ledger(
            ledger,
            db_url,
            version,
            portable=portable_path,
            trace_counts=trace_counts,
            step_records=lambda load, rows: step_records(load, rows, max_runs_per_pair=10**9),
        )
    if fill:
        fill_traces(ledger, db_url, trace_counts)
        fill_controller(ledger, db_url)
    return added


class LedgerSync:
    """Copies finished cells from the run log into the results ledger every `every_s` seconds while the grid
    runs (whoever runs the cells: this process, a shard, Ray actors), and once more at the end or on Ctrl-C."""

    def __init__(self, ledger: Any, db_url: str, every_s: float = 120.0) -> None:
        import threading

        self.ledger, self.db_url, self.every_s = ledger, db_url, every_s
        self.version = code_version()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="ledger-sync", daemon=True)

    def sync(self) -> int:
        return sync_run_log(self.ledger, self.db_url, self.version)

    def _loop(self) -> None:
        while not self._stop.wait(self.every_s):
            try:
                self.sync()
            except Exception:  # a failed sync is retried next time and at the end; the grid goes on
                log.exception("results ledger sync failed")

    def __enter__(self) -> LedgerSync:
        if self.ledger is not None:
            self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        if self.ledger is None:
            return
        self._stop.set()
        self._thread.join()
        self.sync()
