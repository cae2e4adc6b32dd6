"""Shadow scoring: K MC-dropout passes on every candidate a baseline scored (REBASE does one deterministic
pass), with the same statistics and OOD gate a UATS run would use, so its choices can be read against the
uncertainty. The passes are not the baseline's: they are stored apart (storage.shadow) and its cost and
nodes are left as they were."""

from __future__ import annotations

import html
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np

from storage.shadow import read_shadow, write_shadow
from uats_core.config import SearchConfig
from uats_core.estimation import OODGate, mc_stats
from uats_core.protocols import Trace

from ..views.safe_text import model_name
from ..views.treedata import RunData

BATCH = 64


def load_shadow_prm(
    prm_spec: str | None = None,
    prm_kind: str | None = None,
    dropout_p: float | None = None,
    dropout_mode: str | None = None,
) -> Any:
    """The PRM for shadow passes (empty spec: the embedded arithmetic PRM). Loaded in a worker of the app's
    pool (ui.jobs.shadow_job), whose model cache keeps it for the next job with the same spec."""
    from uats_core.backends import load_prm
    from uats_core.backends.plan import plan_models

    d = SearchConfig()
    plan = plan_models(None, prm_spec or None, prm_kind=prm_kind if prm_kind not in (None, "detect") else None)
    return load_prm(
        plan.prm.spec,
        kind=plan.prm_kind,
        dropout_p=dropout_p or d.dropout_p,
        dropout_mode=dropout_mode or d.dropout_mode,
        **dict(plan.prm_opts),
    )


def shadow_candidates(data: RunData) -> list[int]:
    """The nodes shadow scoring scores: every node but the root."""
    return sorted(i for i in data.nodes if i != 0)


def _trace(data: RunData, node_id: int) -> Trace:
    """The node's solution as the PRM reads it: its path's steps, or its own text alone where each node of the run
    is a whole solution (TreeQuest's refinements, uats_core.imports.treequest)."""
    imported = (data.run.get("config") or {}).get("imported") or {}
    if isinstance(imported, dict) and imported.get("each_node_is_a_solution"):
        return Trace(data.run.get("question") or "", (data.nodes[node_id].get("step") or "",))
    steps = []
    cur: int | None = node_id
    while cur not in (None, 0) and cur in data.nodes:
        steps.append(data.nodes[cur].get("step") or "")
        cur = data.nodes[cur].get("parent_id")
    return Trace(data.run.get("question") or "", tuple(steps[::-1]))


def shadow_batches(
    data: RunData, prm: Any, k: int, node_ids: Sequence[int] | None = None
) -> Iterator[list[dict[str, Any]]]:
    """Shadow rows for the run's scored nodes (or node_ids), a batch of BATCH nodes at a time: K passes
    each, R̄, σ², R̂ (α and the step of the node's creation, as UATS computes it at the next decision) and
    the run's OOD gate. Inside a batch, the PRM stops at a cancel (uats_core.cancel)."""
    cfg = data.run.get("config") or {}
    gate = OODGate.from_config(cfg)
    alpha = float(cfg.get("alpha", SearchConfig().alpha) or 0.0)
    ids = sorted(node_ids) if node_ids is not None else shadow_candidates(data)
    name = getattr(prm, "name", type(prm).__name__)
    for start in range(0, len(ids), BATCH):
        chunk = ids[start : start + BATCH]
        passes = np.asarray(prm.mc_scores([_trace(data, i) for i in chunk], k), dtype=np.float64)
        rows = []
        for nid, row in zip(chunk, passes):
            scores = [float(x) for x in row]
            st = mc_stats(scores, int(data.nodes[nid].get("created_iter") or 1) + 1, alpha)
            rows.append(
                {
                    "node_id": nid,
                    "mc_scores": scores,
                    "mean": st.mean,
                    "var": st.var,
                    "ucb": st.ucb,
                    "ood": bool(gate.is_ood({"mean": st.mean, "var": st.var})),
                    "tau": gate.tau,
                    "prm": name,
                }
            )
        yield rows


def run_shadow(
    store: Any, run_id: str, prm: Any, k: int = 7, progress: Callable[[int, int], None] | None = None
) -> dict[int, dict[str, Any]]:
    """Shadow-score every node of a stored run, storing each batch's rows as it comes (a cancelled job keeps
    what it scored), and return the run's shadow rows by node id."""
    data = RunData.load(store, run_id)
    total, done = len(shadow_candidates(data)), 0
    for batch in shadow_batches(data, prm, int(k)):
        write_shadow(store, run_id, batch)
        done += len(batch)
        if progress is not None:
            progress(done, total)
    return read_shadow(store, run_id)


def explain_shadow(data: RunData, node_id: int, shadow: Mapping[int, Mapping[str, Any]]) -> str:
    """What the shadow passes say about a node and its step (HTML): would UATS have called it OOD and
    re-evaluated it, and how much of this run's width went to candidates the passes find OOD."""
    from ..views.decisions import decision_iteration

    row = shadow.get(node_id)
    if not row:
        return ""
    cfg = data.run.get("config") or {}
    delta = float(cfg.get("delta", SearchConfig().delta))
    t = decision_iteration(data, node_id)
    decided = data.step(t)[0]
    peers = [shadow[d.node_id] for d in decided if d.node_id in shadow]
    ids = [p["mean"] for p in peers if not p.get("ood")]
    ref = max(ids) if ids else max((p["mean"] for p in peers), default=row["mean"])
    would = bool(row.get("ood")) and float(row["ucb"]) >= ref - delta
    k = len(row.get("mc_scores") or [])
    word = "OOD" if row.get("ood") else "ID"
    cmp = ">" if row.get("ood") else "≤"
    parts = [
        f"<b>shadow</b> ({k} MC passes, {html.escape(model_name(row.get('prm')))}, not spent by this run): "
        f"R̄ = {row['mean']:.3f}, σ² = {row['var']:.5f} {cmp} τ = {row.get('tau') or 0:g} → <b>{word}</b>"
    ]
    if row.get("ood"):
        parts.append(
            f"R̂ = {row['ucb']:.3f} vs best shadow-ID R̄ − δ = {ref:.3f} − {delta:g}: UATS would "
            + ("<b>re-evaluate</b> it" if would else "not re-evaluate it")
        )
    if decided:
        granted = sum(d.children for d in decided)
        to_ood = sum(d.children for d in decided if d.node_id in shadow and shadow[d.node_id].get("ood"))
        share = f"{100.0 * to_ood / granted:.0f}%" if granted else "n/a"
        parts.append(
            f"at iteration {t} this run granted {granted} children, {to_ood} ({share}) of them to "
            f"candidates the shadow passes find OOD ({sum(1 for p in peers if p.get('ood'))} of {len(peers)})"
        )
    return "<div class='uats-why-shadow'><ul>" + "".join(f"<li>{p}</li>" for p in parts) + "</ul></div>"
