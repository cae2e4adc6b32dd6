"""Between the engine's node snapshots and the run log's rows: a NodesUpdated record to a `nodes` row and a
`node_history` row, and a stored row back to the record's shape (what the CLI and the app read)."""

from __future__ import annotations

from typing import Any

from . import schema as S

_NODE_COLS = {c.name for c in S.nodes.columns}


def node_row(run_id: str, rec: dict[str, Any], iteration: int) -> dict[str, Any]:
    try:
        node_id = int(rec["id"])
    except (KeyError, TypeError, ValueError):
        raise ValueError(f"node snapshot without an integer 'id': {rec!r}") from None
    row: dict[str, Any] = {"run_id": run_id, "node_id": node_id, "updated_iter": int(iteration)}
    for f in S.NODE_FIELDS:
        row[f] = rec.get(f)
    scores = [float(s) for s in (rec.get("mc_scores") or [])]
    row["mc_scores"] = scores
    row["k"] = len(scores)
    for f, default in (("num_tokens", 0), ("created_iter", 0), ("initial_passes", 0), ("extra_passes", 0),
                       ("children_granted", 0), ("step", ""), ("status", "active")):
        if row[f] is None:
            row[f] = default
    for f in ("mean", "var", "ucb", "uniqueness", "logit_mean", "logit_var"):
        if row[f] is not None:
            row[f] = float(row[f])
    extra = {k: v for k, v in rec.items() if k not in _NODE_COLS and k not in ("id", "k")}
    row["extra"] = extra or None
    return row


def history_row(row: dict[str, Any], iteration: int) -> dict[str, Any]:
    return {"run_id": row["run_id"], "iteration": int(iteration), "node_id": row["node_id"], "k": row["k"],
            "mean": row["mean"], "var": row["var"], "ucb": row["ucb"], "ood": row["ood"], "status": row["status"],
            "extra_passes": row["extra_passes"], "children_granted": row["children_granted"],
            "logit_mean": row["logit_mean"], "logit_var": row["logit_var"]}


def node_dict(m: Any) -> dict[str, Any]:
    d = dict(m)
    d["id"] = d["node_id"]  # Node.record()'s key; node_id (the column name) stays too, both are read
    d.pop("run_id", None)
    extra = d.pop("extra", None)
    if extra:
        for k, v in extra.items():
            d.setdefault(k, v)
    if d.get("mc_scores") is None:
        d["mc_scores"] = []
    return d
