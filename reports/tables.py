"""The report's Markdown tables (ready for docs/results.md): Table 4 layout, per-budget tables, UATS beside
REBASE, paired differences, ablations and the Figure 2 PRM summary."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any

import pandas as pd

from uats_core.methods import uncertainty_methods

from .stats import MIN_REPLICATES, method_key, shown_half


def _too_few(n: int, unit: str) -> str:
    """Why a cell has no ±: the count behind it (e.g. 'no ±: 2 seeds')."""
    return f"no ±: {int(n)} {unit if int(n) != 1 else unit.rstrip('s')}"


def mean_pm(
    m: float, h: float, scale: float = 100.0, digits: int = 1, n: int | None = None, unit: str = "seeds"
) -> str:
    """'m ± h', scaled (100: a share as %) and rounded; '–' without a mean. `n`: the values behind the interval;
    under MIN_REPLICATES the cell shows the mean and why there is no ± (every table formats intervals here)."""
    if m is None or (isinstance(m, float) and math.isnan(m)):
        return "–"
    text = f"{scale * m:.{digits}f}"
    if n is not None and n < MIN_REPLICATES:
        return f"{text} ({_too_few(n, unit)})"
    h = h if n is None else shown_half(h, n)
    return text + ("" if h is None or math.isnan(h) else f" ± {scale * h:.{digits}f}")


def span(values: pd.Series) -> str:
    lo, hi = int(values.min()), int(values.max())
    return str(lo) if lo == hi else f"{lo}–{hi}"


UNCOMMITTED = "uncommitted code"  # the column of a paired table: the share of its row's searches that ran it


def share_text(share: float) -> str:
    """A share of searches that ran uncommitted code, as the paired tables print it ('–': no code versions)."""
    return "–" if math.isnan(share) else f"{100 * share:.1f}%"


def markdown_table(header: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    lines = ["| " + " | ".join(map(str, header)) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(map(str, r)) + " |" for r in rows]
    return "\n".join(lines)


def pair_name(pair: str, roles: dict[str, str]) -> str:
    return f"{pair} ({roles[pair]})" if pair in roles else pair


def pair_cell(pair: str, dataset: str, roles: dict[str, str], several_datasets: bool) -> str:
    """A row's pair, with its dataset where a table mixes datasets (a report over several ledgers)."""
    return pair_name(pair, roles) + (f", {dataset}" if several_datasets else "")


def table4_markdown(mob: pd.DataFrame, roles: dict[str, str], metric_name: str = "accuracy") -> dict[str, str]:
    """Per (dataset, variant): rows = methods, columns = pairs, cells = mean over budgets ± 95% t-interval (%)."""
    out = {}
    for (dataset, variant), g in mob.groupby(["dataset", "variant"], sort=False):
        pairs = list(dict.fromkeys(g["pair"]))
        methods = sorted(g["method"].unique(), key=method_key)
        rows = []
        for m in methods:
            cells = []
            for p in pairs:
                hit = g[(g["method"] == m) & (g["pair"] == p)]
                cells.append(
                    mean_pm(hit["value"].iloc[0], hit["half"].iloc[0], n=hit["n_seeds"].iloc[0]) if len(hit) else "–"
                )
            rows.append([m, *cells])
        info = g.iloc[0]
        title = (
            f"Mean {metric_name} (%) over N ∈ {{{info['budgets']}}}, {dataset}, variant {variant}; "
            f"{span(g['n_problems'])} problems, {span(g['n_seeds'])} seeds, "
            f"± = 95% t-interval over seeds (from {MIN_REPLICATES} seeds up)"
        )
        out[f"{dataset}|{variant}"] = f"{title}\n\n" + markdown_table(
            ["method", *[pair_name(p, roles) for p in pairs]], rows
        )
    return out


def per_budget_markdown(cur: pd.DataFrame, roles: dict[str, str], col: str = "acc") -> dict[str, str]:
    out = {}
    for (dataset, variant), g in cur.groupby(["dataset", "variant"], sort=False):
        pairs = list(dict.fromkeys(g["pair"]))
        budgets = sorted(g["budget"].unique())
        methods = sorted(g["method"].unique(), key=method_key)
        header = ["method"] + [f"{pair_name(p, roles)} N={b}" for p in pairs for b in budgets]
        rows = []
        for m in methods:
            cells = []
            for p in pairs:
                for b in budgets:
                    hit = g[(g["method"] == m) & (g["pair"] == p) & (g["budget"] == b)]
                    if not len(hit):
                        cells.append("–")
                    elif col == "pass_at_n" and hit["pass_unsure"].iloc[0]:
                        cells.append(f"{100 * hit['pass_low'].iloc[0]:.1f}–{100 * hit[col].iloc[0]:.1f}")
                    elif col == "cost":
                        cells.append(
                            mean_pm(
                                hit[col].iloc[0],
                                hit[col + "_half"].iloc[0],
                                scale=1.0,
                                digits=0,
                                n=hit["n_seeds"].iloc[0],
                            )
                        )
                    else:
                        cells.append(mean_pm(hit[col].iloc[0], hit[col + "_half"].iloc[0], n=hit["n_seeds"].iloc[0]))
            rows.append([m, *cells])
        out[f"{dataset}|{variant}"] = markdown_table(header, rows)
        if col == "pass_at_n" and (unsure := int(g["pass_unsure"].sum())):
            out[f"{dataset}|{variant}"] += (
                f"\n\nA range is all the record allows: for {unsure} of these {int(g['n_runs'].sum()):,} cells (beam "
                "search and DVTS, recorded before runs marked the candidates they vote on) the ledger counted every "
                "solution the search ended, and these two methods end some they do not vote on (beam search keeps "
                "the N best-scored, DVTS a subtree's last step). The range runs from the share of cells where the "
                "vote's or the best score's answer is right (a voted candidate is then right) to the share where "
                "any ended solution is."
            )
    return out


def half_text(h: float, n: int | None = None, unit: str = "seeds") -> str:
    """A paired difference's interval half-width in points; '–' where there is none, and why where too few
    seeds or problems (`n` of them) give none that means something."""
    if n is not None and n < MIN_REPLICATES:
        return f"– ({_too_few(n, unit)})"
    return "–" if math.isnan(h) else f"± {100 * h:.1f}"


def paired_markdown(pdiff: pd.DataFrame, roles: dict[str, str]) -> dict[str, str]:
    out: dict[str, str] = {}
    if pdiff.empty:  # one method only, or no REBASE to compare with
        return out
    for (dataset, variant), g in pdiff.groupby(["dataset", "variant"], sort=False):
        rows = [
            [
                pair_name(r.pair, roles),
                r.budget,
                f"{r.x} − {r.y}",
                f"{100 * r.diff:+.1f}",
                half_text(r.half_seeds, r.n_seeds, "seeds"),
                half_text(r.half_problems, r.n_problems, "problems"),
            ]
            for r in g.itertuples()
        ]
        out[f"{dataset}|{variant}"] = (
            "Accuracy difference in percentage points on the same (problem, seed) cells; 95% t-intervals over "
            "seeds and over problems\n\n"
            + markdown_table(["pair", "N", "difference", "mean", "± over seeds", "± over problems"], rows)
        )
    return out


def variant_markdown(vdiff: pd.DataFrame, roles: dict[str, str]) -> str:
    if vdiff.empty:
        return ""
    rows = [
        [
            pair_name(r.pair, roles),
            r.budget,
            r.method,
            r.variant,
            r.reference,
            f"{100 * r.diff:+.1f}",
            half_text(r.half_seeds, r.n_seeds, "seeds"),
            half_text(r.half_problems, r.n_problems, "problems"),
            r.n_cells,
            f"{r.spend_ratio:.2f}",
            share_text(r.uncommitted),
        ]
        for r in vdiff.itertuples()
    ]
    return (
        "Each UATS variant against its method's base settings, against REBASE and (A-UATS) against H-UATS on the "
        "same (problem, seed) cells: accuracy difference in percentage points, 95% t-intervals over seeds and "
        "over problems, "
        "compute spent as a share of the reference's, and the share of the row's searches that ran uncommitted "
        "code\n\n"
        + markdown_table(
            [
                "pair",
                "N",
                "method",
                "variant",
                "against",
                "difference",
                "± over seeds",
                "± over problems",
                "cells",
                "spent / reference's",
                UNCOMMITTED,
            ],
            rows,
        )
    )


def spend_markdown(spend: pd.DataFrame, roles: dict[str, str]) -> str:
    if spend.empty:
        return ""
    several = spend["dataset"].nunique() > 1
    rows = [
        [
            pair_cell(r.pair, r.dataset, roles, several),
            r.budget,
            r.method,
            r.variant,
            r.cells,
            f"{r.spend_ratio:.3f}",
            f"{r.median_ratio:.3f}",
            r.capped,
            "–" if math.isnan(r.spend_ratio_uncapped) else f"{r.spend_ratio_uncapped:.3f}",
            share_text(r.uncommitted),
        ]
        for r in spend.itertuples()
    ]
    return (
        "Compute spent against REBASE's on the same (problem, seed) cells: the ratio of the totals, the median "
        "ratio per search, and the ratio of the totals without the cells where either search ran to the "
        "iteration cap, and the share of the row's searches that ran uncommitted code\n\n"
        + markdown_table(
            [
                "pair",
                "N",
                "method",
                "variant",
                "cells",
                "spent / REBASE's",
                "median per search",
                "cells at the cap",
                "without them",
                UNCOMMITTED,
            ],
            rows,
        )
    )


def against_rebase_markdown(cur: pd.DataFrame, roles: dict[str, str]) -> dict[str, str]:
    """The UATS methods beside REBASE at each budget: accuracy, compute spent and spent as a share of
    REBASE's, since UATS stops spending when no candidate is uncertain and matched compute is a ceiling."""
    out: dict[str, str] = {}
    for (dataset, variant), g in cur.groupby(["dataset", "variant"], sort=False):
        g = g[g["method"].isin(("rebase", *uncertainty_methods()))]
        if "rebase" not in set(g["method"]) or len(set(g["method"])) < 2:
            continue  # nothing to set beside REBASE
        rows = []
        for (pair, budget), h in g.groupby(["pair", "budget"], sort=False):  # cur's order: pair, then budget
            ref = h[h["method"] == "rebase"]
            ref_cost = float(ref["cost"].iloc[0]) if len(ref) else math.nan
            for r in sorted(h.itertuples(), key=lambda r: method_key(r.method)):
                rows.append(
                    [
                        pair_name(pair, roles),
                        budget,
                        r.method,
                        mean_pm(r.acc, r.acc_half, n=r.n_seeds),
                        mean_pm(r.cost, r.cost_half, scale=1.0, digits=0, n=r.n_seeds),
                        "–" if not ref_cost > 0 else f"{r.cost / ref_cost:.2f}",
                        r.n_problems,
                    ]
                )
        out[f"{dataset}|{variant}"] = (
            "Accuracy (%) and compute spent per search (PRM-pass units), mean ± 95% t-interval over seeds\n\n"
            + markdown_table(
                ["pair", "N", "method", "accuracy (%)", "compute spent", "spent / REBASE's", "problems"], rows
            )
        )
    return out


def ablation_table(mob: pd.DataFrame, roles: dict[str, str], base_same: pd.DataFrame | None = None) -> str:
    """UATS methods, every variant (base first): mean accuracy over budgets ± 95% t-interval, by pair. A variant
    run at other budgets or seeds than its base says which: its mean is over those, and `base_same`
    (stats.base_on_variant_cells) gives the base's mean on the very same cells beside it."""
    g = mob[mob["method"].isin(uncertainty_methods())]
    if g.empty or set(g["variant"]) == {"base"}:
        return ""
    pairs = list(dict.fromkeys(g["pair"]))
    rows = []
    for (dataset, method), h in g.groupby(["dataset", "method"], sort=False):
        variants = sorted(h["variant"].unique(), key=lambda v: (v != "base", v))
        for v in variants:
            cells = []
            for p in pairs:
                hit = h[(h["variant"] == v) & (h["pair"] == p)]
                base = h[(h["variant"] == "base") & (h["pair"] == p)]
                if not len(hit):
                    cells.append("–")
                    continue
                r = hit.iloc[0]
                note = f"n={int(r['n_problems'])}"
                if len(base) and r["budgets"] != base["budgets"].iloc[0]:
                    note += f"; N={r['budgets']}"
                if r["n_seeds"] < MIN_REPLICATES:
                    note += f"; {_too_few(r['n_seeds'], 'seeds')}"
                elif len(base) and r["n_seeds"] != base["n_seeds"].iloc[0]:
                    note += f"; {int(r['n_seeds'])} seeds"
                same = (
                    base_same[
                        (base_same["dataset"] == dataset)
                        & (base_same["method"] == method)
                        & (base_same["variant"] == v)
                        & (base_same["pair"] == p)
                    ]
                    if base_same is not None and len(base_same)
                    else []
                )
                if len(same):
                    shown = mean_pm(same["value"].iloc[0], shown_half(same["half"].iloc[0], same["n_seeds"].iloc[0]))
                    note += f"; base on these cells {shown}"
                cells.append(f"{mean_pm(r['value'], shown_half(r['half'], r['n_seeds']))} ({note})")
            rows.append([dataset, method, v, *cells])
    return (
        "Ablations: mean accuracy (%) over budgets ± 95% t-interval over seeds (n = problems; every variant of "
        'a method on the same problems, over its own budgets and seeds; "Variants, paired" compares cell by cell)\n\n'
        + markdown_table(["dataset", "method", "variant", *[pair_name(p, roles) for p in pairs]], rows)
    )


def prm_markdown(summary: pd.DataFrame, roles: dict[str, str], tau: float) -> str:
    """The Figure 2 analysis as a table: per pair, the PRM's step accuracy, AUROC and MC variance."""
    several = summary["dataset"].nunique() > 1
    rows = [
        [
            pair_cell(r.pair, r.dataset, roles, several),
            r.score_kind,
            r.label_kind,
            r.n_steps,
            f"{100 * r.share_correct:.1f}",
            f"{100 * r.accuracy:.1f} [{100 * r.acc_lo:.1f}, {100 * r.acc_hi:.1f}]",
            f"{r.auroc:.3f}",
            f"{r.mean_score_correct:.3f} / {r.mean_score_wrong:.3f}",
            "–" if math.isnan(r.var_median) else f"{r.var_median:.2e}",
            "–" if math.isnan(r.var_median) else f"{r.var_median_correct:.2e} / {r.var_median_wrong:.2e}",
            "–" if math.isnan(r.share_var_over_tau) else f"{100 * r.share_var_over_tau:.1f}",
            "–" if math.isnan(r.share_std_over_tau) else f"{100 * r.share_std_over_tau:.1f}",
        ]
        for r in summary.itertuples()
    ]
    return (
        f"Step labels from the exact checker (arith) or the graded answer (elsewhere, terminal nodes only); "
        f"accuracy = score ≥ 0.5 agrees with the label, Wilson 95% interval; σ² of the K0 initial MC passes; "
        f"τ = {tau:g}.\n\n"
        + markdown_table(
            [
                "pair",
                "score",
                "labels",
                "steps",
                "% correct steps",
                "accuracy % [95%]",
                "AUROC",
                "mean score correct / wrong",
                "median σ²",
                "median σ² correct / wrong",
                "% σ² > τ",
                "% σ > τ",
            ],
            rows,
        )
    )
