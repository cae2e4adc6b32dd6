"""Where uncertainty changed a decision, and where two runs first decided differently, read from what the
runs stored.

A UATS step t decides over its candidates with their first K0 passes: the OOD gate and the δ test send some
to re-evaluation (extra passes, B), then children are shared out over the R̄ that results (C). Against that
stands what R̄ of the first K0 passes alone would have done with the same C: the engine's own allocation
(uats_core.allocation.softmax_shares with ν2), fed the R̄ before the extra passes. A candidate is listed
when the gate sent it to re-evaluation, when its R̄ rank among the step's candidates moved after the extra
passes, or when its children differ from R̄ alone. The statistics come from ui.views.decisions.step_candidates
(the stored "before" statistics, else the first K − extra passes), never from a formula of this module.

Divergence of two runs is by decisions, not by trees: two methods start with different widths, so their
trees differ from iteration 1 whatever uncertainty does. Two runs diverge at the first iteration where a
step both of them had (the same step texts from the question down) was expanded by one and left without
children by the other."""

from __future__ import annotations

import weakref
from dataclasses import dataclass
from typing import Any, Sequence

from uats_core.allocation import softmax_shares
from uats_core.config import UATS_METHODS

from .decisions import Candidate, after_mean, step_candidates
from .treedata import RunData, TreeState

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
    _, budget = data.step(t)
    return (budget.knobs or {}).get(name, (data.run.get("config") or {}).get(name))


def naive_children(cands: Sequence[Candidate], width: int, nu2: float | None) -> list[int] | None:
    """Children by R̄ of the first K0 passes alone (the engine's allocation, same C and ν2); None when a
    candidate has no R̄ or ν2 is unknown."""
    if nu2 is None or any(c.mean is None for c in cands):
        return None
    return softmax_shares([float(c.mean) for c in cands], width, float(nu2))


def step_changes(data: RunData, t: int) -> list[ChangedDecision]:
    """The candidates of UATS step t whose decision uncertainty changed (see the module docstring)."""
    cands, budget, st = step_candidates(data, t)
    if not cands:
        return []
    before = [c.mean for c in cands]
    after = [after_mean(st, c) for c in cands]
    rb, ra = competition_ranks(before), competition_ranks(after)
    width = int(budget.width) if budget.width else sum(c.children for c in cands)
    naive = naive_children(cands, width, _knob(data, t, "nu2"))
    out = []
    for i, c in enumerate(cands):
        reasons = tuple(r for r, hit in ((SENT, c.selected), (RANK, rb[i] != ra[i]),
                                         (CHILDREN, naive is not None and naive[i] != c.children)) if hit)
        if not reasons:
            continue
        step = " ".join(str(st.nodes.get(c.node_id, {}).get("step") or "").split())
        out.append(ChangedDecision(t, c.node_id, step, c.ood, c.selected, c.extra, c.k, before[i], after[i], rb[i],
                                   ra[i], c.children, None if naive is None else naive[i], reasons))
    return out


_MEMO: "weakref.WeakKeyDictionary[RunData, list[ChangedDecision]]" = weakref.WeakKeyDictionary()


def uncertainty_changes(data: RunData) -> list[ChangedDecision]:
    """Every decision of a UATS run that uncertainty changed, by iteration ([] for other methods). Computed
    once per loaded run (a RunData is one version of a run: a live run's next version is a new object)."""
    if data.run.get("method") not in UATS_METHODS:
        return []
    if data not in _MEMO:
        _MEMO[data] = [row for t in sorted(data.iterations) for row in step_changes(data, t)]
    return _MEMO[data]


# ------------------------------------------------------------------------------------------ divergence
@dataclass(frozen=True)
class Divergence:
    """The first iteration where the two runs decided differently about a step both had (None: never),
    that step's node in each run and the children each gave it, and how many such shared decisions there were
    up to then (all of them when the runs never diverged)."""

    iteration: int | None
    node_a: int | None = None
    node_b: int | None = None
    children_a: int = 0
    children_b: int = 0
    shared: int = 0


def _decided(data: RunData, t: int, keys: dict[int, tuple[str, ...]]) -> dict[tuple[str, ...], tuple[int, int]]:
    """Step prefix → (node id, children) of the candidates decided at t; a prefix sampled twice under one
    parent keeps its most generous decision (the run did expand that step)."""
    out: dict[tuple[str, ...], tuple[int, int]] = {}
    for d in data.step(t)[0]:
        key = keys.get(d.node_id)
        if key is not None and (key not in out or d.children > out[key][1]):
            out[key] = (d.node_id, int(d.children or 0))
    return out


_DIV_MEMO: "weakref.WeakKeyDictionary[RunData, weakref.WeakKeyDictionary[RunData, Divergence]]" = \
    weakref.WeakKeyDictionary()


def decision_divergence(a: RunData, b: RunData) -> Divergence:
    """Where the two runs first expanded a shared step differently (one gave it children, the other none);
    once per pair of loaded runs (the compare view asks on every redraw)."""
    memo = _DIV_MEMO.setdefault(a, weakref.WeakKeyDictionary())
    if b not in memo:
        memo[b] = _divergence(a, b)
    return memo[b]


def _divergence(a: RunData, b: RunData) -> Divergence:
    sa, sb = a.state_at(None), b.state_at(None)
    keys_a = {i: sa.prefix_key(i) for i in sa.nodes if i != 0}
    keys_b = {i: sb.prefix_key(i) for i in sb.nodes if i != 0}
    shared = 0
    for t in range(1, max(a.max_iteration, b.max_iteration) + 1):
        da, db = _decided(a, t, keys_a), _decided(b, t, keys_b)
        for key in sorted(set(da) & set(db)):
            shared += 1
            (na, ca), (nb, cb) = da[key], db[key]
            if (ca > 0) != (cb > 0):
                return Divergence(t, na, nb, ca, cb, shared)
    return Divergence(None, shared=shared)


def first_divergence(a: RunData, b: RunData) -> int | None:
    """The iteration of decision_divergence (None: no step both runs had was decided differently)."""
    return decision_divergence(a, b).iteration


def counterpart(other: TreeState, key: tuple[str, ...]) -> tuple[int, int]:
    """The node of `other` that shares the longest step prefix with `key`: (node id, steps shared); the root
    (0, 0) when not even the first step matches."""
    index: dict[tuple[str, ...], int] = {}
    for nid in sorted(other.nodes):
        if nid != 0:
            index.setdefault(other.prefix_key(nid), nid)
    for j in range(len(key), 0, -1):
        if key[:j] in index:
            return index[key[:j]], j
    return 0, 0


# ------------------------------------------------------------------------------------------ the compare view
CHANGED_COLUMNS = ["run", "t", "node", "step", "gate", "extra passes", "R̄: K0 → after", "R̄ rank", "children",
                   "R̄ alone", "changed"]


def _r(v: float | None) -> str:
    return "–" if v is None else f"{v:.3f}"


def changed_table(a: RunData, b: RunData, step_chars: int = 48) -> tuple[list[list[Any]], list[list[Any]]]:
    """The rows of the uncertainty-changed list of both runs (A's first), and for each row the
    [side, node id, iteration] a click on it opens."""
    rows, targets = [], []
    for side, data in (("a", a), ("b", b)):
        for c in uncertainty_changes(data):
            step = c.step if len(c.step) <= step_chars else c.step[:step_chars - 1] + "…"
            gate = ("OOD, δ test passed" if c.sent else "OOD, δ test failed") if c.ood else "ID"
            rows.append([side.upper(), c.iteration, c.node_id, step, gate, f"+{c.extra}" if c.sent else "–",
                         f"{_r(c.mean_before)} → {_r(c.mean_after)}", f"{c.rank_before} → {c.rank_after}",
                         c.children, "–" if c.children_naive is None else c.children_naive, ", ".join(c.reasons)])
            targets.append([side, c.node_id, c.iteration])
    return rows, targets


def changes_summary(a: RunData, b: RunData) -> str:
    """One phrase per UATS run of the pair: how many decisions uncertainty changed, and the first."""
    parts = []
    for side, data in (("A", a), ("B", b)):
        if data.run.get("method") not in UATS_METHODS:
            continue
        rows = uncertainty_changes(data)
        if not rows:
            parts.append(f"uncertainty changed no decision of {side}")
            continue
        sent = sum(r.sent for r in rows)
        kids = sum(CHILDREN in r.reasons for r in rows)
        parts.append(f"uncertainty changed {len(rows)} decision(s) of {side} ({sent} re-evaluated, {kids} with "
                     f"other children than R̄ alone), first at iteration {rows[0].iteration}")
    return " · ".join(parts) if parts else "neither run is UATS: no decision of theirs reads uncertainty"


def divergence_text(div: Divergence) -> str:
    """The summary's words for decision_divergence (Markdown-free: the caller styles it)."""
    if div.iteration is None:
        if not div.shared:
            return "decisions: no step was decided by both runs (their samples differ), so none diverged"
        return f"decisions never diverged: the {div.shared} steps both runs decided got children in both or in neither"
    def got(k: int, side: str, node: int | None) -> str:
        return f"{k} children in {side} (node {node})" if k else f"none in {side} (node {node})"

    return (f"decisions diverge at iteration {div.iteration}: a step both runs had got "
            f"{got(div.children_a, 'A', div.node_a)} and {got(div.children_b, 'B', div.node_b)}")
