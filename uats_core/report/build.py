"""Reports from an evaluation's run log: `python -m uats_core.report --db runs/eval.db --out runs/reports`.

Reads the `eval_cells` table (uats_core.eval) joined to the run log's `runs` and `nodes`, and builds:

- accuracy against N and against the compute each search actually spent (runs.cost), per pair, every
  method, with Pass@N (the oracle: some terminal candidate - finished, or truncated with an answer - is
  correct) and 95% intervals over seeds;
- the paper's Table 4 layout (mean accuracy over the budgets, method by pair) and per-budget tables;
- the Figure 2 analysis: the PRM's step accuracy and the MC-variance distribution per policy/PRM pair
  (ID vs OOD), from the stored nodes, with the arithmetic world's exact step checker as ground truth;
- ablations: every non-"base" variant (dropout p, K0, τ, δ, dropout mode, without uncertainty).

Intervals: per seed, the accuracy over problems; then the mean over seeds ± t(0.975, s−1)·sd/√s, the
Student-t interval with s = number of seeds (problems are shared by all seeds, so seeds are the
replicates). With one seed there is no interval (shown as ±nan). Comparisons use, per (dataset, pair,
variant), only the problems for which every (method, budget, seed) cell of that group has finished, so an
unfinished grid never compares methods on different problems (`common_problems=False` turns this off).

`build_report(store_or_url)` returns the figures and tables for the app; `write_report` exports them
(one offline report.html with plotly.js inlined, a PNG per figure through kaleido when a browser is
available, Markdown and CSV tables).
"""

from __future__ import annotations

import argparse
import logging
import math
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Sequence

import numpy as np
import pandas as pd
import sqlalchemy as sa

from .estimation import auroc, is_ood

log = logging.getLogger(__name__)

METHOD_ORDER = ("best-of-n", "beam", "dvts", "rebase", "dora", "h-uats", "a-uats")
COLORS = {"best-of-n": "#7f7f7f", "beam": "#1f77b4", "dvts": "#17becf", "rebase": "#2ca02c", "dora": "#bcbd22",
          "h-uats": "#d62728", "a-uats": "#9467bd"}
TERMINAL = ("finished", "truncated")
UATS = ("h-uats", "a-uats")


# ---------------------------------------------------------------------------------------------- statistics
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


# ---------------------------------------------------------------------------------------------- loading
def _engine(store_or_url: Any) -> sa.Engine:
    if isinstance(store_or_url, sa.Engine):
        return store_or_url
    if hasattr(store_or_url, "engine"):
        return store_or_url.engine
    from storage import RunStore

    return RunStore(str(store_or_url)).engine


_RESULT_COLUMNS = ["cell_key", "pair", "policy", "prm", "dataset", "problem_id", "method", "budget", "seed", "variant",
                   "run_id", "batched", "wall_s", "correct", "naive_correct", "cost", "iterations", "n_nodes", "answer"]


def load_results(store_or_url: Any) -> pd.DataFrame:
    """One row per finished evaluation cell whose run finished: the cell's axes and the run's outcome,
    with pass_at_n from the run's terminal nodes."""
    from storage import schema as S

    from .eval.cells import eval_cells

    engine = _engine(store_or_url)
    if eval_cells.name not in sa.inspect(engine).get_table_names():  # reading never creates tables
        return pd.DataFrame(columns=_RESULT_COLUMNS + ["pass_at_n", "n_final"])
    c, r, n = eval_cells.c, S.runs.c, S.nodes.c
    q = (sa.select(c.cell_key, c.pair, c.policy, c.prm, c.dataset, c.problem_id, c.method, c.budget, c.seed, c.variant,
                   c.run_id, c.batched, c.wall_s, r.correct, r.naive_correct, r.cost, r.iterations, r.n_nodes, r.answer)
         .select_from(eval_cells.join(S.runs, r.run_id == c.run_id))
         .where(c.status == "finished", r.status == "finished"))
    oracle = (sa.select(n.run_id, sa.func.max(sa.case((n.correct.is_(True), 1), else_=0)).label("any_correct"),
                        sa.func.count().label("n_final"))
              .select_from(S.nodes.join(eval_cells, c.run_id == n.run_id))
              .where(c.status == "finished", n.status.in_(TERMINAL))
              .group_by(n.run_id))
    with engine.connect() as conn:
        df = pd.DataFrame(conn.execute(q).mappings().all())
        pas = pd.DataFrame(conn.execute(oracle).mappings().all())
    if df.empty:
        return pd.DataFrame(columns=_RESULT_COLUMNS + ["pass_at_n", "n_final"])
    if pas.empty:
        pas = pd.DataFrame(columns=["run_id", "any_correct", "n_final"])
    df = df.merge(pas, on="run_id", how="left")
    df["correct"] = df["correct"].fillna(False).astype(bool)  # no answer counts as wrong
    df["naive_correct"] = df["naive_correct"].fillna(False).astype(bool)
    df["pass_at_n"] = df["any_correct"].fillna(0).astype(int).astype(bool)
    df["n_final"] = df["n_final"].fillna(0).astype(int)
    df["cost"] = df["cost"].astype(float)
    return df.drop(columns=["any_correct"])


def _complete_problems(df: pd.DataFrame, groups: list[str], axes: list[str]) -> pd.DataFrame:
    """Per group, keep the problems that have every combination of `axes` seen in that group."""
    if df.empty:
        return df
    keep = []
    for _, g in df.groupby(groups, sort=False):
        combos = g.groupby(axes).ngroups
        per_problem = g.groupby("problem_id")[axes].apply(lambda x: len(x.drop_duplicates()))
        full = set(per_problem[per_problem == combos].index)
        keep.append(g[g["problem_id"].isin(full)])
    return pd.concat(keep, ignore_index=True)


def restrict_common(df: pd.DataFrame) -> pd.DataFrame:
    """Per (dataset, pair, variant): keep the problems that finished every (method, budget, seed) of it."""
    return _complete_problems(df, ["dataset", "pair", "variant"], ["method", "budget", "seed"])


def _method_key(m: str) -> int:
    return METHOD_ORDER.index(m) if m in METHOD_ORDER else len(METHOD_ORDER)


def curves(df: pd.DataFrame, confidence: float = 0.95) -> pd.DataFrame:
    """Per (dataset, variant, pair, method, budget): accuracy, naive accuracy, Pass@N and mean cost, each
    as mean over seeds of the per-seed mean over problems, with t-interval half-widths."""
    rows = []
    keys = ["dataset", "variant", "pair", "method", "budget"]
    for key, g in df.groupby(keys, sort=False):
        per_seed = g.groupby("seed").agg(acc=("correct", "mean"), naive=("naive_correct", "mean"),
                                         pass_at_n=("pass_at_n", "mean"), cost=("cost", "mean"))
        row = dict(zip(keys, key))
        for col in ("acc", "naive", "pass_at_n", "cost"):
            m, h = t_interval(per_seed[col].tolist(), confidence)
            row[col], row[col + "_half"] = m, h
        row["n_seeds"] = int(len(per_seed))
        row["n_problems"] = int(g["problem_id"].nunique())
        row["n_runs"] = int(len(g))
        rows.append(row)
    out = pd.DataFrame(rows)
    if out.empty:
        return out
    out["_m"] = out["method"].map(_method_key)
    return out.sort_values(["dataset", "variant", "pair", "_m", "budget"]).drop(columns="_m").reset_index(drop=True)


def mean_over_budgets(df: pd.DataFrame, metric: str = "correct", confidence: float = 0.95) -> pd.DataFrame:
    """Table 4's number: per seed, the mean over budgets of the accuracy over problems; then mean ± t over seeds."""
    rows = []
    keys = ["dataset", "variant", "pair", "method"]
    for key, g in df.groupby(keys, sort=False):
        per_seed_budget = g.groupby(["seed", "budget"])[metric].mean()
        per_seed = per_seed_budget.groupby(level="seed").mean()
        m, h = t_interval(per_seed.tolist(), confidence)
        rows.append({**dict(zip(keys, key)), "value": m, "half": h, "n_seeds": len(per_seed),
                     "budgets": ",".join(str(b) for b in sorted(g["budget"].unique())),
                     "n_problems": int(g["problem_id"].nunique())})
    return pd.DataFrame(rows)


# ---------------------------------------------------------------------------------------------- tables
def _mean_pm(m: float, h: float, scale: float = 100.0, digits: int = 1) -> str:
    """'m ± h', scaled (100: a share as %) and rounded; '–' without a mean, no ± without an interval."""
    if m is None or (isinstance(m, float) and math.isnan(m)):
        return "–"
    return f"{scale * m:.{digits}f}" + ("" if h is None or math.isnan(h) else f" ± {scale * h:.{digits}f}")


def _span(values: pd.Series) -> str:
    lo, hi = int(values.min()), int(values.max())
    return str(lo) if lo == hi else f"{lo}–{hi}"


def markdown_table(header: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    lines = ["| " + " | ".join(map(str, header)) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(map(str, r)) + " |" for r in rows]
    return "\n".join(lines)


def _pair_name(pair: str, roles: dict[str, str]) -> str:
    return f"{pair} ({roles[pair]})" if pair in roles else pair


def table4_markdown(mob: pd.DataFrame, roles: dict[str, str], metric_name: str = "accuracy") -> dict[str, str]:
    """Per (dataset, variant): rows = methods, columns = pairs, cells = mean over budgets ± 95% t-interval (%)."""
    out = {}
    for (dataset, variant), g in mob.groupby(["dataset", "variant"], sort=False):
        pairs = list(dict.fromkeys(g["pair"]))
        methods = sorted(g["method"].unique(), key=_method_key)
        rows = []
        for m in methods:
            cells = []
            for p in pairs:
                hit = g[(g["method"] == m) & (g["pair"] == p)]
                cells.append(_mean_pm(hit["value"].iloc[0], hit["half"].iloc[0]) if len(hit) else "–")
            rows.append([m, *cells])
        info = g.iloc[0]
        title = (f"Mean {metric_name} (%) over N ∈ {{{info['budgets']}}}, {dataset}, variant {variant}; "
                 f"{_span(g['n_problems'])} problems, {_span(g['n_seeds'])} seeds, "
                 "± = 95% t-interval over seeds")
        out[f"{dataset}|{variant}"] = f"{title}\n\n" + markdown_table(["method", *[_pair_name(p, roles) for p in pairs]], rows)
    return out


def per_budget_markdown(cur: pd.DataFrame, roles: dict[str, str], col: str = "acc") -> dict[str, str]:
    out = {}
    for (dataset, variant), g in cur.groupby(["dataset", "variant"], sort=False):
        pairs = list(dict.fromkeys(g["pair"]))
        budgets = sorted(g["budget"].unique())
        methods = sorted(g["method"].unique(), key=_method_key)
        header = ["method"] + [f"{_pair_name(p, roles)} N={b}" for p in pairs for b in budgets]
        rows = []
        for m in methods:
            cells = []
            for p in pairs:
                for b in budgets:
                    hit = g[(g["method"] == m) & (g["pair"] == p) & (g["budget"] == b)]
                    if not len(hit):
                        cells.append("–")
                    elif col == "cost":
                        cells.append(_mean_pm(hit[col].iloc[0], hit[col + "_half"].iloc[0], scale=1.0, digits=0))
                    else:
                        cells.append(_mean_pm(hit[col].iloc[0], hit[col + "_half"].iloc[0]))
            rows.append([m, *cells])
        out[f"{dataset}|{variant}"] = markdown_table(header, rows)
    return out


def comparisons(methods: Iterable[str]) -> list[tuple[str, str]]:
    """The UATS methods against REBASE (the allocation they extend), and A-UATS against H-UATS."""
    present = set(methods)
    out = [(m, "rebase") for m in UATS if m in present and "rebase" in present]
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
            if d.empty:
                continue
            mean, seed_half = t_interval(d.groupby(level="seed").mean().tolist(), confidence)
            _, problem_half = t_interval(d.groupby(level="problem_id").mean().tolist(), confidence)
            rows.append({**dict(zip(keys, key)), "x": x, "y": y, "diff": mean, "half_seeds": seed_half,
                         "half_problems": problem_half, "n_cells": int(len(d))})
    out = pd.DataFrame(rows)
    return out.sort_values(keys, kind="stable").reset_index(drop=True) if len(out) else out


def paired_markdown(pdiff: pd.DataFrame, roles: dict[str, str]) -> dict[str, str]:
    out: dict[str, str] = {}
    if pdiff.empty:  # one method only, or no REBASE to compare with
        return out
    for (dataset, variant), g in pdiff.groupby(["dataset", "variant"], sort=False):
        rows = [[_pair_name(r.pair, roles), r.budget, f"{r.x} − {r.y}", f"{100 * r.diff:+.1f}",
                 "–" if math.isnan(r.half_seeds) else f"± {100 * r.half_seeds:.1f}",
                 "–" if math.isnan(r.half_problems) else f"± {100 * r.half_problems:.1f}"] for r in g.itertuples()]
        out[f"{dataset}|{variant}"] = (
            "Accuracy difference in percentage points on the same (problem, seed) cells; 95% t-intervals over "
            "seeds and over problems\n\n"
            + markdown_table(["pair", "N", "difference", "mean", "± over seeds", "± over problems"], rows))
    return out


def against_rebase_markdown(cur: pd.DataFrame, roles: dict[str, str]) -> dict[str, str]:
    """The UATS methods beside REBASE at each budget: accuracy, compute spent and spent as a share of
    REBASE's, since UATS stops spending when no candidate is uncertain and matched compute is a ceiling."""
    out: dict[str, str] = {}
    for (dataset, variant), g in cur.groupby(["dataset", "variant"], sort=False):
        g = g[g["method"].isin(("rebase", *UATS))]
        if "rebase" not in set(g["method"]) or len(set(g["method"])) < 2:
            continue  # nothing to set beside REBASE
        rows = []
        for (pair, budget), h in g.groupby(["pair", "budget"], sort=False):  # cur's order: pair, then budget
            ref = h[h["method"] == "rebase"]
            ref_cost = float(ref["cost"].iloc[0]) if len(ref) else math.nan
            for r in sorted(h.itertuples(), key=lambda r: _method_key(r.method)):
                rows.append([_pair_name(pair, roles), budget, r.method, _mean_pm(r.acc, r.acc_half),
                             _mean_pm(r.cost, r.cost_half, scale=1.0, digits=0),
                             "–" if not ref_cost > 0 else f"{r.cost / ref_cost:.2f}", r.n_problems])
        out[f"{dataset}|{variant}"] = (
            "Accuracy (%) and compute spent per search (PRM-pass units), mean ± 95% t-interval over seeds\n\n"
            + markdown_table(["pair", "N", "method", "accuracy (%)", "compute spent", "spent / REBASE's", "problems"],
                             rows))
    return out


# ---------------------------------------------------------------------------------------------- figures
def _go() -> Any:
    import plotly.graph_objects as go

    return go


def fig_curves(cur: pd.DataFrame, x: str, y: str, title: str, roles: dict[str, str], log_x: bool = True,
               dashed_extra: str | None = None) -> Any:
    """Facets by pair; a line per method with 95% error bars; optional dashed second metric (Pass@N)."""
    from plotly.subplots import make_subplots

    go = _go()
    pairs = list(dict.fromkeys(cur["pair"]))
    fig = make_subplots(rows=1, cols=max(1, len(pairs)), subplot_titles=[_pair_name(p, roles) for p in pairs],
                        shared_yaxes=True, horizontal_spacing=0.06)
    for j, pair in enumerate(pairs, 1):
        g = cur[cur["pair"] == pair]
        for method in sorted(g["method"].unique(), key=_method_key):
            h = g[g["method"] == method].sort_values("budget")
            color = COLORS.get(method)
            custom = np.stack([h["budget"], h["n_problems"], h["n_seeds"], h["cost"]], axis=1)
            hover = ("%{fullData.name}<br>N=%{customdata[0]}<br>" + y + "=%{y:.3f}<br>cost=%{customdata[3]:.0f}"
                     "<br>%{customdata[1]} problems × %{customdata[2]} seeds<extra></extra>")
            fig.add_trace(go.Scatter(x=h[x], y=h[y], mode="lines+markers", name=method, legendgroup=method,
                                     showlegend=j == 1, line=dict(color=color),
                                     error_y=dict(type="data", array=h[y + "_half"].fillna(0), visible=True),
                                     customdata=custom, hovertemplate=hover), row=1, col=j)
            if dashed_extra:
                fig.add_trace(go.Scatter(x=h[x], y=h[dashed_extra], mode="lines", name=f"{method} Pass@N",
                                         legendgroup=method, showlegend=False, line=dict(color=color, dash="dot"),
                                         hovertemplate=f"{method} Pass@N=%{{y:.3f}}<extra></extra>"), row=1, col=j)
        fig.update_xaxes(type="log" if log_x else "linear", title_text="N (budget)" if x == "budget" else
                         "compute spent (steps·c + PRM passes)", row=1, col=j)
    fig.update_yaxes(title_text={"acc": "accuracy", "pass_at_n": "Pass@N"}.get(y, y), row=1, col=1)
    if y in ("acc", "pass_at_n", "naive"):
        fig.update_yaxes(range=[0, 1.02])  # a wide interval (few seeds) must not squash the curves
    if x == "budget" and len(cur):
        budgets = sorted(cur["budget"].unique())
        fig.update_xaxes(tickvals=budgets, ticktext=[str(b) for b in budgets])
    fig.update_layout(title=title, template="plotly_white", height=460, width=max(620, 460 * len(pairs)),
                      legend=dict(orientation="h", y=-0.18))
    return fig


# ---------------------------------------------------------------------------------------------- Figure 2
def _select_runs(df: pd.DataFrame, max_runs_per_pair: int) -> pd.DataFrame:
    """Base-variant runs, spread evenly over each pair's sorted cell keys (deterministic)."""
    base = df[df["variant"] == "base"].sort_values("cell_key")
    parts = []
    for _, g in base.groupby(["dataset", "pair"], sort=False):
        if len(g) > max_runs_per_pair:
            idx = np.linspace(0, len(g) - 1, max_runs_per_pair).round().astype(int)
            g = g.iloc[np.unique(idx)]
        parts.append(g)
    return pd.concat(parts) if parts else base


def step_records(store_or_url: Any, df: pd.DataFrame, max_runs_per_pair: int = 600) -> pd.DataFrame:
    """One row per scored node of the selected runs: its pair, method, score, initial-pass variance and
    whether the step is correct. Labels: the arithmetic world's exact checker on the node's whole prefix;
    elsewhere only terminal nodes get a label (their graded answer)."""
    from storage import schema as S

    from .worlds.arith.world import label_steps

    engine = _engine(store_or_url)
    runs = _select_runs(df, max_runs_per_pair)
    if runs.empty:
        return pd.DataFrame()
    info = runs.set_index("run_id")[["pair", "dataset", "method", "problem_id"]].to_dict("index")
    n = S.nodes.c
    problems: dict[str, Any] = {}
    rows: list[dict[str, Any]] = []
    run_ids = list(info)
    try:
        from tqdm import tqdm

        chunks = tqdm(range(0, len(run_ids), 200), desc="figure 2: nodes", unit="chunk", leave=False,
                      disable=len(run_ids) < 400)
    except ImportError:
        chunks = range(0, len(run_ids), 200)
    for i in chunks:
        ids = run_ids[i:i + 200]
        q = (sa.select(n.run_id, n.node_id, n.parent_id, n.depth, n.step, n.mean, n.mc_scores, n.initial_passes,
                       n.status, n.correct).where(n.run_id.in_(ids)))
        with engine.connect() as conn:
            nodes = pd.DataFrame(conn.execute(q).mappings().all())
        if nodes.empty:
            continue
        for run_id, g in nodes.groupby("run_id", sort=False):
            meta = info[run_id]
            arith = str(meta["dataset"]).startswith("arith")
            problem = None
            if arith:
                pid = meta["problem_id"]
                if pid not in problems:
                    from .worlds.arith.world import get_problem

                    try:
                        problems[pid] = get_problem(pid)
                    except (ValueError, IndexError):
                        problems[pid] = None
                problem = problems[pid]
            by_id = {int(r.node_id): r for r in g.itertuples(index=False)}
            for r in g.itertuples(index=False):
                if r.depth < 1 or r.mean is None or (isinstance(r.mean, float) and math.isnan(r.mean)):
                    continue
                passes = list(r.mc_scores or [])
                k0 = int(r.initial_passes or 0)
                uats = meta["method"] in UATS and k0 >= 2
                score = float(np.mean(passes[:k0])) if uats else float(passes[0] if passes else r.mean)
                var0 = float(np.var(passes[:k0], ddof=1)) if uats else float("nan")
                label: bool | None = None
                if problem is not None:
                    chain: list[str] = []
                    cur = by_id.get(int(r.node_id))
                    while cur is not None and cur.depth >= 1:
                        chain.append(cur.step)
                        cur = by_id.get(int(cur.parent_id)) if cur.parent_id is not None else None
                    chain.reverse()
                    label = bool(label_steps(problem, [s.strip() for s in chain])[-1])
                elif r.status in TERMINAL and r.correct is not None:
                    label = bool(r.correct)
                if label is None:
                    continue
                rows.append({"pair": meta["pair"], "dataset": meta["dataset"], "method": meta["method"],
                             "score_kind": "MC mean of K0 passes (UATS)" if uats else "deterministic (baselines)",
                             "label_kind": "step" if problem is not None else "outcome",
                             "score": score, "var0": var0, "correct": label})
    return pd.DataFrame(rows)


def prm_summary(steps: pd.DataFrame, tau: float) -> pd.DataFrame:
    rows = []
    if steps.empty:
        return pd.DataFrame()
    for (dataset, pair, kind), g in steps.groupby(["dataset", "pair", "score_kind"], sort=False):
        y = g["correct"].to_numpy(bool)
        pred = g["score"].to_numpy() >= 0.5
        k = int((pred == y).sum())
        lo, hi = wilson(k, len(g))
        var = g["var0"].dropna()
        rows.append({"dataset": dataset, "pair": pair, "score_kind": kind, "label_kind": g["label_kind"].iloc[0],
                     "n_steps": len(g), "share_correct": float(y.mean()), "accuracy": k / len(g), "acc_lo": lo,
                     "acc_hi": hi, "auroc": auroc(g["score"], y),
                     "mean_score_correct": float(g.loc[g["correct"], "score"].mean()) if y.any() else float("nan"),
                     "mean_score_wrong": float(g.loc[~g["correct"], "score"].mean()) if (~y).any() else float("nan"),
                     "var_median": float(var.median()) if len(var) else float("nan"),
                     "var_mean": float(var.mean()) if len(var) else float("nan"),
                     # the share the gate flags when τ thresholds σ² (the default) and when it thresholds σ
                     "share_var_over_tau": float(np.mean([is_ood(v, tau, "var") for v in var])) if len(var) else float("nan"),
                     "share_std_over_tau": float(np.mean([is_ood(v, tau, "std") for v in var])) if len(var) else float("nan"),
                     "var_median_correct": float(g.loc[g["correct"], "var0"].median()) if len(var) else float("nan"),
                     "var_median_wrong": float(g.loc[~g["correct"], "var0"].median()) if len(var) else float("nan")})
    return pd.DataFrame(rows)


def fig_prm(steps: pd.DataFrame, summary: pd.DataFrame, roles: dict[str, str], tau: float) -> Any:
    from plotly.subplots import make_subplots

    go = _go()
    fig = make_subplots(rows=1, cols=3, subplot_titles=(
        "PRM step accuracy (score ≥ 0.5) and AUROC", "MC variance σ² of the K0 initial passes",
        "σ² by step correctness"), horizontal_spacing=0.08)
    palette = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b"]
    pairs = list(dict.fromkeys(summary["pair"])) if len(summary) else []
    for i, pair in enumerate(pairs):
        color = palette[i % len(palette)]
        name = _pair_name(pair, roles)
        s = summary[summary["pair"] == pair]
        fig.add_trace(go.Bar(x=[f"acc · {k.split(' ')[0]}" for k in s["score_kind"]] + [f"AUROC · {k.split(' ')[0]}" for k in s["score_kind"]],
                             y=list(s["accuracy"]) + list(s["auroc"]), name=name, marker_color=color, legendgroup=pair,
                             error_y=dict(type="data", symmetric=False, array=list(s["acc_hi"] - s["accuracy"]) + [None] * len(s),
                                          arrayminus=list(s["accuracy"] - s["acc_lo"]) + [None] * len(s)),
                             hovertemplate="%{x}: %{y:.3f}<extra>" + name + "</extra>"), row=1, col=1)
        v = steps[(steps["pair"] == pair) & steps["var0"].notna()]
        if len(v):
            logv = np.log10(v["var0"].clip(lower=1e-12))
            fig.add_trace(go.Histogram(x=logv, name=name, marker_color=color, opacity=0.55, histnorm="probability",
                                       nbinsx=50, legendgroup=pair, showlegend=False,
                                       hovertemplate="log10 σ²=%{x}<br>share=%{y:.3f}<extra>" + name + "</extra>"),
                          row=1, col=2)
            for ok, label in ((True, "correct"), (False, "wrong")):
                w = v[v["correct"] == ok]
                if len(w):
                    fig.add_trace(go.Box(y=np.log10(w["var0"].clip(lower=1e-12)), x=[f"{pair} {label}"] * len(w),
                                         name=name, marker_color=color, legendgroup=pair, showlegend=False,
                                         boxpoints=False), row=1, col=3)
    fig.add_vline(x=math.log10(tau), line_dash="dash", line_color="black", row=1, col=2,
                  annotation_text=f"τ={tau:g}", annotation_position="bottom right")
    # Grouped bars: the two pairs' histogram bins stand side by side instead of hiding each other.
    fig.update_layout(barmode="group", template="plotly_white", height=460, width=1400,
                      title="Figure 2 analysis: PRM reliability and MC-dropout variance per policy/PRM pair",
                      legend=dict(orientation="h", y=-0.2))
    fig.update_xaxes(title_text="log10 σ²", row=1, col=2)
    fig.update_yaxes(title_text="log10 σ²", row=1, col=3)
    fig.update_yaxes(range=[0, 1.05], row=1, col=1)
    return fig


# ---------------------------------------------------------------------------------------------- ablations
def same_problems_across_variants(df: pd.DataFrame) -> pd.DataFrame:
    """UATS rows only; per (dataset, pair, method), the problems finished in every variant of it, so an
    ablation compares like with like (the base grid usually covers more problems than an ablation run)."""
    return _complete_problems(df[df["method"].isin(UATS)], ["dataset", "pair", "method"], ["variant"])


def ablation_table(mob: pd.DataFrame, roles: dict[str, str]) -> str:
    """UATS methods, every variant (base first): mean accuracy over budgets ± 95% t-interval, by pair."""
    g = mob[mob["method"].isin(UATS)]
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
                cells.append(f"{_mean_pm(hit['value'].iloc[0], hit['half'].iloc[0])} (n={int(hit['n_problems'].iloc[0])})"
                             if len(hit) else "–")
            rows.append([dataset, method, v, *cells])
    return ("Ablations: mean accuracy (%) over budgets ± 95% t-interval over seeds (n = problems; every variant of "
            "a method on the same problems)\n\n"
            + markdown_table(["dataset", "method", "variant", *[_pair_name(p, roles) for p in pairs]], rows))


def fig_ablation(cur: pd.DataFrame, roles: dict[str, str]) -> Any | None:
    from plotly.subplots import make_subplots

    g = cur[cur["method"].isin(UATS)]
    if g.empty or set(g["variant"]) == {"base"}:
        return None
    go = _go()
    pairs = list(dict.fromkeys(g["pair"]))
    fig = make_subplots(rows=1, cols=len(pairs), subplot_titles=[_pair_name(p, roles) for p in pairs], shared_yaxes=True)
    dashes = ["solid", "dash", "dot", "dashdot", "longdash", "longdashdot"]
    variants = sorted(g["variant"].unique(), key=lambda v: (v != "base", v))
    for j, pair in enumerate(pairs, 1):
        for method in sorted(g["method"].unique(), key=_method_key):
            for i, v in enumerate(variants):
                h = g[(g["pair"] == pair) & (g["method"] == method) & (g["variant"] == v)].sort_values("budget")
                if h.empty:
                    continue
                fig.add_trace(go.Scatter(x=h["budget"], y=h["acc"], mode="lines+markers", name=f"{method} {v}",
                                         legendgroup=f"{method} {v}", showlegend=j == 1,
                                         line=dict(color=COLORS.get(method), dash=dashes[i % len(dashes)]),
                                         error_y=dict(type="data", array=h["acc_half"].fillna(0), visible=True)),
                              row=1, col=j)
        fig.update_xaxes(type="log", title_text="N (budget)", row=1, col=j)
    fig.update_yaxes(title_text="accuracy", row=1, col=1)
    fig.update_layout(title="Ablations (UATS methods): accuracy vs N per variant", template="plotly_white",
                      height=460, width=max(620, 460 * len(pairs)), legend=dict(orientation="h", y=-0.2))
    return fig


# ---------------------------------------------------------------------------------------------- the report
@dataclass
class Report:
    figures: dict[str, Any] = field(default_factory=dict)  # name -> plotly Figure
    tables: dict[str, pd.DataFrame] = field(default_factory=dict)
    markdown: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """{"figures": {name: go.Figure}, "tables": {name: DataFrame}, "markdown": {name: str}, "notes": [...]}."""
        return {"figures": self.figures, "tables": self.tables, "markdown": self.markdown, "notes": self.notes}

    def summary_markdown(self) -> str:
        parts = ["# Evaluation report", "", *[f"- {n}" for n in self.notes], ""]
        for name, text in self.markdown.items():
            parts += [f"## {name}", "", text, ""]
        return "\n".join(parts)


def default_roles(df: pd.DataFrame) -> dict[str, str]:
    from .eval.grid import BUILTIN_MODELS, BUILTIN_ROLES

    roles = {}
    for pair, g in df.groupby("pair"):
        if pair in BUILTIN_ROLES and g["policy"].iloc[0] == BUILTIN_MODELS[pair.split(":")[0]]:
            roles[pair] = BUILTIN_ROLES[pair]
    return roles


def build_report(store_or_url: Any, *, common_problems: bool = True, confidence: float = 0.95,
                 roles: dict[str, str] | None = None, fig2: bool = True, max_fig2_runs_per_pair: int = 600,
                 tau: float | None = None, methods: Sequence[str] | None = None,
                 pairs: Sequence[str] | None = None) -> Report:
    """Every figure and table of the evaluation in `store_or_url` (a RunStore, an engine, a path or URL).

    figures: accuracy_vs_n, accuracy_vs_cost, pass_at_n, prm_analysis (Figure 2), ablations (when any);
    tables (DataFrames): results (one row per cell), curves, table4, pass_table4, prm_summary;
    markdown: table4 / per-budget / Pass@N / cost / PRM / ablation tables, ready for docs.
    methods / pairs: report only these (e.g. leave out a method still running, whose unfinished problems
    would otherwise shrink the common problem set of every method)."""
    from .config import SearchConfig

    rep = Report()
    raw = load_results(store_or_url)
    if methods:
        raw = raw[raw["method"].isin(list(methods))]
    if pairs:
        raw = raw[raw["pair"].isin(list(pairs))]
    rep.tables["results"] = raw
    if raw.empty:
        rep.notes.append("no finished evaluation cells in this database")
        return rep
    roles = default_roles(raw) if roles is None else roles
    tau = SearchConfig().tau if tau is None else tau
    df = restrict_common(raw) if common_problems else raw
    dropped = len(raw) - len(df)
    rep.notes.append(f"{len(raw)} finished cells; {len(df)} used"
                     + (f" ({dropped} dropped: their problem is not finished for every method × budget × seed of its group)"
                        if dropped else ""))
    if bool(raw["batched"].any()):
        rep.notes.append(f"{int(raw['batched'].sum())} cells ran under cross-problem batching (valid samples, but "
                         "not reproducible alone: their RNG draws were shared with co-scheduled searches)")
    rep.notes.append("intervals: 95% Student-t over seeds of the per-seed accuracy over problems")
    cur = curves(df, confidence)
    rep.tables["curves"] = cur
    mob = mean_over_budgets(df, "correct", confidence)
    rep.tables["table4"] = mob
    pob = mean_over_budgets(df, "pass_at_n", confidence)
    rep.tables["pass_table4"] = pob
    for key, text in table4_markdown(mob[mob["variant"] == "base"], roles).items():
        rep.markdown[f"Table 4 layout: {key}"] = text
    for key, text in per_budget_markdown(cur[cur["variant"] == "base"], roles, "acc").items():
        rep.markdown[f"Accuracy by budget (%): {key}"] = text
    for key, text in per_budget_markdown(cur[cur["variant"] == "base"], roles, "pass_at_n").items():
        rep.markdown[f"Pass@N by budget (%, oracle): {key}"] = text
    for key, text in per_budget_markdown(cur[cur["variant"] == "base"], roles, "cost").items():
        rep.markdown[f"Mean compute spent per search (PRM-pass units, ± 95% t over seeds): {key}"] = text
    for key, text in against_rebase_markdown(cur[cur["variant"] == "base"], roles).items():
        rep.markdown[f"UATS against REBASE: {key}"] = text
    pdiff = paired_differences(df[df["variant"] == "base"], confidence)
    rep.tables["paired_differences"] = pdiff
    for key, text in paired_markdown(pdiff, roles).items():
        rep.markdown[f"Paired accuracy differences: {key}"] = text
    abl_df = same_problems_across_variants(df)
    abl = ablation_table(mean_over_budgets(abl_df, "correct", confidence), roles) if len(abl_df) else ""
    if abl:
        rep.markdown["Ablations"] = abl
    for (dataset, variant), g in cur.groupby(["dataset", "variant"], sort=False):
        suffix = "" if (dataset, variant) == tuple(cur[["dataset", "variant"]].iloc[0]) else f" [{dataset} {variant}]"
        tag = "" if not suffix else f"_{dataset}_{variant}".replace("=", "").replace(",", "_").replace("/", "_")
        n_desc = f"{_span(g['n_problems'])} problems × {_span(g['n_seeds'])} seeds"
        rep.figures["accuracy_vs_n" + tag] = fig_curves(
            g, "budget", "acc", f"Accuracy vs N, {dataset}, {variant} ({n_desc}); dotted: Pass@N (oracle)", roles,
            dashed_extra="pass_at_n")
        rep.figures["accuracy_vs_cost" + tag] = fig_curves(
            g, "cost", "acc", f"Accuracy vs compute actually spent, {dataset}, {variant} ({n_desc})", roles)
        rep.figures["pass_at_n" + tag] = fig_curves(
            g, "budget", "pass_at_n", f"Pass@N (oracle: any terminal candidate correct), {dataset}, {variant}", roles)
    abl_fig = fig_ablation(curves(abl_df, confidence), roles) if len(abl_df) else None
    if abl_fig is not None:
        rep.figures["ablations"] = abl_fig
    if fig2:
        steps = step_records(store_or_url, df, max_fig2_runs_per_pair)
        summ = prm_summary(steps, tau)
        rep.tables["prm_steps"] = steps
        rep.tables["prm_summary"] = summ
        if len(summ):
            rep.figures["prm_analysis"] = fig_prm(steps, summ, roles, tau)
            rows = [[_pair_name(r.pair, roles), r.score_kind, r.label_kind, r.n_steps, f"{100 * r.share_correct:.1f}",
                     f"{100 * r.accuracy:.1f} [{100 * r.acc_lo:.1f}, {100 * r.acc_hi:.1f}]", f"{r.auroc:.3f}",
                     f"{r.mean_score_correct:.3f} / {r.mean_score_wrong:.3f}",
                     "–" if math.isnan(r.var_median) else f"{r.var_median:.2e}",
                     "–" if math.isnan(r.var_median) else f"{r.var_median_correct:.2e} / {r.var_median_wrong:.2e}",
                     "–" if math.isnan(r.share_var_over_tau) else f"{100 * r.share_var_over_tau:.1f}",
                     "–" if math.isnan(r.share_std_over_tau) else f"{100 * r.share_std_over_tau:.1f}"]
                    for r in summ.itertuples()]
            rep.markdown["Figure 2 analysis: PRM on each pair's steps"] = (
                f"Step labels from the exact checker (arith) or the graded answer (elsewhere, terminal nodes only); "
                f"accuracy = score ≥ 0.5 agrees with the label, Wilson 95% interval; σ² of the K0 initial MC passes; "
                f"τ = {tau:g}.\n\n" + markdown_table(
                    ["pair", "score", "labels", "steps", "% correct steps", "accuracy % [95%]", "AUROC",
                     "mean score correct / wrong", "median σ²", "median σ² correct / wrong", "% σ² > τ", "% σ > τ"], rows))
    return rep


def write_report(rep: Report, out_dir: str | Path, *, png: bool = True) -> list[Path]:
    """report.html (offline, plotly.js inlined once), <figure>.png (kaleido; skipped with a warning when no
    browser is available), tables.md and CSVs. Returns the files written."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    md = out / "tables.md"
    md.write_text(rep.summary_markdown(), encoding="utf-8")
    written.append(md)
    for name in ("results", "curves", "table4", "pass_table4", "paired_differences", "prm_summary"):
        t = rep.tables.get(name)
        if t is not None and len(t):
            p = out / f"{name}.csv"
            t.to_csv(p, index=False)
            written.append(p)
    html = ["<!doctype html><html><head><meta charset='utf-8'><title>UATS Studio evaluation report</title>",
            "<style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse}td,th{border:1px solid #ccc;"
            "padding:2px 6px}</style></head><body><h1>UATS Studio evaluation report</h1><ul>"]
    html += [f"<li>{_esc(n)}</li>" for n in rep.notes] + ["</ul>"]
    first = True
    for name, fig in rep.figures.items():
        html.append(f"<h2>{_esc(name)}</h2>")
        # plotly.js inline once (offline, no CDN); later figures reuse it
        html.append(fig.to_html(full_html=False, include_plotlyjs=first))
        first = False
    for name, text in rep.markdown.items():
        html.append(f"<h2>{_esc(name)}</h2>" + _md_to_html(text))
    html.append("</body></html>")
    page = out / "report.html"
    page.write_text("\n".join(html), encoding="utf-8")
    written.append(page)
    if png and rep.figures:
        written += _write_pngs(rep.figures, out)
    return written


def _write_pngs(figures: dict[str, Any], out: Path) -> list[Path]:
    import shutil

    if not any(shutil.which(b) for b in ("chromium", "chromium-browser", "google-chrome", "chrome")):
        log.warning("no Chromium/Chrome found: PNG export skipped (apt-get install -y chromium); report.html has every figure")
        return []
    written = []
    for noisy in ("choreographer", "kaleido"):  # they log every browser step at INFO
        logging.getLogger(noisy).setLevel(logging.WARNING)
    try:
        import kaleido

        try:
            kaleido.start_sync_server(silence_warnings=True)  # one browser for all figures (≈0.3 s each, not 5 s)
            started = True
        except Exception:  # older kaleido, or a server already running
            started = False
        try:
            import warnings

            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                for name, fig in figures.items():
                    p = out / f"{name}.png"
                    fig.write_image(str(p), scale=1.5)
                    written.append(p)
        finally:
            if started:
                kaleido.stop_sync_server(silence_warnings=True)
    except Exception as exc:  # a missing or broken browser must not lose the rest of the report
        log.warning("PNG export failed (%s: %s); report.html has every figure", type(exc).__name__, exc)
    return written


def _esc(text: str) -> str:
    import html

    return html.escape(str(text))


def _md_to_html(text: str) -> str:
    """Our Markdown is paragraphs and pipe tables only."""
    out, table = [], []
    for line in text.splitlines() + [""]:
        if line.startswith("|"):
            if not set(line.replace("|", "").strip()) <= {"-"} or not line.replace("|", "").strip():
                table.append([c.strip() for c in line.strip().strip("|").split("|")])
            continue
        if table:
            head, *body = table
            out.append("<table><tr>" + "".join(f"<th>{_esc(c)}</th>" for c in head) + "</tr>"
                       + "".join("<tr>" + "".join(f"<td>{_esc(c)}</td>" for c in r) + "</tr>" for r in body) + "</table>")
            table = []
        if line.strip():
            out.append(f"<p>{_esc(line)}</p>")
    return "\n".join(out)


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m uats_core.report", description="figures and tables of an evaluation run log")
    p.add_argument("--db", default="runs/eval.db", help="SQLite path or SQLAlchemy URL")
    p.add_argument("--out", default="runs/reports", help="folder for report.html, PNGs, tables.md and CSVs")
    p.add_argument("--all-problems", action="store_true",
                   help="use every finished cell, even where a problem is not finished for all methods/budgets/seeds")
    p.add_argument("--no-png", action="store_true", help="skip the PNG export")
    p.add_argument("--no-fig2", action="store_true", help="skip the Figure 2 node analysis (the slow part on big logs)")
    p.add_argument("--fig2-runs", type=int, default=600, help="runs per pair read for the Figure 2 analysis")
    p.add_argument("--methods", help="comma list: report only these methods")
    p.add_argument("--pairs", help="comma list: report only these pairs")
    p.add_argument("-v", "--verbose", action="store_true")
    args = p.parse_args(argv)
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    logging.getLogger("choreographer").setLevel(logging.WARNING)
    logging.getLogger("kaleido").setLevel(logging.WARNING)
    try:
        from storage import RunStore

        if "://" not in args.db and not Path(args.db).exists():
            raise ValueError(f"db: no database at {args.db!r}; run python -m uats_core.eval first")
        store = RunStore(args.db)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    split = lambda text: [x.strip() for x in text.split(",") if x.strip()] if text else None  # noqa: E731
    rep = build_report(store, common_problems=not args.all_problems, fig2=not args.no_fig2,
                       max_fig2_runs_per_pair=args.fig2_runs, methods=split(args.methods), pairs=split(args.pairs))
    files = write_report(rep, args.out, png=not args.no_png)
    print(rep.summary_markdown())
    print("wrote " + ", ".join(str(f) for f in files))
    return 0


if __name__ == "__main__":
    sys.exit(main())
