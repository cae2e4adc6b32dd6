"""What the figures share: colours, the tree's glyph geometry, Tukey box statistics of MC passes, the
colour of a score, and the one formatting of R̄ and σ² every panel and export uses."""

from __future__ import annotations

import math
import statistics
from bisect import bisect_left
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

from plotly.colors import (
    colorscale_to_colors,
    colorscale_to_scale,
    find_intermediate_color,
    get_colorscale,
    validate_colors,
)

from .treedata import TreeState

COLORSCALE = "Viridis"
# Its [position, colour] stops, looked up once: sample_colorscale given the name re-reads every named scale on
# each call, which was most of a live tree's redraw for a dozen colours.
_SCALE_STOPS = get_colorscale(COLORSCALE)
N_COLOUR_BINS = 12
OOD_COLOUR = "#e7298a"  # magenta ring: σ² > τ
CHOSEN_COLOUR = "#f0a500"
RIGHT_COLOUR = "#1b9e77"
WRONG_COLOUR = "#d95f02"
DECIDED_COLOUR = "rgba(255, 200, 0, 0.45)"
NEW_COLOUR = "rgba(80, 160, 255, 0.35)"
SHARED_COLOUR = "rgba(120, 120, 255, 0.25)"
MATCH_COLOUR = "rgba(255, 120, 0, 0.55)"
SHADOW_COLOUR = "#7b3294"  # shadow scores (passes the run never paid for): purple, apart from the run's own
GLYPH_DX = (0.16, 0.40)  # glyph x extent right of its node, in layout units (siblings are >= 1 apart)
GLYPH_HALF_HEIGHT = 0.36  # score 0..1 maps to y-0.36 .. y+0.36 (depth rows are 1 apart)
RAIL_LIMIT = 600  # above this many shown nodes the grey 0..1 rails behind glyphs cost more than they tell
# Level of detail: with at most DETAIL_LIMIT nodes in view the page's script (ui/js/treelod.js) draws every
# node a full boxplot in screen pixels with R̄ and σ² beside it; with more, the compact glyphs above.
DETAIL_LIMIT = 60
DETAIL_ROW_PX = 96  # the row height a tree of at most DETAIL_LIMIT nodes is given (the boxes scale with it)
MIN_X_SPAN = 4.0  # the x axis spans at least this many sibling gaps: a lone path is not blown up across the plot
PLOT_CONFIG = {
    "displaylogo": False,
    "scrollZoom": True,
    "responsive": True,
    "modeBarButtonsToRemove": ["select2d", "lasso2d", "autoScale2d"],
}


# ------------------------------------------------------------------------------------------ paths
Polyline = Sequence[tuple[float, float]]


def path_shape(
    polylines: Sequence[Polyline],
    name: str,
    colour: str,
    width: float,
    fill: str | None = None,
    closed: bool = False,
    xref: str = "x",
    layer: str = "below",
    digits: int = 3,
) -> dict[str, Any] | None:
    """Many polylines (in `xref`'s and y's units, x rounded to `digits`) as one layout shape: one SVG <path>
    however many there are. A scatter line broken by None gaps draws one <path> per piece: a 2,000-node tree's
    edges and compact glyphs were 14,000 elements and most of the page's time to draw it. Drawn under the traces
    (`layer` "above": over them); None when empty."""
    if not polylines:
        return None
    # M/L with x,y pairs only: absolute commands are what Plotly converts from axis units
    parts = [
        "M" + "L".join(f"{round(x, digits)!r},{round(y, 3)!r}" for x, y in line) + ("Z" if closed else "")
        for line in polylines
    ]
    shape: dict[str, Any] = {
        "type": "path",
        "xref": xref,
        "yref": "y",
        "layer": layer,
        "name": name,
        "path": "".join(parts),
        "line": {"color": colour, "width": width},
    }
    if fill:
        shape["fillcolor"] = fill
    return shape


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
    return {
        "q1": q1,
        "median": med,
        "q3": q3,
        "lo": min(inside),
        "hi": max(inside),
        "mean": mean,
        "sd": sd,
        "outliers": [x for x in xs if x < lo_fence or x > hi_fence],
        "n": len(xs),
    }


def colour_bin(value: float, cmin: float, cmax: float) -> int:
    """Which of N_COLOUR_BINS colours a glyph with R̄ = `value` is filled with (one SVG path per bin)."""
    return min(N_COLOUR_BINS - 1, max(0, int((value - cmin) / ((cmax - cmin) or 1.0) * N_COLOUR_BINS)))


@lru_cache(maxsize=256)
def bin_colours(cmin: float, cmax: float) -> tuple[str, ...]:
    """The fill colour of each bin: the colour scale at the bin's centre (cached: every redraw of a tree whose R̄
    range has not changed asks again)."""
    return tuple(colour_for(cmin + (b + 0.5) / N_COLOUR_BINS * (cmax - cmin), cmin, cmax) for b in range(N_COLOUR_BINS))


def colour_for(value: float | None, cmin: float, cmax: float) -> str:
    """The colour scale's colour for R̄ = `value` on [cmin, cmax]; grey for unscored."""
    if value is None:
        return "#bbbbbb"
    span = (cmax - cmin) or 1.0
    return _scale_colour(min(1.0, max(0.0, (value - cmin) / span)))


# the scale's positions and its colours as (r, g, b) fractions, validated once
_SCALE_AT = colorscale_to_scale(_SCALE_STOPS)
_SCALE_RGB = validate_colors(colorscale_to_colors(_SCALE_STOPS), colortype="tuple")


@lru_cache(maxsize=20_000)
def _scale_colour(frac: float) -> str:
    # plotly's sample_colorscale, step for step, less its validation of the whole scale on every call: a new
    # step's R̄s all miss this cache, and a node view took 21.7 ms with that validation, 16.5 ms without (docs/log.md)
    high = bisect_left(_SCALE_AT, frac)
    low = high - 1  # frac 0: -1, the last stop, as plotly's own lookup (it lands on the first colour)
    mix = (frac - _SCALE_AT[low]) / (_SCALE_AT[high] - _SCALE_AT[low])
    return str(validate_colors([find_intermediate_color(_SCALE_RGB[low], _SCALE_RGB[high], mix)], colortype="rgb")[0])


def shared_colour_range(*states: TreeState) -> tuple[float, float]:
    """One colour scale for several trees: the range of R̄ over all their nodes, padded, within [0, 1]."""
    means = [n["mean"] for s in states for n in s.nodes.values() if n.get("mean") is not None]
    if not means:
        return 0.0, 1.0
    lo, hi = min(means), max(means)
    if hi - lo < 0.05:
        lo, hi = lo - 0.025, hi + 0.025
    return max(0.0, math.floor(lo * 20) / 20), min(1.0, math.ceil(hi * 20) / 20)


def fmt_mean(v: Any) -> str:
    """An R̄ or R̂ as every panel and export prints it: three decimals ("–" when missing)."""
    return "–" if v is None else f"{float(v):.3f}"


def fmt_var(v: Any) -> str:
    """A σ², σ or logit σ² as every panel and export prints it: three significant digits, trailing zeros kept
    (0.000200, 0.00577, 9.80e-07: each says how precise it is); "–" when missing."""
    return "–" if v is None else f"{float(v):#.3g}"
