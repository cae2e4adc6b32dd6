"""The results page's first table: does UATS beat REBASE here, and at what compute (page.py says why, from the
ablation ladder)."""

from __future__ import annotations

import pandas as pd

from ..methods import uncertainty_methods
from .tables import markdown_table, pair_name
from .verdicts import diff_text, masked, zero_word


def answer_table(pdiff: pd.DataFrame, spend: pd.DataFrame, dataset: str) -> pd.DataFrame:
    """Per (pair, N) of `dataset`'s base cells: each UATS method − REBASE (paired, ± over problems) and the compute it
    spent as a share of REBASE's on the same cells."""
    if pdiff.empty:
        return pd.DataFrame()
    rows = []
    d = masked(pdiff[(pdiff["dataset"] == dataset) & (pdiff["variant"] == "base") & (pdiff["y"] == "rebase")])
    s = spend[(spend["dataset"] == dataset) & (spend["variant"] == "base")] if len(spend) else spend
    for (pair, budget), g in d.groupby(["pair", "budget"], sort=True):
        rec = {"pair": pair, "budget": budget}
        for method in uncertainty_methods():
            hit = g[g["x"] == method]
            ratio = s[(s["method"] == method) & (s["pair"] == pair) & (s["budget"] == budget)] if len(s) else s
            rec[method] = (float(hit["diff"].iloc[0]), float(hit["half_problems"].iloc[0])) if len(hit) else None
            rec[f"{method}_spend"] = float(ratio["spend_ratio"].iloc[0]) if len(ratio) else float("nan")
        rows.append(rec)
    return pd.DataFrame(rows)


def answer_markdown(table: pd.DataFrame, roles: dict[str, str]) -> str:
    if table.empty:
        return ""
    rows = []
    for _, r in table.iterrows():
        row = [pair_name(r["pair"], roles), r["budget"]]
        for method in uncertainty_methods():
            row += ["–", "–"] if r[method] is None else [diff_text(*r[method]), zero_word(*r[method])]
        row += [f"{r[f'{m}_spend']:.3f}" for m in uncertainty_methods()]
        rows.append(row)
    return ("H-UATS and A-UATS against REBASE on the same (problem, seed) cells of the test split (the weighted vote, "
            "base settings): accuracy difference in points ± 95% t over problems, its verdict, and the compute each "
            "spent as a share of REBASE's (the ratio of the totals)\n\n"
            + markdown_table(["pair", "N", "H-UATS − REBASE", "verdict", "A-UATS − REBASE", "verdict",
                              "H-UATS spent / REBASE's", "A-UATS spent / REBASE's"], rows))
