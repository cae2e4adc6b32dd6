"""Test doubles for the allocation and engine-logic unit tests (never used outside tests).

The end-to-end tests use real models; these exist so the search maths can be checked on inputs
whose every number is known."""

from __future__ import annotations

import hashlib
from typing import Sequence

import numpy as np

from uats_core.protocols import FinishReason, StepOutput, Trace


def unit(*parts: object) -> float:
    h = hashlib.sha256("|".join(map(str, parts)).encode()).digest()
    return int.from_bytes(h[:8], "big") / 2**64


class ScriptedPolicyDouble:
    """Writes `depth` steps then a boxed answer; the answer depends on the trace so answers vary."""

    name = "scripted-policy-double"

    def __init__(self, depth: int = 3, answers: Sequence[str] = ("7", "8", "9")) -> None:
        self.depth = depth
        self.answers = list(answers)
        self.calls = 0

    def generate_steps(self, traces: Sequence[Trace]) -> list[StepOutput]:
        self.calls += 1
        outs = []
        for i, tr in enumerate(traces):
            d = len(tr.steps)
            if d + 1 >= self.depth:
                a = self.answers[int(unit(tr.text, i, self.calls) * len(self.answers))]
                outs.append(StepOutput(f"so the answer is \\boxed{{{a}}}", 6, FinishReason.EOS))
            else:
                outs.append(StepOutput(f"step {d} variant {int(unit(tr.text, i, self.calls) * 1000)}\n\n", 4,
                                       FinishReason.DELIMITER))
        return outs


class HashedPRMDouble:
    """Scores from a hash of the trace; MC passes add noise whose size also depends on the trace."""

    name = "hashed-prm-double"

    def __init__(self, seed: int = 0) -> None:
        self.rng = np.random.default_rng(seed)

    def score(self, traces: Sequence[Trace]) -> list[list[float]]:
        return [[unit(t.question, *t.steps[: i + 1]) for i in range(len(t.steps))] for t in traces]

    def mc_scores(self, traces: Sequence[Trace], k: int) -> np.ndarray:
        base = np.array([s[-1] for s in self.score(traces)])
        spread = np.array([0.2 * unit("spread", t.text) for t in traces])
        return np.clip(base[:, None] + spread[:, None] * self.rng.standard_normal((len(traces), k)), 0, 1)


class GlobalRNGPRMDouble(HashedPRMDouble):
    """Like HashedPRMDouble, but its MC noise comes from numpy's global generator, as dropout masks come from
    torch's: only the run's own seeding makes two runs repeat."""

    def mc_scores(self, traces: Sequence[Trace], k: int) -> np.ndarray:
        base = np.array([s[-1] for s in self.score(traces)])
        spread = np.array([0.2 * unit("spread", t.text) for t in traces])
        return np.clip(base[:, None] + spread[:, None] * np.random.standard_normal((len(traces), k)), 0, 1)
