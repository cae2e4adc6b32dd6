"""Duplicate candidates: how many of a search's candidates are the same partial solution.

A small policy often proposes the same step verbatim several times. Two nodes are the same trace when their
parents are the same trace and their step texts are equal, so the count is exact, whatever the search. This
matters most for DORA, whose uniqueness weights are shared among exact duplicates: a step proposed k times
keeps the weight of one, while one-off steps keep theirs."""

from __future__ import annotations

import json

import pandas as pd

from uats_core.tree import TERMINAL

from .stats import sort_by_method
from .tables import markdown_table, pair_cell

COUNT_COLUMNS = ["n_candidates", "n_distinct", "steps", "candidates_per_step", "distinct_per_step"]


def trace_counts(nodes: pd.DataFrame) -> pd.DataFrame:
    """Per run: scored candidates (every node but the question), distinct traces among them, the number of
    depths, and the mean candidates and distinct traces per depth. nodes: run_id, node_id, parent_id, depth,
    step (storage.eval_results.load_nodes). With the nodes' status, answer, mean and correct, also `solutions`:
    the run's final solutions (final_solutions)."""
    rows = []
    with_finals = {"status", "answer", "mean", "correct"} <= set(nodes.columns)
    for run_id, g in nodes.groupby("run_id", sort=False):
        g = g.sort_values(["depth", "node_id"])
        trace: dict[int, int] = {}
        ids: dict[tuple[int, str], int] = {}
        per_depth: dict[int, tuple[int, set[int]]] = {}
        for node_id, parent_id, depth, step in zip(g["node_id"], g["parent_id"], g["depth"], g["step"]):
            if pd.isna(parent_id):  # the question
                trace[int(node_id)] = -1
                continue
            key = (trace.get(int(parent_id), -2 - int(parent_id)), str(step or ""))
            trace[int(node_id)] = ids.setdefault(key, len(ids))
            count, seen = per_depth.get(int(depth), (0, set()))
            seen.add(trace[int(node_id)])
            per_depth[int(depth)] = (count + 1, seen)
        if not per_depth:
            continue
        row = {
            "run_id": run_id,
            "n_candidates": sum(c for c, _ in per_depth.values()),
            "n_distinct": len(ids),
            "steps": len(per_depth),
            "candidates_per_step": sum(c for c, _ in per_depth.values()) / len(per_depth),
            "distinct_per_step": sum(len(s) for _, s in per_depth.values()) / len(per_depth),
        }
        if with_finals:
            row["solutions"] = final_solutions(g, trace)
        rows.append(row)
    return pd.DataFrame(rows, columns=["run_id", *COUNT_COLUMNS] + (["solutions"] if with_finals else []))


def final_solutions(nodes: pd.DataFrame, trace: dict[int, int]) -> str:
    """One run's final candidates with an answer (what its vote and Pass@N read), as the distinct final
    solutions among them in node order: a JSON list of [answer, correct, copies, sum of the copies' final scores,
    their highest score]. `trace`: node id -> its distinct trace (two copies of a solution share it). Enough to
    recompute every aggregation (uats_core.grading.tally) without the run log."""
    finals = nodes[voted_mask(nodes) & nodes["answer"].notna()].sort_values("node_id")
    out: dict[int, list] = {}
    for node_id, answer, correct, mean in zip(finals["node_id"], finals["answer"], finals["correct"], finals["mean"]):
        score = 0.0 if pd.isna(mean) else float(mean)  # as the search's vote reads it
        entry = out.setdefault(
            trace[int(node_id)], [str(answer), None if pd.isna(correct) else bool(correct), 0, 0.0, float("-inf")]
        )
        entry[2] += 1
        entry[3] += score
        entry[4] = max(entry[4], score)
    return json.dumps([[a, c, n, round(s, 6), round(m, 6)] for a, c, n, s, m in out.values()], separators=(",", ":"))


def voted_mask(nodes: pd.DataFrame) -> pd.Series:
    """The final candidates among `nodes`: the ones the answer was chosen from (Node.voted), or every ended solution
    in a run log from before that was kept (no `voted` column, or None on every node of the run)."""
    terminal = nodes["status"].isin(TERMINAL)
    if "voted" not in nodes:
        return terminal
    voted = nodes["voted"]
    return voted.eq(True) | (voted.isna() & terminal)


def duplicates_table(results: pd.DataFrame, traces: pd.DataFrame) -> pd.DataFrame:
    """Per (dataset, pair, method, budget), over the base cells with trace counts: mean candidates and distinct
    traces per step, the distinct share, and accuracy on those cells."""
    base = results[results["variant"] == "base"]
    both = base.merge(traces[["cell_key", *COUNT_COLUMNS]], on="cell_key")
    if both.empty:
        return pd.DataFrame()
    keys = ["dataset", "pair", "method", "budget"]
    out = (
        both.groupby(keys, sort=False)
        .agg(
            cells=("cell_key", "size"),
            candidates_per_step=("candidates_per_step", "mean"),
            distinct_per_step=("distinct_per_step", "mean"),
            n_candidates=("n_candidates", "sum"),
            n_distinct=("n_distinct", "sum"),
            accuracy=("correct", "mean"),
        )
        .reset_index()
    )
    out["distinct_share"] = out["n_distinct"] / out["n_candidates"]
    return sort_by_method(out, ["dataset", "pair", "method", "budget"])


def duplicates_markdown(table: pd.DataFrame, roles: dict[str, str]) -> str:
    if table.empty:
        return ""
    several = table["dataset"].nunique() > 1
    rows = [
        [
            pair_cell(r.pair, r.dataset, roles, several),
            r.method,
            r.budget,
            f"{r.candidates_per_step:.1f}",
            f"{r.distinct_per_step:.1f}",
            f"{100 * r.distinct_share:.0f}%",
            f"{100 * r.accuracy:.1f}",
            r.cells,
        ]
        for r in table.itertuples()
    ]
    return (
        "Candidates per step and the distinct partial solutions among them (two candidates are the same when "
        "their parents are and their step texts are equal), base cells\n\n"
        + markdown_table(
            ["pair", "method", "N", "candidates / step", "distinct / step", "distinct share", "accuracy (%)", "cells"],
            rows,
        )
    )
