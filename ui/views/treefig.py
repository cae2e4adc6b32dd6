"""The live search tree as a Plotly figure dict: tidy layout, elbow edges, a boxplot glyph of the MC
passes at every node, halos for decisions, new nodes, shared prefixes and search hits, and the marks for
answers. The view filters (ViewOptions) decide which nodes are drawn."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from uats_core.status import NodeStatus

from .bigtree import cap_shown, dead_branches, focus_nodes
from .figstyle import (
    DETAIL_LIMIT,
    DETAIL_ROW_PX,
    MIN_X_SPAN,
    PLOT_CONFIG,
)
from .layout import tidy_layout
from .treedata import TreeState
from .treeglyphs import glyph_meta, glyph_shapes, legend_keys, shadow_traces
from .treemarks import (
    HOVER_TEMPLATE,
    answer_marks,
    coord,
    edge_shapes,
    halo_traces,
    node_traces,
    text_marks,
)
from .treeview import ViewOptions, visible_nodes

Pos = Mapping[int, tuple[float, float]]


def _tree_layout(state: TreeState, pos: Pos, title: str, uirevision: str, height: int | None) -> dict[str, Any]:
    depth = max((int(state.nodes[i].get("depth") or 0) for i in pos), default=0)
    tick_step = max(1, math.ceil((depth + 1) / 40))  # at most ~40 depth labels: each is an SVG <text>
    if height is None and len(pos) <= DETAIL_LIMIT:  # few nodes, each a full boxplot: rows tall enough to read
        height = int(min(900, max(440, DETAIL_ROW_PX * (depth + 1) + 170)))
    elif height is None:  # rows tall enough for a glyph to read at full view, within one screen
        height = int(min(1100, max(440, 26 * (depth + 1) + 110)))
    layout = {
        "uirevision": uirevision,
        "height": height,
        "margin": {"l": 40, "r": 10, "t": 78 if title else 16, "b": 10},
        "title": {"text": title, "x": 0.01, "y": 0.995, "yanchor": "top", "yref": "container", "font": {"size": 14}}
        if title
        else None,
        "paper_bgcolor": "white",
        "plot_bgcolor": "white",
        "hovermode": "closest",
        "dragmode": "pan",
        "hoverlabel": {"align": "left", "bgcolor": "white", "font": {"size": 12}},
        # autorange, never a computed range: Plotly keeps a user's zoom across react() only while the
        # figure's own value for that attribute stays the same (uirevision), and a computed range moves
        "xaxis": {"visible": False, "autorange": True},
        "yaxis": {
            "autorange": True,
            "tickmode": "array",
            "tickvals": [-d for d in range(0, depth + 1, tick_step)],
            "ticktext": ["Q" if d == 0 else f"{d}" for d in range(0, depth + 1, tick_step)],
            "zeroline": False,
            "showgrid": False,
            "title": {"text": "step"},
            "fixedrange": False,
        },
        # under the tree, like a caption: above it, its first row ran under Plotly's toolbar
        "legend": {
            "orientation": "h",
            "y": -0.01,
            "yanchor": "top",
            "x": 0.0,
            "font": {"size": 11},
            "traceorder": "normal",
        },
        "showlegend": True,
    }
    if not title:
        layout.pop("title")
    return layout


def tree_figure(
    state: TreeState,
    view: ViewOptions | None = None,
    *,
    selected: int | None = None,
    colour_range: tuple[float, float] = (0.0, 1.0),
    title: str = "",
    uirevision: str = "tree",
    shared_keys: set[tuple[str, ...]] | None = None,
    height: int | None = None,
    show_colorbar: bool = True,
    shadow: Mapping[int, Mapping[str, Any]] | None = None,
) -> dict[str, Any]:
    """The search tree as a Plotly figure dict (data, layout, config, meta); `shadow`: shadow scores by
    node id, drawn apart (treeglyphs.shadow_traces)."""
    view = view or ViewOptions()
    cmin, cmax = colour_range
    shown, matching, hidden_below = visible_nodes(state, view)
    chosen_path = state.chosen_path_nodes()
    keep = chosen_path | set(state.path(selected) if selected in state.nodes else ())
    cuts = []
    if view.focus != "whole tree":
        shown, cut = focus_nodes(state, shown, view.focus, selected)
        cuts.append(cut)
    if view.collapse_pruned:
        shown, cut = dead_branches(state, shown, keep)
        cuts.append(cut)
    shown, capped = cap_shown(state, shown, keep)
    for cut in (*cuts, capped):
        hidden_below = {i: hidden_below.get(i, 0) + cut.get(i, 0) for i in set(hidden_below) | set(cut)}
    parent_of = {nid: state.nodes[nid].get("parent_id") for nid in shown}
    if shared_keys:
        keys = {nid: state.prefix_key(nid) for nid in shown if nid != 0}

        def order(nid: int) -> Any:  # the prefixes both runs share first
            return keys.get(nid) not in shared_keys, keys.get(nid, ()), nid
    else:

        def order(nid: int) -> Any:  # creation order = left to right
            return nid

    pos = tidy_layout(parent_of, root=0, order_key=order)
    faded = (shown - matching - {0}) if view.filtering else set()
    # edges and compact glyphs are layout shapes under every trace: one SVG path per kind of mark
    shapes = edge_shapes(state, pos, parent_of, chosen_path, faded)
    if view.glyphs:  # boxplot glyphs, one score scale for the whole tree
        shapes += glyph_shapes(state, pos, cmin, cmax)
    data = halo_traces(state, pos, view, matching, shared_keys)
    data += answer_marks(state, pos)  # under the node markers: centred on them
    first_node = len(data)
    data += node_traces(state, pos, faded, cmin, cmax, show_colorbar)
    data += text_marks(state, pos, view, hidden_below)
    if shadow:
        data += shadow_traces(pos, shadow, HOVER_TEMPLATE)
    data += _x_span(pos)
    data += legend_keys(_marks_present(state, pos, data, shapes), state.tau, view.glyphs)
    sel = pos.get(selected) if selected is not None else None
    meta = {
        "n_nodes": len(state.nodes),
        "n_shown": len(pos),
        "iteration": state.iteration,
        "selected": selected,
        "max_iteration": state.max_iteration,
        "run_id": state.run.get("run_id"),
        "status": state.run.get("status"),
        "shadow": sum(1 for i in pos if i in shadow) if shadow else 0,
    }
    scored = [i for i in pos if state.nodes[i].get("mean") is not None and i != 0]  # node_traces' first trace
    if view.glyphs and scored:
        meta["glyphs"] = glyph_meta(state, scored, cmin, cmax, first_node, len(pos), shadow)
    layout = _tree_layout(state, pos, title, uirevision, height)
    # the selection ring is a layout shape the page moves in place on a click (ui/js/plot.js moveRing): drawn
    # unseen at the question while no node is selected, so the first click moves it too (adding one is a relayout,
    # which recalculates the whole tree: most of a second at 2,000 nodes)
    at = sel or pos.get(0)
    ring = [ring_shape(coord(at[0]), coord(at[1]), shown=sel is not None)] if at else []
    layout["shapes"] = shapes + ring
    return {"data": data, "layout": layout, "config": PLOT_CONFIG, "meta": meta}


def _x_span(pos: Pos) -> list[dict[str, Any]]:
    """Two invisible points that widen the x axis's autorange to MIN_X_SPAN sibling gaps when the drawn
    nodes span fewer (a focus on one path): the compact glyphs and marks keep their proportions."""
    xs = [x for x, _ in pos.values()]
    if not xs or max(xs) - min(xs) >= MIN_X_SPAN:
        return []
    mid = (max(xs) + min(xs)) / 2
    return [
        {
            "type": "scatter",
            "mode": "markers",
            "x": [coord(mid - MIN_X_SPAN / 2), coord(mid + MIN_X_SPAN / 2)],
            "y": [0, 0],
            "marker": {"opacity": 0, "size": 1},
            "hoverinfo": "skip",
            "showlegend": False,
            "name": "x span",
        }
    ]


def _marks_present(state: TreeState, pos: Pos, data: list[dict[str, Any]], shapes: list[dict[str, Any]]) -> set[str]:
    """Which optional legend entries the figure needs (legend_keys)."""
    statuses = {state.nodes[i].get("status") for i in pos}
    out = {s for s in (NodeStatus.FINISHED, NodeStatus.TRUNCATED, NodeStatus.PRUNED) if s in statuses}
    out |= {"chosen path" for sh in shapes if sh["name"] == "chosen path"}
    if state.chosen_nodes() & set(pos):
        out.add("chosen")
    for tr in data:
        if tr.get("name") == "marks":
            for t in map(str, tr.get("text") or []):
                out |= (
                    {"hidden"}
                    if t.endswith("hidden")
                    else ({k for k, c in (("passes", "p"), ("children", "×"), ("cut", "✂")) if c in t})
                )
    return out


def ring_shape(x: float, y: float, shown: bool = True) -> dict[str, Any]:
    """The selection ring around the node at (x, y): 30 px whatever the zoom (PLOT_JS builds the same); unseen
    (opacity 0) until a node is selected."""
    return {
        "opacity": 1 if shown else 0,
        "type": "circle",
        "name": "selected",
        "xref": "x",
        "yref": "y",
        "xsizemode": "pixel",
        "ysizemode": "pixel",
        "xanchor": x,
        "yanchor": y,
        "x0": -15,
        "x1": 15,
        "y0": -15,
        "y1": 15,
        "line": {"color": "#111", "width": 2.5},
    }
