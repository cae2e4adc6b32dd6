"""The tree's marks and levels of detail as figure dicts (no browser): what the page's script reads to draw
full boxplots, marks anchored on their node, the legend, the x span of a focused path, and Figure 1."""

from __future__ import annotations

import json

import pytest

from storage import RunStore
from tests.doubles import record_synthetic
from ui.views.bigtree import focus_nodes
from ui.views.figstyle import COLORSCALE, DETAIL_LIMIT, MIN_X_SPAN, N_COLOUR_BINS, bin_colours, box_stats, colour_bin, colour_for
from ui.views.figure1 import MAX_CANDIDATES, candidates_of, decision_words, score_floor, step_figure
from ui.views.treefig import ViewOptions, tree_figure
from ui.views.treedata import RunData
from ui.views.treeglyphs import COMPACT_NAMES

RID = "lod" * 10 + "aa"


@pytest.fixture(scope="module")
def state():
    store = RunStore("sqlite://")
    record_synthetic(store, RID, n_nodes=600, budget=64, seed=3)
    return RunData.load(store, RID).state_at(None)


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
        assert g["st"][6 * k:6 * k + 6] == pytest.approx([st[f] for f in ("lo", "q1", "median", "q3", "hi", "mean")],
                                                        abs=6e-4)
        assert g["p"][k] == pytest.approx(n["mc_scores"], abs=5e-3)
        assert g["bin"][k] == colour_bin(st["mean"], 0.0, 1.0) and g["ood"][k] == int(state.gate.shown(n))
        mean, var = g["lab"][k].split("|")
        assert float(mean) == pytest.approx(n["mean"], abs=5e-4) and float(var) == pytest.approx(n["var"], rel=0.05, abs=5e-5)
    assert json.dumps(fig)  # what the page receives
    assert tree_figure(state, ViewOptions(glyphs=False))["meta"].get("glyphs") is None


def test_marks_are_anchored_on_their_node_in_pixels(state) -> None:
    """Answer marks sit on their node; labels are set off by Plotly in pixels (textposition), not layout units."""
    t = state.iteration
    fig = tree_figure(state)
    xy = _xy(fig)
    wrong = _trace(fig, "wrong answer")
    right = _trace(fig, "right answer")
    assert len(wrong["x"]) == sum(1 for n in state.nodes.values() if n.get("correct") is False
                                  and n.get("status") in ("finished", "truncated"))
    placed = set(xy.values())
    for tr in (wrong, right):
        assert all((x, y) in placed for x, y in zip(tr["x"], tr["y"]))
    marks = _trace(fig, "marks")
    assert all((x, y) in placed or (x, y) == (0.0, 0.0) for x, y in zip(marks["x"], marks["y"]))
    assert set(marks["textposition"]) <= {"top center", "bottom center"} and marks["marker"]["opacity"] == 0
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
    for want in ("chosen path", "right answer", "wrong answer", "colour R̄, size K", "OOD: σ² > τ", "box: MC passes",
                 "one MC pass", "R̄ = their mean", "grey: scale 0–1", "finished", "pruned (faded)", "chosen answer",
                 f"decided at t={state.iteration}"):
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


def test_figure1_shows_the_step_its_numbers_and_decisions(state) -> None:
    sel = next(i for i, n in state.nodes.items() if n.get("extra_passes") and 2 < len(state.siblings(i)) <= 24)
    fig = step_figure(state, sel)
    cands = fig["meta"]["siblings"]
    assert set(cands) == set(state.siblings(sel)) and sel in cands
    means = [state.nodes[s]["mean"] for s in cands]
    assert means == sorted(means, reverse=True)  # best R̄ first
    boxes = [t for t in fig["data"] if t["type"] == "box"]
    assert [b["y"] for b in boxes] == [pytest.approx(state.nodes[s]["mc_scores"], abs=1e-5) for s in cands]
    decided = fig["layout"]["xaxis2"]["ticktext"]
    for s, words in zip(cands, decided):
        n = state.nodes[s]
        assert words == decision_words(n)
        assert (f"re-eval +{n['extra_passes']}p" in words) == bool(n["extra_passes"])
        assert ("pruned" in words) == (n["status"] == "pruned")
    extra = _trace(fig, "extra passes")
    assert len(extra["y"]) == sum(state.nodes[s]["extra_passes"] for s in cands)
    after = _trace(fig, "after re-evaluation")["y"]
    bars = next(t for t in fig["data"] if t["type"] == "bar")["y"]
    k = cands.index(sel)
    assert after[k] == pytest.approx(state.nodes[sel]["var"]) and bars[k] != pytest.approx(after[k])
    first = state.nodes[sel]["mc_scores"][:len(state.nodes[sel]["mc_scores"]) - state.nodes[sel]["extra_passes"]]
    m = sum(first) / len(first)
    assert bars[k] == pytest.approx(sum((v - m) ** 2 for v in first) / (len(first) - 1))  # what the OOD test read
    assert fig["layout"]["shapes"][0]["y0"] == pytest.approx(state.tau)


def test_figure1_of_a_wide_step_keeps_the_selected_and_the_best(state) -> None:
    wide = max(state.children, key=lambda p: len(state.children[p]))
    assert len(state.children[wide]) > MAX_CANDIDATES
    worst = min(state.children[wide], key=lambda s: state.nodes[s]["mean"])
    cands, total = candidates_of(state, worst)
    assert total == len(state.children[wide]) and len(cands) == MAX_CANDIDATES and worst in cands
    best = sorted(state.children[wide], key=lambda s: -state.nodes[s]["mean"])[:MAX_CANDIDATES - 1]
    assert set(cands) == {worst, *best}
    fig = step_figure(state, worst)
    assert f"{MAX_CANDIDATES} of {total} candidates" in fig["layout"]["title"]["text"]
    # ~32 px a column at 1280 px: every other column's numbers one tier up, the decisions in short marks
    printed = [a for a in fig["layout"]["annotations"] if a.get("xref") == "x"]
    assert [a["yshift"] > 0 for a in printed] == [i % 2 == 1 for i in range(MAX_CANDIDATES)]
    narrow = next(i for i in state.nodes if i and 1 < len(state.siblings(i)) <= 12)
    assert fig["layout"]["margin"]["t"] > step_figure(state, narrow)["layout"]["margin"]["t"]  # room for the tier
    ids = fig["layout"]["xaxis"]["ticktext"]  # id over its marks, never tilted
    assert all(t.startswith(f"#{c}<br>") for t, c in zip(ids, cands)) and ids[cands.index(worst)].endswith("◀")
    assert fig["layout"]["xaxis"]["tickangle"] == 0
    words = fig["layout"]["xaxis2"]["ticktext"]
    assert all(max(len(line) for line in w.split("<br>")) <= 6 for w in words), words
    assert words == [decision_words(state.nodes[s], short=True) for s in cands]


def test_figure1_score_axis_starts_below_the_lowest_pass(state) -> None:
    """A step whose passes all sit high gets an axis from just below them (the boxes fill the plot); a step
    with a low pass keeps the axis from 0; every pass and the printed numbers stay inside the plot."""
    seen = set()
    for sel in (i for i in state.nodes if i and len(state.siblings(i)) > 1):
        fig = step_figure(state, sel)
        cands = fig["meta"]["siblings"]
        lo, hi = fig["layout"]["yaxis"]["range"]
        passes = [v for s in cands for v in state.nodes[s]["mc_scores"]]
        assert lo < min(passes) and hi > 1.0 and fig["layout"]["yaxis"]["tickvals"][0] == pytest.approx(lo, abs=0.03)
        floor = score_floor(state, cands)
        assert (floor > 0) == (min(passes) >= 0.32) and 1.0 - floor >= 0.2 - 1e-9
        assert all(lo < a["y"] < hi for a in fig["layout"]["annotations"] if a.get("xref") == "x")
        seen.add(floor > 0)
        if seen == {True, False}:
            break
    assert seen == {True, False}, "the synthetic run has no step of each kind"


def test_glyph_colours_are_the_colour_bar_s_scale() -> None:
    """The glyphs' fills (from the scale's stops, looked up once, and a cached palette) are the named scale the
    colour bar draws, at the same R̄."""
    from plotly.colors import sample_colorscale

    for cmin, cmax in ((0.0, 1.0), (0.2, 0.9)):
        for v in (cmin, (cmin + cmax) / 2, cmax, cmax + 0.3):
            want = sample_colorscale(COLORSCALE, [min(1.0, max(0.0, (v - cmin) / (cmax - cmin)))])[0]
            assert colour_for(v, cmin, cmax) == want
        centres = [cmin + (b + 0.5) / N_COLOUR_BINS * (cmax - cmin) for b in range(N_COLOUR_BINS)]
        assert list(bin_colours(cmin, cmax)) == [sample_colorscale(COLORSCALE, [(c - cmin) / (cmax - cmin)])[0]
                                                 for c in centres]
    assert colour_for(None, 0.0, 1.0) == "#bbbbbb"
