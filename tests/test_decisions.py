"""Decisions in words and the frontier view, read from what a real UATS search stored (the engine with the
test doubles) and from synthetic runs."""

from __future__ import annotations

import re

import pytest

from storage import RunStore
from testkit.doubles import HashedPRMDouble, ScriptedPolicyDouble, record_synthetic
from uats_core.config import SearchConfig
from uats_core.estimation import ucb
from uats_core.problems import Problem
from uats_core.runner import run_search
from ui.views.decisions import (
    decision_iteration,
    explain_node,
    explain_step,
    step_at,
    step_candidates,
    step_of,
    step_totals,
)
from ui.views.figure1 import step_figure
from ui.views.frontier import ordered_rows, page_of
from ui.views.treedata import RunData

PROBLEM = Problem("double-1", "What is 4 + 4?", "8")


@pytest.fixture(scope="module")
def uats_run() -> RunData:
    store = RunStore("sqlite://")
    cfg = SearchConfig(method="h-uats", budget=8, seed=3, max_iterations=6, tau=0.002)
    res = run_search(PROBLEM, cfg, ScriptedPolicyDouble(depth=5), HashedPRMDouble(3), subscribers=[store.subscriber()])
    return RunData.load(store, res.run_id)


@pytest.fixture(scope="module")
def synthetic() -> RunData:
    store = RunStore("sqlite://")
    record_synthetic(store, "s" * 32, n_nodes=600, budget=32, seed=5)
    return RunData.load(store, "s" * 32)


def test_candidates_match_what_the_engine_decided(uats_run: RunData) -> None:
    checked = 0
    for t, row in uats_run.iterations.items():
        cands, budget, _ = step_candidates(uats_run, t)
        stored = {d["node_id"]: d for d in row.get("decisions") or []}
        assert [c.node_id for c in cands] == list(stored)
        for c in cands:
            d = stored[c.node_id]
            assert c.ood == d["ood"] and c.selected == d["reeval_candidate"]
            assert c.extra == d["extra_passes"] and c.children == d["children"]
            assert c.var == pytest.approx(d["var_before"]) and c.k == d["k_before"]
            checked += 1
        if cands:
            b, c = step_totals(budget, cands)
            assert (b, c) == (budget.reeval_passes, budget.width)
            assert sum(x.extra for x in cands) == budget.reeval_used
            assert sum(x.children for x in cands) == c  # C is conserved exactly
    assert checked > 10


def test_the_pages_r_hat_at_the_first_step_is_the_engines(synthetic: RunData) -> None:
    """A run stored without the decisions' "before" statistics (synthetic and older runs) gets R̂ from the passes:
    at t = 1 it is the engine's estimation.ucb (ln 1 = 0, so R̂ = R̄), not a bonus the search never added (the
    page used max(t, 2) where the engine uses max(t, 1))."""
    cands, _, _ = step_candidates(synthetic, 1)
    alpha = synthetic.run["config"]["alpha"]
    assert len(cands) > 1 and alpha > 0 and all(c.k >= 2 for c in cands)
    for c in cands:
        assert c.ucb == pytest.approx(ucb(c.mean, c.k, 1, alpha), abs=1e-12)
        assert c.ucb == pytest.approx(c.mean, abs=1e-12)


def test_explain_node_gives_the_tests_and_shares(uats_run: RunData) -> None:
    seen_ood = seen_extra = False
    for t, row in uats_run.iterations.items():
        for d in row.get("decisions") or []:
            text = explain_node(uats_run, d["node_id"])
            assert f"decided at iteration {t}" in text
            assert ("OOD" in text) == bool(d["ood"]) or "ID" in text
            assert "τ =" in text and f"of C = {row['step_info']['width']}" in text
            if d["ood"]:
                seen_ood = True
                assert "δ test" in text and "R̂ rank" in text
            if d["extra_passes"]:
                seen_extra = True
                assert (
                    f"+{d['extra_passes']} extra passes" in text
                    and f"of B = {row['step_info']['reeval_passes']}" in text
                )
    assert seen_ood and seen_extra
    step = explain_step(uats_run, max(uats_run.iterations))
    assert "B =" in step and "C =" in step


def test_node_not_yet_decided_says_so(uats_run: RunData) -> None:
    nid = next(
        i
        for i in uats_run.nodes
        if i and decision_iteration(uats_run, i) not in (None, 1) and decision_iteration(uats_run, i) > 2
    )
    assert "no decision about it yet" in explain_node(uats_run, nid, t=1)


def test_explanations_hold_no_markup_from_stored_text() -> None:
    store = RunStore("sqlite://")
    record_synthetic(store, "x" * 32, n_nodes=80, budget=8, seed=1, question="<img src=x onerror=alert(1)>")
    data = RunData.load(store, "x" * 32)
    html_out = "".join(explain_node(data, i) for i in data.nodes if i) + explain_step(data, 2)
    assert "<img" not in html_out
    assert set(re.findall(r"</?([a-z]+)", html_out)) <= {"div", "p", "b", "ul", "li"}


def test_frontier_holds_every_candidate_sorted_grouped_and_paged(synthetic: RunData) -> None:
    t = 4
    step = step_at(synthetic, t)
    n_dec = len(synthetic.iterations[t]["decisions"])
    for key in ("mean", "stat", "ucb"):
        rows = ordered_rows(step, key)
        assert len(rows) == n_dec
        values = [getattr(r, key) for r in rows]
        assert values == sorted(values, reverse=True)
    grouped = ordered_rows(step, "parent")
    parents = [r.parent_id for r in grouped]
    assert parents == sorted(parents)  # each parent's candidates together, the parents in the tree's order
    for p in set(parents):
        means = [r.mean for r in grouped if r.parent_id == p]
        assert means == sorted(means, reverse=True)
    pages = [page_of(grouped, p, 7)[0] for p in range(page_of(grouped, 0, 7)[2])]
    assert [r.node_id for page in pages for r in page] == [r.node_id for r in grouped]
    assert page_of(grouped, 999, 7)[1] == len(pages) - 1  # clamped


def test_figure1_shows_the_whole_step_one_row_and_label_each(synthetic: RunData) -> None:
    """The step's whole frontier, grouped by parent, not the node's siblings: every candidate decided at the
    iteration, one row and one label each, the inspected one marked; the page that holds it comes first."""
    t = 4
    step = step_at(synthetic, t)
    rows = ordered_rows(step, "parent")
    nid = rows[len(rows) // 2].node_id
    before = step_of(synthetic, nid, t - 1)
    assert step_of(synthetic, nid).iteration == t and (before is None or not before.decided)
    fig = step_figure(step_of(synthetic, nid), selected=nid, per_page=200)
    labels = fig["layout"]["yaxis"]["ticktext"]
    assert fig["meta"]["rows"] == [r.node_id for r in rows] and len(labels) == len(rows)
    assert len(set(labels)) == len(labels) and sum("◀" in lab for lab in labels) == 1
    assert sum("▸" in lab for lab in labels) == len({r.parent_id for r in rows})  # one group label per parent
    assert fig["layout"]["height"] >= 24 * len(labels)  # a row's height per candidate, whatever their number
    paged = step_figure(step_of(synthetic, nid), selected=nid, per_page=7)
    assert nid in paged["meta"]["rows"] and len(paged["meta"]["rows"]) <= 7
    sibs = step_figure(step_of(synthetic, nid), selected=nid, siblings_only=True)
    parent = synthetic.nodes[nid]["parent_id"]
    assert set(sibs["meta"]["rows"]) == {r.node_id for r in rows if r.parent_id == parent}


def test_figure1_title_counts_in_words(synthetic: RunData) -> None:
    from ui.views.figure1 import step_title

    step = step_at(synthetic, 4)
    one = type(step)(step.iteration, True, step.candidates[:1], step.step_info, step.state)
    title = step_title(one, 1, 0, 1, 64, 1, False)
    assert "1 candidate of" in title and "1 parent" in title and "candidates" not in title
    assert "parents" in step_title(step, len(step.candidates), 0, 1, 64, len(step.candidates), False)
