"""Where uncertainty changed a decision of a UATS run, read from what the run stored, and why it changed
none when it did not.

A UATS step t decides over its candidates with their first K0 passes: the OOD gate and the δ test send some
to re-evaluation (extra passes, B), then children are shared out over the R̄ that results (C). Against that
stands what R̄ of the first K0 passes alone would have done with the same C: the engine's own allocation
(uats_core.allocation.softmax_shares with ν2), fed the R̄ before the extra passes. A candidate is listed
when the gate sent it to re-evaluation, when its R̄ rank among the step's candidates moved after the extra
passes, or when its children differ from R̄ alone. The statistics come from ui.views.decisions.step_candidates
(the stored "before" statistics, else the first K − extra passes), never from a formula of this module.
Where two runs first decided differently: ui.views.divergence."""

from __future__ import annotations

import weakref
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from uats_core.allocation import softmax_shares
from uats_core.estimation import OODGate
from uats_core.methods import uncertainty_methods

from .decisions import Candidate, after_mean, step_candidates
from .treedata import RunData

# what a listed row says changed, in the order a row names them
SENT, RANK, CHILDREN = "re-evaluated", "rank moved", "children changed"


@dataclass(frozen=True)
class ChangedDecision:
    """One candidate of a UATS step whose decision uncertainty changed."""

    iteration: int
    node_id: int
    step: str
    ood: bool
    sent: bool  # the OOD gate and the δ test sent it to re-evaluation
    extra: int  # extra passes it got (0 when its share of B rounded to nothing)
    k_before: int
    mean_before: float | None  # R̄ of the first K0 passes
    mean_after: float | None  # R̄ after the step's extra passes
    rank_before: int  # R̄ rank among the step's candidates, 1 = best (ties share a rank)
    rank_after: int
    children: int  # what the search gave it
    children_naive: int | None  # what R̄ of the first K0 passes alone would have given, same C (None: unknown)
    reasons: tuple[str, ...]


def competition_ranks(values: Sequence[float | None]) -> list[int]:
    """1 + how many values are strictly greater (None counts as the lowest): ties share a rank, so a list
    of equal R̄s never shows a rank that moved by tie-breaking alone."""
    key = [float("-inf") if v is None else float(v) for v in values]
    return [1 + sum(1 for w in key if w > v) for v in key]


def _knob(data: RunData, t: int, name: str) -> Any:
    _, step_info = data.step(t)
    return (step_info.knobs or {}).get(name, (data.run.get("config") or {}).get(name))


def naive_children(cands: Sequence[Candidate], width: int, nu2: float | None) -> list[int] | None:
    """Children by R̄ of the first K0 passes alone (the engine's allocation, same C and ν2); None when a
    candidate has no R̄ or ν2 is unknown."""
    if nu2 is None or any(c.mean is None for c in cands):
        return None
    return softmax_shares([float(c.mean) for c in cands], width, float(nu2))


def step_changes(data: RunData, t: int) -> list[ChangedDecision]:
    """The candidates of UATS step t whose decision uncertainty changed (see the module docstring)."""
    cands, step_info, st = step_candidates(data, t)
    if not cands:
        return []
    before = [c.mean for c in cands]
    after = [after_mean(st, c) for c in cands]
    rb, ra = competition_ranks(before), competition_ranks(after)
    width = int(step_info.width) if step_info.width else sum(c.children for c in cands)
    naive = naive_children(cands, width, _knob(data, t, "nu2"))
    out = []
    for i, c in enumerate(cands):
        reasons = tuple(
            r
            for r, hit in (
                (SENT, c.selected),
                (RANK, rb[i] != ra[i]),
                (CHILDREN, naive is not None and naive[i] != c.children),
            )
            if hit
        )
        if not reasons:
            continue
        step = " ".join(str(st.nodes.get(c.node_id, {}).get("step") or "").split())
        out.append(
            ChangedDecision(
                t,
                c.node_id,
                step,
                c.ood,
                c.selected,
                c.extra,
                c.k,
                before[i],
                after[i],
                rb[i],
                ra[i],
                c.children,
                None if naive is None else naive[i],
                reasons,
            )
        )
    return out


_MEMO: weakref.WeakKeyDictionary[RunData, list[ChangedDecision]] = weakref.WeakKeyDictionary()


def uncertainty_changes(data: RunData) -> list[ChangedDecision]:
    """Every decision of a UATS run that uncertainty changed, by iteration ([] for other methods). Computed
    once per loaded run (a RunData is one version of a run: a live run's next version is a new object)."""
    if data.run.get("method") not in uncertainty_methods():
        return []
    if data not in _MEMO:
        _MEMO[data] = [row for t in sorted(data.iterations) for row in step_changes(data, t)]
    return _MEMO[data]


# ------------------------------------------------------------------------------------------ the compare view
CHANGED_COLUMNS = [
    "run",
    "t",
    "node",
    "step",
    "gate",
    "extra passes",
    "R̄: K0 → after",
    "R̄ rank",
    "children",
    "R̄ alone",
    "changed",
]
# their widths in a table the width of the page: each header's longest word on one line at 1280 px ("ru|n", "nod|e"
# had broken while the steps' text took the width), the step and the reasons wrapped at their spaces
CHANGED_WIDTHS = ["4%", "4%", "5%", "20%", "13%", "6%", "12%", "7%", "8%", "7%", "14%"]


def _r(v: float | None) -> str:
    return "–" if v is None else f"{v:.3f}"


def changed_table(a: RunData, b: RunData, step_chars: int = 48) -> tuple[list[list[Any]], list[list[Any]]]:
    """The rows of the uncertainty-changed list of both runs (A's first), and for each row the
    [side, node id, iteration] a click on it opens."""
    rows, targets = [], []
    for side, data in (("a", a), ("b", b)):
        for c in uncertainty_changes(data):
            step = c.step if len(c.step) <= step_chars else c.step[: step_chars - 1] + "…"
            gate = ("OOD, δ test passed" if c.sent else "OOD, δ test failed") if c.ood else "ID"
            rows.append(
                [
                    side.upper(),
                    c.iteration,
                    c.node_id,
                    step,
                    gate,
                    f"+{c.extra}" if c.sent else "–",
                    f"{_r(c.mean_before)} → {_r(c.mean_after)}",
                    f"{c.rank_before} → {c.rank_after}",
                    c.children,
                    "–" if c.children_naive is None else c.children_naive,
                    ", ".join(c.reasons),
                ]
            )
            targets.append([side, c.node_id, c.iteration])
    return rows, targets


def changes_summary(a: RunData, b: RunData) -> str:
    """One phrase per UATS run of the pair: how many decisions uncertainty changed, and the first."""
    parts = []
    for side, data in (("A", a), ("B", b)):
        if data.run.get("method") not in uncertainty_methods():
            continue
        rows = uncertainty_changes(data)
        if not rows:
            parts.append(f"uncertainty changed no decision of {side}: {unchanged_reason(data)}")
            continue
        sent = sum(r.sent for r in rows)
        kids = sum(CHILDREN in r.reasons for r in rows)
        parts.append(
            f"uncertainty changed {len(rows)} decision(s) of {side} ({sent} re-evaluated, {kids} with "
            f"other children than R̄ alone), first at iteration {rows[0].iteration}"
        )
    return " · ".join(parts) if parts else "neither run is UATS: no decision of theirs reads uncertainty"


def _values(values: Sequence[float], name: str) -> str:
    """'τ = 0.003', or the range when the steps used several (A-UATS's controller sets them per step)."""
    lo, hi = min(values), max(values)
    return f"{name} = {lo:g}" if lo == hi else f"{name} = {lo:g}–{hi:g} (set per step)"


_REASON_MEMO: weakref.WeakKeyDictionary[RunData, str] = weakref.WeakKeyDictionary()


def unchanged_reason(data: RunData) -> str:
    """Why uncertainty changed no decision of a UATS run, in one phrase computed from its stored steps: the
    gate found every candidate in distribution (the largest statistic it read, against τ), or the OOD ones
    all failed the δ test, so none was re-evaluated. Meant for a run whose uncertainty_changes is empty. Once
    per loaded run, as uncertainty_changes (the compare view asks on every redraw)."""
    if data not in _REASON_MEMO:
        _REASON_MEMO[data] = _unchanged_reason(data)
    return _REASON_MEMO[data]


def _unchanged_reason(data: RunData) -> str:
    config = data.run.get("config") or {}
    steps = [(t, step_candidates(data, t)[0]) for t in sorted(data.iterations)]
    steps = [(t, cands) for t, cands in steps if cands]
    if not steps:
        return "it decided no step over scored candidates"
    gate = OODGate.from_config(config)
    read = [(t, c) for t, cands in steps for c in cands if c.stat is not None]
    if not read:
        return f"no candidate had two passes or more, so the gate read no {gate.label}"
    taus = [OODGate.from_config(config, tau=_knob(data, t, "tau")).tau for t, _ in steps]
    ood = [(t, c) for t, c in read if c.ood]
    if not ood:
        t, top = max(read, key=lambda tc: (float(tc[1].stat or 0.0), -tc[0]))
        return (
            f"no {gate.label} passed {_values(taus, 'τ')} (the largest of the {len(read)} the gate read was "
            f"{float(top.stat or 0.0):.2g}, node {top.node_id} at iteration {t}): the PRM is in distribution "
            "here, so every step was decided as R̄ alone would have"
        )
    deltas = [float(d) for d in (_knob(data, t, "delta") for t, _ in steps) if d is not None]
    within = f"within {_values(deltas, 'δ')} of" if deltas else "close enough to"
    return (
        f"{len(ood)} of the {len(read)} {gate.label} the gate read passed {_values(taus, 'τ')}, but none of "
        f"those candidates came {within} its step's best in-distribution R̄ (the δ test), so none was "
        "re-evaluated and R̄ alone gave the same children"
    )
