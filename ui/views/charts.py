"""Plotly figure dicts beside the tree: the per-iteration cost chart, the knobs a UATS run used per step,
and A-UATS training curves (the inspector's Figure 1 is ui/views/figure1.py)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from uats_core.records import StepInfo


def cost_figure(
    iterations: Sequence[Mapping[str, Any]],
    current: int | None = None,
    height: int = 238,  # a plot area of 160 px between the legend's row and the iterations' axis
    others: Sequence[tuple[str, Sequence[Mapping[str, Any]]]] = (),
) -> dict[str, Any]:
    """Cost spent per iteration (bars) and in total (line); `others` adds more runs' totals for compare."""
    data: list[dict[str, Any]] = []
    if iterations:
        its = [int(i["iteration"]) for i in iterations]
        data.append(
            {
                "type": "bar",
                "x": its,
                "y": [i["cost_step"] for i in iterations],
                "name": "cost this iteration",
                "marker": {"color": "#9ecae1"},
            }
        )
        data.append(
            {
                "type": "scatter",
                "mode": "lines+markers",
                "x": its,
                "y": [i["cost_total"] for i in iterations],
                "name": "cost so far",
                "yaxis": "y2",
                "line": {"color": "#08519c"},
            }
        )
    for name, rows in others:
        data.append(
            {
                "type": "scatter",
                "mode": "lines",
                "x": [int(i["iteration"]) for i in rows],
                "y": [i["cost_total"] for i in rows],
                "name": name,
                "yaxis": "y2",
            }
        )
    shapes = []
    if current:
        shapes.append(
            {
                "type": "line",
                "x0": current,
                "x1": current,
                "yref": "paper",
                "y0": 0,
                "y1": 1,
                "line": {"color": "#f0a500", "width": 2},
            }
        )
    layout = {
        "height": height,
        # the legend in a row of its own above the plot area (at y 1.1 in a 10 px margin its box covered the tallest
        # bars' tops, which then read as shorter), and room for the axes' titles beside their tick labels
        "margin": {"l": 50, "r": 72, "t": 34, "b": 44},
        "barmode": "overlay",
        "uirevision": "cost",
        # the bars are the cost of one iteration (named "step", it read as a tree step), the line the sum
        "xaxis": {"title": {"text": "iteration"}},
        "yaxis": {"title": {"text": "cost per iteration"}, "rangemode": "tozero"},
        "yaxis2": {"overlaying": "y", "side": "right", "title": {"text": "cost so far"}, "rangemode": "tozero"},
        "legend": {"orientation": "h", "x": 0, "xanchor": "left", "y": 1, "yanchor": "bottom"},
        "shapes": shapes,
        "plot_bgcolor": "white",
    }
    return {"data": data, "layout": layout, "config": {"displaylogo": False, "responsive": True}, "meta": {}}


KNOB_LABELS = (
    ("beta", "β (re-evaluation passes scale)"),
    ("gamma", "γ (width scale)"),
    ("tau", "τ (OOD threshold)"),
    ("delta", "δ (re-eval margin)"),
    ("nu1", "ν1 (re-eval softmax)"),
    ("nu2", "ν2 (children softmax)"),
)


def knobs_figure(iterations: Sequence[Mapping[str, Any]], height: int = 330) -> dict[str, Any] | None:
    """The knobs a UATS run used at each step against depth, each marker coloured by the step's
    uncertainty (max σ over the candidates): A-UATS's controller choices, or H-UATS's constants. None for
    runs without knobs (the baselines)."""
    steps = [(int(i["iteration"]), StepInfo.from_dict(i.get("step_info") or {})) for i in iterations]
    # steps that set all six knobs (UATS); other runs' steps may carry some (τ, δ) for the OOD gate alone
    rows = [(t, b.knobs, b.state or {}) for t, b in steps if b.knobs and all(n in b.knobs for n, _ in KNOB_LABELS)]
    if not rows:
        return None
    sig = [float(s.get("max_sigma")) if s.get("max_sigma") is not None else None for _, _, s in rows]
    known = [s for s in sig if s is not None]
    smax = max(known) if known else 1.0
    data: list[dict[str, Any]] = []
    layout: dict[str, Any] = {
        "height": height,
        "margin": {"l": 50, "r": 70, "t": 30, "b": 40},
        "showlegend": False,
        "plot_bgcolor": "white",
        "uirevision": "knobs",
        "annotations": [],
    }
    for j, (name, label) in enumerate(KNOB_LABELS):
        ax = "" if j == 0 else str(j + 1)
        col, row = j % 3, j // 3
        x0, x1 = col / 3 + 0.04, (col + 1) / 3 - 0.04
        y0, y1 = (0.0, 0.38) if row else (0.58, 0.96)
        layout[f"xaxis{ax}"] = {
            "domain": [x0, x1],
            "anchor": f"y{ax}",
            "title": {"text": "depth t" if row else ""},
            "dtick": 1 if len(rows) <= 12 else None,
            "gridcolor": "#eee",
        }
        layout[f"yaxis{ax}"] = {
            "domain": [y0, y1],
            "anchor": f"x{ax}",
            "gridcolor": "#eee",
            "type": "log" if name == "tau" else "linear",
            "exponentformat": "e" if name == "tau" else None,
        }
        layout["annotations"].append(
            {
                "text": label,
                "x": (x0 + x1) / 2,
                "y": y1 + 0.02,
                "xref": "paper",
                "yref": "paper",
                "showarrow": False,
                "font": {"size": 11},
                "xanchor": "center",
                "yanchor": "bottom",
            }
        )
        marker: dict[str, Any] = {
            "size": 8,
            "color": [s if s is not None else 0.0 for s in sig],
            "colorscale": "Viridis",
            "cmin": 0.0,
            "cmax": smax or 1.0,
        }
        if j == 2:
            marker["colorbar"] = {"title": {"text": "max σ"}, "len": 0.9, "thickness": 10, "x": 1.02}
            marker["showscale"] = True
        data.append(
            {
                "type": "scatter",
                "mode": "lines+markers",
                "x": [t for t, _, _ in rows],
                "y": [float(k[name]) for _, k, _ in rows],
                "xaxis": f"x{ax}",
                "yaxis": f"y{ax}",
                "name": name,
                "line": {"color": "#bbbbbb", "width": 1},
                "marker": marker,
                "customdata": [[f"{s:.4f}" if s is not None else "n/a (first step: config values)"] for s in sig],
                "hovertemplate": f"t=%{{x}}<br>{name}=%{{y:.4g}}<br>max σ=%{{customdata[0]}}<extra></extra>",
            }
        )
    return {
        "data": data,
        "layout": layout,
        "config": {"displaylogo": False, "responsive": True},
        "meta": {"knobs": len(rows)},
    }


CURVE_SERIES = (
    ("mean_reward", "mean reward", "#1b9e77"),
    ("accuracy", "accuracy", "#7570b3"),
    ("mean_cost", "mean cost spent", "#d95f02"),
)


def training_curve_figure(
    rows: Sequence[Mapping[str, Any]], window: int = 20, height: int = 360
) -> dict[str, Any] | None:
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
        data.append(
            {
                "type": "scatter",
                "mode": "markers",
                "x": x,
                "y": y,
                "xaxis": f"x{ax}",
                "yaxis": f"y{ax}",
                "marker": {"size": 3, "color": colour, "opacity": 0.3},
                "name": f"{label} (round)",
                "showlegend": False,
            }
        )
        data.append(
            {
                "type": "scatter",
                "mode": "lines",
                "x": x,
                "y": smooth,
                "xaxis": f"x{ax}",
                "yaxis": f"y{ax}",
                "line": {"color": colour, "width": 2},
                "name": f"{label}, {window}-round mean",
            }
        )
    layout: dict[str, Any] = {
        "height": height,
        "margin": {"l": 60, "r": 20, "t": 30, "b": 40},
        "plot_bgcolor": "white",
        "legend": {"orientation": "h", "y": 1.12},
        "uirevision": "curve",
    }
    for j, (_, label, _) in enumerate(CURVE_SERIES):
        ax = "" if j == 0 else str(j + 1)
        lo, hi = 1 - (j + 1) / 3 + 0.04, 1 - j / 3 - 0.03
        layout[f"xaxis{ax}"] = {
            "anchor": f"y{ax}",
            "matches": "x" if j else None,
            "gridcolor": "#eee",
            "showticklabels": j == 2,
            "title": {"text": "REINFORCE round" if j == 2 else ""},
        }
        layout[f"yaxis{ax}"] = {"domain": [lo, hi], "anchor": f"x{ax}", "gridcolor": "#eee", "title": {"text": label}}
    return {
        "data": data,
        "layout": layout,
        "config": {"displaylogo": False, "responsive": True},
        "meta": {"rounds": len(rows)},
    }
