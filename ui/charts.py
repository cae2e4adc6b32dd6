"""Plotly figure dicts beside the tree: the inspector's sibling boxplots (the paper's Figure 1), the
per-iteration cost chart, the knobs a UATS run used per step, and A-UATS training curves."""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from uats_core.records import StepInfo

from .figstyle import OOD_COLOUR, colour_for, fmt_number
from .treedata import TreeState


# ------------------------------------------------------------------------------------------ inspector
def inspector_figure(state: TreeState, node_id: int, *, colour_range: tuple[float, float] = (0.0, 1.0),
                     step_truth: Mapping[int, bool | None] | None = None, height: int = 460) -> dict[str, Any]:
    """The paper's Figure 1 for one node: the node and its siblings, each a boxplot of its MC-dropout
    scores with R̄ and σ² printed (and the logits' σ² when the gate reads logits); below, the gated statistic
    (σ² by default) against the τ threshold."""
    cmin, cmax = colour_range
    sibs = [s for s in state.siblings(node_id) if s != 0]
    gate = state.gate
    tau = gate.tau
    gated = {s: gate.statistic(state.nodes[s]) or 0.0 for s in sibs}
    step_truth = step_truth or {}
    labels = []
    data: list[dict[str, Any]] = []
    annotations: list[dict[str, Any]] = []
    for s in sibs:
        n = state.nodes[s]
        truth = step_truth.get(s)
        tag = {True: " ✓", False: " ✗"}.get(truth, "")
        label = f"#{s}{tag}" + (" ◀" if s == node_id else "")
        labels.append(label)
        scores = list(n.get("mc_scores") or [])
        colour = colour_for(n.get("mean"), cmin, cmax)
        data.append({"type": "box", "y": [round(v, 5) for v in scores], "x": [label] * len(scores), "name": label,
                     "boxpoints": "all", "jitter": 0.35, "pointpos": 0, "boxmean": True,
                     "marker": {"size": 4, "color": "#333"}, "fillcolor": colour,
                     "line": {"color": "#555", "width": 1.2},
                     "xaxis": "x", "yaxis": "y", "showlegend": False,
                     "hovertemplate": f"node {s}<br>pass %{{y:.4f}}<extra></extra>"})
        ood = gate.shown(n)
        logit_line = f"<br>σ²ℓ={fmt_number(n.get('logit_var'), 3)}" if gate.space == "logit" else ""
        annotations.append({"x": label, "y": 1.01, "xref": "x", "yref": "y", "yanchor": "bottom", "showarrow": False,
                            "text": f"R̄={fmt_number(n.get('mean'))}<br>σ²={fmt_number(n.get('var'), 4)}{logit_line}<br>K={len(scores)}",
                            "font": {"size": 11, "color": OOD_COLOUR if ood else "#222"}})
    data.append({"type": "bar", "x": labels, "y": [gated[s] for s in sibs],
                 "marker": {"color": [OOD_COLOUR if gate.shown(state.nodes[s]) else "#9e9e9e" for s in sibs]},
                 "xaxis": "x2", "yaxis": "y2", "showlegend": False, "name": gate.label,
                 "hovertemplate": f"%{{x}}: {gate.label} %{{y:.5f}}<extra></extra>"})
    parent = state.nodes[node_id].get("parent_id")
    title = f"node {node_id} and its {len(sibs) - 1} sibling(s) (children of {'the question' if parent == 0 else f'node {parent}'})"
    layout = {
        # the title sits just above the plot, under the band where Plotly's toolbar appears on hover (top right)
        "height": height, "margin": {"l": 50, "r": 10, "t": 58, "b": 30},
        "title": {"text": title, "font": {"size": 13}, "x": 0.01, "xanchor": "left", "y": 1.0, "yref": "paper",
                  "yanchor": "bottom", "pad": {"b": 6}},
        "grid": {"rows": 2, "columns": 1},
        "xaxis": {"domain": [0, 1], "anchor": "y", "type": "category", "showticklabels": False},
        # the range runs past 1 so the printed R̄/σ²/K above each box stay inside the plot
        "yaxis": {"domain": [0.36, 1.0], "range": [-0.02, 1.2], "title": {"text": "MC-dropout score"},
                  "tickvals": [0, 0.2, 0.4, 0.6, 0.8, 1.0]},
        "xaxis2": {"domain": [0, 1], "anchor": "y2", "type": "category"},
        "yaxis2": {"domain": [0.0, 0.27], "title": {"text": gate.label}, "rangemode": "tozero"},
        "shapes": [{"type": "line", "xref": "paper", "x0": 0, "x1": 1, "yref": "y2", "y0": tau, "y1": tau,
                    "line": {"color": OOD_COLOUR, "dash": "dash", "width": 1.5}},
                   # a band behind the inspected node's box and bar (category axes take index positions)
                   {"type": "rect", "xref": "x", "yref": "paper", "x0": sibs.index(node_id) - 0.5,
                    "x1": sibs.index(node_id) + 0.5, "y0": 0, "y1": 1, "layer": "below", "line": {"width": 0},
                    "fillcolor": "rgba(255, 200, 0, 0.18)"} if node_id in sibs else None],
        "annotations": annotations + [{"xref": "paper", "x": 1.0, "yref": "y2", "y": tau, "xanchor": "right",
                                       "yanchor": "bottom", "showarrow": False, "text": f"τ = {tau:g}",
                                       "font": {"color": OOD_COLOUR, "size": 11}}],
        "showlegend": False, "plot_bgcolor": "white", "paper_bgcolor": "white",
    }
    layout["shapes"] = [sh for sh in layout["shapes"] if sh]
    layout["yaxis2"]["range"] = [0, max([tau * 1.6] + [gated[s] * 1.15 for s in sibs])]
    return {"data": data, "layout": layout, "config": {"displaylogo": False, "responsive": True},
            "meta": {"node_id": node_id, "siblings": sibs}}


def cost_figure(iterations: Sequence[Mapping[str, Any]], current: int | None = None, height: int = 200,
                others: Sequence[tuple[str, Sequence[Mapping[str, Any]]]] = ()) -> dict[str, Any]:
    """Cost spent per iteration (bars) and in total (line); `others` adds more runs' totals for compare."""
    data: list[dict[str, Any]] = []
    if iterations:
        its = [int(i["iteration"]) for i in iterations]
        data.append({"type": "bar", "x": its, "y": [i["cost_step"] for i in iterations], "name": "cost this step",
                     "marker": {"color": "#9ecae1"}})
        data.append({"type": "scatter", "mode": "lines+markers", "x": its, "y": [i["cost_total"] for i in iterations],
                     "name": "cost so far", "yaxis": "y2", "line": {"color": "#08519c"}})
    for name, rows in others:
        data.append({"type": "scatter", "mode": "lines", "x": [int(i["iteration"]) for i in rows],
                     "y": [i["cost_total"] for i in rows], "name": name, "yaxis": "y2"})
    shapes = []
    if current:
        shapes.append({"type": "line", "x0": current, "x1": current, "yref": "paper", "y0": 0, "y1": 1,
                       "line": {"color": "#f0a500", "width": 2}})
    layout = {"height": height, "margin": {"l": 50, "r": 50, "t": 10, "b": 30}, "barmode": "overlay",
              "uirevision": "cost",
              "xaxis": {"title": {"text": "iteration"}}, "yaxis": {"title": {"text": "step"}},
              "yaxis2": {"overlaying": "y", "side": "right", "title": {"text": "total"}, "rangemode": "tozero"},
              "legend": {"orientation": "h", "y": 1.1}, "shapes": shapes, "plot_bgcolor": "white"}
    return {"data": data, "layout": layout, "config": {"displaylogo": False, "responsive": True}, "meta": {}}


KNOB_LABELS = (("beta", "β (re-eval budget scale)"), ("gamma", "γ (expansion budget scale)"), ("tau", "τ (OOD threshold)"),
               ("delta", "δ (re-eval margin)"), ("nu1", "ν1 (re-eval softmax)"), ("nu2", "ν2 (children softmax)"))


def knobs_figure(iterations: Sequence[Mapping[str, Any]], height: int = 330) -> dict[str, Any] | None:
    """The knobs a UATS run used at each step against depth, each marker coloured by the step's
    uncertainty (max σ over the candidates): A-UATS's controller choices, or H-UATS's constants. None for
    runs without knobs (the baselines)."""
    budgets = [(int(i["iteration"]), StepInfo.from_dict(i.get("budget") or {})) for i in iterations]
    # steps that set all six knobs (UATS); other runs' steps may carry some (τ, δ) for the OOD gate alone
    rows = [(t, b.knobs, b.state or {}) for t, b in budgets if b.knobs and all(n in b.knobs for n, _ in KNOB_LABELS)]
    if not rows:
        return None
    sig = [float(s.get("max_sigma")) if s.get("max_sigma") is not None else None for _, _, s in rows]
    known = [s for s in sig if s is not None]
    smax = max(known) if known else 1.0
    data: list[dict[str, Any]] = []
    layout: dict[str, Any] = {"height": height, "margin": {"l": 50, "r": 70, "t": 30, "b": 40}, "showlegend": False,
                              "plot_bgcolor": "white", "uirevision": "knobs", "annotations": []}
    for j, (name, label) in enumerate(KNOB_LABELS):
        ax = "" if j == 0 else str(j + 1)
        col, row = j % 3, j // 3
        x0, x1 = col / 3 + 0.04, (col + 1) / 3 - 0.04
        y0, y1 = (0.0, 0.38) if row else (0.58, 0.96)
        layout[f"xaxis{ax}"] = {"domain": [x0, x1], "anchor": f"y{ax}", "title": {"text": "depth t" if row else ""},
                                "dtick": 1 if len(rows) <= 12 else None, "gridcolor": "#eee"}
        layout[f"yaxis{ax}"] = {"domain": [y0, y1], "anchor": f"x{ax}", "gridcolor": "#eee",
                                "type": "log" if name == "tau" else "linear", "exponentformat": "e" if name == "tau" else None}
        layout["annotations"].append({"text": label, "x": (x0 + x1) / 2, "y": y1 + 0.02, "xref": "paper", "yref": "paper",
                                      "showarrow": False, "font": {"size": 11}, "xanchor": "center", "yanchor": "bottom"})
        marker: dict[str, Any] = {"size": 8, "color": [s if s is not None else 0.0 for s in sig], "colorscale": "Viridis",
                                  "cmin": 0.0, "cmax": smax or 1.0}
        if j == 2:
            marker["colorbar"] = {"title": {"text": "max σ"}, "len": 0.9, "thickness": 10, "x": 1.02}
            marker["showscale"] = True
        data.append({"type": "scatter", "mode": "lines+markers", "x": [t for t, _, _ in rows],
                     "y": [float(k[name]) for _, k, _ in rows], "xaxis": f"x{ax}", "yaxis": f"y{ax}", "name": name,
                     "line": {"color": "#bbbbbb", "width": 1}, "marker": marker,
                     "customdata": [[f"{s:.4f}" if s is not None else "n/a (first step: config values)"] for s in sig],
                     "hovertemplate": f"t=%{{x}}<br>{name}=%{{y:.4g}}<br>max σ=%{{customdata[0]}}<extra></extra>"})
    return {"data": data, "layout": layout, "config": {"displaylogo": False, "responsive": True}, "meta": {"knobs": len(rows)}}


CURVE_SERIES = (("mean_reward", "mean reward", "#1b9e77"), ("accuracy", "accuracy", "#7570b3"),
                ("mean_cost", "mean cost spent", "#d95f02"))


def training_curve_figure(rows: Sequence[Mapping[str, Any]], window: int = 20, height: int = 360) -> dict[str, Any] | None:
    """A-UATS controller training: mean reward, accuracy and cost per REINFORCE round (faint) with their
    trailing `window`-round mean (solid) — single rounds are 10 searches of one problem, too noisy to read
    alone. None when there are no rows."""
    rows = [r for r in rows if r.get("round", r.get("step")) is not None]
    if not rows:
        return None
    x = [int(r.get("round", r.get("step"))) for r in rows]
    data: list[dict[str, Any]] = []
    for j, (key, label, colour) in enumerate(CURVE_SERIES):
        y = [float(r[key]) if r.get(key) is not None else None for r in rows]
        ax = "" if j == 0 else str(j + 1)
        smooth, acc = [], []
        for v in y:
            if v is not None:
                acc.append(v)
            tail = acc[-window:]
            smooth.append(sum(tail) / len(tail) if tail else None)
        data.append({"type": "scatter", "mode": "markers", "x": x, "y": y, "xaxis": f"x{ax}", "yaxis": f"y{ax}",
                     "marker": {"size": 3, "color": colour, "opacity": 0.3}, "name": f"{label} (round)",
                     "showlegend": False})
        data.append({"type": "scatter", "mode": "lines", "x": x, "y": smooth, "xaxis": f"x{ax}", "yaxis": f"y{ax}",
                     "line": {"color": colour, "width": 2}, "name": f"{label}, {window}-round mean"})
    layout: dict[str, Any] = {"height": height, "margin": {"l": 60, "r": 20, "t": 30, "b": 40}, "plot_bgcolor": "white",
                              "legend": {"orientation": "h", "y": 1.12}, "uirevision": "curve"}
    for j, (_, label, _) in enumerate(CURVE_SERIES):
        ax = "" if j == 0 else str(j + 1)
        lo, hi = 1 - (j + 1) / 3 + 0.04, 1 - j / 3 - 0.03
        layout[f"xaxis{ax}"] = {"anchor": f"y{ax}", "matches": "x" if j else None, "gridcolor": "#eee",
                                "showticklabels": j == 2, "title": {"text": "REINFORCE round" if j == 2 else ""}}
        layout[f"yaxis{ax}"] = {"domain": [lo, hi], "anchor": f"x{ax}", "gridcolor": "#eee", "title": {"text": label}}
    return {"data": data, "layout": layout, "config": {"displaylogo": False, "responsive": True},
            "meta": {"rounds": len(rows)}}
