"""Figure 1's traces (ui/views/figure1.py lays them out): each panel's boxes, the single passes and R̄ ticks, the
gated σ² bars, the shadow passes and the right margin's table, each kind one or a few traces for every row of the
step (a trace per row made a 64-row step 131 traces, and drawing them was most of a click's time)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .decisions import Candidate
from .figstyle import OOD_COLOUR, SHADOW_COLOUR, WRONG_COLOUR, box_stats, path_shape

EXTRA_COLOUR = WRONG_COLOUR  # the passes a re-evaluation added
MONO = {"family": "DejaVu Sans Mono, monospace", "size": 11}
TABLE_PAD = 2  # characters between the σ² panel's right edge and the table: its last tick label reaches into them
BOX_HALF = 0.28  # half a box's height in rows (the median's tick spans it); whisker caps are half that


def deviations(passes: Sequence[float]) -> list[float]:
    """Each pass minus the passes' own R̄: where it lies around its candidate's mean, in score units."""
    mean = sum(passes) / len(passes) if passes else 0.0
    return [round(v - mean, 5) for v in passes]


def box_traces(
    boxes: Sequence[tuple[float, int, dict[str, Any], str, bool]],
    axis: str,
    name: str,
    hover: str,
    half: float = BOX_HALF,
    outline: tuple[str, float] | None = None,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Tukey boxes (figstyle.box_stats) of many rows as one bar trace for all of them (each bar a row's quartiles,
    filled in its own colour) and their whiskers and medians as one layout shape per outline colour: (traces,
    shapes). A box trace has one fill, so a row each made a 64-row step 128 box traces; a line trace broken into
    pieces draws a <path> per piece, 640 at 64 rows (a 64-row Figure 1 drew in 94 ms of CPU, 54 as shapes on a
    bare page). `boxes` holds (y, node id, stats, fill, ood) per row; `hover` is a hovertemplate over customdata
    [node id, σ² of the row's samples]; `outline` (colour, width) for every row, else magenta and thicker for OOD."""
    if not boxes:
        return [], []

    def line(ood: bool) -> tuple[str, float]:
        return outline or ((OOD_COLOUR, 2) if ood else ("#555", 1))

    bars = {
        "type": "bar",
        "orientation": "h",
        "name": name,
        "xaxis": axis,
        "yaxis": "y",
        "showlegend": False,
        "y": [y for y, *_ in boxes],
        "base": [round(st["q1"], 6) for _, _, st, _, _ in boxes],
        "x": [round(st["q3"] - st["q1"], 6) for _, _, st, _, _ in boxes],
        "width": 2 * half,
        "marker": {
            "color": [fill for *_, fill, _ in boxes],
            "line": {"color": [line(ood)[0] for *_, ood in boxes], "width": [line(ood)[1] for *_, ood in boxes]},
        },
        "customdata": [[nid, round(st["sd"] ** 2, 8)] for _, nid, st, _, _ in boxes],
        "hovertemplate": hover,
    }
    shapes = []
    for ood in (False, True):
        cap = half / 2
        pieces = [
            piece
            for y, _, st, _, o in boxes
            if o == ood
            for piece in (
                ((st["lo"], y), (st["q1"], y)),
                ((st["q3"], y), (st["hi"], y)),
                ((st["lo"], y - cap), (st["lo"], y + cap)),
                ((st["hi"], y - cap), (st["hi"], y + cap)),
                ((st["median"], y - half), (st["median"], y + half)),
            )
        ]
        colour, width = line(ood)
        # over the bars (a median is drawn across its box); x to 6 places: the spread axis spans thousandths
        shape = path_shape(pieces, f"{name} whiskers", colour, width, xref=axis, layer="above", digits=6)
        if shape is not None:
            shapes.append(shape)
    return [bars], shapes


def row_boxes(
    rows: Sequence[Candidate], passes: Mapping[int, list[float]], fills: Mapping[int, str]
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Every row's box on the score axis and on the shared spread axis (the same passes less their own R̄):
    (traces, shapes) as box_traces makes them."""
    score, spread = [], []
    for i, c in enumerate(rows):
        ps = passes[c.node_id]
        st, dev = box_stats(ps), box_stats(deviations(ps))
        if st is None or dev is None:
            continue
        dev["sd"] = st["sd"]  # the row's σ², not the rounded deviations'
        score.append((i, c.node_id, st, fills[c.node_id], c.ood))
        spread.append((i, c.node_id, dev, fills[c.node_id], c.ood))
    score_traces, score_shapes = box_traces(
        score,
        "x",
        "passes",
        "node %{customdata[0]}: passes' quartiles %{base:.4f} to %{x:.4f} wide, σ² %{customdata[1]:.3g}<extra></extra>",
    )
    spread_traces, spread_shapes = box_traces(
        spread,
        "x2",
        "spread",
        "node %{customdata[0]}: pass − R̄, quartiles from %{base:+.4f}, "
        "%{x:.4f} wide, σ² %{customdata[1]:.3g}<extra></extra>",
    )
    return score_traces + spread_traces, score_shapes + spread_shapes


def pass_marks(rows: Sequence[Candidate], passes: Mapping[int, list[float]], dots: bool) -> list[dict[str, Any]]:
    """Every row's R̄ tick, and with `dots` its single passes (orange: re-evaluation's), each kind one trace for
    all rows: a trace per row made a 64-row step about 200 traces, and drawing them was most of a click's time."""
    drawn = [(i, c, passes[c.node_id]) for i, c in enumerate(rows) if passes[c.node_id]]
    out = [
        {
            "type": "scatter",
            "mode": "markers",
            "x": [round(sum(ps) / len(ps), 5) for _, _, ps in drawn],
            "y": [i for i, _, _ in drawn],
            "xaxis": "x",
            "yaxis": "y",
            "marker": {"symbol": "line-ns-open", "size": 16, "color": "#d62728", "line": {"width": 3}},
            "showlegend": False,
            "customdata": [[c.node_id] for _, c, _ in drawn],
            "name": "R̄",
            "hovertemplate": "node %{customdata[0]}: R̄ %{x:.4f}<extra></extra>",
        }
    ]
    if not dots:
        return out
    marks: dict[tuple[bool, str], tuple[list[float], list[float]]] = {}
    for i, c, ps in drawn:
        first = len(ps) - c.extra if c.decided else len(ps)
        dev = deviations(ps)
        for k in range(len(ps)):
            y = round(i + ((k * 0.618034) % 1.0 - 0.5) * 0.34, 3)  # a fixed jitter: passes on one value stay apart
            for axis, xs in (("x", ps), ("x2", dev)):
                xy = marks.setdefault((k >= first, axis), ([], []))
                xy[0].append(round(xs[k], 6))
                xy[1].append(y)
    for (extra, axis), (xs, ys) in sorted(marks.items()):
        out.append(
            {
                "type": "scatter",
                "mode": "markers",
                "x": xs,
                "y": ys,
                "xaxis": axis,
                "yaxis": "y",
                "marker": {"size": 4, "color": EXTRA_COLOUR if extra else "rgba(30,30,30,0.75)"},
                "showlegend": False,
                "hoverinfo": "skip",
                "name": "extra passes" if extra else "passes",
            }
        )
    return out


def gate_traces(rows: Sequence[Candidate], label: str) -> list[dict[str, Any]]:
    ys = list(range(len(rows)))
    out = [
        {
            "type": "bar",
            "orientation": "h",
            "y": ys,
            "x": [c.stat if c.stat else None for c in rows],
            "xaxis": "x3",
            "yaxis": "y",
            "width": 0.56,
            "name": f"{label} read",
            "showlegend": False,
            "marker": {"color": [OOD_COLOUR if c.ood else "#9e9e9e" for c in rows]},
            "customdata": [[c.node_id] for c in rows],
            "hovertemplate": f"node %{{customdata[0]}}: {label} the test read %{{x:.3g}}<extra></extra>",
        }
    ]
    after = [(i, c) for i, c in enumerate(rows) if c.extra and c.stat_after is not None]
    if after:
        out.append(
            {
                "type": "scatter",
                "mode": "markers",
                "y": [i for i, _ in after],
                "x": [c.stat_after for _, c in after],
                "xaxis": "x3",
                "yaxis": "y",
                "showlegend": False,
                "name": f"{label} after",
                "customdata": [[c.node_id] for _, c in after],
                "marker": {"symbol": "diamond-open", "size": 10, "color": "#222", "line": {"width": 2}},
                "hovertemplate": f"node %{{customdata[0]}}: {label} after the extra passes %{{x:.3g}}<extra></extra>",
            }
        )
    return out


def shadow_boxes(
    rows: Sequence[Candidate], shadow: Mapping[int, Mapping[str, Any]]
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """A purple box of each row's shadow passes (ui.jobs.shadow: passes the run never paid for), under its own:
    (traces, shapes) as box_traces makes them."""
    boxes = []
    for i, c in enumerate(rows):
        st = box_stats([float(v) for v in (shadow.get(c.node_id) or {}).get("mc_scores") or []])
        if st is not None:
            boxes.append((i + 0.3, c.node_id, st, "rgba(123, 50, 148, 0.18)", False))
    return box_traces(  # the shadow's own colour, whatever the row's
        boxes,
        "x",
        "shadow",
        "node %{customdata[0]}: shadow passes' quartiles from "
        "%{base:.4f}, σ² %{customdata[1]:.3g} (not spent)<extra></extra>",
        half=0.15,
        outline=(SHADOW_COLOUR, 1.5),
    )


def table_trace(lines: list[str], log_hi: float) -> dict[str, Any]:
    """The right margin's table, a line per row, as one text trace at the σ² panel's right edge (a hair inside
    it: Plotly hides a text point on the edge) drawn past it: 64 annotations were a third of the draw."""
    return {
        "type": "scatter",
        "mode": "text",
        "x": [10.0 ** (log_hi - 1e-4)] * len(lines),
        "y": list(range(len(lines))),
        "text": [(" " * TABLE_PAD + line).replace(" ", "\u00a0") for line in lines],
        "textposition": "middle right",
        "cliponaxis": False,
        "xaxis": "x3",
        "yaxis": "y",
        "textfont": {**MONO, "color": "#222"},
        "hoverinfo": "skip",
        "showlegend": False,
        "name": "table",
    }
