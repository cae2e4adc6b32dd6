"""Plotly figures as plain JSON-ready dicts: the live tree with a boxplot glyph at every node, the
paper's Figure 1 for a step (the inspector and the Figure 1 view), and the per-iteration cost chart. This
module is where the rest of the code imports them from; they live in treefig and treeglyphs (the tree),
figure1, charts (the others) and figstyle (what they share).

No Gradio here: app.py sends these dicts to an HTML component that draws them with the plotly.min.js
shipped in the plotly package (Plotly.react + a fixed uirevision, so zoom and pan survive updates).
Drawing choices that keep 2,000 nodes responsive (measured: docs/app.md, Benchmark): one SVG trace per kind of mark
(edges, boxes per colour bin, whiskers, medians, means, markers), None-separated, coordinates rounded,
box statistics instead of raw passes, and never one trace or one WebGL context per node."""

from __future__ import annotations

from .charts import CURVE_SERIES, KNOB_LABELS, cost_figure, knobs_figure, training_curve_figure
from .figure1 import step_figure
from .figstyle import (CHOSEN_COLOUR, COLORSCALE, DECIDED_COLOUR, GLYPH_DX, GLYPH_HALF_HEIGHT, MATCH_COLOUR,
                       N_COLOUR_BINS, NEW_COLOUR, OOD_COLOUR, PLOT_CONFIG, RAIL_LIMIT, RIGHT_COLOUR, SHARED_COLOUR,
                       WRONG_COLOUR, box_stats, colour_for, shared_colour_range)
from .treefig import HOVER_TEMPLATE, ViewOptions, hover_data, tree_figure, visible_nodes

__all__ = ["CHOSEN_COLOUR", "COLORSCALE", "CURVE_SERIES", "DECIDED_COLOUR", "GLYPH_DX", "GLYPH_HALF_HEIGHT",
           "HOVER_TEMPLATE", "KNOB_LABELS", "MATCH_COLOUR", "N_COLOUR_BINS", "NEW_COLOUR", "OOD_COLOUR", "PLOT_CONFIG",
           "RAIL_LIMIT", "RIGHT_COLOUR", "SHARED_COLOUR", "WRONG_COLOUR", "ViewOptions", "box_stats", "colour_for",
           "cost_figure", "hover_data", "knobs_figure", "shared_colour_range", "step_figure",
           "training_curve_figure", "tree_figure", "visible_nodes"]
