"""Uncertainty estimators (uats_core/estimators): each one's statistics on a known case, the cost accounting the
search and the spending rule share, the setting in configs and cell keys, and MC dropout reproducing a ledger cell."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from testkit.doubles import HashedPRMDouble, ScriptedPolicyDouble, unit
from uats_core.config import ESTIMATORS, SearchConfig
from uats_core.errors import ConfigError
from uats_core.estimators import ESTIMATOR_CLASSES, make_estimator
from uats_core.estimators.ensemble import Ensemble
from uats_core.estimators.mc_dropout import MCDropout
from uats_core.estimators.measure import fifth_of, ood_auroc, pair_row
from uats_core.estimators.posterior import Laplace, Mahalanobis, distance_estimate, fit_head, sigmoid
from uats_core.eval.grid import Cell
from uats_core.problems import Problem
from uats_core.protocols import Trace
from uats_core.runner import run_search
from uats_core.spending import config_spending

ROOT = Path(__file__).resolve().parents[1]
TRACES = [Trace("q1", ("a\n\n",)), Trace("q2", ("b\n\n", "c\n\n")), Trace("q3", ("d",))]


class FixedPRMDouble:
    """A deterministic PRM whose every last step scores `value` (an ensemble member of known output)."""

    def __init__(self, value: float) -> None:
        self.name, self.value, self.calls = f"fixed-{value}", value, 0

    def score(self, traces):
        self.calls += 1
        return [[self.value] * len(t.steps) for t in traces]


class HiddenPRMDouble:
    """A PRM whose final hidden state at a trace is given: what Laplace and Mahalanobis read (TorchPRM.last_hidden)."""

    name = "hidden-double"

    def __init__(self, hidden: dict[Trace, np.ndarray], w: np.ndarray, b: float) -> None:
        self.hidden, self.w, self.b = hidden, w, b

    def last_hidden(self, traces):
        return np.stack([self.hidden[t] for t in traces])

    def head_linear(self):
        return self.w, self.b


def test_the_setting_is_validated_and_names_the_registry():
    assert tuple(ESTIMATOR_CLASSES) == ESTIMATORS and SearchConfig().estimator == "mc-dropout"
    with pytest.raises(ConfigError) as err:
        SearchConfig(estimator="dropout").validate()
    assert err.value.field == "estimator"


def test_default_estimator_keeps_existing_cell_keys_and_others_name_their_cells():
    base = Cell("A:prm", "p", "r", "arith-test", "arith-test-0", "h-uats", 4, 0)
    assert base.key == "A:prm|arith-test|arith-test-0|h-uats|4|0|base"  # the rerun ledger's key, unchanged
    ens = Cell("A:prm", "p", "r", "arith-test", "arith-test-0", "h-uats", 4, 0, (("estimator", "ensemble"),))
    assert ens.key.endswith("|estimator=ensemble") and ens.config().estimator == "ensemble"
    from uats_core.eval.grid import relevant

    assert relevant("estimator", "h-uats") and not relevant("estimator", "rebase")
    assert relevant("estimator", "rebase", {"rebase_scoring": "mc"})


def test_a_known_ensemble_reads_its_members_in_order_and_no_further():
    members = [FixedPRMDouble(v) for v in (0.2, 0.4, 0.9)]
    est = Ensemble(members)
    first = est.more(TRACES[:2], [[], []], 2)
    assert [e.samples for e in first] == [(0.2, 0.4), (0.2, 0.4)] and [e.new for e in first] == [2, 2]
    assert first[0].mean == pytest.approx(0.3) and first[0].var == pytest.approx(0.02)  # ddof = 1
    assert members[2].calls == 0  # member 2 was not read: re-evaluation reads it
    more = est.more(TRACES[:1], [list(first[0].samples)], 2)[0]
    assert (
        more.samples == (0.2, 0.4, 0.9) and more.new == 1 and more.var == pytest.approx(np.var([0.2, 0.4, 0.9], ddof=1))
    )
    assert est.more(TRACES[:1], [list(more.samples)], 2)[0].new == 0 and est.capacity(3) == 0


def _posterior_case(n: int = 400, d: int = 3, seed: int = 1):
    rng = np.random.default_rng(seed)
    h = rng.standard_normal((n, d))
    w, b = np.array([1.0, -0.5, 0.25]), 0.1
    return h, w, b


def test_a_known_laplace_posterior_its_hessian_and_its_draws():
    h, w, b = _posterior_case()
    fit = fit_head(h, w, b, prior_precision=2.0)
    phi = np.hstack([h, np.ones((len(h), 1))])
    p = sigmoid(phi @ np.append(w, b))
    hess = sum(pi * (1 - pi) * np.outer(f, f) for pi, f in zip(p, phi)) + 2.0 * np.eye(4)  # by hand, row by row
    np.testing.assert_allclose(fit.chol @ fit.chol.T, np.linalg.inv(hess), rtol=1e-8, atol=1e-12)
    est = Laplace(HiddenPRMDouble({}, w, b), fit)
    draws = est.draws(0, 20000)
    np.testing.assert_allclose(
        draws.mean(0), np.append(w, b), atol=4 * math.sqrt(np.linalg.inv(hess).max() / 20000) + 1e-3
    )
    # the draws' covariance is Λ⁻¹ up to Monte Carlo error, ~ max variance · sqrt(2/n) (the draw stream is fixed)
    cov = np.linalg.inv(hess)
    np.testing.assert_allclose(np.cov(draws, rowvar=False), cov, rtol=0, atol=4 * cov.max() * math.sqrt(2 / 20000))


def test_laplace_samples_are_the_same_draws_however_they_are_read():
    h, w, b = _posterior_case()
    fit = fit_head(h, w, b)
    hidden = {t: np.array([unit(t.question, i) * 3 - 1.5 for i in range(3)]) for t in TRACES}
    est = Laplace(HiddenPRMDouble(hidden, w, b), fit)
    whole = est.more(TRACES, [[], [], []], 5)
    first = est.more(TRACES, [[], [], []], 3)
    later = est.more(TRACES, [list(e.samples) for e in first], 2)
    for a, c in zip(whole, later):
        assert a.samples == c.samples and c.new == 2 and c.k == 5
    phi0 = np.append(hidden[TRACES[0]], 1.0)
    assert whole[0].samples[4] == pytest.approx(float(sigmoid(est.draws(4, 1) @ phi0)[0]))


def test_mahalanobis_is_the_stated_map_of_a_known_distance():
    h, w, b = _posterior_case(n=2000)
    fit = fit_head(h, w, b)
    cov = np.cov(h, rowvar=False)
    cov += 1e-3 * np.mean(np.diag(cov)) * np.eye(3)
    point = fit.mu + np.array([2.0, 0.0, 0.0])
    d2 = float((point - fit.mu) @ np.linalg.inv(cov) @ (point - fit.mu))
    hidden = {TRACES[0]: fit.mu.copy(), TRACES[1]: point}
    est = Mahalanobis(HiddenPRMDouble(hidden, w, b), fit)
    at_mean, far = est.more(TRACES[:2], [[], []], 7)
    assert at_mean.k == 1 and at_mean.var == pytest.approx(0.0, abs=1e-20)
    p = float(sigmoid(point @ w + b))
    assert far.samples == (pytest.approx(p),) and far.logit_var == pytest.approx(d2 / 3)
    assert far.var == pytest.approx((p * (1 - p)) ** 2 * d2 / 3)
    assert distance_estimate(0.5, 4.0).var == pytest.approx(0.0625 * 4.0)
    assert est.more(TRACES[1:2], [list(far.samples)], 3)[0].new == 0  # re-evaluation has nothing to add


def test_the_spending_rule_prices_a_child_with_the_estimator():
    cfg = SearchConfig(budget=8, cost_ratio=18.0, k0=7)
    assert config_spending(cfg).per_child == 25.0
    maha = config_spending(SearchConfig(budget=8, cost_ratio=18.0, k0=7, estimator="mahalanobis"))
    assert maha.per_child == 19.0 and maha.reeval_share == 0.0  # one pass a child, nothing to re-evaluate
    assert config_spending(SearchConfig(estimator="ensemble")).per_child == config_spending(SearchConfig()).per_child


def _search(estimator_prm, **cfg):
    config = SearchConfig(method="h-uats", budget=6, cost_ratio=3.0, max_iterations=6, **cfg)
    policy = ScriptedPolicyDouble(depth=4)
    return run_search(Problem("p", "What is 7?", "7"), config, policy, estimator_prm)


def test_a_search_charges_every_sample_read_at_its_price():
    prm = HashedPRMDouble(seed=3)
    res = _search(prm, k0=3)
    nodes = [n for n in res.tree.nodes.values() if n.id]
    assert res.cost == pytest.approx(len(nodes) * 3.0 + sum(n.k for n in nodes))  # c per step + 1 per pass
    members = [FixedPRMDouble(v) for v in (0.1, 0.5, 0.6, 0.8)]
    prm._uats_estimators = {"ensemble": Ensemble(members)}  # the ensemble make_estimator keeps on the PRM
    res = _search(prm, k0=3, estimator="ensemble")
    nodes = [n for n in res.tree.nodes.values() if n.id]
    assert all(1 <= n.k <= 4 for n in nodes if n.mc_scores)
    assert res.cost == pytest.approx(len(nodes) * 3.0 + sum(n.k for n in nodes))
    assert {tuple(n.mc_scores[:3]) for n in nodes if n.mc_scores} == {(0.1, 0.5, 0.6)}
    with pytest.raises(ConfigError) as err:
        make_estimator(SearchConfig(estimator="ensemble", k0=5), prm)
    assert err.value.field == "k0"


def test_mc_dropout_is_the_prms_passes_unchanged():
    prm = HashedPRMDouble(seed=5)
    twin = HashedPRMDouble(seed=5)
    got = MCDropout(prm).more(TRACES, [[], [], []], 4)
    want = twin.mc_scores(TRACES, 4)
    for e, row in zip(got, want):
        assert e.samples == tuple(row) and e.var == pytest.approx(np.var(row, ddof=1))


def test_step_measures_by_fifths_of_the_score():
    score = np.linspace(0.01, 0.99, 100)
    assert np.bincount(fifth_of(score)).tolist() == [20] * 5
    wrong = np.arange(100) % 2 == 0
    row = pair_row("x", "B:prm", np.where(wrong, 1.0, 0.0), score, wrong)
    assert row.auroc_wrong == 1.0 and row.auroc_fifths == (1.0,) * 5 and row.wrong_fifths == (10,) * 5
    same = pair_row("x", "B:prm", 1.0 - score, score, score < 0.3)  # σ² that only restates a low score
    assert same.auroc_wrong == 1.0 and same.auroc_fifths[2:] == (pytest.approx(float("nan"), nan_ok=True),) * 3
    assert ood_auroc([0.0, 0.1], [0.2, 0.3]) == 1.0


LEDGER = ROOT / "results" / "arith-rerun" / "results.csv.gz"


@pytest.mark.skipif(not LEDGER.is_file(), reason="the rerun ledger is not in this checkout")
def test_mc_dropout_reproduces_a_rerun_ledger_cell_exactly():
    from uats_core.eval.grid import WorkItem, check_cells
    from uats_core.runner import prepare_search
    from uats_core.worlds.arith import world

    key = "B:prm|arith-test|arith-test-0|h-uats|16|1|base"
    row = pd.read_csv(LEDGER).set_index("cell_key").loc[key]
    pair, dataset, pid, method, budget, seed, _ = key.split("|")
    cell = Cell(pair, row.policy, row.prm, dataset, pid, method, int(budget), int(seed))
    item = check_cells([WorkItem(cell, world.get_problem(pid))])[0]
    res = prepare_search(item.checked).run()
    assert (res.answer, res.cost, res.iterations, len(res.tree.nodes) - 1) == (
        str(row.answer),
        float(row.cost),
        int(row.iterations),
        int(row.n_nodes),
    )


def test_tau_auto_reads_the_estimators_own_calibration(tmp_path):
    from uats_core.calibration import entry_key, resolve_tau, spread_entry, write_calibration

    assert entry_key("full", 0.1, "prob") == "full|p=0.1|prob"  # MC dropout's entries keep their keys
    path = tmp_path / "uats_calibration.json"
    write_calibration(
        path,
        prm="x",
        spreads={
            entry_key("full", 0.1, "prob"): spread_entry([0.1] * 10, 7, "t"),
            entry_key("", 0, "prob", "laplace"): spread_entry([0.002] * 10, 7, "t"),
        },
    )
    cfg, note = resolve_tau(SearchConfig(tau="auto", estimator="laplace"), None, path)
    assert cfg.tau == pytest.approx(0.002) and note["key"] == "laplace|prob"
    assert resolve_tau(SearchConfig(tau="auto"), None, path)[0].tau == pytest.approx(0.1)
    with pytest.raises(ConfigError) as err:
        resolve_tau(SearchConfig(tau="auto", estimator="mahalanobis"), None, path)
    assert err.value.field == "tau" and "uats estimators calibrate" in str(err.value)


def test_the_results_pages_section_is_generated_from_the_measured_rows(tmp_path):
    import json

    from reports.estimators_section import estimators_section

    assert estimators_section(tmp_path) == []  # nothing measured: no section
    rows = [
        pair_row(
            name, pair, np.linspace(0, 1, 50) * (i + 1), np.linspace(0.01, 0.99, 50), np.arange(50) % 3 == 0
        ).to_dict()
        for i, name in enumerate(("mc-dropout", "laplace"))
        for pair in ("A:prm", "B:prm")
    ]
    (tmp_path / "arith.json").write_text(
        json.dumps(
            {"problems": 7, "samples": 2, "k": 5, "rows": rows, "separation": {"mc-dropout": 0.61}, "verdict": "V."}
        )
    )
    text = "\n".join(estimators_section(tmp_path))
    assert "| laplace | scores | B:prm | 50 (17) |" in text and "| 0.610 |" in text and "**Verdict**: V." in text
    assert "7 test problems" in text and "K = 5" in text
