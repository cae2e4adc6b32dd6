"""Answer aggregation: how each method's accuracy moves with the rule that turns its final candidates into one
answer (config.AGGREGATIONS: the weighted vote, the best final score, plain majority, the weighted vote counting
each distinct final solution once).

Every cell records the weighted vote's correctness and the best final score's (`correct`, `naive_correct`), so
those two are shown over every cell. The other two are recomputed from the cell's final solutions
(duplicates.final_solutions; the ledger's candidates.csv.gz), which only cells recorded since that file was kept
have; the recomputed weighted vote is checked against the recorded one on the same cells."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pandas as pd

from uats_core.config import AGGREGATIONS
from uats_core.grading import tally

from .stats import sort_by_method, t_interval
from .tables import markdown_table, mean_pm, pair_cell

KEYS = ["dataset", "pair", "method", "variant", "budget"]


def recomputed_votes(solutions_json: str) -> dict[str, bool]:
    """Correctness of the answer each rule picks from one cell's final solutions. Answers are grouped as the search
    grouped them: every answer graded right is equivalent to the gold and so to each other; the others by their
    text (wrong answers that differ in text but not in value are rare, and can only move a tie)."""
    solutions = json.loads(solutions_json) if solutions_json else []
    if not solutions:
        return {rule: False for rule in AGGREGATIONS}  # no answer is a wrong answer
    labels: dict[Any, int] = {}
    groups = [
        labels.setdefault(True if correct else ("answer", answer), len(labels)) for answer, correct, *_ in solutions
    ]
    right = {g for g, (_, correct, *_) in zip(groups, solutions) if correct}
    rows = [(g, int(copies), float(total), float(top)) for g, (_, _, copies, total, top) in zip(groups, solutions)]
    return {rule: tally(rows, rule) in right for rule in AGGREGATIONS}


def vote_rows(results: pd.DataFrame, candidates: pd.DataFrame | None) -> pd.DataFrame:
    """One row per cell: the recorded weighted vote and best score (`weighted`, `best`), and, where the cell's
    final solutions are known, every rule recomputed (`<rule>_re`, NaN elsewhere)."""
    out = results[KEYS + ["cell_key", "problem_id", "seed"]].copy()
    out["weighted"], out["best"] = results["correct"].astype(float), results["naive_correct"].astype(float)
    for rule in AGGREGATIONS:
        out[f"{rule}_re"] = np.nan
    if candidates is None or candidates.empty:
        return out
    known = dict(zip(candidates["cell_key"], candidates["solutions"]))
    mask = out["cell_key"].isin(known)
    votes = pd.DataFrame([recomputed_votes(known[k]) for k in out.loc[mask, "cell_key"]], index=out.index[mask])
    for rule in AGGREGATIONS:
        out.loc[mask, f"{rule}_re"] = votes[rule].astype(float)
    return out


def aggregation_table(results: pd.DataFrame, candidates: pd.DataFrame | None, confidence: float = 0.95) -> pd.DataFrame:
    """Per (dataset, pair, method, variant, budget): accuracy under the recorded weighted vote and best score over
    every cell, and under all four rules over the cells with final solutions, each the mean over seeds of the
    per-seed accuracy ± the t half-width; `agree` is the share of those cells where the recomputed weighted vote is
    right exactly when the recorded one is."""
    return aggregation_from_votes(vote_rows(results, candidates), confidence)


def aggregation_from_votes(rows: pd.DataFrame, confidence: float = 0.95) -> pd.DataFrame:
    """aggregation_table from vote_rows' rows (one per cell), for a caller that has them already."""
    out = []
    for key, g in rows.groupby(KEYS, sort=False):
        rec: dict[str, Any] = dict(zip(KEYS, key))
        rec["cells"], rec["n_seeds"] = len(g), int(g["seed"].nunique())
        for col in ("weighted", "best"):
            rec[col], rec[f"{col}_half"] = t_interval(g.groupby("seed")[col].mean(), confidence)
        known = g[g["weighted_re"].notna()]
        rec["cells_re"], rec["n_seeds_re"] = len(known), int(known["seed"].nunique())
        for rule in AGGREGATIONS:
            col = f"{rule}_re"
            rec[col], rec[f"{col}_half"] = (
                t_interval(known.groupby("seed")[col].mean(), confidence) if len(known) else (np.nan, np.nan)
            )
        rec["agree"] = float((known["weighted_re"] == known["weighted"]).mean()) if len(known) else np.nan
        out.append(rec)
    return (
        sort_by_method(pd.DataFrame(out), ["dataset", "pair", "method", "variant", "budget"]) if out else pd.DataFrame()
    )


def aggregation_markdown(table: pd.DataFrame, roles: dict[str, str]) -> str:
    if table.empty:
        return ""
    recomputed = bool(table["cells_re"].sum())  # without final solutions in the ledger, only the recorded two
    rows, several = [], table["dataset"].nunique() > 1
    for r in table.itertuples():
        rec = r._asdict()
        # an interval only from MIN_REPLICATES seeds up (mean_pm says why not below that)
        row = [
            pair_cell(r.pair, r.dataset, roles, several),
            r.method,
            r.variant,
            r.budget,
            r.cells,
            mean_pm(r.weighted, r.weighted_half, n=r.n_seeds),
            mean_pm(r.best, r.best_half, n=r.n_seeds),
        ]
        if recomputed:
            agree = "–" if np.isnan(rec["agree"]) else f"{100 * rec['agree']:.1f}%"
            row += [
                r.cells_re,
                *[mean_pm(rec[f"{rule}_re"], rec[f"{rule}_re_half"], n=r.n_seeds_re or None) for rule in AGGREGATIONS],
                agree,
            ]
        rows.append(row)
    header = ["pair", "method", "variant", "N", "cells", "weighted", "best score"]
    text = "Accuracy (%) by answer aggregation: the recorded weighted vote and best final score over every cell"
    if recomputed:
        header += ["cells with finals", "weighted", "best score", "majority", "distinct", "agrees"]
        text += (
            "; the four rules recomputed from the final solutions over the cells that keep them (candidates.csv.gz), "
            "with the share of those cells where the recomputed weighted vote agrees with the recorded one"
        )
    else:
        text += " (no cell in this ledger keeps its final solutions, so majority and the distinct vote are not shown)"
    return text + "; ± = 95% t over seeds\n\n" + markdown_table(header, rows)
