"""The tree's boxplot glyphs at two levels of detail, and the legend that names every mark.

Compact: with many nodes in view, each node's MC passes as a small box in layout units right of it (one
layout shape, so one SVG path, per kind of mark for the whole tree: 2,000 glyphs draw fast). Detailed: with
few nodes in view, the page's script (ui/js/treelod.js) draws each one a real boxplot in screen pixels
(box, whiskers, median, passes as dots, R̄ tick) with R̄ and σ² written beside it, from `glyph_meta`.
Both read the same box statistics (figstyle.box_stats) and colour bins.

Shadow scores are drawn apart from the run's own statistics, in purple, so that passes the run never paid
for are never read as its own: an open purple diamond around every node the shadow passes find OOD
(σ² > τ), a small purple dot beside the ID ones; the hover gives the shadow R̄, σ², K."""

from __future__ import annotations

import html
from collections.abc import Mapping
from typing import Any

from uats_core.status import NodeStatus

from .figstyle import (
    CHOSEN_COLOUR,
    DETAIL_LIMIT,
    GLYPH_DX,
    GLYPH_HALF_HEIGHT,
    OOD_COLOUR,
    RAIL_LIMIT,
    SHADOW_COLOUR,
    Polyline,
    bin_colours,
    box_stats,
    colour_bin,
    fmt_mean,
    fmt_var,
    path_shape,
)
from .treedata import TreeState

Pos = Mapping[int, tuple[float, float]]
COMPACT_NAMES = ("score scale 0–1", "whiskers", "MC boxes", "medians", "R̄ ticks")  # shapes hidden while detailed


def _r(v: float) -> float:
    return round(v, 3)


def _stats(n: Mapping[str, Any]) -> dict[str, Any] | None:
    return box_stats(n.get("mc_scores") or ([n["mean"]] if n.get("mean") is not None else []))


def draws_rails(n_shown: int) -> bool:
    """Whether the compact glyphs of a tree of `n_shown` nodes have their grey 0–1 rails."""
    return n_shown <= RAIL_LIMIT


def glyph_shapes(state: TreeState, pos: Pos, cmin: float, cmax: float) -> list[dict[str, Any]]:
    """Compact boxplot glyphs as a handful of layout shapes, one SVG <path> per kind of mark for the whole
    tree (figstyle.path_shape): grey 0–1 rails, whiskers, boxes filled per colour bin, medians, R̄ ticks
    (Plotly box traces with precomputed statistics were measured slower here; see benchmarks/app.py)."""
    x0, x1 = GLYPH_DX
    xm = (x0 + x1) / 2
    h = GLYPH_HALF_HEIGHT
    rails = draws_rails(len(pos))
    rail: list[Polyline] = []
    whiskers: list[Polyline] = []
    medians: list[Polyline] = []
    ticks: list[Polyline] = []
    boxes: dict[int, list[Polyline]] = {}
    for nid, (x, y) in pos.items():
        st = _stats(state.nodes[nid])
        if nid == 0 or st is None:
            continue

        def sy(v: float, y: float = y) -> float:  # this node's row
            return y - h + 2 * h * v

        xl, xr, xc = x + x0, x + x1, x + xm
        if rails:
            rail.append(((xc, sy(0.0)), (xc, sy(1.0))))
        if st["n"] > 1:
            q1, q3 = sy(st["q1"]), sy(st["q3"])
            if q3 - q1 < 0.02:  # a near-zero spread still shows as a sliver, not nothing
                q1, q3 = q1 - 0.01, q3 + 0.01
            boxes.setdefault(colour_bin(st["mean"], cmin, cmax), []).append(((xl, q1), (xr, q1), (xr, q3), (xl, q3)))
            whiskers += [((xc, sy(st["lo"])), (xc, q1)), ((xc, q3), (xc, sy(st["hi"])))]
            medians.append(((xl, sy(st["median"])), (xr, sy(st["median"]))))
        ticks.append(((x + x0 - 0.05, sy(st["mean"])), (x + x1 + 0.05, sy(st["mean"]))))
    colours = bin_colours(cmin, cmax)
    shapes = [path_shape(rail, COMPACT_NAMES[0], "#e6e6e6", 1), path_shape(whiskers, COMPACT_NAMES[1], "#555555", 0.8)]
    shapes += [
        path_shape(b, COMPACT_NAMES[2], "#444444", 0.6, fill=colours[k], closed=True) for k, b in sorted(boxes.items())
    ]
    shapes += [
        path_shape(medians, COMPACT_NAMES[3], "#111111", 1.1),
        path_shape(ticks, COMPACT_NAMES[4], "#d62728", 1.6),
    ]
    return [sh for sh in shapes if sh is not None]


def glyph_meta(
    state: TreeState,
    scored: list[int],
    cmin: float,
    cmax: float,
    trace: int,
    n_shown: int = 0,
    shadow: Mapping[int, Mapping[str, Any]] | None = None,
) -> dict[str, Any]:
    """What the page's script needs to draw the detailed boxplots of any node that comes into view, in the
    order of the scored nodes' marker trace (data[trace]: its x, y and ids): per node the box statistics
    [lo, q1, median, q3, hi, R̄], its passes, its colour bin, whether σ² > τ, and "R̄|σ²" as printed (a node
    with no σ² of its own and shadow passes: their σ², labelled shadow)."""
    gate = state.gate
    st_flat: list[float] = []
    passes: list[list[float]] = []
    bins: list[int] = []
    ood: list[int] = []
    labels: list[str] = []
    for nid in scored:
        n = state.nodes[nid]
        st = _stats(n)
        if st is None:  # scored nodes always have a mean; kept aligned with the trace all the same
            st = {"lo": 0.0, "q1": 0.0, "median": 0.0, "q3": 0.0, "hi": 0.0, "mean": 0.0}
        st_flat += [_r(st[k]) for k in ("lo", "q1", "median", "q3", "hi", "mean")]
        passes.append([round(float(v), 2) for v in n.get("mc_scores") or ()])
        bins.append(colour_bin(st["mean"], cmin, cmax))
        ood.append(1 if gate.shown(n) else 0)
        own = n.get("var")
        row = (shadow or {}).get(nid) if own is None else None
        var = f"{fmt_var(row.get('var'))} shadow" if row else fmt_var(own)
        labels.append(f"{fmt_mean(n.get('mean'))}|{var}")  # as every panel prints them
    return {
        "trace": trace,
        "limit": DETAIL_LIMIT,
        "st": st_flat,
        "p": passes,
        "bin": bins,
        "ood": ood,
        "lab": labels,
        "palette": list(bin_colours(cmin, cmax)),
        "ood_colour": OOD_COLOUR,
        "tau": gate.tau,
        "stat": gate.label,
        "compact": list(COMPACT_NAMES),
        # where a compact glyph lies round its node (layout units): the page keeps decision labels off them
        "dx": list(GLYPH_DX),
        "h": GLYPH_HALF_HEIGHT,
        "rails": draws_rails(n_shown or len(scored)),
    }


def _key(name: str, marker: dict[str, Any], group: str = "", mode: str = "markers", **style: Any) -> dict[str, Any]:
    """A legend-only entry (x=[None] draws nothing); in `group`, a click on it hides the marks it names."""
    tr: dict[str, Any] = {
        "type": "scatter",
        "mode": mode,
        "x": [None],
        "y": [None],
        "name": name,
        "marker": marker,
        "hoverinfo": "skip",
        "showlegend": True,
        **style,
    }
    if group:
        tr["legendgroup"] = group
    return tr


def legend_keys(present: set[str], tau: float, glyphs: bool) -> list[dict[str, Any]]:
    """Legend entries for the marks that have no trace of their own to name them (the halos and answer marks
    do): the chosen path (a layout shape), the node's colour, size and ring, its glyph, its shape, and the text
    labels; the optional ones only when `present` names them."""
    # short names: a horizontal legend that wraps gives every entry the width of the longest one
    keys = []
    if "chosen path" in present:
        # first in the legend, where its trace used to put it (before the halos' and answers' traces)
        keys.append(_key("chosen path", {}, mode="lines", line={"color": CHOSEN_COLOUR, "width": 5}, legendrank=1))
    keys += [
        _key("question", {"symbol": "square", "size": 12, "color": "#999999", "line": {"color": "#333", "width": 1}}),
        _key("colour R̄, size K", {"size": 11, "color": "#b5de2b", "line": {"color": "#333", "width": 0.8}}),
        _key("OOD: σ² > τ", {"size": 11, "color": "white", "line": {"color": OOD_COLOUR, "width": 3}}),
        # the selection ring is a layout shape drawn in the page (PLOT_JS ringAt): named here, as a key
        _key("inspected node", {"size": 14, "symbol": "circle-open", "color": "#111", "line": {"width": 2.5}}),
    ]
    if glyphs:
        # the detailed boxplot's marks (ui/js/treelod.js) and the compact one's, named once
        keys += [
            _key(
                "box: MC passes",
                {"symbol": "square", "size": 10, "color": "#5ec962", "line": {"color": "#444", "width": 1}},
            ),
            _key("one MC pass", {"symbol": "diamond", "size": 6, "color": "rgba(20,20,20,0.75)"}),
            _key("R̄ = their mean", {}, mode="lines", line={"color": "#d62728", "width": 2.5}),
            _key("grey: scale 0–1", {"symbol": "square", "size": 10, "color": "#ececec"}),
        ]
    text = {"mode": "text", "textfont": {"color": "#8a5a00"}}
    optional = (
        (NodeStatus.FINISHED, _key(str(NodeStatus.FINISHED), {"size": 10, "symbol": "diamond", "color": "#888"})),
        (
            NodeStatus.TRUNCATED,
            _key(str(NodeStatus.TRUNCATED), {"size": 10, "symbol": "triangle-down", "color": "#888"}),
        ),
        (NodeStatus.PRUNED, _key("pruned (faded)", {"size": 10, "color": "#888", "opacity": 0.35})),
        (
            "chosen",
            _key(
                "chosen answer",
                {"size": 13, "symbol": "star", "color": "#b5de2b", "line": {"color": CHOSEN_COLOUR, "width": 2}},
            ),
        ),
        ("passes", _key("+Kp extra passes", {}, **text)),
        ("children", _key("×N children", {}, **text)),
        ("cut", _key("✂ pruned now", {}, **text)),
        ("hidden", _key("+k hidden below", {}, mode="text", textfont={"color": "#555555"})),
    )
    return keys + [k for name, k in optional if name in present]


def _shadow_hover(nid: int, row: Mapping[str, Any]) -> list[Any]:
    k = len(row.get("mc_scores") or [])
    return [
        nid,
        f"· <b>shadow</b> ({'OOD' if row.get('ood') else 'ID'}, not spent by the run)",
        html.escape(f"R̄ {row.get('mean') or 0:.3f} σ² {row.get('var') or 0:.5f} K {k} τ {row.get('tau') or 0:g}"),
    ]


def shadow_traces(
    pos: Mapping[int, tuple[float, float]], shadow: Mapping[int, Mapping[str, Any]], template: str
) -> list[dict[str, Any]]:
    """Tree traces for the shadow rows of the drawn nodes (clickable like the nodes: customdata[0] = id)."""
    out: list[dict[str, Any]] = []
    for ood, name, marker, dx in (
        (
            True,
            "shadow OOD (σ² > τ, not spent)",
            {
                "symbol": "diamond-open",
                "size": 22,
                "color": SHADOW_COLOUR,
                "line": {"width": 2.5, "color": SHADOW_COLOUR},
            },
            0.0,
        ),
        (False, "shadow ID", {"symbol": "circle", "size": 5, "color": SHADOW_COLOUR}, 0.22),
    ):
        ids = [i for i in pos if i in shadow and bool(shadow[i].get("ood")) == ood]
        if ids:
            out.append(
                {
                    "type": "scatter",
                    "mode": "markers",
                    "name": name,
                    "showlegend": True,
                    "x": [round(pos[i][0] + dx, 4) for i in ids],
                    "y": [round(pos[i][1] + (0.22 if dx else 0), 4) for i in ids],
                    "customdata": [_shadow_hover(i, shadow[i]) for i in ids],
                    "hovertemplate": template,
                    "marker": marker,
                }
            )
    return out
