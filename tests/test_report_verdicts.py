"""The verdict rule (reports.verdicts) and the comparisons the results page words by it
(reports.compare), against hand counts."""

from __future__ import annotations

import pandas as pd
import pytest

from reports import t_interval
from reports.compare import growth_table, method_means, order_table, paired_mean_over_n
from reports.verdicts import (
    DOWN,
    NOISE,
    NOT_REPRODUCED,
    POINT_ONLY,
    REPRODUCED,
    REVERSED,
    UP,
    claim,
    lead,
    order,
    side,
    trend,
)


def test_a_difference_clears_zero_on_its_printed_interval() -> None:
    assert side(0.025, 0.024) == UP  # +2.5 ± 2.4
    assert side(-0.040, 0.039) == DOWN  # -4.0 ± 3.9
    assert side(0.0244, 0.0236) == NOISE  # printed +2.4 ± 2.4: the reader sees zero reached, so does the rule
    assert side(0.03, float("nan")) == NOISE  # no interval: nothing clears


def test_a_claim_is_reproduced_only_when_every_difference_clears_zero() -> None:
    assert claim([(0.05, 0.01), (0.03, 0.02)]) == REPRODUCED
    assert claim([(0.05, 0.01), (0.016, 0.030)]) == POINT_ONLY  # beam search's +1.6 ± 3.0 under the best score
    assert claim([(0.05, 0.01), (-0.018, 0.023)]) == NOT_REPRODUCED
    assert claim([(0.05, 0.01), (-0.036, 0.031)]) == REVERSED
    assert claim([(0.05, 0.01), (float("nan"), float("nan"))]) == REPRODUCED  # a method that did not run names nothing
    assert trend(0.13, 0.041) == "grows with N" and trend(-0.173, 0.052) == "falls with N"
    assert trend(0.045, 0.049) == "flat within noise"
    assert lead([(0.122, 0.048), (0.036, 0.031)]) == "leads"
    assert lead([(0.016, 0.029), (0.15, 0.03)]) == "first on point estimates"
    assert order({"rebase": 0.694, "h-uats": 0.711, "best-of-n": 0.726, "a-uats": 0.7234}) == [
        "best-of-n",
        "a-uats",
        "h-uats",
        "rebase",
    ]


def _rows() -> pd.DataFrame:
    """2 problems × 3 seeds × N 4, 16: x right everywhere at N = 16 and on seed 0 at N = 4, y right on p0 only."""
    rows = []
    for problem in ("p0", "p1"):
        for seed in range(3):
            for budget in (4, 16):
                rows.append(
                    {
                        "dataset": "d",
                        "pair": "P:Q",
                        "variant": "base",
                        "problem_id": problem,
                        "seed": seed,
                        "budget": budget,
                        "method": "x",
                        "correct": budget == 16 or seed == 0,
                    }
                )
                rows.append(
                    {
                        "dataset": "d",
                        "pair": "P:Q",
                        "variant": "base",
                        "problem_id": problem,
                        "seed": seed,
                        "budget": budget,
                        "method": "y",
                        "correct": problem == "p0",
                    }
                )
    return pd.DataFrame(rows)


def test_methods_paired_on_the_mean_over_n_by_hand() -> None:
    df = _rows()
    s = paired_mean_over_n(df, "x", "y")
    # per (problem, seed), mean over N of x − y: p0: seed 0 (0 + 0)/2, seeds 1, 2 (−1 + 0)/2; p1: seed 0 (1 + 1)/2,
    # seeds 1, 2 (0 + 1)/2
    per_cell = {("p0", 0): 0.0, ("p0", 1): -0.5, ("p0", 2): -0.5, ("p1", 0): 1.0, ("p1", 1): 0.5, ("p1", 2): 0.5}
    assert s["diff"] == pytest.approx(sum(per_cell.values()) / 6)
    assert s["half_seeds"] == pytest.approx(t_interval([0.5, 0.0, 0.0])[1])
    assert s["half_problems"] == pytest.approx(t_interval([-1 / 3, 2 / 3])[1])
    assert method_means(df) == pytest.approx({"x": 2 / 3, "y": 0.5})  # x per seed: 1, 0.5, 0.5
    assert paired_mean_over_n(df, "x", "absent") is None


def test_growth_and_order_by_hand() -> None:
    df = _rows()
    g = growth_table(df).set_index("method")
    assert g.loc["x", "lo"] == 4 and g.loc["x", "hi"] == 16
    assert g.loc["x", "acc_lo"] == pytest.approx(2 / 6) and g.loc["x", "acc_hi"] == 1.0
    assert g.loc["x", "diff"] == pytest.approx(4 / 6) and g.loc["y", "diff"] == 0.0
    assert g.loc["y", "half_problems"] == 0.0
    other = df.assign(dataset="e", correct=lambda t: (t["method"] == "y") & (t["budget"] == 16))
    places = order_table(pd.concat([df, other]), ["d", "e"]).set_index("method")
    assert places.loc["x", "d_place"] == 1 and places.loc["y", "d_place"] == 2
    assert places.loc["y", "e_place"] == 1 and places.loc["x", "e_place"] == 2  # the order changes
