"""A run in words: its outcome, its label in the pickers, its row in the Runs table and the status line
above its tree."""

from __future__ import annotations

import time
from typing import Any, Sequence

from .safe_text import hide_server_paths, md_inline, md_text
from .treedata import TreeState


def outcome(run: dict[str, Any]) -> str:
    if run.get("status") != "finished":
        return run.get("status", "?")
    return {True: "right", False: "wrong"}.get(run.get("correct"), "ungraded")


def run_label(run: dict[str, Any]) -> str:
    cfg = run.get("config") or {}
    return (f"{run['run_id'][:8]} · {run.get('method')} · {run.get('problem_id')} · seed {run.get('seed')} · "
            f"N={cfg.get('budget', '?')} · {outcome(run)}")


def run_rows(runs: Sequence[dict[str, Any]]) -> list[list[Any]]:
    rows = []
    for r in runs:
        cfg = r.get("config") or {}
        started = time.strftime("%Y-%m-%d %H:%M", time.localtime(r["started_at"])) if r.get("started_at") else ""
        rows.append([r["run_id"][:12], r.get("method"), r.get("problem_id"), r.get("seed"), cfg.get("budget"),
                     r.get("status"), outcome(r), r.get("answer"), round(float(r.get("cost") or 0.0), 1),
                     r.get("iterations"), r.get("n_nodes"), started])
    return rows


RUN_COLUMNS = ["run", "method", "problem", "seed", "N", "status", "outcome", "answer", "cost", "iterations", "nodes",
               "started"]


def run_status_md(run: dict[str, Any], state: TreeState | None = None) -> str:
    cfg = run.get("config") or {}
    status = run.get("status")
    colour = {"running": "#1b9e77", "queued": "#999999", "finished": "#2c7fb8", "failed": "#d95f02",
              "cancelled": "#7570b3"}.get(status, "#555555")
    badge = f"<span style='color:{colour}'>●</span> {status}"
    if status in ("queued", "running") and run.get("paused"):
        badge += " · ❚❚ paused"  # what Step and Resume do: the run bar's hint (ui/tabs/runbar.py)
    parts = [f"**{badge}** · run {md_text(run['run_id'][:12])} · **{md_text(run.get('method'))}** on "
             f"{md_inline(run.get('problem_id'), 80)} · "
             f"seed {run.get('seed')} · N={cfg.get('budget', '?')}",
             f"iterations {run.get('iterations', 0)} · nodes {_tree_size(run, state)} · cost spent "
             f"{float(run.get('cost') or 0):,.0f}"]
    if status == "finished":
        gold = run.get("gold_answer")
        parts.append(f"answer **{md_inline(run.get('answer'), 200)}** ({outcome(run)}; gold {md_inline(gold, 200)}) · "
                     f"naive argmax {md_inline(run.get('naive_answer'), 200)} ({ {True: 'right', False: 'wrong'}.get(run.get('naive_correct'), 'ungraded') })")
    if run.get("error"):
        parts.append(f"⚠ {md_inline(hide_server_paths(run['error']), 400)}")
    if state is not None and state.iteration < state.max_iteration:
        parts.append(f"showing the tree after iteration **{state.iteration}** of {state.max_iteration}")
    return "  \n".join(parts)


def _tree_size(run: dict[str, Any], state: TreeState | None) -> str:
    """The node count the tree shows: its steps and the question node drawn at its root."""
    steps = len(state.nodes) - (0 in state.nodes) if state is not None else int(run.get("n_nodes") or 0)
    return f"{steps + 1} (the question and {steps} steps)"
