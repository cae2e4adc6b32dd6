"""The node inspector's text: the step (math renders), its statistics and decisions, and the trace up to it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .cases import StepJudge
from .decisions import after_sentence, gate_sentence, has_gate, own_rule, step_of
from .figstyle import fmt_mean, fmt_var
from .figure1 import sample_label
from .safe_text import md_inline, md_text, model_name
from .treedata import TERMINAL, RunData, TreeState

TRACE_SHOWN = 24  # steps of a trace listed in the inspector


def shadow_md(row: Mapping[str, Any] | None) -> str:
    """A node's shadow passes in the inspector's words, labelled apart from the run's own ('' without them)."""
    if not row:
        return ""
    word, cmp = ("OOD", ">") if row.get("ood") else ("ID", "≤")
    return (
        f"**shadow** ({len(row.get('mc_scores') or [])} MC passes of {md_inline(model_name(row.get('prm')), 60)}, "
        f"not spent by the run): **R̄** {fmt_mean(row.get('mean'))} · **σ²** {fmt_var(row.get('var'))} "
        f"{cmp} τ = {float(row.get('tau') or 0):g} → {word} · **R̂** {fmt_mean(row.get('ucb'))}"
    )


def node_details_md(
    data: RunData,
    state: TreeState,
    node_id: int,
    judge: StepJudge | None = None,
    shadow: Mapping[int, Mapping[str, Any]] | None = None,
) -> str:
    """The inspector's text: step (math renders), statistics (and the shadow passes', labelled apart), the gate
    as its step read it and the decision (a gate-less run's: its own rule's), the trace up to the node."""
    if node_id not in state.nodes:
        return f"Node {node_id} is not in the tree at iteration {state.iteration}."
    n = state.nodes[node_id]
    if node_id == 0:
        return (
            f"### The question\n\n{md_text(state.run.get('question', ''))}\n\n"
            f"Gold answer: **{md_inline(state.run.get('gold_answer'))}**"
        )
    step = step_of(data, node_id, state.iteration)
    me = step.candidate(node_id) if step is not None else None
    gate = step.state.gate if step is not None else state.gate
    k = len(n.get("mc_scores") or [])
    gated = has_gate(data.run)
    ood = gated and (me.ood if me is not None else gate.shown(n))
    mine = (shadow or {}).get(node_id)
    title = (
        f"### Node {node_id} · depth {n.get('depth')} · {n.get('status')}"
        + (" · **OOD**" if ood else "")
        + (" · shadow OOD" if mine and mine.get("ood") else "")
    )
    lines = [title, "", md_text((n.get("step") or "").strip()) or "_(empty step)_", ""]
    est = gate.estimator
    lines.append(
        f"**R̄** {fmt_mean(n.get('mean'))} · **σ²** ({est}) {fmt_var(n.get('var'))} over all **K** {k} "
        f"{sample_label(est, True)} ({n.get('initial_passes', 0)} initial + {n.get('extra_passes', 0)} extra) · "
        f"**R̂** {fmt_mean(n.get('ucb'))}"
    )
    if mine:
        lines.append(shadow_md(mine))
    if gate.space == "logit" and gated:
        lines.append(
            f"logits log(p/(1−p)) of the passes: mean {fmt_mean(n.get('logit_mean'))} · "
            f"σ² ({est}) {fmt_var(n.get('logit_var'))}"
        )
    if me is not None and not gated:  # no gate was read: the decision alone, by whose rule
        lines.append(
            f"**Decision** at iteration {step.iteration}: **{me.decision}** (by {own_rule(data.run)})"
            if me.decided
            else f"**Decision**: its step comes after iteration {state.iteration} (by {own_rule(data.run)})"
        )
    elif me is not None and me.decided:
        # the engine's own numbers and labels (no stored text): no escaping needed, and none that would garble them
        lines.append(
            f"**Gate** ({est}) at iteration {step.iteration}: {gate_sentence(me, gate.label, gate.tau)} "
            f"→ **{me.decision}**"
        )
        if me.extra:
            lines.append(after_sentence(me, gate.label))
    elif me is not None:
        lines.append(
            f"**Gate** not read yet (its step comes after iteration {state.iteration}): "
            f"{gate.label} ({est}) = {fmt_var(me.stat)} vs τ = {gate.tau:g} now"
        )
    when = [f"created t={n.get('created_iter')}"]
    for key, word in (("reeval_iter", "re-evaluated"), ("expanded_iter", "expanded")):
        if n.get(key) is not None:
            when.append(f"{word} t={n[key]}")
    lines.append(
        f"children granted **{n.get('children_granted', 0)}** · "
        + " · ".join(when)
        + (f" · uniqueness γ {fmt_mean(n.get('uniqueness'))}" if n.get("uniqueness") is not None else "")
    )
    if n.get("status") in TERMINAL:
        lines.append(
            f"final answer **{md_inline(n.get('answer'))}** — "
            + {True: "right ✓", False: "wrong ✗"}.get(n.get("correct"), "ungraded")
        )
    if judge is not None:
        truth = judge(node_id)
        if truth is not None:
            how = (
                "exact step checker"
                if judge.source == "exact"
                else "an answer below it is right"
                if truth
                else "no answer below it is right"
            )
            lines.append(f"step is **{'right' if truth else 'wrong'}** ({how})")
    lines += _trace_lines(state, node_id)
    return "\n".join(lines)


def _trace_lines(state: TreeState, node_id: int) -> list[str]:
    """The trace up to the node, the question first, each step with its R̄; a deep one cut in the middle."""
    lines: list[str] = []
    path = state.path(node_id)
    lines += ["", "**Trace up to here**", ""]
    lines.append(f"> {md_inline(state.run.get('question', ''))}")
    lines.append("")
    shown = list(enumerate(path, 1))
    if len(shown) > TRACE_SHOWN:  # deep traces: the first steps and the last ones, not a page of text
        head, tail = shown[:3], shown[-(TRACE_SHOWN - 3) :]
        shown = head + [(None, None)] + tail
    for depth, pid in shown:  # explicit step numbers: a Markdown list would renumber after a gap
        if pid is None:
            lines.append(f"_… {len(path) - TRACE_SHOWN} steps not shown …_  ")
            continue
        step = md_inline(state.nodes[pid].get("step"))
        mark = "**" if pid == node_id else ""
        lines.append(f"`{depth:>2}` {mark}{step}{mark} _(R̄ {fmt_mean(state.nodes[pid].get('mean'))})_  ")
    return lines
