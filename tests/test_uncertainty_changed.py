"""The decisions uncertainty changed and the decision-based divergence of two runs, read back from real
searches on the embedded arithmetic world (its small policy and PRM, on CPU) and from a hand-made step whose
numbers are worked out below."""

from __future__ import annotations

import copy
import math

import pytest

from testkit.run_pairs import hand_made_step, needs_models
from uats_core.allocation import softmax_shares
from ui.views.divergence import counterpart, decision_divergence, divergence_text
from ui.views.uncertainty import CHILDREN, RANK, SENT, changed_table, competition_ranks, uncertainty_changes


@needs_models
def test_the_list_holds_exactly_the_candidates_whose_decision_uncertainty_changed(real_pair) -> None:
    """Worked out here from the stored decisions alone: sent = in S; R̄ ranks before (first K0 passes) and
    after the extra passes; children from R̄ before with the step's C and ν2."""
    uats, _ = real_pair
    listed = {(c.iteration, c.node_id): c for c in uncertainty_changes(uats)}
    nu2 = uats.run["config"]["nu2"]
    expected = set()
    for t, row in uats.iterations.items():
        ds = row.get("decisions") or []
        if not ds:
            continue
        before = [d["mean_before"] for d in ds]
        after = [d["mean"] for d in ds]
        rank_b = [1 + sum(x > b for x in before) for b in before]
        rank_a = [1 + sum(x > a for x in after) for a in after]
        naive = softmax_shares(before, row["step_info"]["width"], nu2)
        for i, d in enumerate(ds):
            reasons = tuple(
                r
                for r, hit in (
                    (SENT, d["reeval_candidate"]),
                    (RANK, rank_b[i] != rank_a[i]),
                    (CHILDREN, naive[i] != d["children"]),
                )
                if hit
            )
            if reasons:
                expected.add((t, d["node_id"]))
                got = listed[(t, d["node_id"])]
                assert got.reasons == reasons
                assert (got.rank_before, got.rank_after, got.children_naive) == (rank_b[i], rank_a[i], naive[i])
                assert got.children == d["children"] and got.extra == d["extra_passes"]
    assert set(listed) == expected
    assert any(c.sent and c.extra > 0 for c in listed.values()), "the low τ made re-evaluations to list"
    assert any(RANK in c.reasons for c in listed.values()), "extra passes moved a rank"


@needs_models
def test_r_bar_before_and_after_are_the_stored_passes(real_pair) -> None:
    """R̄ before = mean of the first K0 passes, after = mean of all the passes the step left."""
    uats, _ = real_pair
    k0 = uats.run["config"]["k0"]
    checked = 0
    for c in uncertainty_changes(uats):
        passes = uats.nodes[c.node_id]["mc_scores"]
        assert c.k_before == k0
        assert c.mean_before == pytest.approx(sum(passes[:k0]) / k0, abs=1e-9)
        if c.extra:
            assert c.mean_after == pytest.approx(sum(passes[: k0 + c.extra]) / (k0 + c.extra), abs=1e-9)
            checked += 1
    assert checked


@needs_models
def test_the_r_bar_alone_allocation_is_the_engines_rule(real_pair) -> None:
    """The what-if uses softmax_shares: fed the child scores the search stored, it gives the children the
    search gave, step by step."""
    uats, _ = real_pair
    nu2 = uats.run["config"]["nu2"]
    steps = 0
    for row in uats.iterations.values():
        ds = row.get("decisions") or []
        if ds:
            assert softmax_shares([d["child_score"] for d in ds], row["step_info"]["width"], nu2) == [
                d["children"] for d in ds
            ]
            steps += 1
    assert steps >= 2


@needs_models
def test_rebase_has_no_uncertainty_decisions_and_the_table_says_which_run(real_pair) -> None:
    uats, rebase = real_pair
    assert uncertainty_changes(rebase) == []
    rows, targets = changed_table(rebase, uats)
    assert rows and all(r[0] == "B" for r in rows) and all(t[0] == "b" for t in targets)
    assert [(t[1], t[2]) for t in targets] == [(c.node_id, c.iteration) for c in uncertainty_changes(uats)]


@needs_models
def test_different_widths_alone_are_no_divergence(real_pair) -> None:
    """The old "first diverging iteration" read 1 for every H-UATS/REBASE pair: their widths differ at the
    root. By decisions, iteration 1 decides nothing (the root is expanded by both), so it is never 1."""
    uats, rebase = real_pair
    div = decision_divergence(uats, rebase)
    assert div.iteration != 1 and div.shared > 0
    assert decision_divergence(uats, uats).iteration is None


@needs_models
def test_a_flipped_decision_is_where_two_runs_diverge(real_pair) -> None:
    """A twin of the run whose first expanding step grants nothing: they diverge there, on a step both have
    (a step sampled twice under one parent counts as expanded when either copy was, so every grant is taken)."""
    uats, _ = real_pair
    twin = copy.deepcopy(uats)
    t = min(t for t, row in twin.iterations.items() if any(d["children"] for d in row.get("decisions") or []))
    for d in twin.iterations[t]["decisions"]:
        d["children"] = 0
    div = decision_divergence(uats, twin)
    keys = uats.state_at(None)
    assert div.iteration == t and div.children_a > 0 and div.children_b == 0
    assert keys.prefix_key(div.node_a) == keys.prefix_key(div.node_b)
    text = divergence_text(div)
    assert f"diverge at iteration {t}" in text and f"no children in B (node {div.node_b})" in text


@needs_models
def test_a_row_finds_its_node_in_the_other_tree(real_pair) -> None:
    uats, rebase = real_pair
    su, sr = uats.state_at(None), rebase.state_at(None)
    first = next(i for i in sorted(sr.nodes) if i != 0)
    assert counterpart(sr, sr.prefix_key(first)) == (first, 1)
    node = next(c.node_id for c in uncertainty_changes(uats))
    match, shared = counterpart(sr, su.prefix_key(node))
    assert sr.prefix_key(match)[:shared] == su.prefix_key(node)[:shared]
    assert counterpart(sr, ("no such step",)) == (0, 0)


def test_extra_passes_that_lift_a_candidate_change_its_children_and_ranks() -> None:
    """R̄ before: 0.80, 0.60, 0.20 → C = 3 over softmax(R̄/0.2) = 3·(0.705, 0.259, 0.035) → [2, 1, 0]. Four
    extra passes at 1.0 lift candidate 2 to R̄ = 0.8667 > 0.80: 3·(0.409, 0.571, 0.020) → the search gives
    [1, 2, 0] where R̄ alone would have given [2, 1, 0]."""
    assert softmax_shares([0.80, 0.60, 0.20], 3, 0.2) == [2, 1, 0]
    rows = {c.node_id: c for c in uncertainty_changes(hand_made_step([1.0] * 4))}
    assert set(rows) == {1, 2}
    assert rows[2].reasons == (SENT, RANK, CHILDREN) and (rows[2].children, rows[2].children_naive) == (2, 1)
    assert (rows[2].rank_before, rows[2].rank_after) == (2, 1)
    assert math.isclose(rows[2].mean_after, (0.58 + 0.62 + 4.0) / 6)
    assert rows[1].reasons == (RANK, CHILDREN) and (rows[1].children, rows[1].children_naive) == (1, 2)


def test_extra_passes_that_confirm_a_candidate_only_list_it_as_re_evaluated() -> None:
    rows = uncertainty_changes(hand_made_step([0.60, 0.60]))
    assert [(c.node_id, c.reasons) for c in rows] == [(2, (SENT,))]


def test_ties_share_a_rank() -> None:
    assert competition_ranks([0.2, 0.5, 0.5, None]) == [3, 1, 1, 4]
