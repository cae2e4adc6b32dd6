"""MC-dropout statistics and H-UATS's selection of candidates worth re-evaluating."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np


@dataclass(frozen=True)
class MCStats:
    mean: float  # R̄
    var: float  # σ², sample variance (ddof=1)
    k: int  # passes so far
    ucb: float  # R̂ = R̄ + α·sqrt(2 ln t / K)


def mc_stats(passes: Sequence[float], t: int, alpha: float) -> MCStats:
    x = np.asarray(passes, dtype=np.float64)
    k = int(x.size)
    if k < 2:
        raise ValueError(f"the sample variance needs at least 2 passes, got {k}")
    mean = float(x.mean())
    var = float(x.var(ddof=1))
    return MCStats(mean=mean, var=var, k=k, ucb=ucb(mean, k, t, alpha))


def ucb(mean: float, k: int, t: int, alpha: float) -> float:
    # ln t is 0 at the first step: every candidate starts at its plain mean
    return mean + alpha * math.sqrt(2.0 * math.log(max(t, 1)) / k)


def reeval_candidates(means: Sequence[float], variances: Sequence[float], ucbs: Sequence[float],
                      tau: float, delta: float) -> tuple[list[bool], list[int], float]:
    """Step 2 of H-UATS. OOD = {σ² > τ}; S = {h ∈ OOD : R̂(h) ≥ max_{ID} R̄ − δ}, the reference being the
    best R̄ of all candidates when ID is empty. Returns (ood flags, indices of S, the reference R̄)."""
    ood = [v > tau for v in variances]
    id_means = [m for m, o in zip(means, ood) if not o]
    reference = max(id_means) if id_means else max(means)
    chosen = [i for i, (o, u) in enumerate(zip(ood, ucbs)) if o and u >= reference - delta]
    return ood, chosen, reference


def auroc(scores: Sequence[float], positives: Sequence[bool]) -> float:
    """P(score of a random positive > score of a random negative), ties counting half (Mann-Whitney U)."""
    s = np.asarray(scores, dtype=np.float64)
    y = np.asarray(positives, dtype=bool)
    n_pos, n_neg = int(y.sum()), int((~y).sum())
    if n_pos == 0 or n_neg == 0:
        return float("nan")
    order = np.argsort(s, kind="mergesort")
    ranks = np.empty(len(s), dtype=np.float64)
    sorted_s = s[order]
    i = 0
    while i < len(s):  # average ranks over ties
        j = i
        while j + 1 < len(s) and sorted_s[j + 1] == sorted_s[i]:
            j += 1
        ranks[order[i:j + 1]] = (i + j) / 2.0 + 1.0
        i = j + 1
    return float((ranks[y].sum() - n_pos * (n_pos + 1) / 2.0) / (n_pos * n_neg))
