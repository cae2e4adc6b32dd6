"""What an estimator's σ² says about steps, beyond what R̄ says: the numbers of `uats estimators measure`.

For one pair's steps (σ², the deterministic score R, whether the step is wrong): the AUROC of σ² for "this step is
wrong" over all steps and within each fifth of R (FIFTHS bins by R's quintiles, so a σ² that merely restates a low R
scores 0.5 inside a bin); across the two pairs, the AUROC of σ² for "this step is the OOD pair's". Bins are by the
deterministic score, which every estimator shares, so each estimator is judged on the same steps of each bin."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from ..estimation import auroc

FIFTHS = 5
GOAL_AUROC = 0.70  # the issue's bar: σ² flags B's wrong steps at this AUROC within R̄'s fifths


@dataclass(frozen=True)
class PairRow:
    estimator: str
    pair: str
    steps: int
    wrong: int
    auroc_wrong: float  # σ² for wrong, all steps
    auroc_fifths: tuple[float, ...]  # σ² for wrong within each fifth of R, lowest R first (nan: one class only)
    wrong_fifths: tuple[int, ...]
    auroc_score: float  # 1 − R for wrong: what the score alone says
    median_var: float
    q90_var: float  # on the ID pair: the τ that `--tau auto` (q = 0.9) would set for this estimator
    space: str = "prob"  # σ² of the samples' scores, or of their logits (SearchConfig.uncertainty_space)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def fifth_edges(score: ArrayLike) -> np.ndarray:
    """The inner quintile edges of R (4 numbers)."""
    return np.quantile(np.asarray(score, dtype=np.float64), np.linspace(0, 1, FIFTHS + 1)[1:-1])


def fifth_of(score: ArrayLike) -> np.ndarray:
    """0..4: which fifth of R each step falls in (ties at an edge go to the upper fifth)."""
    return np.searchsorted(fifth_edges(score), np.asarray(score, dtype=np.float64), side="right")


def pair_row(
    estimator: str, pair: str, var: Sequence[float], score: Sequence[float], wrong: Sequence[bool], space: str = "prob"
) -> PairRow:
    v = np.nan_to_num(np.asarray(var, dtype=np.float64), nan=0.0)  # no σ² (one sample) ranks lowest
    s = np.asarray(score, dtype=np.float64)
    y = np.asarray(wrong, dtype=bool)
    bins = fifth_of(s)
    aur = tuple(auroc(v[bins == b], y[bins == b]) for b in range(FIFTHS))
    return PairRow(
        estimator,
        pair,
        int(len(y)),
        int(y.sum()),
        auroc(v, y),
        aur,
        tuple(int(y[bins == b].sum()) for b in range(FIFTHS)),
        auroc(1.0 - s, y),
        float(np.median(v)),
        float(np.quantile(v, 0.9)),
        space,
    )


def ood_auroc(var_id: Sequence[float], var_ood: Sequence[float]) -> float:
    """AUROC of σ² for "this step is the OOD pair's" (ID/OOD separation)."""
    a = np.nan_to_num(np.asarray(var_id, dtype=np.float64), nan=0.0)
    b = np.nan_to_num(np.asarray(var_ood, dtype=np.float64), nan=0.0)
    return auroc(np.concatenate([a, b]), np.concatenate([np.zeros(len(a), bool), np.ones(len(b), bool)]))


def key(estimator: str, space: str) -> str:
    """The separation's key: MC dropout's probability-space σ² under its plain name, as before spaces were measured."""
    return estimator if space == "prob" else f"{estimator}|{space}"


def fmt(x: float) -> str:
    return "–" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.3f}"


def table(
    rows: Sequence[dict[str, Any]], separation: dict[str, float], costs: dict[str, dict[str, float]] | None = None
) -> str:
    """The Markdown table: estimator × pair, AUROC overall and per fifth of R, the ID/OOD AUROC and (when measured)
    the cost of one estimate in PRM passes."""
    head = (
        "| estimator | σ² of | pair | steps (wrong) | AUROC σ² wrong | "
        + " | ".join(f"fifth {b + 1}" for b in range(FIFTHS))
        + " | AUROC 1−R wrong | median σ² | AUROC σ² OOD |"
        + (" cost / PRM pass |" if costs else "")
    )
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    for r in rows:
        fifths = " | ".join(f"{fmt(a)} ({w})" for a, w in zip(r["auroc_fifths"], r["wrong_fifths"]))
        cost = ""
        if costs:
            c = costs.get(r["estimator"])
            cost = f" {c['ratio']:.2f}× |" if c else " – |"
        space = r.get("space", "prob")
        lines.append(
            f"| {r['estimator']} | {'scores' if space == 'prob' else 'logits'} | {r['pair']} | {r['steps']} "
            f"({r['wrong']}) | {fmt(r['auroc_wrong'])} | {fifths} | {fmt(r['auroc_score'])} | "
            f"{r['median_var']:.3g} | {fmt(separation.get(key(r['estimator'], space), float('nan')))} |{cost}"
        )
    return "\n".join(lines)


def verdict(rows: Sequence[dict[str, Any]], ood_pair: str) -> str:
    """The issue's bar, by its stated rule: some estimator's σ² reaches GOAL_AUROC for the OOD pair's wrong steps in
    every fifth of R that has both right and wrong steps."""
    met = []
    for r in rows:
        if r["pair"] != ood_pair:
            continue
        valid = [a for a in r["auroc_fifths"] if a is not None and not math.isnan(a)]
        if valid and min(valid) >= GOAL_AUROC:
            met.append(r["estimator"] + ("" if r.get("space", "prob") == "prob" else " (logits)"))
    if met:
        return (
            f"σ² reaches AUROC ≥ {GOAL_AUROC:g} for {ood_pair}'s wrong steps in every fifth of R with: "
            f"{', '.join(met)}."
        )
    best = max(
        (r for r in rows if r["pair"] == ood_pair),
        key=lambda r: min([a for a in r["auroc_fifths"] if not math.isnan(a)] or [0.0]),
        default=None,
    )
    worst = min([a for a in best["auroc_fifths"] if not math.isnan(a)] or [float("nan")]) if best else float("nan")
    where = (best["estimator"] + ("" if best.get("space", "prob") == "prob" else ", logits")) if best else "–"
    return (
        f"No estimator's σ² reaches AUROC ≥ {GOAL_AUROC:g} for {ood_pair}'s wrong steps in every fifth of R; the "
        f"best worst-fifth AUROC is {fmt(worst)} ({where})."
    )
