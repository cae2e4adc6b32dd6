"""The tree's marks and levels of detail as figure dicts (no browser): what the page's script reads to draw
full boxplots, marks anchored on their node, the legend, the x span of a focused path, and Figure 1."""

from __future__ import annotations

import json
import statistics

import pytest

from storage import RunStore
from testkit.doubles import record_synthetic
from testkit.figures import shape_polylines
from ui.views.bigtree import focus_nodes
from ui.views.decisions import step_of
from ui.views.figstyle import (
    COLORSCALE,
    DETAIL_LIMIT,
    MIN_X_SPAN,
    N_COLOUR_BINS,
    bin_colours,
    box_stats,
    colour_bin,
    colour_for,
)
from ui.views.figure1 import score_floor, spread_axis, step_figure
from ui.views.treedata import RunData
from ui.views.treefig import tree_figure
from ui.views.treeglyphs import COMPACT_NAMES
from ui.views.treeview import ViewOptions

RID = "lod" * 10 + "aa"


@pytest.fixture(scope="module")
def data():
    store = RunStore("sqlite://")
    record_synthetic(store, RID, n_nodes=600, budget=64, seed=3)
    return RunData.load(store, RID)


@pytest.fixture(scope="module")
def state(data):
    return data.state_at(None)


def _trace(fig, name):
    return next(t for t in fig["data"] if t.get("name") == name)


def _xy(fig):
    nodes = next(t for t in fig["data"] if t.get("name", "").startswith("nodes"))
    return {c[0]: (x, y) for c, x, y in zip(nodes["customdata"], nodes["x"], nodes["y"])}


def test_glyph_meta_follows_the_node_trace(state) -> None:
    fig = tree_figure(state)
    g = fig["meta"]["glyphs"]
    nodes = fig["data"][g["trace"]]
    assert nodes["name"].startswith("nodes") and g["limit"] == DETAIL_LIMIT
    assert set(g["compact"]) == set(COMPACT_NAMES)
    ids = [c[0] for c in nodes["customdata"]]
    assert len(g["st"]) == 6 * len(ids) and len(g["p"]) == len(g["bin"]) == len(g["ood"]) == len(g["lab"]) == len(ids)
    for k, nid in enumerate(ids):
        n = state.nodes[nid]
        st = box_stats(n["mc_scores"])
        assert g["st"][6 * k : 6 * k + 6] == pytest.approx(
            [st[f] for f in ("lo", "q1", "median", "q3", "hi", "mean")], abs=6e-4
        )
        assert g["p"][k] == pytest.approx(n["mc_scores"], abs=5e-3)
        assert g["bin"][k] == colour_bin(st["mean"], 0.0, 1.0) and g["ood"][k] == int(state.gate.shown(n))
        mean, var = g["lab"][k].split("|")
        assert float(mean) == pytest.approx(n["mean"], abs=5e-4) and float(var) == pytest.approx(
            n["var"], rel=0.05, abs=5e-5
        )
    assert json.dumps(fig)  # what the page receives
    assert tree_figure(state, ViewOptions(glyphs=False))["meta"].get("glyphs") is None


def test_marks_are_anchored_on_their_node_in_pixels(state) -> None:
    """Answer marks sit on their node; labels are set off by Plotly in pixels (textposition), not layout units."""
    t = state.iteration
    fig = tree_figure(state)
    xy = _xy(fig)
    wrong = _trace(fig, "wrong answer")
    right = _trace(fig, "right answer")
    assert len(wrong["x"]) == sum(
        1 for n in state.nodes.values() if n.get("correct") is False and n.get("status") in ("finished", "truncated")
    )
    placed = set(xy.values())
    for tr in (wrong, right):
        assert all((x, y) in placed for x, y in zip(tr["x"], tr["y"]))
    marks = _trace(fig, "marks")
    assert all((x, y) in placed or (x, y) == (0.0, 0.0) for x, y in zip(marks["x"], marks["y"]))
    # left of the node, clear of its own glyph on its right (the page hides a label over a neighbour's glyph)
    assert set(marks["textposition"]) <= {"top left", "bottom left"} and marks["marker"]["opacity"] == 0
    assert state.decisions and t  # the labels belong to this iteration's decisions
    # the chosen answers are stars now, not a mark beside them: "chosen answer" is a legend entry only
    assert all(tr["x"] == [None] for tr in fig["data"] if tr.get("name") == "chosen answer")
    nodes = fig["data"][fig["meta"]["glyphs"]["trace"]]
    stars = [c[0] for c, s in zip(nodes["customdata"], nodes["marker"]["symbol"]) if s == "star"]
    assert stars and set(stars) == state.chosen_nodes()


def test_the_legend_names_every_kind_of_mark_drawn(state) -> None:
    fig = tree_figure(state)
    names = [t["name"] for t in fig["data"] if t.get("showlegend", True)]  # Plotly shows unless told not to
    assert not any(sh.get("showlegend") for sh in fig["layout"]["shapes"])  # one made every shape edit a replot
    for want in (
        "chosen path",
        "right answer",
        "wrong answer",
        "colour R̄, size K",
        "OOD: σ² > τ",
        "box: MC passes",
        "one MC pass",
        "R̄ = their mean",
        "grey: scale 0–1",
        "finished",
        "pruned (faded)",
        "chosen answer",
        f"decided at t={state.iteration}",
    ):
        assert want in names, (want, names)
    texts = " ".join(_trace(fig, "marks")["text"])
    assert ("+Kp extra passes" in names) == ("p" in texts.replace("hidden", ""))
    assert ("×N children" in names) == ("×" in texts)
    sel = next(i for i, n in state.nodes.items() if n.get("status") == "pruned")
    small = tree_figure(state, ViewOptions(focus="selected subtree"), selected=sel)
    small_names = [t["name"] for t in small["data"] if t.get("showlegend", True)]
    assert "wrong answer" not in small_names and "truncated" not in small_names  # only what is drawn


def test_a_focused_path_keeps_its_proportions_and_is_drawn_detailed(state) -> None:
    leaf = max((i for i, n in state.nodes.items() if not state.children.get(i)), key=lambda i: state.nodes[i]["depth"])
    fig = tree_figure(state, ViewOptions(focus="selected subtree"), selected=leaf)
    span = _trace(fig, "x span")
    assert span["x"][1] - span["x"][0] == pytest.approx(MIN_X_SPAN) and span["marker"]["opacity"] == 0
    assert fig["meta"]["n_shown"] <= DETAIL_LIMIT
    # drawn in full for an image export (kaleido): only the page's script swaps them for detailed boxplots
    assert [sh for sh in fig["layout"]["shapes"] if sh["name"] in COMPACT_NAMES and sh.get("visible", True)]
    assert fig["layout"]["height"] >= 440
    whole = tree_figure(state)
    assert not any(t.get("name") == "x span" for t in whole["data"])


def test_focus_on_the_selected_step(state) -> None:
    sel = next(i for i in state.nodes if i and len(state.siblings(i)) > 1 and state.nodes[i]["depth"] > 1)
    kept, hidden = focus_nodes(state, set(state.nodes), "selected step", sel)
    assert kept == {0, *state.path(sel), *state.siblings(sel)}
    assert sum(hidden.values()) == len(state.nodes) - len(kept)


def test_figure1_shows_the_step_its_numbers_and_decisions(data, state) -> None:
    sel = next(i for i, n in state.nodes.items() if n.get("extra_passes") and len(state.siblings(i)) > 2)
    step = step_of(data, sel)
    whole = step_figure(step, selected=sel, per_page=len(step.candidates))
    assert set(whole["meta"]["rows"]) == {c.node_id for c in step.candidates}  # the whole step, not the siblings
    fig = step_figure(step, selected=sel, per_page=16)  # few enough rows for the single passes as dots
    rows = fig["meta"]["rows"]
    assert sel in rows and len(rows) <= 16
    boxes = next(t for t in fig["data"] if t["type"] == "bar" and t["xaxis"] == "x")  # a bar per row: its quartiles
    quartiles = [statistics.quantiles(state.nodes[r]["mc_scores"], n=4, method="inclusive") for r in rows]
    assert boxes["y"] == list(range(len(rows))) and [c[0] for c in boxes["customdata"]] == rows
    assert boxes["base"] == pytest.approx([q[0] for q in quartiles], abs=1e-5)
    assert [b + w for b, w in zip(boxes["base"], boxes["x"])] == pytest.approx([q[2] for q in quartiles], abs=1e-5)
    extra = [t for t in fig["data"] if t.get("name") == "extra passes" and t["xaxis"] == "x"]
    assert sum(len(t["x"]) for t in extra) == sum(state.nodes[r]["extra_passes"] for r in rows)
    c = step.candidate(sel)
    k = rows.index(sel)
    bars = next(t for t in fig["data"] if t["type"] == "bar" and t["xaxis"] == "x3")["x"]
    after = next(t for t in fig["data"] if t.get("name", "").endswith(" after"))
    assert c.stat_after in after["x"] and bars[k] == pytest.approx(c.stat) and c.stat != pytest.approx(c.stat_after)
    first = state.nodes[sel]["mc_scores"][: len(state.nodes[sel]["mc_scores"]) - state.nodes[sel]["extra_passes"]]
    m = sum(first) / len(first)
    assert bars[k] == pytest.approx(sum((v - m) ** 2 for v in first) / (len(first) - 1))  # what the OOD test read
    assert fig["layout"]["shapes"][0]["x0"] == pytest.approx(step.state.tau)
    table = next(t for t in fig["data"] if t.get("name") == "table")  # the table: one line per row, on its row
    for r, y, line in zip(rows, table["y"], table["text"], strict=True):
        cells = fig["meta"]["numbers"][r]
        assert y == rows.index(r) and cells["decision"] in line.replace("\u00a0", " ")
        assert bool(cells["after"]) == bool(step.candidate(r).extra)


def test_figure1_spread_panel_is_one_scale_for_the_whole_step(data, state) -> None:
    """The spread panel draws each row's passes minus its own R̄ on one scale for the whole step (the paper's
    Figure 1: 0.85 with σ² = 0.032 beside 0.76 with σ² = 0.001), also on a page of a few rows: where one row's σ²
    is over 7 times another's, its passes span more (K = 7 passes span 1.3 σ to 3.5 σ of their sample σ)."""
    sel = max((i for i in state.nodes if i), key=lambda i: len(step_of(data, i).candidates) if step_of(data, i) else 0)
    step = step_of(data, sel)
    fig = step_figure(step, selected=sel, per_page=16)
    passes = {c.node_id: list(state.nodes[c.node_id]["mc_scores"]) for c in step.candidates}
    far = max(abs(v - sum(ps) / len(ps)) for ps in passes.values() for v in ps)
    lo, hi = fig["layout"]["xaxis2"]["range"]
    assert lo == -hi and far <= hi <= 1.2 * far  # the whole step's farthest pass, not the page's
    assert fig["layout"]["xaxis2"] == {**fig["layout"]["xaxis2"], **spread_axis(list(passes.values()))}
    spans, var = {}, {}
    boxes = next(t for t in fig["data"] if t["type"] == "bar" and t["xaxis"] == "x2")  # a bar per row: quartiles
    for (nid, _), q1, width in zip(boxes["customdata"], boxes["base"], boxes["x"], strict=True):
        mean = sum(passes[nid]) / len(passes[nid])
        q = statistics.quantiles([v - mean for v in passes[nid]], n=4, method="inclusive")
        assert (q1, q1 + width) == pytest.approx((q[0], q[2]), abs=1e-5)
        spans[nid] = width
        var[nid] = sum((v - mean) ** 2 for v in passes[nid]) / (len(passes[nid]) - 1)
    assert len(spans) == 16
    pairs = [(a, b) for a in spans for b in spans if var[a] > 7 * var[b] > 0]
    assert pairs and all(spans[a] > spans[b] for a, b in pairs)


def test_figure1_whiskers_and_medians_are_each_rows_own(data, state) -> None:
    """Each row's whiskers (the most extreme passes within 1.5 IQR of its quartiles), their caps and its median,
    on the score panel and the spread panel, drawn as one path over the boxes per outline colour: computed here
    from the passes with statistics.quantiles, not with the figure's own box_stats."""
    sel = max((i for i in state.nodes if i), key=lambda i: len(step_of(data, i).candidates) if step_of(data, i) else 0)
    fig = step_figure(step_of(data, sel), selected=sel, per_page=64)
    rows = fig["meta"]["rows"]
    for axis, centre in (("x", False), ("x2", True)):
        shapes = [sh for sh in fig["layout"]["shapes"] if sh.get("xref") == axis and sh.get("type") == "path"]
        assert shapes and all(sh["layer"] == "above" for sh in shapes)  # a median is drawn across its box
        pieces = [line for sh in shapes for line in shape_polylines(sh)]
        assert len(pieces) == 5 * len(rows)
        for y, nid in enumerate(rows):
            ps = list(state.nodes[nid]["mc_scores"])
            mean = sum(ps) / len(ps)
            ps = [v - mean for v in ps] if centre else ps
            q1, med, q3 = statistics.quantiles(ps, n=4, method="inclusive")
            lo = min(v for v in ps if v >= q1 - 1.5 * (q3 - q1))
            hi = max(v for v in ps if v <= q3 + 1.5 * (q3 - q1))
            flat = sorted(tuple(sorted(x for x, _ in p)) for p in pieces if p[0][1] == p[1][1] == y)
            assert flat == [pytest.approx((lo, q1), abs=2e-5), pytest.approx((q3, hi), abs=2e-5)]
            upright = sorted(p[0][0] for p in pieces if p[0][0] == p[1][0] and p[0][1] < y < p[1][1])
            assert upright == pytest.approx(sorted([lo, med, hi]), abs=2e-5)


def test_figure1_score_axis_starts_below_the_lowest_pass() -> None:
    """Passes that all sit high get an axis from just below them (the boxes fill the panel); a low pass keeps
    the axis from 0."""
    assert score_floor([0.91, 0.97, 0.88]) == pytest.approx(0.8)
    assert score_floor([0.5, 0.97]) == pytest.approx(0.4) and score_floor([0.2, 0.9]) == 0.0
    assert score_floor([0.999]) == pytest.approx(0.8)  # at most 0.8: the axis spans 0.2 or more


def test_glyph_colours_are_the_colour_bar_s_scale() -> None:
    """The glyphs' fills (from the scale's stops, looked up once, and a cached palette) are the named scale the
    colour bar draws, at the same R̄."""
    from plotly.colors import get_colorscale, sample_colorscale

    for cmin, cmax in ((0.0, 1.0), (0.2, 0.9)):
        for v in (cmin, (cmin + cmax) / 2, cmax, cmax + 0.3):
            want = sample_colorscale(COLORSCALE, [min(1.0, max(0.0, (v - cmin) / (cmax - cmin)))])[0]
            assert colour_for(v, cmin, cmax) == want
        centres = [cmin + (b + 0.5) / N_COLOUR_BINS * (cmax - cmin) for b in range(N_COLOUR_BINS)]
        assert list(bin_colours(cmin, cmax)) == [
            sample_colorscale(COLORSCALE, [(c - cmin) / (cmax - cmin)])[0] for c in centres
        ]
    assert colour_for(None, 0.0, 1.0) == "#bbbbbb"
    # the scale sampled as plotly samples it, at its every stop, either side of each and across the whole range
    stops = [float(at) for at, _ in get_colorscale(COLORSCALE)]
    fracs = [*stops, *(min(1.0, s + 1e-9) for s in stops), *(max(0.0, s - 1e-9) for s in stops)]
    fracs += [k / 997 for k in range(998)]
    got = [colour_for(f, 0.0, 1.0) for f in fracs]
    assert got == [sample_colorscale(COLORSCALE, [f])[0] for f in fracs]
