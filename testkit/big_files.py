"""A search-and-learn file at the size of a real run, built from search-and-learn's own output
(tests/tool_fixtures/search_and_learn: its dvts under the default PRM, written by its code): N = 256 completions per
row (COPIES of each of the fixture's 4, each copy's steps told apart so that they are distinct nodes), rows repeated
until the file holds `mb` megabytes. The import benchmark (benchmarks/imports.py) times `uats import` on it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

FIXTURE = (
    Path(__file__).resolve().parents[1]
    / "tests"
    / "tool_fixtures"
    / "search_and_learn"
    / "dvts_rlhflow_completions.jsonl"
)
COPIES = 64  # 4 completions x 64 = N 256, search-and-learn's largest published N


def scaled_row(row: dict[str, Any], r: int) -> dict[str, Any]:
    """The row as a run of N = 4 x COPIES: each copy's steps carry the row and copy number (distinct nodes)."""
    completions, scores = [], []
    for k in range(COPIES):
        for text, s in zip(row["completions"], row["scores"]):
            completions.append(text.replace("\n\n", f" [{r}.{k}]\n\n"))
            scores.append(s)
    return dict(row, completions=completions, scores=scores, pred=completions[0])


def build(path: Path, mb: float) -> int:
    rows = [json.loads(line) for line in FIXTURE.read_text(encoding="utf-8").splitlines()]
    written, r = 0, 0
    with open(path, "w", encoding="utf-8") as f:
        while written < mb * 1e6:
            line = json.dumps(scaled_row(rows[r % len(rows)], r)) + "\n"
            f.write(line)
            written += len(line.encode("utf-8"))
            r += 1
    return r
