"""A run in words: its outcome, its label in the pickers, its row in the Runs table and the status line
above its tree."""

from __future__ import annotations

import time
from pathlib import PurePath
from typing import Any, Mapping, Sequence

from uats_core.eval.grid import BUILTIN_MODELS, BUILTIN_ROLES
from uats_core.status import LIVE, RunStatus

from .safe_text import hide_server_paths, md_inline, md_text, model_name
from .treedata import TreeState


def outcome(run: dict[str, Any]) -> str:
    if run.get("status") != RunStatus.FINISHED:
        return run.get("status", "?")
    return {True: "right", False: "wrong"}.get(run.get("correct"), "ungraded")


def run_label(run: dict[str, Any]) -> str:
    cfg = run.get("config") or {}
    return (f"{run['run_id'][:8]} · {run.get('method')} · {run.get('problem_id')} · seed {run.get('seed')} · "
            f"N={cfg.get('budget', '?')} · {outcome(run)}")


def pair_label(policy: Any, prm: Any) -> str:
    """The run's (policy, PRM) as the evaluation names its pairs: the arithmetic world's embedded models as `A:prm
    (ID)` and `B:prm (OOD)` (uats_core.eval.grid's names and roles); other models' pairs are left unnamed ('')."""
    names = {PurePath(spec).name: short for short, spec in BUILTIN_MODELS.items()}
    pol, judge = names.get(model_name(policy)), names.get(model_name(prm))
    if pol is None or judge is None:
        return ""
    pair = f"{pol}:{judge}"
    return f"{pair} ({BUILTIN_ROLES[pair]})" if pair in BUILTIN_ROLES else pair


def _whole(value: Any) -> int | None:
    """A count or a setting shown as a whole number (a budget stored as 16.0 reads 16), None when absent."""
    return None if value is None or value == "" else int(round(float(value)))


def run_rows(runs: Sequence[dict[str, Any]]) -> list[list[Any]]:
    """The Runs table's rows (RUN_COLUMNS): the models by name and the pair they make, so two runs of one problem,
    seed and N that differ in policy (A or B) or PRM are told apart; counts and the cost as whole numbers (the status
    line rounds the cost so too)."""
    rows = []
    for r in runs:
        cfg = r.get("config") or {}
        started = time.strftime("%Y-%m-%d %H:%M", time.localtime(r["started_at"])) if r.get("started_at") else ""
        rows.append([r["run_id"][:12], r.get("method"), model_name(r.get("policy")), model_name(r.get("prm")),
                     pair_label(r.get("policy"), r.get("prm")), r.get("problem_id"), _whole(r.get("seed")),
                     _whole(cfg.get("budget")), r.get("status"), outcome(r), r.get("answer"),
                     _whole(r.get("cost") or 0.0), _whole(r.get("iterations")), _whole(r.get("n_nodes")),
                     started])
    return rows


RUN_COLUMNS = ["run", "method", "policy", "PRM", "pair", "problem", "seed", "N", "status", "outcome", "answer", "cost",
               "iterations", "nodes", "started"]


def run_status_md(run: dict[str, Any], state: TreeState | None = None,
                  shadow: Mapping[int, Mapping[str, Any]] | None = None) -> str:
    """At most three short lines above the tree, each a paragraph the run bar keeps to one line (RUN_BAR_CSS; the
    whole text is its tooltip): the run and its outcome; what the tree shows and where the run came from; then
    the error, or what the shadow passes added, or that the run stored none. Replaying an iteration t before the
    last, the second line gives t's own figures (its nodes and the cost spent by then), not the run's final ones.
    `shadow`: the run's shadow rows (storage.shadow), by node id."""
    cfg = run.get("config") or {}
    status = run.get("status")
    colour = {RunStatus.RUNNING: "#1b9e77", RunStatus.QUEUED: "#999999", RunStatus.FINISHED: "#2c7fb8",
              RunStatus.FAILED: "#d95f02", RunStatus.CANCELLED: "#7570b3"}.get(status, "#555555")
    badge = f"<span style='color:{colour}'>●</span> {status}"
    if status in LIVE and run.get("paused"):
        badge += " · ❚❚ paused"  # what Step and Resume do: the run bar's hint (ui/tabs/runbar.py)
    source = cfg.get("imported") if isinstance(cfg.get("imported"), dict) else None
    searched = "" if source else f" · seed {run.get('seed')} · N={cfg.get('budget', '?')}"
    head = (f"**{badge}** · run {md_text(run['run_id'][:8])} · **{md_text(run.get('method'))}** on "
            f"{md_inline(run.get('problem_id'), 80)}{searched}")
    if status == RunStatus.FINISHED:
        gold = run.get("gold_answer")
        said = f"gold {md_inline(gold, 60)}" if gold is not None else "no gold answer"
        naive = "" if source else (
            f" · naive argmax {md_inline(run.get('naive_answer'), 60)} "
            f"({ {True: 'right', False: 'wrong'}.get(run.get('naive_correct'), 'ungraded') })")
        head += (f" · answer **{md_inline(run.get('answer'), 60)}** ({outcome(run)}; {said})"
                 + (" · the tool's choice" if source else naive))
    spent = "" if source else " · cost spent"  # another tool's cost is not ours
    replay = state is not None and state.iteration < state.max_iteration
    if replay:
        shown = (f"**replaying iteration {state.iteration} of {state.max_iteration}** · nodes {_tree_size(run, state)}"
                 + (f"{spent} by then {state.cost_total:,.0f}" if spent else ""))
    else:
        shown = (f"iterations {run.get('iterations', 0)} · nodes {_tree_size(run, state)}"
                 + (f"{spent} {float(run.get('cost') or 0):,.0f}" if spent else ""))
    if source:
        shown += (f" · imported from **{md_text(source.get('tool'))}** ({md_inline(source.get('from'), 40)} of "
                  f"{md_inline(source.get('file'), 60)}): R̄ is the tool's own score")
    parts = [head, shown]
    if run.get("error"):
        parts.append(f"⚠ {md_inline(hide_server_paths(run['error']), 400)}")
    elif shadow:
        parts.append(shadow_line(shadow))
    elif state is not None and status not in LIVE and len(state.nodes) > 1 and not any(
            len(n.get("mc_scores") or []) > 1 for n in state.nodes.values()):
        parts.append("no MC passes stored (at most one score per node, so no σ²): **Shadow scoring** under the tree "
                     "adds R̄ and σ² to every node")
    return "\n\n".join(parts)


def shadow_line(shadow: Mapping[int, Mapping[str, Any]]) -> str:
    """What shadow scoring added to a run, in one line: nodes, passes, the PRM, how many it finds OOD."""
    rows = list(shadow.values())
    ks = sorted({len(r.get("mc_scores") or []) for r in rows})
    prms = sorted({model_name(r.get("prm")) for r in rows})
    n_ood = sum(1 for r in rows if r.get("ood"))
    taus = sorted({float(r["tau"]) for r in rows if r.get("tau") is not None})
    tau = f" = {'/'.join(f'{t:g}' for t in taus)}" if taus else ""
    return (f"**shadow-scored**: {len(rows)} nodes × K = {'/'.join(map(str, ks))} passes of "
            f"{md_inline(', '.join(prms), 60)} (not spent by the run), {n_ood} OOD (σ² > τ{tau}): every panel "
            "labels their R̄ and σ² *shadow*")


def _tree_size(run: dict[str, Any], state: TreeState | None) -> str:
    """The node count the tree shows: its steps and the question node drawn at its root."""
    steps = len(state.nodes) - (0 in state.nodes) if state is not None else int(run.get("n_nodes") or 0)
    return f"{steps + 1} (the question and {steps} steps)"
