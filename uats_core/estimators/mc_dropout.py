"""MC dropout (the paper's estimator): each sample is one PRM pass with dropout on, in the PRM's dropout mode (full,
last:L or head); a re-evaluation runs more passes. Exactly the statistics runs had before estimators were a setting
(uats_core.estimation.mc_stats), so existing ledgers' cells reproduce."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..protocols import PRM, Trace
from .base import Estimate, Estimator, from_samples


class MCDropout(Estimator):
    name = "mc-dropout"
    sample_cost = 1.0  # one forward of the PRM with dropout on (the search has always charged this)
    sample_label = "dropout pass"

    def __init__(self, prm: PRM) -> None:
        self.prm = prm

    def more(self, traces: Sequence[Trace], have: Sequence[Sequence[float]], k: int) -> list[Estimate]:
        if not traces or k <= 0:
            return [from_samples(h, 0) for h in have]
        passes = np.asarray(self.prm.mc_scores(list(traces), k), dtype=np.float64)
        if passes.shape != (len(traces), k):
            raise RuntimeError(
                f"PRM {self.prm.name!r} returned MC scores of shape {passes.shape}, expected {(len(traces), k)}"
            )
        return [from_samples([*h, *row], k) for h, row in zip(have, passes)]
