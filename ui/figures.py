"""Plotly figures as plain JSON-ready dicts: the live tree with a boxplot glyph at every node, the
inspector's sibling boxplots (the paper's Figure 1), and the per-iteration cost chart.

No Gradio here: app.py sends these dicts to an HTML component that draws them with the plotly.min.js
shipped in the plotly package (Plotly.react + a fixed uirevision, so zoom and pan survive updates).
Drawing choices that keep 2,000 nodes responsive (reference.md §8): one SVG trace per kind of mark
(edges, boxes per colour bin, whiskers, medians, means, markers), None-separated, coordinates rounded,
box statistics instead of raw passes, and never one trace or one WebGL context per node."""

from __future__ import annotations

import html
import logging
import math
import statistics
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping, Sequence

from plotly.colors import sample_colorscale

from .bigtree import cap_shown
from .layout import tidy_layout
from .treedata import TERMINAL, TreeState

log = logging.getLogger(__name__)

COLORSCALE = "Viridis"
N_COLOUR_BINS = 12
OOD_COLOUR = "#e7298a"  # magenta ring: σ² > τ
CHOSEN_COLOUR = "#f0a500"
RIGHT_COLOUR = "#1b9e77"
WRONG_COLOUR = "#d95f02"
DECIDED_COLOUR = "rgba(255, 200, 0, 0.45)"
NEW_COLOUR = "rgba(80, 160, 255, 0.35)"
SHARED_COLOUR = "rgba(120, 120, 255, 0.25)"
MATCH_COLOUR = "rgba(255, 120, 0, 0.55)"
GLYPH_DX = (0.16, 0.40)  # glyph x extent right of its node, in layout units (siblings are >= 1 apart)
GLYPH_HALF_HEIGHT = 0.36  # score 0..1 maps to y-0.36 .. y+0.36 (depth rows are 1 apart)
RAIL_LIMIT = 600  # above this many shown nodes the grey 0..1 rails behind glyphs cost more than they tell
PLOT_CONFIG = {"displaylogo": False, "scrollZoom": True, "responsive": True,
               "modeBarButtonsToRemove": ["select2d", "lasso2d", "autoScale2d"]}


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

    @property
    def filtering(self) -> bool:
        return (self.score_min > 0.0 or self.score_max < 1.0 or self.high_variance_only or self.depth_min > 0
                or self.depth_max is not None or bool(self.search.strip()))


# ------------------------------------------------------------------------------------------ stats
def box_stats(scores: Sequence[float]) -> dict[str, float] | None:
    """Tukey box statistics of MC passes: quartiles (inclusive method), whiskers at the most extreme
    passes within 1.5 IQR, outliers beyond, mean and sd. None without passes."""
    xs = sorted(float(s) for s in scores)
    if not xs:
        return None
    if len(xs) == 1:
        v = xs[0]
        return {"q1": v, "median": v, "q3": v, "lo": v, "hi": v, "mean": v, "sd": 0.0, "outliers": [], "n": 1}
    q1, med, q3 = statistics.quantiles(xs, n=4, method="inclusive")
    mean = math.fsum(xs) / len(xs)
    sd = math.sqrt(math.fsum((x - mean) ** 2 for x in xs) / (len(xs) - 1))  # statistics.stdev is 10x slower
    iqr = q3 - q1
    lo_fence, hi_fence = q1 - 1.5 * iqr, q3 + 1.5 * iqr
    inside = [x for x in xs if lo_fence <= x <= hi_fence]
    return {"q1": q1, "median": med, "q3": q3, "lo": min(inside), "hi": max(inside),
            "mean": mean, "sd": sd,
            "outliers": [x for x in xs if x < lo_fence or x > hi_fence], "n": len(xs)}


def colour_for(value: float | None, cmin: float, cmax: float) -> str:
    if value is None:
        return "#bbbbbb"
    span = (cmax - cmin) or 1.0
    return sample_colorscale(COLORSCALE, [min(1.0, max(0.0, (value - cmin) / span))])[0]


def shared_colour_range(*states: TreeState) -> tuple[float, float]:
    """One colour scale for several trees: the range of R̄ over all their nodes, padded, within [0, 1]."""
    means = [n["mean"] for s in states for n in s.nodes.values() if n.get("mean") is not None]
    if not means:
        return 0.0, 1.0
    lo, hi = min(means), max(means)
    if hi - lo < 0.05:
        lo, hi = lo - 0.025, hi + 0.025
    return max(0.0, math.floor(lo * 20) / 20), min(1.0, math.ceil(hi * 20) / 20)


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
        blocked.update(i for i, n in state.nodes.items() if n.get("status") == "pruned" and i not in view.collapsed)
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
        mean, var, depth = n.get("mean"), n.get("var"), int(n.get("depth") or 0)
        if (view.score_min > 0.0 or view.score_max < 1.0) and (mean is None or not view.score_min <= mean <= view.score_max):
            continue
        if view.high_variance_only and not gate.is_ood(n):
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


def _fmt(v: Any, digits: int = 3) -> str:
    if v is None:
        return "–"
    if isinstance(v, float):
        if v != 0 and abs(v) < 10 ** -digits:
            return f"{v:.1e}"
        return f"{v:.{digits}f}"
    return str(v)


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
    stats = (f"R̄ {_fmt(n.get('mean'))} σ² {_fmt(n.get('var'), 4)} K {k} R̂ {_fmt(n.get('ucb'))} · "
             f"×{n.get('children_granted', 0)} +{n.get('extra_passes', 0)}p")
    if status in TERMINAL:
        stats += f" · ans <b>{html.escape(str(n.get('answer')))}</b> " + {True: "✓", False: "✗"}.get(n.get("correct"), "?")
    return [nid, head + "<br>" + stats, html.escape(_short(n.get("step", ""), 90))]


# ------------------------------------------------------------------------------------------ tree
def _r(v: float) -> float:
    return round(v, 3)


def tree_figure(state: TreeState, view: ViewOptions | None = None, *, selected: int | None = None,
                colour_range: tuple[float, float] = (0.0, 1.0), title: str = "", uirevision: str = "tree",
                shared_keys: set[tuple[str, ...]] | None = None, height: int | None = None,
                show_colorbar: bool = True) -> dict[str, Any]:
    """The search tree as a Plotly figure dict (data, layout, config, meta)."""
    view = view or ViewOptions()
    cmin, cmax = colour_range
    shown, matching, hidden_below = visible_nodes(state, view)
    chosen_path = state.chosen_path_nodes()
    shown, cut = cap_shown(state, shown, chosen_path | set(state.path(selected) if selected in state.nodes else ()))
    hidden_below = {i: hidden_below.get(i, 0) + cut.get(i, 0) for i in set(hidden_below) | set(cut)}
    parent_of = {nid: state.nodes[nid].get("parent_id") for nid in shown}
    if shared_keys:
        keys = {nid: state.prefix_key(nid) for nid in shown if nid != 0}
        order: Callable[[int], Any] = lambda nid: (keys.get(nid) not in shared_keys, keys.get(nid, ()), nid)
    else:
        order = lambda nid: nid  # noqa: E731  creation order = left to right
    pos = tidy_layout(parent_of, root=0, order_key=order)
    faded = (shown - matching - {0}) if view.filtering else set()
    chosen = state.chosen_nodes()
    data: list[dict[str, Any]] = []

    # -- edges: elbows (down, across, down) read as a tidy tree; chosen path drawn thick underneath
    def edge_xy(ids: Iterable[int]) -> tuple[list[Any], list[Any]]:
        xs: list[Any] = []
        ys: list[Any] = []
        for nid in ids:
            p = parent_of.get(nid)
            if nid == 0 or p is None or p not in pos or nid not in pos:
                continue
            (px, py), (cx, cy) = pos[p], pos[nid]
            mid = _r((py + cy) / 2)
            xs += [_r(px), _r(px), _r(cx), _r(cx), None]
            ys += [_r(py), mid, mid, _r(cy), None]
        return xs, ys

    live = [n for n in pos if state.nodes[n].get("status") != "pruned" and n not in faded]
    live_set = set(live)
    dead = [n for n in pos if n not in live_set]
    for ids, colour, width, name in ((chosen_path & set(pos), CHOSEN_COLOUR, 5, "chosen answer's path"),
                                     (dead, "#c8c8c8", 1, "pruned / context"), (live, "#777777", 1.2, "edges")):
        ex, ey = edge_xy(ids)
        if ex:
            data.append({"type": "scatter", "mode": "lines", "x": ex, "y": ey, "hoverinfo": "skip",
                         "line": {"color": colour, "width": width}, "name": name,
                         "showlegend": name == "chosen answer's path"})

    # -- halos under the markers: decided at this iteration, new at this iteration, shared, search hits
    def halo(ids: Iterable[int], colour: str, size: float, name: str) -> None:
        ids = [i for i in ids if i in pos]
        if ids:
            data.append({"type": "scatter", "mode": "markers", "x": [_r(pos[i][0]) for i in ids],
                         "y": [_r(pos[i][1]) for i in ids], "hoverinfo": "skip", "name": name,
                         "marker": {"size": size, "color": colour, "line": {"width": 0}}})

    if shared_keys:
        halo([i for i in pos if i != 0 and state.prefix_key(i) in shared_keys], SHARED_COLOUR, 30, "shared prefix")
    if view.show_decisions and state.iteration:
        halo([i for i in state.decisions if state.decisions[i].get("children") or state.decisions[i].get("extra_passes")
              or state.decisions[i].get("status") == "pruned"], DECIDED_COLOUR, 34, f"decided at t={state.iteration}")
        halo([i for i in pos if state.nodes[i].get("created_iter") == state.iteration and i != 0], NEW_COLOUR, 24,
             f"new at t={state.iteration}")
    if matching and view.search.strip():
        halo(matching, MATCH_COLOUR, 28, "search hit")

    # -- boxplot glyphs, one score scale for the whole tree
    if view.glyphs:
        data.extend(_glyph_traces(state, pos, cmin, cmax, faded))

    # -- node markers (clickable: customdata = node id)
    scored = [i for i in pos if state.nodes[i].get("mean") is not None and i != 0]
    scored_set = set(scored)
    unscored = [i for i in pos if i not in scored_set]
    symbols = {"finished": "diamond", "truncated": "triangle-down", "pruned": "circle", "kept": "circle",
               "active": "circle"}
    if scored:
        nodes = [state.nodes[i] for i in scored]
        data.append({
            "type": "scatter", "mode": "markers", "name": "nodes (colour = R̄)", "showlegend": False,
            "x": [_r(pos[i][0]) for i in scored], "y": [_r(pos[i][1]) for i in scored],
            "customdata": [hover_data(state, i) for i in scored], "hovertemplate": HOVER_TEMPLATE,
            "marker": {
                "color": [round(float(n["mean"]), 4) for n in nodes], "colorscale": COLORSCALE,
                "cmin": cmin, "cmax": cmax, "showscale": show_colorbar,
                "colorbar": {"title": {"text": "R̄"}, "thickness": 12, "len": 0.6, "x": 1.0},
                "size": [round(7 + 2.2 * math.sqrt(max(1, int(n.get("k") or len(n.get("mc_scores") or [])))), 1)
                         for n in nodes],
                "symbol": [symbols.get(n.get("status"), "circle") for n in nodes],
                "opacity": [0.35 if (n.get("status") == "pruned" or i in faded) else 1.0 for i, n in zip(scored, nodes)],
                "line": {"color": [OOD_COLOUR if n.get("ood") else "#333333" for n in nodes],
                         "width": [3 if n.get("ood") else 0.8 for n in nodes]},
            }})
    if unscored:
        data.append({"type": "scatter", "mode": "markers", "name": "question / unscored", "showlegend": False,
                     "x": [_r(pos[i][0]) for i in unscored], "y": [_r(pos[i][1]) for i in unscored],
                     "customdata": [hover_data(state, i) for i in unscored], "hovertemplate": HOVER_TEMPLATE,
                     "marker": {"size": [16 if i == 0 else 8 for i in unscored],
                                "symbol": ["square" if i == 0 else "circle-open" for i in unscored],
                                "color": "#999999", "line": {"color": "#333", "width": 1}}})

    # -- right/wrong and chosen-answer marks as markers (an SVG <text> per node costs several times a marker)
    right = [i for i in pos if state.nodes[i].get("status") in TERMINAL and state.nodes[i].get("correct") is True]
    wrong = [i for i in pos if state.nodes[i].get("status") in TERMINAL and state.nodes[i].get("correct") is False]
    for ids, name, marker, dx, dy in (
            (right, "right answer", {"symbol": "circle", "size": 7, "color": RIGHT_COLOUR}, -0.26, 0.0),
            (wrong, "wrong answer", {"symbol": "x-thin-open", "size": 9, "color": WRONG_COLOUR,
                                     "line": {"color": WRONG_COLOUR, "width": 2.5}},
             -0.26, 0.0),
            (sorted(chosen & set(pos)), "chosen answer", {"symbol": "star", "size": 12, "color": CHOSEN_COLOUR,
                                                           "line": {"color": "#7a5200", "width": 0.8}}, 0.0, -0.42)):
        if ids:
            data.append({"type": "scatter", "mode": "markers", "x": [_r(pos[i][0] + dx) for i in ids],
                         "y": [_r(pos[i][1] + dy) for i in ids], "marker": marker, "hoverinfo": "skip",
                         "showlegend": True, "name": name})
    labels: list[tuple[int, str, str, float, float]] = []  # (node, text, colour, dx, dy): few, so text is fine
    for i, count in hidden_below.items():
        if count and i in pos:
            labels.append((i, f"+{count} hidden", "#555555", 0.0, -0.45))
    if view.show_decisions:
        for i, d in state.decisions.items():
            if i not in pos:
                continue
            bits = []
            if d.get("extra_passes"):
                bits.append(f"+{d['extra_passes']}p")
            if d.get("children"):
                bits.append(f"×{d['children']}")
            elif d.get("status") == "pruned":
                bits.append("✂")
            if bits:
                labels.append((i, " ".join(bits), "#8a5a00", -0.05, 0.42))
    if labels:
        data.append({"type": "scatter", "mode": "text", "x": [_r(pos[i][0] + dx) for i, _, _, dx, _ in labels],
                     "y": [_r(pos[i][1] + dy) for i, _, _, _, dy in labels], "text": [t for _, t, _, _, _ in labels],
                     "textfont": {"color": [c for _, _, c, _, _ in labels], "size": 10}, "hoverinfo": "skip",
                     "showlegend": False, "name": "marks"})
    data.extend(_legend_keys(state, shared_keys is not None))
    # last trace = the selection ring; the page's script moves it at once on a click (Plotly.restyle)
    sel = pos.get(selected) if selected is not None else None
    data.append({"type": "scatter", "mode": "markers", "x": [_r(sel[0])] if sel else [], "y": [_r(sel[1])] if sel else [],
                 "hoverinfo": "skip", "showlegend": False, "name": "selected",
                 "marker": {"size": 30, "color": "rgba(0,0,0,0)", "line": {"color": "#111", "width": 2.5}}})

    depth = max((int(state.nodes[i].get("depth") or 0) for i in pos), default=0)
    tick_step = max(1, math.ceil((depth + 1) / 40))  # at most ~40 depth labels: each is an SVG <text>
    if height is None:  # rows tall enough for a glyph to read at full view, within one screen
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
        "legend": {"orientation": "h", "y": 1.0, "yanchor": "bottom", "x": 0.0, "font": {"size": 11}},
        "showlegend": True,
    }
    if not title:
        layout.pop("title")
    meta = {"n_nodes": len(state.nodes), "n_shown": len(pos), "iteration": state.iteration, "selected": selected,
            "max_iteration": state.max_iteration, "run_id": state.run.get("run_id"), "status": state.run.get("status")}
    return {"data": data, "layout": layout, "config": PLOT_CONFIG, "meta": meta}


def _glyph_traces(state: TreeState, pos: Mapping[int, tuple[float, float]], cmin: float, cmax: float,
                  faded: set[int]) -> list[dict[str, Any]]:
    """Boxplot glyphs as a handful of None-separated polylines (boxes filled per colour bin, whiskers,
    medians, R̄ ticks): SVG then holds one <path> per trace instead of several elements per box, which
    is what keeps 2,000 glyphs redrawing fast (Plotly box traces with precomputed statistics were
    measured slower here; see ui/bench.py)."""
    x0, x1 = GLYPH_DX
    xm = (x0 + x1) / 2
    h = GLYPH_HALF_HEIGHT
    rails = len(pos) <= RAIL_LIMIT
    rail_x: list[Any] = []
    rail_y: list[Any] = []
    whisk_x: list[Any] = []
    whisk_y: list[Any] = []
    med_x: list[Any] = []
    med_y: list[Any] = []
    mean_x: list[Any] = []
    mean_y: list[Any] = []
    boxes: dict[int, tuple[list[Any], list[Any]]] = {}
    for nid, (x, y) in pos.items():
        n = state.nodes[nid]
        st = box_stats(n.get("mc_scores") or ([n["mean"]] if n.get("mean") is not None else []))
        if nid == 0 or st is None:
            continue

        def sy(v: float) -> float:
            return _r(y - h + 2 * h * v)

        xl, xr, xc = _r(x + x0), _r(x + x1), _r(x + xm)
        if rails:
            rail_x += [xc, xc, None]
            rail_y += [sy(0.0), sy(1.0), None]
        if st["n"] > 1:
            q1, q3 = sy(st["q1"]), sy(st["q3"])
            if q3 - q1 < 0.02:  # a near-zero spread still shows as a sliver, not nothing
                q1, q3 = _r(q1 - 0.01), _r(q3 + 0.01)
            b = min(N_COLOUR_BINS - 1, max(0, int((st["mean"] - cmin) / ((cmax - cmin) or 1.0) * N_COLOUR_BINS)))
            bx, by = boxes.setdefault(b, ([], []))
            bx += [xl, xr, xr, xl, xl, None]
            by += [q1, q1, q3, q3, q1, None]
            whisk_x += [xc, xc, None, xc, xc, None]
            whisk_y += [sy(st["lo"]), q1, None, q3, sy(st["hi"]), None]
            med_x += [xl, xr, None]
            med_y += [sy(st["median"]), sy(st["median"]), None]
        mean_x += [_r(x + x0 - 0.05), _r(x + x1 + 0.05), None]
        mean_y += [sy(st["mean"]), sy(st["mean"]), None]
    traces: list[dict[str, Any]] = []

    def lines(xs: list[Any], ys: list[Any], colour: str, width: float, name: str) -> None:
        if xs:
            traces.append({"type": "scatter", "mode": "lines", "x": xs, "y": ys, "hoverinfo": "skip",
                           "line": {"color": colour, "width": width}, "showlegend": False, "name": name})

    lines(rail_x, rail_y, "#e6e6e6", 1, "score scale 0–1")
    lines(whisk_x, whisk_y, "#555555", 0.8, "whiskers")
    for b, (bx, by) in sorted(boxes.items()):
        centre = cmin + (b + 0.5) / N_COLOUR_BINS * (cmax - cmin)
        traces.append({"type": "scatter", "mode": "lines", "x": bx, "y": by, "fill": "toself", "hoverinfo": "skip",
                       "fillcolor": colour_for(centre, cmin, cmax), "line": {"color": "#444444", "width": 0.6},
                       "showlegend": False, "name": "MC boxes"})
    lines(med_x, med_y, "#111111", 1.1, "medians")
    lines(mean_x, mean_y, "#d62728", 1.6, "R̄ ticks")
    return traces


def _legend_keys(state: TreeState, compare: bool) -> list[dict[str, Any]]:
    """Legend-only entries explaining the marks (x=[None] draws nothing)."""
    def key(name: str, marker: dict[str, Any]) -> dict[str, Any]:
        return {"type": "scatter", "mode": "markers", "x": [None], "y": [None], "name": name, "marker": marker,
                "hoverinfo": "skip", "showlegend": True}

    return [key("OOD (σ² > τ)", {"size": 11, "color": "white", "line": {"color": OOD_COLOUR, "width": 3}}),
            key("finished", {"size": 10, "symbol": "diamond", "color": "#888"}),
            key("pruned", {"size": 10, "color": "#888", "opacity": 0.35})]


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
        ood = gate.is_ood(n)
        logit_line = f"<br>σ²ℓ={_fmt(n.get('logit_var'), 3)}" if gate.space == "logit" else ""
        annotations.append({"x": label, "y": 1.01, "xref": "x", "yref": "y", "yanchor": "bottom", "showarrow": False,
                            "text": f"R̄={_fmt(n.get('mean'))}<br>σ²={_fmt(n.get('var'), 4)}{logit_line}<br>K={len(scores)}",
                            "font": {"size": 11, "color": OOD_COLOUR if ood else "#222"}})
    data.append({"type": "bar", "x": labels, "y": [gated[s] for s in sibs],
                 "marker": {"color": [OOD_COLOUR if gate.is_ood(state.nodes[s]) else "#9e9e9e" for s in sibs]},
                 "xaxis": "x2", "yaxis": "y2", "showlegend": False, "name": gate.label,
                 "hovertemplate": f"%{{x}}: {gate.label} %{{y:.5f}}<extra></extra>"})
    parent = state.nodes[node_id].get("parent_id")
    title = f"node {node_id} and its {len(sibs) - 1} sibling(s) (children of {'the question' if parent == 0 else f'node {parent}'})"
    layout = {
        "height": height, "margin": {"l": 50, "r": 10, "t": 30, "b": 30}, "title": {"text": title, "font": {"size": 13}},
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
    budgets = [(int(i["iteration"]), i.get("budget") or {}) for i in iterations]
    rows = [(t, b["knobs"], b.get("state") or {}) for t, b in budgets if b.get("knobs")]
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
