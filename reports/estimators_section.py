"""The results page's section on uncertainty estimators, generated from what `uats estimators measure` and
`python -m benchmarks estimators` wrote under results/estimators/ (the measured rows, never typed numbers)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from uats_core.estimators.measure import GOAL_AUROC, table

MEASURED = Path(__file__).resolve().parents[1] / "results" / "estimators"
STEPS_FILE, COST_FILE = "arith.json", "cost.json"


def _read(path: Path) -> dict[str, Any] | None:
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None


TABLE_NAME = "Uncertainty estimators, step by step"


def estimators_markdown(folder: Path = MEASURED) -> str | None:
    """The section's text as the report registers it among its tables (caption, table, rule and verdict, cost, and the
    commits that measured the rows, as the report's tables say theirs); None when nothing was measured."""
    steps = _read(folder / STEPS_FILE)
    if steps is None:
        return None
    cost = _read(folder / COST_FILE)
    costs = {r["estimator"]: r for r in cost["rows"]} if cost else None
    fewer = {n: k for n, k in (steps.get("k_by_estimator") or {}).items() if k != steps["k"]}
    k_note = "".join(f"; {n}: K = {k}, all its members" for n, k in fewer.items())
    lines = [
        f"Each estimator's σ² on every step prefix of {steps['samples']} solutions per problem that policy A and "
        f"policy B sampled for {steps['problems']} test problems (K = {steps['k']}{k_note}; wrong = the exact "
        "checker rejects the step). AUROC of σ² for a wrong step over all steps and within each fifth of the PRM's "
        "deterministic score R (lowest first; wrong steps in brackets; – where a fifth has one class only), σ² of "
        "the samples' scores and of their logits (SearchConfig.uncertainty_space; Mahalanobis: the stated map), "
        'the AUROC of 1 − R for comparison, and the AUROC of σ² for "this step is B\'s" (ID/OOD separation). '
        f"`uats estimators measure --json results/estimators/{STEPS_FILE}` writes the rows.",
        "",
        table(steps["rows"], steps["separation"], costs),
        "",
        f"**Rule**: an estimator meets the bar when its σ² reaches AUROC ≥ {GOAL_AUROC:g} for B's wrong steps in "
        f"every fifth of R that has both right and wrong steps. **Verdict**: {steps['verdict']}",
        "",
    ]
    if cost:
        load = cost["load"]
        lines += [
            f"Cost: one estimate of K = {cost['k']} samples for each of {cost['traces']} step prefixes, over one "
            f"deterministic PRM pass on the same prefixes, {cost['threads']} thread(s), min of interleaved rounds, "
            f"load average {load[0]:.2f} / {load[1]:.2f} / {load[2]:.2f} when measured "
            f"(`python -m benchmarks estimators --json results/estimators/{COST_FILE}`). The search prices every "
            "sample at one PRM pass (Estimator.sample_cost), whatever it costs to compute."
            + (
                f" The ensemble's row: K = {ens['k']} (its members), a run of its own at load average "
                f"{ens['load'][0]:.2f}, code `{ens['code_version']}`."
                if (ens := cost.get("ensemble_run"))
                else ""
            ),
            "",
        ]
    by_commit: dict[str, list[str]] = {}
    for name, commit in (steps.get("code_versions") or {}).items():
        by_commit.setdefault(commit, []).append(name)
    lines.append(
        "Code versions of the rows: "
        + (", ".join(f"`{c}` ({', '.join(n)})" for c, n in by_commit.items()) or "not recorded")
        + (f"; of the costs: `{cost.get('code_version', 'not recorded')}`" if cost else "")
    )
    return "\n".join(lines)


def estimators_section(folder: Path = MEASURED) -> list[str]:
    """The page's section: its heading and estimators_markdown's text (none when nothing was measured)."""
    text = estimators_markdown(folder)
    return [f"## {TABLE_NAME}", "", text, ""] if text else []
