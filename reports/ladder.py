"""The ablation ladder from REBASE to H-UATS (docs/eval.md, "The ablation ladder"): each rung is a (method, variant)
of the grid, and each step between two rungs changes one thing at REBASE's compute. The table gives every step's
paired accuracy difference on the (problem, seed) cells both rungs ran, with t-intervals over seeds and over
problems, and the compute the upper rung spent as a share of the lower one's."""

from __future__ import annotations

import pandas as pd

from .stats import CELL, paired_summary, uncommitted_share, versioned
from .tables import UNCOMMITTED, half_text, markdown_table, pair_cell, share_text

# rung name -> (method, variant)
RUNGS: dict[str, tuple[str, str]] = {
    "REBASE": ("rebase", "base"),
    "REBASE, MC mean": ("rebase", "rebase_scoring=mc"),
    "H-UATS w/o Uncert.": ("h-uats", "prm_scoring=single"),
    "H-UATS w/o re-evaluation": ("h-uats", "reeval_share=0.0"),
    "H-UATS": ("h-uats", "base"),
}
# (upper rung, lower rung, what the step changes)
STEPS: list[tuple[str, str, str]] = [
    ("REBASE, MC mean", "REBASE", "score: R̄ of K0 passes, paid from the width"),
    ("H-UATS w/o re-evaluation", "REBASE, MC mean", "rounding: largest remainder"),
    ("H-UATS", "H-UATS w/o re-evaluation", "OOD gate + re-evaluation"),
    ("H-UATS w/o Uncert.", "REBASE", "rounding: largest remainder (one pass)"),
    ("H-UATS w/o re-evaluation", "H-UATS w/o Uncert.", "score: R̄ of K0 passes (UATS rounding)"),
    ("H-UATS", "H-UATS w/o Uncert.", "uncertainty: K0 passes, gate, re-evaluation (the paper's ablation)"),
    ("H-UATS", "REBASE", "all of it"),
]
# (upper, lower) of the steps the results page reads: the two paths up from REBASE, each step one change, and the two
# steps that change several things at once
SCORE_FIRST = [step[:2] for step in STEPS[0:3]]  # the MC score, then the rounding, then the gate
ROUNDING_FIRST = [step[:2] for step in (STEPS[3], STEPS[4], STEPS[2])]  # the rounding, then the MC score, then the gate
UNCERTAINTY_ABLATION, WHOLE = STEPS[5][:2], STEPS[6][:2]  # the paper's "w/o Uncert." ablation; REBASE to H-UATS


def ladder_table(df: pd.DataFrame, confidence: float = 0.95) -> pd.DataFrame:
    """Per (dataset, pair, budget) and step whose two rungs both ran: the accuracy of each, the paired difference
    (upper − lower) and the compute spent by the upper rung as a share of the lower one's, on the same cells."""
    rungs = {
        name: df[(df["method"] == m) & (df["variant"] == v)][versioned(df, [*CELL, "correct", "cost"])]
        for name, (m, v) in RUNGS.items()
    }
    rows = []
    for upper, lower, change in STEPS:
        both = rungs[upper].merge(rungs[lower], on=CELL, suffixes=("", "_ref"))
        for (dataset, pair, budget), m in both.groupby(["dataset", "pair", "budget"], sort=False):
            d = (m["correct"].astype(float) - m["correct_ref"].astype(float)).set_axis(
                pd.MultiIndex.from_frame(m[["problem_id", "seed"]])
            )
            rows.append(
                {
                    "dataset": dataset,
                    "pair": pair,
                    "budget": budget,
                    "upper": upper,
                    "lower": lower,
                    "change": change,
                    "acc_upper": float(m["correct"].mean()),
                    "acc_lower": float(m["correct_ref"].mean()),
                    **paired_summary(d, confidence),
                    "spend_ratio": float(m["cost"].sum() / m["cost_ref"].sum()),
                    "uncommitted": uncommitted_share(m),
                }
            )
    out = pd.DataFrame(rows)
    if out.empty:
        return out
    order = {step[:2]: i for i, step in enumerate(STEPS)}
    out["_step"] = [order[(u, lo)] for u, lo in zip(out["upper"], out["lower"])]
    return (
        out.sort_values(["dataset", "pair", "budget", "_step"], kind="stable")
        .drop(columns="_step")
        .reset_index(drop=True)
    )


def ladder_markdown(table: pd.DataFrame, roles: dict[str, str]) -> str:
    if table.empty:
        return ""
    several = table["dataset"].nunique() > 1
    rows = [
        [
            pair_cell(r.pair, r.dataset, roles, several),
            r.budget,
            f"{r.upper} − {r.lower}",
            r.change,
            f"{100 * r.acc_upper:.1f}",
            f"{100 * r.acc_lower:.1f}",
            f"{100 * r.diff:+.1f}",
            half_text(r.half_seeds, r.n_seeds, "seeds"),
            half_text(r.half_problems, r.n_problems, "problems"),
            r.n_cells,
            f"{r.spend_ratio:.2f}",
            share_text(r.uncommitted),
        ]
        for r in table.itertuples()
    ]
    rungs = "; ".join(f"{name} = {m} {v}" for name, (m, v) in RUNGS.items())
    return (
        "The ablation ladder, REBASE to H-UATS: each step changes one thing at REBASE's compute; accuracy (%) of "
        "both rungs and their difference in percentage points on the same (problem, seed) cells, 95% "
        f"t-intervals over seeds and over problems, and the compute the upper rung spent as a share of the "
        f"lower one's, and the share of the row's searches that ran uncommitted code. Rungs: {rungs}\n\n"
        + markdown_table(
            [
                "pair",
                "N",
                "step",
                "what changes",
                "upper",
                "lower",
                "difference",
                "± over seeds",
                "± over problems",
                "cells",
                "spent / lower's",
                UNCOMMITTED,
            ],
            rows,
        )
    )
