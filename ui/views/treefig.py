"""The live search tree as a Plotly figure dict: tidy layout, elbow edges, a boxplot glyph of the MC
passes at every node, halos for decisions, new nodes, shared prefixes and search hits, and the marks for
answers. The view filters (ViewOptions) decide which nodes are drawn."""

from __future__ import annotations

import html
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from uats_core.status import NodeStatus

from .bigtree import cap_shown, dead_branches, focus_nodes
from .figstyle import (
    CHOSEN_COLOUR,
    COLORSCALE,
    DECIDED_COLOUR,
    DETAIL_LIMIT,
    DETAIL_ROW_PX,
    MATCH_COLOUR,
    MIN_X_SPAN,
    NEW_COLOUR,
    OOD_COLOUR,
    PLOT_CONFIG,
    RIGHT_COLOUR,
    SHARED_COLOUR,
    WRONG_COLOUR,
    Polyline,
    fmt_mean,
    fmt_var,
    path_shape,
)
from .layout import tidy_layout
from .treedata import TERMINAL, TreeState
from .treeglyphs import glyph_meta, glyph_shapes, legend_keys, shadow_traces

Pos = Mapping[int, tuple[float, float]]


@dataclass
class ViewOptions:
    """What the user asked to see. A node is shown if it matches every active filter, or is an ancestor
    of one that does (drawn faded, so the tree stays connected)."""

    score_min: float = 0.0
    score_max: float = 1.0
    high_variance_only: bool = False
    depth_min: int = 0
    depth_max: int | None = None
    search: str = ""
    collapsed: frozenset[int] = field(default_factory=frozenset)
    glyphs: bool = True
    show_decisions: bool = True
    hide_pruned: bool = False
    collapse_pruned: bool = False  # branches whose every leaf was pruned drawn as their top node
    focus: str = "whole tree"  # or "chosen path", "selected subtree", "selected step" (bigtree.FOCUS_CHOICES)

    @property
    def filtering(self) -> bool:
        return (self.score_min > 0.0 or self.score_max < 1.0 or self.high_variance_only or self.depth_min > 0
                or self.depth_max is not None or bool(self.search.strip()))


# ------------------------------------------------------------------------------------------ visibility
def visible_nodes(state: TreeState, view: ViewOptions) -> tuple[set[int], set[int], dict[int, int]]:
    """(shown, matching, hidden-below count per collapsed node)."""
    hidden_below: dict[int, int] = {}
    blocked: set[int] = set()
    for c in view.collapsed:
        if c in state.nodes:
            below = [n for n in state.subtree(c) if n != c]
            hidden_below[c] = len(below)
            blocked.update(below)
    if view.hide_pruned:  # pruned nodes are leaves: hiding them removes clutter, never disconnects the tree
        blocked.update(i for i, n in state.nodes.items()
                       if n.get("status") == NodeStatus.PRUNED and i not in view.collapsed)
    candidates = [n for n in state.nodes if n not in blocked]
    if not view.filtering:
        return set(candidates), set(), hidden_below
    needle = view.search.strip().lower()
    gate = state.gate
    matching: set[int] = set()
    for nid in candidates:
        if nid == 0:
            continue
        n = state.nodes[nid]
        mean, depth = n.get("mean"), int(n.get("depth") or 0)
        if (view.score_min > 0.0 or view.score_max < 1.0) and (mean is None or not view.score_min <= mean <= view.score_max):
            continue
        if view.high_variance_only and not gate.shown(n):
            continue
        if depth < view.depth_min or (view.depth_max is not None and depth > view.depth_max):
            continue
        if needle and needle not in (n.get("step") or "").lower() and needle != str(nid):
            continue
        matching.add(nid)
    shown = set(matching) | {0}
    for nid in matching:
        shown.update(state.path(nid))
    return shown, matching, hidden_below


# ------------------------------------------------------------------------------------------ hover
def _short(text: str, limit: int = 140) -> str:
    text = " ".join((text or "").split())
    return text if len(text) <= limit else text[: limit - 1] + "…"



# customdata per marker: [node id, status and statistics, step]; the template adds the markup
# once, instead of once per node (a third of the 2,000-node payload otherwise).
HOVER_TEMPLATE = "<b>node %{customdata[0]}</b> %{customdata[1]}<br>%{customdata[2]}<extra></extra>"


def hover_data(state: TreeState, nid: int) -> list[Any]:
    n = state.nodes[nid]
    if nid == 0:
        return [0, "· the question", html.escape(_short(state.run.get("question", ""), 160))]
    status = n.get("status") or ""
    head = f"· d{n.get('depth')} · {status}" + (" · <b>OOD</b>" if n.get("ood") else "")
    k = n.get("k", len(n.get("mc_scores") or []))
    stats = (f"R̄ {fmt_mean(n.get('mean'))} σ² {fmt_var(n.get('var'))} K {k} "
             f"R̂ {fmt_mean(n.get('ucb'))} · ×{n.get('children_granted', 0)} +{n.get('extra_passes', 0)}p")
    if status in TERMINAL:
        stats += f" · ans <b>{html.escape(str(n.get('answer')))}</b> " + {True: "✓", False: "✗"}.get(n.get("correct"), "?")
    return [nid, head + "<br>" + stats, html.escape(_short(n.get("step", ""), 90))]


# ------------------------------------------------------------------------------------------ tree
def _r(v: float) -> float:
    return round(v, 3)



def _edge_shapes(state: TreeState, pos: Pos, parent_of: Mapping[int, Any], chosen_path: set[int],
                 faded: set[int]) -> list[dict[str, Any]]:
    """Elbow edges (down, across, down) read as a tidy tree; the chosen path drawn thick underneath. Layout
    shapes, one SVG path per kind (figstyle.path_shape), named in the legend by a key (legend_keys): a shape
    with its own legend entry made Plotly redraw every trace on any shape edit, the selection ring's too."""
    def elbows(ids: Iterable[int]) -> list[Polyline]:
        out: list[Polyline] = []
        for nid in ids:
            p = parent_of.get(nid)
            if nid == 0 or p is None or p not in pos or nid not in pos:
                continue
            (px, py), (cx, cy) = pos[p], pos[nid]
            mid = (py + cy) / 2
            out.append(((px, py), (px, mid), (cx, mid), (cx, cy)))
        return out

    live = [n for n in pos if state.nodes[n].get("status") != NodeStatus.PRUNED and n not in faded]
    live_set = set(live)
    dead = [n for n in pos if n not in live_set]
    shapes = []
    for ids, colour, width, name in ((sorted(chosen_path & set(pos)), CHOSEN_COLOUR, 5, "chosen path"),
                                     (dead, "#c8c8c8", 1, "pruned / context"), (live, "#777777", 1.2, "edges")):
        shape = path_shape(elbows(ids), name, colour, width)
        if shape is not None:
            shapes.append(shape)
    return shapes


def _halo_traces(state: TreeState, pos: Pos, view: ViewOptions, matching: set[int],
                 shared_keys: set[tuple[str, ...]] | None) -> list[dict[str, Any]]:
    """Halos under the markers: decided at this iteration, new at this iteration, shared, search hits."""
    data: list[dict[str, Any]] = []

    def halo(ids: Iterable[int], colour: str, size: float, name: str) -> None:
        ids = [i for i in ids if i in pos]
        if ids:
            data.append({"type": "scatter", "mode": "markers", "x": [_r(pos[i][0]) for i in ids],
                         "y": [_r(pos[i][1]) for i in ids], "hoverinfo": "skip", "name": name,
                         "marker": {"size": size, "color": colour, "line": {"width": 0}}})

    if shared_keys:
        halo([i for i in pos if i != 0 and state.prefix_key(i) in shared_keys], SHARED_COLOUR, 30, "shared prefix")
    if view.show_decisions and state.iteration:
        halo([i for i, d in state.decisions.items() if d.children or d.extra_passes or d.status == NodeStatus.PRUNED],
             DECIDED_COLOUR, 34, f"decided at t={state.iteration}")
        halo([i for i in pos if state.nodes[i].get("created_iter") == state.iteration and i != 0], NEW_COLOUR, 24,
             f"new at t={state.iteration}")
    if matching and view.search.strip():
        halo(matching, MATCH_COLOUR, 28, "search hit")
    return data


MARKER_MAX = 14.0  # uncapped, a few heavily re-evaluated nodes covered dozens of neighbours at N=512


def marker_size(k: int) -> float:
    """Marker size for K passes: grows with K, capped (the hover and the inspector give the exact K)."""
    return round(min(MARKER_MAX, 6.0 + 1.6 * math.sqrt(max(1, k))), 1)


NODE_SYMBOLS = {NodeStatus.FINISHED: "diamond", NodeStatus.TRUNCATED: "triangle-down", NodeStatus.PRUNED: "circle",
                NodeStatus.KEPT: "circle", NodeStatus.ACTIVE: "circle"}


def _node_traces(state: TreeState, pos: Pos, faded: set[int], cmin: float, cmax: float,
                 show_colorbar: bool) -> list[dict[str, Any]]:
    """The node markers, clickable (customdata starts with the node id): scored ones coloured by R̄ and
    sized by K (a finished node holding the chosen answer is a gold-edged star), then the question and
    unscored nodes."""
    data: list[dict[str, Any]] = []
    scored = [i for i in pos if state.nodes[i].get("mean") is not None and i != 0]
    scored_set = set(scored)
    unscored = [i for i in pos if i not in scored_set]
    chosen = state.chosen_nodes()
    if scored:
        nodes = [state.nodes[i] for i in scored]
        sizes = [marker_size(int(n.get("k") or len(n.get("mc_scores") or []))) for n in nodes]
        data.append({
            "type": "scatter", "mode": "markers", "name": "nodes (colour = R̄)", "showlegend": False,
            "x": [_r(pos[i][0]) for i in scored], "y": [_r(pos[i][1]) for i in scored],
            "customdata": [hover_data(state, i) for i in scored], "hovertemplate": HOVER_TEMPLATE,
            "marker": {
                "color": [round(float(n["mean"]), 4) for n in nodes], "colorscale": COLORSCALE,
                "cmin": cmin, "cmax": cmax, "showscale": show_colorbar,
                "colorbar": {"title": {"text": "R̄"}, "thickness": 12, "len": 0.6, "x": 1.0},
                "size": [s + 5 if i in chosen else s for i, s in zip(scored, sizes)],
                "symbol": ["star" if i in chosen else NODE_SYMBOLS.get(n.get("status"), "circle")
                           for i, n in zip(scored, nodes)],
                "opacity": [0.35 if (n.get("status") == NodeStatus.PRUNED or i in faded) else 1.0
                            for i, n in zip(scored, nodes)],
                "line": {"color": [OOD_COLOUR if n.get("ood") else CHOSEN_COLOUR if i in chosen else "#333333"
                                   for i, n in zip(scored, nodes)],
                         "width": [3 if n.get("ood") else 2 if i in chosen else 0.8 for i, n in zip(scored, nodes)]},
            }})
    if unscored:
        data.append({"type": "scatter", "mode": "markers", "name": "question / unscored", "showlegend": False,
                     "x": [_r(pos[i][0]) for i in unscored], "y": [_r(pos[i][1]) for i in unscored],
                     "customdata": [hover_data(state, i) for i in unscored], "hovertemplate": HOVER_TEMPLATE,
                     "marker": {"size": [16 if i == 0 else 8 for i in unscored],
                                "symbol": ["square" if i == 0 else "circle-open" for i in unscored],
                                "color": "#999999", "line": {"color": "#333", "width": 1}}})
    return data


def _answer_marks(state: TreeState, pos: Pos) -> list[dict[str, Any]]:
    """Right and wrong answers as marks centred on their node, drawn under it: a green ring round a right
    answer, an orange ✗ through a wrong one. Markers, so they stay on their node whatever the zoom (an
    offset in layout units put the ✗ 400 px away once a focus spread a few nodes across the plot)."""
    data: list[dict[str, Any]] = []
    terminal = [i for i in pos if state.nodes[i].get("status") in TERMINAL]
    for correct, name, symbol, colour, width, grow in ((True, "right answer", "circle-open", RIGHT_COLOUR, 2.5, 7),
                                                       (False, "wrong answer", "x-thin-open", WRONG_COLOUR, 3, 10)):
        ids = [i for i in terminal if state.nodes[i].get("correct") is correct]
        if ids:
            sizes = [marker_size(int(state.nodes[i].get("k") or 0)) + grow for i in ids]
            data.append({"type": "scatter", "mode": "markers", "x": [_r(pos[i][0]) for i in ids],
                         "y": [_r(pos[i][1]) for i in ids], "hoverinfo": "skip", "showlegend": True, "name": name,
                         "marker": {"symbol": symbol, "size": sizes, "color": colour,
                                    "line": {"color": colour, "width": width}}})
    return data


# an invisible marker this wide under each label: Plotly sets the text that far off its node; clear of the
# node's halo where rows are DETAIL_ROW_PX tall, close to it in a big tree (26 px rows: 26 put a label on the
# node of the row above)
LABEL_STANDOFF = {"detail": 26, "compact": 10}


def _text_marks(state: TreeState, pos: Pos, view: ViewOptions, hidden_below: Mapping[int, int]) -> list[dict[str, Any]]:
    """"+n hidden" under collapsed or capped nodes and this iteration's decisions above nodes: few, so text,
    anchored on the node and set off by a fixed number of pixels (textposition), never by layout units."""
    labels: list[tuple[int, str, str, str]] = []  # (node, text, colour, where)
    for i, count in hidden_below.items():
        if count and i in pos:
            labels.append((i, f"+{count} hidden", "#555555", "bottom left"))
    if view.show_decisions:  # left of the node: its own glyph is on its right (the page hides one over another's)
        labels += [(i, text, "#8a5a00", "top left") for i, text in decision_labels(state, pos)]
    if not labels:
        return []
    standoff = LABEL_STANDOFF["detail" if len(pos) <= DETAIL_LIMIT else "compact"]
    return [{"type": "scatter", "mode": "markers+text", "x": [_r(pos[i][0]) for i, *_ in labels],
             "y": [_r(pos[i][1]) for i, *_ in labels], "text": [t for _, t, _, _ in labels],
             "textposition": [w for *_, w in labels], "marker": {"size": standoff, "opacity": 0},
             "textfont": {"color": [c for _, _, c, _ in labels], "size": 10}, "hoverinfo": "skip",
             "showlegend": False, "name": "marks"}]


MAX_DECISION_LABELS = 200  # SVG texts per draw; the page hides those that collide at the zoom shown (ui/js/treelod.js)


def decision_labels(state: TreeState, pos: Pos) -> list[tuple[int, str]]:
    """This iteration's decision labels (+Kp extra passes, ×N children, ✂ pruned), the largest decisions first:
    the page keeps a label only where it overlaps no label before it and stays inside the plot (measured in
    pixels at the zoom shown, ui/js/treelod.js), so zooming in brings the others back; at most
    MAX_DECISION_LABELS (every decided node still gets its halo; Figure 1 lists every decision of a step)."""
    found = []
    for i, d in state.decisions.items():
        if i not in pos:
            continue
        if d.label:
            found.append((-(int(d.extra_passes or 0) * 100 + int(d.children or 0)), i, d.label))
    return [(i, text) for _, i, text in sorted(found)[:MAX_DECISION_LABELS]]


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
        if title else None,
        "paper_bgcolor": "white", "plot_bgcolor": "white", "hovermode": "closest", "dragmode": "pan",
        "hoverlabel": {"align": "left", "bgcolor": "white", "font": {"size": 12}},
        # autorange, never a computed range: Plotly keeps a user's zoom across react() only while the
        # figure's own value for that attribute stays the same (uirevision), and a computed range moves
        "xaxis": {"visible": False, "autorange": True},
        "yaxis": {"autorange": True, "tickmode": "array", "tickvals": [-d for d in range(0, depth + 1, tick_step)],
                  "ticktext": ["Q" if d == 0 else f"{d}" for d in range(0, depth + 1, tick_step)], "zeroline": False,
                  "showgrid": False, "title": {"text": "step"}, "fixedrange": False},
        # under the tree, like a caption: above it, its first row ran under Plotly's toolbar
        "legend": {"orientation": "h", "y": -0.01, "yanchor": "top", "x": 0.0, "font": {"size": 11},
                   "traceorder": "normal"},
        "showlegend": True,
    }
    if not title:
        layout.pop("title")
    return layout


def tree_figure(state: TreeState, view: ViewOptions | None = None, *, selected: int | None = None,
                colour_range: tuple[float, float] = (0.0, 1.0), title: str = "", uirevision: str = "tree",
                shared_keys: set[tuple[str, ...]] | None = None, height: int | None = None,
                show_colorbar: bool = True, shadow: Mapping[int, Mapping[str, Any]] | None = None) -> dict[str, Any]:
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
    shapes = _edge_shapes(state, pos, parent_of, chosen_path, faded)
    if view.glyphs:  # boxplot glyphs, one score scale for the whole tree
        shapes += glyph_shapes(state, pos, cmin, cmax)
    data = _halo_traces(state, pos, view, matching, shared_keys)
    data += _answer_marks(state, pos)  # under the node markers: centred on them
    first_node = len(data)
    data += _node_traces(state, pos, faded, cmin, cmax, show_colorbar)
    data += _text_marks(state, pos, view, hidden_below)
    if shadow:
        data += shadow_traces(pos, shadow, HOVER_TEMPLATE)
    data += _x_span(pos)
    data += legend_keys(_marks_present(state, pos, data, shapes), state.tau, view.glyphs)
    sel = pos.get(selected) if selected is not None else None
    meta = {"n_nodes": len(state.nodes), "n_shown": len(pos), "iteration": state.iteration, "selected": selected,
            "max_iteration": state.max_iteration, "run_id": state.run.get("run_id"), "status": state.run.get("status"),
            "shadow": sum(1 for i in pos if i in shadow) if shadow else 0}
    scored = [i for i in pos if state.nodes[i].get("mean") is not None and i != 0]  # _node_traces' first trace
    if view.glyphs and scored:
        meta["glyphs"] = glyph_meta(state, scored, cmin, cmax, first_node, len(pos), shadow)
    layout = _tree_layout(state, pos, title, uirevision, height)
    # the selection ring is a layout shape: the page's script moves it on a click with Plotly.relayout, which
    # redraws shapes only (moving a ring trace with Plotly.restyle recomputed every trace, seconds at 2,000 nodes)
    layout["shapes"] = shapes + ([ring_shape(_r(sel[0]), _r(sel[1]))] if sel else [])
    return {"data": data, "layout": layout, "config": PLOT_CONFIG, "meta": meta}


def _x_span(pos: Pos) -> list[dict[str, Any]]:
    """Two invisible points that widen the x axis's autorange to MIN_X_SPAN sibling gaps when the drawn
    nodes span fewer (a focus on one path): the compact glyphs and marks keep their proportions."""
    xs = [x for x, _ in pos.values()]
    if not xs or max(xs) - min(xs) >= MIN_X_SPAN:
        return []
    mid = (max(xs) + min(xs)) / 2
    return [{"type": "scatter", "mode": "markers", "x": [_r(mid - MIN_X_SPAN / 2), _r(mid + MIN_X_SPAN / 2)],
             "y": [0, 0], "marker": {"opacity": 0, "size": 1}, "hoverinfo": "skip", "showlegend": False,
             "name": "x span"}]


def _marks_present(state: TreeState, pos: Pos, data: list[dict[str, Any]],
                   shapes: list[dict[str, Any]]) -> set[str]:
    """Which optional legend entries the figure needs (legend_keys)."""
    statuses = {state.nodes[i].get("status") for i in pos}
    out = {s for s in (NodeStatus.FINISHED, NodeStatus.TRUNCATED, NodeStatus.PRUNED) if s in statuses}
    out |= {"chosen path" for sh in shapes if sh["name"] == "chosen path"}
    if state.chosen_nodes() & set(pos):
        out.add("chosen")
    for tr in data:
        if tr.get("name") == "marks":
            for t in map(str, tr.get("text") or []):
                out |= {"hidden"} if t.endswith("hidden") else (
                    {k for k, c in (("passes", "p"), ("children", "×"), ("cut", "✂")) if c in t})
    return out


def ring_shape(x: float, y: float) -> dict[str, Any]:
    """The selection ring around the node at (x, y): 30 px whatever the zoom (PLOT_JS builds the same)."""
    return {"type": "circle", "name": "selected", "xref": "x", "yref": "y", "xsizemode": "pixel",
            "ysizemode": "pixel", "xanchor": x, "yanchor": y, "x0": -15, "x1": 15, "y0": -15, "y1": 15,
            "line": {"color": "#111", "width": 2.5}}
