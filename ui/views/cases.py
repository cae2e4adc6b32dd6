"""Qualitative case mining (the paper's appendix): the four quadrants of PRM score × MC-dropout variance,
with whether each step is actually right.

- high score / low variance: the PRM is sure the step is good;
- high score / high variance: rated good, but the dropout passes disagree (the OOD steps UATS re-checks);
- low score / high variance: rated bad, uncertainly;
- low score / low variance: the PRM is sure the step is bad.
A step's truth: exact in the arithmetic world (uats_core.worlds.arith.solutions.step_correct); for datasets,
whether any final answer below it (itself included) is correct, None when nothing below it finished.
"""

from __future__ import annotations

import functools
import json
import logging
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from uats_core.config import PAPER_TAU
from uats_core.estimation import OODGate, over_tau
from uats_core.status import RunStatus

from .treedata import TERMINAL, RunData, TreeState

log = logging.getLogger(__name__)

QUADRANTS = (
    "high score / low variance",
    "high score / high variance",
    "low score / high variance",
    "low score / low variance",
)
DEFAULT_TAU = PAPER_TAU


@dataclass
class Case:
    quadrant: str
    run_id: str
    node_id: int
    method: str
    problem_id: str
    depth: int
    mean: float
    var: float
    k: int
    tau: float
    step: str
    step_correct: bool | None
    truth_source: str  # "exact" (arithmetic checker) | "answers below" | "unknown"
    strength: float  # how far into its quadrant the node sits; cases are ranked by it

    @property
    def surprising(self) -> bool:
        """A confident PRM that is wrong, or a low score on a right step: the cases worth reading first."""
        if self.step_correct is None:
            return False
        return self.quadrant.startswith("high") != self.step_correct

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["surprising"] = self.surprising
        return d


def quadrant_of(mean: float, var: float, tau: float, score_split: float = 0.5) -> str:
    """`var` is the run's gated statistic (σ² by default; see estimation.OODGate)."""
    high = mean >= score_split
    noisy = over_tau(var, tau)
    return QUADRANTS[(0 if not noisy else 1) if high else (2 if noisy else 3)]


@functools.lru_cache(maxsize=512)
def _arith_problem(problem_id: str) -> Any:
    if not problem_id.startswith("arith-"):
        return None
    try:
        from uats_core.worlds.arith import world
    except ImportError:
        return None
    try:
        return world.get_problem(problem_id)
    except (ValueError, IndexError):
        return None


class StepJudge:
    """Step truth for one run's tree."""

    def __init__(self, state: TreeState) -> None:
        self.state = state
        problem = _arith_problem(str(state.run.get("problem_id") or ""))
        # a stored question that differs from the regenerated one means another generator: do not trust it
        self.problem = problem if problem is not None and problem.question == state.run.get("question") else None
        self._below: dict[int, bool | None] = {}

    @property
    def source(self) -> str:
        return "exact" if self.problem is not None else "answers below"

    def __call__(self, node_id: int) -> bool | None:
        if node_id == 0:
            return None
        if self.problem is not None:
            from uats_core.worlds.arith import solutions

            steps = self.state.trace_text(node_id)
            return bool(solutions.step_correct(self.problem, steps[:-1], steps[-1]))
        return self._answer_below(node_id)

    def _answer_below(self, node_id: int) -> bool | None:
        if node_id in self._below:
            return self._below[node_id]
        # iterative post-order: trees can be deep enough to hit the recursion limit
        order, stack = [], [node_id]
        while stack:
            n = stack.pop()
            if n in self._below:
                continue
            order.append(n)
            stack.extend(self.state.children.get(n, ()))
        for n in reversed(order):
            node = self.state.nodes[n]
            verdict: bool | None = None
            if node.get("status") in TERMINAL and node.get("correct") is not None:
                verdict = bool(node["correct"])
            for c in self.state.children.get(n, ()):
                below = self._below.get(c)
                if below is True:
                    verdict = True
                elif below is False and verdict is None:
                    verdict = False
            self._below[n] = verdict
        return self._below[node_id]


def _strength(mean: float, var: float, tau: float, score_split: float) -> float:
    score_part = abs(mean - score_split) / max(score_split, 1 - score_split)
    var_part = min(1.0, abs(math.log10(max(var, 1e-12) / tau)) / 2)
    return round(score_part + var_part, 6)


def mine_run(data: RunData, score_split: float = 0.5, tau: float | None = None) -> list[Case]:
    """Every scored node of one run (K >= 2 passes, so σ² exists) as a case in its quadrant."""
    state = data.state_at(None)
    run = state.run
    gate = OODGate.from_config(run.get("config") or {"tau": DEFAULT_TAU}, tau=tau)
    tau = gate.tau
    judge = StepJudge(state)
    out: list[Case] = []
    for nid, n in state.nodes.items():
        if nid == 0 or n.get("mean") is None or n.get("var") is None or len(n.get("mc_scores") or []) < 2:
            continue
        mean, var = float(n["mean"]), float(n["var"])
        stat = gate.statistic(n)
        if stat is None:  # gated on logits, but logged before those were stored
            continue
        truth = judge(nid)
        out.append(
            Case(
                quadrant=quadrant_of(mean, stat, tau, score_split),
                run_id=run["run_id"],
                node_id=nid,
                method=run.get("method", ""),
                problem_id=run.get("problem_id", ""),
                depth=int(n.get("depth") or 0),
                mean=mean,
                var=var,
                k=len(n["mc_scores"]),
                tau=tau,
                step=n.get("step", ""),
                step_correct=truth,
                truth_source=judge.source if truth is not None else "unknown",
                strength=_strength(mean, stat, tau, score_split),
            )
        )
    return out


@dataclass
class Mined:
    """Cases by quadrant after filtering, merging duplicates and ranking; what was merged or left empty."""

    pools: dict[str, list[Case]]
    scored: int  # scored nodes seen, before the filter
    kept: int  # cases that passed the filter (duplicates counted once)
    merged: int  # cases dropped as copies of one in an identical rerun

    @property
    def empty(self) -> list[str]:
        return [q for q in QUADRANTS if not self.pools.get(q)]


def _run_signature(run: dict[str, Any]) -> str:
    # same problem, method, seed, config and models: the search is deterministic, so the same tree
    return json.dumps(
        [run.get(k) for k in ("problem_id", "method", "seed", "config", "policy", "prm")], sort_keys=True, default=str
    )


def mine(
    store: Any,
    run_ids: Iterable[str] | None = None,
    per_quadrant: int = 10,
    score_split: float = 0.5,
    surprising_first: bool = True,
    runs_limit: int = 50,
    keep: Callable[[Case], bool] | None = None,
) -> Mined:
    """The top cases of each quadrant over stored runs (all but queued ones by default, newest `runs_limit`).
    `keep` filters before ranking (a starred low-ranked node still shows); a node of an identical rerun is
    shown once. Ranked by strength, surprising ones (PRM vs truth disagree) first if asked."""
    if run_ids is None:
        run_ids = [r["run_id"] for r in store.list_runs(limit=runs_limit) if r["status"] != RunStatus.QUEUED]
    pools: dict[str, list[Case]] = {q: [] for q in QUADRANTS}
    seen: set[tuple[Any, ...]] = set()
    scored = kept = merged = 0
    for rid in run_ids:
        data = RunData.load(store, rid)
        sig = _run_signature(data.run)
        for case in mine_run(data, score_split=score_split):
            scored += 1
            if keep is not None and not keep(case):
                continue
            key = (sig, case.node_id, case.step, case.mean, case.var, case.k)
            if key in seen:
                merged += 1
                continue
            seen.add(key)
            kept += 1
            pools[case.quadrant].append(case)
    for q, cases in pools.items():
        cases.sort(key=lambda c: ((not c.surprising) if surprising_first else False, -c.strength, c.run_id, c.node_id))
        pools[q] = cases[:per_quadrant]
    return Mined(pools=pools, scored=scored, kept=kept, merged=merged)


def mine_cases(
    store: Any,
    run_ids: Iterable[str] | None = None,
    per_quadrant: int = 10,
    score_split: float = 0.5,
    surprising_first: bool = True,
    runs_limit: int = 50,
) -> dict[str, list[Case]]:
    """mine()'s pools alone."""
    return mine(store, run_ids, per_quadrant, score_split, surprising_first, runs_limit).pools


def cases_table(pools: dict[str, Sequence[Case]]) -> list[list[Any]]:
    """Rows for a table widget: quadrant, run, node, R̄, σ², K, step right?, step text."""
    rows = []
    for q in QUADRANTS:
        for c in pools.get(q, ()):
            right = {True: "right", False: "WRONG", None: "?"}[c.step_correct]
            rows.append(
                [
                    q,
                    c.run_id[:8],
                    c.node_id,
                    round(c.mean, 3),
                    round(c.var, 5),
                    c.k,
                    right,
                    " ".join(c.step.split())[:120],
                ]
            )
    return rows
