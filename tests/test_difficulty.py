"""Accuracy against difficulty (reports.difficulty): the datasets side by side, easiest first."""

from __future__ import annotations

import pandas as pd

from reports.difficulty import difficulty_markdown
from reports.stats import curves


def _rows(dataset: str, accuracy: dict[str, float], budgets=(16,), seeds=(0, 1, 2), problems=20) -> list[dict]:
    rows = []
    for method, acc in accuracy.items():
        for b in budgets:
            for s in seeds:
                for p in range(problems):
                    right = p < round(acc * problems)
                    rows.append(
                        {
                            "dataset": dataset,
                            "variant": "base",
                            "pair": "A:prm",
                            "method": method,
                            "budget": b,
                            "seed": s,
                            "problem_id": f"{dataset}-{p}",
                            "correct": right,
                            "naive_correct": right,
                            "pass_at_n": right or p % 2 == 0,
                            "cost": 1.0,
                            "finals_marked": True,
                            "n_final": b,
                        }
                    )
    return rows


def test_datasets_side_by_side_easiest_first_at_the_budgets_both_ran() -> None:
    df = pd.DataFrame(
        _rows("hard-split", {"rebase": 0.1, "h-uats": 0.2}, budgets=(16,))
        + _rows("test", {"rebase": 0.7, "h-uats": 0.8}, budgets=(4, 16))
    )
    text = difficulty_markdown(curves(df), {})
    header = next(line for line in text.splitlines() if line.startswith("| pair"))
    assert header.index("test (20 problems × 3 seeds)") < header.index("hard-split (20 problems × 3 seeds)")
    body = [line for line in text.splitlines() if line.startswith("| A:prm")]
    assert body == [
        "| A:prm | 16 | rebase | 70.0 ± 0.0 (85.0) | 10.0 ± 0.0 (55.0) |",
        "| A:prm | 16 | h-uats | 80.0 ± 0.0 (90.0) | 20.0 ± 0.0 (60.0) |",
    ]  # N = 4: the test split alone
    assert difficulty_markdown(curves(df[df["dataset"] == "test"]), {}) == ""
