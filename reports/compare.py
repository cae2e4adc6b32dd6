"""Comparisons the results page states in words, each a table so its numbers can be read beside the verdict:
methods paired on the mean over N (who is first, and whether H-UATS is above every baseline), accuracy from the
smallest to the largest N (whether it grows), and the order of the methods on two datasets at the budgets both ran.

Every difference is paired on the same (problem, seed) cells, with t-intervals over seeds and over problems
(stats.paired_summary); the verdicts come from verdicts.py."""

from __future__ import annotations

from typing import Any

import pandas as pd

from .stats import method_key, paired_summary, sort_by_method
from .tables import half_text, markdown_table, mean_pm, pair_name
from .verdicts import masked, order, trend, zero_word

CELL_AXES = ["problem_id", "seed"]


def paired_mean_over_n(
    rows: pd.DataFrame, x: str, y: str, metric: str = "correct", confidence: float = 0.95
) -> dict[str, Any] | None:
    """x − y on `metric` over the rows of one (dataset, variant, pair): per (problem, seed) the mean over budgets of
    the paired difference, then stats.paired_summary; None where either method is missing."""
    wide = rows.pivot_table(index=[*CELL_AXES, "budget"], columns="method", values=metric, aggfunc="first")
    if x not in wide.columns or y not in wide.columns:
        return None
    d = (wide[x].astype(float) - wide[y].astype(float)).dropna()
    if d.empty:
        return None
    return paired_summary(d.groupby(level=CELL_AXES).mean(), confidence)


def method_means(rows: pd.DataFrame, metric: str = "correct") -> dict[str, float]:
    """Each method's mean over budgets (per seed, then over seeds: Table 4's number; equal weights make it the plain
    mean over the complete cells)."""
    per = rows.groupby(["method", "seed", "budget"])[metric].mean().groupby(level=["method", "seed"]).mean()
    return per.groupby(level="method").mean().to_dict()


def contrasts(rows: pd.DataFrame, metric: str = "correct", confidence: float = 0.95) -> list[dict[str, Any]]:
    """For one (dataset, variant, pair): the first method by mean over N against every other, every method against
    Best-of-N (search against sampling) and A-UATS against H-UATS, each x − y paired on the mean over N (a pair
    already there the other way round is not repeated)."""
    means = method_means(rows, metric)
    first, methods = order(means)[0], sorted(means, key=method_key)
    wanted = [(first, m) for m in methods if m != first]
    wanted += [(m, "best-of-n") for m in methods if m != "best-of-n" and "best-of-n" in means]
    wanted += [("a-uats", "h-uats")] if {"a-uats", "h-uats"} <= set(means) else []
    out, seen = [], set()
    for x, y in wanted:
        if (x, y) in seen or (y, x) in seen:
            continue
        seen.add((x, y))
        if (s := paired_mean_over_n(rows, x, y, metric, confidence)) is not None:
            out.append({"x": x, "y": y, "first": x == first, **s})
    return out


def contrast_table(df: pd.DataFrame, confidence: float = 0.95) -> pd.DataFrame:
    """contrasts() for every (dataset, pair) of the base variant."""
    rows = []
    for (dataset, pair), g in df[df["variant"] == "base"].groupby(["dataset", "pair"], sort=False):
        rows += [{"dataset": dataset, "pair": pair, **c} for c in contrasts(g, confidence=confidence)]
    return pd.DataFrame(rows)


def contrast_markdown(table: pd.DataFrame, roles: dict[str, str]) -> dict[str, str]:
    out: dict[str, str] = {}
    if table.empty:
        return out
    for dataset, g in masked(table).groupby("dataset", sort=False):
        rows = [
            [
                pair_name(r.pair, roles),
                f"{r.x} − {r.y}",
                f"{100 * r.diff:+.1f}",
                half_text(r.half_seeds, r.n_seeds, "seeds"),
                half_text(r.half_problems, r.n_problems, "problems"),
                zero_word(r.diff, r.half_problems),
            ]
            for r in g.itertuples()
        ]
        out[dataset] = (
            "Methods paired on the mean accuracy over N (the weighted vote, base settings): the first method "
            "by mean against every other, every method against Best-of-N and A-UATS against H-UATS; difference "
            "in percentage points on the same (problem, seed) cells, 95% t-intervals over seeds and over "
            "problems\n\n"
            + markdown_table(["pair", "difference", "mean over N", "± over seeds", "± over problems", "verdict"], rows)
        )
    return out


def growth_table(df: pd.DataFrame, confidence: float = 0.95) -> pd.DataFrame:
    """Per (dataset, pair, method), base variant: accuracy at the smallest and the largest N and the paired difference
    largest − smallest on the same (problem, seed) cells."""
    rows = []
    for (dataset, pair, method), g in df[df["variant"] == "base"].groupby(["dataset", "pair", "method"], sort=False):
        lo, hi = int(g["budget"].min()), int(g["budget"].max())
        if lo == hi:
            continue
        wide = g.pivot_table(index=CELL_AXES, columns="budget", values="correct", aggfunc="first").astype(float)
        d = (wide[hi] - wide[lo]).dropna()
        rows.append(
            {
                "dataset": dataset,
                "pair": pair,
                "method": method,
                "lo": lo,
                "hi": hi,
                "acc_lo": float(wide[lo].mean()),
                "acc_hi": float(wide[hi].mean()),
                **paired_summary(d, confidence),
            }
        )
    return sort_by_method(pd.DataFrame(rows), ["dataset", "pair", "method"]) if rows else pd.DataFrame()


def growth_markdown(table: pd.DataFrame, roles: dict[str, str]) -> dict[str, str]:
    out: dict[str, str] = {}
    if table.empty:
        return out
    for dataset, g in masked(table).groupby("dataset", sort=False):
        rows = [
            [
                pair_name(r.pair, roles),
                r.method,
                f"{r.lo} → {r.hi}",
                f"{100 * r.acc_lo:.1f}",
                f"{100 * r.acc_hi:.1f}",
                f"{100 * r.diff:+.1f}",
                half_text(r.half_problems, r.n_problems, "problems"),
                trend(r.diff, r.half_problems),
            ]
            for r in g.itertuples()
        ]
        out[dataset] = (
            "Accuracy (%) from the smallest to the largest N (the weighted vote, base settings) and the "
            "paired difference in percentage points on the same (problem, seed) cells, 95% t-interval over "
            "problems\n\n"
            + markdown_table(
                [
                    "pair",
                    "method",
                    "N",
                    "accuracy at the smallest N",
                    "at the largest N",
                    "difference",
                    "± over problems",
                    "verdict",
                ],
                rows,
            )
        )
    return out


def order_table(df: pd.DataFrame, datasets: list[str]) -> pd.DataFrame:
    """The order of the methods on each dataset by mean accuracy over the budgets and methods every dataset ran
    (base variant): one row per (pair, method), with each dataset's mean and place."""
    base = df[(df["variant"] == "base") & df["dataset"].isin(datasets)]
    budgets = set.intersection(*[set(base.loc[base["dataset"] == d, "budget"]) for d in datasets])
    methods = set.intersection(*[set(base.loc[base["dataset"] == d, "method"]) for d in datasets])
    base = base[base["budget"].isin(budgets) & base["method"].isin(methods)]
    rows: dict[tuple[str, str], dict[str, Any]] = {}
    for (dataset, pair), g in base.groupby(["dataset", "pair"], sort=True):
        means = method_means(g)
        for place, method in enumerate(order(means), start=1):
            rec = rows.setdefault(
                (pair, method), {"pair": pair, "method": method, "budgets": ",".join(str(b) for b in sorted(budgets))}
            )
            rec[f"{dataset}_mean"], rec[f"{dataset}_place"] = means[method], place
    out = pd.DataFrame(list(rows.values()))
    return sort_by_method(out, ["pair", "method"]) if len(out) else out


PLACES = ["first", "second", "third", "fourth", "fifth", "sixth", "seventh"]


def order_markdown(table: pd.DataFrame, datasets: list[str], roles: dict[str, str]) -> str:
    if table.empty:
        return ""
    rows = [
        [
            pair_name(r["pair"], roles),
            r["method"],
            *[f"{mean_pm(r[f'{d}_mean'], float('nan'))} ({PLACES[int(r[f'{d}_place']) - 1]})" for d in datasets],
        ]
        for _, r in table.iterrows()
    ]
    return (
        f"The order of the methods by mean accuracy (%) over N ∈ {{{table['budgets'].iloc[0]}}}, the budgets and "
        "methods every dataset ran (the weighted vote, base settings; point estimates)\n\n"
        + markdown_table(["pair", "method", *datasets], rows)
    )


def places(table: pd.DataFrame, dataset: str, pair: str) -> list[str]:
    """The methods of `pair` in their order on `dataset` (order_table)."""
    return list(table[table["pair"] == pair].sort_values(f"{dataset}_place")["method"])
