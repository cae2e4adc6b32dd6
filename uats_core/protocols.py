"""The two small protocols every backend implements: a step-proposing Policy and a step-scoring PRM.

The search core only ever talks to these; transformers, vLLM and the arithmetic world's tiny models
all sit behind them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Protocol, runtime_checkable

import numpy as np

STEP_DELIMITER = "\n\n"
# The most characters one step may hold, wherever it enters (every policy backend, every import): far above
# any real step (a 4,096-token step of 8-character tokens is 32,768), and what keeps a server that returns
# megabytes for a "two-token" step from growing the run log and the page (issue 50, item 7).
MAX_STEP_CHARS = 65_536


def bound_step(text: str) -> tuple[str, bool]:
    """The step cut to MAX_STEP_CHARS, and whether it was cut (a cut step ends at the step cap)."""
    if len(text) <= MAX_STEP_CHARS:
        return text, False
    return text[:MAX_STEP_CHARS], True


@dataclass(frozen=True)
class Trace:
    """A partial solution: the question and the steps generated so far (each step as the policy wrote
    it, including its trailing delimiter when it had one)."""

    question: str
    steps: tuple[str, ...] = ()

    def extend(self, step: str) -> Trace:
        return Trace(self.question, self.steps + (step,))

    @property
    def text(self) -> str:
        return "".join(self.steps)


class FinishReason(str, Enum):
    DELIMITER = "delimiter"  # stopped at "\n\n": more steps may follow
    EOS = "eos"  # the model ended the solution
    STEP_CAP = "step_cap"  # per-step token cap hit: the step is cut, the solution may go on
    SOLUTION_CAP = "solution_cap"  # per-solution token cap hit: the solution is truncated

    @property
    def ends_solution(self) -> bool:
        return self in (FinishReason.EOS, FinishReason.SOLUTION_CAP)


@dataclass(frozen=True)
class StepOutput:
    text: str
    num_tokens: int
    finish_reason: FinishReason


@runtime_checkable
class Policy(Protocol):
    """Proposes one next step for each trace, in one batched call."""

    name: str

    def generate_steps(self, traces: Sequence[Trace]) -> list[StepOutput]: ...


@runtime_checkable
class PRM(Protocol):
    """Scores traces step by step; scores lie in [0, 1]."""

    name: str

    def score(self, traces: Sequence[Trace]) -> list[list[float]]:
        """Deterministic (dropout off) score of every step of every trace."""
        ...

    def mc_scores(self, traces: Sequence[Trace], k: int) -> np.ndarray:
        """(len(traces), k) matrix of the last step's score from k passes with dropout active."""
        ...


@runtime_checkable
class Embedder(Protocol):
    """Maps texts to unit-norm vectors (DORA's uniqueness score)."""

    def embed(self, texts: Sequence[str]) -> np.ndarray: ...
