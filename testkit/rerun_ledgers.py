"""Tiny hand-made ledgers of a first recording and its rerun (tests/test_report_rerun.py,
tests/test_report_replication.py): pair P:prm on dataset d, written by storage.results_ledger itself."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from reports.aggregation import recomputed_votes
from storage.results_ledger import LEDGER_COLUMNS, ResultsLedger

METHODS = ("best-of-n", "rebase", "h-uats", "a-uats")
# final solutions [answer, correct, copies, score sum, top score]: the weighted vote picks the wrong "7" (1.2 against
# 0.9), the best score the right "5" (0.9 against 0.6), majority "7" (2 copies), distinct "5" (0.9 against 0.6)
SPLIT = json.dumps([["5", True, 1, 0.9, 0.9], ["7", False, 2, 1.2, 0.6]])
RIGHT = json.dumps([["5", True, 3, 2.4, 0.9]])
WRONG = json.dumps([["7", False, 3, 2.4, 0.9]])


def _solutions(problem: int, method: str, seed: int) -> str:
    if method == "h-uats":
        return RIGHT if problem < 3 else SPLIT
    if method == "best-of-n":
        return SPLIT
    return RIGHT if (problem + seed) % 2 else WRONG


def rows(problems: int, rerun: bool) -> pd.DataFrame:
    """Cells of pair P:prm on dataset d, N 4 and 16, 3 seeds; the first recording's answers differ from the rerun's
    for REBASE on seed 0 (two different searches of the same cells)."""
    rows = []
    for problem in range(problems):
        for method in METHODS:
            for budget in (4, 16):
                for seed in range(3):
                    votes = recomputed_votes(_solutions(problem, method, seed))
                    correct, best = votes["weighted"], votes["best"]
                    if not rerun and method == "rebase" and seed == 0:
                        correct = not correct
                    key = f"P:prm|d|p{problem}|{method}|{budget}|{seed}|base"
                    rows.append(
                        {
                            "cell_key": key,
                            "pair": "P:prm",
                            "policy": "pol",
                            "prm": "prm",
                            "dataset": "d",
                            "problem_id": f"p{problem}",
                            "method": method,
                            "budget": budget,
                            "seed": seed,
                            "variant": "base",
                            "answer": "5",
                            "correct": correct,
                            "naive_correct": best,
                            "pass_at_n": True,
                            "n_final": 3,
                            "cost": 100.0 + budget,
                            "iterations": 5,
                            "n_nodes": 20,
                            "wall_s": 0.1,
                            "batched": not rerun,
                            "code_version": "0123456789ab" if rerun else "ba9876543210",
                            "solutions": _solutions(problem, method, seed),
                        }
                    )
    return pd.DataFrame(rows)


def ledger(folder: Path, rows: pd.DataFrame, finals: bool) -> Path:
    traces = None
    if finals:
        traces = rows[["cell_key", "solutions"]].assign(
            n_candidates=3, n_distinct=2, steps=1, candidates_per_step=3.0, distinct_per_step=2.0
        )
    ResultsLedger(folder).append(rows[LEDGER_COLUMNS], traces=traces)
    return folder
