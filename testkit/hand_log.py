"""A hand-counted evaluation run log: every number the report computes from it can be counted by hand from
CORRECT (tests/test_report.py does; the browser test of the Reports tab reads it too)."""

from __future__ import annotations

import time
from pathlib import Path

import sqlalchemy as sa

from storage import RunStore, schema as S
from storage.eval_cells import eval_cells

# (method, budget, seed) -> (correct on p0, correct on p1)
CORRECT = {
    ("rebase", 4, 0): (1, 0),
    ("rebase", 4, 1): (1, 1),
    ("rebase", 4, 2): (0, 0),
    ("rebase", 16, 0): (1, 1),
    ("rebase", 16, 1): (1, 1),
    ("rebase", 16, 2): (1, 0),
    ("h-uats", 4, 0): (0, 0),
    ("h-uats", 4, 1): (1, 0),
    ("h-uats", 4, 2): (1, 0),
    ("h-uats", 16, 0): (1, 1),
    ("h-uats", 16, 1): (1, 1),
    ("h-uats", 16, 2): (1, 1),
}


class HandLogWriter:
    """Writes evaluation cells and their runs (and nodes) straight into a run log's tables."""

    def __init__(self, store: RunStore) -> None:
        self.engine = store.engine  # opening the store made every table, eval_cells too
        self.n = 0

    def run(
        self,
        *,
        problem: str,
        method: str,
        budget: int,
        seed: int,
        correct: bool | None,
        cost: float,
        cell_status: str = "finished",
        run_status: str = "finished",
        dataset: str = "hand",
        pair: str = "P:Q",
        nodes: list[dict] | None = None,
        variant: str = "base",
        iterations: int = 3,
    ) -> str:
        self.n += 1
        run_id = f"run{self.n:03d}"
        now = time.time()
        with self.engine.begin() as conn:
            conn.execute(
                sa.insert(S.runs),
                [
                    dict(
                        run_id=run_id,
                        method=method,
                        problem_id=problem,
                        question="q",
                        gold_answer="8",
                        seed=seed,
                        config={"budget": budget},
                        status=run_status,
                        correct=correct,
                        naive_correct=correct,
                        cost=cost,
                        iterations=iterations,
                        n_nodes=len(nodes or []),
                        started_at=now,
                        updated_at=now,
                        cancel_requested=False,
                    )
                ],
            )
            # every row with every key: an executemany insert takes its columns from the first row
            base = dict(
                run_id=run_id,
                num_tokens=1,
                created_iter=1,
                initial_passes=0,
                k=0,
                extra_passes=0,
                children_granted=0,
                updated_iter=1,
                mc_scores=[],
                mean=None,
                correct=None,
            )
            if nodes:
                conn.execute(sa.insert(S.nodes), [{**base, **n} for n in nodes])
            conn.execute(
                sa.insert(eval_cells),
                [
                    dict(
                        cell_key=f"{pair}|{dataset}|{problem}|{method}|{budget}|{seed}|{variant}",
                        pair=pair,
                        policy="pp",
                        prm="qq",
                        dataset=dataset,
                        problem_id=problem,
                        method=method,
                        budget=budget,
                        seed=seed,
                        variant=variant,
                        status=cell_status,
                        run_id=run_id,
                        attempts=1,
                        batched=False,
                    )
                ],
            )
        return run_id


def terminal_nodes(correct: bool, budget: int) -> list[dict]:
    """A run's nodes: the voted answer's candidate, a second candidate (correct only at N=16), and a pruned
    node marked correct that Pass@N must ignore (it is not a terminal candidate)."""
    return [
        dict(node_id=0, parent_id=None, depth=0, step="", status="kept"),
        dict(node_id=1, parent_id=0, depth=1, step="a", status="finished", correct=correct, mean=0.9),
        dict(node_id=2, parent_id=0, depth=1, step="b", status="truncated", correct=budget == 16, mean=0.2),
        dict(node_id=3, parent_id=0, depth=1, step="c", status="pruned", correct=True, mean=0.1),
    ]


def build_hand_db(db: Path) -> Path:
    """The hand-counted run log at `db`."""
    store = RunStore(str(db))
    w = HandLogWriter(store)
    for (method, budget, seed), flags in CORRECT.items():
        for problem, ok in zip(("p0", "p1"), flags):
            w.run(
                problem=problem,
                method=method,
                budget=budget,
                seed=seed,
                correct=bool(ok),
                cost=10.0 * budget + seed,
                nodes=terminal_nodes(bool(ok), budget),
            )
    # p2 is unfinished: only REBASE's cells finished, H-UATS's are running or their run failed. The
    # comparison tables must leave p2 out (every method on the same problems).
    for method, budget, seed in CORRECT:
        if method == "rebase":
            w.run(
                problem="p2",
                method=method,
                budget=budget,
                seed=seed,
                correct=True,
                cost=1.0,
                nodes=terminal_nodes(True, budget),
            )
        elif seed == 0:
            w.run(
                problem="p2",
                method=method,
                budget=budget,
                seed=seed,
                correct=True,
                cost=1.0,
                cell_status="running",
                run_status="running",
            )
        else:
            w.run(problem="p2", method=method, budget=budget, seed=seed, correct=None, cost=1.0, run_status="failed")
    store.close()
    return db
