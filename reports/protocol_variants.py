"""Variants run under the rerun's protocol (one search at a time, one clean commit), e.g. results/arith-gate: the
literal reading of the paper's OOD gate (`uncertainty=std`, σ > τ) beside the rerun's own base cells of the same
method (the default gate, σ² > τ), and beside REBASE's, on the (problem, seed) cells both recorded.

Such a ledger may still be filling: every row says how many of the base recording's cells it has, and a partial row
is paired on the cells it has."""

from __future__ import annotations

import pandas as pd

from .stats import CELL, paired_summary, shown_half, uncommitted_share, versioned
from .tables import UNCOMMITTED, half_text, markdown_table, pair_name, share_text
from .verdicts import zero_word

REFERENCES = ("base", "rebase")  # the variant against its method's base cells, and against REBASE's


def protocol_table(rerun: pd.DataFrame, variants: pd.DataFrame, confidence: float = 0.95) -> pd.DataFrame:
    """Per (dataset, method, variant, pair, budget) of `variants` and reference (its method's base cells, REBASE's,
    both from `rerun`): cells recorded of the reference's, both accuracies, the paired difference with its interval
    over problems, the compute ratio and the share of searches from uncommitted code."""
    rows = []
    cols = versioned(variants, [*CELL, "correct", "cost"])
    for (dataset, method, variant), g in variants.groupby(["dataset", "method", "variant"], sort=True):
        for ref_name in REFERENCES:
            ref_method = method if ref_name == "base" else "rebase"
            ref = rerun[(rerun["method"] == ref_method) & (rerun["variant"] == "base") & (rerun["dataset"] == dataset)]
            ref = ref[ref["budget"].isin(set(g["budget"]))]  # the N the variant ran
            for (pair, budget), r in ref.groupby(["pair", "budget"], sort=True):
                v = g[(g["pair"] == pair) & (g["budget"] == budget)]
                m = v[cols].merge(r[cols], on=CELL, suffixes=("", "_ref"))
                rec = {
                    "dataset": dataset,
                    "method": method,
                    "variant": variant,
                    "pair": pair,
                    "budget": budget,
                    "reference": f"{ref_method} (base)",
                    "cells": len(m),
                    "of_cells": len(r),
                }
                if len(m):
                    d = (m["correct"].astype(float) - m["correct_ref"].astype(float)).set_axis(
                        pd.MultiIndex.from_frame(m[["problem_id", "seed"]])
                    )
                    s = paired_summary(d, confidence)
                    # a ledger still filling has unequal seeds: every number here is over its cells, as the
                    # accuracies are (paired_summary's mean of per-seed means would weigh a short seed up)
                    rec.update(
                        acc=float(m["correct"].mean()),
                        acc_ref=float(m["correct_ref"].mean()),
                        diff=float(d.mean()),
                        half_problems=shown_half(s["half_problems"], s["n_problems"]),
                        n_problems=s["n_problems"],
                        spend_ratio=float(m["cost"].sum() / m["cost_ref"].sum()),
                        uncommitted=uncommitted_share(m),
                    )
                rows.append(rec)
    return pd.DataFrame(rows)


def protocol_markdown(table: pd.DataFrame, roles: dict[str, str], ledger: str, rerun: str) -> str:
    if table.empty:
        return ""
    rows = []
    for r in table.itertuples():
        done = r.cells > 0
        rows.append(
            [
                pair_name(r.pair, roles),
                r.budget,
                r.method,
                r.variant,
                r.reference,
                f"{r.cells:,} of {r.of_cells:,}",
                f"{100 * r.acc:.1f}" if done else "–",
                f"{100 * r.acc_ref:.1f}" if done else "–",
                f"{100 * r.diff:+.1f}" if done else "–",
                half_text(r.half_problems, r.n_problems, "problems") if done else "–",
                zero_word(r.diff, r.half_problems) if done else "–",
                f"{r.spend_ratio:.2f}" if done else "–",
                share_text(r.uncommitted) if done else "–",
            ]
        )
    return (
        f"Variants recorded under the rerun's protocol (`{ledger}`: one search at a time, one clean commit) against "
        f"the rerun's (`{rerun}`) base cells of the same method and of REBASE, on the (problem, seed) cells both "
        "recorded: the cells recorded of the reference's, the accuracy (%) of each, the difference in percentage "
        "points with its 95% t-interval over problems and its verdict (one recording of the variant: a difference "
        "that clears zero is a lead), the compute spent as a share of the reference's, and the share of the "
        "variant's and reference's searches that ran uncommitted code\n\n"
        + markdown_table(
            [
                "pair",
                "N",
                "method",
                "variant",
                "against",
                "cells",
                "variant",
                "reference",
                "difference",
                "± over problems",
                "verdict",
                "spent / reference's",
                UNCOMMITTED,
            ],
            rows,
        )
    )
