"""MC-dropout statistics, the ID/OOD gate, and H-UATS's selection of candidates worth re-evaluating.

Two scales live side by side. The UCB R̂ and the δ rule use the probability scale the paper defines (R̄ is
a mean score). The ID/OOD gate may instead read the spread of the passes' logits log(p/(1−p)): low scores sit
where the sigmoid squashes every spread, so probability-space σ² hardly separates unfamiliar steps from
familiar ones there, while the logit spread of the same passes does (docs/backends.md has the numbers)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from .config import PAPER_TAU

LOGIT_CLIP = 1e-6  # p is clipped to [1e-6, 1 − 1e-6] before the logit: a saturated pass would be ±inf


@dataclass(frozen=True)
class MCStats:
    mean: float  # R̄
    var: float  # σ², sample variance (ddof=1)
    k: int  # passes so far
    ucb: float  # R̂ = R̄ + α·sqrt(2 ln t / K)
    logit_mean: float  # mean of the passes' logits
    logit_var: float  # sample variance (ddof=1) of the passes' logits


def logits(passes: Sequence[float] | np.ndarray) -> np.ndarray:
    """log(p/(1−p)) of each pass, p clipped to [LOGIT_CLIP, 1 − LOGIT_CLIP]."""
    p = np.clip(np.asarray(passes, dtype=np.float64), LOGIT_CLIP, 1.0 - LOGIT_CLIP)
    return np.log(p) - np.log1p(-p)


def mean_var(passes: Sequence[float] | np.ndarray) -> tuple[float | None, float | None]:
    """R̄ and the sample variance σ² (ddof=1) of the passes: (None, None) for none, σ² None for one."""
    x = np.asarray(passes, dtype=np.float64)
    if x.size == 0:
        return None, None
    return float(x.mean()), (float(x.var(ddof=1)) if x.size > 1 else None)


def mc_stats(passes: Sequence[float], t: int, alpha: float) -> MCStats:
    """Everything a node's K passes give at search step t: R̄, σ², K, R̂, and the logits' mean and σ²."""
    x = np.asarray(passes, dtype=np.float64)
    k = int(x.size)
    if k < 2:
        raise ValueError(f"the sample variance needs at least 2 passes, got {k}")
    mean, var = mean_var(x)
    logit_mean, logit_var = mean_var(logits(x))
    assert mean is not None and var is not None and logit_mean is not None and logit_var is not None  # k >= 2
    return MCStats(mean=mean, var=var, k=k, ucb=ucb(mean, k, t, alpha), logit_mean=logit_mean, logit_var=logit_var)


def ucb(mean: float, k: int, t: int, alpha: float) -> float:
    """R̂ = R̄ + α·sqrt(2 ln t / K) at search step t (t >= 1)."""
    # ln t is 0 at the first step: every candidate starts at its plain mean
    return mean + alpha * math.sqrt(2.0 * math.log(max(t, 1)) / k)


def gate_statistic(
    var: float | None, logit_var: float | None, uncertainty: str = "var", space: str = "prob"
) -> float | None:
    """The number τ is compared with: σ² (or σ) of the passes in the chosen space; None under 2 passes."""
    v = logit_var if space == "logit" else var
    if v is None:
        return None
    v = max(float(v), 0.0)  # float residue can make a variance of identical passes a hair below zero
    return math.sqrt(v) if uncertainty == "std" else v


def over_tau(statistic: float | None, tau: float) -> bool:
    """The ID/OOD rule itself: OOD when the gated statistic exceeds τ; no statistic (under 2 passes) is ID."""
    return statistic is not None and statistic > tau


def is_ood(
    var: float | None, tau: float, uncertainty: str = "var", space: str = "prob", logit_var: float | None = None
) -> bool:
    """The ID/OOD gate from a node's probability- and logit-space variances."""
    return over_tau(gate_statistic(var, logit_var, uncertainty, space), tau)


@dataclass(frozen=True)
class OODGate:
    """τ together with what it thresholds, so every reader of a run applies the search's own rule."""

    tau: float
    uncertainty: str = "var"
    space: str = "prob"
    estimator: str = "mc-dropout"  # where σ² came from (config.estimator): views name it beside every σ²

    @classmethod
    def from_config(cls, config: Mapping[str, Any] | Any, tau: float | None = None) -> OODGate:
        """From a SearchConfig or its stored dict; `tau` overrides (A-UATS's controller sets τ per step).
        Runs logged before these options existed gated on the probability-space variance."""
        get = config.get if isinstance(config, Mapping) else (lambda name, default: getattr(config, name, default))
        t = tau if tau is not None else get("tau", PAPER_TAU)
        try:
            t = float(t)
        except (TypeError, ValueError):  # an unresolved 'auto' in a stored config: the paper's value
            t = PAPER_TAU
        return cls(
            t,
            str(get("uncertainty", "var") or "var"),
            str(get("uncertainty_space", "prob") or "prob"),
            str(get("estimator", "mc-dropout") or "mc-dropout"),
        )

    def statistic(self, node: Mapping[str, Any] | Any) -> float | None:
        """The gated statistic of a Node or a stored node dict."""
        get = node.get if isinstance(node, Mapping) else (lambda name: getattr(node, name, None))
        return gate_statistic(get("var"), get("logit_var"), self.uncertainty, self.space)

    def is_ood(self, node: Mapping[str, Any] | Any) -> bool:
        return over_tau(self.statistic(node), self.tau)

    def shown(self, node: Mapping[str, Any] | Any) -> bool:
        """What a view shows as the node's ID/OOD: the search's own stored verdict (made with the τ of the step
        that decided it, which A-UATS moves), else this gate's test (runs that stored none)."""
        get = node.get if isinstance(node, Mapping) else (lambda name: getattr(node, name, None))
        stored = get("ood")
        return bool(stored) if stored is not None else self.is_ood(node)

    @property
    def label(self) -> str:
        """'σ²', 'σ', 'σ² (logit)', 'σ (logit)': what the threshold applies to, for axis titles and text."""
        return ("σ" if self.uncertainty == "std" else "σ²") + (" (logit)" if self.space == "logit" else "")


def reeval_candidates(
    means: Sequence[float], uncertainties: Sequence[float | None], ucbs: Sequence[float], tau: float, delta: float
) -> tuple[list[bool], list[int], float]:
    """Step 2 of H-UATS. OOD = {u > τ} with u the gated statistic (gate_statistic); S = {h ∈ OOD : R̂(h) ≥
    max_{ID} R̄ − δ}, the reference being the best R̄ of all candidates when ID is empty. R̄ and R̂ stay on the
    probability scale whatever u is. Returns (ood flags, indices of S, the reference R̄)."""
    ood = [over_tau(u, tau) for u in uncertainties]
    id_means = [m for m, o in zip(means, ood) if not o]
    reference = max(id_means) if id_means else max(means)
    chosen = [i for i, (o, u) in enumerate(zip(ood, ucbs)) if o and u >= reference - delta]
    return ood, chosen, reference


def auroc(scores: ArrayLike, positives: ArrayLike) -> float:
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
        ranks[order[i : j + 1]] = (i + j) / 2.0 + 1.0
        i = j + 1
    return float((ranks[y].sum() - n_pos * (n_pos + 1) / 2.0) / (n_pos * n_neg))
