"""What an export of a run, a comparison or a case holds (ExportBundle: data, figures, a table, a caption);
views.export writes one to disk."""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from dataclasses import asdict
from typing import Any

from .cases import QUADRANTS, Case, StepJudge
from .comparison import COMPARE_COLUMNS, compare_figures, compare_rows, divergence_nodes, pair_labels, side_by_side
from .decisions import gate_record, gate_records, step_of
from .divergence import decision_divergence, divergence_text
from .export import ExportBundle, ExportTable
from .figstyle import fmt_mean, fmt_var
from .figure1 import step_figure
from .run_status import outcome, said_answer
from .safe_text import hide_server_paths, model_name
from .treedata import RunData
from .treefig import tree_figure
from .uncertainty import CHANGED_COLUMNS, changed_table, changes_summary, uncertainty_changes


def _run_summary(run: dict[str, Any]) -> dict[str, Any]:
    """The run's row as an export holds it: models by the names the page shows, errors without server paths."""
    keep = (
        "run_id",
        "method",
        "problem_id",
        "question",
        "gold_answer",
        "seed",
        "config",
        "policy",
        "prm",
        "model_options",
        "status",
        "answer",
        "naive_answer",
        "correct",
        "naive_correct",
        "cost",
        "iterations",
        "n_nodes",
        "error",
        "started_at",
        "ended_at",
    )
    out = {k: run.get(k) for k in keep}
    out["policy"], out["prm"] = model_name(run.get("policy")), model_name(run.get("prm"))
    if out["error"] is not None:
        out["error"] = hide_server_paths(out["error"])
    return out


def _shadow_rows(shadow: Mapping[int, Any] | None) -> list[dict[str, Any]]:
    return [{**shadow[i], "prm": model_name(shadow[i].get("prm"))} for i in sorted(shadow or {})]


VERDICT = {True: "right", False: "wrong", None: "?"}  # a step's truth in an export table


def path_numbers(fig: dict[str, Any], state: Any, path: Sequence[int]) -> list[dict[str, Any]]:
    """R̄ and σ² beside each node of the chosen path, for the exported image: the page draws numbers on a zoom
    (ui/js/treelod.js), a static image has only its compact glyphs, and a paper needs the path's numbers.
    One node a row, so the labels never meet; to the node's left, clear of its glyph on the right."""
    where = {}
    for tr in fig["data"]:
        if str(tr.get("name", "")).startswith("nodes"):
            where.update({c[0]: (x, y) for c, x, y in zip(tr["customdata"], tr["x"], tr["y"])})
    out = []
    for nid in path:
        if nid in where and state.nodes[nid].get("mean") is not None:
            x, y = where[nid]
            n = state.nodes[nid]
            out.append(
                {
                    "x": x,
                    "y": y,
                    "xref": "x",
                    "yref": "y",
                    "xanchor": "right",
                    "yanchor": "middle",
                    "xshift": -12,
                    "showarrow": False,
                    "name": "path numbers",
                    "bgcolor": "rgba(255,255,255,0.85)",
                    "text": f"R̄ {fmt_mean(n['mean'])} σ² {fmt_var(n.get('var'))}",
                    "font": {"size": 11},
                }
            )
    return out


def run_bundle(data: RunData, name: str | None = None, stars: Sequence[dict[str, Any]] = ()) -> ExportBundle:
    state = data.state_at(None)
    run = state.run
    judge = StepJudge(state)
    chosen = sorted(state.chosen_nodes(), key=lambda i: -(state.nodes[i].get("mean") or 0))
    path = state.path(chosen[0]) if chosen else []
    rows = []
    for depth, nid in enumerate(path, 1):
        n = state.nodes[nid]
        rows.append(
            [
                depth,
                " ".join(n.get("step", "").split())[:80],
                n.get("mean"),
                n.get("var"),
                len(n.get("mc_scores") or []),
                VERDICT[judge(nid)],
            ]
        )
    fig = tree_figure(
        state, title=f"{run.get('method')} on {run.get('problem_id')} (run {run['run_id'][:8]})", height=800
    )
    fig["layout"]["annotations"] = list(fig["layout"].get("annotations") or []) + path_numbers(fig, state, path)
    return ExportBundle(
        name=name or f"run-{run['run_id'][:8]}",
        kind="run",
        data={
            "run": _run_summary(run),
            "nodes": [data.nodes[i] for i in sorted(data.nodes)],
            "iterations": [data.iterations[i] for i in sorted(data.iterations)],
            "stars": list(stars),
            "gate": gate_records(data),
        },
        figures=[("Search tree", fig)],
        table_header=["depth", "step", "R̄", "σ²", "K", "verdict"],
        table_rows=rows,
        caption=(
            f"{run.get('method')} on {run.get('problem_id')}, seed {run.get('seed')}: answer {said_answer(run)} "
            f"({outcome(run)}), cost {float(run.get('cost') or 0):,.0f}. Table: the chosen answer's path; "
            "R̄ and σ² over each step's K passes (the σ² its gate read, before any extra passes: the export's "
            "gate records)."
        ),
        text_sections=[
            ("Question", run.get("question", "")),
            ("Chosen path", "\n\n".join(state.nodes[i].get("step", "") for i in path)),
        ],
    )


def divergence_record(a: RunData, b: RunData) -> dict[str, Any] | None:
    """Where two runs part, as an export states it: the iteration, each run's node, what each decided there and
    why in words (None when they never parted)."""
    div = decision_divergence(a, b)
    if div.kind is None:
        return None
    node_a, node_b = divergence_nodes(div)
    return {
        "iteration": div.iteration,
        "kind": div.kind,
        "node_a": node_a,
        "node_b": node_b,
        "depth": div.depth,
        "step": div.step,
        "decision": {"a": f"×{div.children_a} children", "b": f"×{div.children_b} children"},
        "answers": {"a": div.answer_a, "b": div.answer_b},
        "why": divergence_text(div),
    }


def _said(a: RunData, b: RunData) -> tuple[str, str]:
    """Each run's answer and whether it is right, under the names the pair gives them (comparison.pair_labels)."""
    said = [
        f"{side} ({label}): answer {said_answer(d.run)} ({outcome(d.run)})"
        for side, d, label in zip("AB", (a, b), pair_labels(a.run, b.run))
    ]
    return said[0], said[1]


def _headed(fig: dict[str, Any], a: RunData, b: RunData, why: str) -> dict[str, Any]:
    """The side-by-side figure with the case above it, so the image alone tells it: the problem, both answers
    right or wrong against the gold one, and where and why the runs part."""
    lines = [
        f"<b>Problem</b> {html.escape(_wrapped(a.run.get('question') or '', 2))}",
        html.escape(" · ".join(_said(a, b)) + f" · gold {a.run.get('gold_answer')}"),
        f"<b>Where the runs part</b> (the magenta hexagon in both trees): {html.escape(_wrapped(why, 3))}",
    ]
    text = "<br>".join(lines).replace("\n", "<br>")
    top = 60 + 17 * text.count("<br>")
    layout = dict(fig["layout"])
    layout["margin"] = {**layout.get("margin", {}), "t": top + 40}
    layout["height"] = int(layout.get("height", 560)) + top
    layout["annotations"] = [{**an, "y": 1.0, "yanchor": "bottom"} for an in layout.get("annotations", [])] + [
        {
            "text": text,
            "xref": "paper",
            "x": 0.0,
            "xanchor": "left",
            "yref": "paper",
            "y": 1.0,
            "yanchor": "bottom",
            "yshift": 24,
            "showarrow": False,
            "align": "left",
            "font": {"size": 14},
        }
    ]
    return {**fig, "layout": layout}


def _wrapped(text: str, lines: int, width: int = 140) -> str:
    """`text` on at most `lines` lines of `width` characters (Plotly does not wrap), the rest cut with …"""
    words, out, cur = " ".join(str(text).split()).split(" "), [], ""
    for w in words:
        if cur and len(cur) + 1 + len(w) > width:
            out.append(cur)
            cur = w
        else:
            cur = f"{cur} {w}".strip()
    out.append(cur)
    return "\n".join(out[: lines - 1] + [" ".join(out[lines - 1 :])[: width - 1] + ("…" if len(out) > lines else "")])


def compare_bundle(
    a: RunData,
    b: RunData,
    name: str | None = None,
    shadows: Sequence[Mapping[int, Any] | None] = (None, None),
    t: int | None = None,
) -> ExportBundle:
    """Both runs whole (nodes, iterations, shadow scores), the summary table and the figures: both trees at
    iteration `t` (None: where the runs part, else their last), the case written above them."""
    rows, _ = compare_rows(a, b)
    div = divergence_record(a, b)
    shown = t if t is not None else (div or {}).get("iteration")
    fa, fb, _ = compare_figures(a, b, shown, height=700, shadows=shadows)
    why = divergence_text(decision_divergence(a, b))
    question = " ".join(str(a.run.get("question") or "").split())
    problem = question if len(question) <= 200 else question[:199] + "…"
    name_a, name_b = pair_labels(a.run, b.run)
    caption = (
        f"{name_a} vs {name_b} on {a.run.get('problem_id')} (seed {a.run.get('seed')}): "
        f"“{problem}”; "
        f"{', '.join(_said(a, b))}, gold {a.run.get('gold_answer')}; {why}; {changes_summary(a, b)}"
    )
    both = _headed(side_by_side(fa, fb), a, b, why)
    return ExportBundle(
        name=name or f"compare-{a.run['run_id'][:8]}-{b.run['run_id'][:8]}",
        kind="compare",
        data={
            "a": _run_summary(a.run),
            "b": _run_summary(b.run),
            "first_divergence": div,
            "shown_iteration": shown,
            "uncertainty_changed": {
                side: [asdict(c) for c in uncertainty_changes(d)] for side, d in (("a", a), ("b", b))
            },
            "summary": [dict(zip(COMPARE_COLUMNS, r)) for r in rows],
            **{
                f"{side}_{what}": rows_
                for side, d, sh in (("a", a, shadows[0]), ("b", b, shadows[1]))
                for what, rows_ in (
                    ("nodes", [d.nodes[i] for i in sorted(d.nodes)]),
                    ("iterations", [d.iterations[i] for i in sorted(d.iterations)]),
                    ("shadow", _shadow_rows(sh)),
                )
            },
        },
        figures=[
            ("Side by side" + (f", at iteration {shown}" if shown is not None else ""), both),
            ("A", fa),
            ("B", fb),
        ],
        table_header=COMPARE_COLUMNS,
        table_rows=rows,
        caption=caption,
        more_tables=[changed_export(a, b)],
        text_sections=[
            ("Problem", a.run.get("question") or ""),
            ("Answers", "; ".join(_said(a, b)) + f"; gold answer {a.run.get('gold_answer')}"),
            ("Where the runs part", why),
        ],
    )


# the uncertainty-changed table in a paper's column: its text columns wrap (shares of the line; the gate's "OOD, δ test
# passed" on two lines), in a smaller font, columns closer
CHANGED_WRAP = {
    "step": 0.12,
    "gate": 0.115,
    "extra passes": 0.06,
    "R̄: K0 → after": 0.09,
    "R̄ rank": 0.065,
    "changed": 0.095,
}


def changed_export(a: RunData, b: RunData) -> ExportTable:
    """The Compare tab's list of the decisions uncertainty changed, as the comparison's second table (the same
    rows and columns as the page, the step texts whole)."""
    rows, _ = changed_table(a, b, step_chars=10_000)
    return ExportTable(
        CHANGED_COLUMNS,
        rows,
        caption=(
            "Decisions uncertainty changed: {} (A) vs {} (B) on ".format(*pair_labels(a.run, b.run))
            + f"{a.run.get('problem_id')}. Gate: the OOD test on the first K0 passes (σ² > τ) and the δ test; R̄ alone: "
            "the children R̄ of the first K0 passes alone would have given, with the same C."
            + ("" if rows else " Uncertainty changed no decision of either run.")
        ),
        suffix="-changed",
        wrap=CHANGED_WRAP,
        font=r"\scriptsize",
        colsep_pt=3,
    )


def case_bundle(
    data: RunData,
    node_id: int,
    case: Case | None = None,
    name: str | None = None,
    others: dict[str, Sequence[Case]] | None = None,
    star: dict[str, Any] | None = None,
) -> ExportBundle:
    state = data.state_at(None)
    judge = StepJudge(state)
    step = step_of(data, node_id)
    cands = step.candidates if step is not None else []
    truths = {c.node_id: judge(c.node_id) for c in cands}
    fig = step_figure(step, selected=node_id, truth=truths) if step is not None else None
    rows = []
    if others:
        for q in QUADRANTS:
            for c in list(others.get(q, ()))[:3]:
                rows.append([q, " ".join(c.step.split())[:60], c.mean, c.var, c.k, VERDICT[c.step_correct]])
        header = ["case", "step", "R̄", "σ²", "K", "verdict"]
    else:
        for c in cands:
            rows.append(
                [
                    f"{c.node_id}" + ("*" if c.node_id == node_id else ""),
                    " ".join(state.nodes[c.node_id].get("step", "").split())[:20],
                    fmt_mean(c.mean),
                    fmt_var(c.stat),
                    c.decision,
                    fmt_var(c.stat_after) if c.extra else "",
                    VERDICT[truths.get(c.node_id)],
                ]
            )
        gate = step.state.gate.label if step is not None else "σ²"
        header = ["node", "step", "R̄", f"{gate} read", "decision", f"{gate} after", "verdict"]
    n = state.nodes[node_id]
    return ExportBundle(
        name=name or f"case-{data.run['run_id'][:8]}-n{node_id}",
        kind="case",
        data={
            "run": _run_summary(data.run),
            "case": case.to_dict() if case else None,
            "node": n,
            "step": [gate_record(c, step.iteration) for c in cands] if step is not None else [],
            "step_truth": {str(k): v for k, v in truths.items()},
            "trace": state.trace_text(node_id),
            "star": star,
        },
        figures=[("The node's step: every candidate's MC-dropout scores", fig)] if fig is not None else [],
        table_header=header,
        table_rows=rows,
        caption=(
            f"{case.quadrant if case else 'Node'}: node {node_id} of run {data.run['run_id'][:8]} "
            f"({data.run.get('method')} on {data.run.get('problem_id')})"
            + ("" if others else f"; the table: every candidate of its step, * marks node {node_id}")
        ),
        text_sections=[("Question", data.run.get("question", "")), ("Trace", "\n\n".join(state.trace_text(node_id)))],
    )
