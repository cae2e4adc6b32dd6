"""What an evaluation report reads from the run log: one row per finished evaluation cell (eval_cells joined
to runs, with the Pass@N oracle from the final candidates), and the nodes of chosen runs for the Figure 2
analysis. Reading never creates tables, so a report on a run log without evaluations is simply empty."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

import pandas as pd
import sqlalchemy as sa

from uats_core.methods.uats import KNOBS, STATE_FEATURES, current_feature_names
from uats_core.status import RunStatus
from uats_core.tree import TERMINAL

from . import schema as S
from .eval_cells import eval_cells

# a cell's identity, the first columns of its results here and in the results ledger (storage/results_ledger.py)
CELL_COLUMNS = ["cell_key", "pair", "policy", "prm", "dataset", "problem_id", "method", "budget", "seed", "variant"]
RESULT_COLUMNS = [
    *CELL_COLUMNS,
    "run_id",
    "batched",
    "wall_s",
    "correct",
    "naive_correct",
    "cost",
    "iterations",
    "n_nodes",
    "answer",
]
CONTROLLER_COLUMNS = ["run_id", "iteration", *STATE_FEATURES, *KNOBS]
# pass_at_n and n_final: over the final candidates; finals_marked: the run marked them (Node.voted), so the two are
# exact (in an older run log they count every solution the search ended)
OUTCOME_COLUMNS = ["pass_at_n", "n_final", "finals_marked"]


def engine_of(source: Any) -> sa.Engine:
    """The engine of a RunStore, an engine itself, or a new RunStore on a path or URL."""
    if isinstance(source, sa.Engine):
        return source
    if hasattr(source, "engine"):
        return source.engine
    from .store import RunStore

    return RunStore(str(source)).engine


def load_results(source: Any) -> pd.DataFrame:
    """One row per finished evaluation cell whose run finished: the cell's axes and the run's outcome,
    with pass_at_n and n_final from the run's final candidates (the ones its answer was chosen from)."""
    engine = engine_of(source)
    if eval_cells.name not in sa.inspect(engine).get_table_names():  # reading never creates tables
        return pd.DataFrame(columns=RESULT_COLUMNS + OUTCOME_COLUMNS)
    c, r, n = eval_cells.c, S.runs.c, S.nodes.c
    q = (
        sa.select(
            c.cell_key,
            c.pair,
            c.policy,
            c.prm,
            c.dataset,
            c.problem_id,
            c.method,
            c.budget,
            c.seed,
            c.variant,
            c.run_id,
            c.batched,
            c.wall_s,
            r.correct,
            r.naive_correct,
            r.cost,
            r.iterations,
            r.n_nodes,
            r.answer,
        )
        .select_from(eval_cells.join(S.runs, r.run_id == c.run_id))
        .where(c.status == RunStatus.FINISHED, r.status == RunStatus.FINISHED)
    )
    # The final candidates: those the answer was chosen from (Node.voted); a run log from before that was kept
    # has every ended solution (reports.duplicates.voted_mask reads the same rule from loaded nodes).
    final = sa.or_(n.voted.is_(True), sa.and_(n.voted.is_(None), n.status.in_(TERMINAL)))
    oracle = (
        sa.select(
            n.run_id,
            sa.func.max(sa.case((sa.and_(final, n.correct.is_(True)), 1), else_=0)).label("any_correct"),
            sa.func.sum(sa.case((final, 1), else_=0)).label("n_final"),
            sa.func.max(sa.case((n.voted.is_not(None), 1), else_=0)).label("finals_marked"),
        )
        .select_from(S.nodes.join(eval_cells, c.run_id == n.run_id))
        .where(c.status == RunStatus.FINISHED, sa.or_(final, n.voted.is_not(None)))
        .group_by(n.run_id)
    )
    with engine.connect() as conn:
        df = pd.DataFrame(conn.execute(q).mappings().all())
        pas = pd.DataFrame(conn.execute(oracle).mappings().all())
    if df.empty:
        return pd.DataFrame(columns=RESULT_COLUMNS + OUTCOME_COLUMNS)
    if pas.empty:
        pas = pd.DataFrame(columns=["run_id", "any_correct", "n_final", "finals_marked"])
    df = df.merge(pas, on="run_id", how="left")
    df["correct"] = df["correct"].fillna(False).astype(bool)  # no answer counts as wrong
    df["naive_correct"] = df["naive_correct"].fillna(False).astype(bool)
    df["pass_at_n"] = df["any_correct"].fillna(0).astype(int).astype(bool)
    df["n_final"] = df["n_final"].fillna(0).astype(int)
    df["finals_marked"] = df["finals_marked"].fillna(0).astype(int).astype(bool)
    df["cost"] = df["cost"].astype(float)
    return df.drop(columns=["any_correct"])


def report_inputs(source: Any) -> tuple[pd.DataFrame, Callable[[Sequence[str]], pd.DataFrame]]:
    """What reports.assemble_report reads from the run log `source`: the results and a node loader."""
    engine = engine_of(source)
    return load_results(engine), partial(load_nodes, engine)


def load_nodes(source: Any, run_ids: Sequence[str]) -> pd.DataFrame:
    """The nodes of `run_ids` with what the Figure 2 analysis reads (scores, initial passes, status, label) and
    the answers the final candidates vote with."""
    n = S.nodes.c
    q = sa.select(
        n.run_id,
        n.node_id,
        n.parent_id,
        n.depth,
        n.step,
        n.mean,
        n.mc_scores,
        n.initial_passes,
        n.status,
        n.correct,
        n.answer,
        n.voted,
    ).where(n.run_id.in_(list(run_ids)))
    with engine_of(source).connect() as conn:
        return pd.DataFrame(conn.execute(q).mappings().all())


def load_controller_steps(source: Any, run_ids: Sequence[str]) -> pd.DataFrame:
    """A-UATS's controller at each step of `run_ids` (the iterations' StepInfo): the state it read and the knobs it
    set; the runs of other methods have no rows."""
    i = S.iterations.c
    q = sa.select(i.run_id, i.iteration, i.step_info).where(i.run_id.in_(list(run_ids))).order_by(i.run_id, i.iteration)
    with engine_of(source).connect() as conn:
        rows = [
            {
                "run_id": r.run_id,
                "iteration": r.iteration,
                **dict(zip(current_feature_names(b["state"]), b["state"].values())),
                **b["knobs"],
            }
            for r in conn.execute(q)
            if (b := r.step_info) and b.get("state") and b.get("knobs")
        ]
    return pd.DataFrame(rows, columns=CONTROLLER_COLUMNS)
