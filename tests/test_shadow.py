"""Shadow scoring: MC passes on a baseline's candidates, stored apart from the run; the comparison export
with both trees; LaTeX numbers."""

from __future__ import annotations

import json

from storage import RunStore
from storage.shadow import read_shadow
from testkit.doubles import HashedPRMDouble, ScriptedPolicyDouble, record_synthetic
from uats_core.config import SearchConfig
from uats_core.problems import Problem
from uats_core.runner import run_search
from ui.jobs.shadow import explain_shadow, run_shadow
from ui.views.bundles import compare_bundle
from ui.views.comparison import compare_figures
from ui.views.decisions import step_at
from ui.views.export import to_latex
from ui.views.figure1 import step_figure
from ui.views.treedata import RunData


def _pair(store: RunStore) -> tuple[str, str]:
    ids = []
    for m in ("h-uats", "rebase"):
        res = run_search(
            Problem("double-1", "What is 4 + 4?", "8"),
            SearchConfig(method=m, budget=6, seed=1, max_iterations=5),
            ScriptedPolicyDouble(depth=4),
            HashedPRMDouble(1),
            subscribers=[store.subscriber()],
        )
        ids.append(res.run_id)
    return ids[0], ids[1]


def test_shadow_rows_are_stored_apart_and_leave_the_run_alone() -> None:
    store = RunStore("sqlite://")
    _, rb = _pair(store)
    before_run, before_nodes = store.get_run(rb), store.get_nodes(rb)
    prm = HashedPRMDouble(5)
    prm.name = "<b>prm</b>"
    seen: list[tuple[int, int]] = []
    rows = run_shadow(store, rb, prm, k=6, progress=lambda done, total: seen.append((done, total)))
    assert set(rows) == {n["id"] for n in before_nodes}
    assert seen and seen[-1] == (len(rows), len(rows))  # batch by batch, to the last node
    assert [d for d, _ in seen] == sorted(d for d, _ in seen)
    assert all(len(r["mc_scores"]) == 6 and r["var"] is not None for r in rows.values())
    assert store.get_run(rb)["cost"] == before_run["cost"] and store.get_nodes(rb) == before_nodes
    data = RunData.load(store, rb)
    nid = next(iter(d["node_id"] for d in data.iterations[2]["decisions"]))
    text = explain_shadow(data, nid, rows)
    assert "shadow" in text and "&lt;b&gt;prm" in text and "children" in text
    local = {i: {**r, "prm": "/srv/private/models/arith-prm"} for i, r in rows.items()}  # a server-side folder
    text = explain_shadow(data, nid, local)
    assert "arith-prm" in text and "/srv" not in text and "private" not in text
    fig = step_figure(step_at(data, 2), shadow=rows)
    assert any(t.get("name") == "shadow" for t in fig["data"])
    tree = compare_figures(RunData.load(store, _pair(store)[0]), data, None, shadows=(None, rows))[1]
    assert tree["meta"]["shadow"] == len(rows)
    store.delete_run(rb)
    assert read_shadow(store, rb) == {}


def test_compare_export_holds_both_trees_and_formats_numbers() -> None:
    store = RunStore("sqlite://")
    for rid, m in (("a" * 32, "h-uats"), ("b" * 32, "rebase")):
        record_synthetic(store, rid, n_nodes=120, seed=4, method=m)
    a, b = RunData.load(store, "a" * 32), RunData.load(store, "b" * 32)
    bundle = compare_bundle(a, b, shadows=({}, {3: {"node_id": 3, "mean": 0.5, "var": 0.01, "mc_scores": [0.4, 0.6]}}))
    data = json.loads(json.dumps(bundle.data, default=str))
    assert len(data["a_nodes"]) == len(a.nodes) and len(data["b_nodes"]) == len(b.nodes)
    assert data["a_iterations"] and data["b_shadow"][0]["node_id"] == 3
    tex = to_latex(bundle)
    cost = float(a.run["cost"])
    assert f"{cost:,.0f}" in tex and f"{cost:.3f}" not in tex
