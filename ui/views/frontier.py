"""The frontier view: the paper's Figure 1 over every candidate competing at iteration t, not only one
node's siblings (the children's softmax shares C across the whole frontier).

One row per candidate, horizontal (labels never overlap, 200 rows stay readable): its MC-dropout passes as a
box, its gated σ² against τ as a bar, and its numbers and decision as text. Sortable by R̄, σ² or R̂;
top-k with paging; "siblings of the selected node" is a filter of the same view."""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from uats_core.records import Decision

from .decisions import Candidate, step_candidates
from .figstyle import OOD_COLOUR, SHADOW_COLOUR, colour_for
from .treedata import RunData

SORT_KEYS = {"R̄ (mean)": "mean", "σ² (variance)": "var", "R̂ (UCB)": "ucb"}
ROW_PX = 22
MAX_POINTS_ROWS = 25  # above this many rows the single passes are left out: boxes read, dots only clutter


def frontier_rows(data: RunData, t: int, sort_by: str = "mean", siblings_of: int | None = None) -> tuple[list[Candidate], Any]:
    """The candidates of iteration t sorted (descending) by `sort_by` (mean, var, ucb); optionally only the
    siblings of `siblings_of`. Returns them and the tree after t."""
    cands, _, state = step_candidates(data, t)
    if not cands:  # the first iteration decides nothing: show what it created
        cands = [Candidate(i, n.get("mean"), n.get("var"), n.get("ucb"), len(n.get("mc_scores") or []),
                           state.gate.statistic(n), state.gate.shown(n), 0, 0, str(n.get("status") or ""), False)
                 for i, n in state.nodes.items() if i != 0 and n.get("created_iter") == t and n.get("mean") is not None]
    if siblings_of is not None and siblings_of in state.nodes:
        parent = state.nodes[siblings_of].get("parent_id")
        cands = [c for c in cands if state.nodes.get(c.node_id, {}).get("parent_id") == parent]
    key = sort_by if sort_by in ("mean", "var", "ucb") else "mean"
    cands.sort(key=lambda c: (getattr(c, key) is None, -(getattr(c, key) or 0.0), c.node_id))
    return cands, state


def page_of(rows: Sequence[Any], page: int, per_page: int) -> tuple[list[Any], int, int]:
    """(rows of page `page` (0-based, clamped), the page used, the number of pages)."""
    per_page = max(1, int(per_page))
    pages = max(1, -(-len(rows) // per_page))
    page = min(max(0, int(page)), pages - 1)
    return list(rows[page * per_page:(page + 1) * per_page]), page, pages


def _decision_text(c: Candidate) -> str:
    return Decision(c.node_id, c.children, c.extra, c.status).label


def frontier_figure(data: RunData, t: int, *, sort_by: str = "mean", page: int | None = 0, per_page: int = 50,
                    selected: int | None = None, siblings_only: bool = False,
                    shadow: Mapping[int, Mapping[str, Any]] | None = None) -> dict[str, Any] | None:
    """The frontier of iteration t as a figure dict, or None when the step has no scored candidate;
    `shadow` rows (ui.jobs.shadow) add a purple box of the shadow passes under each candidate's own. page=None:
    the page holding the selected node."""
    cands, state = frontier_rows(data, t, sort_by, selected if siblings_only else None)
    if not cands:
        return None
    rank = {c.node_id: i + 1 for i, c in enumerate(cands)}
    if page is None:  # the page that shows the selected node
        page = (rank[selected] - 1) // max(1, int(per_page)) if selected in rank else 0
    rows, page, pages = page_of(cands, page, per_page)
    gate, tau = state.gate, state.gate.tau
    labels = [f"{rank[c.node_id]}. #{c.node_id}" + (" ◀" if c.node_id == selected else "") for c in rows]
    points = len(rows) <= MAX_POINTS_ROWS
    data_: list[dict[str, Any]] = []
    for c, label in zip(rows, labels):
        scores = [round(float(v), 5) for v in (state.nodes[c.node_id].get("mc_scores") or [])]
        data_.append({"type": "box", "x": scores, "y": [label] * len(scores), "orientation": "h", "name": label,
                      "boxpoints": "all" if points else False, "jitter": 0.3, "pointpos": 0, "boxmean": True,
                      "marker": {"size": 3, "color": "#333"}, "fillcolor": colour_for(c.mean, 0.0, 1.0),
                      "line": {"color": OOD_COLOUR if c.ood else "#555", "width": 2 if c.ood else 1},
                      "xaxis": "x", "yaxis": "y", "showlegend": False,
                      "customdata": [[c.node_id]] * len(scores), "offsetgroup": "run",
                      "hovertemplate": f"node {c.node_id}<br>pass %{{x:.4f}}<extra></extra>"})
        if shadow and c.node_id in shadow:
            data_.append(_shadow_box(c.node_id, label, shadow[c.node_id]))
    stats = [c.stat or 0.0 for c in rows]
    data_.append({"type": "bar", "orientation": "h", "x": stats, "y": labels, "xaxis": "x2", "yaxis": "y",
                  "marker": {"color": [OOD_COLOUR if c.ood else "#9e9e9e" for c in rows]}, "showlegend": False,
                  "customdata": [[c.node_id] for c in rows], "name": gate.label,
                  "hovertemplate": f"%{{y}}: {gate.label} %{{x:.5f}}<extra></extra>"})
    text = [f"R̄ {_f(c.mean)}  σ² {_f(c.var, 4)}  R̂ {_f(c.ucb)}  K {c.k}  {_decision_text(c)}"
            + _shadow_text((shadow or {}).get(c.node_id)) for c in rows]
    data_.append({"type": "scatter", "mode": "text", "x": [0.0] * len(rows), "y": labels, "text": text,
                  "textposition": "middle right", "xaxis": "x3", "yaxis": "y", "showlegend": False,
                  "textfont": {"size": 11, "color": [OOD_COLOUR if c.ood else "#222" for c in rows]},
                  "customdata": [[c.node_id] for c in rows], "hoverinfo": "skip", "name": "numbers"})
    height = 120 + ROW_PX * len(rows)
    title = (f"iteration {t}: {len(cands)} candidate(s)" + (" (siblings of the selected node)" if siblings_only else "")
             + f", sorted by {sort_by}; rows {page * per_page + 1}–{page * per_page + len(rows)}, page {page + 1}/{pages}")
    shapes = [{"type": "line", "xref": "x2", "x0": tau, "x1": tau, "yref": "paper", "y0": 0, "y1": 1,
               "line": {"color": OOD_COLOUR, "dash": "dash", "width": 1.5}}]
    if selected is not None and any(c.node_id == selected for c in rows):
        lab = labels[[c.node_id for c in rows].index(selected)]
        shapes.append({"type": "rect", "xref": "paper", "x0": 0, "x1": 1, "yref": "y", "y0": lab, "y1": lab,
                       "line": {"width": 12, "color": "rgba(255, 200, 0, 0.25)"}, "layer": "below"})
    layout = {
        "height": height, "margin": {"l": 90, "r": 10, "t": 96, "b": 20},
        "title": {"text": title, "font": {"size": 13}, "x": 0.01, "y": 0.995, "yref": "container", "yanchor": "top"},
        "xaxis": {"domain": [0.0, 0.5], "range": [-0.02, 1.02], "title": {"text": "MC-dropout score"}, "side": "top",
                  "gridcolor": "#eee"},
        "xaxis2": {"domain": [0.53, 0.68], "rangemode": "tozero", "title": {"text": f"{gate.label} (τ = {tau:g})"},
                   "side": "top", "nticks": 3, "tickangle": 0, "tickformat": ".2g", "range": [0, max([tau * 1.6] + [s * 1.1 for s in stats])]},
        "xaxis3": {"domain": [0.7, 1.0], "range": [0, 1], "visible": False},
        # a fixed range, best first from the top: autorange left rows of empty space above the first
        "yaxis": {"type": "category", "range": [len(rows) - 0.5, -0.5], "categoryorder": "array",
                  "categoryarray": labels, "tickfont": {"size": 11}, "automargin": True},
        "boxmode": "group" if shadow else "overlay", "shapes": shapes, "showlegend": False, "plot_bgcolor": "white", "paper_bgcolor": "white",
        "uirevision": f"frontier-{data.run.get('run_id')}-{t}",
    }
    return {"data": data_, "layout": layout, "config": {"displaylogo": False, "responsive": True},
            "meta": {"iteration": t, "candidates": len(cands), "rows": [c.node_id for c in rows], "page": page,
                     "pages": pages, "sort_by": sort_by, "n_nodes": len(rows), "run_id": data.run.get("run_id")}}


def _f(v: Any, digits: int = 3) -> str:
    if v is None:
        return "n/a"
    v = float(v)
    return f"{v:.2e}" if v != 0 and abs(v) < 10 ** -digits else f"{v:.{digits}f}"


def _shadow_box(nid: int, label: str, row: Mapping[str, Any]) -> dict[str, Any]:
    scores = [round(float(v), 5) for v in row.get("mc_scores") or []]
    return {"type": "box", "x": scores, "y": [label] * len(scores), "orientation": "h", "name": "shadow",
            "offsetgroup": "shadow", "boxpoints": False, "boxmean": True, "fillcolor": "rgba(123, 50, 148, 0.18)",
            "line": {"color": SHADOW_COLOUR, "width": 1.5}, "xaxis": "x", "yaxis": "y", "showlegend": False,
            "customdata": [[nid]] * len(scores),
            "hovertemplate": f"node {nid}: shadow pass %{{x:.4f}} (not spent)<extra></extra>"}


def _shadow_text(row: Mapping[str, Any] | None) -> str:
    if not row:
        return ""
    return f"  | shadow σ² {_f(row.get('var'), 4)} {'OOD' if row.get('ood') else 'ID'}"
