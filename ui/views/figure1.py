"""The paper's Figure 1 for one step: the candidates of the selected node's step (its parent's children)
side by side, each a boxplot of its MC-dropout passes with R̄ and σ² written above it; below, the gated
statistic the ID/OOD test read against τ, and the decision each candidate got (re-evaluated with extra
passes, children allocated, pruned, finished). The inspector shows it at panel size; the "Figure 1 view"
shows it large and exports it (PNG/SVG) as it is drawn."""

from __future__ import annotations

import math
from typing import Any, Mapping

from .decisions import gated_before
from .figstyle import OOD_COLOUR, WRONG_COLOUR, colour_for, fmt_number
from .treedata import TERMINAL, TreeState

MAX_CANDIDATES = 24  # above this many siblings the selected node and the best by R̄ are drawn (the title says so)
STAGGER_ABOVE = 12  # more candidates than this: every other column's R̄/σ²/K is printed one tier higher
TIER_PX = 44  # one tier: three lines of 11-12 px text
EXTRA_COLOUR = WRONG_COLOUR  # the passes a re-evaluation added
CAPTION = ("box: quartiles of the MC-dropout passes · whiskers: 1.5 IQR · ●: one pass (orange: added by "
           "re-evaluation) · red bar: R̄<br>bars: the σ² the ID/OOD test read (magenta: over τ, so OOD) · ◇: σ² after "
           "the extra passes<br>below them: what the step decided (re-eval +Kp: K extra passes, ×N: N children, "
           "✂: pruned, ·: not yet)")


def candidates_of(state: TreeState, node_id: int, limit: int = MAX_CANDIDATES) -> tuple[list[int], int]:
    """(the scored candidates drawn, best R̄ first, and how many the step had): the node and its siblings;
    above `limit`, the node and the best others."""
    sibs = [s for s in state.siblings(node_id) if s != 0 and state.nodes[s].get("mean") is not None]
    if node_id not in sibs and node_id in state.nodes and state.nodes[node_id].get("mean") is not None:
        sibs.append(node_id)
    ranked = sorted(sibs, key=lambda s: (-float(state.nodes[s]["mean"]), s))
    if len(ranked) > limit:
        ranked = sorted(([node_id] if node_id in ranked else []) + [s for s in ranked if s != node_id][:limit - 1],
                        key=lambda s: (-float(state.nodes[s]["mean"]), s))
    return ranked, len(sibs)


def decision_words(n: Mapping[str, Any], short: bool = False) -> str:
    """What the search decided about a candidate, in words (two short lines at most); `short`: in marks the
    caption explains (+Kp, ×N, ✂), for a wide step whose columns are ~30 px on a laptop."""
    extra, kids, status = int(n.get("extra_passes") or 0), int(n.get("children_granted") or 0), n.get("status")
    lines = [(f"+{extra}p" if short else f"re-eval +{extra}p")] if extra else []  # a column is ~70 px at 12 candidates
    mark = {True: " ✓", False: " ✗"}.get(n.get("correct"), "")
    if status in TERMINAL:
        lines.append(f"{n.get('answer')}{mark}" if short else f"{status}: {n.get('answer')}{mark}")
    elif status == "pruned":
        lines.append("✂" if short else "pruned")
    elif kids:
        lines.append(f"×{kids}" if short else f"×{kids} child" + ("ren" if kids > 1 else ""))
    else:
        words = ("·", "not decided yet") if status == "active" else ("×0", "no children")
        lines.append(words[0] if short else words[1])
    return "<br>".join(lines)


def score_floor(state: TreeState, cands: list[int]) -> float:
    """Where the score axis starts: at 0, unless every pass of the step sits high (a common case: all
    candidates between 0.7 and 1), then at the tenth below the lowest pass, so the boxes fill the plot
    instead of a sliver at its top (the axis's ticks say where it starts); it always spans 0.2 or more."""
    low = min((float(v) for s in cands for v in state.nodes[s].get("mc_scores") or ()), default=0.0)
    floor = math.floor((low - 0.02) * 10) / 10
    return 0.0 if floor < 0.3 else min(floor, 0.8)


def _jitter(k: int) -> float:
    """A fixed spread of a candidate's k-th pass across its box (the same figure every time)."""
    return ((k * 0.618034) % 1.0 - 0.5) * 0.36


def _dots(state: TreeState, cands: list[int]) -> list[dict[str, Any]]:
    """The passes as dots over each box: those of the first scoring dark, those re-evaluation added orange."""
    xs: dict[bool, list[float]] = {False: [], True: []}
    ys: dict[bool, list[float]] = {False: [], True: []}
    for i, s in enumerate(cands):
        n = state.nodes[s]
        scores = list(n.get("mc_scores") or [])
        first = len(scores) - int(n.get("extra_passes") or 0)
        for k, v in enumerate(scores):
            xs[k >= first].append(round(i + _jitter(k), 3))
            ys[k >= first].append(round(float(v), 4))
    out = []
    for extra, name, colour in ((False, "passes", "rgba(30,30,30,0.75)"), (True, "extra passes", EXTRA_COLOUR)):
        if xs[extra]:
            out.append({"type": "scatter", "mode": "markers", "x": xs[extra], "y": ys[extra], "name": name,
                        "marker": {"size": 5, "color": colour}, "xaxis": "x", "yaxis": "y", "showlegend": False,
                        "hovertemplate": f"{name[:-2]} %{{y:.4f}}<extra></extra>"})
    return out


def step_figure(state: TreeState, node_id: int, *, colour_range: tuple[float, float] = (0.0, 1.0),
                step_truth: Mapping[int, bool | None] | None = None, height: int = 460,
                width: int | None = None, title: str | None = None) -> dict[str, Any]:
    """The Figure 1 dict for node_id's step at `state`'s iteration; `step_truth`: each step right or wrong
    (✓/✗ beside its id); `width` fixes the size for an exported image (None: the page's width)."""
    cmin, cmax = colour_range
    cands, total = candidates_of(state, node_id)
    gate = state.gate
    tau = gate.tau
    truth = step_truth or {}
    data: list[dict[str, Any]] = []
    notes: list[dict[str, Any]] = []
    labels, decisions, before, after = [], [], [], []
    # ~62 px per column at 1280 px for 12 candidates: more would print their numbers over each other
    staggered = len(cands) > STAGGER_ABOVE
    floor = score_floor(state, cands)
    for i, s in enumerate(cands):
        n = state.nodes[s]
        scores = [round(float(v), 5) for v in n.get("mc_scores") or ()]
        data.append({"type": "box", "y": scores, "x": [i] * len(scores), "name": f"#{s}", "boxpoints": False,
                     "width": 0.56, "fillcolor": colour_for(n.get("mean"), cmin, cmax), "xaxis": "x", "yaxis": "y",
                     "line": {"color": "#555", "width": 1.2}, "showlegend": False, "hoverinfo": "y"})
        ood = gate.shown(n)
        logit = f"<br>σ²ℓ={fmt_number(n.get('logit_var'), 3)}" if gate.space == "logit" else ""
        notes.append({"x": i, "y": 1.0 + 0.01 * (1.0 - floor), "xref": "x", "yref": "y", "yanchor": "bottom",
                      "showarrow": False,
                      "text": f"R̄={fmt_number(n.get('mean'))}<br>σ²={fmt_number(n.get('var'), 4)}{logit}<br>K={len(scores)}",
                      "yshift": TIER_PX if staggered and i % 2 else 0,
                      "font": {"size": 11 if staggered else 12, "color": OOD_COLOUR if ood else "#222"}})
        right = {True: "✓", False: "✗"}.get(truth.get(s), "")
        mark = " ".join(m for m in (right, "◀" if s == node_id else "") if m)
        # on two lines in a wide step: one line would be tilted by Plotly and pull ◀ away from its id
        labels.append(f"#{s}" + (f"<br>{mark}" if staggered else f" {mark}" if mark else ""))
        decisions.append(decision_words(n, short=staggered))
        stat = gate.statistic(n)
        first = gated_before(n, gate) if int(n.get("extra_passes") or 0) else stat
        before.append(first if first is not None else 0.0)
        after.append(stat if int(n.get("extra_passes") or 0) else None)
    data += _dots(state, cands)
    data.append({"type": "scatter", "mode": "markers", "x": list(range(len(cands))), "name": "R̄",
                 "y": [round(float(state.nodes[s]["mean"]), 5) for s in cands], "xaxis": "x", "yaxis": "y",
                 # an open symbol is stroked in marker.color
                 "marker": {"symbol": "line-ew-open", "size": 16 if staggered else 30, "color": "#d62728",
                            "line": {"width": 3}},
                 "showlegend": False, "hovertemplate": "R̄ %{y:.4f}<extra></extra>"})
    data.append({"type": "bar", "x": list(range(len(cands))), "y": before, "xaxis": "x2", "yaxis": "y2",
                 "marker": {"color": [OOD_COLOUR if b is not None and b > tau else "#9e9e9e" for b in before]},
                 "width": 0.5, "showlegend": False, "name": gate.label,
                 "hovertemplate": f"{gate.label} the test read: %{{y:.5f}}<extra></extra>"})
    if any(a is not None for a in after):
        data.append({"type": "scatter", "mode": "markers", "x": list(range(len(cands))), "y": after, "xaxis": "x2",
                     "yaxis": "y2", "name": "after re-evaluation", "showlegend": False,
                     "marker": {"symbol": "diamond-open", "size": 11, "color": "#222", "line": {"width": 2}},
                     "hovertemplate": f"{gate.label} after the extra passes: %{{y:.5f}}<extra></extra>"})
    return {"data": data, "layout": _layout(state, node_id, cands, total, labels, decisions, notes, before, after,
                                            height, width, title, floor),
            "config": {"displaylogo": False, "responsive": True,
                       "toImageButtonOptions": {"format": "svg", "filename": f"figure1-node{node_id}"}},
            "meta": {"node_id": node_id, "siblings": cands, "candidates": total}}


def _layout(state: TreeState, node_id: int, cands: list[int], total: int, labels: list[str], decisions: list[str],
            notes: list[dict[str, Any]], before: list[float], after: list[float | None], height: int,
            width: int | None, title: str | None, floor: float) -> dict[str, Any]:
    gate, tau, n = state.gate, state.gate.tau, len(cands)
    span = 1.0 - floor
    step = 0.2 if span > 0.5 else 0.1 if span > 0.25 else 0.05
    ticks = [round(floor + k * step, 2) for k in range(int(round(span / step)) + 1)]
    head = 0.42 if gate.space == "logit" else 0.3  # room above 1 for the printed R̄ / σ² (/ σ²ℓ) / K
    parent = state.nodes[node_id].get("parent_id") if node_id in state.nodes else None
    if title is None:
        whose = "the question" if parent == 0 else f"node {parent}"
        shown = f"{n} candidates" if n == total else f"{n} of {total} candidates (the best by R̄)"
        title = f"Step {state.nodes[node_id].get('depth')}: {shown} after {whose}, iteration {state.iteration}"
    top = max([tau * 1.7] + [b * 1.18 for b in before] + [a * 1.18 for a in after if a is not None])
    sel = cands.index(node_id) if node_id in cands else None
    tier = TIER_PX if n > STAGGER_ABOVE else 0  # the top margin and the height grow by the second tier
    axis = {"range": [-0.5, n - 0.5], "tickmode": "array", "tickvals": list(range(n)), "zeroline": False,
            "showgrid": False, "fixedrange": True}
    layout: dict[str, Any] = {
        "height": height + tier, "margin": {"l": 64, "r": 70, "t": 44 + tier, "b": 98},
        "title": {"text": title, "font": {"size": 14}, "x": 0.01, "xanchor": "left", "yref": "container", "y": 1.0,
                  "yanchor": "top", "pad": {"t": 12}},
        "xaxis": {**axis, "domain": [0, 1], "anchor": "y", "ticktext": labels, "tickfont": {"size": 11 if tier else 12},
                  "tickangle": 0},
        # the range runs past 1 so the printed R̄ / σ² / K above each box stay inside the plot
        "yaxis": {"domain": [0.42, 1.0], "range": [floor - 0.02 * span, 1.0 + head * span],
                  "title": {"text": "MC-dropout score" + (f" (from {floor:g})" if floor else "")},
                  "tickvals": ticks, "gridcolor": "#eee", "fixedrange": True},
        "xaxis2": {**axis, "domain": [0, 1], "anchor": "y2", "ticktext": decisions, "tickfont": {"size": 10},
                   "tickangle": 0},
        "yaxis2": {"domain": [0.02, 0.28], "title": {"text": gate.label}, "range": [0, top], "nticks": 4,
                   "tickformat": ".2g", "gridcolor": "#eee", "fixedrange": True},
        "shapes": [{"type": "line", "xref": "paper", "x0": 0, "x1": 1, "yref": "y2", "y0": tau, "y1": tau,
                    "line": {"color": OOD_COLOUR, "dash": "dash", "width": 1.5}}],
        "annotations": notes + [
            {"xref": "paper", "x": 1.0, "xshift": 4, "yref": "y2", "y": tau, "xanchor": "left", "yanchor": "middle",
             "showarrow": False, "text": f"τ = {tau:g}", "font": {"color": OOD_COLOUR, "size": 12}},
            {"xref": "paper", "x": 0.0, "yref": "paper", "y": 0.0, "yshift": -46, "xanchor": "left",
             "yanchor": "top", "showarrow": False, "align": "left", "text": CAPTION,
             "font": {"size": 10, "color": "#555"}}],
        "showlegend": False, "plot_bgcolor": "white", "paper_bgcolor": "white", "bargap": 0.4,
    }
    if width is not None:
        layout["width"] = width
    if sel is not None:  # a band behind the inspected node's box, bar and decision
        layout["shapes"].append({"type": "rect", "xref": "x", "yref": "paper", "x0": sel - 0.5, "x1": sel + 0.5,
                                 "y0": 0, "y1": 1, "layer": "below", "line": {"width": 0},
                                 "fillcolor": "rgba(255, 200, 0, 0.18)"})
    return layout


def export_size(fig: dict[str, Any]) -> tuple[int, int]:
    """(width, height) for the figure as an image: wide enough for every candidate's printed numbers."""
    n = len(fig.get("meta", {}).get("siblings") or [])
    return int(max(720, min(2400, 96 * n + 120))), int(fig["layout"].get("height") or 560)

