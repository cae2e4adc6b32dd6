"""Allocation rules (children, re-evaluation passes): every rule here conserves its total and gives nothing to a
node it prunes.

Kept free of trees and models so the maths can be unit- and property-tested on its own."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from numpy.typing import ArrayLike


def softmax(values: Sequence[float], temperature: float) -> np.ndarray:
    x = np.asarray(values, dtype=np.float64) / temperature
    x = x - x.max()  # stable: exp of non-positive numbers
    w = np.exp(x)
    return w / w.sum()


def largest_remainder(weights: ArrayLike, total: int) -> list[int]:
    """Round(total · w / Σw) to integers that sum exactly to `total` (Hamilton's method).

    Each share gets its floor; the units left go to the largest fractional parts, ties to the lower
    index so the result is deterministic. This is the Round of H-UATS and A-UATS."""
    if total < 0:
        raise ValueError(f"total must be >= 0, got {total}")
    w = np.asarray(weights, dtype=np.float64)
    if w.size == 0:
        if total:
            raise ValueError("cannot allocate a positive total over no weights")
        return []
    if (w < 0).any() or not np.isfinite(w).all() or w.sum() <= 0:
        raise ValueError(f"weights must be finite, non-negative and not all zero: {w.tolist()}")
    exact = total * w / w.sum()
    counts = np.floor(exact).astype(np.int64)
    left = total - int(counts.sum())
    if left:
        frac = exact - counts
        order = sorted(range(len(w)), key=lambda i: (-frac[i], i))
        for i in order[:left]:
            counts[i] += 1
    return [int(c) for c in counts]


def softmax_shares(values: Sequence[float], total: int, temperature: float) -> list[int]:
    """Round(total · softmax(values / temperature)) by largest remainder: H-UATS's extra passes (R̂, B, ν1) and
    children (the child score, C, ν2). Readers of a run (ui/views/uncertainty.py) use it for what-if allocations."""
    if len(values) == 0:
        return largest_remainder([], total)
    return largest_remainder(softmax(values, temperature), total)


def sequential_ceil(scores: Sequence[float], weights: ArrayLike, total: int) -> list[int]:
    """REBASE's rounding (thu-wyz/inference_scaling): walk the candidates from best score down, give each
    ceil(remaining · w_i / remaining weight) children, capped by what is left. The last candidate visited
    takes whatever remains, so the total is conserved; late candidates may get zero."""
    n = len(scores)
    if n == 0:
        if total:
            raise ValueError("cannot allocate a positive total over no candidates")
        return []
    w = np.asarray(weights, dtype=np.float64)
    order = sorted(range(n), key=lambda i: (-scores[i], i))
    counts = [0] * n
    remaining, remaining_weight = total, float(w.sum())
    for i in order:
        if remaining <= 0:
            break
        share = remaining if remaining_weight <= 0 else math.ceil(remaining * w[i] / remaining_weight - 1e-9)
        counts[i] = min(remaining, max(share, 0))
        remaining -= counts[i]
        remaining_weight -= w[i]
    if remaining:  # float residue: give the rest to the best candidate
        counts[order[0]] += remaining
    return counts


def rebase_children(scores: Sequence[float], width: int, temperature: float) -> list[int]:
    """REBASE: children ∝ exp(score / T), rounded by REBASE's sequential ceil."""
    return sequential_ceil(scores, softmax(scores, temperature), width)


def dora_weights(
    scores: Sequence[float], embeddings: np.ndarray, temperature: float, similarity_temperature: float
) -> tuple[np.ndarray, np.ndarray]:
    """DORA: REBASE's softmax weights times a uniqueness score γ_i, the diagonal of the row softmax of the
    cosine-similarity matrix at Ts (a candidate with near-duplicates shares its mass and gets a small γ).
    Returns (normalised weights, γ)."""
    e = np.asarray(embeddings, dtype=np.float64)
    norms = np.linalg.norm(e, axis=1, keepdims=True)
    e = e / np.where(norms == 0, 1.0, norms)
    sim = e @ e.T
    gamma = np.array([softmax(row, similarity_temperature)[i] for i, row in enumerate(sim)])
    w = softmax(scores, temperature) * gamma
    return w / w.sum(), gamma


def split_step_spend(budget: int, cost_ratio: float, k0: int, reeval_share: float) -> tuple[int, int]:
    """Split REBASE's per-step spend N·(c+1) into an expansion width C and re-evaluation passes B with
    C·(c+K0) + B ≤ N·(c+1).

    Rule: reserve share ρ of the step's spend for re-evaluation, take the widest C that fits in the rest,
    then give B everything that is left (so no compute is thrown away by rounding C down). C is at least 1
    when one child at K0 passes fits at all."""
    cap = budget * (cost_ratio + 1.0)
    per_child = cost_ratio + k0
    width = int(math.floor((cap * (1.0 - reeval_share)) / per_child + 1e-9))
    if width < 1 and per_child <= cap:
        width = 1
    reeval = int(math.floor(cap - width * per_child + 1e-9))
    return width, max(reeval, 0)


def scaled_step_spend(
    base_width: int,
    base_reeval: int,
    width_left: int,
    cost_ratio: float,
    k0: int,
    cap: float,
    beta: float = 1.0,
    gamma: float = 1.0,
) -> tuple[int, int]:
    """The width and re-evaluation passes of one step once `width_left` of the base width C remains
    (finished solutions lower the width by one each, as in REBASE), scaled by A-UATS's β (re-evaluation)
    and γ (expansion). Whatever the knobs, the step never spends more than `cap` = N·(c+1)."""
    per_child = cost_ratio + k0
    width = min(int(round(gamma * width_left)), int(math.floor(cap / per_child + 1e-9)))
    width = max(width, 1 if width_left > 0 and per_child <= cap else 0)
    reeval = int(round(beta * base_reeval * (width_left / base_width if base_width else 0.0)))
    reeval = max(0, min(reeval, int(math.floor(cap - width * per_child + 1e-9))))
    return width, reeval


def child_scores(
    means: Sequence[float],
    ucbs: Sequence[float],
    variances: Sequence[float | None],
    ood: Sequence[bool],
    rule: str = "mean",
    sigma_weight: float = 1.0,
) -> list[float]:
    """The score each candidate's children softmax reads (H-UATS step 4). 'mean': R̄ for all (the paper);
    'ucb-ood': R̂ for OOD candidates; 'sigma-ood': R̄ + sigma_weight·σ for them (σ of the scores). ID candidates
    keep R̄ under every rule, so an option only ever changes how OOD steps compete."""
    if rule == "mean":
        return [float(m) for m in means]
    if rule not in ("ucb-ood", "sigma-ood"):
        raise ValueError(f"unknown child score rule {rule!r}")
    out = []
    for m, u, v, o in zip(means, ucbs, variances, ood):
        if not o:
            out.append(float(m))
        elif rule == "ucb-ood":
            out.append(float(u))
        else:
            out.append(float(m) + sigma_weight * math.sqrt(max(float(v or 0.0), 0.0)))
    return out
