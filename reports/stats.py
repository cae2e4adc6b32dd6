"""The report's statistics: a Student-t (no scipy needed), intervals, and the aggregations every table and
figure reads. No SQL here: the rows come from storage.eval_results, one per finished evaluation cell.

Intervals: per seed, the accuracy over problems; then the mean over seeds ± t(0.975, s−1)·sd/√s, the
Student-t interval with s = number of seeds (problems are shared by all seeds, so seeds are the
replicates). Tables and figures show an interval only from MIN_REPLICATES values up (shown_half); the
half-width itself is kept in the tables' frames. Comparisons use, per (dataset, pair,
variant), only the problems for which every (method, budget, seed) cell of that group has finished, so an
unfinished grid never compares methods on different problems.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import pandas as pd

from uats_core.methods import method_names, uncertainty_methods

# Fewer values give an interval that says nothing: from 2 seeds the 95% t-interval is 12.7 standard errors wide
# on each side (t(0.975, 1)), e.g. "37.5 ± 476.5" points of accuracy. Such a cell shows its mean and why no ±.
MIN_REPLICATES = 3
# Beam search answers from the N best-scored of the beams that finished and DVTS from each subtree's last step,
# so both can end solutions they do not vote on; every other method votes on each one it ends
# (tests/test_final_candidates.py).
UNVOTED_ENDS = ("beam", "dvts")


def shown_half(half: Any, n: Any) -> Any:
    """The half-width where it means something (n >= MIN_REPLICATES values behind it), else nan. Scalars or
    aligned pandas Series."""
    if isinstance(half, pd.Series):
        return half.where(pd.Series(n, index=half.index) >= MIN_REPLICATES)
    return half if n is not None and n >= MIN_REPLICATES else float("nan")


def method_key(m: str) -> int:
    """Sort key: the paper's method order, unknown methods last."""
    names = method_names()
    return names.index(m) if m in names else len(names)


def sort_by_method(df: pd.DataFrame, columns: Sequence[str]) -> pd.DataFrame:
    """Rows sorted by `columns`, where "method" sorts in the paper's order (stable; index reset)."""
    keys = [c if c != "method" else "_method_order" for c in columns]
    out = df.assign(_method_order=df["method"].map(method_key))
    return out.sort_values(keys, kind="stable").drop(columns="_method_order").reset_index(drop=True)


def _betacf(a: float, b: float, x: float) -> float:
    """Continued fraction of the regularised incomplete beta function (modified Lentz)."""
    tiny, qab, qap, qam = 1e-300, a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 300):
        m2 = 2 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        h *= d * c
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        delta = d * c
        h *= delta
        if abs(delta - 1.0) < 1e-14:
            break
    return h


def _betainc(a: float, b: float, x: float) -> float:
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    lbeta = math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b)
    front = math.exp(lbeta + a * math.log(x) + b * math.log1p(-x))
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _betacf(a, b, x) / a
    return 1.0 - front * _betacf(b, a, 1.0 - x) / b


def t_cdf(t: float, df: float) -> float:
    tail = 0.5 * _betainc(df / 2.0, 0.5, df / (df + t * t))
    return 1.0 - tail if t >= 0 else tail


@functools.cache  # a report asks for the same few (q, df) thousands of times
def t_quantile(q: float, df: float) -> float:
    """Student-t quantile by bisection on the exact CDF (no scipy needed): t_quantile(0.975, 2) = 4.303."""
    if not 0.0 < q < 1.0 or df <= 0:
        raise ValueError(f"need 0 < q < 1 and df > 0; got q={q}, df={df}")
    if q < 0.5:
        return -t_quantile(1.0 - q, df)
    lo, hi = 0.0, 1.0
    while t_cdf(hi, df) < q:
        hi *= 2.0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if t_cdf(mid, df) < q:
            lo = mid
        else:
            hi = mid
        if hi - lo < 1e-12:
            break
    return 0.5 * (lo + hi)


def t_interval(values: Sequence[float], confidence: float = 0.95) -> tuple[float, float]:
    """(mean, half-width) of the Student-t interval; half-width nan with fewer than 2 values."""
    x = np.asarray([v for v in values if v is not None and not math.isnan(v)], dtype=np.float64)
    if x.size == 0:
        return float("nan"), float("nan")
    if x.size < 2:
        return float(x.mean()), float("nan")
    half = t_quantile(0.5 + confidence / 2.0, x.size - 1) * float(x.std(ddof=1)) / math.sqrt(x.size)
    return float(x.mean()), half


def wilson(k: int, n: int, z: float = 1.959963984540054) -> tuple[float, float]:
    if n == 0:
        return float("nan"), float("nan")
    p = k / n
    den = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / den
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / den
    return centre - half, centre + half


def complete_problems(df: pd.DataFrame, groups: list[str], axes: list[str]) -> pd.DataFrame:
    """Per group, keep the problems that have every combination of `axes` seen in that group (rows grouped in the
    order their group first appears, each group's rows in their order)."""
    if df.empty:
        return df
    combos = df[groups + axes].drop_duplicates().groupby(groups).size().rename("_wanted")
    per_problem = df[groups + ["problem_id"] + axes].drop_duplicates().groupby(groups + ["problem_id"]).size()
    have = per_problem.rename("_have").reset_index().merge(combos.reset_index(), on=groups)
    full = have.loc[have["_have"] == have["_wanted"], groups + ["problem_id"]]
    keep = pd.MultiIndex.from_frame(df[groups + ["problem_id"]]).isin(pd.MultiIndex.from_frame(full))
    order = df.groupby(groups, sort=False).ngroup()
    return (
        df[keep]
        .assign(_group=order[keep])
        .sort_values("_group", kind="stable")
        .drop(columns="_group")
        .reset_index(drop=True)
    )


def restrict_common(df: pd.DataFrame) -> pd.DataFrame:
    """Per (dataset, pair, variant): keep the problems that finished every (method, budget, seed) of it."""
    return complete_problems(df, ["dataset", "pair", "variant"], ["method", "budget", "seed"])


def same_problems_across_variants(df: pd.DataFrame) -> pd.DataFrame:
    """UATS rows only; per (dataset, pair, method), the problems finished in every variant of it, so an
    ablation compares like with like (the base grid usually covers more problems than an ablation run)."""
    return complete_problems(df[df["method"].isin(uncertainty_methods())], ["dataset", "pair", "method"], ["variant"])


def pass_lower(df: pd.DataFrame) -> pd.Series:
    """Per row, Pass@N over the final candidates where the record gives it, else its lower bound. A row recorded
    before runs marked their final candidates (finals_marked false) counted every ended solution; for beam search
    with more than N of them, or DVTS, that is an upper bound, and some final candidate is right at least when the
    vote's or the best score's answer is (both come from the final candidates)."""
    marked = df["finals_marked"].astype(bool) if "finals_marked" in df else pd.Series(False, index=df.index)
    beam_all_voted = (df["method"] == "beam") & (df["n_final"] <= df["budget"])  # it keeps the N best: all of them
    exact = marked | ~df["method"].isin(UNVOTED_ENDS) | beam_all_voted
    return df["pass_at_n"].where(exact, df["pass_at_n"] & (df["correct"] | df["naive_correct"]))


def curves(df: pd.DataFrame, confidence: float = 0.95) -> pd.DataFrame:
    """Per (dataset, variant, pair, method, budget): accuracy, naive accuracy, Pass@N (pass_low: its lower bound,
    pass_lower) and mean cost, each as mean over seeds of the per-seed mean over problems, with t-interval
    half-widths; pass_unsure: the cells whose Pass@N is only bounded."""
    rows = []
    keys = ["dataset", "variant", "pair", "method", "budget"]
    df = df.assign(pass_low=pass_lower(df))
    for key, g in df.groupby(keys, sort=False):
        per_seed = g.groupby("seed").agg(
            acc=("correct", "mean"),
            naive=("naive_correct", "mean"),
            pass_at_n=("pass_at_n", "mean"),
            pass_low=("pass_low", "mean"),
            cost=("cost", "mean"),
        )
        row = dict(zip(keys, key))
        row["pass_unsure"] = int((g["pass_at_n"] != g["pass_low"]).sum())
        for col in ("acc", "naive", "pass_at_n", "pass_low", "cost"):
            m, h = t_interval(per_seed[col].tolist(), confidence)
            row[col], row[col + "_half"] = m, h
        row["n_seeds"] = int(len(per_seed))
        row["n_problems"] = int(g["problem_id"].nunique())
        row["n_runs"] = int(len(g))
        rows.append(row)
    out = pd.DataFrame(rows)
    if out.empty:
        return out
    return sort_by_method(out, ["dataset", "variant", "pair", "method", "budget"])


def base_on_variant_cells(df: pd.DataFrame, confidence: float = 0.95) -> pd.DataFrame:
    """For each UATS variant run on fewer (budget, seed) cells than its method's base, the base's mean over budgets
    on exactly the variant's (problem, budget, seed) cells (mean_over_budgets rows, labelled with the variant), so
    a narrower ablation is set beside its base like for like."""
    rows = []
    uats = df[df["method"].isin(uncertainty_methods())]
    for _, g in uats.groupby(["dataset", "pair", "method"], sort=False):
        base = g[g["variant"] == "base"]
        base_axes = set(zip(base["budget"], base["seed"]))
        for variant, v in g[g["variant"] != "base"].groupby("variant", sort=False):
            if set(zip(v["budget"], v["seed"])) >= base_axes:
                continue
            cells = set(zip(v["problem_id"], v["budget"], v["seed"]))
            same = base[[c in cells for c in zip(base["problem_id"], base["budget"], base["seed"])]]
            if len(same):
                rows.append(mean_over_budgets(same, "correct", confidence).assign(variant=variant))
    return pd.concat(rows, ignore_index=True) if rows else pd.DataFrame()


def mean_over_budgets(df: pd.DataFrame, metric: str = "correct", confidence: float = 0.95) -> pd.DataFrame:
    """Table 4's number: per seed, the mean over budgets of the accuracy over problems; then mean ± t over seeds."""
    rows = []
    keys = ["dataset", "variant", "pair", "method"]
    for key, g in df.groupby(keys, sort=False):
        per_seed_budget = g.groupby(["seed", "budget"])[metric].mean()
        per_seed = per_seed_budget.groupby(level="seed").mean()
        m, h = t_interval(per_seed.tolist(), confidence)
        rows.append(
            {
                **dict(zip(keys, key)),
                "value": m,
                "half": h,
                "n_seeds": len(per_seed),
                "budgets": ",".join(str(b) for b in sorted(g["budget"].unique())),
                "n_problems": int(g["problem_id"].nunique()),
            }
        )
    return pd.DataFrame(rows)


def comparisons(methods: Iterable[str]) -> list[tuple[str, str]]:
    """The UATS methods against REBASE (the allocation they extend), and A-UATS against H-UATS."""
    present = set(methods)
    out = [(m, "rebase") for m in uncertainty_methods() if m in present and "rebase" in present]
    if {"a-uats", "h-uats"} <= present:
        out.append(("a-uats", "h-uats"))
    return out


def paired_differences(df: pd.DataFrame, confidence: float = 0.95) -> pd.DataFrame:
    """Accuracy of x minus y on the same (problem, seed) cells, per (dataset, variant, pair, budget): the mean
    with a t-interval over seeds (of the per-seed mean difference, as the other tables) and one over
    problems (of the per-problem mean over seeds; paired, so problem difficulty cancels)."""
    rows = []
    keys = ["dataset", "variant", "pair", "budget"]
    for key, g in df.groupby(keys, sort=False):
        wide = g.pivot_table(index=["problem_id", "seed"], columns="method", values="correct", aggfunc="first")
        for x, y in comparisons(wide.columns):
            d = (wide[x].astype(float) - wide[y].astype(float)).dropna()
            if not d.empty:
                rows.append({**dict(zip(keys, key)), "x": x, "y": y, **paired_summary(d, confidence)})
    out = pd.DataFrame(rows)
    return out.sort_values(keys, kind="stable").reset_index(drop=True) if len(out) else out


CELL = ["dataset", "pair", "budget", "problem_id", "seed"]  # one search of a method, across its variants
DIRTY = "+dirty"  # a code version run from a checkout with uncommitted changes, which no commit reproduces


def dirty(versions: pd.Series) -> pd.Series:
    """Which of the code versions ran uncommitted code."""
    return versions.fillna("").astype(str).str.endswith(DIRTY)


def uncommitted_share(merged: pd.DataFrame) -> float:
    """The share of a paired row's searches (both arms: code_version and code_version_ref) that ran uncommitted
    code; nan where the rows name no code version (a run log)."""
    if "code_version" not in merged or "code_version_ref" not in merged or merged.empty:
        return math.nan
    return float((dirty(merged["code_version"]).sum() + dirty(merged["code_version_ref"]).sum()) / (2 * len(merged)))


def versioned(df: pd.DataFrame, columns: list[str]) -> list[str]:
    """`columns` with code_version where the rows carry it."""
    return [*columns, "code_version"] if "code_version" in df else columns


def paired_summary(d: pd.Series, confidence: float) -> dict[str, Any]:
    """A paired difference indexed by (problem_id, seed): its mean with t-intervals over seeds and over problems."""
    per_seed, per_problem = d.groupby(level="seed").mean(), d.groupby(level="problem_id").mean()
    mean, seed_half = t_interval(per_seed.tolist(), confidence)
    _, problem_half = t_interval(per_problem.tolist(), confidence)
    return {
        "diff": mean,
        "half_seeds": seed_half,
        "half_problems": problem_half,
        "n_cells": int(len(d)),
        "n_seeds": int(len(per_seed)),
        "n_problems": int(len(per_problem)),
    }


def variant_differences(df: pd.DataFrame, confidence: float = 0.95) -> pd.DataFrame:
    """Each UATS variant against the same method's base variant, against REBASE and (an A-UATS variant: a controller
    is worth shipping only if it beats the knobs it starts from) against H-UATS, per (dataset, pair, budget), on
    the (problem, seed) cells both ran: the paired accuracy difference and the compute spent as a share of the
    reference's."""
    base = df[df["variant"] == "base"]
    rows = []
    variants = df[df["method"].isin(uncertainty_methods()) & (df["variant"] != "base")]
    for (dataset, method, variant), g in variants.groupby(["dataset", "method", "variant"], sort=False):
        for ref_name in (method, *(("h-uats",) if method == "a-uats" else ()), "rebase"):
            cols = versioned(df, [*CELL, "correct", "cost"])
            ref = base[base["method"] == ref_name][cols]
            both = g[cols].merge(ref, on=CELL, suffixes=("", "_ref"))
            for (pair, budget), m in both.groupby(["pair", "budget"], sort=False):
                d = (m["correct"].astype(float) - m["correct_ref"].astype(float)).set_axis(
                    pd.MultiIndex.from_frame(m[["problem_id", "seed"]])
                )
                rows.append(
                    {
                        "dataset": dataset,
                        "method": method,
                        "variant": variant,
                        "pair": pair,
                        "budget": budget,
                        "reference": f"{ref_name} (base)",
                        **paired_summary(d, confidence),
                        "spend_ratio": float(m["cost"].sum() / m["cost_ref"].sum()),
                        "uncommitted": uncommitted_share(m),
                    }
                )
    out = pd.DataFrame(rows)
    return (
        out.sort_values(["dataset", "method", "variant", "pair", "budget"], kind="stable").reset_index(drop=True)
        if len(out)
        else out
    )


def spend_against_rebase(df: pd.DataFrame, max_iterations: int) -> pd.DataFrame:
    """Compute spent by each UATS method and variant against REBASE's on the same (problem, seed) cells, per
    (dataset, pair, budget): the ratio of the totals, the median ratio per search, and the ratio of the totals
    without the cells where either search ran to the iteration cap (a chain that never finishes: REBASE keeps
    paying for it to the cap, while UATS may have finished every chain long before)."""
    cols = versioned(df, [*CELL, "cost", "iterations"])
    ref = df[(df["method"] == "rebase") & (df["variant"] == "base")][cols]
    rows = []
    uats = df[df["method"].isin(uncertainty_methods())]
    for (dataset, method, variant), g in uats.groupby(["dataset", "method", "variant"], sort=False):
        both = g[cols].merge(ref, on=CELL, suffixes=("", "_ref"))
        for (pair, budget), m in both.groupby(["pair", "budget"], sort=False):
            capped = (m["iterations"] >= max_iterations) | (m["iterations_ref"] >= max_iterations)
            rest = m[~capped]
            rows.append(
                {
                    "dataset": dataset,
                    "method": method,
                    "variant": variant,
                    "pair": pair,
                    "budget": budget,
                    "cells": int(len(m)),
                    "spend_ratio": float(m["cost"].sum() / m["cost_ref"].sum()),
                    "median_ratio": float((m["cost"] / m["cost_ref"]).median()),
                    "capped": int(capped.sum()),
                    "spend_ratio_uncapped": float(rest["cost"].sum() / rest["cost_ref"].sum())
                    if len(rest)
                    else math.nan,
                    "uncommitted": uncommitted_share(m),
                }
            )
    out = pd.DataFrame(rows)
    if out.empty:
        return out
    return sort_by_method(out, ["dataset", "method", "variant", "pair", "budget"])
