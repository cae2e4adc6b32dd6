"""The one protocol every uncertainty estimator meets, and the statistics of a set of samples.

A search reads a candidate's uncertainty through an `Estimator` only: `more(traces, have, k)` takes the samples a
node holds already (none for a new node) and reads up to k more, returning one `Estimate` a trace (R̄, σ², K, the
samples themselves and the logits' mean and σ²). What one sample is depends on the estimator (a dropout pass, an
ensemble member, a posterior draw of the head); what it costs, in PRM passes, is its class's `sample_cost`, which the
search context charges and the spending rule prices a child with (uats_core/spending.py), so compute matching holds
whichever estimator runs."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from ..estimation import logits, mean_var
from ..protocols import Trace


@dataclass(frozen=True)
class Estimate:
    """A node's uncertainty after a call: every sample it holds, and what the search reads of them."""

    samples: tuple[float, ...]  # all of them, oldest first: the run log's mc_scores
    new: int  # how many this call read (what it is charged for)
    mean: float  # R̄
    var: float | None  # σ² (None under 2 samples for the sampling estimators)
    logit_mean: float | None
    logit_var: float | None

    @property
    def k(self) -> int:
        return len(self.samples)


def from_samples(samples: Sequence[float], new: int) -> Estimate:
    """R̄ and the sample variance (ddof=1) of the samples and of their logits: the statistics of every estimator
    whose samples are draws of the score (MC dropout, the ensemble, the Laplace posterior)."""
    x = np.asarray(samples, dtype=np.float64)
    mean, var = mean_var(x)
    if mean is None:
        raise ValueError("an estimate needs at least one sample")
    logit_mean, logit_var = mean_var(logits(x))
    return Estimate(tuple(float(v) for v in x), new, mean, var, logit_mean, logit_var)


class Estimator(ABC):
    """Reads a candidate's samples and turns them into R̄ and σ². Subclasses set the class attributes."""

    name: ClassVar[str] = ""
    # What one sample costs, in PRM passes (one pass = one forward of the PRM over the trace): charged per sample read.
    sample_cost: ClassVar[float] = 1.0
    # Whether reading more samples can change the estimate (False: H-UATS re-evaluates nothing with it).
    adds_samples: ClassVar[bool] = True
    # What a sample is, for the app's legends and the inspector ("dropout pass", "ensemble member", ...).
    sample_label: ClassVar[str] = "sample"

    @classmethod
    def first_samples(cls, k0: int) -> int:
        """How many samples a new candidate's first estimate reads when the method asks for k0."""
        return k0

    def capacity(self, have: int) -> int | None:
        """How many more samples a node holding `have` can get (None: unbounded)."""
        return None

    @abstractmethod
    def more(self, traces: Sequence[Trace], have: Sequence[Sequence[float]], k: int) -> list[Estimate]:
        """For each trace, up to k samples on top of `have` (its samples so far), all traces in batched calls."""


def cost_of(estimates: Sequence[Estimate], sample_cost: float) -> tuple[int, float]:
    """(samples read, their cost in PRM passes) of one call."""
    read = sum(e.new for e in estimates)
    return read, read * sample_cost
