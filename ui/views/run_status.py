"""A run in words: its outcome, its label in the pickers, its row in the Runs table and the status line
above its tree."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from pathlib import PurePath
from typing import Any

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
    return (
        f"{run['run_id'][:8]} · {run.get('method')} · {run.get('problem_id')} · seed {run.get('seed')} · "
        f"N={cfg.get('budget', '?')} · {outcome(run)}"
    )


def pair_label(policy: Any, prm: Any) -> str:
    """The run's (policy, PRM) as the evaluation names its pairs: the arithmetic world's embedded models as `A:prm
    (ID)` and `B:prm (OOD)` (uats_core.eval.grid's names and roles); other models' pairs are left unnamed ('')."""
    names = {PurePath(spec).name: short for short, spec in BUILTIN_MODELS.items()}
    pol, judge = names.get(model_name(policy)), names.get(model_name(prm))
    if pol is None or judge is None:
        return ""
    pair = f"{pol}:{judge}"
    return f"{pair} ({BUILTIN_ROLES[pair]})" if pair in BUILTIN_ROLES else pair


NO_ANSWER = "none"  # a finished run that gave no answer, as the run bar and the Runs table both say it


def said_answer(run: dict[str, Any]) -> str | None:
    """The run's answer as every panel says it: NO_ANSWER for a finished run without one, None (not said) before."""
    if run.get("answer") is not None:
        return str(run["answer"])
    return NO_ANSWER if run.get("status") == RunStatus.FINISHED else None


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
        rows.append(
            [
                r["run_id"][:12],
                r.get("method"),
                model_name(r.get("policy")),
                model_name(r.get("prm")),
                pair_label(r.get("policy"), r.get("prm")),
                r.get("problem_id"),
                _whole(r.get("seed")),
                _whole(cfg.get("budget")),
                r.get("status"),
                outcome(r),
                said_answer(r),
                _whole(r.get("cost") or 0.0),
                _whole(r.get("iterations")),
                _whole(r.get("n_nodes")),
                started,
            ]
        )
    return rows


RUN_COLUMNS = [
    "run",
    "method",
    "policy",
    "PRM",
    "pair",
    "problem",
    "seed",
    "N",
    "status",
    "outcome",
    "answer",
    "cost",
    "iterations",
    "nodes",
    "started",
]
# each column as wide as its header's longest word needs at 1280 × 800 (headers broke mid-word, "ite|rat|ion|s", and
# the start time ran past the table), and a name's longest piece between hyphens ("synthetic-"): a cell wraps after a
# hyphen, never inside a piece ("syntheti|c-policy"), with the narrower padding RUNS_TABLE_CSS gives the cells
# outcome holds "cancelled" unbroken at 1280 (6.5% broke it as "cancelle|d"): the PRM's and the start's columns
# gave the room they had (tests/browser/test_runs_table_browser.py)
RUN_WIDTHS = ["9.5%", "5.5%", "9%", "8.5%", "5%", "8.5%", "4%", "3%", "7%", "7.5%", "6%", "5%", "8%", "5%", "8.5%"]
RUNS_TABLE_CSS = "#runs-table .cell-wrap { padding-left: 4px; padding-right: 4px; }\n"


def run_status_md(
    run: dict[str, Any], state: TreeState | None = None, shadow: Mapping[int, Mapping[str, Any]] | None = None
) -> str:
    """At most three short lines above the tree, each a paragraph the run bar keeps to one line (RUN_BAR_CSS; the
    whole text is its tooltip): the run and its outcome; what the tree shows, with what shadow passes added or
    that the run stored none; then the error, or where an imported run came from. Replaying an iteration t before the
    last, the second line gives t's own figures (its nodes and the cost spent by then), not the run's final ones.
    `shadow`: the run's shadow rows (storage.shadow), by node id."""
    cfg = run.get("config") or {}
    status = run.get("status")
    colour = {
        RunStatus.RUNNING: "#1b9e77",
        RunStatus.QUEUED: "#999999",
        RunStatus.FINISHED: "#2c7fb8",
        RunStatus.FAILED: "#d95f02",
        RunStatus.CANCELLED: "#7570b3",
    }.get(status, "#555555")
    badge = f"<span style='color:{colour}'>●</span> {status}"
    if status in LIVE and run.get("paused"):
        badge += " · ❚❚ paused"  # what Step and Resume do: the run bar's hint (ui/tabs/runbar.py)
    source = cfg.get("imported") if isinstance(cfg.get("imported"), dict) else None
    searched = "" if source else f" · seed {run.get('seed')} · N={cfg.get('budget', '?')}"
    head = (
        f"**{badge}** · run {md_text(run['run_id'][:8])} · **{md_text(run.get('method'))}** on "
        f"{md_inline(run.get('problem_id'), 80)}{searched}"
    )
    if status == RunStatus.FINISHED:
        gold = run.get("gold_answer")
        said = f"gold {md_inline(gold, 60)}" if gold is not None else "no gold answer"
        naive = (
            ""
            if source
            else (
                f" · naive argmax {md_inline(run.get('naive_answer'), 60)} "
                f"({ {True: 'right', False: 'wrong'}.get(run.get('naive_correct'), 'ungraded') })"
            )
        )
        answer = f"**{md_inline(run.get('answer'), 60)}**" if run.get("answer") is not None else NO_ANSWER
        head += f" · answer {answer} ({outcome(run)}; {said})" + (
            " · the tool's choice" if source and run.get("answer") is not None else "" if source else naive
        )
    spent = "" if source else " · cost spent"  # another tool's cost is not ours
    replay = state is not None and state.iteration < state.max_iteration
    if replay:
        shown = (
            f"**replaying iteration {state.iteration} of {state.max_iteration}** · nodes {_tree_size(run, state)}"
            + (f"{spent} by then {state.cost_total:,.0f}" if spent else "")
        )
    else:
        shown = f"iterations {run.get('iterations', 0)} · nodes {_tree_size(run, state)}" + (
            f"{spent} {float(run.get('cost') or 0):,.0f}" if spent else ""
        )
    # the passes: shadow ones, or none stored, said after what the tree shows (three lines at most, RUN_BAR_CSS)
    if shadow:
        shown += " · " + shadow_line(shadow)
    elif (
        state is not None
        and status not in LIVE
        and len(state.nodes) > 1
        and not any(len(n.get("mc_scores") or []) > 1 for n in state.nodes.values())
    ):
        shown += (
            " · no MC passes stored (at most one score per node, so no σ²): **Shadow scoring** under the tree "
            "adds R̄ and σ² to every node"
        )
    parts = [head, shown]
    if run.get("error"):
        parts.append(f"⚠ {md_inline(hide_server_paths(run['error']), 400)}")
    elif source:
        parts.append(_imported_line(source) + _answer_source(source))
    return "\n\n".join(parts)


def shadow_line(shadow: Mapping[int, Mapping[str, Any]]) -> str:
    """What shadow scoring added to a run, in one line: nodes, passes, the PRM, how many it finds OOD."""
    rows = list(shadow.values())
    ks = sorted({len(r.get("mc_scores") or []) for r in rows})
    prms = sorted({model_name(r.get("prm")) for r in rows})
    n_ood = sum(1 for r in rows if r.get("ood"))
    taus = sorted({float(r["tau"]) for r in rows if r.get("tau") is not None})
    tau = f" = {'/'.join(f'{t:g}' for t in taus)}" if taus else ""
    return (
        f"**shadow-scored**: {len(rows)} nodes × K = {'/'.join(map(str, ks))} passes of "
        f"{md_inline(', '.join(prms), 60)} (not spent by the run), {n_ood} OOD (σ² > τ{tau})"
    )


def _imported_line(source: dict[str, Any]) -> str:
    """Where an imported run came from and what of it the app shows as its own: scores, answer, unvisited children."""
    line = (
        f"imported from **{md_text(source.get('tool'))}** ({md_inline(source.get('from'), 80)} of "
        f"{md_inline(source.get('file'), 120)})"
    )
    if source.get("scores_as_r") is False or source.get("rewards_as_scores") is False:
        outside = source.get("scores_outside_unit_range")
        line += (
            ": the tool's scores are not in [0, 1]"
            + (f" ({md_inline(outside, 20)} outside)" if outside else "")
            + ", so they stay in each node's source fields and no R̄ is drawn"
        )
    else:
        line += ": R̄ is the tool's own score of each node"
    said = str(source.get("answer_read_from") or "")
    if said:
        line += (
            f" · no answer: {md_inline(said.removeprefix('none: '), 200)}"
            if said.startswith("none: ")
            else f" · answer from {md_inline(said, 200)}"
        )
    if source.get("unvisited_children"):
        line += (
            f" · {md_inline(source.get('unvisited_children'), 20)} unvisited children kept with their parents, "
            "not drawn as steps"
        )
    return line


def _answer_source(source: dict[str, Any]) -> str:
    """search-and-learn: which of its answers the run shows, and those it keeps beside it (at the row's full N)."""
    if "answer_from" not in source:
        return ""
    answers = source.get("tool_answers") or {}
    most = max((int(k.rsplit("@", 1)[1]) for k in answers), default=None)
    kept = ", ".join(f"{md_text(k)} {md_inline(v, 60)}" for k, v in answers.items() if k.endswith(f"@{most}"))
    return f"; the answer is its {md_text(source['answer_from'])}" + (f" (kept beside it: {kept})" if kept else "")


def _tree_size(run: dict[str, Any], state: TreeState | None) -> str:
    """The node count the tree shows: its steps and the question node drawn at its root."""
    steps = len(state.nodes) - (0 in state.nodes) if state is not None else int(run.get("n_nodes") or 0)
    return f"{steps + 1} (the question and {steps} steps)"
