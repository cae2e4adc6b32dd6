"""Between the engine's node snapshots and the run log's rows: a NodesUpdated record to a `nodes` row and a
`node_history` row, and a stored row back to the record's shape (what the CLI and the app read)."""

from __future__ import annotations

from dataclasses import MISSING, fields
from typing import Any

import sqlalchemy as sa

from uats_core.tree import Node

from . import schema as S
from .bounds import storable_text

_NODE_COLS = {c.name for c in S.nodes.columns}
# NOT NULL columns a snapshot may leave out: Node's own defaults (a snapshot always has a step; "" if not)
_DEFAULTS = {**{f.name: f.default for f in fields(Node) if f.default is not MISSING and f.default is not None}, "step": ""}
_FLOATS = tuple(c.name for c in S.nodes.columns if isinstance(c.type, sa.Float))
_TEXTS = tuple(c.name for c in S.nodes.columns if isinstance(c.type, sa.String) and c.name != "run_id")


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
    for f, default in _DEFAULTS.items():
        if row[f] is None:
            row[f] = default
    for f in _FLOATS:
        if row[f] is not None:
            row[f] = float(row[f])
    for f in _TEXTS:  # the policy wrote these: stored as every database can hold them, never refused
        if isinstance(row[f], str):
            row[f] = storable_text(row[f])
    extra = {k: v for k, v in rec.items() if k not in _NODE_COLS and k not in ("id", "k")}
    row["extra"] = extra or None
    return row


def history_row(row: dict[str, Any], iteration: int) -> dict[str, Any]:
    return {"run_id": row["run_id"], "iteration": int(iteration), "node_id": row["node_id"],
            **{f: row[f] for f in S.HISTORY_FIELDS}}


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
