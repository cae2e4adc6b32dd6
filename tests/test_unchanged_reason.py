"""When uncertainty changed no decision of a UATS run, the Compare tab says why in one line, computed from the
run's steps (no σ² passed τ, the largest it read named; or the OOD candidates all failed the δ test), and
offers the OOD pair: policy B with the same PRM, problem, seed, budget and knobs, queued like the pair button's."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from storage import RunStore
from testkit.doubles import WorkerPoolDouble
from uats_core.allocation import softmax_shares
from uats_core.config import SearchConfig
from uats_core.paths import WORLD_POLICY_B
from uats_core.runner import DEFAULT_PRM, build_backends, run_search
from uats_core.worlds.arith import world
from ui.choices import EMBEDDED, POLICY_B, server_choices
from ui.tabs.ood_pair import offers_ood_pair, ood_pair_form
from ui.tabs.search_events import submit_run
from ui.views.treedata import RunData
from ui.views.uncertainty import changes_summary, uncertainty_changes, unchanged_reason

needs_models = pytest.mark.skipif(not (DEFAULT_PRM / "config.json").is_file(), reason="embedded models missing")
MEANS = (0.80, 0.60, 0.20)


def _uats_step(
    var_before: list[float],
    ood: list[bool],
    taus: tuple[float, ...] = (0.003,),
    sent: tuple[bool, ...] = (False, False, False),
) -> RunData:
    """H-UATS steps over three candidates each (R̄ 0.80, 0.60, 0.20 from K0 = 2 passes, C = 3, ν2 = 0.2), those of
    `sent` sent to re-evaluation, children as R̄ alone gives them; one step per τ in `taus` (as A-UATS's
    controller sets)."""
    run = {
        "run_id": "u" * 32,
        "method": "h-uats",
        "question": "q",
        "status": "finished",
        "iterations": 1 + len(taus),
        "config": {"method": "h-uats", "k0": 2, "nu2": 0.2, "tau": taus[0], "delta": 0.1, "alpha": 0.0},
    }
    children = softmax_shares(list(MEANS), 3, 0.2)
    nodes, iterations = [], [{"iteration": 1, "decisions": []}]
    for s, tau in enumerate(taus):
        ids = [3 * s + i for i in (1, 2, 3)]
        nodes += [
            {
                "id": nid,
                "parent_id": 0,
                "depth": 1,
                "step": f"step {nid}",
                "created_iter": 1,
                "mc_scores": [m, m],
                "mean": m,
                "status": "kept",
            }
            for nid, m in zip(ids, MEANS)
        ]
        decisions = [
            {
                "node_id": nid,
                "children": c,
                "extra_passes": 0,
                "ood": o,
                "reeval_candidate": r,
                "mean_before": m,
                "var_before": v,
                "ucb_before": m,
                "k_before": 2,
                "mean": m,
            }
            for nid, m, v, o, r, c in zip(ids, MEANS, var_before, ood, sent, children)
        ]
        iterations.append(
            {
                "iteration": 2 + s,
                "decisions": decisions,
                "step_info": {"width": 3, "reeval_passes": 4, "knobs": {"nu2": 0.2, "tau": tau}},
            }
        )
    data = RunData(run, nodes, iterations=iterations)
    data.history_skipped = True
    return data


def test_in_distribution_names_tau_and_the_largest_sigma2_read() -> None:
    data = _uats_step([0.0004, 0.0011, 0.0002], [False, False, False])
    assert uncertainty_changes(data) == []
    assert unchanged_reason(data) == (
        "no σ² passed τ = 0.003 (the largest of the 3 the gate read was 0.0011, node 2 at iteration 2): the PRM is "
        "in distribution here, so every step was decided as R̄ alone would have"
    )
    rebase = RunData({**data.run, "run_id": "r" * 32, "method": "rebase"}, [], iterations=[])
    assert changes_summary(data, rebase) == f"uncertainty changed no decision of A: {unchanged_reason(data)}"


def test_ood_candidates_that_fail_the_delta_test() -> None:
    data = _uats_step([0.0004, 0.005, 0.0002], [False, True, False])
    assert uncertainty_changes(data) == []
    assert unchanged_reason(data) == (
        "1 of the 3 σ² the gate read passed τ = 0.003, but none of those candidates came within δ = 0.1 of its "
        "step's best in-distribution R̄ (the δ test), so none was re-evaluated and R̄ alone gave the same children"
    )


def test_a_tau_set_per_step_is_given_as_its_range() -> None:
    data = _uats_step([0.0001, 0.0002, 0.0001], [False, False, False], taus=(0.002, 0.004))
    assert "no σ² passed τ = 0.002–0.004 (set per step)" in unchanged_reason(data)


@pytest.fixture(scope="module")
def calm_pair() -> tuple[RunStore, RunData, RunData]:
    """H-UATS and REBASE of the embedded world (policy A, its PRM in distribution) with τ = 0.5, which no σ²
    of a score in [0, 1] can pass (σ² ≤ 0.25): uncertainty can change nothing, whatever the passes read."""
    store = RunStore("sqlite://")
    models, ids = None, []
    for method in ("h-uats", "rebase"):
        cfg = SearchConfig(method=method, budget=8, seed=3, tau=0.5, max_iterations=8).validate()
        models = models or build_backends(None, None, cfg)
        ids.append(run_search(world.get_problem("arith-test-2"), cfg, *models, subscribers=[store.subscriber()]).run_id)
    return store, RunData.load(store, ids[0]), RunData.load(store, ids[1])


@needs_models
def test_a_real_run_says_no_sigma2_passed_with_the_largest_it_read(calm_pair) -> None:
    _, uats, _ = calm_pair
    assert uncertainty_changes(uats) == []
    read = [
        (t, d["node_id"], d["var_before"]) for t, row in uats.iterations.items() for d in row.get("decisions") or []
    ]
    t, node, var = max(read, key=lambda r: (r[2], -r[0]))
    assert unchanged_reason(uats).startswith(
        f"no σ² passed τ = 0.5 (the largest of the {len(read)} the gate read "
        f"was {var:.2g}, node {node} at iteration {t})"
    )


@needs_models
def test_the_ood_pair_is_offered_and_queued_with_policy_b(calm_pair) -> None:
    store, uats, rebase = calm_pair
    choices = server_choices()
    assert offers_ood_pair(choices, uats, rebase) and offers_ood_pair(choices, rebase, uats)
    form = ood_pair_form(choices, uats.run)
    assert (form["policy"], form["prm"], form["problem"]) == (POLICY_B, EMBEDDED, "arith-test-2")
    ctx = SimpleNamespace(store=store, pool=WorkerPoolDouble(), choices=choices)
    ids = [submit_run(ctx, form, method=m, label="compare OOD") for m in ("h-uats", "rebase")]
    assert [r.run_id for r in ctx.pool.submitted] == ids
    for rid, method in zip(ids, ("h-uats", "rebase")):
        row = store.get_run(rid)
        assert (row["status"], row["method"], row["policy"], row["problem_id"], row["seed"]) == (
            "queued",
            method,
            str(WORLD_POLICY_B),
            "arith-test-2",
            3,
        )
        assert {k: row["config"][k] for k in ("budget", "tau", "k0", "max_iterations")} == {
            k: uats.run["config"][k] for k in ("budget", "tau", "k0", "max_iterations")
        }
    # a pair already on policy B, or one where uncertainty changed something, is offered nothing
    on_b = RunData(
        {**uats.run, "policy": str(WORLD_POLICY_B)},
        [uats.nodes[i] for i in uats.nodes if i],
        iterations=list(uats.iterations.values()),
    )
    assert not offers_ood_pair(choices, on_b, rebase)
    same_run = {k: uats.run[k] for k in ("policy", "prm", "problem_id", "question")}
    calm, sent = (
        _uats_step([0.0004, 0.005, 0.0002], [False, True, False], sent=s)
        for s in ((False, False, False), (False, True, False))
    )
    calm.run.update(same_run)
    sent.run.update(same_run)
    assert offers_ood_pair(choices, calm, rebase) and uncertainty_changes(sent)
    assert not offers_ood_pair(choices, sent, rebase)
