"""Throughput of the evaluation harness: searches per minute at N=16 for REBASE and H-UATS, with and without
cross-problem batching, measured side by side on the same problems, models loaded once beforehand.

    python -m benchmarks eval [--problems 8] [--lanes 4] [--repeats 2] [--pair A:prm]

Each repeat runs the serial and the batched pass back to back (alternating which goes first), each into a
fresh temporary run log (so it includes the logging cost, as a real evaluation does); the reported rate
uses the fastest repeat, because other processes on a shared machine only ever slow a pass down, and the
spread is printed with it.
"""

from __future__ import annotations

import argparse
import logging
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from uats.eval.worker import BackendCache, EvalWorker
from uats_core.errors import ConfigError
from uats_core.eval.grid import (
    GridSpec,
    WorkItem,
    build_cells,
    check_cells,
    load_eval_problems,
    parse_models,
    parse_pairs,
)
from uats_core.status import RunStatus

log = logging.getLogger(__name__)


def _timed_pass(
    items: Sequence[WorkItem], cache: BackendCache, lanes: int, torch_threads: int | None, merge_prm: bool = True
) -> float:
    with tempfile.TemporaryDirectory(prefix="uats-bench-eval-") as tmp:
        worker = EvalWorker(
            str(Path(tmp) / "bench.db"), lanes=lanes, torch_threads=torch_threads, backends=cache, merge_prm=merge_prm
        )
        try:
            t0 = time.perf_counter()
            out = worker.run(items, progress=False)
            wall = time.perf_counter() - t0
        finally:
            worker.close()
    bad = [o for o in out if o.status != RunStatus.FINISHED]
    if bad:
        raise RuntimeError(f"{len(bad)} bench searches did not finish, e.g. {bad[0].key}: {bad[0].error}")
    return wall


def bench_eval(
    *,
    pair: str = "A:prm",
    methods: Sequence[str] = ("rebase", "h-uats"),
    budget: int = 16,
    problems: int = 8,
    lanes: int = 4,
    repeats: int = 2,
    seed: int = 0,
    models: dict[str, str] | None = None,
    dataset: str | None = None,
    torch_threads: int | None = None,
    merge_prm: bool = True,
    policy_opts: dict[str, Any] | None = None,
    prm_opts: dict[str, Any] | None = None,
    progress: bool = True,
) -> dict[str, dict[str, Any]]:
    """{method: {serial_per_min, batched_per_min, ratio, serial_s: [...], batched_s: [...], searches}}."""
    if lanes < 2:
        raise ConfigError("lanes", f"batching needs at least 2 lanes; got {lanes}")
    pairs = parse_pairs(pair, models)
    label, probs = load_eval_problems("arith", dataset, problems + 1)
    if len(probs) < 2:
        raise ConfigError("problems", "need at least 2 problems (one is the warm-up)")
    warm, probs = probs[0], probs[1:]
    cache = BackendCache(policy_opts, prm_opts)
    results: dict[str, dict[str, Any]] = {}
    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(total=len(methods) * repeats * 2, desc="bench eval", unit="pass")
    try:
        for method in methods:
            spec = GridSpec(
                pairs=pairs, problems=probs, dataset=label, methods=[method], budgets=[budget], seeds=[seed]
            )
            items = check_cells(build_cells(spec), policy_opts, prm_opts)
            # Warm-up (not timed): loads the models and pays torch's first-call costs.
            _timed_pass(
                check_cells(
                    build_cells(
                        GridSpec(
                            pairs=pairs,
                            problems=[warm],
                            dataset=label,
                            methods=[method],
                            budgets=[budget],
                            seeds=[seed],
                        )
                    ),
                    policy_opts,
                    prm_opts,
                ),
                cache,
                1,
                torch_threads,
            )
            serial, batched = [], []
            for r in range(repeats):
                order = ("serial", "batched") if r % 2 == 0 else ("batched", "serial")
                for mode in order:
                    wall = _timed_pass(items, cache, 1 if mode == "serial" else lanes, torch_threads, merge_prm)
                    (serial if mode == "serial" else batched).append(wall)
                    if bar is not None:
                        bar.update(1)
            s_rate = 60.0 * len(items) / min(serial)
            b_rate = 60.0 * len(items) / min(batched)
            results[method] = {
                "serial_per_min": s_rate,
                "batched_per_min": b_rate,
                "ratio": b_rate / s_rate,
                "serial_s": serial,
                "batched_s": batched,
                "searches": len(items),
                "lanes": lanes,
                "merge_prm": "on" if merge_prm else "off",
                "budget": budget,
                "pair": pair,
            }
    finally:
        if bar is not None:
            bar.close()
    return results


def format_results(res: dict[str, dict[str, Any]]) -> str:
    lines = []
    for method, r in res.items():
        spread = lambda xs: f"{min(xs):.2f}–{max(xs):.2f} s"  # noqa: E731
        lines.append(
            f"eval {method:7s} N={r['budget']} {r['pair']}: {r['serial_per_min']:6.1f} searches/min serial, "
            f"{r['batched_per_min']:6.1f} with cross-problem batching ({r['lanes']} lanes, PRM merge "
            f"{r['merge_prm']}): ×{r['ratio']:.2f} "
            f"[{r['searches']} searches/pass; serial {spread(r['serial_s'])}, batched {spread(r['batched_s'])}]"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks eval", description=__doc__.split("\n\n")[0])
    p.add_argument("--pair", default="A:prm")
    p.add_argument("--model", action="append", default=[], metavar="NAME=SPEC")
    p.add_argument("--methods", default="rebase,h-uats")
    p.add_argument("--budget", type=int, default=16)
    p.add_argument("--problems", type=int, default=8, help="problems per pass (plus one warm-up)")
    p.add_argument("--lanes", type=int, default=4, help="concurrent searches sharing model calls")
    p.add_argument("--repeats", type=int, default=2)
    p.add_argument("--dataset", help="a .jsonl file instead of the arithmetic world")
    p.add_argument("--torch-threads", type=int)
    p.add_argument(
        "--batch-prm",
        choices=("on", "off"),
        default="on",
        help="merge PRM calls across searches too (policy calls always merge)",
    )
    args = p.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    try:
        res = bench_eval(
            pair=args.pair,
            methods=[m.strip() for m in args.methods.split(",") if m.strip()],
            budget=args.budget,
            problems=args.problems,
            lanes=args.lanes,
            repeats=args.repeats,
            models=parse_models(args.model),
            dataset=args.dataset,
            torch_threads=args.torch_threads,
            merge_prm=args.batch_prm == "on",
        )
    except ValueError as exc:
        if hasattr(exc, "field"):
            print(f"error: {exc}", file=sys.stderr)
            return 2
        raise
    print(format_results(res))
    return 0


if __name__ == "__main__":
    sys.exit(main())
