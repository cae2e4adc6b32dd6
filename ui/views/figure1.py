"""The paper's Figure 1 for one step: every candidate the step decides over (its whole frontier, not only one
node's siblings: the children's softmax shares C across all of them), one row each, grouped by parent.

A row shows four things, each in its own pixel column, so no two labels ever share a place at any count:
- left margin: the candidate's id (the first row of a parent's group names the parent: `#26 ▸ #27`), ✓/✗
  for a right or wrong step, ◀ for the inspected one (its row is banded in yellow);
- its MC-dropout passes on the score scale (box, dots, red R̄ tick; fill = R̄ on the tree's colour scale):
  where the candidate stands;
- the same passes as deviations from their own R̄, on one scale shared by the whole step (as in the paper's
  Figure 1): the most uncertain candidate is the widest box, a confident one a tick (0.85 with σ² = 0.032 beside
  0.76 with σ² = 0.001);
- the σ² the ID/OOD test read as a bar against τ on a log scale (magenta = OOD), ◇ = σ² after the extra
  passes: 0.032 beside 0.001 is a decade and a half apart at a glance, and 1e-6 still has a bar;
- right margin, a table in monospace: R̄ and σ² as the gate read them, K, the decision, σ² after
  re-evaluation. The numbers come from ui.views.decisions.Candidate, as in every other panel.

The inspector draws it at panel width; its PNG/SVG export is the same figure at a fixed size."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from uats_core.estimators import ESTIMATOR_CLASSES

from .decisions import Candidate, Step
from .figstyle import OOD_COLOUR, colour_for, fmt_mean, fmt_var, path_shape
from .figure1_traces import MONO, TABLE_PAD, deviations, gate_traces, pass_marks, row_boxes, shadow_boxes, table_trace
from .frontier import ordered_rows, page_of

ROW_PX = 24  # one row: a 12 px box and 11 px text with room above and below
PER_PAGE = 64  # rows on one page of the figure (the page holding the inspected node is shown)
DOTS_UP_TO = 32  # rows with their single passes drawn as dots; more, and the boxes alone read better
MIN_PANELS_PX = 310  # the three panels' least width (the inspector beside the tree at 1280): below it, sideways
CHAR_PX = 7.0  # an 11 px monospace character (DejaVu Sans Mono 6.6 px, rounded up): the margins' widths
LABEL_CHAR_PX = 7.2  # the left labels' 12 px sans-serif, per character, rounded up
SELECTED_BAND = "rgba(255, 200, 0, 0.30)"
GROUP_BAND = "rgba(0, 0, 0, 0.045)"
ANNOTATION_PAD_PX = 2  # an annotation's text starts this far inside its box (Plotly's borderpad 1 + border 1)
TOP_PX = 96  # the figure's top margin: title, axis titles and ticks, the table's heads (kept in view: sticky_top)
CAPTION_LINES = (
    "rows: the step's candidates, grouped by parent (#p ▸ #c starts the group under node p)",
    "✓/✗: the step is right/wrong · ◀ and yellow band: the inspected node",
    "passes: box = quartiles, whiskers = 1.5 IQR, ● = one {sample} (orange: re-evaluation's)",
    "red tick = R̄ · fill = R̄ (the tree's colours) · magenta outline = OOD",
    "spread: each pass − its own R̄, one scale for the whole step: widest = most uncertain, a tick = confident",
    "σ² read: what the ID/OOD test read, log scale (magenta: over τ, OOD) · ◇ = σ² after re-evaluation",
    "decision: +Kp extra passes, ×N children, ✂ pruned, · not decided yet",
)


def score_floor(passes: Sequence[float]) -> float:
    """Where the score axis starts: at 0, unless every pass of the rows sits high (a common case: all between
    0.7 and 1), then at the tenth below the lowest, so the boxes fill the panel (the title says where it starts)."""
    low = min(passes, default=0.0)
    floor = math.floor((low - 0.02) * 10) / 10
    return 0.0 if floor < 0.3 else min(floor, 0.8)


def _passes(state_nodes: Mapping[int, Mapping[str, Any]], c: Candidate) -> list[float]:
    return [float(v) for v in state_nodes.get(c.node_id, {}).get("mc_scores") or ()]


def _labels(
    rows: Sequence[Candidate], grouped: bool, selected: int | None, truth: Mapping[int, bool | None]
) -> list[str]:
    out, last_parent = [], object()
    for c in rows:
        mark = {True: " ✓", False: " ✗"}.get(truth.get(c.node_id), "")
        head = ""
        if grouped and c.parent_id != last_parent:
            head = "Q ▸ " if c.parent_id == 0 else f"#{c.parent_id} ▸ "
        last_parent = c.parent_id
        out.append(f"{head}#{c.node_id}{mark}" + (" ◀" if c.node_id == selected else ""))
    return out


NUMBER_HEADS = ("R̄", "read", "K", "decision", "after")
NUMBER_WIDTHS = (5, 8, 3, 8, 8)


def number_cells(c: Candidate) -> tuple[str, ...]:
    """A row's numbers, in the order of NUMBER_HEADS: R̄ and the gated σ² as the test read them, K then, the
    decision, the gated σ² after the extra passes ('' when it got none)."""
    return (fmt_mean(c.mean), fmt_var(c.stat), str(c.k), c.decision, fmt_var(c.stat_after) if c.extra else "")


def _table_line(cells: Sequence[str], shadow: str = "") -> str:
    return "  ".join(cell.rjust(w) for cell, w in zip(cells, NUMBER_WIDTHS)) + shadow


def step_figure(
    step: Step,
    *,
    selected: int | None = None,
    truth: Mapping[int, bool | None] | None = None,
    sort_by: str = "parent",
    page: int | None = None,
    per_page: int = PER_PAGE,
    siblings_only: bool = False,
    shadow: Mapping[int, Mapping[str, Any]] | None = None,
    colour_range: tuple[float, float] = (0.0, 1.0),
    width: int | None = None,
    title: str | None = None,
) -> dict[str, Any]:
    """The figure dict of `step` (ui.views.decisions.step_of / step_at); `selected` is marked, `truth` puts ✓/✗
    beside each id, `sort_by` is "parent" (grouped, best R̄ first within a group) or mean / var / ucb (best first);
    page None: the page holding `selected`. `shadow` rows (ui.jobs.shadow) add a purple box of the shadow passes
    under each candidate's own. `width` fixes the size for an exported image (None: the page's width)."""
    rows_all = ordered_rows(
        step,
        sort_by,
        step.state.nodes[selected].get("parent_id") if siblings_only and selected in step.state.nodes else None,
    )
    rank = {c.node_id: i for i, c in enumerate(rows_all)}
    if page is None:
        page = rank[selected] // max(1, int(per_page)) if selected in rank else 0
    rows, page, pages = page_of(rows_all, page, per_page)
    grouped = sort_by == "parent"
    nodes, gate = step.state.nodes, step.state.gate
    n = len(rows)
    labels = _labels(rows, grouped, selected, truth or {})
    passes = {c.node_id: _passes(nodes, c) for c in rows}
    floor = score_floor([v for ps in passes.values() for v in ps])
    cmin, cmax = colour_range
    fills = {c.node_id: colour_for(c.mean_after, cmin, cmax) for c in rows}
    data, whiskers = row_boxes(rows, passes, fills)
    if shadow:
        shadow_traces, shadow_whiskers = shadow_boxes(rows, shadow)
        data, whiskers = data + shadow_traces, whiskers + shadow_whiskers
    data += pass_marks(rows, passes, n <= DOTS_UP_TO)
    data += gate_traces(rows, gate.label)
    shadow_cells = {c.node_id: _shadow_text(shadow.get(c.node_id)) for c in rows} if shadow else {}
    lines = [_table_line(number_cells(c), shadow_cells.get(c.node_id, "")) for c in rows]
    gate_axis = log_axis([c.stat for c in rows] + [c.stat_after for c in rows if c.extra], gate.tau)
    data.append(table_trace(lines, gate_axis["range"][1]))
    head = _table_line(
        [h if h not in ("read", "after") else f"{gate.label} {h}" for h in NUMBER_HEADS], "  shadow" if shadow else ""
    )
    right = int(CHAR_PX * (TABLE_PAD + max(len(x) for x in [head, *lines])) + 10)
    left = int(LABEL_CHAR_PX * max(len(x) for x in labels) + 16)
    if title is None:
        title = step_title(step, len(rows_all), page, pages, per_page, n, siblings_only)
    # one spread scale for the whole step, whichever page is shown
    spread = spread_axis([_passes(nodes, c) for c in rows_all])
    layout = _layout(
        rows,
        labels,
        head,
        left,
        right,
        floor,
        spread,
        gate_axis,
        gate.tau,
        gate.label,
        title,
        width,
        selected,
        grouped,
        gate.estimator,
    )
    layout["shapes"] += whiskers  # after the τ line, which stays the first shape
    return {
        "data": data,
        "layout": layout,
        "config": {
            "displaylogo": False,
            "responsive": True,
            "toImageButtonOptions": {"format": "svg", "filename": f"figure1-node{selected}"},
        },
        "meta": {
            "iteration": step.iteration,
            "decided": step.decided,
            "candidates": len(rows_all),
            "rows": [c.node_id for c in rows],
            "page": page,
            "pages": pages,
            "sort_by": sort_by,
            "n_nodes": n,
            "selected": selected,
            "run_id": step.state.run.get("run_id"),
            "numbers": {c.node_id: dict(zip(NUMBER_HEADS, number_cells(c))) for c in rows},
            "floor": floor,
            "min_width": left + right + MIN_PANELS_PX,
            "sticky_top": TOP_PX,
            "focus_row": next((i for i, c in enumerate(rows) if c.node_id == selected), None),
        },
    }


def step_title(step: Step, total: int, page: int, pages: int, per_page: int, shown: int, siblings_only: bool) -> str:
    """'Iteration 2 decided 21 candidates of step 2 under 3 parents' (one candidate, one parent: singular)."""
    depths = sorted({int(step.state.nodes[c.node_id].get("depth") or 0) for c in step.candidates})
    where = f"step {depths[0]}" if len(depths) == 1 else f"steps {depths[0]}–{depths[-1]}"
    parents = len({c.parent_id for c in step.candidates})
    what = (
        f"{total} candidate{'s' if total != 1 else ''} of {where} under {parents} parent{'s' if parents != 1 else ''}"
    )
    if siblings_only:
        what = f"{total} sibling{'s' if total != 1 else ''} of the inspected node ({where})"
    verb = f"Iteration {step.iteration} decided" if step.decided else f"After iteration {step.iteration}:"
    tail = "" if step.decided else ", waiting for their step"
    rows = f" · rows {page * per_page + 1}–{page * per_page + shown}, page {page + 1} of {pages}" if pages > 1 else ""
    return f"{verb} {what}{tail}{rows}"


def spread_axis(passes: Sequence[Sequence[float]]) -> dict[str, Any]:
    """The spread panel's one scale for the whole step: symmetric round the R̄s, as wide as the farthest pass
    of any candidate (a little more, so its whisker shows), ticked at a round deviation inside it."""
    far = max((abs(d) for ps in passes if ps for d in deviations(ps)), default=0.0)
    half = max(far * 1.12, 1e-4)
    tick = 10.0 ** math.floor(math.log10(half * 0.8))
    for m in (5, 2, 1):  # the largest round step (5, 2 or 1 × a power of ten) within the range
        if m * tick <= half * 0.8:
            tick *= m
            break
    text = f"{tick:.0e}" if tick < 1e-3 else f"{tick:g}"
    # one tick (the scale is symmetric) and a zero line at R̄: more labels overlapped in the narrow panel at 1280
    return {
        "range": [-half, half],
        "tickvals": [tick],
        "ticktext": [f"+{text}"],
        "zeroline": True,
        "zerolinecolor": "#d62728",
        "zerolinewidth": 1,
    }


def _shadow_text(row: Mapping[str, Any] | None) -> str:
    if not row:
        return ""
    return f"  {fmt_var(row.get('var'))} {'OOD' if row.get('ood') else 'ID'}"


def log_axis(values: Sequence[float | None], tau: float) -> dict[str, Any]:
    """A log axis for the gated statistics and τ: whole decades around them, at most three ticks, labelled 1e-6."""
    pos = [v for v in values if v is not None and v > 0] + [tau]
    lo, hi = math.floor(math.log10(min(pos) / 2)), math.ceil(math.log10(max(pos) * 2))
    step = max(1, math.ceil((hi - lo) / 2))  # three ticks at most: the panel is narrow beside the tree
    ticks = list(range(hi, lo - 1, -step))[::-1]
    return {
        "type": "log",
        "range": [lo, hi],
        "tickvals": [10.0**e for e in ticks],
        "ticktext": [f"1e{e}" if e else "1" for e in ticks],
    }


def _layout(
    rows: Sequence[Candidate],
    labels: list[str],
    head: str,
    left: int,
    right: int,
    floor: float,
    spread: dict[str, Any],
    gate_axis: dict[str, Any],
    tau: float,
    label: str,
    title: str,
    width: int | None,
    selected: int | None,
    grouped: bool,
    estimator: str = "mc-dropout",
) -> dict[str, Any]:
    n = len(rows)
    sample = sample_label(estimator)
    top, bottom = TOP_PX, 26 + 15 * len(CAPTION_LINES)
    y = {
        "range": [n - 0.5, -0.5],
        "tickmode": "array",
        "tickvals": list(range(n)),
        "ticktext": labels,
        "tickfont": {"size": 12},
        "fixedrange": True,
        "showgrid": False,
        "zeroline": False,
        "domain": [0, 1],
        "ticklabeloverflow": "allow",
    }
    # ticklabeloverflow "allow": Plotly's default measures every tick label to hide those past the div (a quarter
    # of a 64-row step's draw); the margins are sized to hold them
    axis = {
        "side": "top",
        "fixedrange": True,
        "gridcolor": "#eee",
        "zeroline": False,
        "tickfont": {"size": 11},
        "ticklabeloverflow": "allow",
        "title": {"font": {"size": 12}, "standoff": 4},
    }
    layout: dict[str, Any] = {
        "height": top + bottom + ROW_PX * n,
        "margin": {"l": left, "r": right, "t": top, "b": bottom},
        "title": {
            "text": title,
            "font": {"size": 14},
            "x": 0,
            "xref": "paper",
            "xanchor": "left",
            "yref": "container",
            "y": 1.0,
            "yanchor": "top",
            "pad": {"t": 10},
        },
        "xaxis": {
            **axis,
            "domain": [0.0, 0.38],
            "range": [floor - 0.02 * (1 - floor), 1.02],
            "nticks": 4,
            "title": {**axis["title"], "text": sample_label(estimator, True) + (f" from {floor:g}" if floor else "")},
        },
        "xaxis2": {**axis, "domain": [0.44, 0.64], **spread, "title": {**axis["title"], "text": "spread"}},
        "xaxis3": {
            **axis,
            **gate_axis,
            "domain": [0.70, 1.0],
            "title": {**axis["title"], "text": f"{label} read"},
        },  # the first axis names the estimator
        "yaxis": y,
        "showlegend": False,
        "plot_bgcolor": "white",
        "paper_bgcolor": "white",
        "bargap": 0.4,
        "hovermode": "closest",
        "barmode": "overlay",
        # on a log axis a shape takes the value, an annotation its log10
        "shapes": [
            {
                "type": "line",
                "xref": "x3",
                "x0": tau,
                "x1": tau,
                "yref": "paper",
                "y0": 0,
                "y1": 1,
                "line": {"color": OOD_COLOUR, "dash": "dash", "width": 1.5},
            }
        ],
        "annotations": _annotations(head, tau, sample),
    }
    if width is not None:
        layout["width"] = max(width, left + right + MIN_PANELS_PX)
    layout["shapes"] += _bands(rows, selected, grouped)
    return layout


def sample_label(estimator: str, plural: bool = False) -> str:
    """What one dot is under this estimator ("dropout pass", "ensemble member", "posterior draw", ...)."""
    cls = ESTIMATOR_CLASSES.get(estimator)
    one = cls.sample_label if cls is not None else "sample"
    return one + ("es" if one.endswith("s") else "s") if plural else one


def _annotations(head: str, tau: float, sample: str = "dropout pass") -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [
        {
            "xref": "paper",
            "x": 1.0,
            "xshift": TABLE_PAD * CHAR_PX - ANNOTATION_PAD_PX,
            "xanchor": "left",
            "yref": "paper",
            "y": 1.0,
            "yshift": 8,
            "yanchor": "bottom",
            "showarrow": False,
            "text": head.replace(" ", "\u00a0"),
            "font": {**MONO, "color": "#555"},
            "align": "left",
            "name": "table head",
        }
    ]
    out.append(
        {
            "xref": "x3",
            "x": math.log10(tau),
            "yref": "paper",
            "y": 0.0,
            "yshift": -2,
            "yanchor": "top",
            "showarrow": False,
            "text": f"τ = {tau:g}",
            "font": {"size": 11, "color": OOD_COLOUR},
        }
    )
    out.append(
        {
            "xref": "paper",
            "x": 0.0,
            "yref": "paper",
            "y": 0.0,
            "yshift": -18,
            "xanchor": "left",
            "yanchor": "top",
            "showarrow": False,
            "align": "left",
            "text": "<br>".join(CAPTION_LINES).format(sample=sample),
            "font": {"size": 10, "color": "#555"},
        }
    )
    return out


def _bands(rows: Sequence[Candidate], selected: int | None, grouped: bool) -> list[dict[str, Any]]:
    """Every other parent group shaded (grouped rows: one path of rectangles, not a shape each, which cost a
    64-row draw 15 ms) and the inspected node's row banded in yellow, across the three panels."""
    shaded, start, shade = [], 0, False
    if grouped:
        for i in range(1, len(rows) + 1):
            if i == len(rows) or rows[i].parent_id != rows[start].parent_id:
                if shade:
                    y0, y1 = start - 0.5, i - 0.5
                    shaded.append([(0.0, y0), (1.0, y0), (1.0, y1), (0.0, y1)])
                shade, start = not shade, i
    bands = path_shape(shaded, "parent groups", GROUP_BAND, 0, fill=GROUP_BAND, closed=True, xref="paper")
    shapes = [bands] if bands else []
    for i, c in enumerate(rows):
        if c.node_id == selected:
            shapes.append(
                {
                    "type": "rect",
                    "xref": "paper",
                    "x0": 0,
                    "x1": 1,
                    "yref": "y",
                    "y0": i - 0.5,
                    "y1": i + 0.5,
                    "layer": "below",
                    "line": {"width": 0},
                    "fillcolor": SELECTED_BAND,
                }
            )
    return shapes


def export_size(fig: dict[str, Any]) -> tuple[int, int]:
    """(width, height) for the figure as an image: wide enough for its labels, panels and table."""
    return int(max(1100, fig.get("meta", {}).get("min_width", 0) + 400)), int(fig["layout"].get("height") or 560)
