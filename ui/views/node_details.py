"""The node inspector's text: the step (math renders), its statistics and decisions, and the trace up to it."""

from __future__ import annotations

from typing import Any, Sequence

from .cases import StepJudge
from .safe_text import md_inline, md_text
from .treedata import TERMINAL, TreeState

TRACE_SHOWN = 24  # steps of a trace listed in the inspector


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
