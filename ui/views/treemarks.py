"""The tree's marks (ui/views/treefig.py lays them out): elbow edges, halos for decisions, new nodes, shared
prefixes and search hits, the node markers with their hover text, the answer marks and the decision labels."""

from __future__ import annotations

import html
import math
from collections.abc import Iterable, Mapping
from typing import Any

from uats_core.status import NodeStatus

from .figstyle import (
    CHOSEN_COLOUR,
    COLORSCALE,
    DECIDED_COLOUR,
    DETAIL_LIMIT,
    MATCH_COLOUR,
    NEW_COLOUR,
    OOD_COLOUR,
    RIGHT_COLOUR,
    SHARED_COLOUR,
    WRONG_COLOUR,
    Polyline,
    fmt_mean,
    fmt_var,
    path_shape,
)
from .treedata import TERMINAL, TreeState
from .treeview import ViewOptions

Pos = Mapping[int, tuple[float, float]]


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
    stats = (
        f"R̄ {fmt_mean(n.get('mean'))} σ² {fmt_var(n.get('var'))} K {k} "
        f"R̂ {fmt_mean(n.get('ucb'))} · ×{n.get('children_granted', 0)} +{n.get('extra_passes', 0)}p"
    )
    if status in TERMINAL:
        stats += f" · ans <b>{html.escape(str(n.get('answer')))}</b> " + {True: "✓", False: "✗"}.get(
            n.get("correct"), "?"
        )
    return [nid, head + "<br>" + stats, html.escape(_short(n.get("step", ""), 90))]


# ------------------------------------------------------------------------------------------ tree
def coord(v: float) -> float:
    return round(v, 3)


def edge_shapes(
    state: TreeState, pos: Pos, parent_of: Mapping[int, Any], chosen_path: set[int], faded: set[int]
) -> list[dict[str, Any]]:
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
    for ids, colour, width, name in (
        (sorted(chosen_path & set(pos)), CHOSEN_COLOUR, 5, "chosen path"),
        (dead, "#c8c8c8", 1, "pruned / context"),
        (live, "#777777", 1.2, "edges"),
    ):
        shape = path_shape(elbows(ids), name, colour, width)
        if shape is not None:
            shapes.append(shape)
    return shapes


def halo_traces(
    state: TreeState, pos: Pos, view: ViewOptions, matching: set[int], shared_keys: set[tuple[str, ...]] | None
) -> list[dict[str, Any]]:
    """Halos under the markers: decided at this iteration, new at this iteration, shared, search hits."""
    data: list[dict[str, Any]] = []

    def halo(ids: Iterable[int], colour: str, size: float, name: str) -> None:
        ids = [i for i in ids if i in pos]
        if ids:
            data.append(
                {
                    "type": "scatter",
                    "mode": "markers",
                    "x": [coord(pos[i][0]) for i in ids],
                    "y": [coord(pos[i][1]) for i in ids],
                    "hoverinfo": "skip",
                    "name": name,
                    "marker": {"size": size, "color": colour, "line": {"width": 0}},
                }
            )

    if shared_keys:
        halo([i for i in pos if i != 0 and state.prefix_key(i) in shared_keys], SHARED_COLOUR, 30, "shared prefix")
    if view.show_decisions and state.iteration:
        halo(
            [i for i, d in state.decisions.items() if d.children or d.extra_passes or d.status == NodeStatus.PRUNED],
            DECIDED_COLOUR,
            34,
            f"decided at t={state.iteration}",
        )
        halo(
            [i for i in pos if state.nodes[i].get("created_iter") == state.iteration and i != 0],
            NEW_COLOUR,
            24,
            f"new at t={state.iteration}",
        )
    if matching and view.search.strip():
        halo(matching, MATCH_COLOUR, 28, "search hit")
    return data


MARKER_MAX = 14.0  # uncapped, a few heavily re-evaluated nodes covered dozens of neighbours at N=512


def marker_size(k: int) -> float:
    """Marker size for K passes: grows with K, capped (the hover and the inspector give the exact K)."""
    return round(min(MARKER_MAX, 6.0 + 1.6 * math.sqrt(max(1, k))), 1)


NODE_SYMBOLS = {
    NodeStatus.FINISHED: "diamond",
    NodeStatus.TRUNCATED: "triangle-down",
    NodeStatus.PRUNED: "circle",
    NodeStatus.KEPT: "circle",
    NodeStatus.ACTIVE: "circle",
}


def node_traces(
    state: TreeState, pos: Pos, faded: set[int], cmin: float, cmax: float, show_colorbar: bool
) -> list[dict[str, Any]]:
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
        data.append(
            {
                "type": "scatter",
                "mode": "markers",
                "name": "nodes (colour = R̄)",
                "showlegend": False,
                "x": [coord(pos[i][0]) for i in scored],
                "y": [coord(pos[i][1]) for i in scored],
                "customdata": [hover_data(state, i) for i in scored],
                "hovertemplate": HOVER_TEMPLATE,
                "marker": {
                    "color": [round(float(n["mean"]), 4) for n in nodes],
                    "colorscale": COLORSCALE,
                    "cmin": cmin,
                    "cmax": cmax,
                    "showscale": show_colorbar,
                    "colorbar": {"title": {"text": "R̄"}, "thickness": 12, "len": 0.6, "x": 1.0},
                    "size": [s + 5 if i in chosen else s for i, s in zip(scored, sizes)],
                    "symbol": [
                        "star" if i in chosen else NODE_SYMBOLS.get(n.get("status"), "circle")
                        for i, n in zip(scored, nodes)
                    ],
                    "opacity": [
                        0.35 if (n.get("status") == NodeStatus.PRUNED or i in faded) else 1.0
                        for i, n in zip(scored, nodes)
                    ],
                    "line": {
                        "color": [
                            OOD_COLOUR if n.get("ood") else CHOSEN_COLOUR if i in chosen else "#333333"
                            for i, n in zip(scored, nodes)
                        ],
                        "width": [3 if n.get("ood") else 2 if i in chosen else 0.8 for i, n in zip(scored, nodes)],
                    },
                },
            }
        )
    if unscored:
        data.append(
            {
                "type": "scatter",
                "mode": "markers",
                "name": "question / unscored",
                "showlegend": False,
                "x": [coord(pos[i][0]) for i in unscored],
                "y": [coord(pos[i][1]) for i in unscored],
                "customdata": [hover_data(state, i) for i in unscored],
                "hovertemplate": HOVER_TEMPLATE,
                "marker": {
                    "size": [16 if i == 0 else 8 for i in unscored],
                    "symbol": ["square" if i == 0 else "circle-open" for i in unscored],
                    "color": "#999999",
                    "line": {"color": "#333", "width": 1},
                },
            }
        )
    return data


def answer_marks(state: TreeState, pos: Pos) -> list[dict[str, Any]]:
    """Right and wrong answers as marks centred on their node, drawn under it: a green ring round a right
    answer, an orange ✗ through a wrong one. Markers, so they stay on their node whatever the zoom (an
    offset in layout units put the ✗ 400 px away once a focus spread a few nodes across the plot)."""
    data: list[dict[str, Any]] = []
    terminal = [i for i in pos if state.nodes[i].get("status") in TERMINAL]
    for correct, name, symbol, colour, width, grow in (
        (True, "right answer", "circle-open", RIGHT_COLOUR, 2.5, 7),
        (False, "wrong answer", "x-thin-open", WRONG_COLOUR, 3, 10),
    ):
        ids = [i for i in terminal if state.nodes[i].get("correct") is correct]
        if ids:
            sizes = [marker_size(int(state.nodes[i].get("k") or 0)) + grow for i in ids]
            data.append(
                {
                    "type": "scatter",
                    "mode": "markers",
                    "x": [coord(pos[i][0]) for i in ids],
                    "y": [coord(pos[i][1]) for i in ids],
                    "hoverinfo": "skip",
                    "showlegend": True,
                    "name": name,
                    "marker": {
                        "symbol": symbol,
                        "size": sizes,
                        "color": colour,
                        "line": {"color": colour, "width": width},
                    },
                }
            )
    return data


# an invisible marker this wide under each label: Plotly sets the text that far off its node; clear of the
# node's halo where rows are DETAIL_ROW_PX tall, close to it in a big tree (26 px rows: 26 put a label on the
# node of the row above)
LABEL_STANDOFF = {"detail": 26, "compact": 10}


def text_marks(state: TreeState, pos: Pos, view: ViewOptions, hidden_below: Mapping[int, int]) -> list[dict[str, Any]]:
    """ "+n hidden" under collapsed or capped nodes and this iteration's decisions above nodes: few, so text,
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
    return [
        {
            "type": "scatter",
            "mode": "markers+text",
            "x": [coord(pos[i][0]) for i, *_ in labels],
            "y": [coord(pos[i][1]) for i, *_ in labels],
            "text": [t for _, t, _, _ in labels],
            "textposition": [w for *_, w in labels],
            "marker": {"size": standoff, "opacity": 0},
            "textfont": {"color": [c for _, _, c, _ in labels], "size": 10},
            "hoverinfo": "skip",
            "showlegend": False,
            "name": "marks",
        }
    ]


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
