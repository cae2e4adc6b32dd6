"""The ID/OOD gate: which statistic τ thresholds (σ² or σ, of the scores or of their logits), validation of
the new options, and a search that gates on logit space while R̂ and δ stay on the probability scale."""

from __future__ import annotations

import math

import numpy as np
import pytest

from testkit.doubles import HashedPRMDouble, ScriptedPolicyDouble
from uats_core.config import SearchConfig, tau_auto_quantile
from uats_core.errors import ConfigError
from uats_core.estimation import OODGate, gate_statistic, is_ood, logits, mc_stats, reeval_candidates
from uats_core.problems import Problem
from uats_core.runner import run_search


def test_logit_stats_hand_computed():
    s = mc_stats([0.5, 0.5 + 0.1, 0.5 - 0.1], t=1, alpha=0.3)
    z = [0.0, math.log(0.6 / 0.4), math.log(0.4 / 0.6)]
    assert s.logit_mean == pytest.approx(0.0, abs=1e-12)
    assert s.logit_var == pytest.approx(np.var(z, ddof=1))
    assert s.var == pytest.approx(0.01)


def test_logits_are_clipped_so_saturated_passes_stay_finite():
    z = logits([0.0, 1.0])
    assert np.isfinite(z).all()
    assert z[0] == pytest.approx(math.log(1e-6 / (1 - 1e-6)))
    assert z[1] == pytest.approx(-z[0])


def test_low_scores_hide_their_spread_in_prob_space_but_not_in_logit_space():
    # the same relative wobble around 0.02 and around 0.5: the sigmoid squashes the first in probability space
    low = mc_stats([0.01, 0.02, 0.04], t=1, alpha=0.0)
    mid = mc_stats([0.45, 0.50, 0.55], t=1, alpha=0.0)
    assert low.var < mid.var
    assert low.logit_var > mid.logit_var


@pytest.mark.parametrize(
    "var,logit_var,kind,space,expected",
    [
        (0.0004, 0.5, "var", "prob", 0.0004),
        (0.0004, 0.5, "std", "prob", 0.02),
        (0.0004, 0.25, "var", "logit", 0.25),
        (0.0004, 0.25, "std", "logit", 0.5),
        (None, 0.25, "var", "prob", None),
        (0.1, None, "var", "logit", None),
        (-1e-18, None, "std", "prob", 0.0),  # float residue below zero reads as zero, not a math error
    ],
)
def test_gate_statistic_picks_space_and_kind(var, logit_var, kind, space, expected):
    got = gate_statistic(var, logit_var, kind, space)
    assert got == (None if expected is None else pytest.approx(expected))


def test_std_flags_more_than_var_at_the_same_tau():
    # σ² = 0.0004 is under τ = 0.003 but σ = 0.02 is over it: the two readings disagree
    assert not is_ood(0.0004, 0.003, "var")
    assert is_ood(0.0004, 0.003, "std")
    assert not is_ood(None, 0.0)  # no statistic (one pass) is never OOD


def test_gate_reads_nodes_and_stored_dicts_alike():
    gate = OODGate.from_config({"tau": 0.3, "uncertainty": "var", "uncertainty_space": "logit"})
    assert gate.is_ood({"var": 0.0001, "logit_var": 0.5}) and not gate.is_ood({"var": 0.5, "logit_var": 0.1})
    assert gate.label == "σ² (logit)"
    old = OODGate.from_config({"tau": 0.003})  # a run logged before the options existed
    assert (old.uncertainty, old.space) == ("var", "prob")
    assert OODGate.from_config({"tau": 0.003}, tau=0.01).tau == 0.01  # the controller's τ wins


def test_reeval_candidates_takes_the_gated_statistic_and_keeps_delta_on_prob_scale():
    means, ucbs = [0.85, 0.76, 0.20], [0.90, 0.80, 0.25]
    logit_vars = [0.9, 0.1, 2.0]  # the low-scored third is the noisiest in logit space
    ood, chosen, ref = reeval_candidates(means, logit_vars, ucbs, tau=0.5, delta=0.04)
    assert ood == [True, False, True]
    assert ref == pytest.approx(0.76)  # the reference is an R̄, not a logit
    assert chosen == [0]  # 0.25 < 0.72: δ compares probabilities
    ood, _, _ = reeval_candidates(means, [None, 0.1, 2.0], ucbs, tau=0.5, delta=0.04)
    assert ood == [False, False, True]


@pytest.mark.parametrize(
    "tau,q", [("auto", 0.9), ("auto:0.5", 0.5), ("AUTO:0.99", 0.99), (0.003, None), ("0.01", None)]
)
def test_tau_auto_quantile_parses(tau, q):
    assert tau_auto_quantile(tau) == q


@pytest.mark.parametrize(
    "bad,field",
    [
        (dict(tau="auto:1.5"), "tau"),
        (dict(tau="auto:0"), "tau"),
        (dict(tau="auto:x"), "tau"),
        (dict(tau="often"), "tau"),
        (dict(tau="-1"), "tau"),
        (dict(uncertainty="sd"), "uncertainty"),
        (dict(uncertainty_space="foo"), "uncertainty_space"),
    ],
)
def test_bad_uncertainty_options_name_the_field(bad, field):
    with pytest.raises(ConfigError) as err:
        SearchConfig(**bad).validate()
    assert err.value.field == field


def test_numeric_tau_text_becomes_a_number():
    assert SearchConfig(tau="0.01").validate().tau == 0.01


def test_auto_tau_is_resolved_by_the_one_validator_and_the_method_refuses_it_unresolved():
    """run_search goes through validate_request, which resolves τ = auto from the PRM's calibration; H-UATS itself
    still refuses a τ nobody resolved (a search started around the validator)."""
    from uats_core.methods import make_method

    cfg = SearchConfig(method="h-uats", budget=8, tau="auto", max_iterations=2)
    result = run_search(Problem("d", "What is 4 + 4?", "8"), cfg, ScriptedPolicyDouble(depth=3), HashedPRMDouble(0))
    assert result.status == "finished"
    with pytest.raises(ConfigError, match="tau"):
        make_method(cfg).search(None)  # type: ignore[arg-type] - refused before the context is read


@pytest.mark.parametrize("space,kind", [("prob", "var"), ("logit", "var"), ("logit", "std"), ("prob", "std")])
def test_search_marks_ood_by_the_configured_gate(space, kind):
    cfg = SearchConfig(
        method="h-uats",
        budget=16,
        seed=1,
        tau=0.05 if space == "logit" else 0.003,
        uncertainty=kind,
        uncertainty_space=space,
    )
    result = run_search(Problem("d", "What is 4 + 4?", "8"), cfg, ScriptedPolicyDouble(depth=4), HashedPRMDouble(1))
    gate = OODGate.from_config(cfg)
    scored = [n for n in result.tree.nodes.values() if n.var is not None]
    assert scored
    for node in scored:
        z = logits(node.mc_scores)
        assert node.logit_var == pytest.approx(float(np.var(z, ddof=1)))
        assert node.logit_mean == pytest.approx(float(np.mean(z)))
        if node.ood is not None:
            stat = node.logit_var if space == "logit" else node.var
            stat = math.sqrt(stat) if kind == "std" else stat
            # a node re-evaluated after its flag was set may have moved: check the flag against what the gate says
            # about the statistics the flag was set from (first decision) only for nodes never re-evaluated
            if not node.extra_passes:
                assert node.ood == (stat > cfg.tau) == gate.is_ood(node)
    flags = {n.ood for n in scored if not n.extra_passes}
    assert flags == {True, False}  # the τ of each case splits the candidates, so a wrong gate would show


def test_views_show_the_stored_verdict_and_test_only_runs_without_one():
    from uats_core.estimation import OODGate

    gate = OODGate.from_config({"tau": 0.003})
    # A-UATS decided this node with a τ of 0.01 at its step: stored ID although 0.005 > the run's 0.003.
    assert gate.is_ood({"var": 0.005}) and not gate.shown({"var": 0.005, "ood": False})
    assert gate.shown({"var": 0.001, "ood": True}) and not gate.is_ood({"var": 0.001})
    assert gate.shown({"var": 0.005, "ood": None}) and not gate.shown({"var": 0.001})
