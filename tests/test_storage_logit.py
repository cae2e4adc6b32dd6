"""The logit-space statistics per node: written by a search, read back from nodes and node_history, and an
older run log without those columns opens, keeps its rows and takes new ones."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import numpy as np
import pytest

from storage import RunStore
from testkit.doubles import HashedPRMDouble, ScriptedPolicyDouble
from uats_core.config import SearchConfig
from uats_core.estimation import logits
from uats_core.problems import Problem
from uats_core.runner import run_search

PROBLEM = Problem("double-1", "What is 4 + 4?", "8")


def _search(store: RunStore, run_id: str) -> None:
    cfg = SearchConfig(method="h-uats", budget=8, seed=2, uncertainty_space="logit", tau=0.05)
    run_search(
        PROBLEM, cfg, ScriptedPolicyDouble(depth=3), HashedPRMDouble(2), subscribers=[store.subscriber()], run_id=run_id
    )


def test_logit_statistics_round_trip(tmp_path: Path) -> None:
    store = RunStore(str(tmp_path / "runs.db"))
    _search(store, "r1")
    nodes = [n for n in store.get_nodes("r1") if n["id"] != 0]
    scored = [n for n in nodes if len(n["mc_scores"]) >= 2]
    assert scored
    for n in scored:
        z = logits(n["mc_scores"])
        assert n["logit_var"] == pytest.approx(float(np.var(z, ddof=1)))
        assert n["logit_mean"] == pytest.approx(float(np.mean(z)))
        assert "logit_var" not in (n.get("extra") or {})  # a real column, not the unknown-keys bag
    history = store.get_node_history("r1")
    assert history and all(h["logit_var"] is not None for h in history if h["k"] >= 2)
    assert store.get_run("r1")["config"]["uncertainty_space"] == "logit"


def test_an_older_run_log_without_logit_columns_still_opens(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    _search(RunStore(str(path)), "old")
    with sqlite3.connect(path) as conn:  # what a run log written before the logit statistics looked like
        for table in ("nodes", "node_history"):
            conn.execute(f"ALTER TABLE {table} DROP COLUMN logit_mean")
            conn.execute(f"ALTER TABLE {table} DROP COLUMN logit_var")
        cols = {r[1] for r in conn.execute("PRAGMA table_info(nodes)")}
    assert "logit_var" not in cols
    store = RunStore(str(path))
    old = [n for n in store.get_nodes("old") if n["id"] != 0]
    assert old and all(n["logit_var"] is None for n in old)  # old rows: no statistic, not a crash
    assert all(n["mean"] is not None for n in old if n["mc_scores"])
    _search(store, "new")
    new = [n for n in store.get_nodes("new") if len(n["mc_scores"]) >= 2]
    assert new and all(n["logit_var"] is not None for n in new)


def test_inspector_shows_both_spreads_and_plots_the_gated_one(tmp_path: Path) -> None:
    from ui.views.decisions import step_of
    from ui.views.figstyle import fmt_var
    from ui.views.figure1 import step_figure
    from ui.views.node_details import node_details_md
    from ui.views.treedata import RunData

    store = RunStore(str(tmp_path / "runs.db"))
    _search(store, "r1")  # gated on logits, τ = 0.05
    data = RunData.load(store, "r1")
    state = data.state_at(None)
    assert state.gate.space == "logit" and state.gate.tau == 0.05
    nid = next(i for i, n in state.nodes.items() if i and n.get("logit_var") is not None)
    text = node_details_md(data, state, nid)
    assert "logits" in text and "σ² (logit)" in text and fmt_var(state.nodes[nid]["logit_var"]) in text
    step = step_of(data, nid)
    fig = step_figure(step, selected=nid, per_page=len(step.candidates))
    bars = next(t for t in fig["data"] if t["type"] == "bar" and t["xaxis"] == "x3")
    rows = fig["meta"]["rows"]
    # the gate's statistic, not the score σ²: the bar is what the ID/OOD test read (before any extra passes),
    # the ◇ what the extra passes made of it
    after = next((t for t in fig["data"] if t.get("name") == "σ² (logit) after"), {"y": [], "x": []})
    then = dict(zip(after["y"], after["x"]))
    for i, (s, bar) in enumerate(zip(rows, bars["x"])):
        assert (then[i] if step.candidate(s).extra else bar) == state.nodes[s]["logit_var"]
    assert fig["layout"]["xaxis3"]["title"]["text"] == "σ² (logit) read"
    # every iteration replays the logit statistics of the passes it had then (node_history), not the latest ones
    reevaluated = [i for i, n in state.nodes.items() if i and n.get("extra_passes")]
    assert reevaluated  # so an iteration before the extra passes differs from the latest snapshot
    for t in range(1, data.max_iteration + 1):
        for i, n in data.state_at(t).nodes.items():
            if i and len(n["mc_scores"]) >= 2:
                assert n["logit_var"] == pytest.approx(float(np.var(logits(n["mc_scores"]), ddof=1)))


def test_the_node_columns_are_the_node_fields() -> None:
    """uats_core.tree.Node is the one list of node fields: the nodes table holds each (id as node_id) and only the
    run log's own bookkeeping besides; node_history keeps a subset, and the app's root node has them all."""
    from dataclasses import fields

    from storage import schema as S
    from uats_core.tree import Node
    from ui.views.treedata import _root

    names = [f.name for f in fields(Node)]
    assert {c.name for c in S.nodes.columns} == {*names, "run_id", "node_id", "k", "extra", "updated_iter"} - {"id"}
    assert set(S.HISTORY_FIELDS) <= {*names, "k"} and {"mean", "var", "ucb", "status"} <= set(S.HISTORY_FIELDS)
    assert set(_root({"question": "q"})) == {*names, "k", "updated_iter", "question"}
