"""Tree layout, replay from stored history, and figure building (no browser)."""

from __future__ import annotations

import json
import random

import pytest

from storage import RunStore
from testkit.doubles import record_synthetic
from testkit.figures import shape_polylines
from testkit.synthetic import final_records, synthetic_events
from uats_core.events import IterationEnded, NodesUpdated
from ui.views.decisions import step_of
from ui.views.divergence import decision_divergence
from ui.views.figstyle import box_stats, shared_colour_range
from ui.views.figure1 import step_figure
from ui.views.layout import tidy_layout
from ui.views.treedata import RunData
from ui.views.treefig import tree_figure
from ui.views.treeview import ViewOptions, visible_nodes


def test_tidy_layout_small_tree_by_hand() -> None:
    #      0
    #    1   2
    #   3 4   5
    parent = {0: None, 1: 0, 2: 0, 3: 1, 4: 1, 5: 2}
    pos = tidy_layout(parent)
    assert pos[0] == (0.0, 0.0)
    assert {pos[i][1] for i in (1, 2)} == {-1.0} and {pos[i][1] for i in (3, 4, 5)} == {-2.0}
    assert pos[3][0] < pos[4][0] < pos[5][0]  # siblings left to right in id order, subtrees do not interleave
    assert pos[1][0] == pytest.approx((pos[3][0] + pos[4][0]) / 2)  # a parent centred over its children
    assert pos[5][0] == pytest.approx(pos[2][0])  # an only child straight below


def test_tidy_layout_order_key_and_orphans() -> None:
    parent = {0: None, 1: 0, 2: 0, 3: 0, 9: 42}  # 42 is not shown: 9 hangs under the root
    pos = tidy_layout(parent, order_key=lambda n: -n)
    assert pos[3][0] < pos[2][0] < pos[1][0]
    assert pos[9][1] == -1.0
    assert tidy_layout({5: None}) == {}  # no root, nothing to lay out


def test_tidy_layout_never_overlaps_at_2000_nodes() -> None:
    rng = random.Random(0)
    parent: dict[int, int | None] = {0: None}
    depth = {0: 0}
    for i in range(1, 2000):
        p = rng.randrange(i)
        parent[i] = p
        depth[i] = depth[p] + 1
    pos = tidy_layout(parent)
    assert len(pos) == 2000
    for i, (_, y) in pos.items():
        assert y == -depth[i]
    rows: dict[float, list[float]] = {}
    for x, y in pos.values():
        rows.setdefault(y, []).append(x)
    for xs in rows.values():
        xs.sort()
        assert all(b - a >= 0.999 for a, b in zip(xs, xs[1:]))  # glyphs (0.4 wide) never collide


@pytest.fixture(scope="module")
def store() -> RunStore:
    s = RunStore("sqlite://")
    for rid, n, method, seed in (("r200", 200, "h-uats", 1), ("other", 200, "rebase", 2)):
        record_synthetic(s, rid, n_nodes=n, seed=seed, method=method)
    return s


def test_replay_rebuilds_each_iteration(store: RunStore) -> None:
    events = synthetic_events("r200", n_nodes=200, seed=1)
    data = RunData.load(store, "r200")
    live: dict[int, dict] = {}
    for ev in events:
        if isinstance(ev, NodesUpdated):
            for rec in ev.nodes:
                live[rec["id"]] = dict(rec)
        elif isinstance(ev, IterationEnded):
            state = data.state_at(ev.iteration)
            assert set(state.nodes) == set(live) | {0}
            for nid, rec in live.items():
                got = state.nodes[nid]
                assert got["status"] == rec["status"], (ev.iteration, nid)
                assert got["mc_scores"] == pytest.approx(rec["mc_scores"])  # passes so far, not the final ones
                assert got["mean"] == pytest.approx(rec["mean"])
            assert {d for d in state.decisions} == {d.node_id for d in ev.decisions}
    final = data.state_at(None)
    assert len(final.nodes) == len(final_records(events))
    assert data.state_at(0).nodes.keys() == {0}


def test_visibility_filters_keep_the_tree_connected(store: RunStore) -> None:
    state = RunData.load(store, "r200").state_at(None)
    shown, matching, _ = visible_nodes(state, ViewOptions(high_variance_only=True))
    assert matching and all(state.nodes[i]["var"] > state.tau for i in matching)
    for nid in matching:
        assert set(state.path(nid)) <= shown  # every match reachable from the root
    shown, matching, _ = visible_nodes(state, ViewOptions(search="boxed"))
    assert matching and all("boxed" in state.nodes[i]["step"] for i in matching)
    shown, _, _ = visible_nodes(state, ViewOptions(depth_max=2))
    assert max(state.nodes[i]["depth"] for i in shown) == 2
    shown, _, _ = visible_nodes(state, ViewOptions(score_min=0.9))
    assert all(
        state.nodes[i]["mean"] >= 0.9 for i in shown - {0} if i not in {p for m in shown for p in state.path(m)[:-1]}
    )
    first = state.children[0][0]
    below = set(state.subtree(first)) - {first}
    shown, _, hidden = visible_nodes(state, ViewOptions(collapsed=frozenset({first})))
    assert not (shown & below) and hidden[first] == len(below)


def test_tree_figure_structure(store: RunStore) -> None:
    state = RunData.load(store, "r200").state_at(None)
    fig = tree_figure(state, selected=5)
    json.dumps(fig)  # serialisable as sent to the page
    markers = next(t for t in fig["data"] if t.get("name", "").startswith("nodes"))
    assert len(markers["x"]) == len([i for i in state.nodes if i != 0 and state.nodes[i]["mean"] is not None])
    ids = [c[0] for c in markers["customdata"]]
    assert len(set(ids)) == len(ids)
    ood_lines = markers["marker"]["line"]["width"]
    assert sum(w == 3 for w in ood_lines) == sum(1 for i in ids if state.nodes[i]["ood"])
    shapes = fig["layout"]["shapes"]
    # the compact glyphs: one path shape per kind of mark (per colour bin for the boxes), each a list of polylines
    boxes = [line for sh in shapes if sh["name"] == "MC boxes" for line in shape_polylines(sh)]
    assert all(sh["path"].count("M") == sh["path"].count("Z") for sh in shapes if sh["name"] == "MC boxes")
    with_spread = [i for i in ids if len(state.nodes[i]["mc_scores"]) > 1]
    assert len(boxes) == len(with_spread) and all(len(b) == 4 for b in boxes)  # one closed box per node
    ticks = [line for sh in shapes if sh["name"] == "R̄ ticks" for line in shape_polylines(sh)]
    assert len(ticks) == len(ids)  # every scored node has its mean tick
    # glyphs share one 0..1 score scale mapped into each node's row: box bottom = q1, top = q3
    from ui.views.figstyle import GLYPH_DX, GLYPH_HALF_HEIGHT as H

    xy = {i: (x, y) for i, x, y in zip(ids, markers["x"], markers["y"])}
    drawn: dict[float, list[tuple[float, float]]] = {}
    for b in boxes:
        drawn.setdefault(round(b[0][0] - GLYPH_DX[0], 2), []).append((b[0][1], b[2][1]))
    for i in with_spread:
        x, y = xy[i]
        st = box_stats(state.nodes[i]["mc_scores"])
        want_lo, want_hi = y - H + 2 * H * st["q1"], y - H + 2 * H * st["q3"]
        got = drawn[round(x, 2)]
        assert any(abs(lo - want_lo) < 0.02 and abs(hi - want_hi) < 0.02 for lo, hi in got), (i, got, want_lo, want_hi)
    # edges: one elbow (down, across, down) per drawn node but the root, ending on the node
    edges = [line for sh in shapes if sh["name"] in ("edges", "pruned / context") for line in shape_polylines(sh)]
    assert len(edges) == len(state.nodes) - 1 and {e[-1] for e in edges} <= set(xy.values()) | {(0.0, 0.0)}
    assert [sh["name"] for sh in shapes].count("selected") == 1 and shapes[-1]["name"] == "selected"
    assert (shapes[-1]["xanchor"], shapes[-1]["yanchor"], shapes[-1]["opacity"]) == (*xy[5], 1)
    # no node selected: the ring is there unseen at the question, for the page to move in place on a first click
    unseen = tree_figure(state)["layout"]["shapes"][-1]
    assert unseen["name"] == "selected" and unseen["opacity"] == 0
    assert (unseen["xanchor"], unseen["yanchor"]) == (0.0, 0.0)  # where the edges start
    assert fig["layout"]["uirevision"] == "tree"
    assert fig["meta"]["n_nodes"] == len(state.nodes)


def test_box_stats_and_colour_range() -> None:
    st = box_stats([0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.99])
    assert st["median"] == pytest.approx(0.4) and st["q1"] == pytest.approx(0.25) and st["q3"] == pytest.approx(0.55)
    assert st["hi"] == pytest.approx(0.99) and st["outliers"] == []
    st = box_stats([0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.0])
    assert st["outliers"] == [0.0] and st["lo"] == 0.5
    assert box_stats([]) is None and box_stats([0.3])["sd"] == 0.0


def test_inspector_and_compare_helpers(store: RunStore) -> None:
    a, b = RunData.load(store, "r200"), RunData.load(store, "other")
    sa = a.state_at(None)
    nid = next(i for i in sa.nodes if i != 0 and len(sa.siblings(i)) > 1)
    step = step_of(a, nid)
    fig = step_figure(step, selected=nid, per_page=len(step.candidates))
    boxes = next(t for t in fig["data"] if t["type"] == "bar" and t["xaxis"] == "x")  # a bar per row's quartiles
    assert len(boxes["y"]) == len(step.candidates) >= len(sa.siblings(nid))
    assert fig["layout"]["shapes"][0]["x0"] == pytest.approx(step.state.tau)  # the τ line
    lo, hi = shared_colour_range(sa, b.state_at(None))
    assert 0.0 <= lo < hi <= 1.0
    same = decision_divergence(a, a)
    assert same.iteration is None and same.shared > 0  # a run decides every step it shares with itself alike
    assert decision_divergence(a, b).shared == 0  # two synthetic runs sample different steps: nothing to compare


def test_side_by_side_draws_each_trees_edges_and_glyphs_on_its_own_axes(store: RunStore) -> None:
    """The comparison's static image: edges and compact glyphs are layout shapes, so B's move to B's axes."""
    from ui.views.comparison import compare_figures, side_by_side

    fa, fb, _ = compare_figures(RunData.load(store, "r200"), RunData.load(store, "other"), None)
    fig = side_by_side(fa, fb)
    for ref, tree in (("x", fa), ("x2", fb)):
        want = [sh["path"] for sh in tree["layout"]["shapes"] if sh["name"] != "selected"]
        got = [sh["path"] for sh in fig["layout"]["shapes"] if sh["xref"] == ref and sh["yref"] == "y" + ref[1:]]
        assert got == want and any(sh["name"] == "edges" for sh in tree["layout"]["shapes"])


def test_knobs_figure_plots_each_steps_knobs_against_depth(tmp_path) -> None:
    """From a real H-UATS run (test doubles for the models) read back from the database: one panel per
    knob, one marker per step after the first, y = the knob used, colour = that step's max σ; baselines
    have no knobs and get no figure."""
    from testkit.doubles import HashedPRMDouble, ScriptedPolicyDouble
    from uats_core.config import SearchConfig
    from uats_core.problems import Problem
    from uats_core.runner import run_search
    from ui.views.charts import KNOB_LABELS, knobs_figure

    store = RunStore(str(tmp_path / "k.db"))
    problem = Problem("double-1", "What is 4 + 4?", "8")
    cfg = SearchConfig(method="h-uats", budget=8, tau=0.004, nu2=0.7)
    res = run_search(problem, cfg, ScriptedPolicyDouble(depth=5), HashedPRMDouble(), subscribers=[store.subscriber()])
    its = store.get_iterations(res.run_id)
    fig = knobs_figure(its)
    assert fig is not None and len(fig["data"]) == len(KNOB_LABELS) == 6
    with_state = [i for i in its if (i["step_info"] or {}).get("state")]
    assert len(with_state) >= 2
    by_name = {tr["name"]: tr for tr in fig["data"]}
    assert by_name["tau"]["y"] == [0.004] * len(its) and by_name["nu2"]["y"] == [0.7] * len(its)
    assert by_name["beta"]["x"] == [i["iteration"] for i in its]
    sig = {i["iteration"]: i["step_info"]["state"]["max_sigma"] for i in with_state}
    colours = dict(zip(by_name["beta"]["x"], by_name["beta"]["marker"]["color"]))
    assert all(abs(colours[t] - s) < 1e-12 for t, s in sig.items())
    base = run_search(
        problem,
        SearchConfig(method="rebase", budget=8),
        ScriptedPolicyDouble(depth=5),
        HashedPRMDouble(),
        subscribers=[store.subscriber()],
    )
    assert knobs_figure(store.get_iterations(base.run_id)) is None
