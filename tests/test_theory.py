"""The Proposition 4.1/4.2 simulation: greedy grows linearly in T, UCB sublinearly."""

from __future__ import annotations

import numpy as np
import pytest

from uats.theory import TheoryConfig, fit, loglog_slope, run


def test_greedy_linear_ucb_sublinear() -> None:
    cfg = TheoryConfig(horizon=1500, reps=40, eps=(0.1, 0.2), seed=3)
    fits = [fit(c) for c in run(cfg, progress=False)]
    for f in fits:
        assert f.greedy_slope > 0.95  # linear: loss per step does not shrink
        assert f.ucb_slope < 0.6  # sublinear
        assert f.ucb_final < f.greedy_final / 5
    assert fits[1].greedy_per_step > fits[0].greedy_per_step  # more OOD, more loss per step


def test_without_ood_greedy_barely_loses() -> None:
    cfg = TheoryConfig(horizon=500, reps=40, eps=(0.0,), seed=1)
    (c,) = run(cfg, progress=False)
    assert c.greedy[-1] / 500 < 1e-3  # ID noise (σ=0.03) almost never beats a gap of 0.1


def test_loglog_slope_recovers_known_exponents() -> None:
    t = np.arange(1, 5001, dtype=float)
    assert loglog_slope(t, 3.0 * t) == pytest.approx(1.0, abs=1e-6)
    assert loglog_slope(t, np.sqrt(t)) == pytest.approx(0.5, abs=1e-6)
