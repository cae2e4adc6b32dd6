"""Written solutions of known truth as step prefixes: the traces the uncertainty benchmarks and the τ
calibration score. Style A is the PRM's own (in distribution), style B the unseen one (out of distribution)."""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from uats_core.protocols import Trace

from . import solutions, world


@dataclass
class WrittenSteps:
    """Every step prefix of a set of written solutions, with the exact checker's verdict on its last step."""

    style: str
    traces: list[Trace] = field(default_factory=list)
    wrong: list[bool] = field(default_factory=list)


def written_steps(
    problems: list[world.Problem], style: str, slip_rate: float = 0.3, rng: random.Random | None = None
) -> WrittenSteps:
    """solutions.solve's written solutions (each computation slips with probability slip_rate), cut after every step."""
    rng = rng or random.Random(0)
    out = WrittenSteps(style)
    for prob in problems:
        steps, _ = solutions.solve(prob, style=style, slip_rate=slip_rate, rng=rng)
        written = [s + "\n\n" for s in steps[:-1]] + [steps[-1]]
        for i in range(len(written)):
            out.traces.append(Trace(prob.question, tuple(written[: i + 1])))
            out.wrong.append(not solutions.step_correct(prob, written[:i], written[i]))
    return out
