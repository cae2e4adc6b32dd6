"""The evaluation harness's runnable parts: run_eval (run), the worker, Ray, the batching bench and the OOD
survival check. They write the run log and the eval_cells ledger (storage.eval_cells); the grid and the
batching proxies they drive are engine (uats_core.eval)."""

from .run import EvalOptions, EvalSummary, run_eval

__all__ = ["EvalOptions", "EvalSummary", "run_eval"]
