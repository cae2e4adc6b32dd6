"""The report's plotly figures: accuracy (and Pass@N) against N or compute, the Figure 2 PRM analysis, and
the ablations. Plotly is imported when a figure is drawn, so the tables alone never need it."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from uats_core.methods import uncertainty_methods

from .stats import method_key, shown_half
from .tables import pair_name

COLORS = {
    "best-of-n": "#7f7f7f",
    "beam": "#1f77b4",
    "dvts": "#17becf",
    "rebase": "#2ca02c",
    "dora": "#bcbd22",
    "h-uats": "#d62728",
    "a-uats": "#9467bd",
}


def _go() -> Any:
    import plotly.graph_objects as go

    return go


def fig_curves(
    cur: pd.DataFrame,
    x: str,
    y: str,
    title: str,
    roles: dict[str, str],
    log_x: bool = True,
    dashed_extra: str | None = None,
) -> Any:
    """Facets by pair; a line per method with 95% error bars; optional dashed second metric (Pass@N)."""
    from plotly.subplots import make_subplots

    go = _go()
    pairs = list(dict.fromkeys(cur["pair"]))
    fig = make_subplots(
        rows=1,
        cols=max(1, len(pairs)),
        subplot_titles=[pair_name(p, roles) for p in pairs],
        shared_yaxes=True,
        horizontal_spacing=0.06,
    )
    for j, pair in enumerate(pairs, 1):
        g = cur[cur["pair"] == pair]
        for method in sorted(g["method"].unique(), key=method_key):
            h = g[g["method"] == method].sort_values("budget")
            color = COLORS.get(method)
            custom = np.stack([h["budget"], h["n_problems"], h["n_seeds"], h["cost"]], axis=1)
            hover = (
                "%{fullData.name}<br>N=%{customdata[0]}<br>" + y + "=%{y:.3f}<br>cost=%{customdata[3]:.0f}"
                "<br>%{customdata[1]} problems × %{customdata[2]} seeds<extra></extra>"
            )
            fig.add_trace(
                go.Scatter(
                    x=h[x],
                    y=h[y],
                    mode="lines+markers",
                    name=method,
                    legendgroup=method,
                    showlegend=j == 1,
                    line=dict(color=color),
                    error_y=dict(type="data", array=shown_half(h[y + "_half"], h["n_seeds"]).fillna(0), visible=True),
                    customdata=custom,
                    hovertemplate=hover,
                ),
                row=1,
                col=j,
            )
            if dashed_extra:
                fig.add_trace(
                    go.Scatter(
                        x=h[x],
                        y=h[dashed_extra],
                        mode="lines",
                        name=f"{method} Pass@N",
                        legendgroup=method,
                        showlegend=False,
                        line=dict(color=color, dash="dot"),
                        hovertemplate=f"{method} Pass@N=%{{y:.3f}}<extra></extra>",
                    ),
                    row=1,
                    col=j,
                )
        fig.update_xaxes(
            type="log" if log_x else "linear",
            title_text="N (budget)" if x == "budget" else "compute spent",
            row=1,
            col=j,
        )
    fig.update_yaxes(title_text={"acc": "accuracy", "pass_at_n": "Pass@N"}.get(y, y), row=1, col=1)
    if y in ("acc", "pass_at_n", "naive"):
        fig.update_yaxes(range=[0, 1.02])  # a wide interval (few seeds) must not squash the curves
    if x == "budget" and len(cur):
        budgets = sorted(cur["budget"].unique())
        fig.update_xaxes(tickvals=budgets, ticktext=[str(b) for b in budgets])
    fig.update_layout(
        title=title,
        template="plotly_white",
        height=480,
        width=max(620, 460 * len(pairs)),
        margin=dict(t=110),  # the title's second line (what the curves cover)
        legend=dict(orientation="h", y=-0.18),
    )
    return fig


def fig_prm(steps: pd.DataFrame, summary: pd.DataFrame, roles: dict[str, str], tau: float) -> Any:
    from plotly.subplots import make_subplots

    go = _go()
    fig = make_subplots(
        rows=1,
        cols=3,
        subplot_titles=(
            "PRM step accuracy (score ≥ 0.5) and AUROC",
            "MC variance σ² of the K0 initial passes",
            "σ² by step correctness",
        ),
        horizontal_spacing=0.08,
    )
    palette = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b"]
    pairs = list(dict.fromkeys(summary["pair"])) if len(summary) else []
    for i, pair in enumerate(pairs):
        color = palette[i % len(palette)]
        name = pair_name(pair, roles)
        s = summary[summary["pair"] == pair]
        fig.add_trace(
            go.Bar(
                x=[f"acc · {k.split(' ')[0]}" for k in s["score_kind"]]
                + [f"AUROC · {k.split(' ')[0]}" for k in s["score_kind"]],
                y=list(s["accuracy"]) + list(s["auroc"]),
                name=name,
                marker_color=color,
                legendgroup=pair,
                error_y=dict(
                    type="data",
                    symmetric=False,
                    array=list(s["acc_hi"] - s["accuracy"]) + [None] * len(s),
                    arrayminus=list(s["accuracy"] - s["acc_lo"]) + [None] * len(s),
                ),
                hovertemplate="%{x}: %{y:.3f}<extra>" + name + "</extra>",
            ),
            row=1,
            col=1,
        )
        v = steps[(steps["pair"] == pair) & steps["var0"].notna()]
        if len(v):
            logv = np.log10(v["var0"].clip(lower=1e-12))
            fig.add_trace(
                go.Histogram(
                    x=logv,
                    name=name,
                    marker_color=color,
                    opacity=0.55,
                    histnorm="probability",
                    nbinsx=50,
                    legendgroup=pair,
                    showlegend=False,
                    hovertemplate="log10 σ²=%{x}<br>share=%{y:.3f}<extra>" + name + "</extra>",
                ),
                row=1,
                col=2,
            )
            for ok, label in ((True, "correct"), (False, "wrong")):
                w = v[v["correct"] == ok]
                if len(w):
                    fig.add_trace(
                        go.Box(
                            y=np.log10(w["var0"].clip(lower=1e-12)),
                            x=[f"{pair} {label}"] * len(w),
                            name=name,
                            marker_color=color,
                            legendgroup=pair,
                            showlegend=False,
                            boxpoints=False,
                        ),
                        row=1,
                        col=3,
                    )
    fig.add_vline(
        x=math.log10(tau),
        line_dash="dash",
        line_color="black",
        row=1,
        col=2,
        annotation_text=f"τ={tau:g}",
        annotation_position="bottom right",
    )
    # Grouped bars: the two pairs' histogram bins stand side by side instead of hiding each other.
    fig.update_layout(
        barmode="group",
        template="plotly_white",
        height=460,
        width=1400,
        title="Figure 2 analysis: PRM reliability and MC-dropout variance per policy/PRM pair",
        legend=dict(orientation="h", y=-0.2),
    )
    fig.update_xaxes(title_text="log10 σ²", row=1, col=2)
    fig.update_yaxes(title_text="log10 σ²", row=1, col=3)
    fig.update_yaxes(range=[0, 1.05], row=1, col=1)
    return fig


def fig_ablation(cur: pd.DataFrame, roles: dict[str, str]) -> Any | None:
    from plotly.subplots import make_subplots

    g = cur[cur["method"].isin(uncertainty_methods())]
    if g.empty or set(g["variant"]) == {"base"}:
        return None
    go = _go()
    pairs = list(dict.fromkeys(g["pair"]))
    fig = make_subplots(rows=1, cols=len(pairs), subplot_titles=[pair_name(p, roles) for p in pairs], shared_yaxes=True)
    dashes = ["solid", "dash", "dot", "dashdot", "longdash", "longdashdot"]
    variants = sorted(g["variant"].unique(), key=lambda v: (v != "base", v))
    for j, pair in enumerate(pairs, 1):
        for method in sorted(g["method"].unique(), key=method_key):
            for i, v in enumerate(variants):
                h = g[(g["pair"] == pair) & (g["method"] == method) & (g["variant"] == v)].sort_values("budget")
                if h.empty:
                    continue
                fig.add_trace(
                    go.Scatter(
                        x=h["budget"],
                        y=h["acc"],
                        mode="lines+markers",
                        name=f"{method} {v}",
                        legendgroup=f"{method} {v}",
                        showlegend=j == 1,
                        line=dict(color=COLORS.get(method), dash=dashes[i % len(dashes)]),
                        error_y=dict(
                            type="data", visible=True, array=shown_half(h["acc_half"], h["n_seeds"]).fillna(0)
                        ),
                    ),
                    row=1,
                    col=j,
                )
        fig.update_xaxes(type="log", title_text="N (budget)", row=1, col=j)
    fig.update_yaxes(title_text="accuracy", row=1, col=1)
    fig.update_layout(
        title="Ablations (UATS methods): accuracy vs N per variant",
        template="plotly_white",
        height=460,
        width=max(620, 460 * len(pairs)),
        legend=dict(orientation="h", y=-0.2),
    )
    return fig
