"""Allocation rules on hand-computed inputs, and properties they must keep on any input."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from uats_core.allocation import (
    dora_weights,
    largest_remainder,
    rebase_children,
    scaled_step_spend,
    sequential_ceil,
    softmax,
    split_step_spend,
)
from uats_core.estimation import mc_stats, reeval_candidates


def test_largest_remainder_hand_computed():
    assert largest_remainder([1, 1, 1], 10) == [4, 3, 3]  # tie on the remainder goes to the lower index
    assert largest_remainder([0.5, 0.3, 0.2], 7) == [4, 2, 1]  # 3.5, 2.1, 1.4 -> the 0.5 remainder wins
    assert largest_remainder([0.0, 1.0], 3) == [0, 3]
    assert largest_remainder([2.0], 0) == [0]


def test_largest_remainder_rejects_bad_input():
    with pytest.raises(ValueError):
        largest_remainder([0, 0], 3)
    with pytest.raises(ValueError):
        largest_remainder([1, -1], 3)
    with pytest.raises(ValueError):
        largest_remainder([], 1)


def test_sequential_ceil_matches_rebase_reference_walk():
    # best first: ceil(5·0.6/1.0)=3, then ceil(2·0.3/0.4)=ceil(1.5)=2, nothing left for the last
    assert sequential_ceil([0.9, 0.5, 0.1], [0.6, 0.3, 0.1], 5) == [3, 2, 0]
    # the walk follows score order, not list order
    assert sequential_ceil([0.1, 0.9], [0.25, 0.75], 4) == [1, 3]


def test_rebase_children_temperature_02():
    # w ∝ exp(R/0.2): softmax([4, 3]) = [0.731, 0.269]; ceil(4·0.731) = 3, the rest 1
    assert rebase_children([0.8, 0.6], 4, 0.2) == [3, 1]
    np.testing.assert_allclose(softmax([0.8, 0.6], 0.2), [math.e / (math.e + 1), 1 / (math.e + 1)])


def test_split_step_spend_hand_computed():
    # N=16, c=18, K0=7: cap 304; C = floor(0.9·304/25) = 10; B = 304 − 10·25 = 54
    assert split_step_spend(16, 18, 7, 0.1) == (10, 54)
    # N=4: cap 76; C = floor(68.4/25) = 2; B = 76 − 50 = 26
    assert split_step_spend(4, 18, 7, 0.1) == (2, 26)
    # N=1, c=18, K0=7: one child costs 25 > 19: nothing fits
    assert split_step_spend(1, 18, 7, 0.1)[0] == 0


def test_scaled_step_spend_follows_width_and_knobs():
    cap = 16 * 19
    assert scaled_step_spend(10, 54, 10, 18, 7, cap) == (10, 54)
    assert scaled_step_spend(10, 54, 5, 18, 7, cap) == (5, 27)  # half the width left: half the re-evaluation
    # γ=2 asks for 20 children: capped at floor(304/25)=12, and B shrinks to what is left (4)
    assert scaled_step_spend(10, 54, 10, 18, 7, cap, beta=1.0, gamma=2.0) == (12, 4)


def test_mc_stats_hand_computed():
    s = mc_stats([0.8, 0.9, 1.0], t=2, alpha=0.3)
    assert s.mean == pytest.approx(0.9)
    assert s.var == pytest.approx(0.01)  # ddof=1: (0.01+0+0.01)/2
    assert s.k == 3
    assert s.ucb == pytest.approx(0.9 + 0.3 * math.sqrt(2 * math.log(2) / 3))
    assert mc_stats([0.5, 0.7], t=1, alpha=0.3).ucb == pytest.approx(0.6)  # ln 1 = 0
    with pytest.raises(ValueError):
        mc_stats([0.5], t=1, alpha=0.3)


def test_reeval_candidates_paper_example():
    # the paper's picture: a wrong step at 0.85 with σ²=0.032 beside a right one at 0.76 with σ²=0.001
    means, var = [0.85, 0.76, 0.50], [0.032, 0.001, 0.010]
    ucbs = [m + 0.05 for m in means]
    ood, chosen, ref = reeval_candidates(means, var, ucbs, tau=0.003, delta=0.04)
    assert ood == [True, False, True]
    assert ref == pytest.approx(0.76)
    assert chosen == [0]  # 0.55 < 0.76 − 0.04: the low OOD node is not worth passes
    # no ID candidate: compare with the best R̄ of all
    ood, chosen, ref = reeval_candidates([0.6, 0.4], [0.01, 0.02], [0.62, 0.55], tau=0.003, delta=0.04)
    assert ref == pytest.approx(0.6) and chosen == [0]


def test_dora_uniqueness_halves_duplicates():
    emb = np.array([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0]])
    w, gamma = dora_weights([0.5, 0.5, 0.5], emb, 0.2, 0.01)
    np.testing.assert_allclose(gamma, [0.5, 0.5, 1.0], atol=1e-6)
    np.testing.assert_allclose(w, [0.25, 0.25, 0.5], atol=1e-6)


weights_st = st.lists(st.floats(min_value=0.0, max_value=10.0, allow_nan=False), min_size=1, max_size=30).filter(
    lambda w: sum(w) > 1e-6
)


@given(weights_st, st.integers(min_value=0, max_value=500))
@settings(max_examples=300, deadline=None)
def test_largest_remainder_conserves_and_is_fair(weights, total):
    counts = largest_remainder(weights, total)
    assert sum(counts) == total
    exact = [total * w / sum(weights) for w in weights]
    for c, e, w in zip(counts, exact, weights):
        assert math.floor(e) <= c <= math.floor(e) + 1
        if w == 0:
            assert c == 0  # a pruned (zero-weight) candidate never gets anything


@given(
    st.lists(st.floats(min_value=0.0, max_value=1.0), min_size=1, max_size=30),
    st.integers(0, 300),
    st.floats(min_value=0.05, max_value=2.0),
)
@settings(max_examples=300, deadline=None)
def test_rebase_children_conserve_width(scores, width, temperature):
    counts = rebase_children(scores, width, temperature)
    assert sum(counts) == width and min(counts) >= 0


@given(
    st.integers(1, 256),
    st.floats(0.0, 40.0),
    st.integers(2, 32),
    st.floats(0.0, 0.9),
    st.floats(0.0, 3.0),
    st.floats(0.0, 3.0),
    st.data(),
)
@settings(max_examples=300, deadline=None)
def test_uats_step_never_exceeds_rebase_spend(n, c, k0, share, beta, gamma, data):
    cap = n * (c + 1)
    width, reeval = split_step_spend(n, c, k0, share)
    assert width * (c + k0) + reeval <= cap + 1e-9
    if width == 0:
        return
    left = data.draw(st.integers(1, width))
    w, b = scaled_step_spend(width, reeval, left, c, k0, cap, beta, gamma)
    assert w * (c + k0) + b <= cap + 1e-9
    assert w >= 0 and b >= 0
