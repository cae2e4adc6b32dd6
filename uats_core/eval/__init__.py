"""Evaluation at scale: a grid of (pair, problem, method, budget, seed, variant) cells, each an ordinary
search in the run log, resumable, runnable serially, as shards, or on Ray, with cross-problem batching.

    uats eval --world arith --pairs A:prm,B:prm --methods all --budgets 4,16,64 \\
        --problems 200 --seeds 3 --db runs/eval.db

Engine modules here: grid (cells and keys) and batching (the hub and the Policy/PRM proxies). What touches
the database lives elsewhere: the eval_cells ledger in storage.eval_cells; run_eval, the worker, Ray, the
bench and the OOD survival check in uats.eval; reports in uats.report.
"""

from .grid import BUILTIN_MODELS, BUILTIN_ROLES, Cell, GridSpec, Pair, WorkItem, build_cells, parse_pairs

__all__ = ["BUILTIN_MODELS", "BUILTIN_ROLES", "Cell", "GridSpec", "Pair", "WorkItem", "build_cells", "parse_pairs"]
