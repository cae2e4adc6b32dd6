"""Case mining filters before ranking, merges identical reruns, names empty quadrants; the inspector's
node state is the one at the iteration shown; LaTeX cells read as numbers."""

from __future__ import annotations

from storage import RunStore
from testkit.doubles import record_synthetic
from ui.tabs.cases import mined_summary
from ui.views.cases import QUADRANTS, mine
from ui.views.export import ExportBundle, to_latex
from ui.views.node_details import node_details_md
from ui.views.run_status import run_status_md
from ui.views.treedata import RunData


def _store(*runs: tuple[str, int]) -> RunStore:
    store = RunStore("sqlite://")
    for rid, seed in runs:
        record_synthetic(store, rid, n_nodes=120, seed=seed, problem_id="synthetic-1")
    return store


def test_filter_applies_before_the_top_n_cut() -> None:
    store = _store(("a" * 32, 1))
    full = mine(store, per_quadrant=1000)
    quadrant = max(QUADRANTS, key=lambda q: len(full.pools[q]))
    lowest = full.pools[quadrant][-1]  # ranked last in its quadrant: cut by a top-1 before filtering
    assert len(full.pools[quadrant]) > 1
    picked = mine(store, per_quadrant=1, keep=lambda c: c.node_id == lowest.node_id)
    assert [c.node_id for c in picked.pools[quadrant]] == [lowest.node_id]
    assert picked.kept == 1 and picked.scored == full.scored
    assert set(picked.empty) == set(QUADRANTS) - {quadrant}
    summary = mined_summary(picked, starred_only=True)
    for q in picked.empty:
        assert f"{q}: no starred case" in summary


def test_identical_reruns_are_merged() -> None:
    store = _store(("a" * 32, 1), ("b" * 32, 1), ("c" * 32, 2))
    one = mine(store, ["a" * 32], per_quadrant=1000)
    both = mine(store, ["a" * 32, "b" * 32], per_quadrant=1000)
    assert both.kept == one.kept and both.merged == one.kept
    assert "merged" in mined_summary(both, starred_only=False)
    other = mine(store, ["a" * 32, "c" * 32], per_quadrant=1000)  # another seed: another tree, nothing merged
    assert other.merged == 0


def _node(**kw):
    base = {
        "id": 1,
        "parent_id": 0,
        "depth": 1,
        "step": "2 + 2 = 4",
        "created_iter": 1,
        "initial_passes": 7,
        "mc_scores": [0.5, 0.6, 0.7, 0.5, 0.6, 0.7, 0.5, 0.9, 0.1],
        "mean": 0.57,
        "var": 0.05,
        "k": 9,
        "extra_passes": 2,
        "reeval_iter": 4,
        "expanded_iter": 2,
        "children_granted": 1,
        "status": "kept",
    }
    return {**base, **kw}


def _hist(it, k, extra, children, mean):
    return {
        "iteration": it,
        "node_id": 1,
        "k": k,
        "mean": mean,
        "var": 0.01,
        "ucb": None,
        "ood": False,
        "status": "kept",
        "extra_passes": extra,
        "children_granted": children,
    }


def test_node_state_follows_the_iteration() -> None:
    """Node 1: scored with 7 passes at t=1, expanded at t=2, re-evaluated (+2 passes) at t=4."""
    run = {"run_id": "r" * 32, "question": "q", "config": {}, "iterations": 5, "n_nodes": 2}
    child = _node(
        id=2,
        parent_id=1,
        depth=2,
        created_iter=2,
        mc_scores=[0.5] * 7,
        extra_passes=0,
        reeval_iter=None,
        expanded_iter=None,
        children_granted=0,
        k=7,
    )
    hist = [
        _hist(1, 7, 0, 0, 0.6),
        _hist(2, 7, 0, 1, 0.6),
        _hist(4, 9, 2, 1, 0.57),
        {**_hist(2, 7, 0, 0, 0.5), "node_id": 2},
    ]
    data = RunData(run, [_node(), child], hist, [{"iteration": t} for t in range(1, 6)])
    at = {t: data.state_at(t) for t in (1, 2, 3, 4, 5)}
    assert [len(at[t].nodes[1]["mc_scores"]) for t in (1, 3, 4)] == [7, 7, 9]
    assert at[3].nodes[1]["mean"] == 0.6 and at[3].nodes[1].get("reeval_iter") is None
    assert at[1].nodes[1].get("expanded_iter") is None and at[3].nodes[1]["expanded_iter"] == 2
    assert at[1].children[1] == [] and at[3].children[1] == [2]
    md3, md4 = node_details_md(data, at[3], 1), node_details_md(data, at[4], 1)
    assert "**K** 7 " in md3 and "re-evaluated" not in md3 and "children granted **1**" in md3
    assert "**K** 9 " in md4 and "re-evaluated t=4" in md4
    assert "children granted **0**" in node_details_md(data, at[1], 1)
    assert "not in the tree" in node_details_md(data, at[1], 2)


def test_status_counts_the_nodes_drawn() -> None:
    store = _store(("a" * 32, 1))
    data = RunData.load(store, "a" * 32)
    state = data.state_at(None)
    md = run_status_md(data.run, state)
    assert f"nodes {len(state.nodes)} (the question and {len(state.nodes) - 1} steps)" in md


def test_latex_cost_is_an_integer() -> None:
    b = ExportBundle(
        name="x",
        kind="compare",
        data={},
        table_header=["run", "cost spent", "R̄"],
        table_rows=[["a", 1358.0, 0.5], ["b", 1357.6, 0.25]],
    )
    tex = to_latex(b)
    assert "a & 1,358 & 0.500" in tex and "b & 1,358 & 0.250" in tex and "1358.000" not in tex
