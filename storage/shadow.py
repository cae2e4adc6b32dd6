"""Shadow scores of a run's nodes (schema.shadow_scores): written once per (run, node), replaced when
scored again; reading them never touches the run's own nodes or cost."""

from __future__ import annotations

import time
from typing import Any, Sequence

import sqlalchemy as sa

from . import schema as S

_FIELDS = ("mc_scores", "mean", "var", "ucb", "ood", "tau", "prm")


def write_shadow(store: Any, run_id: str, rows: Sequence[dict[str, Any]]) -> int:
    """Store shadow rows ({node_id, mc_scores, mean, var, ucb, ood, tau, prm}) for run_id, replacing any
    earlier ones of the same nodes. Returns how many were written."""
    store.get_run(run_id)  # a missing run is an error, as everywhere in storage
    now = time.time()
    values = [{"run_id": run_id, "node_id": int(r["node_id"]), **{k: r.get(k) for k in _FIELDS}, "written_at": now}
              for r in rows]
    ids = [v["node_id"] for v in values]
    with store.engine.begin() as conn:
        if ids:
            conn.execute(sa.delete(S.shadow_scores).where(S.shadow_scores.c.run_id == run_id,
                                                          S.shadow_scores.c.node_id.in_(ids)))
            conn.execute(sa.insert(S.shadow_scores), values)
    return len(values)


def read_shadow(store: Any, run_id: str) -> dict[int, dict[str, Any]]:
    """node id -> shadow row of run_id ({} when never shadow-scored)."""
    t = S.shadow_scores
    with store.engine.connect() as conn:
        rows = conn.execute(sa.select(t).where(t.c.run_id == run_id)).mappings().all()
    return {int(r["node_id"]): {k: r[k] for k in ("node_id", *_FIELDS, "written_at")} for r in rows}
