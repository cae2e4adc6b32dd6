"""The app's logic without Gradio: problems and forms, run labels and summaries, node details,
comparisons and export bundles. app.py's handlers are thin wrappers around these."""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import math
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any, Mapping, Sequence

from uats_core.config import METHODS, ConfigError, SearchConfig
from uats_core.limits import check_limits
from uats_core.paths import ASSETS
from uats_core.problems import Problem, ProblemError, check_question, find_problem, load_jsonl

from .views.cases import QUADRANTS, Case, StepJudge
from .choices import AIME24, ARITH, MATH500, ServerChoices, server_choices  # noqa: F401 - the sets every server offers
from .views.export import ExportBundle
from .views.treefig import ViewOptions, tree_figure
from .views.figure1 import step_figure
from .views.figstyle import shared_colour_range
from .views.report_sources import ReportSources
from .views.safe_text import md_inline, md_text
from .views.treedata import TERMINAL, RunData, TreeState, shared_prefixes
from .views.uncertainty import (changes_summary, decision_divergence, divergence_text, first_divergence,
                          uncertainty_changes)

log = logging.getLogger(__name__)

ARITH_PROBLEMS_SHOWN = 200
TRACE_SHOWN = 24  # steps of a trace listed in the inspector


@functools.lru_cache(maxsize=16)
def _load_dataset(path: Path) -> tuple[Problem, ...]:
    return tuple(load_jsonl(path))


def dataset_problems(dataset: str, choices: ServerChoices | None = None) -> list[Problem]:
    """Problems of one of the server's problem sets (`choices`; None: the sets every server offers); raises
    ProblemError(field='dataset'), the same for any name outside the list."""
    path = (choices or server_choices()).dataset_file(dataset)
    if path is None:
        from uats_core.worlds.arith import world

        return world.load_split("test", ARITH_PROBLEMS_SHOWN)
    return list(_load_dataset(path))


def problem_choices(problems: Sequence[Problem]) -> list[tuple[str, str]]:
    out = []
    for p in problems:
        q = " ".join(p.question.split())
        out.append((f"{p.id} · {q[:70]}{'…' if len(q) > 70 else ''}", p.id))
    return out


def pick_problem(problems: Sequence[Problem], key: str | None) -> Problem:
    key = (key or "").strip()
    if not key:
        raise ProblemError("problem", "pick a problem from the list")
    return find_problem(problems, key, "the list")


def typed_problem(question: str | None, answer: str | None = None) -> Problem | None:
    """A problem typed into the page; None when the box is empty. Its id follows from its text, so the
    same question typed twice is the same problem (and its reruns merge in Cases)."""
    q = (question or "").strip()
    if not q:
        return None
    check_question(q, "free_question")
    digest = hashlib.sha1(q.encode("utf-8")).hexdigest()[:10]
    gold = (answer or "").strip() or None
    return Problem(id=f"typed-{digest}", question=q, answer=gold, source="typed")


def build_config(values: dict[str, Any]) -> SearchConfig:
    """A validated SearchConfig within the limits, from form values (numbers arrive as floats from sliders and
    boxes): the run's one validation, before it is registered; the worker trusts what it is handed."""
    ints = {"budget", "seed", "max_iterations", "k0", "beam_width"}
    clean: dict[str, Any] = {}
    for name, v in values.items():
        if v is None or (isinstance(v, str) and not v.strip()):
            raise ConfigError(name, "is empty; give a value")
        if name in ints:
            if isinstance(v, str):
                try:
                    v = float(v)
                except ValueError:
                    raise ConfigError(name, f"must be an integer; got {v!r}") from None
            if isinstance(v, float):
                if not math.isfinite(v) or v != int(v):
                    raise ConfigError(name, f"must be an integer; got {v!r}")
                v = int(v)
        clean[name] = v
    config = SearchConfig(**clean).validate()
    check_limits(config)
    return config


def search_config(values: dict[str, Any], prm_spec: str | None = None) -> SearchConfig:
    """build_config, with τ = auto[:q] resolved from the PRM's calibration file: the logged config then holds
    the τ the search used."""
    from uats_core.calibration import resolve_tau

    config, _ = resolve_tau(build_config(values), prm_spec or None)
    return config


# ------------------------------------------------------------------------------ runs
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
        parts.append(f"⚠ {md_inline(str(run['error']), 400)}")
    if state is not None and state.iteration < state.max_iteration:
        parts.append(f"showing the tree after iteration **{state.iteration}** of {state.max_iteration}")
    return "  \n".join(parts)


def _tree_size(run: dict[str, Any], state: TreeState | None) -> str:
    """The node count the tree shows: its steps and the question node drawn at its root."""
    steps = len(state.nodes) - (0 in state.nodes) if state is not None else int(run.get("n_nodes") or 0)
    return f"{steps + 1} (the question and {steps} steps)"


def find_partner(store: Any, run: dict[str, Any], methods: Sequence[str] = ("h-uats", "rebase")) -> str | None:
    """A stored run on the same problem, seed and budget with the other method of the default pair."""
    method = run.get("method")
    other = [m for m in methods if m != method]
    budget = (run.get("config") or {}).get("budget")
    for m in other:
        for r in store.list_runs(method=m, problem_id=run.get("problem_id"), limit=50):
            if r["run_id"] != run["run_id"] and r.get("seed") == run.get("seed") and \
                    (r.get("config") or {}).get("budget") == budget and r.get("status") != "queued":
                return r["run_id"]
    return None


# ------------------------------------------------------------------------------ node details
def _num(v: Any, digits: int = 3) -> str:
    if v is None:
        return "–"
    if isinstance(v, float) and v != 0 and abs(v) < 10 ** -digits:
        return f"{v:.2e}"
    return f"{v:.{digits}f}" if isinstance(v, float) else str(v)


def node_details_md(state: TreeState, node_id: int, judge: StepJudge | None = None) -> str:
    """The inspector's text: step (math renders), statistics, decisions, the trace up to the node."""
    if node_id not in state.nodes:
        return f"Node {node_id} is not in the tree at iteration {state.iteration}."
    n = state.nodes[node_id]
    if node_id == 0:
        return (f"### The question\n\n{md_text(state.run.get('question', ''))}\n\n"
                f"Gold answer: **{md_inline(state.run.get('gold_answer'))}**")
    gate = state.gate
    tau = gate.tau
    k = len(n.get("mc_scores") or [])
    ood = gate.shown(n)
    title = f"### Node {node_id} · depth {n.get('depth')} · {n.get('status')}" + (" · **OOD**" if ood else "")
    lines = [title, "", md_text((n.get("step") or "").strip()) or "_(empty step)_", ""]
    lines.append(f"**R̄** {_num(n.get('mean'))} · **σ²** {_num(n.get('var'), 5)} · **K** {k} "
                 f"({n.get('initial_passes', 0)} initial + {n.get('extra_passes', 0)} extra) · **R̂** {_num(n.get('ucb'))}")
    lines.append(f"logits log(p/(1−p)) of the passes: mean {_num(n.get('logit_mean'))} · **σ²** {_num(n.get('logit_var'), 4)} · "
                 f"OOD gate: {gate.label} = {_num(gate.statistic(n), 5)} vs τ = {tau:g}")
    when = [f"created t={n.get('created_iter')}"]
    for key, word in (("reeval_iter", "re-evaluated"), ("expanded_iter", "expanded")):
        if n.get(key) is not None:
            when.append(f"{word} t={n[key]}")
    lines.append(f"children granted **{n.get('children_granted', 0)}** · " + " · ".join(when)
                 + (f" · uniqueness γ {_num(n.get('uniqueness'))}" if n.get("uniqueness") is not None else ""))
    if n.get("status") in TERMINAL:
        lines.append(f"final answer **{md_inline(n.get('answer'))}** — "
                     + {True: "right ✓", False: "wrong ✗"}.get(n.get("correct"), "ungraded"))
    if judge is not None:
        truth = judge(node_id)
        if truth is not None:
            how = "exact step checker" if judge.source == "exact" else "an answer below it is right" if truth else "no answer below it is right"
            lines.append(f"step is **{'right' if truth else 'wrong'}** ({how})")
    d = state.decisions.get(node_id)
    if d:
        lines.append(f"at iteration {state.iteration}: {d.children} children, +{d.extra_passes} passes, "
                     f"{d.status}" + (f" (R̄ {_num(d.mean_before)} → {_num(d.mean)})"
                                      if d.mean_before is not None and d.extra_passes else ""))
    path = state.path(node_id)
    lines += ["", "**Trace up to here**", ""]
    lines.append(f"> {md_inline(state.run.get('question', ''))}")
    lines.append("")
    shown = list(enumerate(path, 1))
    if len(shown) > TRACE_SHOWN:  # deep traces: the first steps and the last ones, not a page of text
        head, tail = shown[:3], shown[-(TRACE_SHOWN - 3):]
        shown = head + [(None, None)] + tail
    for depth, pid in shown:  # explicit step numbers: a Markdown list would renumber after a gap
        if pid is None:
            lines.append(f"_… {len(path) - TRACE_SHOWN} steps not shown …_  ")
            continue
        step = md_inline(state.nodes[pid].get("step"))
        mark = "**" if pid == node_id else ""
        lines.append(f"`{depth:>2}` {mark}{step}{mark} _(R̄ {_num(state.nodes[pid].get('mean'))})_  ")
    return "\n".join(lines)


def step_truths(state: TreeState, node_ids: Sequence[int], judge: StepJudge) -> dict[int, bool | None]:
    return {i: judge(i) for i in node_ids}


# ------------------------------------------------------------------------------ compare
def compare_rows(a: RunData, b: RunData) -> tuple[list[list[Any]], int | None]:
    rows = []
    for d in (a, b):
        r = d.run
        nodes = [n for i, n in d.nodes.items() if i != 0]
        rows.append([r["run_id"][:8], r.get("method"), r.get("status"), r.get("answer"), outcome(r),
                     r.get("naive_answer"), round(float(r.get("cost") or 0), 1), r.get("iterations"), len(nodes),
                     sum(1 for n in nodes if n.get("ood")), sum(1 for n in nodes if n.get("extra_passes")),
                     sum(int(n.get("extra_passes") or 0) for n in nodes)])
    return rows, first_divergence(a, b)


COMPARE_COLUMNS = ["run", "method", "status", "answer", "outcome", "naive answer", "cost spent", "iterations", "nodes",
                   "OOD nodes", "re-evaluated", "extra passes"]


def compare_figures(a: RunData, b: RunData, t: int | None, view: ViewOptions | None = None,
                    height: int = 560, shadows: Sequence[Mapping[int, Any] | None] = (None, None),
                    selected: Sequence[int | None] = (None, None)) -> tuple[dict[str, Any], dict[str, Any], tuple[float, float]]:
    fa, fb = a.state_at(None), b.state_at(None)
    crange = shared_colour_range(fa, fb)
    shared = shared_prefixes(fa, fb)
    sa_, sb_ = (a.state_at(t), b.state_at(t)) if t is not None else (fa, fb)
    figs = []
    for d, st, side, sh, sel in ((a, sa_, "A", shadows[0], selected[0]), (b, sb_, "B", shadows[1], selected[1])):
        figs.append(tree_figure(st, view, colour_range=crange, shared_keys=shared, height=height, shadow=sh, selected=sel,
                                title=f"{side}: {d.run.get('method')} · {d.run['run_id'][:8]} · t={st.iteration}/{st.max_iteration}",
                                uirevision=f"cmp-{side}-{d.run['run_id']}", show_colorbar=side == "B"))
    return figs[0], figs[1], crange


def side_by_side(fa: dict[str, Any], fb: dict[str, Any]) -> dict[str, Any]:
    """One figure with two trees (for the static PNG/SVG of a comparison)."""
    data = [dict(trace) for trace in fa["data"]]
    # one legend for both: B's kinds that A does not draw (e.g. the shadow marks of a scored baseline) keep theirs
    named = {t.get("name") for t in fa["data"] if t.get("showlegend", True)}
    for trace in fb["data"]:
        t = dict(trace)
        t["xaxis"], t["yaxis"] = "x2", "y2"
        t["showlegend"] = bool(trace.get("showlegend", True)) and trace.get("name") not in named
        if t["showlegend"]:
            named.add(t.get("name"))
        data.append(t)
    la, lb = fa["layout"], fb["layout"]
    layout = {"height": la.get("height", 560), "width": 1600, "paper_bgcolor": "white", "plot_bgcolor": "white",
              "margin": {"l": 40, "r": 10, "t": 50, "b": 10}, "showlegend": True, "boxmode": "overlay",
              "legend": la.get("legend"),
              "xaxis": {**la["xaxis"], "domain": [0.0, 0.48]}, "yaxis": {**la["yaxis"], "anchor": "x"},
              "xaxis2": {**lb["xaxis"], "domain": [0.52, 1.0]}, "yaxis2": {**lb["yaxis"], "anchor": "x2"},
              "annotations": [
                  {"text": (la.get("title") or {}).get("text", "A"), "xref": "paper", "x": 0.0, "yref": "paper", "y": 1.06,
                   "showarrow": False, "xanchor": "left"},
                  {"text": (lb.get("title") or {}).get("text", "B"), "xref": "paper", "x": 0.52, "yref": "paper", "y": 1.06,
                   "showarrow": False, "xanchor": "left"}]}
    return {"data": data, "layout": layout, "config": {"displaylogo": False}}


# ------------------------------------------------------------------------------ export bundles
def _run_summary(run: dict[str, Any]) -> dict[str, Any]:
    keep = ("run_id", "method", "problem_id", "question", "gold_answer", "seed", "config", "policy", "prm", "status",
            "answer", "naive_answer", "correct", "naive_correct", "cost", "iterations", "n_nodes", "error",
            "started_at", "ended_at")
    return {k: run.get(k) for k in keep}


VERDICT = {True: "right", False: "wrong", None: "?"}  # a step's truth in an export table


def run_bundle(data: RunData, name: str | None = None, stars: Sequence[dict[str, Any]] = ()) -> ExportBundle:
    state = data.state_at(None)
    run = state.run
    judge = StepJudge(state)
    chosen = sorted(state.chosen_nodes(), key=lambda i: -(state.nodes[i].get("mean") or 0))
    path = state.path(chosen[0]) if chosen else []
    rows = []
    for depth, nid in enumerate(path, 1):
        n = state.nodes[nid]
        rows.append([depth, " ".join(n.get("step", "").split())[:80], n.get("mean"), n.get("var"),
                     len(n.get("mc_scores") or []), VERDICT[judge(nid)]])
    fig = tree_figure(state, title=f"{run.get('method')} on {run.get('problem_id')} (run {run['run_id'][:8]})",
                      height=800)
    return ExportBundle(
        name=name or f"run-{run['run_id'][:8]}", kind="run",
        data={"run": _run_summary(run), "nodes": [data.nodes[i] for i in sorted(data.nodes)],
              "iterations": [data.iterations[i] for i in sorted(data.iterations)], "stars": list(stars)},
        figures=[("Search tree", fig)],
        table_header=["depth", "step", "R̄", "σ²", "K", "verdict"], table_rows=rows,
        caption=(f"{run.get('method')} on {run.get('problem_id')}, seed {run.get('seed')}: answer {run.get('answer')} "
                 f"({outcome(run)}), cost {float(run.get('cost') or 0):,.0f}. Table: the chosen answer's path."),
        text_sections=[("Question", run.get("question", "")),
                       ("Chosen path", "\n\n".join(state.nodes[i].get("step", "") for i in path))])


def compare_bundle(a: RunData, b: RunData, name: str | None = None,
                   shadows: Sequence[Mapping[int, Any] | None] = (None, None)) -> ExportBundle:
    """Both runs whole (nodes, iterations, shadow scores), the summary table and the figures."""
    rows, div = compare_rows(a, b)
    fa, fb, _ = compare_figures(a, b, None, height=700, shadows=shadows)
    caption = (f"{a.run.get('method')} vs {b.run.get('method')} on {a.run.get('problem_id')} (seed {a.run.get('seed')}); "
               f"{divergence_text(decision_divergence(a, b))}; {changes_summary(a, b)}")
    return ExportBundle(
        name=name or f"compare-{a.run['run_id'][:8]}-{b.run['run_id'][:8]}", kind="compare",
        data={"a": _run_summary(a.run), "b": _run_summary(b.run), "first_divergence": div,
              "uncertainty_changed": {side: [asdict(c) for c in uncertainty_changes(d)] for side, d in (("a", a), ("b", b))},
              "summary": [dict(zip(COMPARE_COLUMNS, r)) for r in rows],
              **{f"{side}_{what}": rows_ for side, d, sh in (("a", a, shadows[0]), ("b", b, shadows[1]))
                 for what, rows_ in (("nodes", [d.nodes[i] for i in sorted(d.nodes)]),
                                     ("iterations", [d.iterations[i] for i in sorted(d.iterations)]),
                                     ("shadow", [sh[i] for i in sorted(sh or {})]))}},
        figures=[("Side by side", side_by_side(fa, fb)), ("A", fa), ("B", fb)],
        table_header=COMPARE_COLUMNS, table_rows=rows, caption=caption)


def case_bundle(data: RunData, node_id: int, case: Case | None = None, name: str | None = None,
                others: dict[str, Sequence[Case]] | None = None, star: dict[str, Any] | None = None) -> ExportBundle:
    state = data.state_at(None)
    judge = StepJudge(state)
    sibs = [s for s in state.siblings(node_id) if s != 0]
    truths = step_truths(state, sibs, judge)
    fig = step_figure(state, node_id, step_truth=truths, height=520)
    rows = []
    if others:
        for q in QUADRANTS:
            for c in list(others.get(q, ()))[:3]:
                rows.append([q, " ".join(c.step.split())[:60], c.mean, c.var, c.k,
                             VERDICT[c.step_correct]])
    else:
        for s in sibs:
            n = state.nodes[s]
            rows.append([f"node {s}" + (" (case)" if s == node_id else ""), " ".join(n.get("step", "").split())[:60],
                         n.get("mean"), n.get("var"), len(n.get("mc_scores") or []),
                         VERDICT[truths.get(s)]])
    n = state.nodes[node_id]
    return ExportBundle(
        name=name or f"case-{data.run['run_id'][:8]}-n{node_id}", kind="case",
        data={"run": _run_summary(data.run), "case": case.to_dict() if case else None, "node": n,
              "siblings": [state.nodes[s] for s in sibs], "step_truth": {str(k): v for k, v in truths.items()},
              "trace": state.trace_text(node_id), "star": star},
        figures=[("Node and siblings: MC-dropout scores", fig)],
        table_header=["case" if others else "node", "step", "R̄", "σ²", "K", "verdict"], table_rows=rows,
        caption=(f"{case.quadrant if case else 'Node'}: node {node_id} of run {data.run['run_id'][:8]} "
                 f"({data.run.get('method')} on {data.run.get('problem_id')})"),
        text_sections=[("Question", data.run.get("question", "")), ("Trace", "\n\n".join(state.trace_text(node_id)))])


def method_choices() -> list[str]:
    return list(METHODS)


# ------------------------------------------------------------------------------------------ reports tab
SHIPPED = "shipped: "  # curve names that come from a checkpoint folder's training_curve.json, not the database


def curve_choices(sources: ReportSources, key: str | None) -> list[str]:
    """Controller training curves: those in the picked run log (train --db) and those shipped beside the
    checkpoints under assets/models (training_curve.json)."""
    names: list[str] = []
    if key:
        try:
            with sources.reading(key) as store:
                names += store.list_curves()
        except ConfigError:
            pass
    names += [SHIPPED + p.parent.name for p in sorted(ASSETS.glob("*/training_curve.json"))]
    return names


def curve_rows(sources: ReportSources, key: str | None, name: str) -> list[dict[str, Any]]:
    if name.startswith(SHIPPED):
        path = ASSETS / name[len(SHIPPED):] / "training_curve.json"
        if path.parent.parent != ASSETS or not path.is_file():
            raise ConfigError("training curve", f"no shipped curve {name!r}; pick one from the list")
        return list(json.loads(path.read_text()))
    with sources.reading(key) as store:
        return store.get_curve(name)
