"""`python -m benchmarks engine`: search wall time per method and what logging to the database costs.

Each configuration runs `--repeats` times, alternating with and without the SQLite subscriber so both
see the same machine load; we report the minimum (two shared cores are noisy) and the spread, plus the
time spent inside the subscriber itself, which is the direct measure of the log's share."""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from uats_core.config import SearchConfig
from uats_core.events import Event


class _TimedSubscriber:
    def __init__(self, inner: Callable[[Event], None]) -> None:
        self.inner = inner
        self.seconds = 0.0

    def __call__(self, event: Event) -> None:
        t0 = time.perf_counter()
        self.inner(event)
        self.seconds += time.perf_counter() - t0


def bench_engine(
    methods: list[str], budget: int, repeats: int, problem_id: str, policy: str | None, prm: str | None, seed: int = 0
) -> list[dict[str, Any]]:
    from storage import RunStore
    from uats_core.runner import build_backends, run_search
    from uats_core.worlds.arith.world import get_problem

    problem = get_problem(problem_id)
    base = SearchConfig(budget=budget, seed=seed)
    pol, rm = build_backends(policy, prm, base)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        store = RunStore(str(Path(tmp) / "bench.db"))
        for method in methods:
            cfg = SearchConfig(
                method=method, budget=budget, seed=seed
            )  # each run_search validates it (validate_request)
            run_search(problem, cfg, pol, rm)  # warm-up: first-call allocations, lazy imports
            plain, logged, inside, nodes = [], [], [], 0
            for _ in range(repeats):
                t0 = time.perf_counter()
                res = run_search(problem, cfg, pol, rm)
                plain.append(time.perf_counter() - t0)
                sub = _TimedSubscriber(store.subscriber())
                t0 = time.perf_counter()
                run_search(problem, cfg, pol, rm, subscribers=[sub])
                logged.append(time.perf_counter() - t0)
                inside.append(sub.seconds)
                nodes = len(res.tree) - 1
            best = min(plain)
            rows.append(
                {
                    "method": method,
                    "budget": budget,
                    "nodes": nodes,
                    "search_s": best,
                    "spread_s": max(plain) - best,
                    "with_log_s": min(logged),
                    "log_share": min(i / lg for i, lg in zip(inside, logged)),
                    "wall_ratio": min(logged) / best,
                }
            )
    return rows


def add_parser(sub: Any) -> None:
    p = sub.add_parser("engine", help="search wall time per method and the cost of the run log")
    p.add_argument("--methods", default="h-uats,rebase,best-of-n,beam,dvts,dora")
    p.add_argument("--budget", type=int, default=16)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--problem", default="arith-test-0")
    p.add_argument("--policy", default=None)
    p.add_argument("--prm", default=None)
    p.set_defaults(fn=main)


def main(args: argparse.Namespace) -> int:
    rows = bench_engine(args.methods.split(","), args.budget, args.repeats, args.problem, args.policy, args.prm)
    print(
        f"{'method':10} {'N':>4} {'nodes':>6} {'search s':>9} {'spread':>7} {'logged s':>9} "
        f"{'log share':>10} {'wall ratio':>10}"
    )
    for r in rows:
        print(
            f"{r['method']:10} {r['budget']:>4} {r['nodes']:>6} {r['search_s']:>9.3f} {r['spread_s']:>7.3f} "
            f"{r['with_log_s']:>9.3f} {r['log_share']:>9.1%} {r['wall_ratio']:>10.3f}"
        )
    worst = max(r["log_share"] for r in rows)
    print(
        f"run log share of search time: worst {worst:.1%} (target < 5%); "
        f"median {statistics.median(r['log_share'] for r in rows):.1%}"
    )
    return 0
