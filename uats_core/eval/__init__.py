"""Evaluation at scale: a grid of (pair, problem, method, budget, seed, variant) cells, each an ordinary
search in the run log, resumable, runnable serially, as shards, or on Ray, with cross-problem batching.

    python -m uats_core.eval --world arith --pairs A:prm,B:prm --methods all --budgets 4,16,64 \\
        --problems 200 --seeds 3 --db runs/eval.db

Modules: grid (cells and keys), cells (the eval_cells table: resumption, orphans), worker (one model load,
serial or batched cells), batching (the hub and the Policy/PRM proxies), ray_runner, run (run_eval),
bench (searches per minute with and without batching). Reports: uats_core.report.
"""

from .grid import BUILTIN_MODELS, BUILTIN_ROLES, Cell, GridSpec, Pair, WorkItem, build_cells, parse_pairs
from .run import EvalOptions, EvalSummary, run_eval

__all__ = ["BUILTIN_MODELS", "BUILTIN_ROLES", "Cell", "GridSpec", "Pair", "WorkItem", "build_cells", "parse_pairs",
           "EvalOptions", "EvalSummary", "run_eval"]
