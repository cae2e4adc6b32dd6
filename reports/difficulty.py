"""Accuracy against difficulty: each method's accuracy and Pass@N on every dataset of the report (e.g. the arithmetic
world's test split beside its harder ones), easiest dataset first, at the budgets each dataset ran."""

from __future__ import annotations

import pandas as pd

from .stats import method_key
from .tables import markdown_table, mean_pm, pair_name


def difficulty_order(cur: pd.DataFrame) -> list[str]:
    """The datasets of `cur` (stats.curves rows, base variant), easiest first: by mean accuracy over every method,
    pair and budget they ran."""
    return list(cur.groupby("dataset")["acc"].mean().sort_values(ascending=False, kind="stable").index)


def difficulty_markdown(cur: pd.DataFrame, roles: dict[str, str]) -> str:
    """Per pair, budget and method: accuracy (± over seeds) and Pass@N on each dataset; '' with one dataset."""
    base = cur[cur["variant"] == "base"]
    datasets = difficulty_order(base)
    if len(datasets) < 2:
        return ""
    sizes = {
        d: f"{int(g['n_problems'].max())} problems × {int(g['n_seeds'].max())} seeds"
        for d, g in base.groupby("dataset")
    }
    rows = []
    for (pair, budget), g in base.groupby(["pair", "budget"], sort=True):
        if g["dataset"].nunique() < 2:
            continue  # a budget one dataset alone ran compares nothing
        for method in sorted(g["method"].unique(), key=method_key):
            cells = []
            for d in datasets:
                hit = g[(g["method"] == method) & (g["dataset"] == d)]
                cells.append(
                    "–"
                    if hit.empty
                    else f"{mean_pm(hit['acc'].iloc[0], hit['acc_half'].iloc[0], n=hit['n_seeds'].iloc[0])}"
                    f" ({100 * hit['pass_at_n'].iloc[0]:.1f})"
                )
            rows.append([pair_name(pair, roles), budget, method, *cells])
    return (
        "Accuracy against difficulty: accuracy (%, ± 95% t over seeds) and, in brackets, Pass@N (the oracle) of "
        "each method on each dataset, easiest first (by mean accuracy over every method), on the problems every "
        "method, budget and seed of the dataset finished\n\n"
        + markdown_table(["pair", "N", "method", *[f"{d} ({sizes[d]})" for d in datasets]], rows)
    )
