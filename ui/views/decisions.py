"""Step decisions in words: why a candidate got extra passes and children, read from what the run stored.

A UATS iteration t decides over its candidates: the ID/OOD test (gated σ² against τ), the δ test (R̂ against
the best ID R̄ − δ) that selects OOD candidates for re-evaluation, extra passes as shares of the
re-evaluation passes B, and children as shares of the width C. The engine stores each candidate's decision
(children, extra passes, status and, for UATS, the statistics the δ rule saw) and the step's spend; runs
without the "before" statistics (older runs, synthetic ones) get them from the first K − extra passes.

Everything here is HTML for a gr.HTML panel: every stored or user text is escaped (html.escape)."""

from __future__ import annotations

import html
import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from uats_core.estimation import OODGate, logits, mean_var, ucb as engine_ucb
from uats_core.methods import uncertainty_methods
from uats_core.records import Decision, StepInfo

from .figstyle import fmt_mean, fmt_var
from .treedata import RunData, TreeState


@dataclass
class Candidate:
    """One candidate of a step as the decision rule saw it (before that step's extra passes), and after them.

    Every panel (inspector, Why, Figure 1, frontier, exports) reads a candidate's gate σ², R̄ and decision from
    here, so they state one value per fact; the statistics after re-evaluation are fields of their own."""

    node_id: int
    mean: float | None
    var: float | None
    ucb: float | None
    k: int
    stat: float | None  # the gated statistic (σ² by default) the ID/OOD test read
    ood: bool
    extra: int
    children: int
    status: str
    selected: bool  # passed the δ test (an OOD candidate close enough to the best ID R̄)
    parent_id: int | None = None
    decided: bool = True  # False: the step that decides it comes after the iteration shown
    mean_after: float | None = None  # after the step's extra passes (= the values read when it got none)
    var_after: float | None = None
    stat_after: float | None = None
    k_after: int = 0

    @property
    def decision(self) -> str:
        """What the step decided, in the tree's shorthand ('+8p ×3', '✂', '×0'); '·' while undecided."""
        if not self.decided:
            return "·"
        return Decision(self.node_id, self.children, self.extra, self.status).label or "×0"


def _before(node: Mapping[str, Any], d: Decision, gate: OODGate, alpha: float, t: int) -> tuple:
    """(R̄, σ², R̂, K, gated statistic) before the step's extra passes."""
    extra = int(d.extra_passes or 0)
    scores = list(node.get("mc_scores") or [])
    k = int(d.k_before) if d.k_before is not None else max(0, len(scores) - extra)
    if d.mean_before is not None:
        mean, var, ucb = d.mean_before, d.var_before, d.ucb_before
    else:
        mean, var = mean_var(scores[:k])
        ucb = None if mean is None else engine_ucb(mean, k, t, alpha)  # the R̂ the search computed at step t
    probe = {"mean": mean, "var": var}
    if gate.space == "logit" and k > 1:
        probe["logit_mean"], probe["logit_var"] = mean_var(logits(scores[:k]))
    return mean, var, ucb, k, gate.statistic(probe)


def step_candidates(data: RunData, t: int) -> tuple[list[Candidate], StepInfo, TreeState]:
    """The candidates decided at iteration t, the step's numbers, and the tree after t."""
    state = data.state_at(t)
    decisions, step_info = data.step(t)
    gate = state.gate
    cfg = data.run.get("config") or {}
    alpha = float(cfg.get("alpha", 0.0) or 0.0)
    tau, delta = gate.tau, _knob(step_info, "delta", cfg.get("delta"))
    raw = []
    for d in decisions:
        nid = d.node_id
        if nid not in data.nodes:
            continue
        mean, var, ucb, k, stat = _before(data.nodes[nid], d, gate, alpha, t)
        ood = bool(d.ood) if d.ood is not None else (stat is not None and stat > tau)
        raw.append((nid, d, mean, var, ucb, k, stat, ood))
    ref = reference_mean([(r[2], r[7]) for r in raw], step_info)
    out = []
    for nid, d, mean, var, ucb, k, stat, ood in raw:
        if d.reeval_candidate is not None:
            sel = bool(d.reeval_candidate)
        else:
            sel = ood and ucb is not None and ref is not None and delta is not None and ucb >= ref - float(delta)
        after = state.nodes.get(nid) or data.nodes[nid]
        extra = int(d.extra_passes or 0)
        out.append(
            Candidate(
                nid,
                mean,
                var,
                ucb,
                k,
                stat,
                ood,
                extra,
                int(d.children or 0),
                str(d.status or ""),
                sel,
                parent_id=after.get("parent_id"),
                mean_after=after.get("mean") if extra else mean,
                var_after=after.get("var") if extra else var,
                stat_after=gate.statistic(after) if extra else stat,
                k_after=len(after.get("mc_scores") or []) if extra else k,
            )
        )
    return out, step_info, state


@dataclass
class Step:
    """The candidates one step decides over, as one panel or another shows them: decided at `iteration`
    (`decided`), or, when that step comes after the iteration shown, the frontier waiting for it."""

    iteration: int
    decided: bool
    candidates: list[Candidate]
    step_info: StepInfo
    state: TreeState  # the tree after `iteration`: τ (A-UATS moves it per step), the nodes' texts and marks

    def candidate(self, node_id: int) -> Candidate | None:
        return next((c for c in self.candidates if c.node_id == node_id), None)


def _waiting(state: TreeState, created: int) -> list[Candidate]:
    """The scored nodes created at iteration `created` that no step has decided yet, as they stand now."""
    gate, out = state.gate, []
    for i, n in sorted(state.nodes.items()):
        if i == 0 or n.get("mean") is None or int(n.get("created_iter") or 0) != created:
            continue
        k, stat = len(n.get("mc_scores") or []), gate.statistic(n)
        out.append(
            Candidate(
                i,
                n.get("mean"),
                n.get("var"),
                n.get("ucb"),
                k,
                stat,
                gate.shown(n),
                0,
                0,
                str(n.get("status") or ""),
                False,
                parent_id=n.get("parent_id"),
                decided=False,
                mean_after=n.get("mean"),
                var_after=n.get("var"),
                stat_after=stat,
                k_after=k,
            )
        )
    return out


def step_at(data: RunData, t: int) -> Step | None:
    """Iteration t's step: the candidates it decided, else (the first iteration decides nothing, a live run's
    last) the scored nodes it created. None when it holds no scored candidate."""
    cands, step_info, state = step_candidates(data, t)
    if cands:
        return Step(t, True, cands, step_info, state)
    waiting = _waiting(state, t)
    return Step(t, False, waiting, step_info, state) if waiting else None


def step_of(data: RunData, node_id: int, t: int | None = None) -> Step | None:
    """The step of node_id as the iteration shown (t; None: the latest) knows it: the one that decided it when
    that came at or before t, else the frontier it waits in with its siblings of the same iteration. None for
    the question, a node not yet created or not scored."""
    shown = data.max_iteration if t is None else max(0, min(int(t), data.max_iteration))
    dt = decision_iteration(data, node_id)
    if dt is not None and dt <= shown:
        return Step(dt, True, *step_candidates(data, dt))
    state = data.state_at(shown)
    node = state.nodes.get(node_id)
    if node_id == 0 or node is None or node.get("mean") is None:
        return None
    return Step(shown, False, _waiting(state, int(node.get("created_iter") or 0)), state.step_info, state)


def reference_mean(means_ood: Sequence[tuple[float | None, bool]], step_info: StepInfo) -> float | None:
    """The δ rule's reference: the stored one, else the best ID R̄ (the best of all when none is ID)."""
    if step_info.reference_mean is not None:
        return float(step_info.reference_mean)
    ids = [m for m, o in means_ood if m is not None and not o]
    alls = [m for m, _ in means_ood if m is not None]
    return max(ids) if ids else (max(alls) if alls else None)


def _knob(step_info: StepInfo, name: str, default: Any) -> Any:
    return (step_info.knobs or {}).get(name, default)


def step_totals(step_info: StepInfo, cands: Sequence[Candidate]) -> tuple[int, int]:
    """(B, C) of the step: the re-evaluation passes and the width as stored, else what the candidates got."""
    b = step_info.reeval_passes
    return (
        int(b) if b is not None else sum(x.extra for x in cands),
        int(step_info.width) if step_info.width else sum(x.children for x in cands),
    )


_DECIDED_AT: weakref.WeakKeyDictionary[RunData, dict[int, int]] = weakref.WeakKeyDictionary()


def decision_iteration(data: RunData, node_id: int) -> int | None:
    """The iteration whose decisions name node_id (each candidate is decided once); one index per loaded run."""
    if data not in _DECIDED_AT:
        index: dict[int, int] = {}
        for t in sorted(data.iterations, reverse=True):  # the earliest iteration naming a node wins
            index.update((d.node_id, t) for d in data.step(t)[0])
        _DECIDED_AT[data] = index
    return _DECIDED_AT[data].get(node_id)


def gate_record(c: Candidate, iteration: int) -> dict[str, Any]:
    """A decided candidate as an export states it: what the gate read, the decision, and after the extra
    passes (the same fields every panel prints)."""
    return {
        "node_id": c.node_id,
        "iteration": iteration,
        "parent_id": c.parent_id,
        "gate_stat_read": c.stat,
        "mean_read": c.mean,
        "var_read": c.var,
        "ucb_read": c.ucb,
        "k_read": c.k,
        "ood": c.ood,
        "reeval_candidate": c.selected,
        "extra_passes": c.extra,
        "children": c.children,
        "status": c.status,
        "decision": c.decision,
        "gate_stat_after": c.stat_after if c.extra else None,
        "mean_after": c.mean_after if c.extra else None,
        "k_after": c.k_after if c.extra else None,
    }


def gate_records(data: RunData) -> list[dict[str, Any]]:
    """Every decided candidate of the run, iteration by iteration (gate_record)."""
    return [gate_record(c, t) for t in sorted(data.iterations) for c in step_candidates(data, t)[0]]


def has_gate(run: Mapping[str, Any]) -> bool:
    """Whether an OOD gate decided the run's steps: a run of an uncertainty-aware method. A baseline's or an
    imported run's candidates were decided by its own rule; no panel describes a gate reading for them."""
    cfg = run.get("config") or {}
    return not cfg.get("imported") and run.get("method") in uncertainty_methods()


def own_rule(run: Mapping[str, Any]) -> str:
    """Who decided a gate-less run's steps, in words."""
    cfg = run.get("config") or {}
    source = cfg.get("imported") if isinstance(cfg.get("imported"), dict) else None
    who = f"{source.get('tool')} (imported)" if source else str(run.get("method"))
    return f"the rule of {who}, no OOD gate"


def _pct(part: float, whole: float) -> str:
    return f"{100.0 * part / whole:.0f}%" if whole else "n/a"


def gate_sentence(c: Candidate, label: str, tau: float) -> str:
    """The ID/OOD test as it was read, in the words every panel uses: the gated statistic of the first passes
    against τ (with K and R̄ then), never the values after re-evaluation."""
    word, cmp = ("OOD", ">") if c.ood else ("ID", "≤")
    return f"{word}: the gate read {label} = {fmt_var(c.stat)} {cmp} τ = {tau:g} (K = {c.k}, R̄ = {fmt_mean(c.mean)})"


def after_sentence(c: Candidate, label: str) -> str:
    """The statistics after the step's extra passes, labelled apart from what the gate read ('' without them)."""
    if not c.extra:
        return ""
    return (
        f"after re-evaluation (+{c.extra} passes, K = {c.k_after}): R̄ = {fmt_mean(c.mean_after)}, "
        f"{label} = {fmt_var(c.stat_after)}"
    )


def explain_node(data: RunData, node_id: int, t: int | None = None) -> str:
    """One node's decision in words (HTML): ID/OOD, δ test and R̂ rank, extra passes, children."""
    step = step_of(data, node_id, t)
    me = step.candidate(node_id) if step is not None and step.decided else None
    if step is None or me is None:
        dt = decision_iteration(data, node_id)
        when = "" if dt is None else f" (it is decided at iteration {dt}, after the one shown)"
        return f"<p><b>node {node_id}</b>: no decision about it yet{html.escape(when)}.</p>"
    cands, step_info, state, dt = step.candidates, step.step_info, step.state, step.iteration
    if not has_gate(data.run):
        return _explain_own_rule(data, me, cands, step_info, dt)
    gate = state.gate
    delta = _knob(step_info, "delta", (data.run.get("config") or {}).get("delta"))
    b_total, c_total = step_totals(step_info, cands)
    ref = reference_mean([(c.mean, c.ood) for c in cands], step_info)
    by_ucb = sorted(cands, key=lambda c: -(c.ucb if c.ucb is not None else -1e9))
    rank = by_ucb.index(me) + 1
    ood_rank = [c for c in by_ucb if c.ood]
    items = [f"<b>node {node_id}</b>, decided at iteration {dt} among {len(cands)} candidate(s):"]
    word, rest = gate_sentence(me, gate.label, gate.tau).split(": ", 1)
    items.append(f"<li><b>{word}</b>: {html.escape(rest)}</li>")
    if me.ood:
        bar = None if ref is None or delta is None else ref - float(delta)
        verdict = "passes" if me.selected else "fails"
        items.append(
            f"<li><b>δ test {verdict}</b>: R̂ = {fmt_mean(me.ucb)} vs best ID R̄ − δ = {fmt_mean(ref)} − "
            f"{delta:g} = {fmt_mean(bar)}; R̂ rank {rank} of {len(cands)} (OOD rank "
            f"{ood_rank.index(me) + 1} of {len(ood_rank)})</li>"
        )
    else:
        items.append(
            f"<li>no δ test (ID candidates are trusted as scored); R̂ = {fmt_mean(me.ucb)}, rank {rank} "
            f"of {len(cands)}</li>"
        )
    if me.extra:
        items.append(
            f"<li><b>+{me.extra} extra passes</b> = {_pct(me.extra, b_total)} of B = {b_total} "
            f"(softmax of R̂/ν1 over the {sum(c.selected for c in cands)} selected)</li>"
        )
        items.append(f"<li>{html.escape(after_sentence(me, gate.label))}</li>")
    elif me.selected:
        items.append(f"<li>selected, but its softmax share of B = {b_total} rounded to 0 passes</li>")
    by_mean = sorted(cands, key=lambda c: -(float(c.mean_after) if c.mean_after is not None else -1))
    mrank = by_mean.index(me) + 1
    if me.children:
        items.append(
            f"<li><b>×{me.children} children</b> = {_pct(me.children, c_total)} of C = {c_total} "
            f"(softmax of R̄/ν2; R̄ rank {mrank} of {len(cands)})</li>"
        )
    else:
        items.append(
            f"<li><b>{html.escape(me.status or 'no children')}</b>: 0 of C = {c_total} children "
            f"(R̄ rank {mrank} of {len(cands)})</li>"
        )
    return "<div class='uats-why'><p>" + items[0] + "</p><ul>" + "".join(items[1:]) + "</ul></div>"


def _explain_own_rule(data: RunData, me: Candidate, cands: Sequence[Candidate], step_info: StepInfo, dt: int) -> str:
    """A gate-less run's decision (a baseline's or an imported run's): its children and R̄ rank, no gate."""
    _, c_total = step_totals(step_info, cands)
    by_mean = sorted(cands, key=lambda c: -(float(c.mean) if c.mean is not None else -1))
    rank = by_mean.index(me) + 1
    items = [
        f"<b>node {me.node_id}</b>, decided at iteration {dt} among {len(cands)} candidate(s) by "
        f"{html.escape(own_rule(data.run))}:",
        f"<li>R̄ = {fmt_mean(me.mean)} (K = {me.k}), R̄ rank {rank} of {len(cands)}</li>",
    ]
    if me.children:
        items.append(
            f"<li><b>×{me.children} children</b> = {_pct(me.children, c_total)} of the "
            f"{c_total} granted at this step</li>"
        )
    else:
        items.append(
            f"<li><b>{html.escape(me.status or 'no children')}</b>: 0 of the {c_total} children granted "
            "at this step</li>"
        )
    return "<div class='uats-why'><p>" + items[0] + "</p><ul>" + "".join(items[1:]) + "</ul></div>"


def after_mean(state: TreeState, c: Candidate) -> float | None:
    """R̄ after the step's extra passes: what the children's softmax read."""
    n = state.nodes.get(c.node_id) or {}
    return n.get("mean") if n.get("mean") is not None else c.mean


def explain_step(data: RunData, t: int, top: int = 6) -> str:
    """Where iteration t's spend went (HTML): B over the re-evaluated, C over the expanded."""
    cands, step_info, _ = step_candidates(data, t)
    if not cands:
        return f"<p>iteration {t}: no candidates were decided (the first step expands the question).</p>"
    b_total, c_total = step_totals(step_info, cands)
    n_ood = sum(c.ood for c in cands)
    n_sel = sum(c.selected for c in cands)
    spent_b = sum(c.extra for c in cands)
    spent_c = sum(c.children for c in cands)
    re = sorted((c for c in cands if c.extra), key=lambda c: -c.extra)
    ch = sorted((c for c in cands if c.children), key=lambda c: -c.children)

    def listing(xs: Sequence[Candidate], attr: str, total: int) -> str:
        parts = [f"#{c.node_id} {getattr(c, attr)} ({_pct(getattr(c, attr), total)})" for c in xs[:top]]
        more = f", … {len(xs) - top} more" if len(xs) > top else ""
        return ", ".join(parts) + more if parts else "none"

    if not has_gate(data.run):  # no gate, no B: where the children went
        return (
            f"<div class='uats-why-step'><p><b>iteration {t}</b>: {len(cands)} candidates, decided by "
            f"{html.escape(own_rule(data.run))}.</p><ul><li><b>{spent_c}</b> children granted to {len(ch)} "
            f"candidate(s): {listing(ch, 'children', c_total)}; {sum(1 for c in cands if not c.children)} got "
            "none</li></ul></div>"
        )
    return (
        f"<div class='uats-why-step'><p><b>iteration {t}</b>: {len(cands)} candidates, {n_ood} OOD "
        f"({len(cands) - n_ood} ID), {n_sel} passed the δ test.</p><ul>"
        f"<li><b>B = {b_total}</b> extra passes, {spent_b} spent: {listing(re, 'extra', b_total)}</li>"
        f"<li><b>C = {c_total}</b> children, {spent_c} granted to {len(ch)} candidate(s): "
        f"{listing(ch, 'children', c_total)}; {sum(1 for c in cands if not c.children)} got none</li>"
        "</ul></div>"
    )
