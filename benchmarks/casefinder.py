"""`python -m benchmarks cases`: the Compare tab's case finder on the embedded arithmetic world, end to end.

A case batch is queued as the tab's "Run a batch" button queues it (ui.tabs.case_finder.batch_requests with the
Search form's defaults and --budget, then ui.jobs.case_batch.queue_case_batch) on a worker pool built as the app
builds it (two warm workers): per problem and policy, an H-UATS search and its counterfactual with uncertainty
switched off (ui.views.counterfactual); the batch's wall time is from queueing to its end. Then the finder runs over
the run log as "Find cases in the run log" does, timed, and prints over the batch's pairs how many answers
uncertainty changed and in which direction, and the ranked cases. The machine's load average is printed before and
after (two shared cores here: the times are this machine's at that load, not targets)."""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from uats_core.config import setting_of
from uats_core.status import LIVE, RunStatus


def _form(budget: int, seed: int) -> dict[str, Any]:
    """The Search form's defaults, as the page sends them, with the budget and seed asked for."""
    from uats_core.config import SearchConfig
    from ui.choices import ARITH, EMBEDDED
    from ui.tabs.search_layout import CONFIG_FIELDS

    config = {**SearchConfig().to_dict(), "budget": budget, "seed": seed}
    return {
        **{k: config[k] for k in CONFIG_FIELDS},
        "policy": EMBEDDED,
        "prm": EMBEDDED,
        "prm_kind": "detect",
        "policy_opts": "",
        "prm_opts": "",
        "dataset": ARITH,
        "problem": "arith-test-0",
        "free_question": "",
        "free_answer": "",
    }


def bench_cases(problems: int, budget: int, seed: int, db: Path, timeout_s: float) -> dict[str, Any]:
    from storage import RunStore
    from storage.batches import get_batch_job
    from ui.choices import server_choices
    from ui.jobs.case_batch import queue_case_batch
    from ui.jobs.pool import WorkerPool, default_pair_request
    from ui.tabs.case_finder import batch_requests
    from ui.views.counterfactual import DIRECTIONS, RANKING_RULE, find_cases, found_rows, found_summary

    store = RunStore(str(db))
    pool = WorkerPool(store, max_workers=2, prewarm=default_pair_request())
    load_before = os.getloadavg()
    try:
        ctx = SimpleNamespace(store=store, pool=pool, choices=server_choices())
        runs = batch_requests(ctx, _form(budget, seed), problems)
        t0 = time.perf_counter()
        job = queue_case_batch(
            store, pool, runs, {"problems": problems, "budget": budget, "seed": seed, "counterfactual": True}
        )
        said = -1
        while time.perf_counter() - t0 < timeout_s:
            row = get_batch_job(store, job)
            if row["done"] != said:
                said = row["done"]
                print(f"  {time.perf_counter() - t0:7.1f} s  {row['done']} of {row['total']} searches", flush=True)
            if row["status"] not in LIVE:
                break
            time.sleep(1.0)
        batch_s = time.perf_counter() - t0
        row = get_batch_job(store, job)
    finally:
        pool.shutdown(cancel=True, timeout_s=30)
    t1 = time.perf_counter()
    found = find_cases(store)
    find_s = time.perf_counter() - t1
    load_after = os.getloadavg()
    print(
        f"\ncase batch: {row['status']}, {row['done']} of {row['total']} searches ({row['failed']} failed) in "
        f"{batch_s:.0f} s" + (f": {row['error']}" if row.get("error") else "")
    )
    print(f"case finder: {found_summary(found)}; found in {find_s:.2f} s")
    for pair in sorted({c.run.get("pair") or c.run.get("policy") for c in found.cases}):
        ways = [
            sum(1 for c in found.cases if (c.run.get("pair") or c.run.get("policy")) == pair and c.direction == w)
            for w in DIRECTIONS
        ]
        print(f"  policy {pair}: " + ", ".join(f"{n} {w}" for n, w in zip(ways, DIRECTIONS)))
    print(RANKING_RULE)
    for r in found_rows(found):
        print("  " + " | ".join(str(v) for v in r))
    print(
        f"load average (1, 5, 15 min) before {tuple(round(x, 2) for x in load_before)}, after "
        f"{tuple(round(x, 2) for x in load_after)} on {os.cpu_count()} cores"
    )
    return {
        "status": row["status"],
        "searches": row["done"],
        "batch_s": batch_s,
        "find_s": find_s,
        "cases": len(found.cases),
        "pairs": found.pairs,
        **found.by_direction,
    }


def run(args: argparse.Namespace) -> int:
    if args.db is not None:
        out = bench_cases(args.problems, args.budget, args.seed, args.db, args.timeout_s)
    else:
        with tempfile.TemporaryDirectory() as tmp:
            out = bench_cases(args.problems, args.budget, args.seed, Path(tmp) / "cases.db", args.timeout_s)
    return 0 if out["status"] == RunStatus.FINISHED else 1


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "cases",
        help="the case finder on the embedded world: a batch of H-UATS searches and their "
        "counterfactuals through the worker pool, then the answers uncertainty changed "
        "(benchmarks/casefinder.py)",
    )
    p.add_argument("--problems", type=int, default=20, help="arithmetic test problems in the batch (default 20)")
    p.add_argument("--budget", type=int, default=setting_of("budget").default, help=setting_of("budget").spec.help)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--db", type=Path, default=None, help="keep the run log here (default: a temporary one)")
    p.add_argument("--timeout-s", type=float, default=7200.0)
    p.set_defaults(func=run)
