"""The evaluation grid's test helpers: a grid spec over the eval doubles' models, and a run log's cells read back
with their runs' outcomes (tests/test_eval.py, tests/test_eval_interrupts.py)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import sqlalchemy as sa

from storage import RunStore
from uats_core.eval import GridSpec
from uats_core.eval.grid import load_eval_problems, parse_pairs

from .eval_doubles import MODELS


def grid_spec(
    problems_file: Path,
    pairs: str = "pol:rm",
    methods: Sequence[str] = ("best-of-n", "rebase", "h-uats"),
    budgets: Sequence[int] = (4,),
    seeds: Sequence[int] = (0, 1),
    n: int = 3,
) -> GridSpec:
    """A grid over the first n problems of a problems file, with testkit/eval_doubles.py's models."""
    dataset, probs = load_eval_problems(None, str(problems_file), n)
    return GridSpec(
        pairs=parse_pairs(pairs, MODELS),
        problems=probs,
        dataset=dataset,
        methods=list(methods),
        budgets=list(budgets),
        seeds=list(seeds),
    )


def cell_rows(db: Path) -> dict[str, dict]:
    """cell key -> the cell row joined with its run's outcome."""
    store = RunStore(str(db))
    try:
        with store.engine.connect() as conn:
            query = sa.text(
                "SELECT c.cell_key, c.status, c.run_id, c.attempts, c.batched, r.status AS run_status, "
                "r.answer, r.cost, r.n_nodes, r.correct "
                "FROM eval_cells c LEFT JOIN runs r ON r.run_id = c.run_id"
            )
            rows = conn.execute(query).mappings().all()
    finally:
        store.close()
    return {r["cell_key"]: dict(r) for r in rows}


def finished_outcomes(db: Path) -> dict[str, tuple]:
    """cell key -> (answer, cost, nodes, correct) of every finished cell: what two ways of running a grid must
    agree on."""
    return {
        k: (v["answer"], v["cost"], v["n_nodes"], v["correct"])
        for k, v in cell_rows(db).items()
        if v["status"] == "finished"
    }
