"""Test doubles for the evaluation harness, loaded through its own `py:module:function` model specs (MODELS: the
way a user plugs in a custom backend), so every path - CLI, subprocess, Ray actor - loads them like real models.
Unlike testkit/doubles.py they draw their randomness from torch's global RNG, as the real policies and PRMs do, so
a search depends on its seed alone (the property the evaluation's equality tests check)."""

from __future__ import annotations

import time
from collections.abc import Sequence

import numpy as np
import torch

from uats_core.protocols import FinishReason, StepOutput, Trace

from .doubles import unit

MODELS = {
    "pol": "py:testkit.eval_doubles:policy_double",
    "pol2": "py:testkit.eval_doubles:policy_double_b",
    "slow": "py:testkit.eval_doubles:slow_policy_double",
    "ragged": "py:testkit.eval_doubles:ragged_policy_double",
    "rm": "py:testkit.eval_doubles:prm_double",
}


class TorchRngPolicyDouble:
    """Two computation steps then a boxed 7, 8 or 9, each drawn from torch's global RNG (one draw per row)."""

    name = "torch-rng-policy-double"

    def __init__(self, delay_s: float = 0.0) -> None:
        self.delay_s = delay_s

    def generate_steps(self, traces: Sequence[Trace]) -> list[StepOutput]:
        if self.delay_s:
            time.sleep(self.delay_s)
        draws = torch.rand(len(traces)).tolist()
        out = []
        for trace, u in zip(traces, draws):
            depth = len(trace.steps)
            if depth >= 2:
                out.append(StepOutput(f"so the answer is \\boxed{{{'789'[int(u * 3)]}}}", 6, FinishReason.EOS))
            else:
                out.append(StepOutput(f"step {depth} variant {int(u * 1000)}\n\n", 4, FinishReason.DELIMITER))
        return out


class RaggedPolicyDouble(TorchRngPolicyDouble):
    """Ends a solution after one to four steps (a torch draw per row decides), so solutions of one search end at
    different steps, as a real policy's do: beam search and DVTS then end more solutions than they vote on."""

    name = "ragged-policy-double"

    def generate_steps(self, traces: Sequence[Trace]) -> list[StepOutput]:
        draws = torch.rand(len(traces), 2).tolist()
        out = []
        for trace, (u, v) in zip(traces, draws):
            depth = len(trace.steps)
            if depth >= 3 or u < 0.35:
                out.append(StepOutput(f"so the answer is \\boxed{{{'789'[int(v * 3)]}}}", 6, FinishReason.EOS))
            else:
                out.append(StepOutput(f"step {depth} variant {int(v * 1000)}\n\n", 4, FinishReason.DELIMITER))
        return out


class TorchRngPRMDouble:
    """Deterministic scores from a hash of the trace; MC passes add torch-global-RNG noise."""

    name = "torch-rng-prm-double"

    def __init__(self, dropout_p: float = 0.1, dropout_mode: str = "full") -> None:
        self.spread = 0.5 * dropout_p

    def score(self, traces: Sequence[Trace]) -> list[list[float]]:
        return [[unit(t.question, *t.steps[: i + 1]) for i in range(len(t.steps))] for t in traces]

    def mc_scores(self, traces: Sequence[Trace], k: int) -> np.ndarray:
        base = torch.tensor([s[-1] for s in self.score(traces)], dtype=torch.float64)
        noise = torch.randn(len(traces), k, dtype=torch.float64)
        return (base[:, None] + self.spread * noise).clamp(0, 1).numpy()


def policy_double(**_: object) -> TorchRngPolicyDouble:
    return TorchRngPolicyDouble()


def policy_double_b(**_: object) -> TorchRngPolicyDouble:
    """The same double under another name: a second pair, so batched lanes mix models."""
    return TorchRngPolicyDouble()


def slow_policy_double(**_: object) -> TorchRngPolicyDouble:
    return TorchRngPolicyDouble(delay_s=0.15)


def ragged_policy_double(**_: object) -> RaggedPolicyDouble:
    return RaggedPolicyDouble()


def prm_double(dropout_p: float = 0.1, dropout_mode: str = "full", **_: object) -> TorchRngPRMDouble:
    return TorchRngPRMDouble(dropout_p, dropout_mode)
